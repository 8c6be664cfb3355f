"""The study's metrics, computed from stored rows, with seeded bootstrap 95% intervals.

- source URL validity = cited URLs that were readable (status 200 / local file, non-empty text) / all cited URLs
- statement-level support = informative statements supported by >= 1 source / decided informative statements
- response-level support = responses all of whose informative statements are supported / decided responses
- unused sources = valid sources that support no statement / decided valid sources

Errors are not verdicts: a statement whose pairs include judge errors and no support is
undecided (counted in ``judge_error``), never unsupported. A statement with no readable
source is unsupported (the paper's definition) and marked ``no_readable_source``.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from .models import Label, StatementStatus
from .store import RunData, StatementRow, VerdictRow

BOOTSTRAP_RESAMPLES = 1000


class Consensus(str, Enum):
    """How several judges' verdicts on one pair combine."""

    FIRST = "first"        # the first judge named decides; the others are shown
    ANY = "any"
    ALL = "all"
    MAJORITY = "majority"


@dataclass(frozen=True)
class Metric:
    value: float | None
    ci95: tuple[float | None, float | None]
    n: int           # denominator: decided units
    k: int           # numerator

    def as_dict(self) -> dict[str, Any]:
        return {"value": self.value, "ci95": list(self.ci95), "n": self.n, "k": self.k}


def proportion(outcomes: Sequence[bool], seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES) -> Metric:
    """A proportion with a percentile bootstrap interval; deterministic for a seed."""
    n = len(outcomes)
    if n == 0:
        return Metric(None, (None, None), 0, 0)
    arr = np.fromiter((1.0 if o else 0.0 for o in outcomes), dtype=np.float64, count=n)
    k = int(arr.sum())
    rng = np.random.default_rng(seed)
    means = arr[rng.integers(0, n, size=(resamples, n))].mean(axis=1)
    lo, hi = np.percentile(means, [2.5, 97.5])
    return Metric(k / n, (round(float(lo), 6), round(float(hi), 6)), n, k)


# ------------------------------------------------------------------------- pair / statement

def pair_label(labels: Sequence[Label], rule: Consensus = Consensus.FIRST) -> Label | None:
    """Combine the verdicts of several judges (in judge order) on one pair; None if none yet."""
    if not labels:
        return None
    if rule is Consensus.FIRST:
        return labels[0]
    sup = sum(1 for lab in labels if lab is Label.SUPPORTED)
    nots = sum(1 for lab in labels if lab is Label.NOT_SUPPORTED)
    err = len(labels) - sup - nots
    if rule is Consensus.ANY:
        return Label.SUPPORTED if sup else (Label.JUDGE_ERROR if err else Label.NOT_SUPPORTED)
    if rule is Consensus.ALL:
        if nots:
            return Label.NOT_SUPPORTED
        return Label.JUDGE_ERROR if err else Label.SUPPORTED
    half = len(labels) / 2
    if sup > half:
        return Label.SUPPORTED
    if nots > half:
        return Label.NOT_SUPPORTED
    return Label.JUDGE_ERROR


@dataclass(frozen=True)
class StatementAssessment:
    row: StatementRow
    status: StatementStatus
    supporting_urls: tuple[str, ...]
    # url -> combined label for this pair (None while pending)
    pair_labels: Mapping[str, Label | None]
    disagreement: bool          # judges disagree on at least one pair


@dataclass
class ResponseAssessment:
    response_pk: int
    rid: str
    model: str | None
    statements: list[StatementAssessment]
    urls: list[str]
    valid_urls: list[str]
    supported: bool | None        # every informative statement supported; None if undecided / no claims
    unused_urls: list[str]
    undecided_urls: list[str]


# An override source: (statement_pk, url) -> Label decided by a person. Reviews plug in here.
Overrides = Mapping[tuple[int, str], Label]


def _judge_order(judges: Sequence[str], verdicts: Iterable[VerdictRow]) -> list[str]:
    order = list(judges)
    for v in verdicts:
        if v.verdict.judge_id not in order:
            order.append(v.verdict.judge_id)
    return order


def assess_statement(row: StatementRow, valid_urls: Sequence[str], verdicts: Sequence[VerdictRow],
                     judges: Sequence[str], rule: Consensus, overrides: Overrides | None = None
                     ) -> StatementAssessment:
    if not row.statement.informative:
        return StatementAssessment(row, StatementStatus.NOT_A_CLAIM, (), {}, False)
    if not valid_urls:
        return StatementAssessment(row, StatementStatus.NO_READABLE_SOURCE, (), {}, False)
    order = _judge_order(judges, verdicts)
    by_url: dict[str, dict[str, Label]] = {}
    for v in verdicts:
        by_url.setdefault(v.url, {})[v.verdict.judge_id] = v.verdict.label
    pair_labels: dict[str, Label | None] = {}
    disagreement = False
    for url in valid_urls:
        per_judge = by_url.get(url, {})
        if overrides and (row.pk, url) in overrides:
            pair_labels[url] = overrides[(row.pk, url)]
        else:
            present = [per_judge[j] for j in order if j in per_judge]
            # a pair is complete once every judge of the run has spoken
            complete = all(j in per_judge for j in judges) if judges else bool(present)
            pair_labels[url] = pair_label(present, rule) if complete else None
        decided = {lab for lab in per_judge.values() if lab is not Label.JUDGE_ERROR}
        disagreement = disagreement or len(decided) > 1
    supporting = tuple(u for u, lab in pair_labels.items() if lab is Label.SUPPORTED)
    if supporting:
        status = StatementStatus.SUPPORTED
    elif any(lab is None for lab in pair_labels.values()):
        status = StatementStatus.PENDING
    elif any(lab is Label.JUDGE_ERROR for lab in pair_labels.values()):
        status = StatementStatus.JUDGE_ERROR
    else:
        status = StatementStatus.NOT_SUPPORTED
    return StatementAssessment(row, status, supporting, pair_labels, disagreement)


def assess_run(data: RunData, rule: Consensus | str | None = None,
               overrides: Overrides | None = None) -> list[ResponseAssessment]:
    rule = Consensus(rule or data.run.config.get("consensus", "first"))
    judges = data.run.judges
    out: list[ResponseAssessment] = []
    for resp in data.responses:
        urls = list(resp.response.citations)
        valid = [u for u in urls if u in data.sources and data.sources[u].source.valid]
        statements = [assess_statement(s, valid, data.verdicts.get(s.pk, []), judges, rule, overrides)
                      for s in data.statements.get(resp.pk, [])]
        informative = [s for s in statements if s.row.statement.informative]
        if not resp.parsed or not informative:
            supported = None
        elif any(s.status.supported is False for s in informative):
            supported = False
        elif all(s.status.supported is True for s in informative):
            supported = True
        else:
            supported = None
        unused: list[str] = []
        undecided: list[str] = []
        for url in valid:
            labels = [s.pair_labels.get(url) for s in informative]
            if any(lab is Label.SUPPORTED for lab in labels):
                continue
            if any(lab is None or lab is Label.JUDGE_ERROR for lab in labels):
                undecided.append(url)
            else:
                unused.append(url)
        out.append(ResponseAssessment(resp.pk, resp.response.id, resp.response.model, statements,
                                      urls, valid, supported, unused, undecided))
    return out


# ------------------------------------------------------------------------- metrics

@dataclass
class MetricSet:
    url_validity: Metric
    statement_support: Metric
    response_support: Metric
    unused_sources: Metric
    counts: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {"url_validity": self.url_validity.as_dict(),
                "statement_support": self.statement_support.as_dict(),
                "response_support": self.response_support.as_dict(),
                "unused_sources": self.unused_sources.as_dict()}


def compute_metrics(data: RunData, assessed: Sequence[ResponseAssessment] | None = None, *,
                    seed: int | None = None, rule: Consensus | str | None = None,
                    overrides: Overrides | None = None) -> MetricSet:
    assessed = assess_run(data, rule, overrides) if assessed is None else assessed
    seed = int(data.run.config.get("seed", 0)) if seed is None else seed
    url_ok: list[bool] = []
    statement_ok: list[bool] = []
    response_ok: list[bool] = []
    unused: list[bool] = []
    status_counts: Counter[str] = Counter()
    outcome_counts: Counter[str] = Counter()
    for r in assessed:
        for url in r.urls:
            src = data.sources.get(url)
            url_ok.append(bool(src and src.source.valid))
            outcome_counts[src.source.status.value if src else "not_fetched"] += 1
        for s in r.statements:
            status_counts[s.status.value] += 1
            if s.status.supported is not None:
                statement_ok.append(s.status.supported)
        if r.supported is not None:
            response_ok.append(r.supported)
        unused.extend([True] * len(r.unused_urls))
        unused.extend([False] * (len(r.valid_urls) - len(r.unused_urls) - len(r.undecided_urls)))
    judge_errors = sum(1 for vs in data.verdicts.values() for v in vs if v.verdict.label is Label.JUDGE_ERROR)
    counts = {
        "responses": len(assessed),
        "responses_undecided": sum(1 for r in assessed if r.supported is None),
        "statements": sum(len(r.statements) for r in assessed),
        "informative_statements": sum(v for k, v in status_counts.items() if k != StatementStatus.NOT_A_CLAIM.value),
        "statement_status": dict(sorted(status_counts.items())),
        "urls": len(url_ok),
        "fetch_outcomes": dict(sorted(outcome_counts.items())),
        "fetch_failures": sum(v for k, v in outcome_counts.items() if k not in ("ok", "abstract_only", "paywalled")),
        "verdicts": sum(len(vs) for vs in data.verdicts.values()),
        "judge_errors": judge_errors,
        "skipped_records": len(data.skipped),
    }
    return MetricSet(proportion(url_ok, seed), proportion(statement_ok, seed + 1),
                     proportion(response_ok, seed + 2), proportion(unused, seed + 3), counts)


def metrics_by(data: RunData, key: Callable[[ResponseAssessment], str | None],
               assessed: Sequence[ResponseAssessment] | None = None, **kw: Any) -> dict[str, MetricSet]:
    """Metrics per group (model, question source...) over the same stored rows."""
    assessed = assess_run(data, kw.get("rule"), kw.get("overrides")) if assessed is None else assessed
    groups: dict[str, list[ResponseAssessment]] = {}
    for r in assessed:
        groups.setdefault(key(r) or "(none)", []).append(r)
    out: dict[str, MetricSet] = {}
    for name, members in sorted(groups.items()):
        pks = {m.response_pk for m in members}
        statements = {k: v for k, v in data.statements.items() if k in pks}
        spks = {row.pk for rows in statements.values() for row in rows}
        sub = RunData(run=data.run, responses=[r for r in data.responses if r.pk in pks],
                      statements=statements, sources=data.sources,
                      verdicts={k: v for k, v in data.verdicts.items() if k in spks}, skipped=[])
        out[name] = compute_metrics(sub, members, seed=kw.get("seed"))
    return out
