"""One connection pool per host for the fetcher, the least recently used idle pools closed beyond a cap.

httpcore's pool walks all its connections, and for each idle one all of them again, whenever a
request starts or ends, and polls every idle socket to see whether the server closed it. One pool
holding connections to many hosts therefore costs CPU that grows with the square of the
connections on every request: at 64 hosts x 4 slots it was a third of an audit's CPU
(bench/scale.py, issue 17). A pool per host keeps each walk to that host's few connections; the
cap keeps the idle sockets of a run over thousands of hosts bounded.
"""
from __future__ import annotations

from collections import OrderedDict
from typing import AsyncIterator, Callable

import httpx


class _ReleasedOnClose(httpx.AsyncByteStream):
    """A response body that tells its pool's owner when it is closed (the connection is free again)."""

    def __init__(self, inner: httpx.AsyncByteStream, release: Callable[[], None]) -> None:
        self._inner = inner
        self._release: Callable[[], None] | None = release

    async def __aiter__(self) -> AsyncIterator[bytes]:
        async for chunk in self._inner:
            yield chunk

    async def aclose(self) -> None:
        try:
            await self._inner.aclose()
        finally:
            release, self._release = self._release, None
            if release is not None:
                release()


class HostPools(httpx.AsyncBaseTransport):
    """An httpx transport that sends each request through the pool of its origin (scheme, host, port).

    ``make_pool()`` builds one origin's transport (the pinned transport: the address rule is the
    same for every pool). At most ``keep`` pools stay open: beyond it, pools with no request in
    flight are closed, least recently used first.
    """

    def __init__(self, make_pool: Callable[[], httpx.AsyncBaseTransport], keep: int) -> None:
        self._make_pool = make_pool
        self.keep = max(1, keep)
        self._pools: OrderedDict[tuple[bytes, bytes, int | None], list] = OrderedDict()   # origin -> [pool, in flight]

    @property
    def open_pools(self) -> int:
        return len(self._pools)

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        origin = (request.url.raw_scheme, request.url.raw_host, request.url.port)
        entry = self._pools.get(origin)
        if entry is None:
            entry = self._pools[origin] = [self._make_pool(), 1]   # in flight at once: never the one closed
            await self._close_idle_beyond_cap()
        else:
            self._pools.move_to_end(origin)
            entry[1] += 1

        def release() -> None:
            entry[1] -= 1

        try:
            response = await entry[0].handle_async_request(request)
        except BaseException:
            release()
            raise
        assert isinstance(response.stream, httpx.AsyncByteStream)
        response.stream = _ReleasedOnClose(response.stream, release)
        return response

    async def _close_idle_beyond_cap(self) -> None:
        idle = [origin for origin, (_, in_flight) in self._pools.items() if in_flight == 0]
        for origin in idle[:max(0, len(self._pools) - self.keep)]:
            pool, _ = self._pools.pop(origin)   # gone before the await: a new request opens a new pool
            await pool.aclose()

    async def aclose(self) -> None:
        pools = [pool for pool, _ in self._pools.values()]
        self._pools.clear()
        for pool in pools:
            await pool.aclose()
