"""The sentence classes (ASTRID): informative, or only conversation (acknowledgement, question,
disclaimer, refusal), so that conversational lines are not counted as unsupported claims."""
from __future__ import annotations

import re

from ..models import StatementCategory
from .markup import plain_text

# Patterns (data). Matched case-insensitively on statement text with markers and Markdown
# removed and curly apostrophes straightened.

_PROFESSIONAL = (
    r"(?:doctor|physician|GP|general practitioner|health ?care (?:provider|professional|team)"
    r"|medical (?:professional|provider|team)|health (?:professional|provider)|professional"
    r"|provider|pharmacist|clinician|specialist|nurse|practitioner|care team|dermatologist"
    r"|cardiologist|pa?ediatrician|obstetrician|gyn(?:a)?ecologist|endocrinologist|neurologist"
    r"|psychiatrist|psychologist|therapist|dentist|midwife|oncologist|allergist|urologist"
    r"|gastroenterologist|nephrologist|rheumatologist|ophthalmologist|optometrist"
    r"|veterinarian|vet|expert)s?"
)
# What a disclaimer says it does not replace: "professional medical advice", "your doctor".
_ADVICE = (
    r"(?:(?:a|an|the|your|professional|personali[sz]ed|expert|qualified|individual|medical|health"
    rf"|healthcare|in-person)\s+){{0,4}}(?:advice|care|consultation|diagnosis|evaluation|guidance"
    rf"|opinion|visit|{_PROFESSIONAL})\b"
)
_REFUSAL_VERBS = (
    r"(?:provide|give|offer|help|assist|answer|diagnose|recommend|prescribe|advise|comment"
    r"|share|discuss|make|tell|determine|say|replace|support|do)"
)

# Each category's patterns; the first category (in this order) whose pattern matches wins,
# unless the words left outside the matches carry medical substance (see _substantive).
CATEGORY_PATTERNS: dict[StatementCategory, tuple[str, ...]] = {
    StatementCategory.REFUSAL: (
        rf"\bI\s+(?:can't|cannot|can not|won't|will not|am not able to|am unable to|am not allowed to)"
        rf"\s+(?:\w+\s+)?{_REFUSAL_VERBS}\b[^,;]*",
        rf"\bI'm\s+(?:not able|unable|not allowed|not permitted|not qualified)\s+to\s+(?:\w+\s+)?"
        rf"{_REFUSAL_VERBS}\b[^,;]*",
        r"\bI\s+(?:must|have to|need to)\s+decline\b[^,;]*",
        r"\b(?:that|this|your question)\s+(?:is|falls)\s+(?:outside|beyond)\s+(?:my|the)\b[^,;]*",
    ),
    StatementCategory.DISCLAIMER: (
        r"\bas an?\s+(?:AI|artificial intelligence|language model|AI (?:language )?model"
        r"|AI assistant|chatbot|virtual assistant)\b",
        r"\bI(?:'m| am)\s+(?:not|only|just)\s+(?:a|an)\s+(?:\w+\s+){0,2}?"
        rf"(?:{_PROFESSIONAL}|AI|language model|chatbot)\b",
        rf"\b(?:substitute|replacement)\s+for\s+{_ADVICE}",
        rf"\bnot\s+(?:intended|meant|designed)\s+(?:as|to\s+(?:be|replace|substitute\s+for|serve\s+as))"
        rf"\s+{_ADVICE}",
        rf"\b(?:does|do|should)\s+not\s+(?:constitute|replace|substitute\s+for)\s+{_ADVICE}",
        r"\bnot\s+(?:professional\s+|personal\s+)?medical\s+advice\b",
        r"\bfor\s+(?:general\s+)?(?:informational|educational|information|education)\s+purposes"
        r"(?:\s+only)?\b",
        r"\b(?:consult(?:ing)?|talk(?:ing)?\s+(?:to|with)|speak(?:ing)?\s+(?:to|with)"
        r"|check(?:ing)?\s+(?:in\s+)?with|ask(?:ing)?|contact(?:ing)?|see(?:ing)?|visit(?:ing)?"
        r"|reach(?:ing)?\s+out\s+to|discuss(?:ing)?(?:\s+[\w'-]+){0,4}?\s+with"
        r"|follow(?:ing)?\s+up\s+with|get\s+(?:checked|evaluated|examined|seen)\s+by"
        r"|seek(?:ing)?\s+(?:the\s+)?(?:advice|guidance|help|opinion|care)\s+(?:of|from))"
        rf"(?:\s+[\w'-]+){{0,4}}?\s+{_PROFESSIONAL}\b",
        r"\b(?:seek|get|obtain|need)\s+(?:immediate\s+|emergency\s+|prompt\s+|urgent\s+|professional\s+)?"
        r"(?:medical\s+(?:attention|care|help|advice|evaluation|assessment)|emergency\s+(?:care|help|treatment)"
        r"|professional\s+(?:help|advice|care|guidance))\b",
        r"\bcall\s+(?:911|999|112|000|an ambulance|emergency services|your (?:doctor|local emergency number)"
        r"|(?:a|your local)?\s*poison control(?: center| centre)?)\b",
        r"\bgo\s+to\s+(?:the\s+|your\s+)?(?:nearest\s+)?(?:emergency\s+(?:room|department)|ER|A&E|hospital)\b",
        r"\b(?:individual|everyone's|each person's)\s+(?:\w+\s+)?(?:needs|circumstances|situations?|responses?)"
        r"\s+(?:may\s+|can\s+)?(?:vary|differ|is different|are different)\b",
        r"\bprofessional\s+medical\s+(?:advice|guidance|evaluation)\b",
    ),
    StatementCategory.ACKNOWLEDGEMENT: (
        r"^(?:that's|that is|what)?\s*(?:a|an)?\s*(?:great|good|excellent|interesting|important"
        r"|thoughtful|fantastic)\s+question\b",
        r"^(?:thanks|thank you)\b",
        r"\bI\s+hope\s+(?:this|that|the above|my answer|the information)\b",
        r"^hope\s+(?:this|that)\s+helps\b",
        r"^(?:sure|certainly|of course|absolutely|okay|ok|yes|no problem|great|alright|happy to help"
        r"|good news)\W*$",
        r"^(?:sure|certainly|of course|absolutely|okay|ok|alright)\W+(?:here|I'd|I'll|I would|I will"
        r"|I can|let me|happy|glad)\b",
        r"^here(?:'s| is| are)\b",
        r"^(?:I'd|I would)\s+be\s+(?:happy|glad|delighted)\b",
        r"^(?:I'm|I am)\s+(?:happy|glad|delighted)\s+to\b",
        r"^(?:I\s+understand|I\s+can\s+understand|I'm\s+sorry\s+to\s+hear|I am sorry to hear"
        r"|it's\s+understandable)\b",
        r"^(?:let\s+me|allow\s+me)\b",
        r"^(?:please\s+)?(?:feel\s+free|don't\s+hesitate|do\s+not\s+hesitate)\b",
        r"^if\s+you\s+have\s+(?:any\s+)?(?:other\s+|more\s+|further\s+|additional\s+)?questions\b",
        r"^(?:take\s+care|stay\s+(?:safe|healthy|well)|best\s+wishes|get\s+well\s+soon"
        r"|feel\s+better\s+soon|wishing\s+you)\b",
    ),
}

# Words that do not make a referral or refusal substantive ("if symptoms persist, see a doctor").
GENERIC_WORDS: frozenset[str] = frozenset("""
    symptom symptoms sign signs condition conditions health healthcare medical medication medications
    medicine medicines drug drugs treatment treatments therapy therapies advice guidance information
    diagnosis diagnoses personalized personalised specific individual situation situations
    circumstances needs history concern concerns concerned question questions change changes regimen
    plan plans care professional professionals doctor doctors new worsen worsens worse worsening
    persist persists persistent persisting improve improves improving improvement severe serious
    unusual side effect effects experience experiencing develop developing notice noticing start
    starting stop stopping taking take making make use using changing days day weeks week hours hour
    months month few several right best appropriate option options supplement supplements dose doses
    dosage dosages dosing proper properly accurate evaluation assessment diagnose help immediately
    promptly soon possible always important essential recommended advisable consider determine decide
    whether particularly especially underlying existing pre-existing safe safely suitable course
    action way approach personal overall well-being wellbeing feel feeling unwell better tailored
    support monitor monitoring management manage managing worry worried sure unsure doubt instructions
    act acting result results test tests testing genetic counsellor counselor counselling counseling
    label follow product products lifestyle diet exercise routine sorry unfortunately however please
    get go seek call need needs needed provide give offer answer recommend recommendation
    recommendations prescribe advise comment share discuss tell say replace qualified licensed
    trusted local primary team emergency immediate urgent prompt attention guidance decision
    decisions patient patients people person anyone someone yourself you're it's there's situation
    case cases matter regarding related current currently additional further else anything
    something able unable allowed general informational educational purposes only substitute
    replacement intended meant designed constitute reaction reactions response responses
    assistant chatbot model language ai think believe suspect someone having might
""".split())

STOPWORDS: frozenset[str] = frozenset("""
    a an the and or but nor so yet if then than that this these those there here of in on at to
    for from by with without within about above below into onto over under after before during
    until while as is are was were be been being am do does did done doing have has had having
    can could may might must shall should will would i me my mine we us our ours you your yours
    he him his she her hers it its they them their theirs what which who whom whose when where
    why how all any both each every more most other some such no not only own same too very just
    also again further once out up down off even still ever never now always often usually
    because since though although unless whether either neither per via like also etc
    i'm i've i'd i'll you've you'd you'll don't doesn't didn't can't won't isn't aren't
""".split())

_COMPILED = {category: tuple(re.compile(p, re.I) for p in patterns)
             for category, patterns in CATEGORY_PATTERNS.items()}
_WORD_RE = re.compile(r"[A-Za-z][A-Za-z0-9'-]*|\d+(?:[.,]\d+)?%?")


# A line that only frames the answer ("Short answer: yes, but with care.") ...
_FRAMING_RE = re.compile(
    r"^(?:(?:the\s+)?(?:short|quick|brief|simple|long)\s+(?:answer|version)|in\s+(?:short|brief|summary)"
    r"|summary|bottom\s+line|tl;?\s*dr|answer|overview|key\s+points?)\s*[:,\-–—]\s*", re.I)
# ... or only points to links ("See also the summary page and this fact sheet.") is not a claim.
_NAVIGATION_RE = re.compile(
    r"^(?:(?:for\s+(?:more|further|additional)\s+(?:information|info|details|reading)\s*,?\s*)?"
    r"(?:please\s+)?(?:see|read|visit|check(?:\s+out)?|refer\s+to|look\s+at|learn|find\s+out|find)"
    r"|(?:you\s+(?:can|may|might|could)\s+(?:also\s+)?(?:find|read|learn|see|visit|check))"
    r"|(?:more|further|additional)\s+(?:information|info|details|reading)"
    r"|(?:useful|related|helpful|recommended)\s+(?:links?|resources?|sources?|reading)"
    r"|links?|resources?)\b", re.I)
NAVIGATION_WORDS: frozenset[str] = frozenset("""
    see also read more learn find out visit check refer look page pages site sites website websites
    sheet sheets fact facts summary link links article articles guide guides resource resources
    source sources reference references below above here following official detailed details info
    information leaflet leaflets booklet overview reading further useful helpful related available
    online web yes short answer quick brief bottom line version caveat caveats nuance
""".split())


def _substantive(remainder: str, ignore: frozenset[str] = frozenset()) -> bool:
    """Whether words outside a referral/refusal still make a checkable medical claim."""
    count = 0
    for word in _WORD_RE.findall(remainder):
        lower = word.lower().strip("'")
        if lower in STOPWORDS or lower in GENERIC_WORDS or lower in ignore:
            continue
        if word[0].isdigit() or len(lower) >= 3 or (len(word) >= 2 and word.isupper()):
            count += 1
    return count >= 2


def classify_sentence(text: str) -> StatementCategory:
    """The ASTRID class of one sentence: informative unless it is only conversation.

    A referral ("consult your doctor") or refusal that also carries medical content
    ("consult a cardiologist before starting sotalol if you have long QT") stays informative.
    """
    plain = plain_text(text).replace("’", "'").replace("‘", "'")
    plain = plain.strip().strip("\"“”'")
    if not plain:
        return StatementCategory.ACKNOWLEDGEMENT
    if plain.rstrip(")").endswith("?"):
        return StatementCategory.QUESTION
    for category in (StatementCategory.REFUSAL, StatementCategory.DISCLAIMER):
        matches = [m for p in _COMPILED[category] for m in p.finditer(plain)]
        if not matches:
            continue
        remainder = plain
        for m in sorted(matches, key=lambda m: m.start(), reverse=True):
            remainder = remainder[:m.start()] + " " + remainder[m.end():]
        for p in _COMPILED[StatementCategory.DISCLAIMER] + _COMPILED[StatementCategory.REFUSAL]:
            remainder = p.sub(" ", remainder)
        if not _substantive(remainder):
            return category
        return StatementCategory.INFORMATIVE
    if any(p.search(plain) for p in _COMPILED[StatementCategory.ACKNOWLEDGEMENT]):
        return StatementCategory.ACKNOWLEDGEMENT
    lead = _FRAMING_RE.match(plain) or _NAVIGATION_RE.match(plain)
    if lead and not _substantive(plain[lead.end():], NAVIGATION_WORDS):
        return StatementCategory.ACKNOWLEDGEMENT     # framing or navigation: conversation, not a claim
    return StatementCategory.INFORMATIVE
