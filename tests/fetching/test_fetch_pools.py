"""The fetcher keeps a connection pool per host (fetching/pools.py): real fetches from fixture sites
on several loopback addresses."""
from __future__ import annotations

import asyncio

from sourcecheckup.fetching import FetchOptions, HttpFetcher
from sourcecheckup.models import FetchStatus
from tests.support.site import start_site

HOSTS = tuple(f"127.0.0.{i}" for i in range(1, 5))


def _sites(latency_first: float = 0.0):
    return [start_site(latency_first if i == 0 else 0.0, host) for i, host in enumerate(HOSTS)]


async def test_each_host_has_its_own_pool_and_idle_pools_beyond_the_cap_are_closed():
    sites = _sites()
    fetcher = HttpFetcher(FetchOptions(allow_hosts=HOSTS, per_host=2, total_concurrency=4, timeout_s=10))
    try:
        pools = fetcher.host_pools
        assert pools is not None
        pools.keep = 2
        first = [await fetcher.fetch(f"{base}/article/hypertension") for base, _ in sites]
        assert [s.status for s in first] == [FetchStatus.OK] * 4 and all(s.text for s in first)
        assert pools.open_pools == 2                    # the two hosts asked last; the others' sockets closed
        again = await fetcher.fetch(f"{sites[0][0]}/article/hfe-hemochromatosis")   # a closed host's pool reopens
        assert again.status is FetchStatus.OK and pools.open_pools == 2
    finally:
        await fetcher.aclose()
        for _, stop in sites:
            stop()


async def test_a_pool_with_a_request_in_flight_is_never_closed_to_make_room():
    sites = _sites(latency_first=0.5)   # the first host answers slowly: its request is in flight throughout
    # no retries: a request whose connection were closed under it would fail, not quietly go again
    fetcher = HttpFetcher(FetchOptions(allow_hosts=HOSTS, per_host=2, total_concurrency=8, timeout_s=10, retries=0))
    try:
        assert fetcher.host_pools is not None
        fetcher.host_pools.keep = 1
        slow = asyncio.create_task(fetcher.fetch(f"{sites[0][0]}/article/hypertension"))
        await asyncio.sleep(0.1)
        quick = await asyncio.gather(*(fetcher.fetch(f"{base}/article/hypertension") for base, _ in sites[1:]))
        assert all(s.status is FetchStatus.OK for s in quick)
        done = await slow
        assert done.status is FetchStatus.OK and done.text, done.reason
    finally:
        await fetcher.aclose()
        for _, stop in sites:
            stop()
