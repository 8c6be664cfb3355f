"""The records ingest makes, whatever the format: results, skipped records, errors and limits."""
from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import Any, Mapping

from ..models import Response, SkippedRecord

# key under which citations that are not URLs ("Harrison's, 21st ed.") are kept visible
UNUSABLE_KEY = "unusable_citations"

# one answer's text; above it the record is skipped with this limit named (parsing is linear,
# but a 5 MB "answer" is a pasted document or a runaway model, not an answer to audit)
MAX_ANSWER_CHARS = 200_000


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


def unique_ids(responses: list[Response]) -> list[Response]:
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
