"""The built-in judge's wording features and its trained model.

Words and crude stems, the lexical vocabularies (negations, hedges, absolutes, direction words),
the numbers a reader checks, coverage weighted by IDF, the names of the features the logistic
regression reads, and the trained parameters (resources/judges/builtin.json).
"""
from __future__ import annotations

import json
import math
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ...resources import resources_dir


def params_path() -> Path:
    """The trained parameters: ``$SOURCECHECKUP_BUILTIN_PARAMS`` or resources/judges/builtin.json."""
    override = os.environ.get("SOURCECHECKUP_BUILTIN_PARAMS")
    if override:
        return Path(override)
    return resources_dir() / "judges" / "builtin.json"


# ---------------------------------------------------------------------------------------
# Lexical analysis
# ---------------------------------------------------------------------------------------

_WORD = re.compile(r"[a-z0-9]+(?:['\u2019][a-z]+)?")
_STOP = frozenset(
    "a an and are as at be by for from has have had in is it its of on or that the this to was "
    "were with which who will can than then there these those their they been being also into "
    "such other some any more most over under between about after before during while when "
    "where what how do does did so if our we i you your he she his her them one".split())
_NEGATIONS = frozenset(
    "not no never none nor neither without cannot can't doesn't don't didn't isn't aren't "
    "wasn't weren't won't hasn't haven't hadn't shouldn't wouldn't couldn't fail fails failed "
    "lack lacks lacked lacking absence absent unable nothing ineffective insignificant "
    "nonsignificant non-significant unrelated unlikely".split())
_HEDGES = frozenset(
    "may might could possibly possible potential potentially suggest suggests suggested "
    "suggesting likely unclear unknown preliminary hypothesized hypothesised perhaps appears "
    "appear seems seem speculate".split())
_ABSOLUTES = frozenset(
    "all always never every everyone completely cure cures cured guarantee guaranteed "
    "definitely proven proves only entirely".split())
# direction words whose swap turns a supporting passage into a contradicting one
_CONTRASTS = [
    ("increase", "decrease"), ("increase", "reduce"), ("increase", "lower"), ("higher", "lower"),
    ("more", "less"), ("more", "fewer"), ("greater", "lower"), ("greater", "smaller"),
    ("rise", "fall"), ("rise", "decline"), ("improve", "worsen"), ("improve", "impair"),
    ("enhance", "inhibit"), ("enhance", "reduce"), ("promote", "inhibit"), ("promote", "suppress"),
    ("activate", "inhibit"), ("upregulate", "downregulate"), ("effective", "ineffective"),
    ("safe", "unsafe"), ("safe", "harmful"), ("benefit", "harm"), ("positive", "negative"),
    ("high", "low"), ("above", "below"), ("gain", "loss"), ("accelerate", "slow"),
    ("early", "late"), ("common", "rare"), ("strong", "weak"), ("long", "short"),
    ("protect", "risk"), ("prevent", "cause"), ("reduced", "elevated"), ("decrease", "elevated"),
    ("shorter", "longer"), ("younger", "older"), ("men", "women"), ("male", "female"),
    ("children", "adults"), ("before", "after"), ("major", "minor"), ("sufficient", "insufficient"),
]

_NUMBER_WORDS = {
    "two": 2, "three": 3, "four": 4, "five": 5, "six": 6, "seven": 7, "eight": 8, "nine": 9,
    "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13, "fourteen": 14, "fifteen": 15,
    "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19, "twenty": 20, "thirty": 30,
    "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90,
    "hundred": 100, "thousand": 1000, "million": 1_000_000, "billion": 1_000_000_000,
    "half": 0.5, "twice": 2, "double": 2, "triple": 3,
}
_UNIT_ALIASES = {
    "%": "%", "percent": "%", "per cent": "%", "mg": "mg", "g": "g", "kg": "kg", "mcg": "mcg",
    "\u00b5g": "mcg", "ug": "mcg", "ml": "ml", "l": "l", "mmol": "mmol", "mmhg": "mmhg",
    "iu": "iu", "units": "iu", "day": "d", "days": "d", "d": "d", "week": "wk", "weeks": "wk",
    "wk": "wk", "month": "mo", "months": "mo", "year": "y", "years": "y", "yr": "y", "yrs": "y",
    "hour": "h", "hours": "h", "h": "h", "hr": "h", "hrs": "h", "minute": "min", "minutes": "min",
    "min": "min", "mins": "min", "second": "s", "seconds": "s", "sec": "s", "times": "x",
    "fold": "x", "x": "x",
}
# amounts a clinician doses by: "8 g" must be in the evidence as 8 g, not as "8 tablets (4 g)"
_DOSE_UNITS = frozenset({"mg", "g", "kg", "mcg", "ml", "l", "mmol", "iu", "mmhg"})
_UNIT_RE = "|".join(sorted((re.escape(u) for u in _UNIT_ALIASES), key=len, reverse=True))
# a number not glued to a name ("COVID-19", "IL-6", "SARS-CoV-2"), with an optional unit
_NUMBER = re.compile(
    r"(?<![\w./])(?<![a-z]-)(\d{1,3}(?:,\d{3})+|\d+(?:\.\d+)?)(?![\w.]*[a-z]\d)"
    r"(?:\s?-?\s?(" + _UNIT_RE + r")(?![a-z]))?", re.I)
_NUMBER_WORD = re.compile(r"\b(" + "|".join(_NUMBER_WORDS) + r")\b(?:\s+(" + _UNIT_RE + r")\b)?", re.I)


def words(text: str) -> list[str]:
    return _WORD.findall((text or "").lower().replace("\u2019", "'"))


def stem(word: str) -> str:
    """A deliberately crude stem: the first five letters ("increased" ~ "increase")."""
    return word if len(word) <= 5 or word[0].isdigit() else word[:5]


def content_stems(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for w in words(text):
        if w in _STOP or w in _NEGATIONS or len(w) < 2:
            continue
        seen.setdefault(stem(w), None)
    return list(seen)


@dataclass(frozen=True)
class Quantity:
    text: str          # as written: "28.4%"
    value: float
    unit: str          # normalised unit or ""


def quantities(text: str, words_too: bool = True) -> list[Quantity]:
    """Numbers with their units, as a reader would check them against a source."""
    found: list[Quantity] = []
    # "12\u00b74%" (Lancet style) is a decimal point
    text = (text or "").replace("\u00b7", ".")
    for m in _NUMBER.finditer(text):
        raw = m.group(1)
        try:
            value = float(raw.replace(",", ""))
        except ValueError:  # pragma: no cover - the pattern only admits numbers
            continue
        unit = _UNIT_ALIASES.get((m.group(2) or "").lower(), "")
        found.append(Quantity(m.group(0).strip(), value, unit))
    if words_too:
        for m in _NUMBER_WORD.finditer(text):
            unit = _UNIT_ALIASES.get((m.group(2) or "").lower(), "")
            found.append(Quantity(m.group(0).strip(), float(_NUMBER_WORDS[m.group(1).lower()]), unit))
    return found


def _same_number(a: float, b: float, written: str) -> bool:
    if math.isclose(a, b, rel_tol=1e-9, abs_tol=1e-9):
        return True
    # "28%" in a statement is a fair rounding of "28.4%" in the source
    decimals = len(written.split(".")[1].rstrip("%").split()[0]) if "." in written.split()[0] else 0
    return round(b, decimals) == a


def number_check(statement: str, evidence: str) -> tuple[list[str], list[str]]:
    """(numbers of the statement missing from the evidence, numbers present with another unit)."""
    wanted = [q for q in quantities(statement) if q.value != 1.0]
    have = quantities(evidence)
    missing: list[str] = []
    wrong_unit: list[str] = []
    for q in wanted:
        same = [h for h in have if _same_number(q.value, h.value, q.text.replace(",", ""))]
        if not same or (q.unit in _DOSE_UNITS and not any(h.unit == q.unit for h in same)):
            missing.append(q.text)
        elif q.unit and all(h.unit and h.unit != q.unit for h in same):
            wrong_unit.append(q.text)
    return missing, wrong_unit


def _has_any(ws: Sequence[str], vocab: frozenset[str]) -> bool:
    return any(w in vocab for w in ws)


def has_negation(ws: Sequence[str]) -> bool:
    """A negation word in ``ws`` (in text order); "with or without" offers a choice, it negates nothing."""
    for i, w in enumerate(ws):
        if w in _NEGATIONS and not (w == "without" and i >= 2 and ws[i - 2] == "with" and ws[i - 1] == "or"):
            return True
    return False


def contrast_flips(statement_words: set[str], evidence_words: set[str]) -> list[tuple[str, str]]:
    """Direction words the statement uses where the evidence uses the opposite one."""
    s = {stem(w) for w in statement_words}
    e = {stem(w) for w in evidence_words}
    flips = []
    for a, b in _CONTRASTS:
        sa, sb = stem(a), stem(b)
        if sa in s and sb in e and sa not in e:
            flips.append((a, b))
        elif sb in s and sa in e and sb not in e:
            flips.append((b, a))
    return flips


# ---------------------------------------------------------------------------------------
# Features
# ---------------------------------------------------------------------------------------

# only features of the local evidence: a long page must look like the short training sources
EMBEDDING_FEATURES = ("cos_sentence", "cos_passage", "cos_x_coverage")
LEXICAL_FEATURES = (
    "coverage", "coverage_idf", "coverage_sentence_idf",
    "missing_key_terms", "max_missing_idf", "numbers_in_statement", "numbers_missing",
    "numbers_all_present", "unit_mismatch", "negation_statement", "negation_evidence",
    "negation_mismatch", "contrast_flips", "hedge_evidence_only", "absolute_statement",
    "statement_length",
)


class _Idf:
    def __init__(self, table: dict[str, float], default: float, key: float) -> None:
        self.table = table
        self.default = default   # unseen stems are rare, hence informative
        self.key = key           # stems at or above this weight count as key terms

    def __call__(self, s: str) -> float:
        return self.table.get(s, self.default)


def _coverage(stems: list[str], have: set[str], idf: _Idf) -> tuple[float, float]:
    if not stems:
        return 1.0, 1.0
    hit = [s for s in stems if s in have]
    total = sum(idf(s) for s in stems) or 1.0
    return len(hit) / len(stems), sum(idf(s) for s in hit) / total


def _stem_set(text: str) -> set[str]:
    return {stem(w) for w in words(text)}


def _stem_to_word(statement: str, stems: list[str]) -> list[str]:
    by_stem: dict[str, str] = {}
    for w in words(statement):
        by_stem.setdefault(stem(w), w)
    return [by_stem.get(s, s) for s in stems]


# ---------------------------------------------------------------------------------------
# The trained combiner
# ---------------------------------------------------------------------------------------

@dataclass(frozen=True)
class LogisticModel:
    features: tuple[str, ...]
    mean: np.ndarray
    scale: np.ndarray
    coef: np.ndarray
    intercept: float
    threshold: float

    def probability(self, values: dict[str, float]) -> float:
        x = np.array([values[n] for n in self.features], dtype=np.float64)
        z = float(((x - self.mean) / self.scale) @ self.coef + self.intercept)
        return 1.0 / (1.0 + math.exp(-max(-40.0, min(40.0, z))))

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "LogisticModel":
        return cls(tuple(data["features"]), np.asarray(data["mean"], dtype=np.float64),
                   np.asarray(data["scale"], dtype=np.float64), np.asarray(data["coef"], dtype=np.float64),
                   float(data["intercept"]), float(data["threshold"]))


@dataclass(frozen=True)
class BuiltinParams:
    full: LogisticModel
    lexical: LogisticModel
    idf: _Idf
    meta: dict[str, Any]
    # the completeness gate on whole pages (facts.py; scripts/train_facts.py), with and without embeddings
    facts: LogisticModel | None = None
    facts_lexical: LogisticModel | None = None


_params_lock = threading.Lock()
_params_cache: dict[Path, BuiltinParams] = {}


def load_params(path: Path | None = None) -> BuiltinParams:
    path = path or params_path()
    with _params_lock:
        if path in _params_cache:
            return _params_cache[path]
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError as exc:
            raise FileNotFoundError(
                f"the built-in judge's trained parameters are missing at {path}; "
                f"recreate them with scripts/train_builtin.py") from exc
        idf = data["idf"]
        params = BuiltinParams(
            full=LogisticModel.from_json(data["models"]["full"]),
            lexical=LogisticModel.from_json(data["models"]["lexical"]),
            idf=_Idf(dict(idf["table"]), float(idf["default"]), float(idf["key"])),
            meta={k: v for k, v in data.items() if k not in ("models", "idf")},
            facts=_optional_model(data["models"].get("facts")),
            facts_lexical=_optional_model(data["models"].get("facts_lexical")),
        )
        _params_cache[path] = params
        return params


def _optional_model(data: dict[str, Any] | None) -> LogisticModel | None:
    return LogisticModel.from_json(data) if data else None
