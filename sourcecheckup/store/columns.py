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
    return json.loads(text)
