"""The run's sources: each cited URL fetched once (or its stored fetch reused), written references
read through their DOI link, and a source's text kept only while a response in flight cites it, so
memory stays flat however many answers a run has."""
from __future__ import annotations

import asyncio
import dataclasses
from typing import Callable, Mapping, Sequence

from ..config import RunConfig
from ..events import EventKind
from ..evidence import SourceText
from ..fetching import Fetcher, fetch_settings_fingerprint
from ..fetching.base import refused_url
from ..injection import flag_injection
from ..models import FetchStatus, Source
from ..references.model import is_reference_key
from ..references.step import ReferenceChecks, reading_link, unread_reference
from ..store import SourceRow, Store
from .counters import Counters

# Outcomes worth retrying on a later run instead of reusing from the cache.
TRANSIENT = frozenset({FetchStatus.TIMEOUT, FetchStatus.HTTP_ERROR, FetchStatus.UNREACHABLE, FetchStatus.ERROR})
# source meta key: the fingerprint of the fetch settings a source was fetched under
FETCH_SETTINGS_META = "fetch_settings"


def cached_source_reusable(source: Source, fingerprint: str) -> bool:
    """May a run fetching under ``fingerprint`` reuse this stored fetch instead of fetching again?

    A full-text page is reused whatever the settings. Any other outcome (a refusal, a dead link, a
    block, a paywall, a file too large...) is reused only when it was fetched under the same
    fetch settings; transient failures are never reused.
    """
    if source.status in TRANSIENT:
        return False
    if source.status is FetchStatus.OK and source.valid:
        return True
    meta = source.meta if isinstance(source.meta, Mapping) else {}
    return meta.get(FETCH_SETTINGS_META) == fingerprint


class SourceCache:
    """One execution's sources, by cited URL (or written reference's key)."""

    def __init__(self, store: Store, run_id: str, config: RunConfig, fetcher: Fetcher,
                 refs: ReferenceChecks | None, counters: Counters, emit: Callable[..., None],
                 counted: set[str] | None = None) -> None:
        self.store = store
        self.run_id = run_id
        self.config = config
        self.fetcher = fetcher
        self.refs = refs
        self.c = counters
        self._emit = emit
        self._tasks: dict[str, asyncio.Task[SourceRow]] = {}
        self._texts: dict[str, SourceText] = {}
        self._run_sources: dict[str, int] = store.run_source_ids(run_id)
        # how many responses in flight cite each URL, and the URLs counted as fetched (a resumed run's
        # earlier fetches count from the start)
        self._users: dict[str, int] = {}
        self._counted: set[str] = set(counted or ())

    def hold(self, urls: Sequence[str]) -> list[asyncio.Task[SourceRow]]:
        """A response starts: its sources, fetched once each, as tasks."""
        for u in urls:
            self._users[u] = self._users.get(u, 0) + 1
        return [self._task(u) for u in urls]

    def release(self, urls: Sequence[str]) -> None:
        """A response is through: drop the sources no response in flight cites (a later citation reads
        the stored fetch again, by id)."""
        for u in urls:
            users = self._users.get(u, 0) - 1
            if users > 0:
                self._users[u] = users
                continue
            self._users.pop(u, None)
            self._texts.pop(u, None)
            task = self._tasks.get(u)
            if task is not None and task.done():
                del self._tasks[u]

    def text(self, src_row: SourceRow) -> SourceText:
        st = self._texts.get(src_row.source.url)
        if st is None:
            st = SourceText.from_source(src_row.source)
            self._texts[src_row.source.url] = st
        return st

    async def cancel_all(self) -> None:
        tasks = list(self._tasks.values())
        for task in tasks:
            task.cancel()
        # collected, so that a task that failed too (a full disk) is not reported again
        await asyncio.gather(*tasks, return_exceptions=True)

    def _task(self, url: str) -> asyncio.Task[SourceRow]:
        task = self._tasks.get(url)
        if task is None:
            task = asyncio.create_task(self._get(url))
            self._tasks[url] = task
        return task

    async def _get(self, url: str) -> SourceRow:
        if url in self._run_sources:
            row = self.store.get_source(self._run_sources[url])
        else:
            row = await (self._reference_source(url) if is_reference_key(url) else self._fetch_or_reuse(url))
            self.store.link_run_source(self.run_id, url, row.id)
            self._run_sources[url] = row.id
        if url not in self._counted:   # a source read again after release is not counted again
            self._counted.add(url)
            self.c.sources_done += 1
            if not row.source.valid:
                self.c.fetch_failures += 1
            self._emit(EventKind.FETCHED, f"{url}: {row.source.status.plain}")
        return row

    async def _fetch_or_reuse(self, url: str) -> SourceRow:
        refused = refused_url(url)   # the one URL check, whatever fetcher this run was given
        if refused is not None:
            return self.store.get_source(self.store.add_source(refused))
        cached = None if self.config.refetch else self.store.latest_source(url)
        fingerprint = fetch_settings_fingerprint(self.config.fetch)
        if cached is not None and cached_source_reusable(cached.source, fingerprint):
            return cached
        source = await self.fetcher.fetch(url)
        source = flag_injection(source)   # text that addresses the judge is flagged before anyone reads it
        source = dataclasses.replace(source, meta={**dict(source.meta), FETCH_SETTINGS_META: fingerprint})
        return self.store.get_source(self.store.add_source(source))  # stored form carries 'changed' flags

    async def _reference_source(self, key: str) -> SourceRow:
        """A written reference has no URL: a verified one is read from its DOI link (fetched as usual),
        any other is an explicit failed fetch with its check's evidence as the reason, never a verdict."""
        check = await self.refs.check_for(key) if self.refs is not None else None
        link = reading_link(check) if check is not None else None
        if check is None or not link:
            return self.store.get_source(self.store.add_source(unread_reference(key, check)))
        read = await self._fetch_or_reuse(link)
        # stored again under the citation key (a source is its cited URL), saying where it was read from
        meta = {**dict(read.source.meta), "read_from": link, "reference_status": check.status.value}
        return self.store.get_source(self.store.add_source(
            dataclasses.replace(read.source, url=key, meta=meta, raw=self.store.source_raw(read.id))))
