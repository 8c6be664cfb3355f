"""The patterns read around a number: names, ranges, proportions, rates, denominators, bounds,
ages, durations in words, shares, and the separators of clauses and segments."""
from __future__ import annotations

import re

# ---------------------------------------------------------------------------------------
# Patterns around a number
# ---------------------------------------------------------------------------------------

# a number glued to a name: "COVID-19", "SARS-CoV-2", "IL-6"; "type 2 diabetes", "phase 3"
_NAME_BEFORE = re.compile(r"(?:[a-z]-|\b(?:type|types|phase|stage|grade|class|step|level|tier|"
                          r"schedule|category|chapter|figure|fig\.|table|section|version|"
                          r"generation|cycle|visit|item|question|number|no\.|vitamin|omega|"
                          r"day|week|month|covid|hiv|hpv|cd|il|apoe|grade)\s?)$")
_RANGE_SEP = re.compile(r"\s*(?:-|to|through|or|and)\s*")
_BETWEEN_BEFORE = re.compile(r"\b(?:between|from)\s+$")
_EVERY_BEFORE = re.compile(r"\bevery\s+$")
_PROPORTION = re.compile(r"\s+(?:in|out of)\s+(?:every\s+)?")
_RATE = re.compile(r"(?:\s+[a-z]+){0,3}?\s*(?:per|/)\s*")
_RATE_NOUN = re.compile(r"\s*(person[- ]years?|patient[- ]years?|people|persons|population|"
                        r"individuals|adults|children|women|men|patients|live births|births|"
                        r"deliveries|admissions|procedures)\b")
_BP_TAIL = re.compile(r"/\s?(\d{2,3})(?![\d/])")
_BP_PAIR_WORDS = re.compile(
    r"\bsystolic\s+(?:blood\s+pressure\s+)?(?:of\s+|is\s+|at\s+)?(?P<b1>below\s+|under\s+|"
    r"less than\s+|above\s+|over\s+|<\s*|>\s*)?(?P<s>\d{2,3})(?:\s?mm\s?hg)?\s*(?:,\s*|and\s+|/\s*)"
    r"(?:a\s+)?diastolic\s+(?:blood\s+pressure\s+)?(?:of\s+|is\s+|at\s+)?(?:below\s+|under\s+|"
    r"less than\s+|above\s+|over\s+|<\s*|>\s*)?(?P<d>\d{2,3})(?:\s?mm\s?hg)?")
_PRESSURE_CONTEXT = re.compile(r"pressure|\bbp\b|hypertens|systolic|diastolic|mm\s?hg")

_FREQ_PER = re.compile(
    r"\s*(?:times?\s*|x\s*)?(?:(?:a|an|per|each|every|/)\s*(?P<u>day|night|week|month|year|hour)\b"
    r"|(?P<adv>daily|nightly|weekly|monthly|yearly|annually|hourly)\b"
    r"|(?:in|over|within)\s+(?:any\s+|a\s+)?(?P<d24>24[- ]hour period|24[- ]?hours?|24[- ]?hrs?|24\s?h|"
    r"one day|a day)\b)")
_TIMES = re.compile(r"\s*(?:times|x)\b")
_PER_ADVERB = {"daily": "day", "nightly": "day", "weekly": "week", "monthly": "month",
               "yearly": "year", "annually": "year", "hourly": "hour"}
_PER_NOUN = {"day": "day", "d": "day", "night": "day", "morning": "day", "evening": "day",
             "week": "week", "wk": "week", "month": "month", "year": "year", "hour": "hour",
             "h": "hour", "hr": "hour", "minute": "min", "min": "min", "dose": "dose",
             "kg": "kg", "kilogram": "kg", "m2": "m2"}

# rate denominators after an amount: "/kg/day", "per day", "a day", "daily", "in 24 hours"
_PER_AFTER = re.compile(
    r"(?:\s*/\s*(?P<slash>kg|m2|day|d|24\s?h|h|hr|hour|dose|week|wk|minute|min)\b"
    r"|\s+(?:per|a|an|each|every)\s+(?P<word>kg|kilogram|m2|day|night|morning|evening|week|month|"
    r"year|hour|minute|dose|24[- ]?hours?)\b(?:\s+of\s+body\s?weight)?"
    r"|\s+(?P<adv>daily|nightly|weekly|monthly|yearly|annually|hourly)\b"
    r"|\s+(?:in|over|within|every|per)\s+(?:any\s+|a\s+|one\s+)?(?P<d24>24[- ]hour period|24[- ]?hours?|"
    r"24[- ]?hrs?|24\s?h|day)\b"
    r"|\s+(?P<tod>at night|at bedtime|(?:just\s+)?before\s+(?:bed|bedtime|sleep)|in the morning|"
    r"in the evening|each morning|every morning|each evening|every evening)\b"
    r"|\s+(?:on|in)\s+(?:the\s+first|any\s+(?:later|other|one)|each|every|a|any|one|the\s+second)\s+"
    r"(?P<oneday>day)\b"
    r"|\s+(?:in|per|for|during)\s+(?:a|one|each|any|the)?\s*(?:single\s+)?(?P<course>course)\b"
    r"|\s+(?P<freq>once|twice|thrice|one time|two times|three times|four times|\d+\s?times|\d+x)"
    r"\s*(?:a|an|per|each|every|/)?\s*(?P<fu>day|daily|week|weekly|night|nightly)\b)")
# words between an amount and its denominator: "2,400mg of ibuprofen in 24 hours"
_GAP = re.compile(r"(?:\s*\)|\s*\([^()]{0,40}\))?(?:\s+of(?:\s+(?!(?:per|a|an|each|every|in|over|within|daily|"
                     r"once|twice|thrice|at|on|times|one|two|three|four|five|six|seven|eight|"
                     r"can|should|may|must|is|are|to|be)\b)"
                     r"[a-z][\w'-]*){1,3})?")
# "6 mg of colchicine can be taken each day": an amount, its thing and a verb, then the denominator
_VERB_GAP = re.compile(r"(?:\s+of(?:\s+[a-z][\w'-]*){1,2}?)?(?:\s+(?:can|should|may|must|is|are|will)"
                       r"(?:\s+not)?(?:\s+be)?)?\s+(?:taken|used|given|applied|injected)(?=\s)")
_PER_BEFORE = re.compile(r"\b(?P<p>daily|24-hour|24 hour|weekly|per day|a day's|day's)\b"
                         r"(?:[^.;,]{0,35}|\s+(?:[a-z-]+\s+){0,2}?(?:dose|doses|dosage|amount|intake|"
                         r"limit|total)\b[^.;,]{0,60})$")
_INTERVAL_AFTER = re.compile(r"\s+(?:apart|between\s+(?:[a-z-]+\s+)?(?:doses|each dose|tablets|treatments|"
                             r"injections|them))\b")   # "between doses", "between paracetamol doses"

_BOUND_BEFORE = [
    ("le", re.compile(r"(?:do not|don't|never|not|must not|mustn't|should not|shouldn't|cannot|"
                      r"can't|no)\s+(?:[a-z']+\s+){0,2}?(?:more than|over|above|in excess of|"
                      r"exceed|exceeding|greater than|higher than|longer than|later than)\s*$")),
    # "no more often than every 2 weeks": the interval is a minimum
    ("ge", re.compile(r"no (?:more often|more frequently) than(?: once)?(?: every)?\s*$")),
    ("ge", re.compile(r"(?:do not|don't|never|not|must not|should not|no)\s+(?:[a-z']+\s+){0,2}?"
                      r"(?:less than|fewer than|under|below|shorter than)\s*$")),
    ("le", re.compile(r"(?:up to|at most|not to exceed|maximum of|limited to|capped at|max\.?|maximum"
                      r"(?:\s+[a-z]+){0,4}?\s+(?:is|of|was|are|:)|maximum|<=|=<|\u2264|"
                      r"less than or equal to|no higher than|no greater than)\s*:?\s*$")),
    ("ge", re.compile(r"(?:at least|minimum of|minimum(?:\s+[a-z]+){0,4}?\s+(?:is|of|was|:)|minimum|"
                      r"no less than|not less than|no fewer than|no shorter than|>=|=>|\u2265|"
                      r"greater than or equal to)\s*:?\s*$")),
    ("le", re.compile(r"(?:within|in under|in less than)\s*$")),
    ("lt", re.compile(r"(?:below|under|less than|fewer than|lower than|shorter than|<|beneath)\s*$")),
    ("gt", re.compile(r"(?:above|over|more than|greater than|higher than|longer than|exceeding|"
                      r"exceeds|exceeded|in excess of|>)\s*$")),
    ("approx", re.compile(r"(?:about|around|approximately|approx\.?|roughly|nearly|almost|circa|"
                          r"~|\u2248|an estimated|estimated)\s*$")),
]
_OR_MORE_THAN = re.compile(r"(?:do not|don't|never|must not|should not|no)\s+[^.;]{0,90}?"
                           r"(?:more than|over|above|exceed)\s[^.;]{0,60}?\bor\s+(?:more than|over|"
                           r"above)\s*$")
_BOUND_AFTER = [
    ("le", re.compile(r"\s*(?:or|and)\s+(?:less|fewer|below|under|lower|younger)\b|\s+(?:at most|"
                      r"maximum|max)\b")),
    ("ge", re.compile(r"\s*(?:or|and)\s+(?:more|above|over|older|higher|greater|up|longer)\b"
                      r"|\s*\+|\s+(?:at least|minimum)\b")),
]
_AGE_AFTER = re.compile(r"(?:\s|-)?(?:years?|yrs?)(?:\s|-)?(?:old|of age)\b|-year-olds?\b|s\b"
                        r"|\s+(?:years?\s+)?(?:and|or)\s+(?:over|older|above|under|younger)\b")
_AGE_BEFORE = re.compile(r"(?:\b(?:before|after|by|from|until|under)\s+(?:the\s+)?age(?:\s+of)?"
                         r"|\baged?(?:\s+(?:over|under|above|below|older than|younger than|from|at least|"
                         r"less than|more than))?|\bages|\b(?:mean|median|average)\s+age\s+(?:of|was|were|is)"
                         r"(?:\s+(?:about|around|approximately))?|(?:adults|people|children|patients|those|anyone|"
                         r"women|men|persons|individuals|kids|babies|infants)\s+(?:over|under|"
                         r"above|below|older than|younger than))\s+(?:between\s+)?$")
_A_DURATION = re.compile(
    r"\b(?P<half>half\s+an?\s+(?P<hu>hour|day)|an?\s+half[- ]hour|half[- ]an[- ]hour)\b"
    r"|\b(?P<pre>for|within|after|over|in|than|about|around|least|most|to|takes?|took|lasts?|"
    r"lasting|only|under|nearly|almost)\s+(?P<a>an?|one)\s+(?P<u>hour|day|week|month|year|"
    r"fortnight|minute)(?P<andhalf>\s+and\s+a\s+half)?\b")
_EVERY_OTHER = re.compile(r"\bevery\s+(?:other|second)\s+(?P<u>day|week|month)\b"
                          r"|\b(?:on\s+)?alternate[- ](?P<ua>day|week|month)s?\b")
# "checked every month", "every week": an interval of one unit
_EVERY_ONE = re.compile(r"\b(?:every|each|once a)\s+(?P<u>day|week|month|year)\b"
                        r"(?!\s+(?:of|for)\b(?!\s+the\s+(?:first|next)\b))"
                        r"|\b(?P<adv>weekly|fortnightly|monthly)\s+(?=(?:blood|urine|liver|kidney|eye)?\s*"
                        r"(?:tests?|checks?|monitoring|counts?|scans?|reviews?)\b)"
                        r"|\b(?:checked|tested|measured|monitored|repeated|done|reviewed|seen)\s+"
                        r"(?P<adv2>weekly|fortnightly|monthly)\b")
# "for the whole first year", "throughout the first month": a duration of one unit
_FIRST_SPAN = re.compile(r"\b(?:for|throughout|during|over|in)\s+(?:the\s+)?(?:whole\s+|entire\s+)?(?:of\s+the\s+)?"
                         r"first\s+(?P<u>year|month|week)\b(?!\s+of\s+life)")
# "one and a half hours", "two and a half days"
_AND_A_HALF = re.compile(r"\b(?P<n>one|two|three|four|five|six|\d+)\s+and\s+a\s+half\s+"
                         r"(?P<u>hours|days|weeks|months|years)\b")
# "about half of", "a third of": a share in words
_SHARE = re.compile(r"\b(?P<s>half|a third|one third|a quarter|one quarter|two thirds|three quarters)"
                    r"\s+(?:of|the)\b(?!\s+(?:an?\s+)?(?:hour|day|minute))")
_QUARTER_HOUR = re.compile(r"\b(?P<q>a|one|three)\s+quarters?\s+of\s+an\s+hour\b")
_SHARE_VALUE = {"half": 50.0, "a third": 100 / 3, "one third": 100 / 3, "a quarter": 25.0,
                "one quarter": 25.0, "two thirds": 200 / 3, "three quarters": 75.0}
_OPENING_PERIOD = re.compile(r"\s*(?:during|in|for|over)\s+the\s+first\s+\S+\s+(?:days|weeks|months)\b")
_SEPARATOR = re.compile(r",|;|\b(?:and|or|but|while|whilst|whereas)\b")
_SEGMENT = re.compile(r";|(?<=[a-z0-9)%])\.\s+(?=[a-z])|:\s")
