"""Reading reference strings: "Smith J, Jones K. Title. N Engl J Med. 2019;380(5):456-62." -> a Reference.

Pure functions, standard library only. :func:`parse_reference` reads one string in the forms
answers use (Vancouver/NLM, AMA, APA, Harvard and the loose "Smith et al., JAMA 2019" that LLMs
write) and returns None for text that is not a reference (a sentence, a URL alone).
:func:`find_references` finds the reference strings in an answer: a reference list at the end,
footnote definitions and inline "(Smith et al., 2019)" citations.

``Reference.style`` names the form recognised: "vancouver", "ama", "apa", "harvard", "loose"
(authors, journal and year without a title), "author-year" (an in-text "(Smith & Jones, 2019)"),
"doi" or "pmid" (a bare identifier). Pages are written with "-" whatever dash the string used.
"""
from __future__ import annotations

import re

from .model import Reference

__all__ = ["parse_reference", "find_references", "in_text_citations"]

_YEAR = r"(?:18|19|20)\d{2}"
_MONTH = r"(?:Jan|Feb|Mar|Apr|May|Jun|Jul|Aug|Sep|Sept|Oct|Nov|Dec)[a-z]*\.?"
_PAGE = r"[A-Za-z]{0,2}\d+[A-Za-z]?"
_PAGES = rf"{_PAGE}(?:\s*[-–—]\s*{_PAGE})?"

_DOI = re.compile(
    r"(?:https?://(?:dx\.|www\.)?doi\.org/|\bdoi\s*:?\s*|\bDOI\s+)?(?P<doi>10\.\d{4,9}/[^\s\"<>]+)", re.I)
_PMID = re.compile(r"\bPMID\s*:?\s*(?P<pmid>\d{1,9})\b\.?", re.I)
_PMCID = re.compile(r"\bPMCID\s*:?\s*PMC\d+\.?|\bPMC\d{4,}\.?", re.I)
_URL = re.compile(r"(?:(?:Available\s+(?:from|at)|Retrieved\s+from|URL)\s*:?\s*)?(?:https?://|www\.)\S+", re.I)
_NOISE = re.compile(
    r"\[(?:Internet|published[^\]]*|Epub[^\]]*|PubMed[^\]]*|Google Scholar|CrossRef)\]\.?"
    r"|\bEpub\s+(?:ahead\s+of\s+print\.?|" + _YEAR + r"(?:\s+" + _MONTH + r"(?:\s+\d{1,2})?)?\.?)"
    r"|\b(?:Accessed|Cited|Retrieved)\s+(?:on\s+)?(?:" + _MONTH + r"\s+\d{1,2},?\s+" + _YEAR + r"|\d{1,2}\s+"
    + _MONTH + r"\s+" + _YEAR + r"|" + _YEAR + r"[^.;]*)\.?"
    r"|\bPublished\s+online\s+(?:" + _MONTH + r"\s+\d{1,2},?\s*)?(?=" + _YEAR + r")"
    r"|\bPubMed\s+PMID\s*:?\s*\d+\.?",
    re.I)
_TRAILING_ID = ".,;:)]}>'\"\u201d\u2019*_"
_LEADING_ITEM = re.compile(r"^\s*(?:\[\^?[\w-]{1,12}\]:?|\d{1,3}[.)](?=\s)|[-*+\u2022](?=\s))\s*")
_EMPHASIS = re.compile(r"(?<!\w)(\*{1,2}|_{1,2})(?=\S)(.+?)(?<=\S)\1(?!\w)")
_MD_LINK = re.compile(r"\[([^\[\]\n]+)\]\(\s*<?([^\s()<>]+)>?\s*\)")
_SENTENCE_END = re.compile(r"(?<=[.?!])\s+(?=\S)")

_PARTICLES = frozenset("van von der den de del della di da du la le dos das ten ter bin ibn al el y zu st".split())
_SUFFIXES = frozenset("jr jr. sr sr. ii iii iv 2nd 3rd".split())
# capitalised words that stand before a year without being anyone's name: "(January 2019)", "(Updated, 2023)"
_NOT_NAMES = frozenset("""january february march april may june july august september october november december
    spring summer autumn fall winter table figure fig updated accessed published revised reviewed since in from
    until before after circa version edition guideline guidelines report data see the a an and or""".split())
_CONNECTORS = frozenset("of and the & in for on de la der und".split())
_KNOWN_JOURNALS = frozenset(s.casefold() for s in (
    "NEJM", "JAMA", "BMJ", "Lancet", "The Lancet", "Nature", "Science", "Cell", "Circulation", "Pediatrics",
    "Chest", "Gut", "Blood", "Neurology", "Diabetes Care", "Diabetologia", "Hepatology", "Gastroenterology",
    "PLoS One", "PLOS ONE", "PLoS Med", "Ann Intern Med", "Annals of Internal Medicine", "CMAJ", "MMWR",
    "Cochrane Database Syst Rev", "eLife", "Thorax", "Brain", "Stroke", "Lancet Oncol", "JAMA Intern Med"))
_ET_AL = re.compile(r",?\s*\bet\s*\.?\s*al\b\.?", re.I)
_INITIALS_ONLY = re.compile(r"^(?:[A-Z][a-z]?\.?\s*-?\s*){1,4}$")
_VANCOUVER_INITIALS = re.compile(r"^[A-Z]{1,4}$")


# --------------------------------------------------------------------------- names


def _word_ok(token: str) -> bool:
    letters = re.sub(r"['\u2019.\-]", "", token)
    return bool(letters) and letters.isalpha()


def _family(tokens: list[str], *, bare: bool = False) -> str | None:
    """A family name from its words ("van der Berg", "O'Neil", "García-López"), or None.

    ``bare``: a name written without initials has one main word ("Diabetes Care" is a journal)."""
    if not tokens or len(tokens) > 4 or " ".join(tokens).casefold() in _KNOWN_JOURNALS:
        return None
    core = 0
    for t in tokens:
        if not _word_ok(t):
            return None
        if t.casefold() in _PARTICLES and not t[0].isupper() or t in ("De", "Van", "Von", "Le", "La", "Di", "Da"):
            continue
        if not t[0].isupper() or len(re.sub(r"\W", "", t)) < 2 or t.isupper() and len(t) <= 4:
            return None  # "N", "J" are initials; "NEJM" an abbreviation, not a family name
        if t.casefold() in _NOT_NAMES or sum(c.isupper() for c in t[1:]) > 1:
            return None  # "January"; "UpToDate" is a product ("McMurray", "DeFronzo" are names)
        core += 1
    return " ".join(tokens) if core and not (bare and core > 1) else None


def _vancouver_author(part: str) -> str | None:
    """"Smith JA" / "van der Berg AB" / "Smith J Jr" -> the family name."""
    tokens = part.split()
    while tokens and tokens[-1].casefold() in _SUFFIXES:
        tokens.pop()
    if len(tokens) < 2 or not _VANCOUVER_INITIALS.match(tokens[-1].replace(".", "")):
        return None
    return _family(tokens[:-1])


def _initials_first(part: str) -> str | None:
    """"J. Smith" / "J.A. van der Berg" -> the family name."""
    m = re.match(r"^((?:[A-Z]\.\s*-?\s*){1,4})(.+)$", part)
    return _family(m.group(2).split()) if m else None


def _author_list(block: str, *, vancouver: bool = False, bare: bool = False) -> list[str] | None:
    """The family names of an author block, or None when it is not one.

    ``vancouver`` accepts only "Family INITIALS" names (the first segment of an NLM/AMA string);
    otherwise APA pairs ("Smith, J."), "J. Smith" and bare family names ("Smith & Jones") pass too;
    ``bare`` accepts only bare family names (an in-text "(Smith & Jones, 2019)": "Vitamin D" is no author)."""
    block = block.strip().strip(",;:").strip()
    if not block:
        return None
    block = _ET_AL.sub(",", block)
    parts = [p.strip() for p in re.split(r",|;|\s+&\s+|\s+and\s+|\s*&\s*", block)]
    parts = [p for p in parts if p]
    if not parts:
        return None
    families: list[str] = []
    awaiting_initials = False
    for part in parts:
        if bare:
            if (name := _family(part.split(), bare=True)) is None:
                return None
            families.append(name)
        elif (name := _vancouver_author(part)) is not None:
            families.append(name)
            awaiting_initials = False
        elif vancouver:
            return None
        elif _INITIALS_ONLY.match(part) and "." in part:
            if not awaiting_initials:
                return None  # "J." with no family name before it
            awaiting_initials = False
        elif (name := _initials_first(part)) is not None:
            families.append(name)
        elif (name := _family(part.split(), bare=True)) is not None:
            families.append(name)
            awaiting_initials = True
        else:
            return None
    return families or None


# --------------------------------------------------------------------------- journals and tails


def _clean_piece(s: str) -> str:
    s = s.strip().strip(" ,;:").strip()
    s = s.strip("\"'\u201c\u201d\u2018\u2019").strip()
    return s.rstrip(".").strip().rstrip(",").strip()


def _journal_like(s: str) -> bool:
    s = _clean_piece(s)
    if not s:
        return False
    if s.casefold() in _KNOWN_JOURNALS:
        return True
    words = s.replace(".", " ").split()
    if len(words) > 9 or s.endswith("?"):
        return False
    for w in words:
        if w.casefold() in _CONNECTORS:
            continue
        if not (w[0].isupper() or w[0].isdigit()):
            return False
    return True


def _dashes(pages: str) -> str:
    return re.sub(r"\s*[-–—]\s*", "-", pages.strip()) if pages else ""


_APA_SOURCE = re.compile(
    r"(?:^|(?<=[.?!])\s+)(?P<journal>[^.?!]+?),\s*(?:vol\.\s*)?(?P<vol>\d+[A-Za-z]?)\s*(?:\((?P<iss>[^)]*)\))?"
    r"(?:\s*,\s*(?:(?:pp?|Article)\.?\s*)?(?P<pages>" + _PAGES + r"))?\s*\.?\s*$", re.I)
_VANCOUVER_DATE = re.compile(
    r"(?<![\d/.])(?P<year>" + _YEAR + r")[a-z]?(?![\d/])(?P<month>\s+" + _MONTH + r"(?:\s+\d{1,2})?"
    r"(?:\s*[-–]\s*(?:" + _MONTH + r")?\s*\d{0,2})?)?"
    r"(?P<volblock>\s*[;:]\s*(?P<vol>\d+[A-Za-z]?)?\s*(?:\((?P<iss>[^)]*)\))?"
    r"(?:\s*:\s*(?P<pages>" + _PAGES + r"))?)?")


def _apa_tail(rest: str) -> dict[str, str]:
    """"Title. Journal, 380(5), 456-462." -> title, journal, volume, issue, pages."""
    rest = rest.strip().strip(".").strip()
    out = {"title": "", "journal": "", "volume": "", "issue": "", "pages": ""}
    if not rest:
        return out
    if m := _APA_SOURCE.search(rest):
        out.update(journal=_clean_piece(m.group("journal")), volume=m.group("vol") or "",
                   issue=(m.group("iss") or "").strip(), pages=_dashes(m.group("pages") or ""))
        out["title"] = _clean_piece(rest[:m.start()])
        return out
    segments = _segments(rest)
    if len(segments) >= 2:
        out["journal"] = _clean_piece(segments[-1][0])
        out["title"] = _clean_piece(rest[:segments[-1][1]])
    elif _journal_like(rest):
        out["journal"] = _clean_piece(rest)
    else:
        out["title"] = _clean_piece(rest)
    return out


def _segments(text: str) -> list[tuple[str, int]]:
    """Sentence-like pieces of ``text`` with their start offsets ("Title. N Engl J Med." -> 2)."""
    starts = [0] + [m.end() for m in _SENTENCE_END.finditer(text)]
    return [(text[a:b], a) for a, b in zip(starts, starts[1:] + [len(text)]) if text[a:b].strip()]


def _vancouver_tail(rest: str) -> dict[str, str] | None:
    """"Title. N Engl J Med. 2019;380(5):456-62." -> title, journal, year, volume, issue, pages."""
    matches = list(_VANCOUVER_DATE.finditer(rest))
    if not matches:
        return None
    with_volume = [m for m in matches if m.group("volblock") and (m.group("vol") or m.group("pages"))]
    m = with_volume[0] if with_volume else matches[-1]
    out = {"year": m.group("year"), "volume": m.group("vol") or "", "issue": (m.group("iss") or "").strip(),
           "pages": _dashes(m.group("pages") or ""), "title": "", "journal": "",
           "month": "yes" if m.group("month") else ""}
    before = rest[:m.start()].rstrip(" ,.;:(")
    before = re.sub(r"\b" + _MONTH + r"\s+\d{1,2},?\s*$", "", before).rstrip(" ,.;:")
    after = _clean_piece(rest[m.end():])
    if not before:
        if after and _journal_like(after):
            out["journal"] = after
        elif after:
            out["title"] = after
        return out
    segments = _segments(before)
    if len(segments) >= 2:
        out["journal"] = _clean_piece(segments[-1][0])
        out["title"] = _clean_piece(before[:segments[-1][1]])
    elif out["volume"] or _journal_like(before):
        out["journal"] = _clean_piece(before)
    elif ", " in before and _journal_like(before.rsplit(", ", 1)[1]):
        title, journal = before.rsplit(", ", 1)
        out.update(title=_clean_piece(title), journal=_clean_piece(journal))
    else:
        out["title"] = _clean_piece(before)
    if not out["journal"] and after and _journal_like(after):
        out["journal"] = after
    return out


# --------------------------------------------------------------------------- the reference


def _take_identifiers(s: str) -> tuple[str, str, str]:
    """(text without DOI, PMID, PMCID and URLs; doi; pmid)."""
    doi = pmid = ""
    if m := _DOI.search(s):
        doi = m.group("doi")
        while doi and doi[-1] in _TRAILING_ID:
            if doi[-1] == ")" and doi.count("(") >= doi.count(")"):
                break
            doi = doi[:-1]
        doi = doi.lower()
        s = s[:m.start()] + " " + s[m.start() + len(m.group(0)):]
    if m := _PMID.search(s):
        pmid = m.group("pmid")
        s = s[:m.start()] + " " + s[m.end():]
    s = _PMCID.sub(" ", s)
    s = _URL.sub(" ", s)
    s = _NOISE.sub(" ", s)
    s = _EMPHASIS.sub(r"\2", s)
    s = re.sub(r"\s+", " ", s).strip()
    s = re.sub(r"\s+([.,;:])", r"\1", s)
    s = re.sub(r"([.,;:])(?:\s+[.,;:])+", r"\1", s)   # what was cut out leaves ". ." behind
    return s.strip(" ;,"), doi, pmid


def _ama_or_vancouver(raw: str, tail: dict[str, str]) -> str:
    ama = van = 0
    if re.search(r"\bdoi:10\.", raw, re.I):
        ama += 1
    if re.search(r"\bdoi:\s+10\.", raw, re.I):
        van += 1
    pages = tail.get("pages", "")
    if "-" in pages:
        first, last = pages.split("-", 1)
        if len(last) < len(first):
            van += 1     # NLM abbreviates: 2117-28
        elif len(last) == len(first) and last[:1] == first[:1]:
            ama += 1     # AMA writes in full what NLM would abbreviate: 221-230
    if tail.get("month"):
        van += 1
    if re.search(r"\[Internet\]|\bEpub\b|\bPubMed PMID\b", raw, re.I):
        van += 1
    return "ama" if ama > van else "vancouver"


def _year(value: str | None) -> int | None:
    return int(value) if value else None


_AUTHOR_YEAR = re.compile(
    r"^\(?\s*(?P<auth>[^()\d]+?)\s*,?\s*\(?(?P<year>" + _YEAR + r")[a-z]?\)?\s*\)?\.?$")
_APA_HEAD = re.compile(
    r"^(?P<auth>[^()]+?)\s*\((?P<year>" + _YEAR + r")[a-z]?(?:,\s*[^)]*)?\)(?P<dot>\.)?\s*(?P<rest>.*)$")
_HARVARD_HEAD = re.compile(r"^(?P<auth>[^()]+?),?\s+(?P<year>" + _YEAR + r")[a-z]?\.\s+(?P<rest>.+)$")


def parse_reference(text: str) -> Reference | None:
    """The fields of one reference string, or None when ``text`` is not a reference.

    A reference names authors or a title and journal, with a year, or carries a DOI or PMID;
    a sentence that mentions a study ("according to a 2019 NEJM study by Smith et al.") is not one.
    """
    if not isinstance(text, str):
        return None
    raw = text.strip()
    if not raw or len(raw) > 1500:
        return None
    body = _LEADING_ITEM.sub("", raw, count=1)
    body = _MD_LINK.sub(r"\1 \2", body)   # "[Title. JAMA. 2019](https://doi.org/...)"
    s, doi, pmid = _take_identifiers(body)
    bare = not re.search(r"[^\W\d_]{2}", s)
    if bare:
        if doi:
            return Reference(raw=raw, doi=doi, pmid=pmid, style="doi")
        if pmid:
            return Reference(raw=raw, pmid=pmid, style="pmid")
        return None
    fields = _read_fields(s, raw)
    if fields is None:
        if doi or pmid:
            return None if _sentence_like(s) else Reference(
                raw=raw, doi=doi, pmid=pmid, style="doi" if doi else "pmid", title=_clean_piece(s))
        return None
    authors, year, tail, style = fields
    if year is None and not (doi or pmid):
        return None
    if not authors and not (tail.get("title") and tail.get("journal")) and not (doi or pmid):
        return None
    return Reference(raw=raw, authors=tuple(authors), year=year, title=tail.get("title", ""),
                     journal=tail.get("journal", ""), volume=tail.get("volume", ""), issue=tail.get("issue", ""),
                     pages=tail.get("pages", ""), doi=doi, pmid=pmid, style=style)


def _sentence_like(s: str) -> bool:
    words = s.split()
    lower = sum(1 for w in words if w[:1].islower())
    return len(words) >= 4 and lower >= len(words) / 2 and not re.search(r"\.\s+[A-Z]", s)


def _read_fields(s: str, raw: str) -> tuple[list[str], int | None, dict[str, str], str] | None:
    """(authors, year, tail fields, style) by the first form that fits, or None."""
    if (m := _AUTHOR_YEAR.match(s)) and (authors := _author_list(m.group("auth"), bare=True)):
        return authors, _year(m.group("year")), {}, "author-year"

    tail: dict[str, str] | None   # the fields after the authors; None where no Vancouver tail is read
    if (m := _APA_HEAD.match(s)) and (authors := _author_list(m.group("auth"))):
        tail = _apa_tail(m.group("rest"))
        if not (tail["title"] or tail["journal"]):
            return None  # "Vitamin D (2019)": a year in brackets after words, nothing more
        if not tail["title"]:
            style = "loose"
        elif m.group("dot") and not re.search(r"\band\b", m.group("auth")) and "pp." not in m.group("rest"):
            style = "apa"
        else:
            style = "harvard"
        return authors, _year(m.group("year")), tail, style

    if (m := _ET_AL.search(s)) and m.start() < 200 and (authors := _author_list(s[:m.start()])):
        rest = s[m.end():].lstrip(" ,.;:")
        if head := re.match(r"^\((?P<year>" + _YEAR + r")[a-z]?(?:,\s*[^)]*)?\)(?P<dot>\.)?\s*", rest):
            tail = _apa_tail(rest[head.end():])
            return authors, _year(head.group("year")), tail, "apa" if tail["title"] else "loose"
        tail = _vancouver_tail(rest)
        if tail is None:
            return authors, None, {}, "loose"
        separated_by_comma = s[m.end():].lstrip(" ").startswith(",") or m.group(0).rstrip().endswith(",")
        style = _ama_or_vancouver(raw, tail) if tail["title"] and not separated_by_comma else "loose"
        return authors, _year(tail["year"]), tail, style

    first = re.match(r"^(?P<auth>[^.]+?)\.\s+(?P<rest>.+)$", s)
    if first and (authors := _author_list(first.group("auth"), vancouver=True)):
        tail = _vancouver_tail(first.group("rest"))
        if tail is None:
            return authors, None, {"title": _clean_piece(first.group("rest"))}, "vancouver"
        style = _ama_or_vancouver(raw, tail) if tail["title"] else "loose"
        return authors, _year(tail["year"]), tail, style

    if (m := _HARVARD_HEAD.match(s)) and (authors := _author_list(m.group("auth"))):
        return authors, _year(m.group("year")), _apa_tail(m.group("rest")), "harvard"

    # "Smith & Jones, JAMA Netw Open, 2022": authors, a journal and a year, no title
    for comma in re.finditer(r",\s+", s):
        if (authors := _author_list(s[:comma.start()])) is None:
            continue
        tail = _vancouver_tail(s[comma.end():])
        if tail and tail["journal"] and not tail["title"]:
            return authors, _year(tail["year"]), tail, "loose"
        break

    # a group author ("American Diabetes Association. Title. Diabetes Care. 2019;42:S1") or none at all
    tail = _vancouver_tail(s)
    if tail and tail["volume"] and tail["journal"] and tail["title"]:
        segments = _segments(tail["title"])
        if len(segments) >= 2:
            if not _journal_like(segments[0][0]):
                return None   # a sentence, not a group author's name
            tail = {**tail, "title": _clean_piece(tail["title"][segments[1][1]:])}
        return [], _year(tail["year"]), tail, _ama_or_vancouver(raw, tail)
    return None


# --------------------------------------------------------------------------- references in an answer

_LIST_HEADER = re.compile(
    r"^[ \t]{0,3}(?:#{1,6}[ \t]*)?(?:\*\*|__)?[ \t]*(?:references|sources|bibliography|works[ \t]+cited|citations)"
    r"[ \t]*(?:\*\*|__)?[ \t]*:?[ \t]*(?:\*\*|__)?[ \t]*$", re.I | re.M)
_ITEM = re.compile(r"^[ \t]*(?:\d{1,3}[.)]|\[\d{1,3}\]:?|[-*+\u2022])[ \t]+(?P<body>\S.*)$")
_FOOTNOTE = re.compile(r"^[ \t]{0,3}\[\^?[^\]\s]{1,20}\]:[ \t]*(?P<body>\S.*)$", re.M)
_PAREN = re.compile(r"\(([^()\n]{4,300})\)")


def _item_end(text: str, eol: int) -> int:
    """The end of a list item or footnote whose first line ends at ``eol``: indented lines continue it."""
    end = eol
    while end + 1 < len(text) and text[end + 1:end + 2] in (" ", "\t"):
        nxt = text.find("\n", end + 1)
        nxt = len(text) if nxt < 0 else nxt
        if not text[end + 1:nxt].strip():
            break
        end = nxt
    return end


def find_references(text: str) -> list[tuple[int, int, Reference]]:
    """The reference strings in an answer, as (start, end, Reference) with character offsets into ``text``.

    Found: the items of a "References" / "Sources" / "Bibliography" list (numbered "1." or "[1]",
    bulleted, or one per line), footnote definitions ("[^1]: ..." and "[1]: ..."), and in-text
    author-year citations "(Smith et al., 2019)" (each part of "(Smith, 2019; Jones, 2020)" apart).
    """
    found: list[tuple[int, int, Reference]] = []
    taken: list[tuple[int, int]] = []

    def add(start: int, end: int, *, block: bool = True) -> None:
        piece = text[start:end]
        lead = len(piece) - len(piece.lstrip())
        start, end = start + lead, start + len(piece.rstrip())
        if start < end and not any(a < end and start < b for a, b in taken):
            if (ref := parse_reference(text[start:end])) is not None:
                found.append((start, end, ref))
                if block:  # list items and footnotes; in-text citations never overlap each other
                    taken.append((start, end))

    for header in _LIST_HEADER.finditer(text):
        pos = header.end() + 1
        while pos < len(text):
            eol = text.find("\n", pos)
            eol = len(text) if eol < 0 else eol
            line = text[pos:eol]
            if not line.strip():
                pos = eol + 1
                continue
            m = _ITEM.match(line)
            if m is None and parse_reference(line) is None:
                break
            end = _item_end(text, eol)
            add(pos + (m.start("body") if m else 0), end)
            pos = end + 1
    for m in _FOOTNOTE.finditer(text):
        add(m.start("body"), _item_end(text, m.end("body")))
    for _, _, parts in in_text_citations(text):
        for start, end, _ in parts:
            add(start, end, block=False)
    found.sort(key=lambda t: t[0])
    return found


def in_text_citations(text: str) -> list[tuple[int, int, list[tuple[int, int, Reference]]]]:
    """Parentheses that hold only author-year citations: (start, end, [(start, end, Reference) per part]).

    "(Zinman et al., 2015; McMurray & Solomon, 2019)" is one, with two parts; "(HR 0.86, 2019 data)"
    and "(see Smith et al., 2019)" are not."""
    found: list[tuple[int, int, list[tuple[int, int, Reference]]]] = []
    for m in _PAREN.finditer(text):
        parts: list[tuple[int, int, Reference]] = []
        for part in re.finditer(r"[^;]+", m.group(1)):
            if not part.group(0).strip():
                continue
            ref = parse_reference(part.group(0))
            if ref is None or ref.style != "author-year":
                break
            lead = len(part.group(0)) - len(part.group(0).lstrip())
            start = m.start(1) + part.start() + lead
            parts.append((start, start + len(ref.raw), ref))
        else:
            if parts:
                found.append((m.start(), m.end(), parts))
    return found
