"""The quantities of a medical statement, compared exactly with those of its evidence.

`extract_quantities` reads the numbers of one sentence as a clinician would: the value in a
canonical unit ("2.4 g" and "2,400 mg" are both 2400 mg), the rate denominator ("a day",
"in 24 hours", "/kg/day"), the bound ("up to", "at least", "below", a range), and what the
number is about (qualifiers such as "without a prescription", "children", "starting dose",
and the content words of its clause). `compare_quantities` then decides, for every quantity
of a statement, whether the evidence states the same quantity for the same thing
("matched"), states a different one ("contradicted") or does not state it ("missing").

Pure functions over strings, standard library only: no model, nothing else of the engine.
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Sequence

__all__ = ["Quantity", "QuantityFinding", "extract_quantities", "compare_quantities",
           "describe"]


@dataclass(frozen=True)
class Quantity:
    text: str                 # as written: "2,400mg", "three times a day", "130/80 mm Hg"
    start: int                # span in the sentence it came from
    end: int
    low: float                # canonical value(s); low == high for a point
    high: float
    unit: str                 # canonical unit: "mg", "ml", "iu", "mmhg", "min", "month", "%", ...
    per: str = ""             # canonical rate denominator: "day", "dose", "week", "kg", "kg/day", ...
    bound: str = "eq"         # "eq", "le", "lt", "ge", "gt", "range", "approx"
    qualifiers: frozenset[str] = frozenset()
    subject: frozenset[str] = frozenset()
    # the diastolic value of a blood-pressure pair (low/high hold the systolic one)
    low2: float | None = None
    high2: float | None = None
    shown_unit: str = ""      # the unit a reader wrote, for messages ("g", "weeks")
    scale: float = 1.0        # canonical units per shown unit (1000 for "g")
    decimals: int = 0         # decimals as written (rounding tolerance); -1 when derived
    per_label: str = ""       # the denominator as a reader wrote it: "24 h", "day", "kg/day"
    noun: str = ""            # for a plain count: the stem of what is counted ("patie")
    local: frozenset[str] = frozenset()  # content stems of its own part of the clause

    @property
    def is_pair(self) -> bool:
        return self.low2 is not None


@dataclass(frozen=True)
class QuantityFinding:
    claim: Quantity           # a quantity of the statement
    status: str               # "matched" | "contradicted" | "missing"
    source: Quantity | None   # the evidence quantity it was compared with (None when missing)
    sentence: str             # the evidence sentence that holds `source` ("" when missing)
    message: str              # plain words naming both


MATCHED, CONTRADICTED, MISSING = "matched", "contradicted", "missing"

# ---------------------------------------------------------------------------------------
# Text normalisation (same length, so spans found in it are spans of the sentence)
# ---------------------------------------------------------------------------------------

_SAME_LENGTH = str.maketrans({
    "\u2013": "-", "\u2014": "-", "\u2212": "-", "\u2010": "-", "\u2011": "-",
    "\u00a0": " ", "\u2009": " ", "\u202f": " ", "\u2007": " ", "\u2002": " ", "\u2003": " ",
    "\u00b5": "u", "\u03bc": "u", "\u00b2": "2", "\u2019": "'", "\u00b7": ".", "\u2264": "\u2264",
})


def _normalise(sentence: str) -> str:
    t = sentence.translate(_SAME_LENGTH)
    low = t.lower()
    if len(low) != len(t):  # a character whose lower case is longer ("\u0130")
        low = "".join(c.lower() if len(c.lower()) == 1 else c for c in t)
    return low


# ---------------------------------------------------------------------------------------
# Units: alias -> (canonical unit, canonical units per alias, shown unit)
# ---------------------------------------------------------------------------------------

_UNITS: dict[str, tuple[str, float, str]] = {}


def _units(aliases: str, unit: str, factor: float, shown: str) -> None:
    for alias in aliases.split("|"):
        _UNITS[alias] = (unit, factor, shown)


_units("kg/m2|kg/m 2", "kg/m2", 1, "kg/m2")
_units("mmol/mol", "mmol/mol", 1, "mmol/mol")
_units("mmol/l|mmol per litre|mmol per liter|mmol/litre|mmol/liter", "mmol/l", 1, "mmol/L")
_units("umol/l|micromol/l|micromoles per litre", "mmol/l", 1e-3, "umol/L")
_units("nmol/l", "mmol/l", 1e-6, "nmol/L")
_units("mg/dl", "mg/l", 10, "mg/dL")
_units("g/dl", "mg/l", 1e4, "g/dL")
_units("g/l", "mg/l", 1e3, "g/L")
_units("mg/l", "mg/l", 1, "mg/L")
_units("ug/l|mcg/l|ng/ml", "mg/l", 1e-3, "ug/L")
_units("ng/l|pg/ml", "mg/l", 1e-6, "ng/L")
_units("ug/ml|mcg/ml", "mg/l", 1, "mcg/mL")
_units("meq/l", "meq/l", 1, "mEq/L")
_units("iu/l|u/l", "iu/l", 1, "IU/L")
_units("mm hg|mmhg|mm of mercury|millimetres of mercury|millimeters of mercury", "mmhg", 1, "mm Hg")
_units("kg|kgs|kilogram|kilograms|kilogramme|kilogrammes|kilo|kilos", "mg", 1e6, "kg")
_units("g|gm|gms|gram|grams|gramme|grammes", "mg", 1e3, "g")
_units("mg|mgs|milligram|milligrams|milligramme|milligrammes", "mg", 1, "mg")
_units("mcg|ug|microgram|micrograms|microgramme|microgrammes", "mg", 1e-3, "mcg")
_units("ng|nanogram|nanograms", "mg", 1e-6, "ng")
_units("l|litre|litres|liter|liters", "ml", 1e3, "L")
_units("dl|decilitre|decilitres|deciliter|deciliters", "ml", 100, "dL")
_units("ml|mls|millilitre|millilitres|milliliter|milliliters|cc", "ml", 1, "ml")
_units("teaspoon|teaspoons|tsp", "ml", 5, "ml")
_units("iu|i.u.|international unit|international units|unit|units", "iu", 1, "IU")
_units("s|sec|secs|second|seconds", "min", 1 / 60, "s")
_units("min|mins|minute|minutes", "min", 1, "min")
_units("h|hr|hrs|hour|hours", "min", 60, "h")
_units("d|day|days", "min", 1440, "days")
_units("wk|wks|week|weeks", "min", 10080, "weeks")
_units("fortnight|fortnights", "min", 20160, "weeks")
_units("mo|mos|month|months", "month", 1, "months")
_units("y|yr|yrs|year|years", "month", 12, "years")
_units("%|percent|per cent|pct", "%", 1, "%")
_units("percentage point|percentage points", "pp", 1, "percentage points")
_units("fold|x", "x", 1, "x")
_units("tablet|tablets|tab|tabs|capsule|capsules|caps|pill|pills|caplet|caplets", "tablet", 1,
       "tablets")
_units("puff|puffs|inhalation|inhalations", "puff", 1, "puffs")
_units("drop|drops", "drop", 1, "drops")
_units("dose|doses", "dose", 1, "doses")
_units("spray|sprays", "spray", 1, "sprays")
_units("sachet|sachets", "sachet", 1, "sachets")
_units("patch|patches", "patch", 1, "patches")
_units("bpm|beats per minute|beats a minute", "bpm", 1, "bpm")
_units("kcal|calories", "kcal", 1, "kcal")
_units("cm|centimetre|centimetres|centimeter|centimeters", "mm", 10, "cm")
_units("mm|millimetre|millimetres|millimeter|millimeters", "mm", 1, "mm")

# single letters only count as units glued to the number ("3x", "5s"), never after a space
_GLUED_ONLY = {"x", "s"}
_UNIT_ALT = "|".join(re.escape(a).replace(r"\ ", r"\s?") for a in sorted(_UNITS, key=len, reverse=True))
_UNIT_AT = re.compile(r"(\s?-?\s?)(" + _UNIT_ALT + r")(?![a-z0-9])")

_DOSE_UNITS = frozenset({"mg", "ml", "iu", "tablet", "puff", "drop", "dose", "spray", "sachet",
                         "patch", "kcal", "count", "mmol"})
# canonical units whose figures are statistics: "28%" is a fair rounding of "28.4%"
_ROUNDABLE = frozenset({"%", "pp", "x", "rate", "count", "mmol/l", "mg/l", "kg/m2", "mmol/mol",
                        "meq/l", "iu/l", "bpm"})

# ---------------------------------------------------------------------------------------
# Numbers written in digits or words
# ---------------------------------------------------------------------------------------

_ONES = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
         "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen",
         "eighteen", "nineteen"]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_WORD_VALUE = {w: i for i, w in enumerate(_ONES)}
_WORD_VALUE.update({w: 20 + 10 * i for i, w in enumerate(_TENS)})
_WORD_VALUE.update({"once": 1, "twice": 2, "thrice": 3, "a dozen": 12, "dozen": 12, "half": 0.5})
_FREQ_WORDS = frozenset({"once", "twice", "thrice"})

_DIGITS = (r"\d{1,3}(?:,\d{3})+(?:\.\d+)?(?!\d)"         # 2,400 / 12,500.5
           r"|\d{1,3}(?:\.\d{3}){2,}(?![\d.])"             # 2.400.000 (only unambiguous dots)
           r"|\d{1,3}(?: \d{3})+(?![\d.,])"                # 10 000 (thin or plain space)
           r"|\d+\.\d+|\d+")
_WORDS = (r"(?:(?:a|one|two|three|four|five|six|seven|eight|nine)\s+hundred"
          r"|(?:" + "|".join(_TENS) + r")(?:[- ](?:one|two|three|four|five|six|seven|eight|nine))?"
          r"|" + "|".join(sorted(_ONES, key=len, reverse=True)) +
          r"|a dozen|once|twice|thrice)")
_TOKEN = re.compile(r"(?<![\w/])(?<!\d[.,])(?P<d>" + _DIGITS + r")|\b(?P<w>" + _WORDS + r")(?:\b|(?=fold\b))")
_NUM_AT = re.compile(r"(?P<d>" + _DIGITS + r")(?![\w])|(?P<w>" + _WORDS + r")\b")


_MULTIPLES = {"thousand": 1e3, "million": 1e6, "billion": 1e9}
# "per million person-years": the denominator in words
_PER_MULTIPLE = re.compile(r"(?:a\s+|one\s+)?(?P<d>thousand|million|billion)\b")


def _value(m: re.Match) -> tuple[float, int]:
    """(value, decimals as written) of a token match."""
    if m.group("d") in _MULTIPLES:
        return _MULTIPLES[m.group("d")], 0
    if m.group("d") is not None:
        raw = m.group("d")
        if raw.count(".") >= 2:
            raw = raw.replace(".", "")
        raw = raw.replace(",", "").replace(" ", "")
        decimals = len(raw.split(".")[1]) if "." in raw else 0
        return float(raw), decimals
    word = m.group("w")
    if "hundred" in word:
        head = word.split()[0]
        return (1 if head == "a" else _WORD_VALUE[head]) * 100.0, 0
    parts = re.split(r"[- ]", word, maxsplit=1)
    if len(parts) == 2 and parts[0] in _TENS:
        return float(_WORD_VALUE[parts[0]] + _WORD_VALUE[parts[1]]), 0
    return float(_WORD_VALUE[word]), 0


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
_INTERVAL_AFTER = re.compile(r"\s+(?:apart|between\s+(?:doses|each dose|tablets|treatments|"
                             r"injections|them))\b")

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
_AGE_BEFORE = re.compile(r"(?:\b(?:before|after|by|from|until|under)\s+(?:the\s+)?age(?:\s+of)?|\baged?(?:\s+(?:over|under|above|below|older than|younger than|from|at least|"
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
_EVERY_ONE = re.compile(r"\b(?:every|each|once a)\s+(?P<u>day|week|month|year)\b(?!\s+(?:of|for)\b)")
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

# ---------------------------------------------------------------------------------------
# Qualifiers: what a number is attached to, in a small normalised vocabulary
# ---------------------------------------------------------------------------------------

_QUALIFIERS = [(name, re.compile(rx)) for name, rx in [
    ("prescription:without", r"\bwithout\s+(?:a\s+|any\s+)?prescription|over[- ]the[- ]counter|"
                             r"\botc\b|non-?prescription|\bno prescription"),
    ("prescription:with", r"\bwith\s+(?:a\s+|your\s+)?prescription|\bon\s+prescription|"
                          r"\bprescribed\b|prescription[- ]only|\bif\s+(?:a|your)\s+(?:doctor|gp|"
                          r"prescriber)\s+(?:says|recommends|advises|prescribes)"),
    ("adult", r"\badults?\b|\bgrown-?ups?\b"),
    ("child", r"\bchild(?:ren)?\b|\bkids?\b|\bpa?ediatric|\bteen|\badolescen|\byoung people\b|"
              r"\bboys?\b|\bgirls?\b"),
    ("infant", r"\binfants?\b|\bbab(?:y|ies)\b|\bnewborns?\b|\bneonat|\btoddlers?\b"),
    ("older", r"\bolder\s+(?:adults|people|patients|persons|women|men)\b|\belderly\b|"
              r"\bover[- ](?:6[05]|70|75|80)s?\b|\b(?:6[05]|70|75|80)\s+(?:years\s+)?(?:and|or)\s+"
              r"(?:over|older|above)|\baged\s+(?:6[05]|70|75|80)|\bseniors?\b"),
    ("pregnant", r"\bpregnan"),
    ("breastfeeding", r"\bbreast-?feeding|\blactat"),
    ("male", r"\bmen\b|\bmales?\b|\bboys?\b"),
    ("female", r"\bwomen\b|\bfemales?\b|\bgirls?\b"),
    ("starting", r"\bstart(?:ing|ed|s)?\b|\binitial(?:ly)?\b|\bbegin(?:ning|s)?\b|(?<!after the )\bfirst\s+dose|"
                 r"\bat first\b|\bto begin with\b|\bfirst\s+(?:\d+|few|two|three|four|six|eight|"
                 r"twelve)\s+(?:days|weeks|months)\b"),
    # what comes after the start: "then 1 capsule after each loose stool", "increased to"
    ("subsequent", r"\bthen\b|\bthereafter\b|\bafter that\b|\bsubsequent(?:ly)?\b|\bafter each\b|"
                   r"\b(?:increase|raise|titrate|double)[sd]?\s+(?:[a-z]+\s+){0,3}?to\b"),
    ("first_day", r"(?<!after )\bthe first day\b|\bday (?:one|1)\b"),
    ("every_day", r"\b(?:every|each|any)\s+(?:later\s+|other\s+)?day\b|\bafter the first day\b|"
                  r"\blater days?\b|\bsubsequent days?\b"),
    ("treat", r"\b(?:to|for)\s+treat(?:ing|ment)?\b|\btreating\b|\bas treatment\b"),
    ("prevent", r"\bprevent(?:ing|ion)?\b|\bprophyla"),
    ("moderate", r"\bmoderate(?:[- ]intensity)?\s+(?:activity|exercise|aerobic)"),
    ("vigorous", r"\bvigorous|\bhigh[- ]intensity\b"),
    ("home", r"\bhome\b|\bambulatory\b|\babpm\b|\bhbpm\b"),
    ("clinic", r"\bclinic\b|\boffice\b"),
    ("younger", r"\byounger\b"),
    ("diabetes", r"\bdiabet(?:es|ic)\b"),
    # a figure of the other arm: "compared with 9.9% of those using nicotine replacement"
    ("comparator", r"\bcompared (?:with|to)\b|\bversus\b|\bvs\.?\s|\bagainst\s+(?:about\s+)?\d"),
    # a time before or after an event is not how long something lasts
    ("delay", r"\b(?:minutes?|hours?|days?|weeks?|months?|years?)\s+(?:after|before)\b"),
    ("course", r"\blasts?\b|\blasting\b|\bcourse of\b|\bduration\b|\bfor\s+(?:a\s+total\s+of\s+)?"
               r"(?:\d|an?\s|one|two|three|four|five|six|seven|eight|nine|ten|twelve|fourteen)"),
    ("usual", r"\busual(?:ly)?\b|\btypical(?:ly)?\b|\bstandard\b|\bnormal(?:ly)?\b"),
    ("maximum", r"\bmaxim(?:um|al)\b|\bmax\b|\bhighest\b|\bupper\s+limit"),
    ("minimum", r"\bminim(?:um|al)\b|\blowest\b"),
    ("loading", r"\bloading\b"),
    ("maintenance", r"\bmaintenance\b|\bmaintain"),
    ("missed", r"\bmiss(?:ed|es)?\b|\bforg[eo]t"),
    ("morning", r"\bmorning|\bbreakfast|\bon waking"),
    ("night", r"\bnight|\bbedtime|\bbed\s+time|\bevening|\bbefore\s+bed"),
    ("systolic", r"\bsystolic"),
    ("diastolic", r"\bdiastolic"),
    ("kidney", r"\bkidney|\brenal\b"),
    ("liver", r"\bliver\b|\bhepatic"),
]]
# qualifier pairs that cannot describe the same quantity
_CONFLICTS = frozenset(frozenset(p) for p in [
    ("prescription:with", "prescription:without"), ("adult", "child"), ("adult", "infant"),
    ("child", "infant"), ("older", "child"), ("older", "infant"), ("male", "female"),
    ("pregnant", "male"), ("starting", "maximum"), ("starting", "maintenance"),
    ("loading", "maintenance"), ("usual", "maximum"), ("minimum", "maximum"),
    ("usual", "minimum"), ("starting", "missed"), ("morning", "night"),
    ("systolic", "diastolic"), ("starting", "subsequent"), ("first_day", "every_day"),
    ("treat", "prevent"), ("moderate", "vigorous"), ("home", "clinic"), ("older", "younger"),
    ("delay", "course"), ("loading", "subsequent"),
])
# qualifiers that name a subgroup: a figure stated for the claim's own subgroup outranks one
# stated for everyone ("older people often need 62.5 micrograms" against "usual dose 250")
_SUBGROUPS = frozenset({"older", "younger", "child", "infant", "pregnant", "breastfeeding",
                        "kidney", "liver", "diabetes", "home", "clinic"})
# numbered families read from the text: "stage 1" vs "stage 2", "two doses" vs "one dose"
_FAMILY = re.compile(r"\b(?P<f>stage|type|grade|class|step)\s+(?P<v>\d+[a-c]?|i{1,3}|iv|v)\b"
                     r"|\b(?P<n>one|a single|single|two|both|three|four|1|2|3|4)\s+doses?\b")
_DOSE_COUNT = {"one": "1", "a single": "1", "single": "1", "two": "2", "both": "2", "three": "3",
               "four": "4"}
_QUALIFIER_GROUPS = [
    {"prescription:with", "prescription:without"}, {"adult", "child", "infant", "older"},
    {"male", "female"}, {"starting", "usual", "maximum", "minimum", "loading", "maintenance"},
    {"morning", "night"}, {"systolic", "diastolic"}, {"starting", "subsequent"},
    {"first_day", "every_day"}, {"treat", "prevent"}, {"moderate", "vigorous"}, {"home", "clinic"},
    {"delay", "course"},
]
_QUALIFIER_WORDS = {
    "prescription:without": "without a prescription", "prescription:with": "with a prescription",
    "adult": "adults", "child": "children", "infant": "infants", "older": "older people",
    "pregnant": "in pregnancy", "breastfeeding": "when breastfeeding", "male": "men",
    "female": "women", "starting": "starting dose", "usual": "usual", "maximum": "maximum",
    "minimum": "minimum", "loading": "loading dose", "maintenance": "maintenance",
    "missed": "missed dose", "morning": "in the morning", "night": "at night",
    "systolic": "systolic", "diastolic": "diastolic", "kidney": "kidney problems",
    "liver": "liver problems", "subsequent": "later doses", "first_day": "on the first day",
    "every_day": "on later days", "treat": "to treat", "prevent": "to prevent",
    "moderate": "moderate activity", "vigorous": "vigorous activity", "home": "home readings",
    "clinic": "clinic readings", "younger": "younger people", "diabetes": "with diabetes",
    "comparator": "in the comparison group", "delay": "after an event", "course": "course length",
}

# ---------------------------------------------------------------------------------------
# Subject: content-word stems of the clause, without the words the checker reads itself
# ---------------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z]+")
_NOT_SUBJECT = frozenset((
    "a an and are as at be by for from has have had in is it its of on or that the this to was "
    "were with which who will can could may might should must would than then there these those "
    "their they them been being also into such other some any more most over under between about "
    "after before during while when where what how do does did so if our we i you your he she his "
    "her not no never without per each every up least less fewer much many very only just around "
    "within approximately nearly almost roughly above below greater higher lower maximum minimum max "
    "take takes taken taking took use used using uses give given gives giving dose doses dosage "
    "amount amounts total recommended usual usually typical typically standard normal normally "
    "start started starting initial initially adult adults child children kid kids infant "
    "infants baby babies older elderly men women male female prescription prescribed "
    "counter morning night bedtime evening once twice thrice times time daily day days week "
    "weeks month months year years hour hours minute minutes second seconds mg g kg mcg ug ml "
    "l iu unit units percent cent mmhg mm hg tablet tablets capsule capsules people patient "
    "patients person persons exceed exceeding aim target range between get got "
    "half dozen hundred thousand million systolic diastolic pregnant pregnancy breastfeeding "
    "maintenance loading missed need needs needed aim aims keep keeps wait leave recommend "
    "recommends advise advised advice suggest suggests contain contains help helps make makes "
    "allowed safe safely okay ok fine enough amount").split()) | frozenset(_ONES) | frozenset(_TENS) | frozenset(
    w for alias in _UNITS for w in re.findall(r"[a-z]+", alias))


def _stem(word: str) -> str:
    """A deliberately crude stem: common suffixes off, then the first five letters."""
    if len(word) > 4 and word.endswith("ies"):
        word = word[:-3] + "y"
    if word.endswith("lly"):
        word = word[:-1]  # "fully" ~ "full", "usually" ~ "usual"
    for suffix in ("ing", "ed", "ly", "es", "s"):
        if word.endswith(suffix) and len(word) - len(suffix) >= 3:
            word = word[: -len(suffix)]
            break
    return word[:5]


def _stems(text: str) -> frozenset[str]:
    return frozenset(_stem(w) for w in _WORD.findall(text) if w not in _NOT_SUBJECT and len(w) > 1)


def _qualifiers(text: str) -> set[str]:
    found = {name for name, rx in _QUALIFIERS if rx.search(text)}
    for m in _FAMILY.finditer(text):
        if m.group("f"):
            found.add(f"{m.group('f')}:{m.group('v')}")
        else:
            n = m.group("n")
            found.add(f"doses:{_DOSE_COUNT.get(n, n)}")
    return found


def _family(q: str) -> str:
    return q.split(":")[0] if ":" in q and not q.startswith("prescription") else ""


# ---------------------------------------------------------------------------------------
# Extraction
# ---------------------------------------------------------------------------------------

@dataclass
class _Raw:
    start: int
    end: int
    low: float
    high: float
    unit: str
    per: str = ""
    bound: str = "eq"
    low2: float | None = None
    high2: float | None = None
    shown: str = ""
    scale: float = 1.0
    decimals: int = 0
    per_label: str = ""
    noun: str = ""
    read_start: int = 0       # the denominator it read, when apart from its text
    read: int = 0


def _unit_at(t: str, pos: int, glued_ok: bool = True) -> re.Match | None:
    m = _UNIT_AT.match(t, pos)
    if not m:
        return None
    alias = re.sub(r"\s+", " ", m.group(2))
    if alias not in _UNITS and alias.replace(" ", "") in _UNITS:
        alias = alias.replace(" ", "")
    if alias not in _UNITS:
        return None
    if alias in _GLUED_ONLY and (m.group(1) or not glued_ok):
        return None
    return m


def _unit_of(m: re.Match) -> tuple[str, float, str]:
    alias = re.sub(r"\s+", " ", m.group(2))
    return _UNITS.get(alias) or _UNITS[alias.replace(" ", "")]


def _bound_before(t: str, start: int) -> str:
    window = t[max(0, start - 60):start]
    if _OR_MORE_THAN.search(t[max(0, start - 120):start]):
        return "le"  # "do not take more than 1,250 mg on the first day or more than 1,000 mg"
    for bound, rx in _BOUND_BEFORE:
        if rx.search(window):
            return bound
    return ""


def _per_after(t: str, pos: int) -> tuple[str, str, int, int, int]:
    """(canonical per, per as written, end of the text, start and end of the denominator read)
    of the denominators right after an amount ("2,400mg of ibuprofen in 24 hours")."""
    per_parts: list[str] = []
    labels: list[str] = []
    end = pos
    gapped = False
    per_start = pos
    for _ in range(2):
        m = _PER_AFTER.match(t, end)
        if not m:
            for gap_rx in (_GAP, _VERB_GAP):
                gap = gap_rx.match(t, end)
                if gap and gap.end() > end:
                    m = _PER_AFTER.match(t, gap.end())
                    gapped = bool(m)
                    per_start = gap.end()
                    if m:
                        break
        if not m:
            break
        if m.group("freq") is not None:
            f = m.group("freq").strip()
            once = f in ("once", "one time", "1 times", "1x") or re.fullmatch(r"1\s?times", f)
            unit = m.group("fu")
            base = "week" if unit.startswith("week") else "day"
            if once:
                per_parts.append(base)
                labels.append(base)
            else:
                per_parts.append("dose")
                labels.append("dose")
            # a frequency is a quantity of its own: only peek at it
            break
        if m.group("d24") is not None:
            d24 = m.group("d24")
            per_parts.append("day")
            labels.append("day" if "day" in d24 else "24 h")
        elif m.group("course") is not None:
            per_parts.append("course")
            labels.append("course")
        elif m.group("tod") is not None or m.group("oneday") is not None:
            per_parts.append("day")
            labels.append("day")
        elif m.group("adv") is not None:
            p = _PER_ADVERB[m.group("adv")]
            per_parts.append(p)
            labels.append(p)
        else:
            word = (m.group("slash") or m.group("word") or "").replace(" ", "").replace("-", "")
            if word.startswith("24"):
                per_parts.append("day")
                labels.append("24 h")
            else:
                p = _PER_NOUN.get(word, word)
                per_parts.append(p)
                labels.append(p)
        end = m.end()
    # "/kg/day": the body weight first; "a day per kg" is read the same way
    if "kg" in per_parts and per_parts[0] != "kg":
        per_parts.remove("kg")
        per_parts.insert(0, "kg")
        labels = ["kg"] + [x for x in labels if x != "kg"]
    return "/".join(per_parts), "/".join(labels), pos if gapped else end, per_start, end


def _count_noun(t: str, pos: int) -> str:
    m = re.compile(r"\s+(?:of\s+)?([a-z][a-z-]+)").match(t, pos)
    if not m:
        return ""
    word = m.group(1)
    if word in _NOT_SUBJECT and word not in ("people", "patients", "persons", "person", "adults",
                                             "children", "women", "men", "tablets"):
        return ""
    return _stem(word)


def _parse_at(t: str, m: re.Match, pressure: bool) -> _Raw | None:
    s = m.start()
    is_word = m.group("d") is None
    value, decimals = _value(m)
    end = m.end()
    before = t[max(0, s - 40):s]
    word = m.group("w") or ""

    if not is_word:
        if s > 0 and (t[s - 1].isalpha() or _NAME_BEFORE.search(before)):
            return None
        ordinal = re.match(r"(?:st|nd|rd|th)\s+(?P<u>week|day|month|year|birthday)\b", t[end:])
        if ordinal:  # "until the 12th week of pregnancy": a point in time, compared as such
            u = ordinal.group("u")
            return _Raw(s, end + ordinal.end(), value, value, "ordinal " + u, shown=u + " number",
                        bound=_bound_before(t, s) or "eq")
        nxt = t[end:end + 1]
        if nxt.isalpha() and not _unit_at(t, end) and not t.startswith("s", end) \
                and not _TIMES.match(t, end):
            return None  # "282y", "1st", "3rd"
        if re.match(r"(?:st|nd|rd|th)\b", t[end:end + 2]):
            return None
        if s > 0 and t[s - 1] in "$\u00a3\u20ac":
            return None  # a price
        if re.fullmatch(r"1[89]\d\d|20\d\d", m.group("d")) and not _unit_at(t, end) \
                and not t.startswith("%", end):
            return None  # a year used as a date

    # blood pressure "130/80 (mm Hg)"
    if not is_word:
        bp = _BP_TAIL.match(t, end)
        if bp:
            dia = float(bp.group(1))
            unit_m = _unit_at(t, bp.end())
            mmhg = bool(unit_m and _unit_of(unit_m)[0] == "mmhg")
            if (mmhg or pressure) and 50 <= value <= 260 and 30 <= dia <= 160 and value > dia:
                e = unit_m.end() if mmhg else bp.end()
                return _Raw(s, e, value, value, "mmhg", bound=_bound_before(t, s) or "eq",
                            low2=dia, high2=dia, shown="mm Hg")
            return None  # a fraction or a date ("1/2", "12/05"): not a checked quantity

    # the first unit, then a second number of a range
    unit_m = _unit_at(t, end, glued_ok=not is_word)
    high, high_dec = value, decimals
    if word in _FREQ_WORDS:
        unit_m = None
    after = unit_m.end() if unit_m else end
    ranged = False
    sep = _RANGE_SEP.match(t, after)
    if sep and word not in _FREQ_WORDS:
        joiner = sep.group(0).strip()
        m2 = _NUM_AT.match(t, sep.end())
        if m2 and (joiner != "and" or _BETWEEN_BEFORE.search(before)) and \
                not (joiner == "-" and is_word):
            v2, d2 = _value(m2)
            unit2 = _unit_at(t, m2.end(), glued_ok=m2.group("d") is not None)
            same_dim = not (unit_m and unit2) or _unit_of(unit_m)[0] == _unit_of(unit2)[0]
            if same_dim and not _BP_TAIL.match(t, m2.end()):
                if unit_m and unit2 and _unit_of(unit_m)[1] != _unit_of(unit2)[1]:
                    value = value * _unit_of(unit_m)[1] / _unit_of(unit2)[1]  # "500 mg to 1 g"
                if v2 > value:
                    high, high_dec = v2, d2
                    ranged = True
                    end = m2.end()
                    unit_m = unit2 or unit_m
                    after = unit2.end() if unit2 else end
                else:
                    value = _value(m)[0]
    if not ranged:
        after = unit_m.end() if unit_m else end
    dec = max(decimals, high_dec)

    bound = "range" if ranged else (_bound_before(t, s) or "eq")

    # frequencies: "three times a day", "once daily", "1 a day", "every 12 hours"
    if not unit_m or (t[end:after].strip() in ("x",)):
        times = _TIMES.match(t, end)
        fp = _FREQ_PER.match(t, times.end() if times else end)
        if fp and (times or word in _FREQ_WORDS or not is_word):
            per = _PER_NOUN.get(fp.group("u") or "", "") or _PER_ADVERB.get(fp.group("adv") or "", "") \
                or "day"
            return _Raw(s, fp.end(), value, high, "times", per=per, bound=bound, shown="times",
                        decimals=dec, per_label=per)
        if times or word == "twice":
            e = times.end() if times else end
            return _Raw(s, e, value, high, "x", bound=bound, shown="x", decimals=dec)
        if word in _FREQ_WORDS:
            return None

    # proportions and rates: "1 in 10,000", "3 to 10 per 100,000 person-years"
    if not unit_m:
        prop = _PROPORTION.match(t, end)
        if prop:
            d = _NUM_AT.match(t, prop.end())
            if d and d.group("d") is not None:
                den = _value(d)[0]
                sep2 = _RANGE_SEP.match(t, d.end())
                d2 = _NUM_AT.match(t, sep2.end()) if sep2 and sep2.group(0).strip() in ("-", "to") else None
                if den > high > 0 and d2 and d2.group("d") is not None and _value(d2)[0] > den \
                        and value == high:
                    # "1 in 3,000 to 4,000": a range of rates
                    return _Raw(s, d2.end(), 100 * value / _value(d2)[0], 100 * value / den, "%",
                                bound="range", shown="in", scale=100 / den, decimals=-1)
                if den > high > 0:
                    return _Raw(s, d.end(), 100 * value / den, 100 * high / den, "%", bound=bound,
                                shown="in", scale=100 / den, decimals=-1)
        rate = _RATE.match(t, end)
        if rate:
            d = _NUM_AT.match(t, rate.end()) or _PER_MULTIPLE.match(t, rate.end())
            if d and d.group("d") is not None and _value(d)[0] >= 10:
                den = _value(d)[0]
                noun = _RATE_NOUN.match(t, d.end())
                per = "person"
                e = d.end()
                if noun:
                    n = noun.group(1)
                    per = ("person-year" if "year" in n else
                           "birth" if "birth" in n or "deliver" in n else
                           "admission" if "admission" in n else
                           "procedure" if "procedure" in n else "person")
                    e = noun.end()
                return _Raw(s, e, value / den, high / den, "rate", per=per, bound=bound,
                            shown="per", scale=1 / den, decimals=dec)

    if is_word and not unit_m:
        return None  # "one of the", "two studies": words count only with a unit

    # intervals: "every 4 to 6 hours", "at least 4 hours between doses"
    if unit_m and _unit_of(unit_m)[0] == "min":
        canon, factor, shown = _unit_of(unit_m)
        every = _EVERY_BEFORE.search(before)
        apart = _INTERVAL_AFTER.match(t, after)
        if every or apart:
            e = apart.end() if apart else after
            return _Raw(s, e, value * factor, high * factor, "min", per="interval",
                        bound="range" if ranged else (bound if not every or bound == "ge" else "eq"),
                        shown=shown, scale=factor, decimals=dec)

    # ages: "aged 65", "65 years and over", "children under 12", "over-65s"
    age_after = _AGE_AFTER.match(t, end)
    age_before = _AGE_BEFORE.search(before)
    years = bool(unit_m) and _unit_of(unit_m)[0] == "month"
    if (age_after and (not unit_m or years)) or (age_before and (not unit_m or years)):
        e = age_after.end() if age_after else end
        if age_after and re.search(r"(?:and|or)\s+(?:over|older|above)", age_after.group(0)):
            bound = "ge"
        elif age_after and re.search(r"(?:and|or)\s+(?:under|younger)", age_after.group(0)):
            bound = "le"
        if age_after or bound != "eq" or age_before:
            return _Raw(s, e, value, high, "age", bound=bound, shown="years", decimals=dec)

    if unit_m:
        canon, factor, shown = _unit_of(unit_m)
        low_v, high_v = value * factor, high * factor
        raw = _Raw(s, after, low_v, high_v, canon, bound=bound, shown=shown, scale=factor,
                   decimals=dec)
    else:
        raw = _Raw(s, end, value, high, "count", bound=bound, shown="", decimals=dec,
                   noun=_count_noun(t, end))

    if raw.unit in _DOSE_UNITS or raw.unit == "mg/l":
        per, label, e, read_start, read = _per_after(t, raw.end)
        if per:
            raw.per, raw.per_label = per, label
            raw.end, raw.read_start, raw.read = e, read_start, read
        else:
            pb = _PER_BEFORE.search(t[max(0, s - 100):s])
            if pb:
                p = pb.group("p")
                raw.per = "week" if p == "weekly" else "day"
                raw.per_label = raw.per
    if ranged and re.match(r"\s+(?:at most|maximum|max)\b", t[raw.end:]):
        raw.bound = "le"
    if bound == "eq" and not ranged:
        for b, rx in _BOUND_AFTER:
            bm = rx.match(t, raw.end)
            if bm:
                raw.bound = b
                break
    return raw


def _word_durations(t: str, taken: list[tuple[int, int]]) -> list[_Raw]:
    out = []
    for m in _A_DURATION.finditer(t):
        s = m.start("half") if m.group("half") else m.start("a")
        if any(a <= s < b for a, b in taken):
            continue
        if m.group("half"):
            unit = m.group("hu") or "hour"
            minutes = 30.0 if unit == "hour" else 720.0
            raw = _Raw(s, m.end(), minutes, minutes, "min", shown="min", decimals=-1)
        else:
            unit = m.group("u")
            canon, factor, shown = _UNITS[unit]
            value = 1.5 if m.group("andhalf") else 1.0
            raw = _Raw(s, m.end(), value * factor, value * factor, canon, shown=shown,
                       scale=factor, decimals=-1)
        bound = _bound_before(t, m.start()) if not m.group("half") else _bound_before(t, s)
        if m.group("pre") in ("least",):
            bound = "ge"
        elif m.group("pre") in ("most",):
            bound = "le"
        elif m.group("pre") in ("within", "under"):
            bound = bound or "le"
        raw.bound = bound or "eq"
        out.append(raw)
    for m in _EVERY_OTHER.finditer(t):
        if any(a <= m.start() < b for a, b in taken):
            continue
        canon, factor, shown = _UNITS[m.group("u") or m.group("ua")]
        if canon == "min":
            out.append(_Raw(m.start(), m.end(), 2 * factor, 2 * factor, "min", per="interval",
                            shown=shown, scale=factor, decimals=-1))
    for m in _EVERY_ONE.finditer(t):
        if any(a <= m.start() < b or m.start() <= a < m.end() for a, b in taken):
            continue
        if not _REPEATED.search(t[max(0, m.start() - 30):m.start()]):
            continue  # "10 mg every day", "activity every week": a denominator, not an interval
        canon, factor, shown = _UNITS[m.group("u")]
        minutes = factor if canon == "min" else factor * _MONTH_MIN
        out.append(_Raw(m.start(), m.end(), minutes, minutes, "min", per="interval",
                        shown=shown, scale=minutes, decimals=-1 if canon == "min" else _CALENDAR))
    for m in _AND_A_HALF.finditer(t):
        if any(a <= m.start() < b for a, b in taken):
            continue
        n = m.group("n")
        value = (float(n) if n.isdigit() else float(_WORD_VALUE[n])) + 0.5
        canon, factor, shown = _UNITS[m.group("u")]
        out.append(_Raw(m.start(), m.end(), value * factor, value * factor, canon, shown=shown,
                        scale=factor, decimals=1, bound=_bound_before(t, m.start()) or "eq"))
    for m in _QUARTER_HOUR.finditer(t):
        if any(a <= m.start() < b for a, b in taken):
            continue
        v = 45.0 if m.group("q") == "three" else 15.0
        out.append(_Raw(m.start(), m.end(), v, v, "min", shown="min", decimals=-1,
                        bound=_bound_before(t, m.start()) or "eq"))
    for m in _SHARE.finditer(t):
        if any(a <= m.start() < b for a, b in taken):
            continue
        v = _SHARE_VALUE[m.group("s")]
        out.append(_Raw(m.start(), m.end() - 3, v, v, "%", shown="%", decimals=-1,
                        bound=_bound_before(t, m.start()) or "approx"))
    return out


_MONTH_MIN = 30.4375 * 1440
_REPEATED = re.compile(r"\b(?:checked|tested|measured|monitored|repeated|done|reviewed|changed|"
                       r"replaced|seen|examined|screened)\s+(?:[a-z]+\s+)?$")
_CALENDAR = -2  # decimals of a figure converted between weeks and months: "3 months" ~ "12 weeks"


def _pair_words(t: str) -> list[_Raw]:
    out = []
    for m in _BP_PAIR_WORDS.finditer(t):
        sys_v, dia_v = float(m.group("s")), float(m.group("d"))
        bound = {"below": "lt", "under": "lt", "less than": "lt", "<": "lt", "above": "gt",
                 "over": "gt", ">": "gt"}.get((m.group("b1") or "").strip(), "")
        bound = bound or _bound_before(t, m.start()) or "eq"
        out.append(_Raw(m.start(), m.end(), sys_v, sys_v, "mmhg", bound=bound, low2=dia_v,
                        high2=dia_v, shown="mm Hg"))
    return out


def _segments(t: str) -> list[tuple[int, int]]:
    spans, start = [], 0
    for m in _SEGMENT.finditer(t):
        spans.append((start, m.start()))
        start = m.end()
    spans.append((start, len(t)))
    return spans


# a sentence without digits holds a quantity only in words: a cheap test first
_MAY_HOLD_WORDS = re.compile(
    r"(?i)\b(?:once|twice|thrice|half|third|quarters?|alternate|an?\s+(?:hour|day|week|month|year|fortnight|minute)|every|"
    + "|".join(_ONES[1:] + _TENS) + r")(?:\b|(?=fold))")


def extract_quantities(sentence: str) -> list[Quantity]:
    """Every checkable quantity of one sentence, in order, with what it is attached to."""
    return list(_extract(sentence))


@lru_cache(maxsize=8192)  # the judge meets the same source sentences for every statement
def _extract(sentence: str) -> tuple[Quantity, ...]:
    if not sentence or not any(c.isdigit() for c in sentence) and not _MAY_HOLD_WORDS.search(
            sentence):
        return ()
    t = _normalise(sentence)
    pressure = bool(_PRESSURE_CONTEXT.search(t))
    raws: list[_Raw] = _pair_words(t)
    taken = [(r.start, r.end) for r in raws]
    for m in _TOKEN.finditer(t):
        if any(a <= m.start() < b for a, b in taken):
            continue
        raw = _parse_at(t, m, pressure)
        if raw is None:
            continue
        raws.append(raw)
        taken.append((raw.start, raw.end))
        if raw.read > raw.end:
            taken.append((raw.read_start, raw.read))
    raws.extend(_word_durations(t, taken))
    raws.sort(key=lambda r: r.start)
    # a quantity in brackets restates the one before it: "8 tablets (4g) in 24 hours"
    for prev, cur in zip(raws, raws[1:]):
        if re.fullmatch(r"\s*\(\s*", t[prev.end:cur.start]):
            if cur.bound == "eq":
                cur.bound = prev.bound
            if not cur.per and prev.per and cur.unit in _DOSE_UNITS:
                cur.per, cur.per_label = prev.per, prev.per_label
    return tuple(_attach(sentence, t, raws))


def _attach(sentence: str, t: str, raws: list[_Raw]) -> list[Quantity]:
    """Qualifiers from each quantity's own part of its clause, plus the clause's opening."""
    out: list[Quantity] = []
    for seg_start, seg_end in _segments(t):
        group = [r for r in raws if seg_start <= r.start < seg_end]
        if not group:
            continue
        subject = _stems(t[seg_start:seg_end])
        # split the clause at separators that stand between two quantities
        bounds = []
        for i, r in enumerate(group):
            lo = seg_start
            if i > 0:
                gap = t[group[i - 1].end:r.start]
                seps = list(_SEPARATOR.finditer(gap))
                lo = group[i - 1].end + seps[0].start() if seps else None
            bounds.append(lo)
        # chained quantities (no separator) share a region
        regions: list[tuple[int, int]] = []
        for i, r in enumerate(group):
            lo = bounds[i]
            j = i
            while lo is None:
                j -= 1
                lo = bounds[j]
            k = i + 1
            while k < len(group) and bounds[k] is None:
                k += 1
            hi = bounds[k] if k < len(group) else seg_end
            regions.append((lo, hi))
        first_lo = regions[0][0]
        opening = t[seg_start:group[0].start] if first_lo == seg_start else t[seg_start:first_lo]
        # "during the first 18 weeks, ...": a period the clause opens with bounds what follows
        head = _OPENING_PERIOD.match(t, seg_start, group[0].end) if group[0].start - seg_start < 30 else None
        shared = _qualifiers(opening)
        if head:
            shared.add("starting")
        for r, (lo, hi) in zip(group, regions):
            own = _qualifiers(t[lo:hi])
            quals = set(own)
            if r.low2 is not None:  # a pair holds both pressures
                quals -= {"systolic", "diastolic"}
            for q in shared:
                grps = [g for g in _QUALIFIER_GROUPS if q in g]
                fam = _family(q)
                if fam:
                    if not any(_family(o) == fam for o in own):
                        quals.add(q)
                elif not any(own & g for g in grps):
                    quals.add(q)
            # the age group a figure is given for: "children aged 6 to 11 ... up to 12 mg"
            if r.unit != "age":
                ages = [a for a in group if a.unit == "age" and a.start < r.start]
                if ages:
                    a = ages[-1]
                    quals.add(f"age:{a.low:g}-{a.high:g}{a.bound}")
            out.append(Quantity(
                text=sentence[r.start:r.end].strip(), start=r.start, end=r.end, low=r.low,
                high=r.high, unit=r.unit, per=r.per, bound=r.bound,
                qualifiers=frozenset(quals), subject=subject, low2=r.low2, high2=r.high2,
                shown_unit=r.shown, scale=r.scale, decimals=r.decimals,
                per_label=r.per_label, noun=r.noun, local=_stems(t[lo:hi])))
    return out


# ---------------------------------------------------------------------------------------
# Comparison
# ---------------------------------------------------------------------------------------

def _kind(q: Quantity) -> tuple:
    return (q.unit, q.per, q.noun, q.is_pair)


def _convert(s: Quantity, claim: Quantity, iu_per_mg: float | None) -> Quantity | None:
    """`s` expressed as the same kind of quantity as `claim`, or None when it is not one."""
    if _kind(s) == _kind(claim):
        return s
    # once a week ~ a seventh of once a day, so "once a week" and "once daily" differ
    per_day = {"day": 1.0, "week": 1 / 7, "hour": 24.0}
    if claim.unit == "times" == s.unit and claim.per in per_day and s.per in per_day:
        f = per_day[s.per] / per_day[claim.per]
        return replace(s, low=s.low * f, high=s.high * f, per=claim.per, decimals=-1)
    # every 12 hours ~ twice a day
    if claim.unit == "times" and claim.per == "day" and s.unit == "min" and s.per == "interval":
        flip = {"le": "ge", "lt": "gt", "ge": "le", "gt": "lt"}
        return replace(s, low=1440 / s.high, high=1440 / s.low, unit="times", per="day",
                       bound=flip.get(s.bound, s.bound), decimals=-1, per_label="day")
    if claim.unit == "min" and claim.per == "interval" and s.unit == "times" and s.per == "day":
        flip = {"le": "ge", "lt": "gt", "ge": "le", "gt": "lt"}
        return replace(s, low=1440 / s.high, high=1440 / s.low, unit="min", per="interval",
                       bound=flip.get(s.bound, s.bound), decimals=-1, shown_unit="h", scale=60)
    # monitoring intervals: "every month" ~ "every 4 weeks", not "every week" (durations in
    # weeks and in months are not compared: "4 weeks" is not quite "a month")
    if {claim.unit, s.unit} == {"min", "month"} and claim.per == s.per == "interval":
        f = 1 / _MONTH_MIN if claim.unit == "month" else _MONTH_MIN
        return replace(s, low=s.low * f, high=s.high * f, unit=claim.unit, decimals=_CALENDAR,
                       shown_unit=claim.shown_unit, scale=claim.scale)
    # one component of a blood-pressure pair
    if claim.unit == "mmhg" and not claim.is_pair and s.unit == "mmhg" and s.is_pair:
        if "diastolic" in claim.qualifiers:
            return replace(s, low=s.low2, high=s.high2, low2=None, high2=None,
                           qualifiers=s.qualifiers | {"diastolic"})
        if "systolic" in claim.qualifiers:
            return replace(s, low2=None, high2=None, qualifiers=s.qualifiers | {"systolic"})
        return None
    # IU <-> mass only where the evidence itself gives both ("10 micrograms (400 IU)")
    if iu_per_mg and claim.per == s.per and not s.is_pair:
        if claim.unit == "iu" and s.unit == "mg":
            return replace(s, low=s.low * iu_per_mg, high=s.high * iu_per_mg, unit="iu",
                           shown_unit="IU", scale=1, decimals=-1)
        if claim.unit == "mg" and s.unit == "iu":
            return replace(s, low=s.low / iu_per_mg, high=s.high / iu_per_mg, unit="mg",
                           shown_unit="mcg", scale=1e-3, decimals=-1)
    return None


def _equal(a: float, b: float, claim: Quantity, source: Quantity) -> bool:
    if math.isclose(a, b, rel_tol=1e-6, abs_tol=1e-12):
        return True
    if "approx" in (claim.bound, source.bound):
        # "about 90%" allows 88%; "about 93%" does not allow 97%
        rounded = any(v and abs(v / q.scale) >= 10 and round(v / q.scale) % 10 == 0
                      for v, q in ((a, claim), (b, source)))
        return math.isclose(a, b, rel_tol=0.1 if rounded else 0.02)
    if _CALENDAR in (claim.decimals, source.decimals):
        return math.isclose(a, b, rel_tol=0.1)
    if claim.decimals < 0 or source.decimals < 0:
        return math.isclose(a, b, rel_tol=0.01)
    if claim.unit in _ROUNDABLE:
        # "28%" is a fair rounding of "28.4%" (not of "29.4%")
        return abs(a / claim.scale - b / claim.scale) <= 0.5 * 10 ** -claim.decimals + 1e-9
    return False


_UPPER, _LOWER, _POINT = ("le", "lt"), ("ge", "gt"), ("eq", "approx")
_COMPARATOR_WORDS = frozenset({"compa", "versu", "again"})


def _relation_1(cl: float, ch: float, cb: str, sl: float, sh: float, sb: str,
                claim: Quantity, source: Quantity) -> str:
    """"match", "contradict" or "neutral" (consistent but not stated) for one component."""
    def eq(a: float, b: float) -> bool:
        return _equal(a, b, claim, source)

    if cb in _POINT:
        if sb in _POINT:
            return "match" if eq(cl, sl) else "contradict"
        if sb == "range":
            return "match" if (sl <= cl <= sh or eq(cl, sl) or eq(cl, sh)) else "contradict"
        if sb in _UPPER:
            return "match" if eq(cl, sh) else ("neutral" if cl < sh else "contradict")
        return "match" if eq(cl, sl) else ("neutral" if cl > sl else "contradict")
    if cb == "range":
        if sb == "range":
            return "match" if eq(cl, sl) and eq(ch, sh) else "contradict"
        if sb in _POINT:
            return "contradict"
        if sb in _UPPER:
            return "match" if eq(ch, sh) else ("neutral" if ch < sh else "contradict")
        return "match" if eq(cl, sl) else ("neutral" if cl > sl else "contradict")
    if cb in _UPPER:
        if sb in _LOWER:
            return "contradict"
        return "match" if eq(ch, sh) else "contradict"
    # claim is a lower bound
    if sb in _UPPER:
        return "contradict"
    if sb == "range" and eq(cl, sl):
        return "neutral"  # "42 to 47" does not say "42 or above"
    return "match" if eq(cl, sl) else "contradict"


def _relation(claim: Quantity, s: Quantity) -> str:
    first = _relation_1(claim.low, claim.high, claim.bound, s.low, s.high, s.bound, claim, s)
    if not claim.is_pair:
        return first
    second = _relation_1(claim.low2, claim.high2, claim.bound, s.low2, s.high2, s.bound, claim, s)
    if "contradict" in (first, second):
        return "contradict"
    return "match" if first == second == "match" else "neutral"


def _names_other(claim: Quantity, s: Quantity) -> bool:
    """The source quantity's own words name something the statement never mentions."""
    return bool(s.subject - claim.subject) and len(claim.subject & s.subject) < len(claim.subject) / 2


def _conflict(a: frozenset[str], b: frozenset[str]) -> bool:
    """A claim qualifier conflicts with the source quantity's when the source names an exclusive
    alternative and not the claim's own ("adults and children take 10 mg" covers adults)."""
    for x in a:
        if x in b:
            continue
        fam = _family(x)
        for y in b:
            if y in a:
                continue
            if frozenset((x, y)) in _CONFLICTS or (fam and _family(y) == fam and y != x
                                                   and not any(_family(z) == fam and z in b
                                                               for z in a - {x})):
                return True
    return False


def _number(v: float, decimals: int) -> str:
    if decimals <= 0:
        if abs(v - round(v)) < 1e-9:
            return f"{int(round(v)):,}"
        text = f"{v:,.4f}".rstrip("0").rstrip(".")
        return text
    return f"{v:,.{decimals}f}"


_BOUND_WORDS = {"le": "up to", "lt": "below", "ge": "at least", "gt": "above", "approx": "about"}


def describe(q: Quantity, with_bound: bool = False) -> str:
    """The quantity in plain words, in the unit its writer used: "2,400 mg/24 h"."""
    d = q.decimals
    if q.unit == "rate" or (q.unit == "%" and q.shown_unit == "in") or q.unit == "count":
        body = q.text
    elif q.is_pair:
        body = f"{_number(q.low, 0)}/{_number(q.low2 or 0, 0)} mm Hg"
    else:
        lo, hi = q.low / q.scale, q.high / q.scale
        if q.unit == "times":
            n = lo if lo == hi else None
            word = {1: "once", 2: "twice"}.get(int(n), None) if n is not None and n == int(n) else None
            per = {"day": "a day", "week": "a week", "month": "a month", "year": "a year",
                   "hour": "an hour"}.get(q.per, "per " + q.per)
            if word:
                body = f"{word} {per}"
            elif lo == hi:
                body = f"{_number(lo, d)} times {per}"
            else:
                body = f"{_number(lo, d)} to {_number(hi, d)} times {per}"
        else:
            num = _number(lo, d) if lo == hi else f"{_number(lo, d)} to {_number(hi, d)}"
            unit = q.shown_unit
            if unit == "%":
                body = f"{num}%"
            elif unit == "x":
                body = f"{num}-fold"
            else:
                if num == "1" and unit in ("days", "weeks", "months", "years", "tablets", "puffs",
                                           "drops", "doses", "sprays", "sachets"):
                    unit = unit[:-1]
                body = f"{num} {unit}".strip()
            if q.per == "interval":
                body = f"every {body}" if q.bound in ("eq", "approx", "range") else f"{body} apart"
            elif q.per_label:
                body = f"{body}/{q.per_label}"
    if with_bound and q.bound in _BOUND_WORDS:
        body = f"{_BOUND_WORDS[q.bound]} {body}"
    return body


def _message(status: str, claim: Quantity, source: Quantity | None) -> str:
    if source is None:
        return f"statement {describe(claim, True)}: not stated in the source for the same thing"
    show_bounds = _bound_class(claim.bound) != _bound_class(source.bound)
    quals = [_QUALIFIER_WORDS[q] for q in sorted(source.qualifiers) if q in _QUALIFIER_WORDS]
    tail = (" " + ", ".join(quals)) if quals else ""
    return f"statement {describe(claim, show_bounds)}; source {describe(source, show_bounds)}{tail}"


def _bound_class(b: str) -> str:
    return "upper" if b in _UPPER else "lower" if b in _LOWER else b


def _iu_per_mg(evidence: Sequence[tuple[str, list[Quantity]]], claim: Quantity) -> float | None:
    """The IU per mg the evidence itself states ("10 micrograms (400 IU)") for the claim's thing."""
    for text, qs in evidence:
        for a, b in zip(qs, qs[1:]):
            if "(" not in text[a.end:b.start] or len(text[a.end:b.start].strip()) > 2:
                continue
            pair = {a.unit: a, b.unit: b}
            if "mg" in pair and "iu" in pair and pair["mg"].low > 0:
                if not claim.subject or claim.subject & (a.subject | _stems(_normalise(text))):
                    return pair["iu"].low / pair["mg"].low
    return None


@lru_cache(maxsize=8192)
def _sentence_stems(sentence: str) -> frozenset[str]:
    return _stems(_normalise(sentence))


def compare_quantities(statement: str, evidence_sentences: Sequence[str]) -> list[QuantityFinding]:
    """One finding per quantity of the statement: matched, contradicted or missing.

    A source quantity is a candidate for a statement quantity when it is of the same kind
    (unit dimension and denominator; a frequency and an interval convert), none of their
    qualifiers conflict (with vs without a prescription, child vs adult, starting vs
    maximum, ...) and the statement's subject overlaps the source sentence or the two before
    it (a source clause that names nothing, "do not take more than 4 g a day", is taken to be
    about the page's own subject). Candidates sharing more qualifiers come first; in the first tier that decides, a
    candidate stating the same value means matched, else a different value means
    contradicted. A candidate that is only consistent ("2 g" against "no more than 4 g")
    decides nothing.
    """
    claims = extract_quantities(statement)
    if not claims:
        return []
    evidence = [(s, extract_quantities(s)) for s in evidence_sentences]
    sentence_stems = [_sentence_stems(s) for s, _ in evidence]
    findings = []
    for claim in claims:
        iu_ratio = _iu_per_mg(evidence, claim) if claim.unit in ("iu", "mg") else None
        scored: list[tuple[tuple[int, int], int, str, Quantity, str]] = []
        for i, (text, qs) in enumerate(evidence):
            nearby = sentence_stems[i].union(*sentence_stems[max(0, i - 2):i])
            for q in qs:
                s = _convert(q, claim, iu_ratio)
                if s is None or _conflict(claim.qualifiers, s.qualifiers):
                    continue
                # a clause that names nothing is about the page's own subject
                if claim.subject and s.subject and not claim.subject & (s.subject | nearby):
                    continue
                # the other arm's figure counts only for a statement that names that arm
                if "comparator" in s.qualifiers - claim.qualifiers and \
                        not claim.subject & (s.local - _COMPARATOR_WORDS):
                    continue
                common = claim.qualifiers & s.qualifiers
                shared = (len(common & _SUBGROUPS), len(common))
                overlap = 2 * len(claim.subject & s.subject) + len(claim.subject & sentence_stems[i])
                scored.append((shared, overlap, _relation(claim, s), s, text))
        status, best, where = MISSING, None, ""
        for tier in sorted({c[0] for c in scored}, reverse=True):
            in_tier = sorted((c for c in scored if c[0] == tier), key=lambda c: -c[1])
            hit = next((c for c in in_tier if c[2] == "match"), None)
            against = next((c for c in in_tier if c[2] == "contradict"), None)
            # a match in a clause about another thing ("ulipristal 30 mg") yields to a
            # contradiction in a clause that names more of the statement's own subject
            if hit and against and _names_other(claim, hit[3]) and \
                    len(claim.subject & against[3].subject) > 2 * len(claim.subject & hit[3].subject):
                hit = against
            hit = hit or against
            if hit:
                status = MATCHED if hit[2] == "match" else CONTRADICTED
                best, where = hit[3], hit[4]
                break
        if status == MISSING and claim.unit == "count":
            # a head count ("19,114 healthy older adults") is the same figure whatever the page calls
            # the people ("19,114 persons"): the exact number anywhere on the page is the match
            same = next(((q, text) for text, qs in evidence for q in qs
                         if q.unit == "count" and not q.is_pair and _equal(claim.low, q.low, claim, q)
                         and _equal(claim.high, q.high, claim, q)), None)
            if same is not None:
                status, best, where = MATCHED, same[0], same[1]
        findings.append(QuantityFinding(claim, status, best, where, _message(status, claim, best)))
    return findings
