"""The quantities of a medical statement, compared exactly with those of its evidence.

`extract_quantities` reads the numbers of one sentence as a clinician would: the value in a
canonical unit ("2.4 g" and "2,400 mg" are both 2400 mg), the rate denominator ("a day",
"in 24 hours", "/kg/day"), the bound ("up to", "at least", "below", a range), and what the
number is about (qualifiers such as "without a prescription", "children", "starting dose",
and the content words of its clause). `compare_quantities` then decides, for every quantity
of a statement, whether the evidence states the same quantity for the same thing
("matched"), states a different one ("contradicted") or does not state it ("missing").

Pure functions over strings, standard library only: no model, nothing else of the engine.

The package by concept: ``model`` (Quantity, QuantityFinding), ``units`` (normalisation, the unit
table, numbers in digits and words, conversions between kinds), ``patterns`` (what is read around
a number), ``qualifiers`` (what a number is attached to, subject stems), ``extract`` (reading one
sentence) and ``compare`` (candidates, relations, messages).
"""
from __future__ import annotations

from .compare import compare_quantities, describe
from .extract import extract_quantities
from .model import CONTRADICTED, MATCHED, MISSING, Quantity, QuantityFinding

__all__ = ["Quantity", "QuantityFinding", "extract_quantities", "compare_quantities",
           "describe", "MATCHED", "CONTRADICTED", "MISSING"]
