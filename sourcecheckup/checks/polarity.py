"""Instructions compared by polarity: "Avoid X" agrees with "Do not take X", "You can take X" does not.

`read_instruction` reads one sentence: whether it tells the reader to do something (+1), not to
(-1) or neither (0), what is done (content-word stems), the words that set the polarity, and the
attributes that qualify it (time of day, food, route, manner, "unless your doctor ...").
`compare_polarity` says whether the evidence sentence about the same action agrees or contradicts.
Descriptive sentences ("Lisinopril lowers blood pressure") are not instructions: no finding. Stdlib only.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Sequence

from .instruction_wording import limit_kind, plain_form
from .stems import _STOP, core, stem, stems_of


@dataclass(frozen=True)
class Instruction:
    polarity: int                  # +1 do / may / can / safe / recommended, -1 do not / avoid / ..., 0 none
    action: frozenset[str]         # content-word stems of what is done ("tak", "potassium", "supplement")
    cue: str                       # the words that set the polarity, as written ("Do not", "Avoid")
    attributes: frozenset[str]     # "time:morning", "food:empty", "route:oral", "manner:sudden",
                                   # "unless:doctor", "if:doctor", "condition:none" (freely, no precautions)
    attribute_text: tuple[tuple[str, str], ...] = ()   # (attribute, its words as written)
    condition: frozenset[str] = frozenset()  # stems of an "if / when / while ..." clause that limits it
    alternative: frozenset[str] = frozenset()  # stems of B in "A rather than / instead of B"
    alternative_text: str = ""     # B as written
    strong: bool = False           # should / must / recommended / preferred / imperative (not can / may / safe)
    unqualified: bool = False      # "safe to", "freely", "never", "always": a claim that admits no exception
    limit: str = ""                # "ceiling" / "excess" when it bounds an amount ("do not take more than 4g")


@dataclass(frozen=True)
class CheckFinding:
    status: str                    # "agrees" | "contradicted" | "unbacked" (overclaims only)
    sentence: str                  # the evidence sentence it rests on ("" when none)
    message: str                   # one plain sentence naming both sides, quoting the source's words


NO_INSTRUCTION = Instruction(0, frozenset(), "", frozenset())


# ---------------------------------------------------------------------------------------
# the cues that set polarity (precompiled; every pattern's group "cue" is the words as written)

_ACTION = (r"(?:take|takes|taken|taking|use|used|using|have|drink|drunk|eat|eaten|give|given|"
           r"receive|received|get|start|started|stop|stopped|continue|continued|combine|combined|mix|"
           r"mixed|apply|applied|breast-?feed|breast-?fed|administer(?:ed)?|prescribe(?:d)?|"
           r"swallow(?:ed)?|chew(?:ed)?|crush(?:ed)?|inject(?:ed)?|inhale(?:d)?|resume(?:d)?|"
           r"restart(?:ed)?|split|halve(?:d)?|drive|exercise|try|tried|switch(?:ed)?|skip(?:ped)?|"
           r"repeat(?:ed)?|buy|bought|offer(?:ed)?|stay|go)")     # not "increase": "it can increase the effect"
_DOCTOR = (r"(?:doctor|gp|pharmacist|nurse|prescriber|clinician|specialist|midwife|dentist|physician|"
           r"health\s*care\s+(?:professional|provider|team)|healthcare\s+(?:professional|provider|team)|"
           r"(?:\w+\s+)?clinic|care\s+team)")

# "you do not need to", "no need to": optional, neither do nor do not
_OPTIONAL = re.compile(
    r"(?P<cue>\b(?:do\s+not|don't|does\s+not|doesn't)\s+(?:need|have)\s+to\b|\bno\s+need\s+to\b|"
    r"\bneed\s+not\b|\bneedn't\b|\bnot\s+necessary\s+to\b|\bunnecessary\s+to\b)", re.I)

_NEGATIVE = [  # (pattern, strong)
    (re.compile(r"(?:^|[,;:(\u2013\u2014-]|\b(?:please|and|so|also|then|but|you|just|simply|therefore|or)\b)"
                r"\s*(?P<cue>do\s+not|don'?t|never)\b", re.I), True),
    (re.compile(r"(?P<cue>\b(?:should|must|shall|ought\s+to)\s+(?:not|never|no\s+longer)\b|"
                r"\bshouldn't\b|\bmustn't\b|\bshan't\b)", re.I), True),
    (re.compile(r"(?P<cue>\b(?:can\s*not|cannot|can't|may\s+not|might\s+not)\s+(?:be\s+)?(?:safely\s+)?"
                + _ACTION + r"\b|\b(?:may|might)\s+not\s+be\s+(?:suitable|safe|appropriate|right)\b)", re.I), False),
    (re.compile(r"(?P<cue>\bavoid(?:s|ed|ing)?\b|\brefrain(?:s|ed|ing)?\s+from\b|\bsteer\s+clear\s+of\b|"
                r"\bkeep\s+away\s+from\b)", re.I), True),
    (re.compile(r"(?P<cue>\bcontra-?indicat(?:ed|ion|ions)\b)", re.I), True),
    (re.compile(r"(?P<cue>\bnot\s+(?:be\s+)?(?:\w+ly\s+)?(?:recommended|advised|advisable|suitable|appropriate|"
                r"indicated|licensed|approved|allowed|permitted)\b|"
                r"\b(?:recommend(?:s|ed)?|advise(?:s|d)?|warn(?:s|ed)?|caution(?:s|ed)?)\s+against\b|"
                r"\b(?:do|does|did)\s+not\s+recommend\b|\b(?:don't|doesn't)\s+recommend\b|"
                r"\binadvisable\b|\bunsuitable\b|\binappropriate\b|\bdiscouraged\b|\bprohibited\b|"
                r"\bforbidden\b|\b(?:isn't|aren't)\s+(?:recommended|suitable|advised)\b)", re.I), True),
    # "is not usually given to children under 12": what is not done for a group (a population negation)
    (re.compile(r"(?P<cue>\b(?:is|are|be)\s+not\s+(?:usually\s+|normally\s+|routinely\s+|generally\s+|often\s+)?"
                r"(?:given|used|prescribed|offered|taken)\b|\b(?:isn't|aren't)\s+(?:usually\s+|normally\s+|routinely\s+)?"
                r"(?:given|used|prescribed|offered|taken)\b)", re.I), True),
    (re.compile(r"(?P<cue>\bnot\s+(?:meant\s+|intended\s+|designed\s+|licensed\s+|approved\s+|suitable\s+)?for\b|"
                r"\b(?:isn't|aren't)\s+for\b)", re.I), True),
    (re.compile(r"(?P<cue>\bunsafe\b|\bnot\s+safe\b|\b(?:isn't|aren't)\s+safe\b|\bdangerous\s+to\b|"
                r"\bnot\s+to\s+be\s+" + _ACTION + r"\b)", re.I), True),
]
# "to avoid stomach upset" is a purpose, not an instruction, unless someone is told to avoid
_PURPOSE_BEFORE = re.compile(r"\b(?:to|help(?:s|ed|ing)?|helps?\s+to|order\s+to|as\s+to)\s*$", re.I)
_TOLD_TO_BEFORE = re.compile(
    r"\b(?:need|needs|important|best|advised|told|try|tried|have|has|had|better|wise|essential|asked|"
    r"recommended|want|is|are|aim|should|must|sensible|safer)\s+to\s*$", re.I)

_POSITIVE = [  # (pattern, strong)
    (re.compile(r"(?P<cue>\b(?:can|could|may)\s+(?:safely\s+|still\s+|also\s+|usually\s+|now\s+|then\s+|"
                r"generally\s+)?(?:be\s+)?(?:safely\s+)?" + _ACTION + r"\b)", re.I), False),
    (re.compile(r"(?P<cue>\b(?:should|must|ought\s+to|needs?\s+to|has\s+to|have\s+to)"
                r"(?!\s+(?:not|never|no)\b)(?:\s+(?:always|also|only|usually|still|then|now|first))?"
                r"\s+(?:be\s+)?[a-z]+)", re.I), True),
    (re.compile(r"(?P<cue>\b(?:is|are|it's|be)\s+(?:generally\s+|usually\s+|perfectly\s+|completely\s+|"
                r"totally\s+|quite\s+|very\s+|always\s+)?(?:safe|fine|ok|okay|all\s+right|acceptable)(?:\s+to)?\b|"
                r"\b(?:safe|fine|okay|ok)\s+to\b|\ballowed\s+to\b|\b(?:is|are)\s+allowed\b|\bpermitted\b|"
                r"\bfree\s+to\b|\bfreely\b)", re.I), False),
    (re.compile(r"(?P<cue>\b(?:is|are|be|been|was|were|remains?)\s+(?:\w+ly\s+)?(?:recommended|advised|"
                r"preferred|indicated|encouraged)\b|\brecommends?\b|\badvises?\b|"
                r"\b(?:is|are)\s+best\s+(?:taken|given|used|applied)\b|"
                r"\b(?:the\s+)?(?:preferred|usual)\s+(?:\w+\s+)?(?:choice|option|treatment|painkiller|medicine|drug|"
                r"vaccine|method|antibiotic)\b|\bfirst[- ](?:line|choice)\b|\btreatment\s+of\s+choice\b|"
                r"\bbest\s+(?:choice|option|protection)\b|\bshould\s+be\s+offered\b)", re.I), True),
]
_IMPERATIVE = re.compile(
    r"^(?:(?:please|always|only|also|then|first|now|so|just)\s+)?(?P<cue>take|use|give|prescribe|"
    r"discontinue|stop|apply|drink|eat|continue|start|swallow|keep|store|chew|crush|inject|inhale|wash|"
    r"check|monitor|measure|obtain|reassess|re-evaluate|restart|resume|withhold|hold|reduce|increase|"
    r"limit|get|have|see|call|contact|talk|speak|ask|tell|seek|wait|allow|let|try|encourage|recommend|"
    r"offer|consider|assess|switch|change|space|separate|leave|finish|complete|shake|rinse|wear|follow|"
    r"read|remember|make\s+sure|ensure|administer|dilute|mix|split|cut|vaccinate|prefer)\b"
    r"(?!\s+(?:of|in|on|is|are|was|were)\b)", re.I)
_JOINED = re.compile(r"\b(?:and|or|so|then|also|but)\s*$", re.I)
_RELATIVE = re.compile(r"\b(?:who|which|that|whose|whom)\b[^,;:()]*$", re.I)
_ADDRESSED = re.compile(r"\b(?:you|your|should|must|please)\b", re.I)


def _imperative_join_ok(main: str, m: re.Match) -> bool:
    """ "and never fail" is a claim unless what it joins is an instruction ("Take it and never crush it")."""
    before = main[: m.start("cue")]
    if _RELATIVE.search(before):                 # "adults who are 55 or over and do not have diabetes"
        return False
    if not _JOINED.search(before):
        return True
    lead = _LEADING.match(before)
    return bool(_IMPERATIVE.match(before[lead.end() if lead else 0:]) or _ADDRESSED.search(before))


_ALWAYS = re.compile(r"\balways\b", re.I)
_MODAL_VERB = re.compile(r"^(?:can|could|may|should|must|ought\s+to|needs?\s+to|has\s+to|have\s+to)\b.*\b[a-z]+$", re.I)
_ACTION_END = re.compile(r"\b" + _ACTION + r"$", re.I)
_LEADING = re.compile(r"^[\s,;:.()\-\u2013\u2014\"']+")
_UNQUALIFIED = re.compile(r"\b(?:safe|fine|ok|okay|freely|never|always|all\s+right)\b", re.I)
_HEDGED_CUE = re.compile(r"\b(?:generally|usually|mostly|often|normally)\b", re.I)

# ---------------------------------------------------------------------------------------
# attributes: (attribute, pattern); earlier patterns win where they overlap

_ATTRIBUTES = [(a, re.compile(p, re.I)) for a, p in [
    ("food:any", r"\bwith\s+or\s+without\s+(?:food|a\s+meal|meals)\b"),
    ("time:any", r"\b(?:at\s+)?any\s+time\s+of\s+(?:the\s+)?day\b"),
    ("unless:doctor", r"\bunless\s+(?:\w+\s+){0,6}?(?:" + _DOCTOR
     + r"|prescribed|directed|advised|told|instructed)\b[^,;.]*"),
    ("without:doctor", r"\bwithout\s+(?:first\s+)?(?:talking|speaking|checking|consulting|asking)\s+(?:to\s+|with\s+)?"
                      r"(?:your|a)\s+(?:\w+\s+){0,2}?" + _DOCTOR + r"[^,;.]*"),
    ("if:doctor", r"\b(?:only\s+)?(?:if|when)\s+(?:your|a|the)\s+(?:\w+\s+){0,2}?" + _DOCTOR +
                  r"\s+(?:says|tells|advises|recommends|agrees|prescribes|approves|has\s+\w+)[^,;.]*"),
    ("if:doctor", r"\b(?:only\s+)?(?:if|when|as)\s+(?:prescribed|directed|advised)(?:\s+by\s+(?:a|your)\s+\w+)?"),
    ("if:doctor", r"\bon\s+(?:the\s+)?(?:medical\s+)?advice\s+of\s+(?:a|your)\s+\w+"
                  r"|\bunder\s+(?:medical|close)\s+supervision\b"),
    ("if:doctor", r"\b(?:talk|speak|check)\s+(?:to|with)\s+(?:your|a)\s+(?:\w+\s+)?" + _DOCTOR +
                  r"(?:\s+or\s+(?:\w+\s+){0,2}?" + _DOCTOR + r")?\s+(?:first\b|before\b[^,;.]*)"),
    ("condition:none", r"\bfreely\b|\bwithout\s+(?:any\s+)?(?:restrictions?|precautions?|limits?)\b|"
                       r"\bat\s+any\s+time\b|\bas\s+(?:much|often)\s+as\s+you\s+(?:like|want)\b|"
                       r"\bneeds?\s+no\s+precautions?\b|\bno\s+precautions?\b"),
    ("food:empty", r"\bon\s+an\s+empty\s+stomach\b|\bempty\s+stomach\b|\bwithout\s+food\b|"
                   r"\b(?:\d+|an?|one|two|half\s+an?)\s+(?:minutes?|hours?)\s+before\s+(?:food|eating|a\s+meal|meals|breakfast)\b|"
                   r"\bbefore\s+(?:food|meals?|eating|breakfast)\b"),
    ("food:with", r"\b(?:with|after|during)\s+(?:a\s+|your\s+|some\s+)?(?:food|meal|meals|breakfast|lunch|dinner|"
                  r"supper|milk|snack|eating)\b|\bon\s+a\s+full\s+stomach\b|\bwith\s+something\s+to\s+eat\b"),
    ("time:morning", r"\b(?:in\s+the\s+|each\s+|every\s+)?mornings?\b|\bbreakfast\b|\bon\s+waking\b"
                     r"|\bwhen\s+you\s+wake(?:\s+up)?\b"),
    ("time:evening", r"\b(?:evening\s+meal|dinner|supper)\b|\b(?:in\s+the\s+|each\s+|every\s+)?evenings?\b"),
    ("time:night", r"\b(?:at\s+|each\s+|every\s+)?night(?:ly|time)?\b|\b(?:at\s+)?bedtime\b"
                   r"|\bbefore\s+(?:you\s+go\s+to\s+)?(?:bed|sleep)\b"),
    # which day, relative to another medicine ("on the same day as methotrexate" / "on a different day")
    ("day:same", r"\bon\s+the\s+same\s+days?\s+as\b|\bat\s+the\s+same\s+time\s+as\b"),
    ("day:different", r"\bon\s+(?:a\s+)?(?:different|another|separate|other)\s+days?\b|\bnot\s+on\s+the\s+same\s+day\b"),
    # when something ends relative to another ending: at once, or a period after it
    ("end:same", r"\b(?:on\s+the\s+(?:same\s+)?day|as\s+soon\s+as|the\s+moment|at\s+the\s+same\s+time)\s+"
                 r"(?:[\w-]+\s+){0,5}?(?:ends?|stops?|finish(?:es)?|(?:is|are)\s+(?:stopped|finished|over|complete|"
                 r"back\s+to\s+normal)|returns?\s+to\s+normal)\b"),
    ("end:after", r"\b(?:until|for)\s+(?:at\s+least\s+)?(?:[\w-]+\s+){1,3}?after\s+(?:[\w-]+\s+){0,5}?"
                  r"(?:stopping|finishing|completing|ends?|the\s+end|stops?|finish(?:es)?|returns?\s+to\s+normal|"
                  r"(?:is|are)\s+back\s+to\s+normal)\b"),
    ("route:oral", r"\bby\s+mouth\b|\borally\b|\bswallowed\s+whole\b"),
    ("route:injection", r"\bby\s+injection\b|\bas\s+an\s+injection\b|\binjected\b|\bintramuscular(?:ly)?\b|"
                        r"\bintravenous(?:ly)?\b|\bsubcutaneous(?:ly)?\b"),
    ("route:topical", r"\btopically\b|\b(?:applied\s+)?(?:to|on)\s+the\s+skin\b"),
    ("route:nasal", r"\bintranasal(?:ly)?\b|\binto\s+the\s+nose\b|\bup\s+the\s+nose\b"),
    ("route:inhaled", r"\binhaled\b|\b(?:by|through)\s+(?:an\s+)?inhaler\b"),
    ("route:rectal", r"\brectally\b|\bas\s+a\s+suppository\b"),
    ("manner:sudden", r"\bsudden(?:ly)?\b|\babrupt(?:ly)?\b|\ball\s+at\s+once\b|\bcold\s+turkey\b"),
    ("manner:gradual", r"\bgradual(?:ly)?\b|\bslowly\b|\btaper(?:ed|ing)?\b|\bstep\s+by\s+step\b|\bbit\s+by\s+bit\b"),
]]
# words one of which must be in a sentence before a pattern is worth running (a cheap `in` test
# first keeps read_instruction far under a millisecond on long abstract sentences)
_DOCTOR_WORDS = ("doctor", "gp", "pharmacist", "nurse", "prescriber", "clinician", "specialist", "midwife", "dentist",
                 "physician", "health", "clinic", "care team")
_ATTRIBUTE_TRIGGERS = [
    ("without",), ("any time",), ("unless",), ("without",), _DOCTOR_WORDS,
    ("prescribed", "directed", "advised"), ("advice", "supervision"), _DOCTOR_WORDS,
    ("freely", "without", "any time", "as much", "as often", "precaution"),
    ("empty", "without food", "before"),
    ("food", "meal", "breakfast", "lunch", "dinner", "supper", "milk", "snack", "eating", "full stomach", "to eat"),
    ("morning", "breakfast", "waking", "wake"), ("evening", "dinner", "supper"), ("night", "bed", "sleep"),
    ("same day", "same time"), ("different", "another", "separate", "other", "same day"),
    ("day", "soon", "moment", "same time"), ("after",),
    ("mouth", "orally", "swallowed"), ("inject", "intramuscular", "intravenous", "subcutaneous"),
    ("topical", "skin"), ("nasal", "nose"), ("inhale",), ("rectal", "suppositor"),
    ("sudden", "abrupt", "at once", "cold turkey"), ("gradual", "slowly", "taper", "step by step", "bit by bit"),
]
assert len(_ATTRIBUTE_TRIGGERS) == len(_ATTRIBUTES)
_NOT = ("not", "n't", "never", "no longer")
_NEGATIVE_TRIGGERS = [("do not", "don't", "dont", "never"), _NOT, _NOT, ("avoid", "refrain", "steer clear", "keep away"),
                      ("contra",), _NOT + ("against", "inadvisable", "unsuitable", "inappropriate", "discouraged",
                                           "prohibited", "forbidden"), ("not", "n't"), _NOT,
                      ("unsafe", "safe", "dangerous", "not to be")]
_POSITIVE_TRIGGERS = [("can", "could", "may"), ("should", "must", "ought", "need", "has to", "have to"),
                      ("safe", "fine", "ok", "all right", "acceptable", "allowed", "permitted", "free"),
                      ("recommend", "advise", "preferred", "indicated", "encouraged", "first", "choice", "best", "usual",
                       "offered")]
assert len(_NEGATIVE_TRIGGERS) == len(_NEGATIVE) and len(_POSITIVE_TRIGGERS) == len(_POSITIVE)


def _present(low: str, triggers: tuple[str, ...]) -> bool:
    return any(t in low for t in triggers)


_CONDITION = re.compile(r"\b(?:if|when|whenever|while|whilst|unless)\b(?P<body>[^,;:]*)", re.I)
_ALTERNATIVE = re.compile(r"\b(?:rather\s+than|instead\s+of|in\s+preference\s+to|in\s+place\s+of)\b(?P<body>[^,;:.]*)", re.I)
_CLAUSE_SPLIT = re.compile(
    r"\s*\n\s*|\s*;\s*|\s*:\s+|,?\s+\bbut\b\s+|,?\s+\bwhereas\b\s+|,\s+\bhowever\b,?\s+|\s+\bhowever\b,\s+|"
    r",\s+and\s+(?=(?:do\s+not|don't|never|avoid|you|it|they|take|use|speak|talk|stop|restart|wait|leave|keep|"
    r"allow|check|seek|get|call|contact|ask|tell|see|finish|complete)\b)", re.I)


def _blank(chars: list[str], start: int, end: int) -> None:
    for i in range(start, end):
        chars[i] = " "


def _overlaps(span: tuple[int, int], spans: list[tuple[int, int]]) -> bool:
    return any(span[0] < e and s < span[1] for s, e in spans)


_REASON = re.compile(r",?\s+(?:because|since|so that|so (?:it|they|you)|in order that)\b.*$", re.I | re.S)
_REASON_WORDS = ("because", "since", "so that", "so it", "so they", "so you", "in order")
# a meal names a time of day as well as food: "with breakfast" is in the morning, "with the evening
# meal" is with food
_MORNING_MEAL = re.compile(r"\bbreakfast\b", re.I)
_EVENING_MEAL = re.compile(r"\b(?:evening\s+meal|dinner|supper)\b", re.I)
_BEFORE_MEAL = re.compile(r"\bbefore\s+(?:your\s+|the\s+|a\s+|an\s+)?$", re.I)
_WITH_MEAL = re.compile(r"\b(?:with|after|during)\s+(?:your\s+|the\s+|a\s+|an\s+)?$", re.I)
# "Furosemide is usually taken in the morning": a leaflet's passive that says when or how; an
# instruction only when it carries such an attribute ("Furosemide is taken by many people" is not)
_PASSIVE = re.compile(r"(?P<cue>\b(?:is|are)\s+(?:\w+ly\s+)?(?:taken|given|used|prescribed|applied|injected|"
                      r"inhaled|stopped|continued|started|swallowed)\b)", re.I)
_PASSIVE_KINDS = ("time", "food", "day", "end")
# "No more than 6 mg should be taken", "You should take no more than 6 mg": the same limit as "Do not
# take more than 6 mg" (how much is the quantity check's), so the same polarity
_NO_MORE = re.compile(r"(?P<cue>\b(?:no|not)\s+more\s+than\b)", re.I)


@lru_cache(maxsize=8192)
def read_instruction(sentence: str) -> Instruction:
    """What one sentence tells the reader to do or not to do; polarity 0 when it is descriptive."""
    text = plain_form(" ".join((sentence or "").replace("\u2019", "'").replace("\u2018", "'").split()))
    if not text:
        return NO_INSTRUCTION
    chars = list(text)
    taken: list[tuple[int, int]] = []            # spans already read as an attribute
    attrs: list[tuple[str, str]] = []
    low = text.lower()
    # words in a reason ("..., because it is absorbed less well on an empty stomach") set no attribute
    reason = _REASON.search(text) if _present(low, _REASON_WORDS) else None
    limit = reason.start() if reason else len(text)
    implied: list[tuple[str, str]] = []          # what a meal says of the time of day or of food
    for (attribute, pattern), triggers in zip(_ATTRIBUTES, _ATTRIBUTE_TRIGGERS):
        if not _present(low, triggers):
            continue
        for m in pattern.finditer(text):
            if _overlaps(m.span(), taken) or m.start() >= limit:
                continue
            taken.append(m.span())
            words = m.group(0).strip()
            attrs.append((attribute, words))
            if attribute.startswith("food:") and _MORNING_MEAL.search(words):
                implied.append(("time:morning", words))
            elif attribute == "time:evening" and _EVENING_MEAL.search(words):
                before = text[max(0, m.start() - 12): m.start()]
                if _BEFORE_MEAL.search(before):
                    implied.append(("food:empty", words))
                elif _WITH_MEAL.search(before):
                    implied.append(("food:with", words))
    kinds = {a.partition(":")[0] for a, _ in attrs}
    attrs += [(a, t) for a, t in implied if a.partition(":")[0] not in kinds]   # what is said outright wins
    for s, e in taken:
        _blank(chars, s, e)
    alternative, alternative_text = frozenset[str](), ""
    rather = _ALTERNATIVE.search("".join(chars)) if _present(low, ("rather", "instead", "preference", "place")) else None
    if rather:
        alternative_text = rather.group("body").strip()
        alternative = stems_of(alternative_text)
        _blank(chars, rather.start(), rather.end())
    # a reason given for the instruction ("..., because they stop it being absorbed") is not part of it
    reason = _REASON.search("".join(chars)) if _present(low, _REASON_WORDS) else None
    if reason:
        _blank(chars, reason.start(), len(chars))
    masked = "".join(chars)
    condition: set[str] = set()
    for m in (_CONDITION.finditer(masked) if _present(low, ("if", "when", "while", "unless")) else ()):
        condition |= stems_of(m.group("body"))
        _blank(chars, m.start(), m.end())
    main = "".join(chars)                        # the clause with attributes, conditions and B blanked

    cue_span, cue, polarity, strong = None, "", 0, False
    optional = _OPTIONAL.search(main) if _present(low, ("need", "necessary", "have to")) else None
    if optional:
        cue_span, cue = optional.span("cue"), optional.group("cue")
    else:
        negatives: list[tuple[int, int, bool]] = []
        for (pattern, is_strong), triggers in zip(_NEGATIVE, _NEGATIVE_TRIGGERS):
            if not _present(low, triggers):
                continue
            for m in pattern.finditer(main):
                if pattern is _NEGATIVE[0][0] and not _imperative_join_ok(main, m):
                    continue
                if m.group("cue").lower().startswith("avoid") or m.group("cue").lower().startswith("refrain"):
                    before = main[: m.start("cue")]
                    if _PURPOSE_BEFORE.search(before) and not _TOLD_TO_BEFORE.search(before):
                        continue
                negatives.append((m.start("cue"), m.end("cue"), is_strong))
        if negatives:
            s, e, strong = min(negatives)
            cue_span, cue, polarity = (s, e), text[s:e], -1
        else:
            lead = _LEADING.match(main)
            offset = lead.end() if lead else 0
            imperative = _IMPERATIVE.match(main[offset:])
            positives: list[tuple[int, int, bool]] = []
            if imperative:
                positives.append((offset + imperative.start("cue"), offset + imperative.end("cue"), True))
            for (pattern, is_strong), triggers in zip(_POSITIVE, _POSITIVE_TRIGGERS):
                if not _present(low, triggers):
                    continue
                for m in pattern.finditer(main):
                    positives.append((m.start("cue"), m.end("cue"), is_strong))
            if positives:
                s, e, strong = min(positives)
                cue_span, cue, polarity = (s, e), text[s:e], 1
            elif any(a.partition(":")[0] in _PASSIVE_KINDS for a, _ in attrs):
                passive = _PASSIVE.search(main)
                if passive:
                    cue_span, cue, polarity, strong = passive.span("cue"), passive.group("cue"), 1, False
    if polarity > 0 and _present(low, ("more than",)):
        bound = _NO_MORE.search(main)
        if bound and cue_span is not None and bound.start() <= cue_span[1] + 1:   # polarity set it
            cue_span, cue, polarity, strong = bound.span("cue"), bound.group("cue"), -1, True
    amount_limit = limit_kind(main, cue_span[0]) if polarity and cue_span is not None else ""
    # "do not ... without asking your doctor" is "unless your doctor"; "you can ... without asking" is "freely"
    attrs = [(("unless:doctor" if polarity < 0 else "condition:none") if a == "without:doctor" else a, t)
             for a, t in attrs]
    if polarity == 0:
        return Instruction(0, frozenset(), cue, frozenset(a for a, _ in attrs), tuple(attrs))
    assert cue_span is not None   # set with every polarity other than 0
    unqualified = bool(_UNQUALIFIED.search(cue) or any(a == "condition:none" for a, _ in attrs)
                       or _ALWAYS.search(main[: cue_span[0]]))
    if unqualified and _HEDGED_CUE.search(cue):
        unqualified = False
    _blank(chars, *cue_span)
    # the verb of a modal or imperative cue ("can take", "should be stopped", "Take") is part of what
    # is done; the verb of "is recommended" or "advises" is not
    action = stems_of("".join(chars))
    verb = _MODAL_VERB.search(cue) or _ACTION_END.search(cue) or (_IMPERATIVE.match(cue) if polarity > 0 else None)
    if verb:
        word = verb.group(0).split()[-1].lower()
        if word not in _STOP:
            action = action | {stem(word)}
    if any(a.startswith("manner:") for a, _ in attrs):
        action = action | {"manner"}             # "suddenly" and "gradually" are about the same thing: how
    return Instruction(polarity, action, cue.strip(), frozenset(a for a, _ in attrs), tuple(attrs),
                       frozenset(condition), alternative, alternative_text, strong, unqualified, amount_limit)


# ---------------------------------------------------------------------------------------
# comparison

_OVERLAP = 0.5          # share of the statement's subject stems an evidence clause must name
_CONFLICTS = {
    "time": {("morning", "evening"), ("morning", "night")},
    "food": {("with", "empty")},
    "day": {("same", "different")},
    "end": {("same", "after")},
    "manner": {("sudden", "gradual")},
}


def _conflicts(a: frozenset[str], b: frozenset[str]) -> list[tuple[str, str]]:
    out = []
    for x in a:
        kx, _, vx = x.partition(":")
        for y in b:
            ky, _, vy = y.partition(":")
            if kx != ky or vx == vy or "any" in (vx, vy):
                continue
            if kx == "route" or (vx, vy) in _CONFLICTS.get(kx, ()) or (vy, vx) in _CONFLICTS.get(kx, ()):
                out.append((x, y))
    return out


def _any_conflicts(st: Instruction, ev: Instruction) -> list[tuple[str, str]]:
    """ "With or without food" / "at any time of day" against a side that requires one ("must be taken
    on an empty stomach"): the one says it does not matter, the other that it does."""
    out = []
    for a, b, strict in ((st.attributes, ev.attributes, st.strong), (ev.attributes, st.attributes, ev.strong)):
        if not strict:
            continue
        for x in a:
            kind, _, value = x.partition(":")
            if kind in ("food", "time") and value != "any" and f"{kind}:any" in b:
                out.append((x, f"{kind}:any") if a is st.attributes else (f"{kind}:any", x))
    return out


def limit_polarity(instr: Instruction) -> int:
    """A limit's direction: -1 "do not exceed" ("up to 8", "the maximum is 8", "do not take more than 8"),
    +1 "you can exceed" ("you can take more than 8")."""
    return -1 if instr.limit == "ceiling" or instr.polarity < 0 else 1


def _text_of(instr: Instruction, attribute: str) -> str:
    return next((t for a, t in instr.attribute_text if a == attribute), attribute.partition(":")[2])


def _says(instr: Instruction, polarity: int | None = None) -> str:
    p = instr.polarity if polarity is None else polarity
    if instr.limit:
        return "not to exceed it" if p < 0 else "you can exceed it"
    if p < 0:
        return "not to"
    return "to" if instr.strong else "you can"


def _quote(sentence: str, limit: int = 240) -> str:
    s = " ".join(sentence.split())
    return s if len(s) <= limit else s[: limit - 1].rstrip() + "\u2026"


def clauses(sentence: str) -> list[str]:
    """A sentence cut where its instruction may change ("...; do not ...", "... but avoid ...")."""
    low = sentence.lower()
    if not _present(low, ("\n", ";", ":", "but", "whereas", "however", ", and")):   # a heading ends at its line
        return [sentence]
    parts = [p for p in _CLAUSE_SPLIT.split(sentence) if p and p.strip()]
    return parts or [sentence]


def _stop_is_verb(instr: Instruction, text: str) -> bool:
    """"stop" is the verb: in the cue ("should stop") or just after it ("Do not stop taking", "not be stopped")."""
    at = text.lower().find(instr.cue.lower()) if instr.cue else -1
    after = [w for w in re.findall(r"[a-z]+", text.lower()[at + len(instr.cue):])[:3]
             if w not in ("be", "been", "being", "ever", "suddenly")]
    return any(stem(w) == "stop" for w in re.findall(r"[a-z]+", instr.cue.lower())) or \
        (at >= 0 and bool(after) and stem(after[0]) == "stop")


def _candidate(st: Instruction, ev: Instruction, sentence: str, st_text: str, ev_text: str):
    """(rank, finding) for one evidence clause read against the statement, or None if off-topic."""
    if ev.limit and not st.limit:
        return None                              # a source's limit bounds an amount (the quantity check's), not the action
    if st.limit and ev.limit:                    # two limits: "never more than 8" agrees with "the maximum is 8"
        st, ev = replace(st, polarity=limit_polarity(st)), replace(ev, polarity=limit_polarity(ev))
    elif st.limit:
        if ev.polarity > 0:
            return None                          # "never more than 8 tablets" is not against "wait, then take more"
        st = replace(st, limit="")               # "can be given up to 24 weeks" against "not after 15 weeks": can / not
    s_set = core(st.action | st.condition)
    ev_main = core(ev.action)
    ev_all = core(ev.action | ev.condition)
    ev_pol, s_pol = ev.polarity, st.polarity
    if ev.alternative:
        alt = core(ev.alternative) - ev_main
        main_only = ev_main - core(ev.alternative)
        if len(s_set & alt) > len(s_set & main_only):    # the statement is about the source's B
            ev_pol = -ev_pol
            ev_main = (ev_main - main_only) | alt
            ev_all = ev_main | core(ev.condition)
    # "stop X" is "do not take X" where stop is the verb ("... as tea can stop your body absorbing it" is not):
    # compare like with like when only one side says stop
    s_stops, ev_stops = "stop" in s_set and _stop_is_verb(st, st_text), "stop" in ev_all and _stop_is_verb(ev, ev_text)
    s_set = s_set if s_stops else s_set - {"stop"}
    ev_main, ev_all = (ev_main, ev_all) if ev_stops else (ev_main - {"stop"}, ev_all - {"stop"})
    if s_stops != ev_stops:
        if s_stops:
            s_pol, s_set = -s_pol, s_set - {"stop"}
        else:
            ev_pol, ev_main, ev_all = -ev_pol, ev_main - {"stop"}, ev_all - {"stop"}
    if not s_set:
        return None
    shared = s_set & ev_all
    score = len(shared) / len(s_set)
    if score < _OVERLAP and ev.unqualified and ev_pol < 0 and not ev.condition:
        # an unconditional "never" covers every situation: the statement's own "when ..." is not
        # what the two must share
        s_act = s_set - (core(st.condition) - core(st.action))
        if s_act:
            s_set, shared = s_act, s_act & ev_all
            score = len(shared) / len(s_set)
    if score < _OVERLAP or len(shared) < min(2, len(s_set)) or not (shared & ev_main):
        return None
    ev_cond = core(ev.condition)
    # a condition that names nothing the other side names limits the clause to another situation
    ev_scoped = bool(ev_cond) and not (ev_cond & s_set)
    st_cond = core(st.condition)
    st_scoped = bool(st_cond) and not (st_cond & ev_all)
    conflicts = _conflicts(st.attributes, ev.attributes) + _any_conflicts(st, ev)
    manner = [c for c in conflicts if c[0].startswith("manner:")]
    others = [c for c in conflicts if not c[0].startswith("manner:")]
    same = s_pol == ev_pol
    if manner:                                    # "do not stop suddenly" == "stop gradually"
        same = not same
    if not same and (({"if:doctor", "unless:doctor"} <= (st.attributes | ev.attributes))
                     and ("if:doctor" in st.attributes) != ("if:doctor" in ev.attributes)):
        same = True                               # "only if your doctor says" == "not unless your doctor says"
    q = _quote(sentence)
    # ties go to the clause that shares the statement's own verb too ("cannot give you flu" over "is recommended")
    rank = (score, len(shared), len(st.action & ev.action))
    if ev_scoped:
        if not same and st.unqualified:
            return rank, CheckFinding(
                "contradicted", sentence,
                f'the source says {_says(ev, ev_pol)} in some cases ("{q}"); the statement says '
                f'{_says(st, s_pol)} without exception ("{st.cue}")')
        return None
    # a statement limited to a situation the source does not name ("when it flares, it is fine to ...")
    # is left alone, unless the source's "never" admits no situation at all
    if st_scoped and not same and not (ev.unqualified and ev_pol < 0):
        return None
    if not same:
        return rank, CheckFinding(
            "contradicted", sentence,
            f'the source says {_says(ev, ev_pol)} ("{q}"); the statement says {_says(st, s_pol)} ("{st.cue}")')
    if others:
        ev_side = ", ".join(f'"{_text_of(ev, b)}"' for _, b in others)
        st_side = ", ".join(f'"{_text_of(st, a)}"' for a, _ in others)
        return rank, CheckFinding(
            "contradicted", sentence, f'the source says {ev_side} ("{q}"); the statement says {st_side}')
    if "condition:none" in st.attributes and (ev.attributes & {"if:doctor", "unless:doctor"} or ev_cond):
        cond = next((t for a, t in ev.attribute_text if a in ("if:doctor", "unless:doctor")), "a condition")
        return rank, CheckFinding(
            "contradicted", sentence,
            f'the source attaches a condition, "{cond}" ("{q}"); the statement says '
            f'"{_text_of(st, "condition:none")}"')
    return rank, CheckFinding(
        "agrees", sentence,
        f'the source says {_says(ev, ev_pol)} as well ("{q}"); the statement says {_says(st, s_pol)} ("{st.cue}")')


def _preference(st: Instruction, ev: Instruction, sentence: str):
    """A statement that prefers A "rather than" B, read against one evidence clause."""
    a_set = core(st.action) - core(st.alternative)
    b_set = core(st.alternative) - core(st.action)
    if not a_set or not b_set:
        return None
    ev_main, ev_alt = core(ev.action), core(ev.alternative)
    q = _quote(sentence)
    alt = st.alternative_text or "the alternative"

    def cover(x: frozenset[str], y: frozenset[str]) -> float:
        return len(x & y) / len(x)

    if ev_alt:
        forward = cover(a_set, ev_main) >= _OVERLAP and cover(b_set, ev_alt) >= _OVERLAP
        backward = cover(b_set, ev_main) >= _OVERLAP and cover(a_set, ev_alt) >= _OVERLAP
        if forward or backward:
            agree = (ev.polarity == st.polarity) == forward
            rank = (1.0, len(a_set) + len(b_set))
            if agree:
                return rank, CheckFinding("agrees", sentence,
                                          f'the source prefers the same ("{q}"); the statement says '
                                          f'"{st.cue}" rather than "{alt}"')
            return rank, CheckFinding("contradicted", sentence,
                                      f'the source prefers the other way round ("{q}"); the statement '
                                      f'prefers it to "{alt}"')
        return None
    ca, cb = cover(a_set, ev_main), cover(b_set, ev_main)
    if ca >= _OVERLAP and ca > cb:               # the clause is about A, the statement's choice
        if ev.polarity != st.polarity:
            return (ca, len(a_set & ev_main)), CheckFinding(
                "contradicted", sentence,
                f'the source says not to ("{q}"); the statement prefers it rather than "{alt}"')
        if ev.strong:
            return (ca, len(a_set & ev_main)), CheckFinding(
                "agrees", sentence, f'the source says to ("{q}"); the statement prefers it rather than "{alt}"')
    elif cb >= _OVERLAP and cb > ca:             # the clause is about B, the one the statement puts aside
        if ev.polarity == st.polarity and ev.strong:
            return (cb, len(b_set & ev_main)), CheckFinding(
                "contradicted", sentence,
                f'the source says to use "{alt}" ("{q}"); the statement says rather than "{alt}"')
        if ev.polarity != st.polarity:
            return (cb, len(b_set & ev_main)), CheckFinding(
                "agrees", sentence, f'the source says not to use "{alt}" ("{q}"); the statement says rather than "{alt}"')
    return None


def compare_polarity(statement: str, evidence_sentences: Sequence[str]) -> CheckFinding | None:
    """Whether the clause about the statement's action says the same "do" or "do not" (None: no instruction, or
    no clause about it). "contradicted": opposite polarity, conflicting attributes (morning / night), a condition
    on a "freely", or for "A rather than B" A not for this use; it outranks an equally close "agrees"."""
    st = read_instruction(statement)
    if st.polarity == 0:
        return None
    wanted, found = core(st.action | st.condition), []
    for sentence in evidence_sentences:
        for clause in clauses(sentence):
            ev = read_instruction(clause)
            one = None if ev.polarity == 0 else _preference(st, ev, sentence) if st.alternative \
                else _candidate(st, ev, sentence, statement, clause)
            if one is not None:       # (key, finding, the statement's words the clause names)
                key = (one[1].status == "contradicted" if st.alternative else False, one[0],
                       one[1].status == "contradicted")
                found.append((key, one[1], wanted & core(ev.action | ev.condition)))
    best = max(found, key=lambda c: c[0], default=None)
    # an agreeing clause that lacks statement words a contradicting clause names is about another thing
    # ("should have the injected flu vaccine" against "the nasal spray vaccine is not given in pregnancy")
    against = [c for c in found if best and best[1].status == "agrees" and c[1].status == "contradicted"
               and c[2] - best[2]]
    best = max(against, key=lambda c: c[0]) if against else best
    return best[1] if best else None
