"""The built-in offline judge: a screening judge, not a reader.

For each statement x source pair it finds the best passages (BM25 and sentence-embedding
similarity with all-MiniLM-L6-v2), then runs the checks a screen can do exactly
(``sourcecheckup.checks``): every quantity of the statement (dose, frequency, duration,
threshold, rate) is compared with what the source states for the same thing, after unit
conversion; an instruction ("avoid", "do not", "take in the morning") is compared as polarity;
an absolute claim ("completely safe", "proven") needs a source that says it as firmly. A failed
check decides the label ("contradicted: statement 2,400 mg/24 h; source 1,200 mg/24 h ...").
What the checks cannot decide is scored by a logistic regression over wording features,
trained on labelled health claims (scripts/train_builtin.py); scores near its threshold are
flagged "review_first". Without the embedding model it still works on the lexical features
alone and says so in ``model_version`` ("builtin-3/lexical").
"""
from __future__ import annotations

import asyncio
import json
import math
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .. import embeddings
from ..evidence import quote_in_source, rank_passages, source_sentences
from ..models import CONTRADICTED, REVIEW_FIRST, Label, Verdict, contradicted_rationale
from ..checks import attribution, overclaims, polarity, quantities as qty
from ..resources import resources_dir
from ..evidence import SourceText
from .base import BaseJudge, JudgeSpecError

JUDGE_ID = "builtin"
# 2: a missing dose ("8 g") rules out support; 3: exact checks of quantities, instructions and absolute
# claims decide the label, the trained score only ranks what they cannot decide
PROMPT_VERSION = "builtin-3"
MODEL_FULL = f"{PROMPT_VERSION}/{embeddings.MODEL_NAME}"
MODEL_LEXICAL = f"{PROMPT_VERSION}/lexical"

# sources longer than this many sentences are embedded only around their BM25 best passages
MAX_EMBEDDED_SENTENCES = 400
BM25_CANDIDATES = 20
MAX_QUOTE_CHARS = 600
# pairs handed to one worker-thread call; smaller batches let cancellation land sooner
BATCH_PAIRS = 64
# Rules a screen applies on top of the trained score (measured on the train files: they cost
# nothing there and catch the errors a reader would call unforgivable):
# a precise figure (a decimal or a percentage) of the statement missing from the evidence, and
# a negation flip against a closest sentence that otherwise covers the statement's key terms.
NEGATION_VETO_COVERAGE = 0.5
# trained scores this close to the threshold are marked "review first": the screen is unsure of them
REVIEW_BAND = 0.12
# how close the statement's best sentence must be for matched figures to count as corroboration
CORROBORATED_SIMILARITY = 0.6
# sentences of the best passages that the exact checks read (besides every sentence with one of the
# statement's figures)
CHECK_PASSAGES = 3
CHECK_SENTENCES = 6


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


@dataclass
class PairAnalysis:
    """Everything the judge found for one pair: features plus what the rationale cites."""

    features: dict[str, float]
    passage: str
    quote: str
    coverage: float
    missing_numbers: list[str]
    wrong_units: list[str]
    negation_mismatch: str          # "" or which side is negated
    flips: list[tuple[str, str]]
    missing_terms: list[str]
    similarity: float | None
    veto: str = ""                  # why support is ruled out whatever the score, or ""
    checks: "Checks | None" = None  # the exact checks of quantities, instructions and absolute claims


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


@dataclass
class _Prepared:
    """Per-source data computed once and cached on the SourceText."""

    sentences: list[str]
    passage_sentences: list[list[int]]     # source.passages[i] -> indices into sentences
    sentence_figures: list[frozenset[str]]  # the digits each sentence holds ("2400", "28.4")


def _prepare_source(source: SourceText) -> _Prepared:
    prepared = source.cache.get("builtin")
    if prepared is not None:
        return prepared
    sentences = source_sentences(source.text)
    mapping: list[list[int]] = []
    start = 0
    for passage in source.passages:
        ids: list[int] = []
        j = start
        # passages are windows over the same sentences in order; search a short way ahead
        while j < len(sentences) and j < start + 12:
            if sentences[j] in passage:
                ids.append(j)
            elif ids:
                break
            j += 1
        if ids:
            start = ids[0]
        mapping.append(ids)
    figures = [frozenset(d.replace(",", "") for d in _DIGITS.findall(t)) for t in sentences]
    prepared = _Prepared(sentences, mapping, figures)
    source.cache["builtin"] = prepared
    return prepared


def _stem_to_word(statement: str, stems: list[str]) -> list[str]:
    by_stem: dict[str, str] = {}
    for w in words(statement):
        by_stem.setdefault(stem(w), w)
    return [by_stem.get(s, s) for s in stems]


@dataclass(frozen=True)
class CheckOutcome:
    """What one exact check found for a pair."""

    kind: str          # "quantity" | "instruction" | "overclaim" | "attribution"
    status: str        # "matched"/"agrees" (passed) | "contradicted" | "missing" | "unbacked" (failed)
    message: str       # plain words naming both sides
    sentence: str      # the source sentence it rests on ("" when none)
    strict: bool = True  # whether a "missing" result decides: a dose, a rate, a percentage, a decimal

    @property
    def failed(self) -> bool:
        return self.status in ("contradicted", "missing", "unbacked")

    @property
    def decides(self) -> bool:
        return self.failed and (self.status != "missing" or self.strict)


@dataclass(frozen=True)
class Checks:
    """The exact checks of one pair, in the order they decide: quantities, instructions, absolutes."""

    outcomes: tuple[CheckOutcome, ...]

    @property
    def decisive(self) -> CheckOutcome | None:
        """The first failed check: it rules support out, whatever the trained score says."""
        order = {"contradicted": 0, "missing": 1, "unbacked": 2}
        failed = [o for o in self.outcomes if o.decides]
        return min(failed, key=lambda o: order[o.status]) if failed else None

    @property
    def passed(self) -> list[CheckOutcome]:
        return [o for o in self.outcomes if not o.failed]

    @property
    def unsure(self) -> list[CheckOutcome]:
        """Failed checks that do not decide (a plain figure the source does not repeat)."""
        return [o for o in self.outcomes if o.failed and not o.decides]

    @property
    def corroborate(self) -> bool:
        """Two or more exact checks passed and none failed: two figures found as stated, or a figure
        and the same instruction, or the credited body and a figure..."""
        return len(self.outcomes) >= 2 and not any(o.failed for o in self.outcomes)


_DIGITS = re.compile(r"\d+(?:[.,\u00b7]\d+)?")


def check_sentences(statement: str, prep: "_Prepared", passages: Sequence[int], near: Sequence[int]) -> list[str]:
    """The source sentences the exact checks read: the best passages, the sentences nearest the
    statement, and every sentence that holds one of the statement's figures (a dose may sit
    anywhere on a page), in document order."""
    ids: set[int] = set(near)
    for p in passages:
        ids.update(prep.passage_sentences[p])
    figures = {d.replace(",", "") for d in _DIGITS.findall(statement)}
    if figures:
        for i, digits in enumerate(prep.sentence_figures):
            if figures & digits:
                ids.add(i)
    return [prep.sentences[i] for i in sorted(ids)]


# figures whose absence from the source rules support out: what a clinician doses or measures by, and
# any figure written with decimals or a duration in digits. A head count, an age or a duration in words that the source does not
# repeat ("over a month" against "37 days") is left to the trained score; a different value still decides.
STRICT_UNITS = frozenset({"mg", "ml", "iu", "mmhg", "mmol/l", "mg/l", "mmol/mol", "kg/m2", "meq/l", "iu/l",
                          "%", "pp", "rate", "x", "tablet", "puff", "drop", "spray", "sachet", "patch"})


def _strict_figure(q: "qty.Quantity") -> bool:
    # a duration written in digits ("every 3 months", "for 4 weeks") is a clinical figure; in words
    # ("over a month", "two to three months") it is usually a reporter's rounding
    timed = q.unit in ("min", "month") and any(c.isdigit() for c in q.text)
    return (q.unit in STRICT_UNITS or q.decimals > 0 or timed
            or q.per in ("day", "week", "dose", "kg", "kg/day", "interval"))


def run_checks(statement: str, sentences: Sequence[str], source: SourceText | None = None) -> Checks:
    """Quantities compared exactly, instructions as polarity, absolute claims against hedges, and
    the body or study the statement credits named anywhere in the source."""
    outcomes: list[CheckOutcome] = []
    if source is not None:
        credit = attribution.compare_attribution(statement, source.text, source.title)
        if credit is not None:
            outcomes.append(CheckOutcome("attribution", credit.status, credit.message, ""))
    if sentences:
        for f in qty.compare_quantities(statement, sentences):
            outcomes.append(CheckOutcome("quantity", f.status, f.message, f.sentence, _strict_figure(f.claim)))
        found = polarity.compare_polarity(statement, sentences)
        if found is not None:
            outcomes.append(CheckOutcome("instruction", found.status, found.message, found.sentence))
        found = overclaims.compare_overclaim(statement, sentences)
        if found is not None:
            outcomes.append(CheckOutcome("overclaim", found.status, found.message, found.sentence))
    return Checks(tuple(outcomes))


def analyse_pair(statement: str, source: SourceText, idf: _Idf,
                 statement_vector: np.ndarray | None = None,
                 sentence_vectors: dict[int, np.ndarray] | None = None) -> PairAnalysis:
    """Features for one pair. With vectors, embedding similarity helps choose the passage."""
    prep = _prepare_source(source)
    ranked = rank_passages(statement, source, k=len(source.passages))
    bm25 = {i: s for i, s in ranked}
    top_bm25 = max(bm25.values(), default=0.0)
    bm25_norm = {i: (s / top_bm25 if top_bm25 > 0 else 0.0) for i, s in bm25.items()}
    st_stems = content_stems(statement)

    use_vectors = statement_vector is not None and sentence_vectors is not None and bool(sentence_vectors)
    sent_cos: dict[int, float] = {}
    pass_cos: dict[int, float] = {}
    if use_vectors:
        ids = sorted(sentence_vectors)  # type: ignore[arg-type]
        matrix = np.stack([sentence_vectors[i] for i in ids])  # type: ignore[index]
        sims = matrix @ statement_vector
        sent_cos = {i: float(c) for i, c in zip(ids, sims)}
        for p, members in enumerate(prep.passage_sentences):
            if members and all(m in sentence_vectors for m in members):  # type: ignore[operator]
                v = np.sum([sentence_vectors[m] for m in members], axis=0)  # type: ignore[index]
                pass_cos[p] = float(v @ statement_vector / (np.linalg.norm(v) or 1.0))

    # choose the best passage: embedding similarity, nudged by BM25 (and BM25 alone without vectors)
    def passage_score(p: int) -> float:
        if use_vectors:
            return pass_cos.get(p, -1.0) + 0.15 * bm25_norm.get(p, 0.0)
        s_cov = _coverage(st_stems, _stem_set(source.passages[p]), idf)[1]
        return bm25_norm.get(p, 0.0) + s_cov
    candidates = range(len(source.passages))
    if not use_vectors:
        candidates = [i for i, _ in ranked[:BM25_CANDIDATES]]
    best_p = max(candidates, key=lambda p: (passage_score(p), -p))
    passage = source.passages[best_p]

    # the quote: the best sentence overall by similarity, else the best sentence in the passage
    members = prep.passage_sentences[best_p]
    if use_vectors:
        best_s = max(sent_cos, key=lambda i: (sent_cos[i], -i))
        cos_sentence = sent_cos[best_s]
    else:
        pool = members or list(range(len(prep.sentences)))
        best_s = max(pool, key=lambda i: (_coverage(st_stems, _stem_set(prep.sentences[i]), idf)[1], -i)) \
            if pool else -1
    quote = prep.sentences[best_s] if best_s >= 0 else passage
    evidence = passage if (best_s < 0 or best_s in members) else f"{passage} {prep.sentences[best_s]}"
    if use_vectors:
        near = sorted(sent_cos, key=lambda i: (-sent_cos[i], i))[:CHECK_SENTENCES]
    else:
        near = [best_s] if best_s >= 0 else []
    top_passages = [best_p] + [i for i, _ in ranked[:CHECK_PASSAGES] if i != best_p]
    checks = run_checks(statement, check_sentences(statement, prep, top_passages, near), source)

    ev_words = set(words(evidence))
    ev_stems = {stem(w) for w in ev_words}
    cov, cov_idf = _coverage(st_stems, ev_stems, idf)
    cov_sentence_idf = _coverage(st_stems, _stem_set(quote), idf)[1]
    missing_key = _stem_to_word(statement, [s for s in st_stems if s not in ev_stems and idf(s) >= idf.key])
    max_missing = max((idf(s) for s in st_stems if s not in ev_stems), default=0.0)

    wanted_numbers = [q for q in quantities(statement) if q.value != 1.0]
    missing_numbers, wrong_units = number_check(statement, evidence)
    st_words = words(statement)
    neg_s = _has_any(st_words, _NEGATIONS)
    neg_e = _has_any(list(ev_words), _NEGATIONS)
    flips = contrast_flips(set(st_words), ev_words)
    hedge_e_only = _has_any(list(ev_words), _HEDGES) and not _has_any(st_words, _HEDGES)

    f: dict[str, float] = {
        "coverage": cov,
        "coverage_idf": cov_idf,
        "coverage_sentence_idf": cov_sentence_idf,
        "missing_key_terms": float(min(len(missing_key), 5)),
        "max_missing_idf": max_missing,
        "numbers_in_statement": float(bool(wanted_numbers)),
        "numbers_missing": float(min(len(missing_numbers), 3)),
        "numbers_all_present": float(bool(wanted_numbers) and not missing_numbers),
        "unit_mismatch": float(bool(wrong_units)),
        "negation_statement": float(neg_s),
        "negation_evidence": float(neg_e),
        "negation_mismatch": float(neg_s != neg_e),
        "contrast_flips": float(min(len(flips), 3)),
        "hedge_evidence_only": float(hedge_e_only),
        "absolute_statement": float(_has_any(st_words, _ABSOLUTES)),
        "statement_length": math.log1p(len(st_stems)),
    }
    similarity = None
    if use_vectors:
        similarity = cos_sentence
        f.update({
            "cos_sentence": cos_sentence,
            "cos_passage": pass_cos.get(best_p, cos_sentence),
            "cos_x_coverage": cos_sentence * cov_idf,
        })
    negation = ""
    if neg_s != neg_e:
        negation = "statement" if neg_s else "passage"
    veto = ""
    # a negation flip only rules support out when the whole evidence, not just its closest sentence,
    # flips, and no exact check found the same instruction or the same figures ("Avoid X" is "Do not take X")
    passed = {o.kind for o in checks.passed}
    if (cov_idf >= NEGATION_VETO_COVERAGE and neg_e != neg_s and _has_any(words(quote), _NEGATIONS) != neg_s
            and not passed & {"instruction", "quantity", "overclaim"}):
        veto = ("it says the same thing without the statement's negation" if neg_s
                else "its closest sentence negates what the statement says")
    return PairAnalysis(f, passage, quote, cov, missing_numbers, wrong_units, negation, flips,
                        missing_key, similarity, veto, checks)


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
        )
        _params_cache[path] = params
        return params


# ---------------------------------------------------------------------------------------
# The judge
# ---------------------------------------------------------------------------------------

def _pct(x: float) -> str:
    return f"{round(100 * x)}%"


def _quote_text(sentence: str) -> str:
    sentence = sentence.strip()
    if len(sentence) <= MAX_QUOTE_CHARS:
        return sentence
    cut = sentence[:MAX_QUOTE_CHARS]
    return cut[: cut.rfind(" ")] if " " in cut else cut


def rationale(a: PairAnalysis, supported: bool) -> str:
    """One plain sentence that never contradicts the label.

    A failed exact check decides the label and is the whole rationale ("contradicted: statement
    2,400 mg/24 h; source 1,200 mg/24 h without a prescription"). Otherwise: how well the best
    passage matches, the checks that passed, and for an unsupported verdict the main problems.
    """
    decisive = a.checks.decisive if a.checks else None
    if decisive is not None:
        if decisive.status == "contradicted":
            return contradicted_rationale(decisive.message.rstrip(".") + ".")
        return "not supported: " + decisive.message.rstrip(".") + "."
    head = f"Best passage shares {_pct(a.coverage)} of the statement's key terms"
    if a.similarity is not None:
        head += f" (similarity {a.similarity:.2f})"
    passed = _passed_checks(a)
    unsure = [o for o in a.checks.unsure] if a.checks else []
    figures = [o.message.split(":")[0].removeprefix("statement ") for o in unsure if o.kind == "quantity"]
    if supported:
        tail = f"; {passed}" if passed else ""
        if figures:
            # a plain figure (a count, an age, a duration) the source words another way: left to a reader
            return head + tail + f"; review first: the source does not repeat {', '.join(figures[:2])} as written."
        return head + tail + "; no inconsistency found."
    problems: list[str] = [a.veto] if a.veto else []
    if figures:
        problems.append(f"{', '.join(figures[:2])} {'is' if len(figures) == 1 else 'are'} not in the source as written")
    if a.wrong_units:
        problems.append(f"{', '.join(a.wrong_units[:2])} appears with a different unit")
    if a.negation_mismatch and not a.veto.startswith("it"):
        other = "passage" if a.negation_mismatch == "statement" else "statement"
        problems.append(f"the {a.negation_mismatch} is negated but the {other} is not")
    if a.flips:
        s, e = a.flips[0]
        problems.append(f"the statement says '{s}' where the passage says '{e}'")
    if a.missing_terms:
        terms = ", ".join(f"'{t}'" for t in a.missing_terms[:3])
        problems.append(f"key term{'s' if len(a.missing_terms) > 1 else ''} {terms} "
                        f"{'are' if len(a.missing_terms) > 1 else 'is'} missing from it")
    if problems:
        return head + "; " + "; ".join(problems[:2]) + "."
    return head + "; the match is too weak to count as support."


def _passed_checks(a: PairAnalysis) -> str:
    """The exact checks that passed, in a few words ("figures 20 mg/day, 4 weeks found")."""
    if a.checks is None:
        return ""
    figures = [o for o in a.checks.passed if o.kind == "quantity"]
    parts: list[str] = []
    if figures:
        parts.append(f"figure{'s' if len(figures) > 1 else ''} checked in the source")
    if any(o.kind == "instruction" for o in a.checks.passed):
        parts.append("the source gives the same instruction")
    if any(o.kind == "overclaim" for o in a.checks.passed):
        parts.append("the source states it as firmly")
    return ", ".join(parts)


class BuiltinJudge(BaseJudge):
    """Offline screening judge; see the module docstring for the method."""

    id = JUDGE_ID
    prompt_version = PROMPT_VERSION
    concurrency = 2
    per_source_batching = True   # the pipeline hands over all statements of a source at once: one embedding call

    def __init__(self, threshold: float | None = None, use_embeddings: bool | None = None,
                 params: BuiltinParams | None = None) -> None:
        self.params = params or load_params()
        if use_embeddings is None:
            use_embeddings = embeddings.available()
        self.use_embeddings = use_embeddings
        self._threshold = threshold

    @property
    def model(self) -> LogisticModel:
        return self.params.full if self.use_embeddings else self.params.lexical

    @property
    def threshold(self) -> float:
        return self._threshold if self._threshold is not None else self.model.threshold

    @property
    def model_version(self) -> str:
        return MODEL_FULL if self.use_embeddings else MODEL_LEXICAL

    # -- the synchronous core ------------------------------------------------------------
    def analyse_pairs(self, pairs: Sequence[tuple[str, SourceText]]) -> list[PairAnalysis | str]:
        """A PairAnalysis per pair, or the reason it cannot be judged. Embeds in few calls."""
        results: list[PairAnalysis | str] = []
        todo: list[int] = []
        for k, (statement, source) in enumerate(pairs):
            if not (source.text or "").strip() or not source.passages:
                results.append("no text to judge")
            elif not (statement or "").strip():
                results.append("empty statement")
            else:
                results.append("")
                todo.append(k)
        statement_vecs: dict[str, np.ndarray] = {}
        sentence_vecs: dict[int, dict[int, np.ndarray]] = {}
        if self.use_embeddings and todo:
            statement_vecs, sentence_vecs = self._embed([pairs[k] for k in todo])
        for k in todo:
            statement, source = pairs[k]
            results[k] = analyse_pair(statement, source, self.params.idf,
                                      statement_vecs.get(statement), sentence_vecs.get(id(source)))
        return results

    def _embed(self, pairs: Sequence[tuple[str, SourceText]]
               ) -> tuple[dict[str, np.ndarray], dict[int, dict[int, np.ndarray]]]:
        """One model call for all statements and one for all source sentences not cached yet."""
        wanted: dict[int, tuple[SourceText, set[int]]] = {}
        for statement, source in pairs:
            prep = _prepare_source(source)
            entry = wanted.setdefault(id(source), (source, set()))
            if len(prep.sentences) <= MAX_EMBEDDED_SENTENCES:
                entry[1].update(range(len(prep.sentences)))
            else:
                for p, _ in rank_passages(statement, source, k=BM25_CANDIDATES):
                    entry[1].update(prep.passage_sentences[p])
        texts: list[str] = []
        slots: list[tuple[SourceText, int]] = []
        for source, ids in wanted.values():
            cached: dict[int, np.ndarray] = source.cache.setdefault("builtin_vectors", {})
            prep = _prepare_source(source)
            for i in sorted(ids - cached.keys()):
                texts.append(prep.sentences[i])
                slots.append((source, i))
        statements = list(dict.fromkeys(s for s, _ in pairs))
        vectors = embeddings.embed(statements + texts)
        statement_vecs = {s: vectors[i] for i, s in enumerate(statements)}
        for (source, i), v in zip(slots, vectors[len(statements):]):
            source.cache["builtin_vectors"][i] = v
        sentence_vecs = {key: {i: source.cache["builtin_vectors"][i] for i in ids}
                         for key, (source, ids) in wanted.items()}
        return statement_vecs, sentence_vecs

    def verdict(self, statement: str, source: SourceText, analysis: PairAnalysis | str) -> Verdict:
        if isinstance(analysis, str):
            return Verdict.error(self.id, analysis, prompt_version=self.prompt_version,
                                 model_version=self.model_version)
        a = analysis
        score = self.model.probability(a.features)
        decisive = a.checks.decisive if a.checks else None
        flags: list[str] = []
        quote = a.quote
        if decisive is not None:
            # an exact check decides: the trained score never overrides a contradicted or missing figure
            supported = False
            score = min(score, self.threshold) * 0.5
            quote = decisive.sentence or a.quote
            if decisive.status == "contradicted":
                flags.append(CONTRADICTED)
        else:
            if a.checks is not None and a.checks.corroborate and not a.flips \
                    and (a.similarity is None or a.similarity >= CORROBORATED_SIMILARITY):
                # two or more exact checks passed (figures found as stated, the same instruction, the
                # credited body): strong evidence the wording features cannot see; still "review first"
                # when it is all there is
                score = max(score, (score + 1.0) / 2.0)
            uncertain = abs(score - self.threshold) < REVIEW_BAND
            if a.veto:
                score = min(score, self.threshold) * 0.5
            supported = score >= self.threshold and not a.veto
            if uncertain or a.veto or (supported and a.checks is not None and a.checks.unsure):
                flags.append(REVIEW_FIRST)
            matched = [o.sentence for o in a.checks.passed if o.sentence] if a.checks else []
            if supported and matched:
                quote = matched[0]   # the sentence where the statement's figures or instruction were found
        quote = _quote_text(quote)
        return Verdict(
            label=Label.SUPPORTED if supported else Label.NOT_SUPPORTED,
            score=round(score, 4),
            rationale=rationale(a, supported),
            quote=quote,
            quote_found=quote_in_source(quote, source.text),
            judge_id=self.id,
            prompt_version=self.prompt_version,
            model_version=self.model_version,
            flags=tuple(flags),
        )

    def score_pairs(self, pairs: Sequence[tuple[str, SourceText]]) -> list[Verdict]:
        """Judge many pairs at once; the embedding work is batched into few model calls."""
        analyses = self.analyse_pairs(pairs)
        out: list[Verdict] = []
        for (statement, source), a in zip(pairs, analyses):
            try:
                out.append(self.verdict(statement, source, a))
            except Exception as exc:  # one odd pair must not sink the batch
                out.append(Verdict.error(self.id, f"{type(exc).__name__}: {exc}",
                                         prompt_version=self.prompt_version,
                                         model_version=self.model_version))
        return out

    # -- the async interface -------------------------------------------------------------
    async def verify(self, statement: str, source: SourceText) -> Verdict:
        return (await asyncio.to_thread(self.score_pairs, [(statement, source)]))[0]

    async def verify_many(self, pairs: Sequence[tuple[str, SourceText]]) -> list[Verdict]:
        out: list[Verdict] = []
        for start in range(0, len(pairs), BATCH_PAIRS):
            out.extend(await asyncio.to_thread(self.score_pairs, list(pairs[start:start + BATCH_PAIRS])))
        return out


def from_spec(arg: str, **options: Any) -> BuiltinJudge:
    """``builtin`` or ``builtin:0.6`` (a decision threshold on the support probability).

    Options: ``threshold`` (float), ``use_embeddings`` (bool; default: when the model is installed).
    """
    threshold = options.pop("threshold", None)
    use_embeddings = options.pop("use_embeddings", None)
    arg = (arg or "").strip()
    if arg:
        try:
            threshold = float(arg)
        except ValueError:
            raise JudgeSpecError(
                f"builtin judge: '{arg}' is not a threshold; use e.g. 'builtin' or 'builtin:0.6'") from None
    if threshold is not None and not 0.0 <= float(threshold) <= 1.0:
        raise JudgeSpecError(f"builtin judge: threshold {threshold} must lie between 0 and 1")
    return BuiltinJudge(threshold=None if threshold is None else float(threshold),
                        use_embeddings=use_embeddings)
