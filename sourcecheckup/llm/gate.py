"""How many calls a client has in flight, and how many tokens of a server's shared context they hold.

A llama.cpp server runs ``-np`` requests at once in one ``-c``-token cache: more requests than
slots wait in its queue, and requests whose tokens together overflow the cache fail. The gate
keeps both within what the server reported, and narrows when the server says it overflowed.
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
        self._in_use = 0
        self._held = 0
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

    def narrow(self) -> None:
        """After the server overflowed: one call fewer at once and a quarter fewer shared tokens."""
        self.slots = max(1, min(self.slots, max(1, self._in_use - 1)))
        if self.tokens:
            self.tokens = max(1, self.tokens * 3 // 4)

    def _fits(self, need: int) -> bool:
        if self._in_use >= self.slots:
            return False
        return self.tokens is None or self._in_use == 0 or self._held + need <= self.tokens

    @contextlib.asynccontextmanager
    async def hold(self, need: int = 0) -> AsyncIterator[None]:
        cond = self._condition()
        async with cond:
            await cond.wait_for(lambda: self._fits(need))
            self._in_use += 1
            self._held += need
        try:
            yield
        finally:
            async with cond:
                self._in_use -= 1
                self._held -= need
                cond.notify_all()
