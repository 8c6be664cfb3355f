"""The records of the quantity checker: a Quantity read from a sentence, a finding about it."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Quantity:
    text: str                 # as written: "2,400mg", "three times a day", "130/80 mm Hg"
    start: int                # span in the sentence it came from
    end: int
    low: float                # canonical value(s); low == high for a point
    high: float
    unit: str                 # canonical unit: "mg", "ml", "iu", "mmhg", "min", "month", "%", ...
    per: str = ""             # canonical rate denominator: "day", "dose", "week", "kg", "kg/day", ...
    bound: str = "eq"         # "eq", "le", "lt", "ge", "gt", "range", "approx"
    qualifiers: frozenset[str] = frozenset()
    subject: frozenset[str] = frozenset()
    # the diastolic value of a blood-pressure pair (low/high hold the systolic one)
    low2: float | None = None
    high2: float | None = None
    shown_unit: str = ""      # the unit a reader wrote, for messages ("g", "weeks")
    scale: float = 1.0        # canonical units per shown unit (1000 for "g")
    decimals: int = 0         # decimals as written (rounding tolerance); -1 when derived
    per_label: str = ""       # the denominator as a reader wrote it: "24 h", "day", "kg/day"
    noun: str = ""            # for a plain count: the stem of what is counted ("patie")
    local: frozenset[str] = frozenset()  # content stems of its own part of the clause
    derived: bool = False     # worked out by arithmetic ("4 times in 24 hours" as "6 h apart"), not stated

    @property
    def is_pair(self) -> bool:
        return self.low2 is not None


@dataclass(frozen=True)
class QuantityFinding:
    claim: Quantity           # a quantity of the statement
    status: str               # "matched" | "contradicted" | "missing"
    source: Quantity | None   # the evidence quantity it was compared with (None when missing)
    sentence: str             # the evidence sentence that holds `source` ("" when missing)
    message: str              # plain words naming both


MATCHED, CONTRADICTED, MISSING = "matched", "contradicted", "missing"
