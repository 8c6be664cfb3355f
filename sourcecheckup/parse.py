"""PARSE: split an answer into statements, class each one (ASTRID), keep its intended sources.

The offline parser works in three passes over ``Response.text``:

1. structure: Markdown-ish lines become units (paragraphs, list items, headings, table rows,
   reference sections); headings and reference lists are not statements;
2. sentences: each unit is cut with ``pysbd`` on a masked copy of the text (inline markers,
   URLs and emphasis replaced by spaces of the same length, so every span stays a span of the
   original text), then false breaks after medical abbreviations are mended;
3. statements: markers are mapped to citations and removed, Markdown is removed, and each
   sentence is classed informative / acknowledgement / question / disclaimer / refusal.

Other parsers (an LLM parser) plug in through :func:`register_parser` and are built from a
spec string by :func:`make_parser`, the same way judges are.
"""
from __future__ import annotations

import asyncio
import importlib
import re
from dataclasses import dataclass, replace
from typing import Any, Callable, Mapping, Protocol, Sequence, runtime_checkable
from urllib.parse import urlsplit

import pysbd

from .models import Response, Statement, StatementCategory

# --------------------------------------------------------------------------------------------
# Patterns (data). Matched case-insensitively on statement text with markers and Markdown
# removed and curly apostrophes straightened.
# --------------------------------------------------------------------------------------------

# A period after these never ends a sentence.
ABBREVIATIONS_NEVER_FINAL: tuple[str, ...] = (
    "e.g", "i.e", "vs", "approx", "cf", "viz", "incl", "esp", "resp", "dr", "prof", "mr",
    "mrs", "st", "sr", "jr",
)
# Units that pysbd mistakes for titles ("Ms."): after a number, their period ends a sentence.
UNITS_ENDING_SENTENCES: tuple[str, ...] = ("ms",)
# A period after these does not end a sentence when a number or "(" follows ("approx. 30 mg").
ABBREVIATIONS_BEFORE_NUMBER: tuple[str, ...] = (
    "et al", "fig", "figs", "no", "nos", "ref", "refs", "max", "min", "ca", "vol", "p", "pp",
    "eq", "tab", "tabs", "yr", "yrs", "wk", "wks", "mo", "mos", "hr", "hrs", "est", "avg",
    "sec", "ch", "table",
)

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

# Headings that open a list of references rather than statements.
REFERENCE_HEADINGS = re.compile(
    r"^(?:sources?|references?|citations?|bibliography|further reading|works cited|links"
    r"|learn more|useful links|read more)\s*:?$", re.I)

# Markers: [1], [2][3], [1, 2], [1-3], [^note], 【1†source】; a label we know ("[a]") too.
_MARKER_BODY = r"\^[^\[\]\s]+|\d{1,4}(?:\s*[-–—,;]\s*\d{1,4})*"
_GENERIC_MARKER_RE = re.compile(rf"\[(?:{_MARKER_BODY})\](?!\()|【[^】]{{0,40}}】")
_ANY_BRACKET_RE = re.compile(r"\[([^\[\]\n]{1,40})\](?!\()|【([^】]{0,40})】")
_LINK_RE = re.compile(r"!?\[([^\[\]\n]*)\]\((\s*<?[^)\s>]+>?)(?:\s+\"[^\"]*\")?\s*\)")
_URL_RE = re.compile(r"<?\bhttps?://[^\s<>()\[\]]+(?:\([^\s()]*\)[^\s<>()\[\]]*)*>?|<?\bwww\.[^\s<>()\[\]]+>?")
_URL_TRAIL = ".,;:!?'\"”’"

_BULLET_RE = re.compile(
    r"^([ \t]*)(?:[-*+•●▪◦‣∙–]|\d{1,3}[.)]|\(\d{1,3}\)|[a-z]\)|\([a-z]\))[ \t]+(?=\S)")
_HEADING_RE = re.compile(r"^[ \t]{0,3}#{1,6}[ \t]+(.*?)[ \t#]*$")
_BOLD_LINE_RE = re.compile(r"^[ \t]*(\*\*|__)(?=\S)([^*\n]+?)(?<=\S)\1[ \t]*:?[ \t]*$")
_RULE_RE = re.compile(r"^[ \t]*(?:[-*_=][ \t]*){3,}$")
_FENCE_RE = re.compile(r"^[ \t]*(```|~~~)")
_DEFINITION_RE = re.compile(r"^[ \t]*\[\^?[^\]\s]{1,40}\]:")
_TABLE_RE = re.compile(r"^[ \t]*\|.*\|[ \t]*$")
_TABLE_SEPARATOR_RE = re.compile(r"^[ \t]*\|?(?:[ \t]*:?-{2,}:?[ \t]*\|)+(?:[ \t]*:?-{2,}:?[ \t]*)?\|?[ \t]*$")

# A lead-in that each list item completes ("Common side effects include:").
_OPEN_LEAD_RE = re.compile(
    r"\b(?:include|includes|including|are|is|were|such as|like|involve|involves|consist of|contain"
    r"|contains|comprise|comprises|cause|causes|following|e\.g\.|i\.e\.)\s*:$", re.I)

# What is left of a "Source: https://..." line once its URL is gone.
_LEFTOVER_RE = re.compile(r"^(?:sources?|references?|see|ref|link|citations?)\s*[:.]?$", re.I)

_TERMINAL = ".!?"
_CONTINUATION_END = ",;(-–—/&+"
_SOFT_WRAP_MIN = 60   # a shorter line that ends without punctuation is a line of its own


# --------------------------------------------------------------------------------------------
# Markers
# --------------------------------------------------------------------------------------------

def _lookup(label: str, markers: Mapping[str, int]) -> int | None:
    label = label.strip()
    for candidate in (label, label.lstrip("^"), "^" + label.lstrip("^")):
        if candidate in markers:
            return markers[candidate]
    return None


def _marker_indices(label: str, markers: Mapping[str, int]) -> list[int] | None:
    """Citation indices named by one bracket's label; None when it is not a marker at all."""
    direct = _lookup(label, markers)
    if direct is not None:
        return [direct]
    if label.startswith("^"):
        return []                                    # a footnote we cannot map: still a marker
    if not re.fullmatch(_MARKER_BODY, label):
        return None                                  # "[sic]", "[x]": ordinary text
    found: list[int] = []
    for part in re.split(r"\s*[,;]\s*", label):
        bounds = re.split(r"\s*[-–—]\s*", part)
        if len(bounds) == 2 and bounds[0].isdigit() and bounds[1].isdigit():
            low, high = int(bounds[0]), int(bounds[1])
            labels = [str(n) for n in range(low, high + 1)] if 0 <= high - low <= 50 else []
        else:
            labels = [part]
        for one in labels:
            index = _lookup(one, markers)
            if index is not None:
                found.append(index)
    return found


def _tidy(text: str) -> str:
    text = re.sub(r"[ \t]+([.,;:!?)\]])", r"\1", text)
    text = re.sub(r"([(\[])[ \t]+", r"\1", text)
    text = re.sub(r"\(\s*[,;]?\s*\)|\[\s*\]", "", text)
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"[ \t]+([.,;:!?)\]])", r"\1", text)
    return text


def strip_markers(sentence: str, markers: Mapping[str, int]) -> tuple[str, tuple[int, ...]]:
    """Remove inline citation markers; return the tidied text and the cited indices.

    ``markers`` maps a label as written ("1", "^note") to a 0-based index into
    ``Response.citations``. Indices come in order of appearance, without repeats. Markers
    whose label is unknown are removed but cite nothing; brackets that are not markers
    ("[sic]") stay.
    """
    cited: list[int] = []

    def link(match: re.Match[str]) -> str:
        found = _marker_indices(match.group(1).strip(), markers) if match.group(1).strip() else None
        if found is None:
            return match.group(0)                    # an ordinary link: handled by _clean_markdown
        cited.extend(found)
        return " "

    def bracket(match: re.Match[str]) -> str:
        if match.group(2) is not None:               # 【3†source】
            number = re.match(r"\d+", match.group(2))
            if number:
                cited.extend(_marker_indices(number.group(0), markers) or [])
            return " "
        found = _marker_indices(match.group(1).strip(), markers)
        if found is None:
            return match.group(0)
        cited.extend(found)
        return " "

    text = _LINK_RE.sub(link, sentence)
    text = _ANY_BRACKET_RE.sub(bracket, text)
    return _tidy(text), tuple(dict.fromkeys(cited))


# --------------------------------------------------------------------------------------------
# Markdown and URLs
# --------------------------------------------------------------------------------------------

def _trim_url(url: str) -> str:
    url = url.strip().strip("<>")
    while url and url[-1] in _URL_TRAIL:
        url = url[:-1]
    return url


def _url_key(url: str) -> str:
    url = _trim_url(url)
    try:
        parts = urlsplit(url if "://" in url else "http://" + url)
        parts.hostname
    except ValueError:                      # not a URL after all ("http://[1]"): compare as text
        return url.lower()
    host = (parts.hostname or "").lower()
    host = host[4:] if host.startswith("www.") else host
    key = host + parts.path.rstrip("/")
    return f"{key}?{parts.query}" if parts.query else key


def _urls_in(text: str) -> list[str]:
    urls = [_trim_url(m.group(2)) for m in _LINK_RE.finditer(text) if _URL_RE.match(m.group(2).strip())]
    rest = _LINK_RE.sub(" ", text)
    urls += [_trim_url(m.group(0)) for m in _URL_RE.finditer(rest)]
    return urls


def _drop_url(match: re.Match[str]) -> str:
    """Remove a URL but keep the sentence punctuation the URL pattern swallowed."""
    found = match.group(0)
    if found.endswith(">"):
        return ""
    return found[len(found.rstrip(_URL_TRAIL)):]


_POINTER_BEFORE_URL_RE = re.compile(
    r"[ \t]*[,;:]?[ \t]*(?:\b(?:see(?:\s+also)?|source|sources|ref|via)\b[ \t]*:?[ \t]*)?"
    r"(?=<?https?://\S|<?\bwww\.\S)", re.I)


def _drop_pointer(match: re.Match[str]) -> str:
    before = match.string[:match.start()].rstrip()
    if not match.group(0) or not before or before[-1] in ".!?":
        return match.group(0)     # "See https://..." as a sentence of its own: handled by the parser
    return " "


def _clean_markdown(text: str) -> str:
    """Statement text as a reader sees it: links become their words, URLs and emphasis go."""
    def link(match: re.Match[str]) -> str:
        return match.group(1).strip()     # a URL written as the words goes below, with its pointer

    # "(see [the NHS page](https://...))" only points at a source: drop it whole
    text = re.sub(r"\s*(?<!\])\(\s*(?:see|source|sources|via|from|ref)?\s*:?\s*"
                  r"(?:!?\[[^\[\]\n]*\]\([^)\s]*\)|https?://[^\s()]+)\s*\)", "", text, flags=re.I)
    text = _LINK_RE.sub(link, text)
    # "..., see https://..." / "this fact sheet: https://...": the pointer goes with the URL
    text = _POINTER_BEFORE_URL_RE.sub(_drop_pointer, text)
    text = _URL_RE.sub(_drop_url, text)
    text = re.sub(r"\(\s*(?:see|source|sources|via|ref|from|at)?\s*:?\s*\)", "", text, flags=re.I)
    text = re.sub(r"[ \t]*[,;:]+(?=[ \t]*[.!?])", "", text)   # "sheet: ." once the link has gone
    text = re.sub(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1", r"\2", text)
    text = re.sub(r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])", r"\1", text)
    text = re.sub(r"(?<![\w])_(?=[^\s_])(.+?)(?<=[^\s_])_(?![\w])", r"\1", text)
    text = re.sub(r"~~(.+?)~~", r"\1", text)
    text = re.sub(r"`([^`]*)`", r"\1", text)
    text = re.sub(r"\*\*|__|(?<!\w)\*(?!\w)", " ", text)   # stray emphasis left by a cut
    return _tidy(text)


def _mask(text: str) -> str:
    """A copy of ``text`` of the same length where markers, URLs, emphasis and newlines are
    spaces, so the sentence splitter sees prose and every span still fits the original."""
    chars = list(text)

    def blank(start: int, end: int) -> None:
        for i in range(start, end):
            chars[i] = " "

    for match in _LINK_RE.finditer(text):
        label = match.group(1).strip()
        if label and re.fullmatch(_MARKER_BODY, label):
            blank(match.start(), match.end())
        else:                                        # keep the link's words, hide its target
            blank(match.start(), match.start(1))
            blank(match.end(1), match.end())
    for match in _GENERIC_MARKER_RE.finditer(text):
        blank(match.start(), match.end())
    for match in _URL_RE.finditer(text):
        blank(match.start(), match.start() + len(match.group(0).rstrip(_URL_TRAIL)))
    for match in re.finditer(r"\*{1,3}|_{2,3}|`+|~~|\n|\r|\t", text):
        blank(match.start(), match.end())
    return "".join(chars)


# --------------------------------------------------------------------------------------------
# Structure: lines -> units
# --------------------------------------------------------------------------------------------

@dataclass
class _Unit:
    kind: str            # "para", "item", "heading", "row", "header_row"
    start: int
    end: int
    indent: int = 0
    after_blank: bool = True
    before_blank: bool = False


def _lines(text: str) -> list[tuple[int, str]]:
    out, pos = [], 0
    for line in text.splitlines(keepends=True):
        out.append((pos, line.rstrip("\r\n")))
        pos += len(line)
    return out


def _ends_line(content: str) -> str:
    """The last meaningful character of a line, markers and emphasis ignored."""
    bare = _GENERIC_MARKER_RE.sub("", content)
    bare = _URL_RE.sub("", bare).rstrip(" \t*_`")
    return bare[-1:] if bare else ""


def _hard_break(previous: str, line: str) -> bool:
    """Whether a single newline inside a paragraph separates two statements."""
    last = _ends_line(previous)
    if last in _TERMINAL or last == ":":
        return True
    if last in _CONTINUATION_END or not last:
        return False
    first = line.lstrip(" \t*_")[:1]
    if not first or first.islower():
        return False
    return len(previous.strip()) < _SOFT_WRAP_MIN


def _units(text: str) -> list[_Unit]:
    units: list[_Unit] = []
    current: _Unit | None = None
    last_line = ""
    blank_before = True
    in_fence = False
    implicit_list = False        # lines after a "...include:" line, without bullets
    in_table = False

    def close(before_blank: bool = False) -> None:
        nonlocal current
        if current is not None:
            current.before_blank = before_blank
            units.append(current)
        current = None

    for start, line in _lines(text):
        end = start + len(line)
        if _FENCE_RE.match(line):
            close(True)
            in_fence = not in_fence
            continue
        if in_fence:
            continue
        if not line.strip():
            close(True)
            blank_before, implicit_list, in_table = True, False, False
            continue
        after_blank = blank_before
        blank_before = False
        if _TABLE_SEPARATOR_RE.match(line) and in_table:
            continue
        if _RULE_RE.match(line):
            close(True)
            blank_before = True
            continue
        heading = _HEADING_RE.match(line) or _BOLD_LINE_RE.match(line)
        if heading:
            close()
            group = heading.lastindex or 1
            units.append(_Unit("heading", start + heading.start(group), start + heading.end(group)))
            implicit_list = False
            continue
        if _DEFINITION_RE.match(line):
            close()
            continue
        if _TABLE_RE.match(line):
            close()
            first, last = line.index("|") + 1, line.rindex("|")
            while first < last and line[first].isspace():
                first += 1
            while last > first and line[last - 1].isspace():
                last -= 1
            units.append(_Unit("row" if in_table else "header_row", start + first, start + last))
            in_table = True
            continue
        in_table = False
        bullet = _BULLET_RE.match(line)
        if bullet:
            close()
            current = _Unit("item", start + bullet.end(), end, indent=len(bullet.group(1).expandtabs(4)),
                            after_blank=after_blank)
            last_line, implicit_list = line, False
            continue
        if current is not None and current.kind == "item" and not after_blank and not implicit_list:
            current.end = end                    # a wrapped list item: its sentences split later
            last_line = line
            continue
        if current is not None and current.kind == "para":
            if _ends_line(last_line) == ":" and not _ends_line(line) in _TERMINAL:
                implicit_list = True
            if implicit_list or _hard_break(last_line, line):
                close()
                current = _Unit("item" if implicit_list else "para", start, end, after_blank=False)
            else:
                current.end = end
            last_line = line
            continue
        if current is not None and current.kind == "item" and implicit_list:
            close()
            current = _Unit("item", start, end, after_blank=False)
            last_line = line
            continue
        close()
        current = _Unit("para", start, end, after_blank=after_blank)
        last_line = line
    close(True)
    return units


# --------------------------------------------------------------------------------------------
# Sentences
# --------------------------------------------------------------------------------------------

_UNIT_BREAK_RE = re.compile(
    r"\d\s?(?:" + "|".join(re.escape(u) for u in UNITS_ENDING_SENTENCES) + r")\.(?=\s+[A-Z])")
_NEVER_FINAL_RE = re.compile(
    r"(?:^|[\s(\[/,])(?:" + "|".join(re.escape(a) for a in ABBREVIATIONS_NEVER_FINAL) + r")\.$", re.I)
_BEFORE_NUMBER_RE = re.compile(
    r"(?:^|[\s(\[/,])(?:" + "|".join(re.escape(a) for a in ABBREVIATIONS_BEFORE_NUMBER) + r")\.$", re.I)


def _mend(masked: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Join pieces the splitter cut after an abbreviation or before a lowercase word."""
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if out:
            before = masked[out[-1][0]:out[-1][1]].rstrip()
            after = masked[start:end].lstrip()
            word = re.match(r"[^\s]+", after)
            first = word.group(0) if word else ""
            lower_word = bool(first) and first[0].isalpha() and first.rstrip(".,;:").islower()
            if (lower_word or _NEVER_FINAL_RE.search(before)
                    or (_BEFORE_NUMBER_RE.search(before) and first[:1] and (first[0].isdigit() or first[0] == "("))):
                out[-1] = (out[-1][0], end)
                continue
        out.append((start, end))
    return out


def _force_breaks(masked: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Split where pysbd took a unit after a number for a title ("500 ms. The risk")."""
    out: list[tuple[int, int]] = []
    for start, end in spans:
        for match in _UNIT_BREAK_RE.finditer(masked, start, end):
            out.append((start, match.end()))
            start = match.end()
        out.append((start, end))
    return out


# pysbd's cost grows with the square of the text it is given (each abbreviation rescans the
# whole text), so a long unit is fed to it a window at a time: linear in the answer's length
SEGMENT_WINDOW_CHARS = 2_000


def _piece_starts(segmenter: Any, chunk: str) -> list[int]:
    """Where each of pysbd's sentences starts in chunk (the first at 0)."""
    starts: list[int] = []
    cursor = 0
    for piece in segmenter.segment(chunk):
        core = piece.strip()
        if not core:
            continue
        at = chunk.find(core, cursor)
        if at < 0:              # the splitter changed the text: keep what we located
            break
        starts.append(at)
        cursor = at + len(core)
    if not starts:
        starts = [0]
    starts[0] = 0
    return starts


def _sentence_starts(chunk: str) -> list[int]:
    """Sentence starts in chunk, found a window at a time; a window's last sentence may be cut
    by the window's end, so the next window begins at it."""
    segmenter = pysbd.Segmenter(language="en", clean=False)
    starts: list[int] = []
    pos = 0
    while True:
        window = chunk[pos:pos + SEGMENT_WINDOW_CHARS]
        local = _piece_starts(segmenter, window)
        if pos + len(window) >= len(chunk):
            starts.extend(pos + s for s in local)
            return starts
        if len(local) > 1:
            starts.extend(pos + s for s in local[:-1])
            pos += local[-1]
        else:   # one sentence longer than the window: cut it at the window's last space
            starts.append(pos)
            cut = window.rfind(" ", SEGMENT_WINDOW_CHARS // 2)
            pos += cut if cut > 0 else len(window)


def _split_unit(text: str, masked: str, start: int, end: int) -> list[tuple[int, int]]:
    chunk = masked[start:end]
    if not chunk.strip():                       # only markers or a URL: let the caller attach it
        raw = text[start:end]
        if not raw.strip():
            return []
        lead = len(raw) - len(raw.lstrip())
        return [(start + lead, start + len(raw.rstrip()))]
    starts = _sentence_starts(chunk)
    spans = [(start + s, start + e) for s, e in zip(starts, starts[1:] + [len(chunk)])]
    spans = _mend(masked, _force_breaks(masked, spans))
    trimmed = []
    for s, e in spans:
        while s < e and text[s].isspace():
            s += 1
        while e > s and text[e - 1].isspace():
            e -= 1
        if s < e:
            trimmed.append((s, e))
    return trimmed


@dataclass
class _Segment:
    start: int
    end: int
    lead: tuple[int, int] | None = None     # span of the heading / lead-in a list fragment needs
    row_headers: tuple[str, ...] = ()       # for a table row: the header cells


def _plain(text: str) -> str:
    """Marker-free, Markdown-free text of a span, for decisions made before markers are known."""
    return _clean_markdown(_GENERIC_MARKER_RE.sub(" ", text))


def _is_fragment(text: str) -> bool:
    plain = _plain(text)
    starts_lower = plain[:1].islower() and plain.split()[0].islower()
    return starts_lower or not plain.endswith(tuple(_TERMINAL)) or len(plain.split()) <= 4


def _open_lead(text: str, lead: tuple[int, int]) -> bool:
    """A lead-in that ends mid-sentence ("...include:"): every item completes it."""
    return bool(_OPEN_LEAD_RE.search(_plain(text[lead[0]:lead[1]])))


def _segments(text: str) -> list[_Segment]:
    masked = _mask(text)
    units = _units(text)
    segments: list[_Segment] = []
    heading_lead: tuple[int, int] | None = None
    list_lead: tuple[tuple[int, int], int] | None = None      # (span, indent above which it applies)
    in_references = False
    header_cells: tuple[str, ...] = ()
    parents: list[tuple[int, tuple[int, int]]] = []           # (indent, span) of open list items

    def add_marker_only(span: tuple[int, int]) -> bool:
        if _plain(text[span[0]:span[1]]).strip(" .,;:"):
            return False
        if segments and "\n\n" not in text[segments[-1].end:span[0]]:
            segments[-1].end = span[1]
        return True

    for position, unit in enumerate(units):
        following = units[position + 1] if position + 1 < len(units) else None
        body = text[unit.start:unit.end]
        plain = _plain(body)
        if unit.kind == "heading":
            in_references = bool(REFERENCE_HEADINGS.match(plain))
            heading_lead = None if in_references else (unit.start, unit.end)
            list_lead = None
            parents.clear()
            continue
        if unit.kind in ("header_row", "row"):
            cells = tuple(_plain(c) for c in body.split("|"))
            if unit.kind == "header_row":
                header_cells = cells
                continue
            segments.append(_Segment(unit.start, unit.end, row_headers=header_cells))
            continue
        if REFERENCE_HEADINGS.match(plain):
            in_references = True
            list_lead = None
            continue
        has_url = bool(_URL_RE.search(body) or _LINK_RE.search(body))
        if re.match(r"^(?:sources?|references?|citations?)\s*:", plain, re.I) and has_url:
            continue
        if in_references:
            if unit.kind == "item" or has_url or not plain:
                continue
            in_references = False
        if unit.kind == "para":
            list_lead = None
            words = plain.split()
            if (unit.after_blank and following is not None and (unit.before_blank or following.kind == "item")
                    and "\n" not in body and 0 < len(words) <= 4 and not re.search(r"[.!?:,;\d]", plain)
                    and not _GENERIC_MARKER_RE.search(body)
                    and classify_sentence(plain) is StatementCategory.INFORMATIVE):
                heading_lead = (unit.start, unit.end)     # a plain-text heading ("Symptoms")
                continue
        spans = _split_unit(text, masked, unit.start, unit.end)
        if not spans:
            continue
        lead_for_next = None
        last_plain = _plain(text[spans[-1][0]:spans[-1][1]])
        if (following is not None and following.kind == "item" and last_plain.endswith(":")
                and (unit.kind == "para" or following.indent > unit.indent)):
            category = classify_sentence(last_plain)
            if category is StatementCategory.INFORMATIVE:
                lead_for_next = (spans[-1], unit.indent if unit.kind == "item" else -1)
                spans = spans[:-1]
        if unit.kind == "item":
            if list_lead is not None and unit.indent <= list_lead[1]:
                list_lead = None
            while parents and parents[-1][0] >= unit.indent:
                parents.pop()
            if parents and (list_lead is None or list_lead[1] < parents[-1][0]):
                lead = parents[-1][1]                 # a nested fragment reads with its parent item
            else:
                lead = list_lead[0] if list_lead is not None else heading_lead
            parents.append((unit.indent, spans[0] if spans else lead_for_next[0]))
            for k, span in enumerate(spans):
                if add_marker_only(span):
                    continue
                use_lead = lead if (k == 0 and lead is not None
                                    and (_is_fragment(text[span[0]:span[1]]) or _open_lead(text, lead))) else None
                segments.append(_Segment(span[0], span[1], lead=use_lead))
        else:
            parents.clear()
            for span in spans:
                if not add_marker_only(span):
                    segments.append(_Segment(span[0], span[1]))
        if lead_for_next is not None:
            list_lead = lead_for_next
    return segments


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences and list items of an answer, in order.

    Headings, reference lists and footnote definitions are left out; a marker placed after a
    sentence's final period belongs to that sentence's span.
    """
    return [(s.start, s.end) for s in _segments(text)]


# --------------------------------------------------------------------------------------------
# Classification
# --------------------------------------------------------------------------------------------

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
    plain = _plain(text).replace("’", "'").replace("‘", "'")
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


# --------------------------------------------------------------------------------------------
# Parsers
# --------------------------------------------------------------------------------------------

@runtime_checkable
class Parser(Protocol):
    """Turns one response into its statements. ``id`` and ``version`` are stored with a run."""

    id: str
    version: str

    async def parse(self, response: Response) -> list[Statement]: ...


def _lower_first(text: str) -> str:
    if len(text) >= 2 and text[0].isupper() and text[1].islower():
        return text[0].lower() + text[1:]
    return text


class BuiltinParser:
    """The offline parser: sentence splitting, marker mapping and pattern classification.

    ``lead_in_context``: prefix a list fragment ("- Fever") with the heading or lead-in it
    hangs from ("Common symptoms include: fever"), so each statement reads on its own.
    """

    id = "builtin"
    version = "builtin-1"

    def __init__(self, lead_in_context: bool = True) -> None:
        self.lead_in_context = lead_in_context

    def parse_sync(self, response: Response) -> list[Statement]:
        text = response.text or ""
        markers: Mapping[str, int] = response.markers or {
            str(i + 1): i for i in range(len(response.citations))}
        by_url: dict[str, int] = {}
        for i, url in enumerate(response.citations):
            by_url.setdefault(_url_key(url), i)

        statements: list[Statement] = []
        for segment in _segments(text):
            raw = text[segment.start:segment.end]
            if segment.row_headers:
                body, cited = self._row(raw, segment.row_headers, markers)
            else:
                body, cited = strip_markers(raw, markers)
                body = _clean_markdown(body)
            cited = cited + tuple(by_url[k] for k in (_url_key(u) for u in _urls_in(raw)) if k in by_url)
            if segment.lead is not None and self.lead_in_context:
                lead_body, lead_cited = strip_markers(text[segment.lead[0]:segment.lead[1]], markers)
                lead_body = _clean_markdown(lead_body).rstrip(" :")
                if lead_body:
                    body = f"{lead_body}: {_lower_first(body)}"
                cited = cited or lead_cited
            if not re.search(r"\w", body) or _LEFTOVER_RE.match(body):
                # "See https://..." after a claim: its source is the claim's source
                previous = statements[-1] if statements else None
                if cited and previous is not None and "\n\n" not in text[previous.end:segment.start]:
                    statements[-1] = replace(previous, cited=tuple(dict.fromkeys(previous.cited + cited)),
                                             end=segment.end)
                continue
            statements.append(Statement(
                index=len(statements), text=body, category=classify_sentence(body),
                cited=tuple(dict.fromkeys(cited)), start=segment.start, end=segment.end))
        return statements

    @staticmethod
    def _row(raw: str, headers: Sequence[str], markers: Mapping[str, int]) -> tuple[str, tuple[int, ...]]:
        parts, cited = [], []
        for k, cell in enumerate(raw.split("|")):
            clean, found = strip_markers(cell, markers)
            clean = _clean_markdown(clean)
            cited.extend(found)
            if not clean:
                continue
            header = headers[k] if k < len(headers) else ""
            parts.append(f"{header}: {clean}" if header else clean)
        return "; ".join(parts), tuple(cited)

    async def parse(self, response: Response) -> list[Statement]:
        return self.parse_sync(response)


class ParserSpecError(ValueError):
    """A parser spec string that names no known parser or is malformed."""


def _builtin(argument: str = "", **options: Any) -> Parser:
    if argument:
        raise ParserSpecError(f"the builtin parser takes no argument (got 'builtin:{argument}'); use 'builtin'")
    unknown = set(options) - {"lead_in_context"}
    if unknown:
        raise ParserSpecError(f"the builtin parser has no option(s) {', '.join(sorted(unknown))}; "
                              "it accepts lead_in_context")
    return BuiltinParser(**options)


# kind -> factory(argument, **options) or (module, attribute) imported on first use.
_REGISTRY: dict[str, Callable[..., Parser] | tuple[str, str]] = {
    "builtin": _builtin,
    "openai": ("sourcecheckup.llm_parser", "from_openai_spec"),
    "anthropic": ("sourcecheckup.llm_parser", "from_anthropic_spec"),
    "openai-compatible": ("sourcecheckup.llm_parser", "from_compatible_spec"),
}


def register_parser(kind: str, factory: Callable[..., Parser] | tuple[str, str]) -> None:
    """Register a parser: ``factory(argument: str, **options) -> Parser`` for spec ``kind:argument``."""
    kind = kind.strip().lower()
    if not kind or ":" in kind:
        raise ParserSpecError(f"a parser kind is one word without ':' (got '{kind}')")
    _REGISTRY[kind] = factory


def registered_parser_kinds() -> list[str]:
    return sorted(_REGISTRY)


def make_parser(spec: str = "builtin", **options: Any) -> Parser:
    """Build a parser from a spec: ``builtin``, or e.g. ``openai:gpt-4o`` once registered."""
    spec = (spec or "").strip()
    if not spec:
        raise ParserSpecError("empty parser spec; try 'builtin'")
    kind, _, argument = spec.partition(":")
    kind, argument = kind.strip().lower(), argument.strip()
    entry = _REGISTRY.get(kind)
    if entry is None:
        raise ParserSpecError(
            f"unknown parser '{spec}': known kinds are {', '.join(registered_parser_kinds())}")
    if isinstance(entry, tuple):
        entry = getattr(importlib.import_module(entry[0]), entry[1])
        _REGISTRY[kind] = entry
    return entry(argument, **options)


async def parse_many(parser: Parser, responses: Sequence[Response]) -> list[list[Statement]]:
    """Parse several responses concurrently (an LLM parser benefits; the builtin one is instant)."""
    return list(await asyncio.gather(*(parser.parse(r) for r in responses)))
