"""The pipeline end to end: real fetches from the local site, real SQLite, a deterministic judge; progress
totals that never go back nor overshoot."""
from __future__ import annotations

import asyncio

from sourcecheckup import demo
from sourcecheckup.events import EventKind, ProgressEvent
from sourcecheckup.fetching import FetchOptions, HttpFetcher
from sourcecheckup.ingest import load_path
from sourcecheckup.metrics import assess_run, compute_metrics
from sourcecheckup.models import FetchStatus, Label, Response, StatementStatus
from sourcecheckup.pipeline import Audit, RunConfig
from sourcecheckup.store import Store
from tests.support.fake_judge import KeywordJudge

SUPPORTED = "Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher."
UNSUPPORTED = "Metformin cures hypertension within a week."
HFE = "Iron-overload-related disease was present in 28.4% of male C282Y homozygotes."


def _responses(site: str) -> list[Response]:
    hyp, met, hfe = f"{site}/article/hypertension", f"{site}/article/metformin-lactic-acidosis", \
        f"{site}/article/hfe-hemochromatosis"
    return [
        Response(id="r1", text=f"{SUPPORTED} [1] {UNSUPPORTED} [2] Please consult your doctor.",
                 citations=(hyp, met), markers={"1": 0, "2": 1}, model="model-a"),
        Response(id="r2", text=f"{HFE} [1] This was shown long ago. [2]",
                 citations=(f"{site}/status/404", hfe), markers={"1": 1, "2": 0}, model="model-b"),
        Response(id="r3", text=f"{SUPPORTED}", citations=(f"{site}/status/410",), model="model-b"),
    ]


def _config(**kw) -> RunConfig:
    return RunConfig(judges=["keyword:0"], fetch=FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=5), **kw)


class CountingFetcher(HttpFetcher):
    def __init__(self, options):
        super().__init__(options)
        self.urls: list[str] = []

    async def fetch(self, url):
        self.urls.append(url)
        return await super().fetch(url)


async def _audit(store: Store, site: str, judge=None, fetcher=None, **kw):
    events = []
    audit = Audit(store, _config(), progress=events.append, judges=[judge or KeywordJudge()], fetcher=fetcher, **kw)
    run_id = await audit.start(_responses(site), input_label="test")
    return run_id, events


async def test_audit_stores_statuses_verdicts_and_metrics(tmp_path, site):
    store = Store(tmp_path / "a.db")
    run_id, events = await _audit(store, site)
    data = store.load_run(run_id)
    assert data.run.status == "completed"
    statuses = {a.row.statement.text: a.status for r in assess_run(data) for a in r.statements if r.rid != "r3"}
    assert statuses[SUPPORTED] is StatementStatus.SUPPORTED
    assert statuses[UNSUPPORTED] is StatementStatus.NOT_SUPPORTED
    assert statuses["Please consult your doctor."] is StatementStatus.NOT_A_CLAIM
    assert statuses[HFE] is StatementStatus.SUPPORTED
    # the dead links are recorded as what they are, with no verdict rows
    assert data.sources[f"{site}/status/404"].source.status is FetchStatus.DEAD
    judged_urls = {v.url for vs in data.verdicts.values() for v in vs}
    assert f"{site}/status/404" not in judged_urls
    # r3's only source is gone: unsupported, marked "no readable source"
    r3 = [r for r in assess_run(data) if r.rid == "r3"][0]
    assert r3.statements[0].status is StatementStatus.NO_READABLE_SOURCE
    m = compute_metrics(data)
    assert (m.url_validity.k, m.url_validity.n) == (3, 5)
    assert m.counts["fetch_failures"] == 2
    # every informative statement x every valid source of its response, exactly once
    n_pairs = store.db.execute("SELECT COUNT(*) FROM verdicts WHERE run_id = ?", [run_id]).fetchone()[0]
    assert n_pairs == 2 * 2 + 2 * 1
    kinds = [e.kind for e in events]
    assert kinds[0] is EventKind.RUN_STARTED and kinds[-1] is EventKind.RUN_FINISHED
    assert events[-1].pairs_done == n_pairs == events[-1].pairs_total
    assert events[-1].sources_done == 5


async def test_a_judge_error_is_kept_apart_and_never_counted_not_supported(tmp_path, site):
    store = Store(tmp_path / "a.db")
    run_id, events = await _audit(store, site, judge=KeywordJudge(fail_on="Metformin"))
    data = store.load_run(run_id)
    statuses = {a.row.statement.text: a.status for r in assess_run(data) for a in r.statements}
    assert statuses[UNSUPPORTED] is StatementStatus.JUDGE_ERROR
    m = compute_metrics(data)
    assert m.counts["judge_errors"] == 2
    assert events[-1].judge_errors == 2


class RaisingJudge(KeywordJudge):
    async def verify(self, statement, source):
        raise RuntimeError("backend exploded")


async def test_a_judge_that_raises_yields_judge_error_rows_not_a_crash(tmp_path, site):
    store = Store(tmp_path / "a.db")
    run_id, _ = await _audit(store, site, judge=RaisingJudge())
    labels = {r[0] for r in store.db.execute("SELECT label FROM verdicts WHERE run_id = ?", [run_id])}
    assert labels == {Label.JUDGE_ERROR.value}
    assert "backend exploded" in store.db.execute("SELECT rationale FROM verdicts").fetchone()[0]


async def test_sources_are_cached_across_runs_unless_refetch_is_asked(tmp_path, site):
    store = Store(tmp_path / "a.db")
    opts = FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=5)
    first = CountingFetcher(opts)
    await _audit(store, site, fetcher=first)
    assert len(first.urls) == 5
    second = CountingFetcher(opts)
    await _audit(store, site, fetcher=second)
    assert second.urls == []
    third = CountingFetcher(opts)
    audit = Audit(store, _config(refetch=True), judges=[KeywordJudge()], fetcher=third)
    await audit.start(_responses(site))
    assert len(third.urls) == 5
    for f in (first, second, third):
        await f.aclose()


async def test_a_source_cited_by_many_answers_is_fetched_once_per_run(tmp_path, site):
    store = Store(tmp_path / "a.db")
    fetcher = CountingFetcher(FetchOptions(allow_hosts=("127.0.0.1",)))
    url = f"{site}/article/hypertension"
    responses = [Response(id=f"r{i}", text=SUPPORTED, citations=(url,)) for i in range(12)]
    await Audit(store, _config(), judges=[KeywordJudge()], fetcher=fetcher).start(responses)
    assert fetcher.urls == [url]
    await fetcher.aclose()


async def test_cancel_then_resume_judges_every_pair_exactly_once(tmp_path, site):
    url = f"{site}/article/hypertension"
    responses = [Response(id=f"r{i}", text=f"{SUPPORTED} Blood pressure {i} matters.", citations=(url,))
                 for i in range(30)]
    store = Store(tmp_path / "a.db")
    cancel = asyncio.Event()

    def progress(ev):
        if ev.kind is EventKind.JUDGED and ev.pairs_done >= 10:
            cancel.set()

    audit = Audit(store, _config(judge_concurrency=2), progress=progress, judges=[KeywordJudge(0.02)],
                  cancel=cancel)
    run_id = await audit.start(responses)
    assert store.get_run(run_id).status == "cancelled"
    done_before = store.db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]
    assert 10 <= done_before < 60
    judge = KeywordJudge(0.02)
    await Audit(store, _config(), judges=[judge]).resume(run_id)
    assert store.get_run(run_id).status == "completed"
    assert judge.calls == 60 - done_before          # only the missing pairs
    dupes = store.db.execute("SELECT COUNT(*) FROM (SELECT statement_pk, url, judge_id, COUNT(*) c "
                             "FROM verdicts GROUP BY 1, 2, 3 HAVING c > 1)").fetchone()[0]
    assert dupes == 0
    resumed = compute_metrics(store.load_run(run_id)).as_dict()
    other = Store(tmp_path / "b.db")
    straight = await Audit(other, _config(), judges=[KeywordJudge()]).start(responses)
    assert compute_metrics(other.load_run(straight)).as_dict() == resumed


async def test_responses_added_while_the_run_executes_are_judged_once_each(tmp_path, site):
    store = Store(tmp_path / "stream.db")
    first, second, third = _responses(site)
    events = []
    audit = Audit(store, _config(), progress=events.append, judges=[KeywordJudge()])
    run_id = audit.create([first], input_label="stream")
    audit.open_input()
    running = asyncio.create_task(audit.execute(run_id))
    while not any(e.kind is EventKind.RESPONSE_DONE for e in events):
        await asyncio.sleep(0.01)
    audit.add_responses([second])   # arrives after the first response is finished
    await asyncio.sleep(0.05)
    assert not running.done()       # the input is still open
    audit.add_responses([third])
    audit.close_input()
    await asyncio.wait_for(running, timeout=30)
    data = store.load_run(run_id)
    assert data.run.status == "completed" and [r.response.id for r in data.responses] == ["r1", "r2", "r3"]
    assert all(r.done for r in store.responses(run_id))
    # the same pairs as a run given all three at once, each judged exactly once
    n_pairs = store.db.execute("SELECT COUNT(*) FROM verdicts WHERE run_id = ?", [run_id]).fetchone()[0]
    distinct = store.db.execute("SELECT COUNT(DISTINCT statement_pk || url) FROM verdicts WHERE run_id = ?",
                                [run_id]).fetchone()[0]
    assert n_pairs == distinct == 2 * 2 + 2 * 1
    assert events[-1].responses_total == 3 and events[-1].responses_done == 3
    assert events[-1].sources_done == events[-1].sources_total == 5


async def test_responses_added_after_a_cancel_wait_in_the_store_for_resume(tmp_path, site):
    store = Store(tmp_path / "stream-cancel.db")
    first, second, _ = _responses(site)
    cancel = asyncio.Event()
    audit = Audit(store, _config(), judges=[KeywordJudge()], cancel=cancel)
    run_id = audit.create([first], input_label="stream")
    audit.open_input()
    running = asyncio.create_task(audit.execute(run_id))
    await asyncio.sleep(0)
    cancel.set()
    await asyncio.wait_for(running, timeout=30)
    audit.add_responses([second])
    assert store.get_run(run_id).status == "cancelled"
    await Audit(store, _config(), judges=[KeywordJudge()]).resume(run_id)
    assert store.get_run(run_id).status == "completed"
    assert all(r.done for r in store.responses(run_id)) and len(store.responses(run_id)) == 2


def _demo_config(judge: str = "keyword") -> RunConfig:
    return RunConfig(judges=[judge], judge_concurrency=2, fetch=FetchOptions(sources_dir=demo.sources_dir(), browser="never",
                                                            extract_workers=0))


def _assert_totals_never_go_back(events: list[ProgressEvent]) -> None:
    for name in ("responses", "sources", "pairs", "verdicts"):
        totals = [getattr(e, f"{name}_total") for e in events]
        assert totals == sorted(totals), f"{name} total went back: {totals}"
        for e in events:
            assert getattr(e, f"{name}_done") <= getattr(e, f"{name}_total"), f"{name} overshoots: {e}"


def test_the_demos_progress_totals_never_go_back_nor_overshoot(tmp_path):
    loaded = load_path(str(demo.answers_dir()))
    events: list[ProgressEvent] = []
    store = Store(tmp_path / "p.db")
    audit = Audit(store, _demo_config(), progress=events.append)
    asyncio.run(audit.start(loaded.responses, loaded.skipped, "demo"))
    _assert_totals_never_go_back(events)
    last = events[-1]
    assert last.kind is EventKind.RUN_FINISHED and last.fetch_failures >= 1   # the sample's dead link
    assert (last.pairs_done, last.sources_done, last.responses_done) == \
        (last.pairs_total, last.sources_total, last.responses_total)
