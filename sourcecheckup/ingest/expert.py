"""An answer's expert reference material as written in an input: ``reference_answer`` (text), ``must_have`` and
``nice_to_have`` (lists of statements, OLAPH's MedLFQA fields).

In JSON / JSONL the lists are JSON arrays of strings. In a CSV cell (one column each) a list is written as a
JSON array (``["a", "b"]``), or as statements separated by `` | `` or by line breaks inside the cell.
"""
from __future__ import annotations

import json
import re
from typing import Any, Callable

from ..models import ExpertReference
from .records import IngestError, kind_of, parse_json

EXPERT_KEYS = ("reference_answer", "must_have", "nice_to_have")
_SEPARATOR = re.compile(r"\s+\|\s+|\s*\n\s*")


def statement_list(value: Any, where: str) -> tuple[str, ...]:
    """The statements of one list field (a JSON array, or text as a CSV cell holds it); raises IngestError."""
    if value is None:
        return ()
    if isinstance(value, str):
        text = value.strip()
        if not text:
            return ()
        if text.startswith("["):
            try:
                value = parse_json(text)
            except json.JSONDecodeError as exc:
                raise IngestError(f"{where}: starts with '[' but is not a JSON array ({exc.msg})") from None
        else:
            return tuple(p.strip() for p in _SEPARATOR.split(text) if p.strip())
    if not isinstance(value, (list, tuple)):
        raise IngestError(f"{where} is {kind_of(value)}, expected a list of statements")
    out = []
    for item in value:
        if not isinstance(item, str):
            raise IngestError(f"{where} holds {kind_of(item)}, expected statements as text")
        if item.strip():
            out.append(item.strip())
    return tuple(dict.fromkeys(out))


def expert_reference(get: Callable[[str], Any], where: Callable[[str], str]) -> ExpertReference | None:
    """The expert material from a record (``get(key)`` gives a field's value or None), or None without any."""
    ref = get("reference_answer")
    if ref is not None and not isinstance(ref, (str, int, float)):
        raise IngestError(f"{where('reference_answer')} is {kind_of(ref)}, expected text")
    expert = ExpertReference(reference_answer="" if ref is None else str(ref).strip(),
                             must_have=statement_list(get("must_have"), where("must_have")),
                             nice_to_have=statement_list(get("nice_to_have"), where("nice_to_have")))
    return expert if expert else None
