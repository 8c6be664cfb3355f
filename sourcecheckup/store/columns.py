"""How JSON columns are written and read."""
from __future__ import annotations

import json
from typing import Any


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
