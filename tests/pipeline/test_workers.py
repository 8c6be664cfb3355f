"""The CPU pool: small runs stay in this process, large ones read and parse in worker processes,
with the same results, and a worker that dies fails its one call, never the run."""
from __future__ import annotations

import functools
import os

import pytest

from sourcecheckup import workers
from sourcecheckup.fetching import FetchOptions
from sourcecheckup.models import FetchStatus
from sourcecheckup.pipeline import Audit, RunConfig
from sourcecheckup.store import Store
from sourcecheckup.workers import CpuPool, WorkerStopped
from tests.pipeline.test_pipeline import _responses
from tests.support.fake_judge import KeywordJudge


async def test_the_first_calls_stay_here_and_later_ones_go_to_a_worker():
    pool = CpuPool(1, start_after=2)
    try:
        here = [await pool.run(os.getpid), await pool.run(os.getpid, inline=True)]
        assert here == [os.getpid(), os.getpid()] and not pool.started
        there = await pool.run(os.getpid)
        assert pool.started and there != os.getpid()
        assert await pool.run(os.getpid) == there   # the worker stays for the next call
    finally:
        pool.close()


async def test_a_pool_of_no_workers_never_starts_a_process():
    pool = CpuPool(0, start_after=0)
    assert [await pool.run(os.getpid) for _ in range(3)] == [os.getpid()] * 3 and not pool.started


async def test_a_worker_that_dies_fails_its_call_and_the_next_call_gets_a_new_worker():
    pool = CpuPool(1, start_after=0)
    try:
        first = await pool.run(os.getpid)
        with pytest.raises(WorkerStopped, match="stopped unexpectedly"):   # tried twice, died twice
            await pool.run(os._exit, 3)
        second = await pool.run(os.getpid)
        assert second not in (first, os.getpid())
    finally:
        pool.close()


def _config(extract_workers: int) -> RunConfig:
    return RunConfig(judges=["keyword:0"], fetch=FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=10,
                                                              extract_workers=extract_workers))


def _stored(store: Store, run_id: str):
    data = store.load_run(run_id)
    rows = {s.pk: (r.response.id, s.statement) for r in data.responses for s in store.statements_for(r.pk)}
    statements = sorted((rid, s.index, s.text, s.category.value, s.cited) for rid, s in rows.values())
    sources = sorted((u, s.source.status.value, s.source.reason, s.source.title, s.source.text, s.source.flags)
                     for u, s in data.sources.items())
    verdicts = sorted((rows[v.statement_pk][0], rows[v.statement_pk][1].index, v.url, v.verdict.label.value,
                       v.verdict.quote, v.verdict.quote_found) for vs in data.verdicts.values() for v in vs)
    assert statements and verdicts
    return statements, sources, verdicts


async def test_an_audit_read_and_parsed_in_a_worker_stores_what_one_in_this_process_stores(tmp_path, site,
                                                                                             monkeypatch):
    here = Store(tmp_path / "here.db")
    run_here = await Audit(here, _config(0), judges=[KeywordJudge()]).start(_responses(site))

    pool = CpuPool(1, start_after=0, warm=functools.partial(workers.warm_by_name, workers.SHARED_WARM_UP))
    monkeypatch.setattr(workers, "_shared", pool)   # the shared pool, started from the first call
    try:
        there = Store(tmp_path / "there.db")
        run_there = await Audit(there, _config(workers.AUTO), judges=[KeywordJudge()]).start(_responses(site))
        worker = await pool.run(os.getpid)
    finally:
        pool.close()
    # 3 answers parsed, and the 3 pages that answered 200 read, in the worker
    assert worker != os.getpid() and pool.calls == 3 + 3 + 1
    assert _stored(here, run_here) == _stored(there, run_there)
    assert there.get_run(run_there).status == "completed"


async def test_a_page_whose_reader_dies_is_an_error_with_its_reason_and_the_run_goes_on(tmp_path, site,
                                                                                         monkeypatch):
    from sourcecheckup.fetching import documents

    pool = CpuPool(1, start_after=0)
    monkeypatch.setattr(workers, "_shared", pool)
    # the worker runs what it is sent by module path: send the killer in place of the reader
    monkeypatch.setattr(documents, "source_from_document", _Killer())
    try:
        store = Store(tmp_path / "a.db")
        run_id = await Audit(store, _config(workers.AUTO), judges=[KeywordJudge()]).start(_responses(site))
    finally:
        pool.close()
    data = store.load_run(run_id)
    assert data.run.status == "completed"
    hyp = data.sources[f"{site}/article/hypertension"].source
    assert hyp.status is FetchStatus.ERROR and "stopped unexpectedly" in hyp.reason
    # a page read beside it in the same worker was tried again in a new one; never "not supported"
    for url in (f"{site}/article/metformin-lactic-acidosis", f"{site}/article/hfe-hemochromatosis"):
        got = data.sources[url].source
        assert got.status is FetchStatus.OK or (got.status is FetchStatus.ERROR and "stopped" in got.reason)
    judged = {v.url for vs in data.verdicts.values() for v in vs}
    assert hyp.url not in judged


class _Killer:
    """Picklable: in the worker, ends the process on the hypertension page and reads the others."""

    def __call__(self, url, *args, **kwargs):
        if url.endswith("/article/hypertension"):
            os._exit(9)
        from sourcecheckup.fetching.documents import source_from_document

        return source_from_document(url, *args, **kwargs)


def test_an_audit_started_in_the_app_reads_and_parses_in_a_worker(qtbot, window, site, monkeypatch):
    """The app's audit thread uses the same pool: a worker spawned from the GUI process does the
    reading and parsing, and the run on screen is complete."""
    import asyncio

    from tests.support.app import audit_and_wait, pasted_answer

    pool = CpuPool(1, start_after=0, warm=functools.partial(workers.warm_by_name, workers.SHARED_WARM_UP))
    monkeypatch.setattr(workers, "_shared", pool)
    try:
        window.results.input.paste_edit.setPlainText(pasted_answer(site))
        run_id = audit_and_wait(qtbot, window)
        worker = asyncio.run(pool.run(os.getpid))
    finally:
        pool.close()
    assert worker != os.getpid() and pool.calls == 1 + 1 + 1   # the answer, its one page, the pid
    data = window.results.view.data
    assert data.run.id == run_id and data.run.status == "completed"
    assert data.sources[f"{site}/article/hypertension"].source.status is FetchStatus.OK
    assert "50.0%" in window.results.metrics_bar.labels["statement_support"].text()


async def test_closing_the_shared_pool_stops_its_workers(monkeypatch):
    import asyncio

    if not os.path.exists("/proc/self/stat"):
        pytest.skip("reads /proc (Linux)")
    pool = CpuPool(1, start_after=0)
    monkeypatch.setattr(workers, "_shared", pool)
    worker = await pool.run(os.getpid)
    workers.close_shared_pool()
    assert not pool.started
    for _ in range(50):   # the worker process is gone, not left waiting for work
        if not os.path.exists(f"/proc/{worker}") or "Z" in open(f"/proc/{worker}/stat").read().split(")")[1][:3]:
            break
        await asyncio.sleep(0.1)
    else:
        pytest.fail(f"worker {worker} still runs after close_shared_pool()")


async def test_a_parser_that_does_not_pickle_is_run_here_with_the_same_statements(tmp_path, site, monkeypatch):
    """A plugin's subclass of the builtin parser may hold what cannot go to a worker (a lambda): it is
    parsed in this process instead, never a failed response."""
    from sourcecheckup.parse.builtin import BuiltinParser

    class Local(BuiltinParser):
        def __init__(self) -> None:
            super().__init__()
            self.hook = lambda text: text   # pickling this fails

    pool = CpuPool(1, start_after=0)
    monkeypatch.setattr(workers, "_shared", pool)
    try:
        store = Store(tmp_path / "a.db")
        run_id = await Audit(store, _config(workers.AUTO), judges=[KeywordJudge()], parser=Local()).start(
            _responses(site))
    finally:
        pool.close()
    here = Store(tmp_path / "here.db")
    run_here = await Audit(here, _config(0), judges=[KeywordJudge()]).start(_responses(site))
    assert store.get_run(run_id).status == "completed"
    assert _stored(store, run_id)[0] == _stored(here, run_here)[0]
