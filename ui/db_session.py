"""The open database: one Store for the GUI thread's small writes, and reads in pool threads.

``read(key, fn, on_done)`` runs a read-only engine call ``fn(store)`` in a pool thread with its
own connection to the same file, so loading a run of thousands of responses never stalls the
window; only the latest request of a key is delivered, on the GUI thread.

``compute(key, fn, args, on_done)`` runs a long read-only engine call ``fn(db_path, *args)`` in a
worker process (the sums over a 100,000-answer run): a pool thread busy in Python for seconds
would hold the interpreter lock and stall the window each time it wants it back.
"""
from __future__ import annotations

import gc
import multiprocessing
import os
import threading
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from sourcecheckup.store import Store


def _lower_priority(pid: int = 0) -> None:
    """Nice 10 for a process (0: this one)."""
    try:
        os.setpriority(os.PRIO_PROCESS, pid, max(10, os.getpriority(os.PRIO_PROCESS, pid)))
    except (AttributeError, OSError):   # Windows has no setpriority; the pass then runs at normal priority
        pass


class _ReaderSignals(QObject):
    finished = Signal(str, int, object)     # key, ticket, result
    failed = Signal(str, int, str)


_gc_lock = threading.Lock()
_gc_readers = 0


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Reads build many records at once (a run's rows and verdicts). A full collection of the cyclic garbage
    collector in the middle of one scans every object while it holds the interpreter lock: 50-80 ms in which
    the window cannot draw. Automatic collection waits while reads run; when the last one ends the young
    generations are collected (cheap) and what survives is moved out of later scans (``gc.freeze``): the
    engine's records are acyclic and are still freed by reference counting when the view lets go of them."""
    global _gc_readers
    with _gc_lock:
        if _gc_readers == 0:
            gc.disable()
        _gc_readers += 1
    try:
        yield
    finally:
        with _gc_lock:
            _gc_readers -= 1
            if _gc_readers == 0:
                gc.collect(1)
                gc.freeze()
                gc.enable()


class _ReadTask(QRunnable):
    def __init__(self, key: str, ticket: int, db_path: str, fn: Callable[[Store], Any],
                 signals: _ReaderSignals) -> None:
        super().__init__()
        self.key, self.ticket, self.db_path, self.fn, self.signals = key, ticket, db_path, fn, signals

    def run(self) -> None:
        try:
            with _collector_paused(), Store(self.db_path) as store:
                result = self.fn(store)
        except Exception as exc:
            self.signals.failed.emit(self.key, self.ticket, f"{type(exc).__name__}: {exc}")
            return
        self.signals.finished.emit(self.key, self.ticket, result)


class DbSession(QObject):
    """One open database file. Opening it raises StoreError when the file is not a database."""

    def __init__(self, path: str | Path, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.path = Path(path)
        self.store = Store(self.path)
        self._signals = _ReaderSignals()
        self._signals.finished.connect(self._on_finished)
        self._signals.failed.connect(self._on_failed)
        self._latest: dict[str, tuple[int, Callable[[Any], None], Callable[[str], None] | None]] = {}
        self._ticket = 0
        self._pending = 0
        self.pool = QThreadPool()
        self.pool.setMaxThreadCount(2)
        self._processes: Any = None      # a multiprocessing pool of one worker, started on first use
        self._processes_lock = threading.Lock()
        self._closed = False
        self._computing: set[str] = set()
        self._waiting: dict[str, tuple[int, Callable[..., Any], tuple]] = {}

    def read(self, key: str, fn: Callable[[Store], Any], on_done: Callable[[Any], None],
             on_error: Callable[[str], None] | None = None, *, priority: int = 0) -> int:
        """Run ``fn(store)`` off the GUI thread; ``on_done(result)`` (or ``on_error(message)``) follows
        on the GUI thread unless a later read of the same key was asked for in the meantime. A higher
        ``priority`` goes before waiting reads (rows the user is looking at)."""
        self._ticket += 1
        self._latest[key] = (self._ticket, on_done, on_error)
        self._pending += 1
        self.pool.start(_ReadTask(key, self._ticket, str(self.path), fn, self._signals), priority)
        return self._ticket

    def compute(self, key: str, fn: Callable[..., Any], args: tuple, on_done: Callable[[Any], None],
                on_error: Callable[[str], None] | None = None) -> int:
        """Run ``fn(db_path, *args)`` (a module-level function: it is pickled) in a worker process and
        deliver it like :meth:`read`. While one of a key runs, a newer request waits for it and replaces
        any other waiting one, so a run reloaded often never queues a pile of passes."""
        self._ticket += 1
        ticket = self._ticket
        self._latest[key] = (ticket, on_done, on_error)
        if key in self._computing:
            self._waiting[key] = (ticket, fn, args)
            return ticket
        self._start_compute(key, ticket, fn, args)
        return ticket

    def _start_compute(self, key: str, ticket: int, fn: Callable[..., Any], args: tuple) -> None:
        self._computing.add(key)
        self._pending += 1
        # starting the worker process takes ~100 ms (fork and exec, the pool's threads): not on the GUI thread
        threading.Thread(target=self._submit, args=(key, ticket, fn, args), daemon=True).start()

    def _submit(self, key: str, ticket: int, fn: Callable[..., Any], args: tuple) -> None:
        signals = self._signals
        with self._processes_lock:
            if self._closed:
                return
            if self._processes is None:
                # spawn, not fork: forking a process that runs Qt threads is unsafe; at a lower priority:
                # the window, not the sums, gets the cores when both want them
                self._processes = multiprocessing.get_context("spawn").Pool(1, initializer=_lower_priority)
                for proc in getattr(self._processes, "_pool", ()):   # at once, before it imports anything
                    _lower_priority(proc.pid)
            self._processes.apply_async(
                fn, (str(self.path), *args),
                callback=lambda result: signals.finished.emit(key, ticket, result),
                error_callback=lambda exc: signals.failed.emit(key, ticket, f"{type(exc).__name__}: {exc}"))

    def _computed(self, key: str) -> None:
        self._computing.discard(key)
        waiting = self._waiting.pop(key, None)
        if waiting is not None:
            self._start_compute(key, *waiting)

    def busy(self, key: str | None = None) -> bool:
        if key is None:
            return self._pending > 0
        return key in self._latest

    def wait(self, msecs: int = 5000) -> bool:
        return self.pool.waitForDone(msecs)

    def close(self, msecs: int = 5000) -> None:
        """Deliver nothing more, wait for the reads in flight, close the GUI thread's connection."""
        self._latest.clear()
        self._waiting.clear()
        with self._processes_lock:
            self._closed = True
            if self._processes is not None:
                self._processes.terminate()   # a pass over a large run is worth nothing once the window closes
                self._processes = None
        self.pool.waitForDone(msecs)
        self.store.close()

    def _settle(self, key: str, ticket: int) -> Any:
        """A read of ``key`` ended: its callbacks when it is still the latest asked for, else None."""
        self._pending -= 1
        if key in self._computing:
            self._computed(key)
        latest = self._latest.get(key)
        if latest and latest[0] == ticket:
            del self._latest[key]
            return latest
        return None

    def _on_finished(self, key: str, ticket: int, result: object) -> None:
        latest = self._settle(key, ticket)
        if latest:
            latest[1](result)

    def _on_failed(self, key: str, ticket: int, message: str) -> None:
        latest = self._settle(key, ticket)
        if latest and latest[2] is not None:
            latest[2](message)
