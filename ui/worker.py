"""Engine work off the GUI thread.

AuditThread runs one audit (new or resumed), BenchmarkThread one benchmark step, each in a
QThread with its own asyncio loop and its own Store connection; progress events come back through a queued
signal, at most every PROGRESS_INTERVAL_S (plus every start/finish/warning), so a fast judge cannot flood the GUI.
Cancel sets the run's asyncio.Event from the GUI thread through loop.call_soon_threadsafe;
the engine stops between pairs and records the run as cancelled, so it can be resumed.
(Reads of the open database run in ui.db_session.DbSession.)
"""
from __future__ import annotations

import asyncio
import os
import sys
import threading
import time
from pathlib import Path
from typing import Any, Coroutine, Sequence

from PySide6.QtCore import QObject, QThread, Signal

from sourcecheckup import embeddings
from sourcecheckup.benchmark import BenchEvent, BenchInput, Benchmark, BenchSettings
from sourcecheckup.config import RunConfig
from sourcecheckup.events import EventKind, ProgressEvent
from sourcecheckup.models import Response, SkippedRecord
from sourcecheckup.pipeline import Audit
from sourcecheckup.store import Store
from sourcecheckup.views.matrix import uses_screening_judge
from sourcecheckup.views.text import count_noun

PROGRESS_INTERVAL_S = 0.05
WORKER_NICE = 5   # how much lower than the GUI thread engine work runs (see lower_this_thread)
LOADING_MODEL = "Loading the built-in judge's model…"
_ALWAYS = {EventKind.RUN_STARTED, EventKind.RUN_FINISHED, EventKind.WARNING, EventKind.SKIPPED,
           EventKind.RESPONSE_DONE}


def lower_this_thread() -> None:
    """Give the calling thread, and the threads and processes it starts, a lower CPU priority.

    On 2 cores the judge's threads and the browser's renderers otherwise take the CPU from the GUI thread
    in slices of about 100 ms; a lower priority lets the window answer at once and costs the audit little.
    On Linux the nice value is per thread and inherited by what the thread starts; elsewhere Qt's thread
    priority is the tool the OS honours (Windows, macOS).
    """
    if sys.platform.startswith("linux"):
        try:
            tid = threading.get_native_id()
            os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + WORKER_NICE))
        except OSError:
            pass
        return
    thread = QThread.currentThread()
    if thread is not None:
        thread.setPriority(QThread.Priority.LowPriority)


async def until_cancelled(work: Coroutine[Any, Any, Any], cancel: asyncio.Event) -> asyncio.Future[Any] | None:
    """Run ``work`` until it ends (its finished task, result or exception) or ``cancel`` is set (None: it was
    stopped and waited for, so what it stored is all there is)."""
    task = asyncio.ensure_future(work)
    stopper = asyncio.ensure_future(cancel.wait())
    await asyncio.wait({task, stopper}, return_when=asyncio.FIRST_COMPLETED)
    stopper.cancel()
    if task.done():
        return task
    task.cancel()
    try:
        await task
    except (asyncio.CancelledError, Exception):
        pass
    return None


class _EngineThread(QThread):
    """A QThread with its own asyncio loop and Store connection for one engine coroutine.

    Subclasses implement ``_work(store, cancel) -> (status, message)``. cancel() may be called
    from the GUI thread at any time, also before the loop exists; ``done(id, status, message)``
    is emitted once at the end, whatever happened.
    """

    done = Signal(str, str, str)

    def __init__(self, db_path: str | Path, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.db_path = str(db_path)
        self.result_id = ""
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._cancel: asyncio.Event | None = None
        self._cancel_requested = False

    # -- called from the GUI thread -------------------------------------------------------
    def cancel(self) -> None:
        with self._lock:
            self._cancel_requested = True
            if self._loop is not None and self._cancel is not None and not self._loop.is_closed():
                self._loop.call_soon_threadsafe(self._cancel.set)

    @property
    def cancel_requested(self) -> bool:
        return self._cancel_requested

    # -- the worker thread ----------------------------------------------------------------
    def run(self) -> None:  # noqa: D401 - QThread entry point
        lower_this_thread()
        status, message = "failed", ""
        loop = asyncio.new_event_loop()
        try:
            asyncio.set_event_loop(loop)
            store = Store(self.db_path)
            try:
                status, message = loop.run_until_complete(self._start(loop, store))
            finally:
                store.close()
        except Exception as exc:  # reported to the window, never raised into Qt
            status, message = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            with self._lock:
                self._loop = None
            try:
                loop.run_until_complete(loop.shutdown_asyncgens())
            finally:
                loop.close()
            self.done.emit(self.result_id, status, message)

    async def _start(self, loop: asyncio.AbstractEventLoop, store: Store) -> tuple[str, str]:
        with self._lock:
            self._loop = loop
            self._cancel = asyncio.Event()
            if self._cancel_requested:
                self._cancel.set()
        return await self._work(store, self._cancel)

    async def _work(self, store: Store, cancel: asyncio.Event) -> tuple[str, str]:
        raise NotImplementedError


class AuditThread(_EngineThread):
    """One audit run. Signals: progress(ProgressEvent), run_started(run_id), done(run_id, status, message)."""

    progress = Signal(object)
    run_started = Signal(str)
    loading = Signal(str)    # a slow first step before any progress (the embedding model loading)

    def __init__(self, db_path: str | Path, config: RunConfig, *, responses: Sequence[Response] = (),
                 skipped: Sequence[SkippedRecord] = (), label: str = "", resume_run: str | None = None,
                 replace_config: bool = False, parent: QObject | None = None) -> None:
        super().__init__(db_path, parent)
        self.config = config
        self.replace_config = replace_config   # a resume that takes ``config`` instead of the stored one
        self.responses = list(responses)
        self.skipped = list(skipped)
        self.label = label
        self.resume_run = resume_run
        self.result_id = resume_run or ""
        self._last_emit = 0.0
        self._announced = False

    @property
    def run_id(self) -> str:
        return self.result_id

    async def _work(self, store: Store, cancel: asyncio.Event) -> tuple[str, str]:
        if uses_screening_judge(self.config.judges) and embeddings.available() and not embeddings.is_loaded():
            # seconds on a first audit: say so rather than look frozen
            self.loading.emit(LOADING_MODEL)
            try:
                await asyncio.to_thread(embeddings.preload)
            except Exception:   # the judge reports (or works around) a model that cannot load
                pass
        audit = Audit(store, self.config, progress=self._on_event, cancel=cancel)
        try:
            if self.resume_run:
                run_id = await audit.resume(self.resume_run, self.config if self.replace_config else None)
            else:
                run_id = audit.create(self.responses, self.skipped, self.label)
                self._announce(run_id)
                await audit.execute(run_id)
        except Exception as exc:
            self.result_id = audit.run_id or self.result_id
            return "failed", f"{type(exc).__name__}: {exc}"
        self.result_id = run_id
        run = store.get_run(run_id)
        return run.status, run.message

    def _announce(self, run_id: str) -> None:
        self.result_id = run_id
        if not self._announced:
            self._announced = True
            self.run_started.emit(run_id)

    def _on_event(self, event: ProgressEvent) -> None:
        if event.run_id:
            self._announce(event.run_id)
        now = time.monotonic()
        if event.kind in _ALWAYS or now - self._last_emit >= PROGRESS_INTERVAL_S:
            self._last_emit = now
            self.progress.emit(event)


class CleanupThread(_EngineThread):
    """SourceCleanup for one run (cleanup.run_cleanup): suggestions written and verified off the GUI thread.

    Signals: progress(ProgressEvent), done(run_id, status, message) with status "completed" or "failed".
    """

    progress = Signal(object)

    def __init__(self, db_path: str | Path, run_id: str, model_spec: str | None = None,
                 parent: QObject | None = None) -> None:
        super().__init__(db_path, parent)
        self.result_id = run_id
        self.model_spec = model_spec

    async def _work(self, store: Store, cancel: asyncio.Event) -> tuple[str, str]:
        from sourcecheckup.cleanup import run_cleanup

        task = await until_cancelled(run_cleanup(store, self.result_id, model_spec=self.model_spec,
                                                 progress=self.progress.emit), cancel)
        if task is None:
            return "cancelled", "stopped; the suggestions stored so far are kept"
        try:
            rows = task.result()
        except Exception as exc:
            return "failed", f"{type(exc).__name__}: {exc}"
        return "completed", count_noun(len(rows), "suggestion")


class RepairThread(_EngineThread):
    """Repair for one run (references.repair.run_repair): a source found for an unsupported statement, or the
    open-access copy of its cited paper, off the GUI thread. done(run_id, status, message): "completed",
    "cancelled" (what was found is kept) or "failed" (the message says why, e.g. repair needs the network)."""

    progress = Signal(str)

    def __init__(self, db_path: str | Path, run_id: str, statement_pk: int | None, *, open_access: bool = False,
                 contact_email: str = "", endpoints: dict[str, str] | None = None,
                 allow_hosts: tuple[str, ...] = (), parent: QObject | None = None) -> None:
        super().__init__(db_path, parent)
        self.result_id = run_id
        self.statement_pk = statement_pk
        self.open_access = open_access
        self.contact_email = contact_email
        self.endpoints = dict(endpoints or {})
        self.allow_hosts = allow_hosts

    async def _work(self, store: Store, cancel: asyncio.Event) -> tuple[str, str]:
        from sourcecheckup.fetching import make_fetcher
        from sourcecheckup.fetching.base import FetchOptions
        from sourcecheckup.references.model import LookupSettings
        from sourcecheckup.references.repair import EUROPEPMC, UNPAYWALL, RepairClient, RepairError, run_repair

        run = store.get_run(self.result_id)
        stored = dict((run.config or {}).get("references") or {})
        stored.update({k: v for k, v in self.endpoints.items() if k in LookupSettings.__dataclass_fields__})
        email = self.contact_email or stored.get("contact_email", "")
        settings = LookupSettings.from_dict({**stored, "contact_email": email, "enabled": True})
        fetcher = make_fetcher(FetchOptions(allow_hosts=self.allow_hosts, browser="never"))
        from sourcecheckup.llm.secrets import find_api_key

        key = find_api_key("ncbi")   # NCBI's API key from the keyring, as the CLI reads it
        client = RepairClient(settings, store, europepmc_endpoint=self.endpoints.get("europepmc") or EUROPEPMC,
                              unpaywall_endpoint=self.endpoints.get("unpaywall") or UNPAYWALL,
                              ncbi_api_key=key[0] if key else "")
        try:
            task = await until_cancelled(run_repair(store, self.result_id, client, statement_pk=self.statement_pk,
                                                    open_access=self.open_access, fetcher=fetcher,
                                                    progress=self.progress.emit, cancelled=cancel.is_set), cancel)
            if task is None:
                return "cancelled", "stopped; the candidates judged so far are kept"
            try:
                results = task.result()
            except RepairError as exc:
                return "failed", str(exc)
            except Exception as exc:
                return "failed", f"{type(exc).__name__}: {exc}"
        finally:
            await client.aclose()
            await fetcher.aclose()
        offered = sum(1 for r in results if r.status == "offered")
        failed = [e for r in results for e in r.errors]
        return "completed", (f"{offered} of {len(results)} offered"
                             + (f"; a service failed: {failed[0]}" if failed else ""))


class BenchmarkThread(_EngineThread):
    """One benchmark step: a new benchmark up to its questions (``stop_after="questions"``), or the
    rest of a stored one (answers, accuracy, audit, best-of-K) with ``resume_bench``.

    Signals: progress(BenchEvent), bench_started(bench_id), done(bench_id, status, message).
    Settings given with ``resume_bench`` replace the stored ones while the audit has not started
    (models and judges may be chosen after the questions were reviewed).
    """

    progress = Signal(object)
    bench_started = Signal(str)

    def __init__(self, db_path: str | Path, settings: BenchSettings | None, *,
                 bench_input: BenchInput | None = None, resume_bench: str | None = None,
                 stop_after: str | None = None, parent: QObject | None = None) -> None:
        super().__init__(db_path, parent)
        if (bench_input is None) == (resume_bench is None):
            raise ValueError("give either bench_input (a new benchmark) or resume_bench")
        self.settings = settings
        self.bench_input = bench_input
        self.resume_bench = resume_bench
        self.stop_after = stop_after
        self.result_id = resume_bench or ""
        self._last_emit = 0.0

    @property
    def bench_id(self) -> str:
        return self.result_id

    async def _work(self, store: Store, cancel: asyncio.Event) -> tuple[str, str]:
        bench = Benchmark(store, self.settings, progress=self._on_event, cancel=cancel)
        try:
            if self.resume_bench:
                row = bench.bench.get(self.resume_bench)
                self.result_id = row.id
                if self.settings is not None and row.run_id is None:
                    bench.update_settings(row.id, self.settings)
                self.bench_started.emit(row.id)
                await bench.resume(row.id, stop_after=self.stop_after)
            else:
                assert self.bench_input is not None
                self.result_id = bench.create(self.bench_input)
                self.bench_started.emit(self.result_id)
                await bench.execute(self.result_id, stop_after=self.stop_after)
        except Exception as exc:
            self.result_id = bench.bench_id or self.result_id
            return "failed", f"{type(exc).__name__}: {exc}"
        row = bench.bench.get(self.result_id)
        return row.status, row.message

    def _on_event(self, event: BenchEvent) -> None:
        now = time.monotonic()
        always = event.warning or event.audit is None or event.done == event.total
        if always or now - self._last_emit >= PROGRESS_INTERVAL_S:
            self._last_emit = now
            self.progress.emit(event)
