"""The engine is importable and usable without Qt: only ui/ may import PySide6."""
from __future__ import annotations

import re
from pathlib import Path

ENGINE = Path(__file__).resolve().parent.parent / "sourcecheckup"


def test_no_module_of_the_engine_imports_qt():
    offenders = [str(p.relative_to(ENGINE)) for p in ENGINE.rglob("*.py")
                 if re.search(r"^\s*(from|import)\s+(PySide6|PyQt\d|shiboken6)", p.read_text(), re.M)]
    assert offenders == []
