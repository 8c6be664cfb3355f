"""The commit window: verdicts kept in memory and committed together, with the responses they finish.

A commit per verdict cost more CPU than judging with a fast judge, so verdicts are committed at most
COMMIT_WINDOW_PAIRS at a time or COMMIT_WINDOW_S old. The rules it keeps: a verdict or a response is
counted and reported done (progress events) only once committed, and a response is stored done only in
the transaction that stores its verdicts; a crash or a kill loses at most the uncommitted window, whose
pairs a resume judges again (for an API judge: at most 0.5 s of calls paid twice, never a committed
verdict's); a cancel, an error or the run's end commits the window before the run's status is written.
"""
from __future__ import annotations

import asyncio
from typing import Callable, Mapping

from ..events import EventKind
from ..models import Label, Verdict
from ..store import ResponseRow, Store
from .counters import Counters

COMMIT_WINDOW_PAIRS = 200
COMMIT_WINDOW_S = 0.5


class CommitWindow:
    """One execution's uncommitted verdicts and finished responses."""

    def __init__(self, store: Store, run_id: str, counters: Counters, emit: Callable[..., None], *,
                 pairs: int = COMMIT_WINDOW_PAIRS, seconds: float = COMMIT_WINDOW_S) -> None:
        self.store = store
        self.run_id = run_id
        self.c = counters
        self._emit = emit
        self.pairs = pairs
        self.seconds = seconds
        self._pending: list[tuple[int, str, int | None, Verdict]] = []
        self._verdicts_left: dict[tuple[int, str], int] = {}   # (statement pk, url) -> verdicts not committed yet
        self._pending_done: list[ResponseRow] = []

    def expect(self, left: Mapping[tuple[int, str], int]) -> None:
        """Verdicts still to give per pair; a pair is done when its last judge's verdict is committed."""
        self._verdicts_left.update(left)

    def forget(self, key: tuple[int, str]) -> None:
        """A pair that will get no verdict (its source could not be read)."""
        self._verdicts_left.pop(key, None)

    def add(self, statement_pk: int, url: str, source_id: int | None, verdict: Verdict) -> None:
        self._pending.append((statement_pk, url, source_id, verdict))

    def commit_if_full(self) -> None:
        if len(self._pending) >= self.pairs:
            self.commit()

    def response_done(self, row: ResponseRow) -> None:
        """Stored done with its verdicts at the next commit."""
        self._pending_done.append(row)

    async def commit_every_window(self) -> None:
        while True:
            await asyncio.sleep(self.seconds)
            self.commit()

    def commit(self) -> None:
        """Commit the window: its verdicts, then the responses they finish, in one transaction; only then
        are they counted and reported done (one JUDGED event a window)."""
        if not self._pending and not self._pending_done:
            return
        verdicts, done = self._pending, self._pending_done
        self._pending, self._pending_done = [], []
        try:
            self.store.commit_judged(self.run_id, verdicts, [r.pk for r in done])
        except BaseException:   # kept for the commit at the run's end, which fails the run if it fails too
            self._pending[:0], self._pending_done[:0] = verdicts, done
            raise
        self.c.verdicts_done += len(verdicts)
        for spk, url, _, _ in verdicts:
            key = (spk, url)
            if key in self._verdicts_left:
                self._verdicts_left[key] -= 1
                if self._verdicts_left[key] <= 0:
                    del self._verdicts_left[key]
                    self.c.pairs_done += 1
        self.c.judge_errors += sum(1 for v in verdicts if v[3].label is Label.JUDGE_ERROR)
        self.c.responses_done += len(done)
        if verdicts:
            self._emit(EventKind.JUDGED)
        for r in done:
            self._emit(EventKind.RESPONSE_DONE, r.response.id)
