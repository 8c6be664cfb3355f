"""How JSON columns are written and read, and a verdict's stored label."""
from __future__ import annotations

import json
from typing import Any

from ..models import Label

UNREADABLE_ROW = "unreadable_row"   # the flag of a verdict row whose label SourceCheckup never writes


def stored_label(value: Any, rationale: str | None, flags: tuple[str, ...]) -> tuple[Label, str, tuple[str, ...]]:
    """A verdict row's label, rationale and flags as read; a label no SourceCheckup writes (a damaged or
    edited database) reads as a judge error flagged UNREADABLE_ROW whose rationale says so, never a crash."""
    try:
        return Label(value), rationale or "", flags
    except ValueError:
        return (Label.JUDGE_ERROR, f"unreadable verdict row: its label {str(value)[:40]!r} is not one SourceCheckup "
                f"writes ({', '.join(x.value for x in Label)}); counted as a judge error", (*flags, UNREADABLE_ROW))


def dump_json(value: Any) -> str:
    """How JSON columns are written: stable key order, text kept as written."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def load_json(text: str | None, default: Any) -> Any:
    """A JSON column, or ``default`` when it is empty."""
    if not text:
        return default
    if text == "[]":            # the common empty list and object, read a million times in a large run's report
        return []
    if text == "{}":
        return {}
    return json.loads(text)
