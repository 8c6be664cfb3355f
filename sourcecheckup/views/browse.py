"""A large run shown a page at a time: the few responses on screen are read and assessed with the
same rules as a whole run (:func:`sourcecheckup.metrics.assess_run`), and the run's metrics are
summed over chunks of responses so that memory stays bounded at 100,000 answers.

A run of at most :data:`FULL_LOAD_MAX` responses is still loaded whole
(:func:`sourcecheckup.views.results.load_run_view`): review stepping and bootstrap intervals need it.
"""
from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from ..metrics import Metric, MetricSet, Overrides, assess_run, compute_metrics, proportion
from ..store import RunData, RunRow, Store
from .results import ResponseSummary, RunView, response_summaries
from .review import review_progress

FULL_LOAD_MAX = 2000     # responses; above it the app pages through the run
METRICS_CHUNK = 1000     # responses read and assessed at a time for the run's metrics


def run_overrides(store: Store, run_id: str) -> Overrides:
    from ..review.labels import overrides as review_overrides

    return review_overrides(store, run_id)


def slice_data(store: Store, run: RunRow, response_pks: Sequence[int]) -> RunData:
    """The stored rows of these responses only: the RunData of a run that held just them."""
    responses = store.responses_by_pk(run.id, response_pks)
    statements = store.statements_of([r.pk for r in responses])
    verdicts = store.verdicts_of(run.id, [s.pk for rows in statements.values() for s in rows])
    sources = store.run_sources_of(run.id, [u for r in responses for u in r.response.citations])
    return RunData(run=run, responses=responses, statements=statements, sources=sources, verdicts=verdicts)


def slice_view(store: Store, run_id: str, response_pks: Sequence[int], *, with_overrides: bool = True,
               overrides: Overrides | None = None, run: RunRow | None = None,
               states: dict[tuple[int, str], str] | None = None) -> RunView:
    """A RunView of a few responses of a run (the selected one, a page of the table): its matrix,
    sources and answer read exactly as in a whole-run view."""
    from ..review.labels import review_states

    run = run or store.get_run(run_id)
    found = run_overrides(store, run.id) if overrides is None else overrides
    states = review_states(store, run.id) if states is None else states
    used = found if with_overrides else None
    data = slice_data(store, run, response_pks)
    assessed = assess_run(data, overrides=used)
    metrics = compute_metrics(data, assessed, overrides=used, bootstrap=False)
    return RunView(data, assessed, metrics, response_summaries(data, assessed), found, with_overrides,
                   review_states=states)


def page_summaries(store: Store, run_id: str, response_pks: Sequence[int], *,
                   with_overrides: bool = True) -> list[ResponseSummary]:
    """One table row per response, in the order of ``response_pks``."""
    view = slice_view(store, run_id, response_pks, with_overrides=with_overrides)
    by_pk = {s.response_pk: s for s in view.summaries}
    return [by_pk[pk] for pk in response_pks if pk in by_pk]


@dataclass(frozen=True)
class BrowseStart:
    """What a large run's page shows at once: its run row, the keys in input order, the models."""

    run: RunRow
    pks: list[int]
    models: list[tuple[str, int]]
    first_rows: list[ResponseSummary] = field(default_factory=list)   # the rows of the first ``first`` keys


def browse_start(store: Store, run_id: str, *, search: str = "", model: str | None = None, first: int = 0,
                 with_overrides: bool = True) -> BrowseStart:
    run = store.get_run(run_id)
    pks = store.browse_response_pks(run.id, search=search, model=model)
    rows = page_summaries(store, run.id, pks[:first], with_overrides=with_overrides) if first and pks else []
    return BrowseStart(run, pks, store.response_models(run.id), rows)


STATUS_KEYS = ("supported", "not_supported", "undecided", "no_claims", "not_read")   # ResponseSummary.status_key


@dataclass
class RunTotals:
    """A large run's metrics and review progress, and each response's status and problems (for the
    facets) in compact arrays: it crosses from a worker process and is filtered 100,000 rows at a time."""

    metrics: MetricSet
    reviewed: int
    reviewable: int
    overrides: int                                        # pairs whose reviewers' label overrides the judge's
    unsure: int = 0                                       # reviewed pairs every reviewer called unsure
    pks: array = field(default_factory=lambda: array("q"))           # response keys, input order
    status: bytes = b""                                   # per response: index into STATUS_KEYS
    problem: array = field(default_factory=lambda: array("q"))       # per response: index into problem_kinds
    problem_kinds: list[tuple[str, ...]] = field(default_factory=list)   # distinct problem kinds (() = none)
    usage: dict[str, dict] = field(default_factory=dict)             # report.judges.run_usage

    def matching(self, accepts: Callable[[str, Sequence[str]], bool], among: Sequence[int] | None = None
                 ) -> list[int]:
        """The responses (of ``among``, in its order; else of the run, in input order) whose status and
        problem kinds ``accepts`` takes. It is asked once per distinct pair; the 100,000 rows are numpy's."""
        status = np.frombuffer(self.status, dtype=np.uint8).astype(np.int64)
        problem = np.frombuffer(self.problem, dtype=np.int64)
        codes = status * (len(self.problem_kinds) + 1) + problem
        ok = [si * (len(self.problem_kinds) + 1) + pi for si in set(self.status) for pi in set(self.problem)
              if accepts(STATUS_KEYS[si], self.problem_kinds[pi])]
        chosen = np.frombuffer(self.pks, dtype=np.int64)[np.isin(codes, ok)]
        if among is None:
            return chosen.tolist()
        among_arr = np.asarray(among, dtype=np.int64)
        return among_arr[np.isin(among_arr, chosen)].tolist()


def _sum_metric(parts: Sequence[Metric]) -> Metric:
    k, n = sum(m.k for m in parts), sum(m.n for m in parts)
    # the k/n of the whole run with an exact interval over its units (values exact; the app's headline of a
    # large run, where the clustered interval would need every response's counts)
    return proportion([True] * k + [False] * (n - k))


def _sum_counts(parts: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for c in parts:
        for key, value in c.items():
            if isinstance(value, bool):
                out[key] = bool(out.get(key)) or value
            elif isinstance(value, dict) and any(isinstance(v, dict) for v in value.values()):
                out[key] = _sum_counts([out.get(key, {}), value])     # what each figure leaves out, per reason
            elif isinstance(value, dict):
                merged = Counter(out.get(key, {}))
                merged.update(value)
                out[key] = dict(sorted(merged.items()))
            else:
                out[key] = out.get(key, 0) + value
    return out


def run_totals(store: Store, run_id: str, *, with_overrides: bool = True, chunk: int = METRICS_CHUNK) -> RunTotals:
    """The run's four metrics (values exact; Wilson intervals), its review progress, and each response's
    status and problems, read and assessed ``chunk`` responses at a time (memory stays bounded)."""
    run = store.get_run(run_id)
    found = run_overrides(store, run.id)
    from ..review.labels import review_states

    states = review_states(store, run.id)
    pks = store.browse_response_pks(run.id)
    sets: list[MetricSet] = []
    reviewed = reviewable = 0
    out = RunTotals(proportion_set([]), 0, 0, len(found))
    kinds: dict[tuple[str, ...], int] = {}
    status = bytearray()
    for at in range(0, len(pks), chunk):
        view = slice_view(store, run.id, pks[at:at + chunk], with_overrides=with_overrides, overrides=found,
                          run=run, states=states)
        sets.append(view.metrics)
        done, total, unsure = review_progress(view)
        reviewed, reviewable, out.unsure = reviewed + done, reviewable + total, out.unsure + unsure
        for s in view.summaries:
            out.pks.append(s.response_pk)
            status.append(STATUS_KEYS.index(s.status_key))
            out.problem.append(kinds.setdefault(s.problem_kinds, len(kinds)))
    counts = _sum_counts([m.counts for m in sets])
    counts["skipped_records"] = store.skipped_count(run.id)
    out.metrics = proportion_set(sets, counts)
    out.reviewed, out.reviewable, out.status, out.problem_kinds = reviewed, reviewable, bytes(status), list(kinds)
    return out


def proportion_set(sets: Sequence[MetricSet], counts: dict[str, Any] | None = None) -> MetricSet:
    """The chunks' metrics as one run's."""
    names = ("url_validity", "statement_support", "response_support", "unused_sources")
    url_validity, statement_support, response_support, unused_sources = (
        _sum_metric([getattr(m, name) for m in sets]) for name in names)
    return MetricSet(url_validity, statement_support, response_support, unused_sources, counts or {},
                     _sum_metric([m.full_text_validity for m in sets]),
                     _sum_metric([m.answer_citation_validity for m in sets]))


def run_totals_at(db_path: str, run_id: str, with_overrides: bool = True) -> RunTotals:
    """:func:`run_totals` over a database file: what the app runs in a worker process, so that assessing
    100,000 answers never holds the app's interpreter lock."""
    from ..report.judges import run_usage

    with Store(db_path) as store:
        totals = run_totals(store, run_id, with_overrides=with_overrides)
        totals.usage = run_usage(store, run_id)
        return totals
