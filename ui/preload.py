"""The built-in judge's model loaded in the background from the moment the app opens, so the first
audit's verdicts do not wait for it (the CLI keeps loading it lazily, on the first verdict); then what
else a first audit pays once (sourcecheckup.warmup: the judge's first call, the page reader's imports).

A plain Python thread calls the engine's ``embeddings.preload()``; an audit that starts meanwhile
waits for the same load (the engine loads the model once per process, under a lock), saying so.
"""
from __future__ import annotations

import threading
import time
from typing import Sequence

from PySide6.QtCore import QObject, Signal

from sourcecheckup import embeddings, warmup
from sourcecheckup.views.matrix import uses_screening_judge

from .worker import lower_this_thread


class ModelPreload(QObject):
    """``loaded(seconds)`` or ``failed(reason)`` once a started load ends (queued to the GUI thread)."""

    loaded = Signal(float)
    failed = Signal(str)

    def __init__(self, parent: QObject | None = None) -> None:
        super().__init__(parent)
        self._thread: threading.Thread | None = None
        self._judges: list[str] = []
        self._stand_down = threading.Event()
        self.started_at: float | None = None     # time.perf_counter() when the load began
        self.seconds: float | None = None        # how long it took, once it ended

    def start(self, judges: Sequence[str]) -> bool:
        """Load the model now, off the GUI thread, when a judge that needs it is set and it is not loaded
        yet; False when there is nothing to load."""
        if self._thread is not None or not uses_screening_judge(judges):
            return False
        if not embeddings.available() or embeddings.is_loaded():
            return False
        self.started_at = time.perf_counter()
        self._judges = list(judges)
        self._thread = threading.Thread(target=self._load, name="judge-model-preload", daemon=True)
        self._thread.start()
        return True

    def _load(self) -> None:
        lower_this_thread()   # the model's load must not take the CPU from the window it is for
        problem = ""
        try:
            embeddings.preload()
        except Exception as exc:   # the audit's judge reports (or works around) a model that cannot load
            problem = f"{type(exc).__name__}: {exc}"
        self.seconds = time.perf_counter() - (self.started_at or 0.0)
        try:
            if problem:
                self.failed.emit(problem)
            else:
                self.loaded.emit(self.seconds)
        except RuntimeError:   # the window closed meanwhile: nobody to tell
            pass
        # then what else the first audit pays once: the judge's first call and the run's audit trail, the
        # page reader's imports; an audit started meanwhile pays what is left, as without this
        for step in (lambda: warmup.warm_up_judges(self._judges), warmup.warm_up_reading):
            if self._stand_down.is_set():
                break
            try:
                step()
            except Exception:   # the audit reports a judge or a reader that cannot start
                pass

    def stand_down(self) -> None:
        """An audit has started: the model still loads (the audit waits for it), the rest of the warm-up is
        left to the audit, so the two do not compete for the interpreter."""
        self._stand_down.set()

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    def wait(self, timeout_s: float = 30.0) -> bool:
        """Wait for a load in flight (the window waits before it closes); True when none is running."""
        if self._thread is not None:
            self._thread.join(timeout_s)
        return not self.running
