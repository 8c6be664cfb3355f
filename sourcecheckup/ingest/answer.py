"""One answer's text becomes a Response: the one place a Response is made, whatever the format.

Markdown links, autolinks and bare URLs become citations in reading order; footnotes, reference
definitions and a trailing "Sources:" list are taken out of the text and bring in their URLs;
inline markers (the grammar of :mod:`sourcecheckup.parse.markers`) are mapped to citations.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any, Mapping

from ..models import ExpertReference, Response
from ..parse.markers import MARKER_RE, marker_labels
from ..references.model import Reference
from ..references.parse import in_text_citations
from ..urls import dedupe, find_urls, normalise_url
from .citations import Citations, cites_something, fold, names_the_same_work, urls_in_fragment, written_reference
from .records import MAX_ANSWER_CHARS, UNUSABLE_KEY, IngestError

_FENCE = re.compile(r"^\s{0,3}(```|~~~)")
_FOOTNOTE_DEF = re.compile(r"^\s{0,3}\[\^([^\]\s]+)\]:\s*(.*)$")
_REF_DEF = re.compile(r"^\s{0,3}\[([^\]\^\n][^\]\n]*)\]:\s*(\S.*)$")
_SOURCES_HEADER = re.compile(
    r"^\s{0,3}(?:#{1,6}\s*)?(?:\*\*|__)?\s*"
    r"(?:sources|references|citations|bibliography|works\s+cited)"
    r"\s*(?:\*\*|__)?\s*:?\s*(?:\*\*|__)?\s*(?P<rest>.*)$",
    re.I,
)
_LIST_ITEM = re.compile(r"^\s*(?:(?P<num>\d{1,3})[.)]|\[(?P<br>\d{1,3})\]:?|[-*+\u2022])\s*(?P<body>.*)$")
_LINK = re.compile(
    r"""
    (?P<img>!)?\[(?P<text>(?:[^\[\]\n]|\[[^\[\]\n]*\])*)\]
    (?:\(\s*(?P<dest><[^<>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)
          (?:\s+(?:"[^"\n]*"|'[^'\n]*'|\([^()\n]*\)))?\s*\)
      |\[(?P<ref>[^\[\]\n]*)\])
    |<(?P<auto>(?:(?:https?|ftps?|file)://|javascript:|www\.)[^<>\s]+)>
    """,
    re.X | re.I,
)
# a link's words stop at the next <a or </a: each character is read once, not once per unclosed <a
# before it (199 KB of unclosed <a href="x"> took 17.6 s with a lazy (.*?)</a>)
_HTML_LINK = re.compile(r"<a\s[^<>]*?href\s*=\s*[\"']([^\"'<>]+)[\"'][^<>]*>((?:[^<]|<(?!/?a[\s>/]))*?)</a\s*>",
                        re.I | re.S)
_SHORTCUT = re.compile(r"(?<![\]\\])\[(?P<label>[^\[\]\^\n][^\[\]\n]*)\](?![\[(:])")
_MARKER_TEXT = re.compile(r"^\s*\[?\^?(\d{1,3})\]?\s*$")
# a link rewritten as its words and marker ("NICE NG136 [1]"), or as the marker alone
_POINTER_ONLY = re.compile(r"(?:[^\[\]\n]{0,80}\s)?(?P<marker>\[[^\[\]\n]{1,12}\])")


@dataclass
class _Definition:
    """A footnote, reference definition or source-list item: what a label cites."""

    label: str | None
    written: str
    numbered: bool        # numbered lists keep their own order; named ones follow first use
    used: bool = False

    @property
    def key(self) -> str | None:
        return None if self.label is None else fold(self.label)


def _take_definitions(text: str) -> tuple[str, list[_Definition]]:
    """Remove footnote and reference definitions and a Sources list from the answer text."""
    lines = text.split("\n")
    kept: list[str] = []
    found: list[_Definition] = []
    in_fence = False
    i = 0
    while i < len(lines):
        line = lines[i]
        fence = bool(_FENCE.match(line))
        if fence or in_fence:
            in_fence = in_fence != fence
            kept.append(line)
            i += 1
            continue
        if m := _FOOTNOTE_DEF.match(line):
            i, body = _with_continuations(lines, i + 1, m.group(2))
            found.append(_Definition("^" + m.group(1), body, m.group(1).isdigit()))
            continue
        if (m := _REF_DEF.match(line)) and (m.group(1).strip().isdigit() or cites_something(m.group(2))):
            # "[Note]: take with food" is a sentence; "[1]: Harrison's, 21st ed." is a reference
            label = m.group(1).strip()
            found.append(_Definition(label, m.group(2), label.isdigit()))
            i += 1
            continue
        if (m := _SOURCES_HEADER.match(line)) and (section := _sources_section(lines, i + 1, m.group("rest"))):
            i, items = section
            found.extend(_Definition(label, body, True) for label, body in items)
            if i < len(lines) and kept and kept[-1].strip():
                kept.append("")
            continue
        kept.append(line)
        i += 1
    return "\n".join(kept), found


def _with_continuations(lines: list[str], i: int, first: str) -> tuple[int, str]:
    parts = [first.strip()]
    while i < len(lines) and lines[i].strip() and lines[i][:1] in " \t":
        parts.append(lines[i].strip())
        i += 1
    return i, " ".join(p for p in parts if p)


def _sources_section(lines: list[str], start: int, rest: str) -> tuple[int, list[tuple[str | None, str]]] | None:
    """The items of a source list after a "Sources:" line, or None when no list follows."""
    rest = rest.strip()
    if rest and not cites_something(rest):
        return None  # "References: none were needed." is a sentence, not a header
    items: list[tuple[str | None, str]] = [(None, rest)] if rest else []
    j = start
    while j < len(lines):
        line = lines[j]
        stripped = line.strip()
        if not stripped:
            j += 1
            continue
        if m := _FOOTNOTE_DEF.match(line):
            j, body = _with_continuations(lines, j + 1, m.group(2))
            items.append(("^" + m.group(1), body))
            continue
        if m := _LIST_ITEM.match(line):
            j, body = _with_continuations(lines, j + 1, m.group("body"))
            items.append((m.group("num") or m.group("br"), body))
            continue
        if cites_something(stripped):
            items.append((None, stripped))  # one reference a line, no number or bullet
            j += 1
            continue
        break
    if not any(cites_something(body) for _, body in items):
        return None  # "Sources:" over a list of foods is part of the answer, not a source list
    while j > start and not lines[j - 1].strip():
        j -= 1  # leave blank lines that separate the list from following text
    return j, items


class _Body:
    """One left-to-right pass over the answer text, so citations follow reading order.

    Markdown links become ``text [n]``, autolinks and bare URLs become ``[n]``; markers
    already written (``[1]``, ``[^note]``) stay as they are and bring in their definitions.
    """

    def __init__(self, cites: Citations, definitions: list[_Definition]) -> None:
        self.cites = cites
        self.by_key = {d.key: d for d in reversed(definitions) if d.key is not None}

    def use(self, key: str) -> _Definition | None:
        d = self.by_key.get(key)
        if d is not None and not d.used:
            d.used = True
            self.cites.define(d.label, urls_in_fragment(d.written), d.written)
        return d

    def rewrite(self, text: str) -> str:
        for m in MARKER_RE.finditer(text):
            self.cites.reserved.update(marker_labels(m.group(0)))
        tokens: list[tuple[int, int, str, Any]] = []
        for m in _LINK.finditer(text):
            label_text, ref = m.group("text"), m.group("ref")
            if label_text is not None and label_text.startswith("^"):
                continue
            if ref is not None and _MARKER_TEXT.match(label_text) and _MARKER_TEXT.match(ref or label_text):
                continue  # "[1][2]": two markers side by side, not a reference link
            tokens.append((m.start(), m.end(), "link", m))
        for m in _HTML_LINK.finditer(text):
            tokens.append((m.start(), m.end(), "html", m))
        for m in _SHORTCUT.finditer(text):
            if fold(m.group("label")) in self.by_key and not _MARKER_TEXT.match(m.group("label")):
                tokens.append((m.start(), m.end(), "shortcut", m))
        for m in MARKER_RE.finditer(text):
            tokens.append((m.start(), m.end(), "marker", m))
        for url, start, end in find_urls(text):
            tokens.append((start, end, "url", url))
        for start, end, parts in in_text_citations(text):
            tokens.append((start, end, "author-year", parts))
        tokens.sort(key=lambda t: (t[0], t[0] - t[1]))

        out: list[str] = []
        pos = 0
        for start, end, kind, value in tokens:
            if start < pos:
                continue
            if kind == "url":
                # "(https://...)" and "<https://...>" lose their brackets with the URL
                if (start > pos and end < len(text)
                        and (text[start - 1], text[end]) in (("(", ")"), ("<", ">"), ("[", "]"))):
                    start, end = start - 1, end + 1
                before = text[pos:start]
                gap = " " if before and not before[-1].isspace() and before[-1] not in "([" else ""
                replacement = gap + self.cite(self.cites.add(value), "")
            elif kind == "marker":
                for label in marker_labels(value.group(0)):
                    self.use(fold(label))
                replacement = value.group(0)
            elif kind == "html":
                replacement = self.written(value.group(1), re.sub(r"<[^>]*>", "", value.group(2)).strip())
            elif kind == "author-year":
                # "(Zinman et al., 2015; Lewis et al., 2011)" -> "[2][3]", each the listed reference it names
                before = text[pos:start]
                gap = " " if before and not before[-1].isspace() else ""
                replacement = gap + "".join(self.author_year(ref) for _, _, ref in value)
            elif kind == "shortcut":
                replacement = self.reference(value.group("label"), value.group("label"), value.group(0))
            else:
                replacement = self.link(value)
            if kind in ("link", "html") and _POINTER_ONLY.fullmatch(replacement) and start > pos \
                    and end < len(text) and text[start - 1] == "(" and text[end] == ")":
                # "([NICE NG136](https://...))" only points at its source: the marker stays, the name goes
                before = text[pos:start - 1]
                gap = " " if before and not before[-1].isspace() else ""
                start, end = start - 1, end + 1
                replacement = gap + _POINTER_ONLY.fullmatch(replacement).group("marker")  # type: ignore[union-attr]
            out.append(text[pos:start])
            out.append(replacement)
            pos = end
        out.append(text[pos:])
        return "".join(out)

    def author_year(self, ref: Reference) -> str:
        for d in self.by_key.values():  # a named footnote not yet cited may be the one it names
            if not d.used and d.key and (listed := written_reference(d.written)) and names_the_same_work(ref, listed):
                self.use(d.key)
        return self.cite(self.cites.cited_by_author_year(ref), "")

    def link(self, m: re.Match[str]) -> str:
        label_text = m.group("text")
        if m.group("auto") is not None:
            return self.written(m.group("auto"), "")
        if m.group("dest") is not None:
            if m.group("img"):
                return label_text  # a picture is not a citation
            return self.written(m.group("dest").strip("<>"), label_text)
        return self.reference(label_text, m.group("ref") or label_text, m.group(0))

    def reference(self, label_text: str, ref: str, whole: str) -> str:
        d = self.use(fold(ref))
        if d is None:
            return whole  # not a link after all: "[sic]", "[citation needed]"
        idx = self.cites.refs.get(fold(ref))
        if idx is None:
            return label_text  # its definition names no URL; kept in unusable_citations
        return self.cite(idx, label_text, preferred=ref if ref.isdigit() else None)

    def written(self, dest: str, label_text: str) -> str:
        url = normalise_url(dest)
        if url is None:
            if dest and not dest.startswith("#"):
                self.cites.unusable.append(dest)
            return label_text or ""
        return self.cite(self.cites.add(url), label_text, written_dest=dest)

    def cite(self, idx: int, label_text: str, *, preferred: str | None = None,
             written_dest: str | None = None) -> str:
        marker = _MARKER_TEXT.match(label_text or "")
        label = self.cites.label_for(idx, preferred or (marker.group(1) if marker else None))
        shown = (label_text or "").strip()
        if not shown or marker or shown == written_dest or normalise_url(shown) == self.cites.urls[idx]:
            return f"[{label}]"
        return f"{label_text} [{label}]"


def _map_markers(text: str, cites: Citations) -> tuple[str, dict[str, int]]:
    """Resolve every marker in the text; "[1, 2]" and "[1-3]" are written out as "[1][2]"."""
    markers: dict[str, int] = {}

    def one(m: re.Match[str]) -> str:
        labels = marker_labels(m.group(0))
        for label in labels:
            idx = cites.resolve(label)
            if idx is not None:
                markers[label] = idx
        if len(labels) > 1:
            return "".join(f"[{label}]" for label in labels)
        return m.group(0)

    return MARKER_RE.sub(one, text), markers


def _tidy(text: str) -> str:
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def build_response(text: str, structured: list[str], *, origin: str, rid: str, question: str | None,
           model: str | None, extra: Mapping[str, Any], expert: ExpertReference | None = None) -> Response:
    """The one place a Response is made, whatever the input format."""
    if len(text) > MAX_ANSWER_CHARS:
        raise IngestError(f"the answer is {len(text):,} characters long, over the {MAX_ANSWER_CHARS:,}-character "
                          "limit for one answer (a real answer is rarely above 100 KB); split it into "
                          "several answers to audit it")
    cites = Citations()
    for entry in structured:
        cites.define(None, urls_in_fragment(entry), entry)
    body, definitions = _take_definitions(text.replace("\r\n", "\n").replace("\r", "\n"))
    for d in definitions:
        if d.numbered or d.label is None:
            d.used = True
            cites.define(d.label, urls_in_fragment(d.written), d.written)
    body = _Body(cites, definitions).rewrite(body)
    for d in definitions:  # defined but never cited in the text: still listed as sources
        if not d.used:
            d.used = True
            cites.define(d.label, urls_in_fragment(d.written), d.written)
    body, markers = _map_markers(body, cites)
    body = _tidy(body)
    if not body:
        raise IngestError("empty answer (only a list of sources)")
    extra = dict(extra)
    if cites.unusable:
        extra[UNUSABLE_KEY] = " | ".join(dedupe(u for u in cites.unusable if u))
    return Response(
        id=rid,
        text=body,
        citations=tuple(cites.urls),
        question=question,
        model=model,
        origin=origin,
        markers=markers,
        extra=extra,
        references=dict(cites.references),
        expert=expert,
    )
