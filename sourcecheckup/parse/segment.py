"""The segmenter: an answer's text becomes the spans of its sentences and list items.

1. structure: Markdown-ish lines become units (paragraphs, list items, headings, table rows,
   reference sections); headings and reference lists are not statements;
2. sentences: each unit is cut with ``pysbd`` on a masked copy of the text (inline markers,
   URLs and emphasis replaced by spaces of the same length, so every span stays a span of the
   original text), then false breaks after medical abbreviations are mended;
3. segments: list fragments keep the heading or lead-in they hang from, table rows their headers.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

import pysbd

from ..models import StatementCategory
from .classify import classify_sentence
from .markers import MARKER_RE
from .markup import LINK_RE, URL_RE, mask, plain_text

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

# Headings that open a list of references rather than statements.
REFERENCE_HEADINGS = re.compile(
    r"^(?:sources?|references?|citations?|bibliography|further reading|works cited|links"
    r"|learn more|useful links|read more)\s*:?$", re.I)

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

_TERMINAL = ".!?"
_CONTINUATION_END = ",;(-–—/&+"
_SOFT_WRAP_MIN = 60   # a shorter line that ends without punctuation is a line of its own


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
    bare = MARKER_RE.sub("", content)
    bare = URL_RE.sub("", bare).rstrip(" \t*_`")
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
            if _ends_line(last_line) == ":" and _ends_line(line) not in _TERMINAL:
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


# The abbreviation tests only need the end of the text before a cut: the longest abbreviation,
# its period and the character before it. Looking at more would re-scan a growing merged span.
_TAIL_CHARS = max(len(a) for a in ABBREVIATIONS_NEVER_FINAL + ABBREVIATIONS_BEFORE_NUMBER) + 8
_FIRST_WORD_RE = re.compile(r"\s*([^\s]*)")


def _mend(masked: str, spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Join pieces the splitter cut after an abbreviation or before a lowercase word.

    Linear in the text: each test reads only the tail of the span before the cut (trailing
    spaces belong to the last piece) and the first word after it."""
    out: list[tuple[int, int]] = []
    for start, end in spans:
        if out:
            span_start, stop = out[-1]
            while stop > span_start and masked[stop - 1].isspace():
                stop -= 1
            # a tail shorter than the span starts mid-span, so the patterns' "^" cannot match
            # there: _TAIL_CHARS is longer than any abbreviation with its period
            before = masked[max(span_start, stop - _TAIL_CHARS):stop]
            word = _FIRST_WORD_RE.match(masked, start, end)
            first = word.group(1) if word else ""
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
class Segment:
    start: int
    end: int
    lead: tuple[int, int] | None = None     # span of the heading / lead-in a list fragment needs
    row_headers: tuple[str, ...] = ()       # for a table row: the header cells



def _is_fragment(text: str) -> bool:
    plain = plain_text(text)
    starts_lower = plain[:1].islower() and plain.split()[0].islower()
    return starts_lower or not plain.endswith(tuple(_TERMINAL)) or len(plain.split()) <= 4


def _open_lead(text: str, lead: tuple[int, int]) -> bool:
    """A lead-in that ends mid-sentence ("...include:"): every item completes it."""
    return bool(_OPEN_LEAD_RE.search(plain_text(text[lead[0]:lead[1]])))


def segments(text: str) -> list[Segment]:
    masked = mask(text)
    units = _units(text)
    segments: list[Segment] = []
    heading_lead: tuple[int, int] | None = None
    list_lead: tuple[tuple[int, int], int] | None = None      # (span, indent above which it applies)
    in_references = False
    header_cells: tuple[str, ...] = ()
    parents: list[tuple[int, tuple[int, int]]] = []           # (indent, span) of open list items

    def add_marker_only(span: tuple[int, int]) -> bool:
        if plain_text(text[span[0]:span[1]]).strip(" .,;:"):
            return False
        if segments and "\n\n" not in text[segments[-1].end:span[0]]:
            segments[-1].end = span[1]
        return True

    for position, unit in enumerate(units):
        following = units[position + 1] if position + 1 < len(units) else None
        body = text[unit.start:unit.end]
        plain = plain_text(body)
        if unit.kind == "heading":
            in_references = bool(REFERENCE_HEADINGS.match(plain))
            heading_lead = None if in_references else (unit.start, unit.end)
            list_lead = None
            parents.clear()
            continue
        if unit.kind in ("header_row", "row"):
            cells = tuple(plain_text(c) for c in body.split("|"))
            if unit.kind == "header_row":
                header_cells = cells
                continue
            segments.append(Segment(unit.start, unit.end, row_headers=header_cells))
            continue
        if REFERENCE_HEADINGS.match(plain):
            in_references = True
            list_lead = None
            continue
        has_url = bool(URL_RE.search(body) or LINK_RE.search(body))
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
                    and not MARKER_RE.search(body)
                    and classify_sentence(plain) is StatementCategory.INFORMATIVE):
                heading_lead = (unit.start, unit.end)     # a plain-text heading ("Symptoms")
                continue
        spans = _split_unit(text, masked, unit.start, unit.end)
        if not spans:
            continue
        lead_for_next: tuple[tuple[int, int], int] | None = None
        last_plain = plain_text(text[spans[-1][0]:spans[-1][1]])
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
                lead: tuple[int, int] | None = parents[-1][1]   # a nested fragment reads with its parent item
            else:
                lead = list_lead[0] if list_lead is not None else heading_lead
            if spans:
                first = spans[0]
            else:   # spans ran out only where the last one became the lead-in for the next item
                assert lead_for_next is not None
                first = lead_for_next[0]
            parents.append((unit.indent, first))
            for k, span in enumerate(spans):
                if add_marker_only(span):
                    continue
                use_lead = lead if (k == 0 and lead is not None
                                    and (_is_fragment(text[span[0]:span[1]]) or _open_lead(text, lead))) else None
                segments.append(Segment(span[0], span[1], lead=use_lead))
        else:
            parents.clear()
            for span in spans:
                if not add_marker_only(span):
                    segments.append(Segment(span[0], span[1]))
        if lead_for_next is not None:
            list_lead = lead_for_next
    return segments


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Character spans of the sentences and list items of an answer, in order.

    Headings, reference lists and footnote definitions are left out; a marker placed after a
    sentence's final period belongs to that sentence's span.
    """
    return [(s.start, s.end) for s in segments(text)]
