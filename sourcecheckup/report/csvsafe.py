"""CSV cells that a spreadsheet opens as text, never as a formula (OWASP "CSV injection").

A cell that begins with '=', '+', '-', '@', a tab or a carriage return is run as a formula
by Excel, LibreOffice and Google Sheets; such a cell gets a leading apostrophe, which those
programs show as text. Plain numbers ("-0.5") are left as they are.
"""
from __future__ import annotations

import csv
import re
from typing import Any, Iterable

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?")


def neutralise(value: Any) -> Any:
    """The value to write into a CSV cell: a string a spreadsheet could run gets a leading "'"."""
    if isinstance(value, str) and value.startswith(FORMULA_STARTS) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


class SafeWriter:
    """csv.writer whose every cell passes through neutralise()."""

    def __init__(self, fh: Any, **kwargs: Any) -> None:
        self._w = csv.writer(fh, **kwargs)

    def writerow(self, row: Iterable[Any]) -> Any:
        return self._w.writerow([neutralise(v) for v in row])

    def writerows(self, rows: Iterable[Iterable[Any]]) -> None:
        for row in rows:
            self.writerow(row)
