"""How many calls a client has in flight, and how many tokens of a server's shared context they hold.

A llama.cpp server runs ``-np`` requests at once in one ``-c``-token cache: more requests than
slots wait in its queue, and when the requests in flight together overflow the cache, llama-server
fails EVERY one of them (HTTP 500 "Context size has been exceeded."). The gate keeps both within
what the server reported, and narrows when the server says it overflowed: once per overflow, however
many of the calls then in flight report it (each admission carries the gate's epoch; a failure from
an epoch already narrowed narrows nothing more).
"""
from __future__ import annotations

import asyncio
import contextlib
from typing import AsyncIterator


class ContextGate:
    """At most ``slots`` calls at once, holding at most ``tokens`` tokens together (None: no token limit).

    A call needing more than ``tokens`` alone still runs, by itself, so nothing waits forever.
    """

    def __init__(self, slots: int, tokens: int | None = None):
        self.slots = max(1, slots)
        self.tokens = tokens
        self.epoch = 0            # how many times the gate has narrowed
        self.narrowed = 0         # the same, for messages and tests
        self._in_use = 0
        self._held = 0
        self._peak = 0
        self._cond: asyncio.Condition | None = None

    def _condition(self) -> asyncio.Condition:
        if self._cond is None:
            self._cond = asyncio.Condition()
        return self._cond

    def limit(self, slots: int | None = None, tokens: int | None = None) -> None:
        """Narrow the gate to ``slots`` calls and ``tokens`` shared tokens (a limit only ever narrows)."""
        if slots:
            self.slots = max(1, min(self.slots, slots))
        if tokens:
            self.tokens = tokens if self.tokens is None else min(self.tokens, tokens)

    def narrow(self, epoch: int | None = None) -> bool:
        """After the server overflowed: fewer calls at once (the ones that were in flight together, less one)
        and a quarter fewer shared tokens. ``epoch``: the epoch the failed call was admitted in; the other
        calls of the same overflow then narrow nothing more. True when it narrowed."""
        if epoch is not None and epoch != self.epoch:
            return False
        self.slots = max(1, min(self.slots, max(1, self._peak - 1)))
        if self.tokens:
            self.tokens = max(1, self.tokens * 3 // 4)
        self.epoch += 1
        self.narrowed += 1
        self._peak = self._in_use
        return True

    def _fits(self, need: int) -> bool:
        if self._in_use >= self.slots:
            return False
        return self.tokens is None or self._in_use == 0 or self._held + need <= self.tokens

    @contextlib.asynccontextmanager
    async def hold(self, need: int = 0) -> AsyncIterator[int]:
        """Wait for room for a call of ``need`` tokens; yields the epoch it was admitted in."""
        cond = self._condition()
        async with cond:
            await cond.wait_for(lambda: self._fits(need))
            self._in_use += 1
            self._held += need
            self._peak = max(self._peak, self._in_use)
            epoch = self.epoch
        try:
            yield epoch
        finally:
            async with cond:
                self._in_use -= 1
                self._held -= need
                cond.notify_all()
