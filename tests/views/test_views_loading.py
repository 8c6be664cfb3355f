"""The Results page's loading policy, without Qt (issue 39, item 4): a run read whole or paged, a paged
run filtered by a query and by its summed totals."""
from __future__ import annotations

from sourcecheckup.store import Store
from sourcecheckup.views import loading
from sourcecheckup.views.browse import run_totals
from tests.support.synth_run import synthesize_run


def test_a_small_run_is_read_whole_with_its_usage_and_review_queue(tmp_path):
    with Store(tmp_path / "a.db") as st:
        rid = synthesize_run(st, responses=5, statements=2, sources=2)
        got = loading.load_for_results(st, rid, first=3)
    assert got.start is None and got.view is not None
    assert len(got.view.summaries) == 5
    assert got.usage is not None and got.review is not None
    pairs, (reviewed, total, _unsure) = got.review
    assert reviewed == 0 and total == 5 * 2 * 2


def test_a_large_run_is_paged_and_a_filter_is_a_query_then_the_totals(tmp_path, monkeypatch):
    monkeypatch.setattr(loading, "FULL_LOAD_MAX", 3)    # "large" as the app decides it, made small
    with Store(tmp_path / "a.db") as st:
        rid = synthesize_run(st, responses=5, statements=2, sources=2)
        got = loading.load_for_results(st, rid, first=2)
        assert got.view is None and got.start is not None
        assert len(got.start.pks) == 5 and [r.response_pk for r in got.start.first_rows] == got.start.pks[:2]
        every = loading.filter_paged(st, rid, search="", model=None, totals=None, accepts=lambda s, k: True,
                                     with_overrides=True, first=2)
        assert every[0] == got.start.pks and len(every[1]) == 2
        totals = run_totals(st, rid, with_overrides=True)
        none = loading.filter_paged(st, rid, search="", model=None, totals=totals, accepts=lambda s, k: False,
                                    with_overrides=True, first=2)
        assert none == ([], [])
