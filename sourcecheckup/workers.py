"""Worker processes for a run's CPU work: reading documents and splitting answers into statements.

Under the interpreter lock, threads take turns: a large audit read its pages and parsed its
answers on the one core the event loop already kept busy, and left the second core idle (the
scale bench's wall time was 1.8 times its CPU floor). A CpuPool moves that work to processes.

A small run (the demo, one pasted answer, most tests) never starts a process: the first
``start_after`` calls run in this process (in a thread, or inline), and only a run that goes
past them starts ``workers`` processes, which then stay for the life of this process (their
start-up, about a second of imports, is paid once). ``shared_pool()`` is the one pool of this
process that audits use by default; the CLI, the app's audit threads and the benches share it.

The functions run in a worker are pickled by module path (spawn, not fork: this process has
threads, asyncio and Playwright's, that fork would copy half-way), so they live at module level.
"""
from __future__ import annotations

import asyncio
import atexit
import functools
import os
import threading
import time
from typing import Any, Callable, TypeVar

T = TypeVar("T")

AUTO = -1            # FetchOptions.extract_workers: the shared pool, started once a run is big enough
START_AFTER = 48     # calls made in this process before the shared pool starts its workers


def default_workers() -> int:
    """Processes for the shared pool: one core is left to the event loop; none on a 1-core machine."""
    try:
        cores = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):   # not on Linux
        cores = os.cpu_count() or 1
    return max(0, min(4, cores - 1))


class WorkerStopped(RuntimeError):
    """A worker process died while it held this call (killed, or out of memory)."""


class CpuPool:
    """``await pool.run(fn, *args)``: in this process for the first ``start_after`` calls, then in
    one of ``workers`` processes. ``warm`` (a module-level function) runs once in each new worker."""

    def __init__(self, workers: int, *, start_after: int = START_AFTER, warm: Callable[[], Any] | None = None) -> None:
        self.workers = max(0, workers)
        self.start_after = max(0, start_after)
        self.warm = warm
        self.calls = 0
        self._executor: Any = None
        self._lock = threading.Lock()
        self._closed = False
        if self.workers and not self.start_after:
            self._start()

    @property
    def started(self) -> bool:
        return self._executor is not None

    def start(self, wait: bool = False) -> None:
        """Start the workers now rather than after ``start_after`` calls (a bench's start-up, before its
        clock); ``wait``: until each has done its warm-up."""
        executor = self._start() if self.workers else None
        if executor is not None and wait:
            for f in [executor.submit(os.getpid) for _ in range(self.workers)]:
                f.result()

    def _start(self) -> Any:
        with self._lock:
            if self._executor is None and not self._closed:
                import multiprocessing
                from concurrent.futures import ProcessPoolExecutor

                self._executor = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"),
                                                     initializer=_worker_started, initargs=(os.getpid(), self.warm))
                for _ in range(self.workers):   # start them now: the imports are done by the first real call
                    self._executor.submit(int)
            return self._executor

    async def run(self, fn: Callable[..., T], *args: Any, inline: bool = False, **kwargs: Any) -> T:
        """fn(*args, **kwargs) in a worker once the pool has started; before that in a thread, or
        here on the event loop when ``inline`` (short work whose thread hand-off would cost more)."""
        self.calls += 1
        executor = self._executor
        if executor is None and self.workers and self.calls > self.start_after:
            executor = self._start()
        if executor is None:
            return fn(*args, **kwargs) if inline else await asyncio.to_thread(fn, *args, **kwargs)
        from concurrent.futures.process import BrokenProcessPool

        call = functools.partial(fn, *args, **kwargs)
        for attempt in (1, 2):
            try:
                return await asyncio.get_running_loop().run_in_executor(executor, call)
            except BrokenProcessPool:
                # one dead worker fails every call its pool held: each is tried once more in a new pool
                executor = self._replace(executor)
                if attempt == 2 or executor is None:
                    break
        raise WorkerStopped("the worker process doing this stopped unexpectedly (twice)")

    def _replace(self, broken: Any) -> Any:
        """A dead worker breaks its whole pool: the pool in its place (None once closed)."""
        with self._lock:
            if self._executor is broken:
                self._executor = None
        broken.shutdown(wait=False, cancel_futures=True)
        return self._start()

    def close(self, wait: bool = False) -> None:
        """Stop the workers; ``wait`` (at exit): until they are gone, so nothing of theirs is left over."""
        with self._lock:
            self._closed = True
            executor, self._executor = self._executor, None
        if executor is not None:
            executor.shutdown(wait=wait, cancel_futures=True)


def _worker_started(parent: int, warm: Callable[[], Any] | None) -> None:
    """In each new worker: leave when the parent is gone (a killed audit must not leave its workers
    behind; they would wait for work for ever), then the warm-up."""
    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(1.0)
        os._exit(0)

    threading.Thread(target=watch, name="parent-watch", daemon=True).start()
    if warm is not None:
        warm()


_shared: CpuPool | None = None
_shared_lock = threading.Lock()


# Once in each worker of the shared pool, by name (this module imports neither: they import it):
# the extractor's imports and tables, and the parser's sentence splitter.
SHARED_WARM_UP = ("sourcecheckup.fetching.documents:warm_up_reading", "sourcecheckup.parse.builtin")


def warm_by_name(names: tuple[str, ...]) -> None:
    """Import each "module", or import "module:function" and call the function."""
    import importlib

    for name in names:
        module, _, function = name.partition(":")
        loaded = importlib.import_module(module)
        if function:
            getattr(loaded, function)()


def shared_pool() -> CpuPool:
    """The pool of this process that audits use unless told otherwise (FetchOptions.extract_workers)."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = CpuPool(default_workers(), warm=functools.partial(warm_by_name, SHARED_WARM_UP))
            atexit.register(_shared.close, wait=True)
        return _shared


def close_shared_pool() -> None:
    """Stop the shared pool's workers now (a script that ends with os._exit skips atexit)."""
    with _shared_lock:
        pool = _shared
    if pool is not None:
        pool.close(wait=True)
