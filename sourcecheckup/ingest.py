"""Ingest: read the answers to audit from files or pasted text into Responses.

Formats: the study's answer JSON ``{"response": ..., "citations": [...]}`` (one object, a list
of them, or JSON Lines), CSV/TSV through a column mapping, Markdown (inline and reference
links, footnotes, a trailing "Sources:" list), plain text with bare URLs, and folders of these.

Every Response gets its cited URLs in order, normalised and de-duplicated, and a marker map
from the inline markers as written (``[1]``, ``[^note]``) to indices into its citations, so a
statement keeps the source it was meant to have. A record that cannot be read becomes a
SkippedRecord naming the file, the line or row, and the problem; the rest of the batch goes on.
"""
from __future__ import annotations

import collections
import csv
import dataclasses
import io
import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping

from .models import Response, SkippedRecord
from .urls import dedupe, find_urls, normalise_url

__all__ = [
    "SUPPORTED_EXTENSIONS",
    "CsvMapping",
    "IngestError",
    "IngestResult",
    "load_path",
    "load_text",
    "parse_answer_record",
    "parse_markdown",
]

SUPPORTED_EXTENSIONS: tuple[str, ...] = (
    ".json", ".jsonl", ".ndjson", ".csv", ".tsv", ".md", ".markdown", ".txt",
)
_JSON_EXT = {".json"}
_JSONL_EXT = {".jsonl", ".ndjson"}
_TABLE_EXT = {".csv", ".tsv"}
_TEXT_EXT = {".md", ".markdown", ".txt"}
NOT_AN_ANSWER = ("not read as an answer: it cites no URL (open the file on its own to audit it anyway)")
_TEXT_FORMATS = {"markdown", "md", "text", "txt"}
_FORMATS = ("auto", "json", "jsonl", *sorted(_TEXT_FORMATS))

_TEXT_KEYS = ("response", "answer", "text")
_CITATION_KEYS = ("citations",)
_URL_KEYS = ("url", "href", "link", "uri")
_CITATION_SEPARATOR = re.compile(r"\s*;\s*|\n+|,\s+|,(?=(?:https?://|www\.|doi:|10\.\d))", re.I)
# key under which citations that are not URLs ("Harrison's, 21st ed.") are kept visible
UNUSABLE_KEY = "unusable_citations"


# one answer's text; above it the record is skipped with this limit named (parsing is linear,
# but a 5 MB "answer" is a pasted document or a runaway model, not an answer to audit)
MAX_ANSWER_CHARS = 200_000


class IngestError(ValueError):
    """Bad usage (a missing file, an unknown format) or, from parse_answer_record, a bad record."""


@dataclass(frozen=True)
class CsvMapping:
    """Which columns of a CSV/TSV hold what. Unmapped columns go to Response.extra."""

    text_col: str = "response"
    citations_col: str = "citations"
    question_col: str = "question"
    model_col: str = "model"
    id_col: str = "id"
    delimiter: str | None = None   # None: sniffed for .csv (, ; tab |), '\t' for .tsv


@dataclass
class IngestResult:
    responses: list[Response] = field(default_factory=list)
    skipped: list[SkippedRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)   # how inputs were read (a table's separator, encoding)

    def extend(self, other: "IngestResult") -> None:
        self.responses.extend(other.responses)
        self.skipped.extend(other.skipped)
        self.notes.extend(other.notes)


# --------------------------------------------------------------------------- citations


class _Citations:
    """The growing citation list of one answer and the labels that point into it."""

    def __init__(self) -> None:
        self.urls: list[str] = []
        self._index: dict[str, int] = {}
        self.labels: dict[str, int] = {}         # marker label as written -> index
        self.refs: dict[str, int] = {}           # reference-link label (case-folded) -> index
        self.defined_without_url: set[str] = set()
        self.reserved: set[str] = set()          # labels already written in the text
        self.unusable: list[str] = []

    def add(self, url: str) -> int:
        if url not in self._index:
            self._index[url] = len(self.urls)
            self.urls.append(url)
        return self._index[url]

    def define(self, label: str | None, urls: list[str], written: str) -> None:
        indices = [self.add(u) for u in urls]
        if not indices:
            self.unusable.append(written.strip())
        if label is None:
            return
        if not indices:
            self.defined_without_url.add(label)
            return
        self.labels.setdefault(label, indices[0])
        if not label.startswith("^"):
            self.refs.setdefault(_fold(label), indices[0])

    def _free(self, label: str, idx: int) -> bool:
        current = self.labels.get(label)
        if current is not None:
            return current == idx
        if label in self.defined_without_url:
            return False
        if label in self.reserved:
            # a marker already in the text keeps its study meaning: [n] is citation n-1
            return label.isdigit() and int(label) - 1 == idx
        return True

    def label_for(self, idx: int, preferred: str | None = None) -> str:
        """A marker label for citation ``idx``: the preferred one, else n = idx + 1, else a free one."""
        for candidate in (preferred, str(idx + 1)):
            if candidate and self._free(candidate, idx):
                self.labels[candidate] = idx
                return candidate
        for label, i in self.labels.items():
            if i == idx and label.isdigit():
                return label
        n = len(self.urls) + 1
        while not self._free(str(n), idx):
            n += 1
        self.labels[str(n)] = idx
        return str(n)

    def resolve(self, label: str) -> int | None:
        if label in self.labels:
            return self.labels[label]
        for written, idx in self.labels.items():
            if _fold(written) == _fold(label):
                return idx
        if label in self.defined_without_url:
            return None
        number = label[1:] if label.startswith("^") else label
        if number.isdigit() and 1 <= int(number) <= len(self.urls):
            return int(number) - 1  # the study's convention: [1] is the first citation
        return None


def _fold(label: str) -> str:
    return " ".join(label.split()).casefold()


def _urls_in_fragment(fragment: str) -> list[str]:
    """Every URL in one citation entry: Markdown links first, then bare URLs, DOIs, PMIDs."""
    urls: list[str] = []
    for m in _MD_INLINE_DEST.finditer(fragment):
        if url := normalise_url(m.group("dest").strip("<>")):
            urls.append(url)
    rest = _MD_INLINE_DEST.sub(" ", fragment)
    whole = normalise_url(rest)
    if whole is not None and not urls:
        return [whole]
    urls.extend(u for u, _, _ in find_urls(rest))
    return dedupe(urls)


def _citation_entries(value: Any, where: str) -> list[str]:
    """The entries of a citations field: a list, a JSON list in a string, or a separated string."""
    if value is None:
        return []
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("["):
            try:
                value = json.loads(stripped)
            except json.JSONDecodeError as e:
                raise IngestError(f"{where} look like a JSON list but are not valid JSON ({e.msg} at column {e.colno})") from None
        else:
            # URLs may contain commas: a comma separates only before a space or another URL
            return [p for p in _CITATION_SEPARATOR.split(stripped) if p.strip()]
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list):
        raise IngestError(f"{where} are {_kind(value)}, expected a list of URLs")
    entries: list[str] = []
    for n, item in enumerate(value, start=1):
        if item is None:
            continue
        if isinstance(item, str):
            entries.append(item)
        elif isinstance(item, Mapping) and any(isinstance(item.get(k), str) for k in _URL_KEYS):
            entries.append(next(item[k] for k in _URL_KEYS if isinstance(item.get(k), str)))
        else:
            raise IngestError(f"citation {n} in {where} is {_kind(item)}, expected a URL string")
    return entries


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"a {type(value).__name__}"


# --------------------------------------------------------------------------- Markdown

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
_MD_INLINE_DEST = re.compile(
    r"\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]\(\s*(?P<dest><[^<>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"
)
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
_HTML_LINK = re.compile(r"<a\s[^<>]*?href\s*=\s*[\"']([^\"'<>]+)[\"'][^<>]*>(.*?)</a\s*>", re.I | re.S)
_SHORTCUT = re.compile(r"(?<![\]\\])\[(?P<label>[^\[\]\^\n][^\[\]\n]*)\](?![\[(:])")
_MARKER = re.compile(
    r"\[(?:\^(?P<foot>[^\[\]\s]+)|(?P<nums>\d{1,3}(?:\s*[,\u2013\u2014-]\s*\d{1,3})*))\](?![(:])"
)
_MARKER_TEXT = re.compile(r"^\s*\[?\^?(\d{1,3})\]?\s*$")
_FRONT_MATTER = re.compile(r"\A---[ \t]*\n((?:[A-Za-z_][\w-]*[ \t]*:[^\n]*\n)+)---[ \t]*(?:\n|\Z)")


@dataclass
class _Definition:
    """A footnote, reference definition or source-list item: what a label cites."""

    label: str | None
    written: str
    numbered: bool        # numbered lists keep their own order; named ones follow first use
    used: bool = False

    @property
    def key(self) -> str | None:
        return None if self.label is None else _fold(self.label)


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
        if (m := _REF_DEF.match(line)) and (m.group(1).strip().isdigit() or _urls_in_fragment(m.group(2))):
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
    if rest and not _urls_in_fragment(rest):
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
        if _urls_in_fragment(stripped):
            items.append((None, stripped))
            j += 1
            continue
        break
    if not any(_urls_in_fragment(body) for _, body in items):
        return None  # "Sources:" over a list of foods is part of the answer, not a source list
    while j > start and not lines[j - 1].strip():
        j -= 1  # leave blank lines that separate the list from following text
    return j, items


class _Body:
    """One left-to-right pass over the answer text, so citations follow reading order.

    Markdown links become ``text [n]``, autolinks and bare URLs become ``[n]``; markers
    already written (``[1]``, ``[^note]``) stay as they are and bring in their definitions.
    """

    def __init__(self, cites: _Citations, definitions: list[_Definition]) -> None:
        self.cites = cites
        self.by_key = {d.key: d for d in reversed(definitions) if d.key is not None}

    def use(self, key: str) -> _Definition | None:
        d = self.by_key.get(key)
        if d is not None and not d.used:
            d.used = True
            self.cites.define(d.label, _urls_in_fragment(d.written), d.written)
        return d

    def rewrite(self, text: str) -> str:
        for m in _MARKER.finditer(text):
            self.cites.reserved.update(_marker_labels(m))
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
            if _fold(m.group("label")) in self.by_key and not _MARKER_TEXT.match(m.group("label")):
                tokens.append((m.start(), m.end(), "shortcut", m))
        for m in _MARKER.finditer(text):
            tokens.append((m.start(), m.end(), "marker", m))
        for url, start, end in find_urls(text):
            tokens.append((start, end, "url", url))
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
                for label in _marker_labels(value):
                    self.use(_fold(label))
                replacement = value.group(0)
            elif kind == "html":
                replacement = self.written(value.group(1), re.sub(r"<[^>]*>", "", value.group(2)).strip())
            elif kind == "shortcut":
                replacement = self.reference(value.group("label"), value.group("label"), value.group(0))
            else:
                replacement = self.link(value)
            out.append(text[pos:start])
            out.append(replacement)
            pos = end
        out.append(text[pos:])
        return "".join(out)

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
        d = self.use(_fold(ref))
        if d is None:
            return whole  # not a link after all: "[sic]", "[citation needed]"
        idx = self.cites.refs.get(_fold(ref))
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


def _marker_labels(m: re.Match[str]) -> list[str]:
    if m.group("foot") is not None:
        return ["^" + m.group("foot")]
    numbers: list[int] = []
    for part in re.split(r"\s*,\s*", m.group("nums")):
        bounds = [int(x) for x in re.split(r"\s*[\u2013\u2014-]\s*", part)]
        if len(bounds) == 2 and 0 < bounds[1] - bounds[0] <= 50:
            numbers.extend(range(bounds[0], bounds[1] + 1))
        else:
            numbers.extend(bounds)
    return [str(n) for n in numbers]


def _map_markers(text: str, cites: _Citations) -> tuple[str, dict[str, int]]:
    """Resolve every marker in the text; "[1, 2]" and "[1-3]" are written out as "[1][2]"."""
    markers: dict[str, int] = {}

    def one(m: re.Match[str]) -> str:
        labels = _marker_labels(m)
        for label in labels:
            idx = cites.resolve(label)
            if idx is not None:
                markers[label] = idx
        if len(labels) > 1:
            return "".join(f"[{label}]" for label in labels)
        return m.group(0)

    return _MARKER.sub(one, text), markers


def _tidy(text: str) -> str:
    text = re.sub(r"[ \t]+\n", "\n", text)
    return re.sub(r"\n{3,}", "\n\n", text).strip()


def _build(text: str, structured: list[str], *, origin: str, rid: str, question: str | None,
           model: str | None, extra: Mapping[str, Any]) -> Response:
    """The one place a Response is made, whatever the input format."""
    if len(text) > MAX_ANSWER_CHARS:
        raise IngestError(f"the answer is {len(text):,} characters long, over the {MAX_ANSWER_CHARS:,}-character "
                          "limit for one answer (a real answer is rarely above 100 KB); split it into "
                          "several answers to audit it")
    cites = _Citations()
    for entry in structured:
        cites.define(None, _urls_in_fragment(entry), entry)
    body, definitions = _take_definitions(text.replace("\r\n", "\n").replace("\r", "\n"))
    for d in definitions:
        if d.numbered or d.label is None:
            d.used = True
            cites.define(d.label, _urls_in_fragment(d.written), d.written)
    body = _Body(cites, definitions).rewrite(body)
    for d in definitions:  # defined but never cited in the text: still listed as sources
        if not d.used:
            d.used = True
            cites.define(d.label, _urls_in_fragment(d.written), d.written)
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
    )


def parse_markdown(text: str, *, origin: str, rid: str, question: str | None = None,
                   model: str | None = None) -> Response:
    """One answer written in Markdown or plain text.

    Optional front matter (``---`` / ``question: ...`` / ``---``) sets question, model and id;
    its other keys go to Response.extra. Raises IngestError for an empty answer.
    """
    text = text.lstrip("\ufeff")
    extra: dict[str, Any] = {}
    if m := _FRONT_MATTER.match(text.replace("\r\n", "\n")):
        for line in m.group(1).splitlines():
            key, _, value = line.partition(":")
            key, value = key.strip().lower(), value.strip().strip("\"'")
            if key == "question" and value:
                question = value
            elif key == "model" and value:
                model = value
            elif key == "id" and value:
                rid = value
            else:
                extra[key] = value
        text = text.replace("\r\n", "\n")[m.end():]
    if not text.strip():
        raise IngestError("empty answer")
    return _build(text, [], origin=origin, rid=rid, question=question, model=model, extra=extra)


# --------------------------------------------------------------------------- JSON records


def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _optional_text(obj: Mapping, key: str) -> str | None:
    value = obj.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, Mapping) or isinstance(value, (list, tuple)):
        raise IngestError(f"'{key}' is {_kind(value)}, expected text")
    return str(value).strip()


def parse_answer_record(obj: Mapping, origin: str, default_id: str) -> Response:
    """One answer record in the study's format; raises IngestError saying what is wrong with it.

    ``{"response": "... [1] ...", "citations": ["https://..."], "question": ..., "model": ...,
    "id": ...}``; ``answer`` or ``text`` may stand for ``response``. Without a citation list, the
    URLs written in the answer are its citations. Other scalar keys go to Response.extra.
    """
    if not isinstance(obj, Mapping):
        raise IngestError(f"expected a JSON object, got {_kind(obj)}")
    text_key = next((k for k in _TEXT_KEYS if k in obj), None)
    if text_key is None:
        raise IngestError("no answer text: expected a 'response', 'answer' or 'text' field"
                          + (f" (fields: {', '.join(map(str, obj))})" if obj else ""))
    text = obj[text_key]
    citations = obj.get("citations")
    if isinstance(text, Mapping):
        # {"response": {"answer": ..., "citations": [...]}}: the model's reply as it was parsed
        inner_key = next((k for k in _TEXT_KEYS if k in text), None)
        if inner_key is None:
            raise IngestError(f"'{text_key}' is an object without an 'answer' or 'text' field")
        citations = citations if citations is not None else text.get("citations")
        text, text_key = text[inner_key], f"{text_key}.{inner_key}"
    if not isinstance(text, str):
        raise IngestError(f"'{text_key}' is {_kind(text)}, expected the answer text")
    if not text.strip():
        raise IngestError(f"empty answer in '{text_key}'")
    structured = _citation_entries(citations, "'citations'")
    raw_id = obj.get("id")
    if raw_id is not None and not _scalar(raw_id):
        raise IngestError(f"'id' is {_kind(raw_id)}, expected text or a number")
    rid = str(raw_id).strip() if raw_id is not None and str(raw_id).strip() else default_id
    used = {text_key.split(".")[0], "citations", "question", "model", "id"}
    extra = {k: v for k, v in obj.items() if k not in used and isinstance(k, str) and _scalar(v)}
    return _build(text, structured, origin=origin, rid=rid, question=_optional_text(obj, "question"),
                  model=_optional_text(obj, "model"), extra=extra)


# --------------------------------------------------------------------------- loaders


@dataclass(frozen=True)
class _Source:
    """One input: its text, the name used in origins, the stem used in ids, and defaults."""

    text: str
    name: str
    stem: str
    question: str | None
    model: str | None


def _with_defaults(response: Response, src: _Source) -> Response:
    if (response.question is None and src.question) or (response.model is None and src.model):
        return dataclasses.replace(response, question=response.question or src.question,
                                   model=response.model or src.model)
    return response


def _record(result: IngestResult, src: _Source, obj: Any, origin: str, n: int) -> None:
    try:
        response = parse_answer_record(obj, origin, f"{src.stem}-{n}")
    except IngestError as e:
        result.skipped.append(SkippedRecord(origin, str(e)))
    else:
        result.responses.append(_with_defaults(response, src))


def _json_error(e: json.JSONDecodeError) -> str:
    return f"invalid JSON ({e.msg} at column {e.colno})"


def _load_jsonl(src: _Source, unreadable: Mapping[int, str] | None = None) -> IngestResult:
    """One record a line; unreadable maps line numbers that were not UTF-8 to their problem."""
    result = IngestResult()
    unreadable = unreadable or {}
    n = 0
    # "\n" only: a JSON string may hold U+2028 or a form feed, which splitlines() would cut at
    for lineno, line in enumerate(src.text.split("\n"), start=1):
        if lineno in unreadable:
            result.skipped.append(SkippedRecord(f"{src.name}:{lineno}", unreadable[lineno]))
            continue
        if not line.strip():
            continue
        n += 1
        origin = f"{src.name}:{lineno}"
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            result.skipped.append(SkippedRecord(origin, _json_error(e)))
            continue
        _record(result, src, obj, origin, n)
    if n == 0 and not unreadable:
        result.skipped.append(SkippedRecord(src.name, "no answers: the file holds no JSON records"))
    return result


_JSON_WS = re.compile(r"[ \t\n\r]*")


def _array_items(text: str) -> Iterable[tuple[Any, int]]:
    """The elements of a JSON array that already parsed, with the line each starts on."""
    decoder = json.JSONDecoder()
    pos = _JSON_WS.match(text, _JSON_WS.match(text).end() + 1).end()
    line, counted = 1, 0
    while pos < len(text) and text[pos] != "]":
        value, end = decoder.raw_decode(text, pos)
        line += text.count("\n", counted, pos)
        counted = pos
        yield value, line
        pos = _JSON_WS.match(text, end).end()
        if pos < len(text) and text[pos] == ",":
            pos = _JSON_WS.match(text, pos + 1).end()


def _load_json(src: _Source) -> IngestResult:
    try:
        value = json.loads(src.text)
    except json.JSONDecodeError as e:
        if e.msg == "Extra data":
            return _load_jsonl(src)  # JSON Lines saved with a .json name
        return IngestResult(skipped=[SkippedRecord(f"{src.name}:{e.lineno}", _json_error(e))])
    result = IngestResult()
    if isinstance(value, list):
        items = list(_array_items(src.text))
        per_line = collections.Counter(line for _, line in items)
        for n, (obj, line) in enumerate(items, start=1):
            # records that share a line (a one-line array) are told apart by their number
            where = f"{src.name}:{line}" if per_line[line] == 1 else f"{src.name}:{line} (record {n})"
            _record(result, src, obj, where, n)
        if not value:
            result.skipped.append(SkippedRecord(src.name, "no answers: the JSON list is empty"))
    elif isinstance(value, Mapping):
        _record(result, src, value, src.name, 1)
    else:
        result.skipped.append(SkippedRecord(src.name, f"expected a JSON object or a list of objects, got {_kind(value)}"))
    return result


def _load_markdown(src: _Source) -> IngestResult:
    try:
        response = parse_markdown(src.text, origin=src.name, rid=f"{src.stem}-1",
                                  question=src.question, model=src.model)
    except IngestError as e:
        return IngestResult(skipped=[SkippedRecord(src.name, str(e))])
    return IngestResult(responses=[response])


def _column(header: list[str], wanted: str, default: str, aliases: tuple[str, ...] = ()) -> int | None:
    folded = [h.strip().casefold() for h in header]
    names = [wanted] + (list(aliases) if wanted == default else [])
    for name in names:
        if name.strip().casefold() in folded:
            return folded.index(name.strip().casefold())
    return None


def _load_table(src: _Source, mapping: CsvMapping, delimiter: str) -> IngestResult:
    """Rows of a CSV/TSV; row numbers are those a spreadsheet shows (the header is row 1)."""
    csv.field_size_limit(max(csv.field_size_limit(), 64 * 1024 * 1024))
    reader = csv.reader(io.StringIO(src.text, newline=""), delimiter=delimiter)
    result = IngestResult()
    try:
        header = next(reader, None)
    except csv.Error as e:
        return IngestResult(skipped=[SkippedRecord(f"{src.name} row 1", f"cannot read the header ({e})")])
    if not header or not any(h.strip() for h in header):
        return IngestResult(skipped=[SkippedRecord(src.name, "empty table: no header row")])
    defaults = CsvMapping()
    text_i = _column(header, mapping.text_col, defaults.text_col, ("answer", "text"))
    if text_i is None:
        raise IngestError(
            f"{src.name} has no column '{mapping.text_col}' (its columns: {', '.join(header)}); "
            "name the answer column in the column mapping"
        )
    cols = {
        "citations": _column(header, mapping.citations_col, defaults.citations_col),
        "question": _column(header, mapping.question_col, defaults.question_col),
        "model": _column(header, mapping.model_col, defaults.model_col),
        "id": _column(header, mapping.id_col, defaults.id_col),
    }
    mapped = {text_i, *(i for i in cols.values() if i is not None)}
    text_name = header[text_i].strip()
    rows = iter(reader)
    n = 0
    while True:
        try:
            row = next(rows, None)
        except csv.Error as e:
            result.skipped.append(SkippedRecord(f"{src.name} row {n + 2}", f"cannot parse the rest of the table ({e})"))
            break
        if row is None:
            break
        n += 1
        origin = f"{src.name} row {n + 1}"
        if not any(cell.strip() for cell in row):
            continue
        if text_i >= len(row):
            result.skipped.append(SkippedRecord(
                origin, f"missing column '{text_name}' (the row has {len(row)} of {len(header)} fields)"))
            continue

        def cell(key: str) -> str | None:
            i = cols[key]
            return row[i].strip() if i is not None and i < len(row) and row[i].strip() else None

        text = row[text_i]
        if not text.strip():
            result.skipped.append(SkippedRecord(origin, f"empty answer in column '{text_name}'"))
            continue
        where = f"citations in column '{header[cols['citations']].strip()}'" if cols["citations"] is not None else ""
        extra = {header[i].strip(): row[i] for i in range(min(len(header), len(row)))
                 if i not in mapped and header[i].strip()}
        try:
            structured = _citation_entries(cell("citations"), where)
            response = _build(text, structured, origin=origin, rid=cell("id") or f"{src.stem}-{n}",
                              question=cell("question") or src.question, model=cell("model") or src.model,
                              extra=extra)
        except IngestError as e:
            result.skipped.append(SkippedRecord(origin, str(e)))
            continue
        result.responses.append(response)
    return result


def _decode(data: bytes) -> str:
    """The file's text as UTF-8 (with or without a byte-order mark) or UTF-16 with a mark."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")  # Excel's "Unicode text" export
    return data.decode("utf-8-sig")


_DELIMITERS = {",": "commas", ";": "semicolons", "\t": "tabs", "|": "pipes"}


def _decode_table(data: bytes) -> tuple[str, str]:
    """A spreadsheet export's text and the encoding's name: UTF-8 (with or without a byte-order
    mark), UTF-16 (with a mark, or without one when every other byte is zero), else Windows-1252,
    which European spreadsheets still write. Raises UnicodeDecodeError when none fits."""
    if data.startswith(b"\xef\xbb\xbf"):
        return data[3:].decode("utf-8"), "UTF-8 with a byte-order mark"
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16"), "UTF-16"
    head = data[:2000]
    if len(head) >= 4 and head.count(0) * 3 > len(head):      # ASCII text in UTF-16 has every other byte zero
        zeros_odd = head[1::2].count(0) > head[0::2].count(0)
        try:
            return data.decode("utf-16-le" if zeros_odd else "utf-16-be"), "UTF-16 (no byte-order mark)"
        except UnicodeDecodeError:
            pass
    try:
        return data.decode("utf-8"), "UTF-8"
    except UnicodeDecodeError as first:
        try:
            return data.decode("cp1252"), "Windows-1252 (not UTF-8)"
        except UnicodeDecodeError:
            raise first from None


def _sniff_delimiter(text: str, mapping: CsvMapping) -> str:
    """The separator of a CSV: the one whose header row has the answer column, else the most
    columns; a tie keeps the comma. Spreadsheets in much of Europe write ';', some exports tab or '|'."""
    first = text[:20000]
    wanted = {mapping.text_col.strip().casefold()}
    if mapping.text_col == CsvMapping().text_col:
        wanted |= {"answer", "text"}
    best, best_key = ",", (False, 0)
    for d in _DELIMITERS:
        try:
            header = next(csv.reader(io.StringIO(first, newline=""), delimiter=d), [])
        except csv.Error:
            continue
        key = (any(h.strip().casefold() in wanted for h in header), len(header))
        if key > best_key:
            best, best_key = d, key
    return best


def _decode_lines(data: bytes) -> tuple[str, dict[int, str]]:
    """JSON Lines decoded line by line: a line that is not UTF-8 becomes empty and is named."""
    text_lines: list[str] = []
    bad: dict[int, str] = {}
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        try:
            text_lines.append(raw.decode("utf-8-sig" if lineno == 1 else "utf-8"))
        except UnicodeDecodeError as e:
            text_lines.append("")
            bad[lineno] = (f"not UTF-8 text (byte 0x{raw[e.start]:02x} at column {e.start + 1}; perhaps Latin-1 "
                           "or Windows-1252): this line is skipped, save the file as UTF-8 to audit it")
    return "\n".join(text_lines), bad


def _unreadable(data: bytes, e: UnicodeDecodeError) -> str:
    line = data.count(b"\n", 0, e.start) + 1
    byte = data[e.start] if e.start < len(data) else 0
    return (f"not UTF-8 text (byte 0x{byte:02x} on line {line}; perhaps Latin-1 or Windows-1252); "
            "save the file as UTF-8 and load it again")


def _load_file(path: Path, name: str, mapping: CsvMapping, question: str | None, model: str | None) -> IngestResult:
    ext = path.suffix.lower()
    try:
        data = path.read_bytes()
    except OSError as e:
        return IngestResult(skipped=[SkippedRecord(name, f"cannot read the file ({e.strerror or e})")])
    encoding = None
    try:
        if ext in _TABLE_EXT:
            text, encoding = _decode_table(data)
        else:
            text = _decode(data)
    except UnicodeDecodeError as e:
        if ext in _JSONL_EXT:   # one bad line costs that line, not the file
            text, bad = _decode_lines(data)
            return _load_jsonl(_Source(text=text, name=name, stem=path.stem, question=question, model=model), bad)
        return IngestResult(skipped=[SkippedRecord(name, _unreadable(data, e))])
    src = _Source(text=text, name=name, stem=path.stem, question=question, model=model)
    if ext in _JSON_EXT:
        return _load_json(src)
    if ext in _JSONL_EXT:
        return _load_jsonl(src)
    if ext in _TABLE_EXT:
        delimiter = mapping.delimiter or ("\t" if ext == ".tsv" else _sniff_delimiter(text, mapping))
        how = "given" if mapping.delimiter else ("the .tsv default" if ext == ".tsv" else "detected")
        result = _load_table(src, mapping, delimiter)
        result.notes.append(f"{name}: read as a table separated by {_DELIMITERS.get(delimiter, repr(delimiter))} "
                            f"({how}), encoding {encoding}")
        return result
    return _load_markdown(src)


def _unique_ids(responses: list[Response]) -> list[Response]:
    """Repeated ids get -2, -3, ... in order of appearance, so every answer can be stored."""
    seen: set[str] = {r.id for r in responses}
    used: set[str] = set()
    out: list[Response] = []
    for r in responses:
        if r.id not in used:
            used.add(r.id)
            out.append(r)
            continue
        k = 2
        while f"{r.id}-{k}" in used or f"{r.id}-{k}" in seen:
            k += 1
        new_id = f"{r.id}-{k}"
        used.add(new_id)
        out.append(dataclasses.replace(r, id=new_id))
    return out


def load_path(path: str | Path, *, mapping: CsvMapping | None = None, question: str | None = None,
              model: str | None = None) -> IngestResult:
    """Answers from one file or a folder (searched recursively, in sorted order).

    In a folder, files with other extensions are reported as skipped; hidden files and folders
    are passed over. A missing path or an unsupported file named directly raises IngestError.
    """
    p = Path(path).expanduser()
    mapping = mapping or CsvMapping()
    if not p.exists():
        raise IngestError(f"no such file or folder: {p}")
    result = IngestResult()
    if p.is_dir():
        files = sorted((f for f in p.rglob("*") if f.is_file()), key=lambda f: f.relative_to(p).as_posix())
        for f in files:
            rel = f.relative_to(p)
            if any(part.startswith(".") for part in rel.parts):
                continue
            name = rel.as_posix()
            if f.suffix.lower() not in SUPPORTED_EXTENSIONS:
                result.skipped.append(SkippedRecord(
                    name, f"not an answer file (extension '{f.suffix or 'none'}'; "
                          f"supported: {' '.join(SUPPORTED_EXTENSIONS)})"))
                continue
            try:
                part = _load_file(f, name, mapping, question, model)
            except IngestError as e:  # a table without the mapped column: skip that file only
                result.skipped.append(SkippedRecord(name, str(e).removeprefix(f"{name} ")))
                continue
            if f.suffix.lower() in _TEXT_EXT:
                # notes and READMEs sit beside answers in folders: a text file that cites nothing is not
                # taken for an answer (named on its own, it is audited as one)
                for r in [r for r in part.responses if not r.citations]:
                    part.responses.remove(r)
                    part.skipped.append(SkippedRecord(name, NOT_AN_ANSWER))
            result.extend(part)
    else:
        if p.suffix.lower() not in SUPPORTED_EXTENSIONS:
            raise IngestError(
                f"cannot read {p.name}: unsupported extension '{p.suffix or 'none'}' "
                f"(supported: {' '.join(SUPPORTED_EXTENSIONS)})"
            )
        result.extend(_load_file(p, p.name, mapping, question, model))
    result.responses = _unique_ids(result.responses)
    return result


_NAME_NOISE = re.compile(r"https?://\S+|www\.\S+|\[\^?[^\]]{0,16}\]|\([^)]*\)")
NAME_WORDS = 5
NAME_MAX_CHARS = 40


def name_from_first_words(text: str, words: int = NAME_WORDS) -> str:
    """A readable id for an answer that has none: its first words, lower case, joined by "-"
    ("Metformin is contraindicated in patients…" -> "metformin-is-contraindicated-in-patients").
    Links, citation markers and punctuation are left out; "" when the text has no words."""
    found = re.findall(r"[^\W_]+", _NAME_NOISE.sub(" ", text[:2000]))
    name = ""
    for word in found[:words]:
        longer = f"{name}-{word.lower()}" if name else word.lower()
        if len(longer) > NAME_MAX_CHARS:
            break
        name = longer
    return name or (found[0].lower()[:NAME_MAX_CHARS] if found else "")


def load_text(text: str, *, question: str | None = None, model: str | None = None, origin: str = "pasted",
              fmt: str = "auto", name_by_words: bool = False) -> IngestResult:
    """Answers pasted as text: a JSON object or array, JSON Lines, Markdown or plain text.

    ``fmt="auto"`` reads text starting with ``{`` as JSON (or JSON Lines), text starting with
    ``[`` as JSON when it parses (a Markdown link can start an answer too), anything else as
    Markdown / plain text. With ``name_by_words`` an answer that brings no id of its own is named
    by its first words (name_from_first_words) instead of "pasted-1".
    """
    if fmt not in _FORMATS:
        raise IngestError(f"unknown format '{fmt}' (use one of: {', '.join(_FORMATS)})")
    text = text.lstrip("\ufeff")
    src = _Source(text=text, name=origin, stem=origin, question=question, model=model)
    stripped = text.strip()
    if fmt == "auto":
        if stripped.startswith("{"):
            fmt = "json"
        elif stripped.startswith("["):
            try:
                json.loads(stripped)
                fmt = "json"
            except json.JSONDecodeError:
                fmt = "markdown"
        else:
            fmt = "markdown"
    if not stripped:
        return IngestResult(skipped=[SkippedRecord(origin, "empty answer")])
    if fmt == "json":
        result = _load_json(src)
    elif fmt == "jsonl":
        result = _load_jsonl(src)
    else:
        result = _load_markdown(src)
    if name_by_words:
        generated = re.compile(rf"{re.escape(origin)}-\d+")
        result.responses = [dataclasses.replace(r, id=name_from_first_words(r.text) or r.id)
                            if generated.fullmatch(r.id) else r for r in result.responses]
    result.responses = _unique_ids(result.responses)
    return result
