"""robots.txt: read once per site, through the fetcher's pinned client, and asked before each URL."""
from __future__ import annotations

import asyncio
import zlib
from typing import Awaitable, Callable
from urllib.parse import urlsplit
from urllib.robotparser import RobotFileParser

import httpx

from .base import BodyTooLarge, read_bounded
from .safety import HostNotFoundError, UnsafeUrlError

ROBOTS_AGENT = "SourceCheckup"
ROBOTS_MAX_BYTES = 500_000


class RobotsRules:
    """The robots.txt rules of every site a fetcher visits (origin -> parser, or None: nothing disallowed).

    `check` applies the address rule to a URL and pins its addresses (HttpFetcher.check), so
    robots.txt is read through the same pinned `client` as the pages themselves.
    """

    def __init__(self, client: httpx.AsyncClient, check: Callable[[str], Awaitable[None]],
                 timeout_s: float) -> None:
        self.client = client
        self.check = check
        self.timeout_s = timeout_s
        self._parsers: dict[str, RobotFileParser | None] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def refusal(self, url: str) -> str | None:
        """Why the site's robots.txt disallows this URL for us, or None when it does not."""
        try:
            parts = urlsplit(url)
            origin = f"{parts.scheme}://{parts.netloc}".lower()
        except ValueError:
            return None
        if parts.scheme not in ("http", "https"):
            return None
        async with self._locks.setdefault(origin, asyncio.Lock()):
            if origin not in self._parsers:
                self._parsers[origin] = await self._read(origin)
        parser = self._parsers[origin]
        if parser is not None and not parser.can_fetch(ROBOTS_AGENT, url):
            return f"the site's robots.txt disallows {parts.path or '/'} for crawlers"
        return None

    async def _read(self, origin: str) -> RobotFileParser | None:
        try:
            await self.check(origin + "/robots.txt")
            async with asyncio.timeout(min(5.0, self.timeout_s)):
                async with self.client.stream("GET", origin + "/robots.txt") as response:
                    if response.status_code != 200:
                        return None
                    body = await read_bounded(response, ROBOTS_MAX_BYTES)
        except (UnsafeUrlError, HostNotFoundError, httpx.HTTPError, TimeoutError, BodyTooLarge, ValueError,
                zlib.error):
            return None   # no readable robots.txt: nothing is disallowed
        parser = RobotFileParser()
        parser.parse(body.decode("utf-8", "replace").splitlines())
        return parser
