"""How the Results page reads a run, without Qt: a run small enough is read whole (its view, its
judges' usage and its review queue); a larger one is paged (the responses' keys and the first page);
a filter of a paged run is a query plus, for status and problem, the run's summed totals.

The app calls these in its read pool; the decisions (how large is "larger", what a filter queries) live
here, where a test reaches them without a window."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

from ..store import Store
from .browse import FULL_LOAD_MAX, BrowseStart, RunTotals, browse_start, page_summaries
from .results import ResponseSummary, RunView, load_run_view
from .review import PairRef, review_pairs, review_progress


@dataclass(frozen=True)
class RunLoad:
    """A run as the Results page shows it: ``view`` (read whole) or ``start`` (paged)."""
    view: RunView | None = None
    start: BrowseStart | None = None
    usage: dict[str, dict[str, Any]] | None = None
    review: tuple[list[PairRef], tuple[int, int, int]] | None = None


def load_for_results(store: Store, run_id: str, *, search: str = "", model: str | None = None,
                     with_overrides: bool = True, first: int = 0) -> RunLoad:
    """The run whole when it has at most FULL_LOAD_MAX responses; else its keys and first ``first`` rows
    (``search`` and ``model`` applied in SQL)."""
    from ..report.judges import run_usage

    run = store.get_run(run_id)
    if store.response_count(run.id) > FULL_LOAD_MAX:   # page through it: read the keys only
        return RunLoad(start=browse_start(store, run.id, search=search, model=model, first=first,
                                          with_overrides=with_overrides))
    view = load_run_view(store, run_id, with_overrides=with_overrides)
    # a pass over every pair of the run: here, in the caller's read thread, not on the GUI thread
    return RunLoad(view=view, usage=run_usage(store, run_id),
                   review=(review_pairs(view, review_first=True), review_progress(view)))


def filter_paged(store: Store, run_id: str, *, search: str, model: str | None, totals: RunTotals | None,
                 accepts: Callable[[str, Sequence[str]], bool], with_overrides: bool,
                 first: int) -> tuple[list[int], list[ResponseSummary]]:
    """A paged run's responses that the search text and model (SQL) and, when ``totals`` is given, the status
    and problem facets (``accepts``) let through, with the first ``first`` rows' summaries."""
    pks = store.browse_response_pks(run_id, search=search, model=model)
    if totals is not None:
        pks = totals.matching(accepts, among=pks)
    return pks, page_summaries(store, run_id, pks[:first], with_overrides=with_overrides)
