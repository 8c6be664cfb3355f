"""How soon the fetcher gives up on what it must refuse or cut (moved from the unit suite, issue 31: the unit
tests keep the outcome, the time lives here).

Each probe fetches from the local fixture site and prints its wall time, the ideal for it and their ratio.
The ideal is measured in the same run: a plain fetch of a fast page (the fetcher's own floor), plus the
wait the probe must make (a time cap, or waves of a per-host limit). Target: a ratio near 1 (the unit
tests used to hold bounds of about 1.5-2x, which failed on a loaded machine).

    .venv/bin/python bench/time_caps.py
"""
from __future__ import annotations

import asyncio
import statistics
import sys
import time
from pathlib import Path
from urllib.parse import quote

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sourcecheckup.fetching import FetchOptions, HttpFetcher  # noqa: E402
from tests.support.site import start_site  # noqa: E402


def options(**kw) -> FetchOptions:
    return FetchOptions(**{"allow_hosts": ("127.0.0.1",), "timeout_s": 5.0, "retries": 2, "backoff_s": 0.05,
                           "extract_workers": 0, **kw})


async def timed(fetcher: HttpFetcher, *urls: str) -> tuple[float, list]:
    started = time.perf_counter()
    sources = await asyncio.gather(*(fetcher.fetch(u) for u in urls))
    return time.perf_counter() - started, sources


async def main_async(site: str) -> None:
    plain_fetcher = HttpFetcher(options())
    try:
        await plain_fetcher.fetch(f"{site}/article/hypertension?warm=1")   # imports and first connection
        floor = statistics.median([(await timed(plain_fetcher, f"{site}/article/hypertension?n={i}"))[0]
                                   for i in range(5)])
    finally:
        await plain_fetcher.aclose()
    print(f"floor: a plain fetch of a fast page {floor * 1000:.0f} ms (median of 5)")
    probes = [
        ("redirect to a private address refused", {}, [f"{site}/redirect/private"], 0.0, "unsafe_url"),
        ("redirect to a short numeric host refused", {},
         [f"{site}/redirect/to?u={quote('http://127.1:9/latest', safe='')}"], 0.0, "unsafe_url"),
        ("Retry-After 3600 given up at once", {}, [f"{site}/flaky/503-long"], 0.0, "http_error"),
        ("slow body and dripping headers, 0.8 s cap", {"timeout_s": 0.8},
         [f"{site}/slow", f"{site}/slow-headers"], 0.8, "timeout"),
        ("4 x 0.3 s pages, 2 per host", {"per_host": 2, "timeout_s": 3.0},
         [f"{site}/slow?s=0.3&n={i}" for i in range(4)], 0.6, "ok"),
        ("dripped 0.2 MB of nested markup, 4 s cap", {"timeout_s": 4.0},
         [f"{site}/hostile/drip?mb=0.2&s=3"], 4.0, "timeout"),
    ]
    for name, opts, urls, wait_s, expected in probes:
        fetcher = HttpFetcher(options(**opts))
        try:
            took, sources = await timed(fetcher, *urls)
        finally:
            await fetcher.aclose()
        outcomes = sorted({s.status.value for s in sources})
        ideal = wait_s + floor
        flag = "" if outcomes == [expected] else f"  (UNEXPECTED outcome: {outcomes}, wanted {expected})"
        print(f"{name:<44} {took:6.2f} s  ideal {ideal:5.2f} s  ratio {took / ideal:5.2f}{flag}")


def main() -> int:
    site, stop = start_site()
    try:
        asyncio.run(main_async(site))
    finally:
        stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
