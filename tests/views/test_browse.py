"""Paging through a run (issue 17): every figure of the paged reads equals the whole-run assessment of
the same stored rows, whatever the chunk size, the judges' consensus rule or the reviewers' overrides."""
from __future__ import annotations

from collections import Counter

from sourcecheckup.metrics import assess_run, compute_metrics
from sourcecheckup.models import Label
from sourcecheckup.review import add_review, overrides
from sourcecheckup.store import Store
from sourcecheckup.views.browse import STATUS_KEYS, page_summaries, run_totals, slice_view
from sourcecheckup.views.results import load_run_view
from sourcecheckup.views.runs import run_summaries
from tests.support.large_run import build_large_run
from tests.support.synth_run import one_verdict, synthesize_run

METRICS = ("url_validity", "statement_support", "response_support", "unused_sources")


def _mixed_run(store: Store) -> str:
    """Two judges that disagree on some pairs, a judge error, an unjudged pair and two reviews."""
    run_id = synthesize_run(store, responses=23, statements=3, sources=2, judges=("j1", "j2"))
    data = store.load_run(run_id)
    rows = [s for r in data.responses for s in data.statements[r.pk]]
    urls = list(data.sources)
    # j2 turns a few of j1's verdicts around; one pair becomes a judge error
    for k, s in enumerate(rows[:12]):
        one_verdict(store, run_id, s.pk, urls[k % 2], data.sources[urls[k % 2]].id,
                    Label.NOT_SUPPORTED if k % 3 else Label.SUPPORTED, judge="j2")
    one_verdict(store, run_id, rows[20].pk, urls[0], data.sources[urls[0]].id, Label.JUDGE_ERROR, judge="j1")
    store.db["runs"].update(run_id, {"config": '{"consensus": "majority"}'})
    add_review(store, run_id, rows[1].pk, urls[0], "Dr A", "supported")
    add_review(store, run_id, rows[2].pk, urls[1], "Dr A", "not_supported")
    return run_id


def test_run_totals_equal_the_whole_run_for_any_chunk_with_overrides_and_consensus(tmp_path):
    with Store(tmp_path / "m.db") as store:
        run_id = _mixed_run(store)
        for with_overrides in (True, False):
            whole = load_run_view(store, run_id, with_overrides=with_overrides)
            for chunk in (1, 4, 7, 1000):
                totals = run_totals(store, run_id, with_overrides=with_overrides, chunk=chunk)
                for name in METRICS:
                    a, b = getattr(totals.metrics, name), getattr(whole.metrics, name)
                    assert (a.k, a.n, a.value) == (b.k, b.n, b.value), (name, chunk, with_overrides)
                for key in ("responses", "statements", "pairs", "pairs_judged", "judge_errors", "verdicts",
                            "statement_status", "fetch_outcomes", "partial"):
                    assert totals.metrics.counts[key] == whole.metrics.counts[key], key
                statuses = Counter(STATUS_KEYS[i] for i in totals.status)
                assert statuses == Counter(s.status_key for s in whole.summaries)
                by_pk = dict(zip(totals.pks, totals.problem))
                assert {s.response_pk: s.problem_kinds for s in whole.summaries} == \
                    {pk: totals.problem_kinds[i] for pk, i in by_pk.items()}
                assert totals.overrides == len(overrides(store, run_id)) == 2
                for status in STATUS_KEYS:
                    expected = [s.response_pk for s in whole.summaries if s.status_key == status]
                    assert totals.matching(lambda st, _p, want=status: st == want) == expected
                    among = [s.response_pk for s in whole.summaries][::-2]
                    assert totals.matching(lambda st, _p, want=status: st == want, among=among) == \
                        [pk for pk in among if pk in expected]
                assert totals.matching(lambda _s, kinds: "judge error" in kinds) == \
                    [s.response_pk for s in whole.summaries if "judge error" in s.problems]


def test_a_page_of_rows_reads_as_the_same_rows_of_the_whole_run(tmp_path):
    with Store(tmp_path / "p.db") as store:
        run_id = _mixed_run(store)
        whole = load_run_view(store, run_id)
        pks = [r.pk for r in whole.data.responses]
        page = pks[5:12]
        assert page_summaries(store, run_id, page) == [s for s in whole.summaries if s.response_pk in page]
        one = slice_view(store, run_id, [pks[0]])
        assert one.assessment(pks[0]) == whole.assessment(pks[0])


def test_search_and_model_filter_in_sql_take_the_users_text_literally(tmp_path):
    with Store(tmp_path / "s.db") as store:
        run_id = build_large_run(store, responses=300)
        assert len(store.browse_response_pks(run_id)) == 300
        assert len(store.browse_response_pks(run_id, search="R29")) == 11       # r29, r290..r299; any case
        assert len(store.browse_response_pks(run_id, search="r29", model="model-b")) == 5   # the even ids
        assert store.browse_response_pks(run_id, search="%") == []
        assert store.browse_response_pks(run_id, search="r_9") == []
        assert store.response_models(run_id) == [("model-a", 150), ("model-b", 150)]
        assert store.response_count(run_id) == 300


def test_the_runs_list_sums_a_large_run_in_chunks_to_its_headline(tmp_path, monkeypatch):
    import sourcecheckup.views.runs as runs_view

    with Store(tmp_path / "l.db") as store:
        run_id = build_large_run(store, responses=120)
        data = store.load_run(run_id)
        whole = compute_metrics(data, assess_run(data), bootstrap=False)
        monkeypatch.setattr(runs_view, "FULL_LOAD_MAX", 100)
        monkeypatch.setattr(store, "load_run", lambda *_: (_ for _ in ()).throw(AssertionError("loaded whole")))
        (summary,) = run_summaries(store)
        assert (summary.responses, summary.statement_support, summary.response_support, summary.url_validity) == \
            (120, whole.statement_support.value, whole.response_support.value, whole.url_validity.value)
        (listed,) = run_summaries(store, large_metrics=False)
        assert (listed.responses, listed.statement_support) == (120, None)
