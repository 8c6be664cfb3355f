"""Agreement between judges and human reviewers: percent agreement, Cohen's kappa, confusion tables.

A rater's label on a pair is 'supported' or 'not_supported'. Judge errors and a reviewer's
'unsure' are not labels: the pair is left out of that rater's comparisons (and counted).
The reviewers' majority is :func:`sourcecheckup.review.consensus` (ties give no majority); a reviewer is
compared with the majority of the *other* reviewers only (leave-one-out), never with a majority that holds
their own vote. Reviewers and judges are also compared with the judges' consensus label, the one the
headline figures use (the run's ``--consensus`` rule).
Agreement, a proportion, has the Clopper–Pearson exact interval (:func:`sourcecheckup.metrics.intervals.clopper_pearson`:
at least 95% coverage at every n, where Wilson's dips near 0 and 100% on few pairs). Kappa is estimated only
on at least :data:`MIN_KAPPA_PAIRS` compared pairs ("too few pairs to estimate" below: on three pairs a
bootstrap of kappa is a handful of values and its interval means nothing); its interval is the hull of a seeded
percentile bootstrap over the compared pairs and the exact interval of agreement carried to kappa at the
observed chance agreement, (lo - pe) / (1 - pe): the bootstrap alone collapses to a point when every pair agrees.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import Any, Mapping, Sequence

import numpy as np

from ..metrics import BOOTSTRAP_RESAMPLES
from ..metrics.intervals import clopper_pearson
from ..models import Label
from ..store import RunData, Store
from .labels import Review, ReviewLabel, consensus, reviews

LABELS = (Label.SUPPORTED.value, Label.NOT_SUPPORTED.value)
MAJORITY = "reviewers' majority"
OTHERS_MAJORITY = "other reviewers' majority"      # leave-one-out: the reviewer's own vote is not in it
KAPPA_CI_METHOD = "bootstrap_exact_hull"
AGREEMENT_CI_METHOD = "clopper_pearson"
MIN_KAPPA_PAIRS = 10      # fewer compared pairs and kappa is "too few pairs to estimate" (app, CLI, report)
CI_DESCRIPTIONS = {
    AGREEMENT_CI_METHOD: "Clopper–Pearson exact interval of the share of pairs both raters labelled alike",
    KAPPA_CI_METHOD: ("hull of a seeded percentile bootstrap over the compared pairs and the exact interval of "
                      f"agreement carried to kappa at the observed chance agreement; kappa is not estimated on "
                      f"fewer than {MIN_KAPPA_PAIRS} pairs"),
}


def kappa_words(value: float | None, n: int) -> str:
    """Kappa as every screen and report says it: "0.40", "too few pairs to estimate (3 < 10)", or
    "undefined (one label throughout)"."""
    if not n:
        return "n/a (no pairs compared)"
    if n < MIN_KAPPA_PAIRS:
        return f"too few pairs to estimate ({n} < {MIN_KAPPA_PAIRS})"
    return "undefined (one label throughout)" if value is None else f"{value:.2f}"


def consensus_name(rule: str) -> str:
    """The judges' consensus as a rater: "judges' consensus (majority)"."""
    return f"judges' consensus ({rule})"
Pair = tuple[int, str]          # (statement_pk, url)


@dataclass(frozen=True)
class Estimate:
    value: float | None
    ci95: tuple[float | None, float | None]

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "ci95": list(self.ci95)}


@dataclass(frozen=True)
class PairwiseAgreement:
    rater_a: str
    rater_b: str
    kind: str                         # judge-reviewer, judge-majority, reviewer-majority, judge-judge, reviewer-reviewer
    n: int                            # pairs both raters labelled
    agreement: Estimate
    kappa: Estimate
    confusion: dict[str, dict[str, int]]   # rater_a label -> rater_b label -> count

    def as_dict(self) -> dict[str, Any]:
        return {"rater_a": self.rater_a, "rater_b": self.rater_b, "kind": self.kind, "n": self.n,
                "agreement": {**self.agreement.as_dict(), "ci_method": AGREEMENT_CI_METHOD},
                "kappa": {**self.kappa.as_dict(), "ci_method": KAPPA_CI_METHOD, "min_pairs": MIN_KAPPA_PAIRS},
                "confusion": self.confusion}


def percent_agreement(a: Sequence[str], b: Sequence[str]) -> float | None:
    if len(a) != len(b):
        raise ValueError("both raters must label the same pairs")
    return sum(x == y for x, y in zip(a, b)) / len(a) if a else None


def cohen_kappa(a: Sequence[str], b: Sequence[str], labels: Sequence[str] = LABELS) -> float | None:
    """Cohen's kappa; None when chance agreement is 1 (both raters used one same label throughout)."""
    if len(a) != len(b):
        raise ValueError("both raters must label the same pairs")
    if not a:
        return None
    k = _kappas(_codes(a, b, labels)[None, :], len(labels))[0]
    return None if np.isnan(k) else float(k)


def _codes(a: Sequence[str], b: Sequence[str], labels: Sequence[str]) -> np.ndarray:
    index = {lab: i for i, lab in enumerate(labels)}
    return np.array([index[x] * len(labels) + index[y] for x, y in zip(a, b)], dtype=np.int64)


def _cells(codes: np.ndarray, k: int) -> np.ndarray:
    """(R, n) cell codes -> (R, k, k) counts."""
    counts = np.stack([(codes == c).sum(axis=1) for c in range(k * k)], axis=1)
    return counts.reshape(codes.shape[0], k, k).astype(np.float64)


def _kappas(codes: np.ndarray, k: int) -> np.ndarray:
    cells = _cells(codes, k)
    n = cells.sum(axis=(1, 2))
    po = np.trace(cells, axis1=1, axis2=2) / n
    pe = (cells.sum(axis=2) * cells.sum(axis=1)).sum(axis=1) / (n * n)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where(np.isclose(pe, 1.0), np.nan, (po - pe) / (1.0 - pe))


def compare_raters(a: Sequence[str], b: Sequence[str], rater_a: str, rater_b: str, kind: str, *,
                   seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES,
                   labels: Sequence[str] = LABELS) -> PairwiseAgreement:
    """Agreement (exact 95% interval) and kappa (bootstrap 95% interval; none on fewer than
    :data:`MIN_KAPPA_PAIRS` pairs) of two raters over the same pairs."""
    n = len(a)
    confusion = {x: {y: 0 for y in labels} for x in labels}
    for x, y in zip(a, b):
        confusion[x][y] += 1
    if n == 0:
        none = Estimate(None, (None, None))
        return PairwiseAgreement(rater_a, rater_b, kind, 0, none, none, confusion)
    codes = _codes(a, b, labels)
    k = len(labels)
    # agreement is a proportion: the exact interval, honest at every n (a bootstrap over 4 pairs that all
    # agree collapses to "100-100%", and Wilson's covers less than 95% near 0 and 100%)
    matches = sum(x == y for x, y in zip(a, b))
    lo, hi = clopper_pearson(matches, n)
    agreement = Estimate(percent_agreement(a, b), (round(float(lo), 6), round(float(hi), 6)))
    if n < MIN_KAPPA_PAIRS:
        return PairwiseAgreement(rater_a, rater_b, kind, n, agreement, Estimate(None, (None, None)), confusion)
    rng = np.random.default_rng(seed)
    sampled = codes[rng.integers(0, n, size=(resamples, n))]
    kappas = _kappas(sampled, k)
    finite = kappas[~np.isnan(kappas)]
    kappa_ci: tuple[float | None, float | None] = (None, None)
    kappa = cohen_kappa(a, b, labels)
    if kappa is not None:
        cells = _cells(codes[None, :], k)[0]
        pe = float((cells.sum(axis=1) * cells.sum(axis=0)).sum()) / (n * n)
        klo, khi = (lo - pe) / (1 - pe), (hi - pe) / (1 - pe)
        if finite.size:
            blo, bhi = np.percentile(finite, [2.5, 97.5])
            klo, khi = min(klo, float(blo)), max(khi, float(bhi))
        klo, khi = min(klo, kappa), max(khi, kappa)     # the estimate lies in its own interval
        kappa_ci = (round(max(-1.0, klo), 6), round(min(1.0, khi), 6))
    return PairwiseAgreement(rater_a, rater_b, kind, n, agreement, Estimate(kappa, kappa_ci), confusion)


def _judge_labels(data: RunData) -> dict[str, dict[Pair, str]]:
    out: dict[str, dict[Pair, str]] = {j: {} for j in data.run.judges}
    for spk, rows in data.verdicts.items():
        for v in rows:
            if v.verdict.label is Label.JUDGE_ERROR:
                continue
            out.setdefault(v.verdict.judge_id, {})[(spk, v.url)] = v.verdict.label.value
    return out


def _reviewer_labels(rows: Sequence[Review]
                     ) -> tuple[dict[str, dict[Pair, str]], dict[Pair, str], dict[Pair, dict[str, str]]]:
    by_reviewer: dict[str, dict[Pair, str]] = {}
    by_pair: dict[Pair, dict[str, str]] = {}
    for r in rows:
        by_pair.setdefault((r.statement_pk, r.url), {})[r.reviewer] = r.label.value
        if r.label is not ReviewLabel.UNSURE:
            by_reviewer.setdefault(r.reviewer, {})[(r.statement_pk, r.url)] = r.label.value
    majority: dict[Pair, str] = {}
    for pair, labels in by_pair.items():
        label = consensus([ReviewLabel(v) for v in labels.values()])
        if label is not None:
            majority[pair] = label.value
    return by_reviewer, majority, by_pair


def _majority_without(by_pair: Mapping[Pair, Mapping[str, str]], reviewer: str) -> dict[Pair, str]:
    """The majority of the other reviewers' labels on each pair the reviewer labelled (leave-one-out)."""
    out: dict[Pair, str] = {}
    for pair, labels in by_pair.items():
        if reviewer not in labels:
            continue
        label = consensus([ReviewLabel(v) for r, v in labels.items() if r != reviewer])
        if label is not None:
            out[pair] = label.value
    return out


def judges_consensus(data: RunData) -> dict[Pair, str]:
    """Each pair's combined label under the run's consensus rule (the headline's), where it decides (read
    from the verdicts alone, as :func:`sourcecheckup.metrics.assess_statement` combines them)."""
    from ..metrics import Consensus, pair_label

    rule = Consensus(data.run.config.get("consensus", "first"))
    judges = list(data.run.judges)
    out: dict[Pair, str] = {}
    for spk, rows in data.verdicts.items():
        per_pair: dict[str, dict[str, Label]] = {}
        for v in rows:
            per_pair.setdefault(v.url, {})[v.verdict.judge_id] = v.verdict.label
        for url, per_judge in per_pair.items():
            if judges and not all(j in per_judge for j in judges):
                continue          # pending: not every judge of the run has spoken
            order = judges + [j for j in per_judge if j not in judges]
            label = pair_label([per_judge[j] for j in order if j in per_judge], rule)
            if label is Label.SUPPORTED or label is Label.NOT_SUPPORTED:
                out[(spk, url)] = label.value
    return out


def _compare(x: Mapping[Pair, str], y: Mapping[Pair, str], name_x: str, name_y: str, kind: str,
             seed: int) -> PairwiseAgreement:
    common = sorted(set(x) & set(y))
    return compare_raters([x[p] for p in common], [y[p] for p in common], name_x, name_y, kind, seed=seed)


def agreement_report(store: Store, data: RunData, *, seed: int = 0) -> dict[str, Any]:
    """Section 5 of the report: who agrees with whom, and which verdicts reviewers overturned."""
    rows = reviews(store, data.run.id)
    judges = _judge_labels(data)
    by_reviewer, majority, by_pair = _reviewer_labels(rows)
    comparisons: list[PairwiseAgreement] = []
    s = seed
    for judge, jl in judges.items():
        for reviewer, rl in sorted(by_reviewer.items()):
            comparisons.append(_compare(jl, rl, judge, reviewer, "judge-reviewer", s))
            s += 1
        if by_reviewer:
            comparisons.append(_compare(jl, majority, judge, MAJORITY, "judge-majority", s))
            s += 1
    for reviewer, rl in sorted(by_reviewer.items()):
        others = _majority_without(by_pair, reviewer)
        comparisons.append(_compare(rl, others, reviewer, OTHERS_MAJORITY, "reviewer-majority", s))
        s += 1
    # the label the headline figures use: the judges' consensus under the run's rule
    rule = str(data.run.config.get("consensus", "first"))
    combined = judges_consensus(data)
    if by_reviewer and combined:
        name = consensus_name(rule)
        for reviewer, rl in sorted(by_reviewer.items()):
            comparisons.append(_compare(combined, rl, name, reviewer, "consensus-reviewer", s))
            s += 1
        comparisons.append(_compare(combined, majority, name, MAJORITY, "consensus-majority", s))
        s += 1
    for (ra, la), (rb, lb) in combinations(sorted(by_reviewer.items()), 2):
        comparisons.append(_compare(la, lb, ra, rb, "reviewer-reviewer", s))
        s += 1
    for (ja, la), (jb, lb) in combinations(list(judges.items()), 2):
        comparisons.append(_compare(la, lb, ja, jb, "judge-judge", s))
        s += 1

    texts = {row.pk: (resp.response.id, row.statement.text)
             for resp in data.responses for row in data.statements.get(resp.pk, [])}
    overturned = []
    for pair, label in sorted(majority.items()):
        for judge, jl in judges.items():
            if pair in jl and jl[pair] != label:
                rid, text = texts.get(pair[0], ("", ""))
                overturned.append({"statement_pk": pair[0], "url": pair[1], "response_id": rid,
                                   "statement": text, "judge": judge, "judge_label": jl[pair],
                                   "reviewers_label": label, "reviews": dict(sorted(by_pair[pair].items()))})
    return {
        "pairs_reviewed": len(by_pair),
        "reviews": len(rows),
        "reviewers": sorted({r.reviewer for r in rows}),
        "judges": list(judges),
        "unsure": sum(1 for r in rows if r.label is ReviewLabel.UNSURE),
        "pairs_with_majority": len(majority),
        "pairs_without_majority": len(by_pair) - len(majority),
        "comparisons": [c.as_dict() for c in comparisons],
        "consensus": str(data.run.config.get("consensus", "first")),
        "ci_methods": dict(CI_DESCRIPTIONS),
        "overturned": overturned,
    }
