"""The records ingest makes, whatever the format: results, skipped records, errors and limits."""
from __future__ import annotations

import dataclasses
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

from ..models import Response, SkippedRecord

# key under which citations that are not URLs ("Harrison's, 21st ed.") are kept visible
UNUSABLE_KEY = "unusable_citations"

# one answer's text; above it the record is skipped with this limit named (parsing is linear,
# but a 5 MB "answer" is a pasted document or a runaway model, not an answer to audit)
MAX_ANSWER_CHARS = 200_000

# an answer's metadata (unmapped CSV columns, other JSON fields, kept in Response.extra): a table of a
# million columns kept every one for every row (1 GB of memory, a 48 MB database for 3 rows)
MAX_EXTRA_FIELDS = 50
MAX_EXTRA_VALUE_CHARS = 2_000
# column names a message lists before "and N more"
MAX_COLUMNS_NAMED = 20


def capped_extra(extra: Mapping[str, Any]) -> tuple[dict[str, Any], int]:
    """The first MAX_EXTRA_FIELDS metadata fields, each value cut to MAX_EXTRA_VALUE_CHARS, and how many
    fields were left out."""
    kept: dict[str, Any] = {}
    for key, value in extra.items():
        if len(kept) == MAX_EXTRA_FIELDS:
            break
        if isinstance(value, str) and len(value) > MAX_EXTRA_VALUE_CHARS:
            value = value[:MAX_EXTRA_VALUE_CHARS] + "…"
        kept[str(key)[:200]] = value
    return kept, max(0, len(extra) - len(kept))


def extra_note(where: str, left_out: int, answers: int) -> str:
    return (f"{where}: {left_out:,} metadata field(s) left out in {answers:,} answer(s): only the first "
            f"{MAX_EXTRA_FIELDS} unmapped fields of an answer are kept (MAX_EXTRA_FIELDS), each cut to "
            f"{MAX_EXTRA_VALUE_CHARS:,} characters (MAX_EXTRA_VALUE_CHARS)")


def named_columns(header: list[str]) -> str:
    """A table's column names for a message: the first MAX_COLUMNS_NAMED, each cut, then how many more."""
    names = [h.strip()[:40] + ("…" if len(h.strip()) > 40 else "") for h in header[:MAX_COLUMNS_NAMED]]
    more = len(header) - len(names)
    return ", ".join(names) + (f" and {more:,} more" if more > 0 else "")


# a .docx's parts, uncompressed, together: a zip bomb (a 3.7 MB file holding a 1.5 GB document.xml)
# is refused from its directory before any part is inflated (zipfile reads no more than a part declares)
MAX_DOCX_UNCOMPRESSED = 100 * 1024 * 1024


# a byte that is not UTF-8, kept in the decoded text as a lone surrogate (errors="surrogateescape"),
# so that the row or record holding it is skipped, named, and the rest of the file is read
_BAD_BYTE = re.compile("[\udc80-\udcff]")


def bad_byte(text: str, start: int = 0, end: int | None = None) -> str | None:
    """What is wrong with text[start:end] when it holds a byte that is not UTF-8, else None."""
    m = _BAD_BYTE.search(text, start, len(text) if end is None else end)
    if m is None:
        return None
    return (f"not UTF-8 text (byte 0x{ord(m.group(0)) - 0xDC00:02x}; perhaps Latin-1 or Windows-1252): "
            "this record is skipped, save the file as UTF-8 to audit it")


def has_bad_bytes(text: str) -> bool:
    return _BAD_BYTE.search(text) is not None


class IngestError(ValueError):
    """Bad usage (a missing file, an unknown format) or, from parse_answer_record, a bad record."""


@dataclass
class IngestResult:
    responses: list[Response] = field(default_factory=list)
    skipped: list[SkippedRecord] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)   # how inputs were read (a table's separator, encoding)

    def extend(self, other: "IngestResult") -> None:
        self.responses.extend(other.responses)
        self.skipped.extend(other.skipped)
        self.notes.extend(other.notes)


@dataclass(frozen=True)
class InputText:
    """One input: its text, the name used in origins, the stem used in ids, and defaults."""

    text: str
    name: str
    stem: str
    question: str | None
    model: str | None


def kind_of(value: Any) -> str:
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, Mapping):
        return "an object"
    if isinstance(value, (list, tuple)):
        return "a list"
    return f"a {type(value).__name__}"


def unique_ids(responses: list[Response], notes: list[str] | None = None) -> list[Response]:
    """Repeated ids get -2, -3, ... in order of appearance, so every answer can be stored; each renamed
    answer is named (by its origin) in one note appended to ``notes``. Linear: the next free number of
    each id is kept, not searched from 2 again (20,000 answers sharing an id took 30 s)."""
    seen: set[str] = {r.id for r in responses}
    used: set[str] = set()
    next_k: dict[str, int] = {}
    out: list[Response] = []
    renamed: list[str] = []
    for r in responses:
        if r.id not in used:
            used.add(r.id)
            out.append(r)
            continue
        k = next_k.get(r.id, 2)
        while f"{r.id}-{k}" in used or f"{r.id}-{k}" in seen:
            k += 1
        next_k[r.id] = k + 1
        new_id = f"{r.id}-{k}"
        used.add(new_id)
        out.append(dataclasses.replace(r, id=new_id))
        renamed.append(f"{r.origin} '{r.id}' -> '{new_id}'")
    if renamed and notes is not None:
        listed = ", ".join(renamed[:MAX_NAMED_IN_NOTE])
        more = f" and {len(renamed) - MAX_NAMED_IN_NOTE} more" if len(renamed) > MAX_NAMED_IN_NOTE else ""
        notes.append(f"{len(renamed)} answer(s) repeat the id of an earlier answer and are stored under a new "
                     f"one: {listed}{more}")
    return out


# answers a note names before it says "and N more"
MAX_NAMED_IN_NOTE = 5


# ------------------------------------------------------------------ JSON depth
# JSON nesting: a record nested deeper is skipped with this cap named. Python's json parser recurses,
# so 990 levels raise RecursionError (sooner the deeper the caller's stack); no answer, export or
# citation list needs more than a dozen levels.
MAX_JSON_DEPTH = 100
DEPTH_PROBLEM = (f"JSON nested more than {MAX_JSON_DEPTH} levels deep (the cap on nesting, "
                 "MAX_JSON_DEPTH): this record is skipped")


class TooDeep:
    """A JSON value skipped for its nesting, standing in the place it had (an array's element)."""

    problem = DEPTH_PROBLEM


def too_deep(value: Any, cap: int = MAX_JSON_DEPTH) -> bool:
    """Whether a parsed JSON value nests more than ``cap`` levels (walked without recursion)."""
    stack: list[tuple[Any, int]] = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, Mapping):
            children: Any = item.values()
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > cap:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, (Mapping, list)))
    return False


def parse_json(text: str) -> Any:
    """json.loads with the nesting cap: raises IngestError(DEPTH_PROBLEM) past it, JSONDecodeError as json does."""
    try:
        value = json.loads(text)
    except RecursionError:
        raise IngestError(DEPTH_PROBLEM) from None
    if too_deep(value):
        raise IngestError(DEPTH_PROBLEM)
    return value


# a JSON string or one bracket: what finding the end of a value too deep to parse needs to read
_JSON_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|[\[\]{}]', re.S)


def skip_json_value(text: str, pos: int) -> int:
    """The index after the JSON array or object starting at ``pos`` (brackets counted, strings passed
    over), for stepping past a value too deep to parse; len(text) when it never closes."""
    depth = 0
    for m in _JSON_TOKEN.finditer(text, pos):
        token = m.group(0)
        if token in "[{":
            depth += 1
        elif token in "]}":
            depth -= 1
            if depth == 0:
                return m.end()
    return len(text)





_JSON_WS = re.compile(r"[ \t\n\r]*")


def _ws_end(text: str, pos: int) -> int:
    """Where the JSON white space from ``pos`` ends (the pattern matches anywhere, if only nothing)."""
    found = _JSON_WS.match(text, pos)
    assert found is not None
    return found.end()


def array_items(text: str) -> Iterable[tuple[Any, int, str | None]]:
    """The elements of a JSON array, with the line each starts on and what is wrong with one (a byte
    that is not UTF-8; nesting past MAX_JSON_DEPTH, the value then a TooDeep), if anything.
    Raises JSONDecodeError where the array is not JSON."""
    decoder = json.JSONDecoder()
    pos = _ws_end(text, _ws_end(text, 0) + 1)
    line, counted = 1, 0
    while pos < len(text) and text[pos] != "]":
        try:
            value, end = decoder.raw_decode(text, pos)
            problem = DEPTH_PROBLEM if too_deep(value) else bad_byte(text, pos, end)
        except RecursionError:   # too deep for the parser: stepped over, the rest of the array is read
            value, end, problem = TooDeep(), skip_json_value(text, pos), DEPTH_PROBLEM
        line += text.count("\n", counted, pos)
        counted = pos
        yield value, line, problem
        pos = _ws_end(text, end)
        if pos < len(text) and text[pos] == ",":
            pos = _ws_end(text, pos + 1)
