"""Dead links looked up in a web archive (the Wayback Machine's availability API or a compatible one).

The lookup records the nearest snapshot and its date on the dead source. With use_archive the
archived copy is read as the source, labelled "archived copy of <date>" wherever it appears.
"""
from __future__ import annotations

import asyncio
import json
import time
import zlib
from dataclasses import dataclass, replace
from typing import Any

import httpx

from ..models import FetchStatus, Source
from .base import BodyTooLarge, Fetcher, FetchOptions, read_bounded
from .safety import AddressPins, HostNotFoundError, Resolver, UnsafeUrlError, check_url, pinned_transport

DEFAULT_ARCHIVE_ENDPOINT = "https://archive.org/wayback/available"
LOOKUP_TIMEOUT_S = 10.0
MAX_ANSWER_BYTES = 200_000
# outcomes worth asking the archive about: the page is gone or unreachable now
ARCHIVE_OUTCOMES = (FetchStatus.DEAD, FetchStatus.HTTP_ERROR, FetchStatus.UNREACHABLE, FetchStatus.TIMEOUT)


@dataclass(frozen=True)
class Snapshot:
    url: str
    timestamp: str          # "20190315083000"
    status: str | None

    @property
    def date(self) -> str:
        t = self.timestamp
        return f"{t[0:4]}-{t[4:6]}-{t[6:8]}" if len(t) >= 8 and t[:8].isdigit() else t

    def as_meta(self) -> dict[str, Any]:
        return {"snapshot_url": self.url, "timestamp": self.timestamp, "date": self.date, "status": self.status}


class ArchiveLookupError(Exception):
    """The archive could not be asked or gave an answer we cannot read."""


def parse_availability(data: Any) -> Snapshot | None:
    """The closest snapshot from a Wayback availability answer, or None when there is none."""
    closest = ((data or {}).get("archived_snapshots") or {}).get("closest") if isinstance(data, dict) else None
    if not isinstance(closest, dict) or not closest.get("available") or not closest.get("url"):
        return None
    status = str(closest.get("status")) if closest.get("status") is not None else None
    if status is not None and not status.startswith(("2", "3")):
        return None   # the archive only holds an error page for it
    return Snapshot(str(closest["url"]), str(closest.get("timestamp", "")), status)


async def lookup(client: httpx.AsyncClient, endpoint: str, url: str, allow_hosts: tuple[str, ...] = (),
                 timeout_s: float = LOOKUP_TIMEOUT_S, pins: AddressPins | None = None,
                 resolver: Resolver | None = None) -> Snapshot | None:
    """Ask the archive for the snapshot nearest to now; ArchiveLookupError when that fails.

    With pins (the client's transport from pinned_transport), the checked address is pinned.
    """
    try:
        checked = await check_url(endpoint, allow_hosts, timeout_s, resolver)
    except HostNotFoundError as exc:     # offline, as a rule: say so rather than "refused"
        raise ArchiveLookupError(f"no network: the archive's host could not be resolved ({exc})") from None
    except UnsafeUrlError as exc:
        raise ArchiveLookupError(f"archive endpoint refused: {exc}") from None
    if pins is not None:
        pins.pin(checked)
    try:
        async with asyncio.timeout(timeout_s):
            async with client.stream("GET", endpoint, params={"url": url}) as response:
                if response.status_code != 200:
                    raise ArchiveLookupError(f"the archive answered HTTP {response.status_code}")
                body = await read_bounded(response, MAX_ANSWER_BYTES)
    except BodyTooLarge:
        raise ArchiveLookupError("the archive's answer is too large") from None
    except (ValueError, zlib.error) as exc:
        raise ArchiveLookupError(f"the archive's answer could not be decoded ({exc})") from None
    except TimeoutError:
        raise ArchiveLookupError(f"the archive did not answer within {timeout_s:g} s") from None
    except httpx.HTTPError as exc:
        why = "no connection: " if isinstance(exc, httpx.ConnectError) else ""
        raise ArchiveLookupError(f"{why}the archive could not be reached ({type(exc).__name__})") from None
    try:
        return parse_availability(json.loads(body))
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise ArchiveLookupError("the archive's answer is not JSON") from None


class ArchiveFetcher:
    """Wraps a fetcher; dead or unreachable sources get an archive lookup (and optionally its copy)."""

    def __init__(self, inner: Fetcher, options: FetchOptions, resolver: Resolver | None = None) -> None:
        self.inner = inner
        self.options = options
        self.endpoint = options.archive_endpoint or DEFAULT_ARCHIVE_ENDPOINT
        self.resolver = resolver
        self._pins = AddressPins()
        self._client = httpx.AsyncClient(follow_redirects=False, trust_env=False,
                                         transport=pinned_transport(self._pins),
                                         timeout=httpx.Timeout(LOOKUP_TIMEOUT_S),
                                         headers={"User-Agent": options.user_agent, "Accept": "application/json",
                                                  "Accept-Encoding": "gzip, deflate"})

    async def fetch(self, url: str) -> Source:
        live = await self.inner.fetch(url)
        if live.status not in ARCHIVE_OUTCOMES:
            return live
        try:
            snap = await lookup(self._client, self.endpoint, url, self.options.allow_hosts,
                                min(LOOKUP_TIMEOUT_S, self.options.timeout_s), self._pins, self.resolver)
        except ArchiveLookupError as exc:
            return replace(live, meta={**live.meta, "archive": {"error": str(exc)}})
        if snap is None:
            return replace(live, meta={**live.meta, "archive": {"snapshot_url": None}},
                           reason=f"{live.reason}; no archived copy found")
        meta = {**live.meta, "archive": snap.as_meta()}
        if not self.options.use_archive:
            return replace(live, meta=meta, reason=f"{live.reason}; archived copy of {snap.date} exists",
                           flags=live.flags + ("archived_copy_exists",))
        return await self._read_copy(url, live, snap, meta)

    async def _read_copy(self, url: str, live: Source, snap: Snapshot, meta: dict[str, Any]) -> Source:
        started = time.monotonic()
        copy = await self.inner.fetch(snap.url)
        if not copy.status.readable or not copy.text.strip():
            return replace(live, meta=meta, reason=f"{live.reason}; the archived copy of {snap.date} "
                                                   f"could not be read ({copy.reason})")
        label = f"archived copy of {snap.date}"
        return replace(copy, url=url, origin="archive", reason=f"{label} (the live page: {live.reason})",
                       title=f"[{label}] {copy.title}" if copy.title else f"[{label}]",
                       flags=copy.flags + ("archived",), elapsed_s=round(live.elapsed_s + time.monotonic() - started, 4),
                       meta={**copy.meta, "archive": snap.as_meta(),
                             "live": {"status": live.status.value, "reason": live.reason,
                                      "http_status": live.http_status}})

    async def aclose(self) -> None:
        try:
            await self._client.aclose()
        finally:
            await self.inner.aclose()
