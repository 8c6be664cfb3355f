"""The open database: one Store for the GUI thread's small writes, and reads in pool threads.

``read(key, fn, on_done)`` runs a read-only engine call ``fn(store)`` in a pool thread with its
own connection to the same file, so loading a run of thousands of responses never stalls the
window; only the latest request of a key is delivered, on the GUI thread.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from sourcecheckup.store import Store


class _ReaderSignals(QObject):
    finished = Signal(str, int, object)     # key, ticket, result
    failed = Signal(str, int, str)


class _ReadTask(QRunnable):
    def __init__(self, key: str, ticket: int, db_path: str, fn: Callable[[Store], Any],
                 signals: _ReaderSignals) -> None:
        super().__init__()
        self.key, self.ticket, self.db_path, self.fn, self.signals = key, ticket, db_path, fn, signals

    def run(self) -> None:
        try:
            with Store(self.db_path) as store:
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

    def read(self, key: str, fn: Callable[[Store], Any], on_done: Callable[[Any], None],
             on_error: Callable[[str], None] | None = None) -> int:
        """Run ``fn(store)`` off the GUI thread; ``on_done(result)`` (or ``on_error(message)``) follows
        on the GUI thread unless a later read of the same key was asked for in the meantime."""
        self._ticket += 1
        self._latest[key] = (self._ticket, on_done, on_error)
        self._pending += 1
        self.pool.start(_ReadTask(key, self._ticket, str(self.path), fn, self._signals))
        return self._ticket

    def busy(self, key: str | None = None) -> bool:
        if key is None:
            return self._pending > 0
        return key in self._latest

    def wait(self, msecs: int = 5000) -> bool:
        return self.pool.waitForDone(msecs)

    def close(self, msecs: int = 5000) -> None:
        """Deliver nothing more, wait for the reads in flight, close the GUI thread's connection."""
        self._latest.clear()
        self.pool.waitForDone(msecs)
        self.store.close()

    def _on_finished(self, key: str, ticket: int, result: object) -> None:
        self._pending -= 1
        latest = self._latest.get(key)
        if latest and latest[0] == ticket:
            del self._latest[key]
            latest[1](result)

    def _on_failed(self, key: str, ticket: int, message: str) -> None:
        self._pending -= 1
        latest = self._latest.get(key)
        if latest and latest[0] == ticket:
            del self._latest[key]
            if latest[2] is not None:
                latest[2](message)
