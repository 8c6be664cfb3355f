"""What a number is attached to: qualifiers in a small normalised vocabulary (with or without a
prescription, children, starting dose...), which of them conflict, and the subject stems of a clause."""
from __future__ import annotations

import re

from .units import _ONES, _TENS, _UNITS

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
    # what comes after the start: "then 1 capsule after each loose stool", "increased to", "increased by"
    ("subsequent", r"\bthen\b|\bthereafter\b|\bafter that\b|\bsubsequent(?:ly)?\b|\bafter each\b|"
                   r"\b(?:increase|raise|titrate|double)[sd]?\s+(?:[a-z]+\s+){0,3}?(?:to|by)\b"),
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
    # a time a figure held: "before 2017", "previously" against "now", "since 2017"
    ("past", r"\b(?:before|until|till|prior to|up to)\s+(?:19|20)\d\d\b|\bpreviously\b|\bformerly\b|"
             r"\bused to (?:be|have)\b|\bin the past\b|\b(?:the|an?) (?:old|older|earlier|former|previous)\s+"
             r"(?:definition|threshold|target|guideline|guidance|cut-?off|recommendation)s?\b"),
    ("current", r"\bnow\b|\bcurrently\b|\b(?:since|from)\s+(?:19|20)\d\d\b|\btoday\b|\b(?:the|an?) "
                r"(?:new|newer|current|updated|revised|latest)\s+(?:definition|threshold|target|guideline|guidance|"
                r"cut-?off|recommendation)s?\b"),
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
    ("delay", "course"), ("loading", "subsequent"), ("past", "current"),
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
    {"delay", "course"}, {"past", "current"},
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
    "past": "in the past", "current": "now", "strength": "tablet strength",
}

# ---------------------------------------------------------------------------------------
# Subject: content-word stems of the clause, without the words the checker reads itself
# ---------------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z]+")
_NOT_SUBJECT = frozenset((
    "a an and are as at be by for from has have had in is it its of on or that the this to was means mean "
    "were with which who will can could may might should must would than then there these those "
    "their they them been being also into such other some any more most over under between about "
    "after before during while when where what how do does did so if our we i you your he she his "
    "her not no never without per each every up least less fewer much many very only just around "
    "within approximately nearly almost roughly above below greater higher lower maximum minimum max "
    "take takes taken taking took use used using uses give given gives giving dose doses dosage "
    "amount amounts total recommended usual usually always often sometimes generally typical typically standard normal "
    "normally start started starting initial initially adult adults child children kid kids infant "
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
