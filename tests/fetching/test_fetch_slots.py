"""A fetch holds its host's slot for the download only: reading the text is this machine's CPU, not the
site's time, so the next page of the same site is downloaded meanwhile."""
from __future__ import annotations

import asyncio

import httpx

from sourcecheckup.fetching import FetchOptions, HttpFetcher
from sourcecheckup.models import FetchStatus


async def test_the_next_download_from_a_host_does_not_wait_for_the_text_of_the_last(site):
    f = HttpFetcher(FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=5.0, per_host=1, total_concurrency=1))
    real_read = f.reader.read
    release = asyncio.Event()
    reading: list[str] = []

    async def slow_read(url, *args, **kwargs):
        reading.append(url)
        if url.endswith("first"):
            await release.wait()   # the first page's text is still being read ...
        return await real_read(url, *args, **kwargs)

    f.reader.read = slow_read   # type: ignore[method-assign]
    first_url, second_url = f"{site}/article/hypertension?slot=first", f"{site}/article/hfe-hemochromatosis?slot=second"
    try:
        first = asyncio.create_task(f.fetch(first_url))
        second = asyncio.create_task(f.fetch(second_url))
        # ... and the one slot of the host (and the one slot in all) already serves the second page
        second_source = await asyncio.wait_for(second, timeout=4.0)
        assert not first.done()
        release.set()
        first_source = await first
    finally:
        release.set()
        await f.aclose()
    assert reading == [first_url, second_url]
    assert first_source.status is FetchStatus.OK and "130/80 mm Hg" in first_source.text
    assert second_source.status is FetchStatus.OK and second_source.text
    async with httpx.AsyncClient() as client:
        hits = [(await client.get(f"{site}/_hits", params={"path": p})).json()["hits"]
                for p in ("/article/hypertension?slot=first", "/article/hfe-hemochromatosis?slot=second")]
    assert hits == [1, 1]


async def test_documents_waiting_to_be_read_are_bounded(site):
    """Downloads stop when twice the fetch concurrency of documents wait for their text."""
    f = HttpFetcher(FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=5.0, per_host=2, total_concurrency=2))
    release = asyncio.Event()
    real_read = f.reader.read
    waiting = 0

    async def held_read(url, *args, **kwargs):
        nonlocal waiting
        waiting += 1
        await release.wait()
        return await real_read(url, *args, **kwargs)

    f.reader.read = held_read   # type: ignore[method-assign]
    tasks = [asyncio.create_task(f.fetch(f"{site}/article/hypertension?bound={i}")) for i in range(8)]
    try:
        await asyncio.sleep(1.0)
        assert waiting == 4   # 2 x total_concurrency held for reading; the other four not downloaded yet
        release.set()
        sources = await asyncio.wait_for(asyncio.gather(*tasks), timeout=5.0)
    finally:
        release.set()
        await f.aclose()
    assert all(s.status is FetchStatus.OK for s in sources) and waiting == 8
