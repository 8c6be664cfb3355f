"""Fetch benchmark: 200 URLs on the local fixture site, 100 ms latency each, 20 needing the browser.

Prints wall time, its ratio to the ideal for the configured concurrency, browser launches and
peak memory. Run: .venv/bin/python bench/fetch.py [--urls 200] [--js 20] [--latency 0.1] [--concurrency 16]
"""
from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sourcecheckup.browser import TEST_RESOLVER_RULES, BrowserFetcher, find_chromium  # noqa: E402
from sourcecheckup.fetch import FetchOptions, make_fetcher  # noqa: E402
import subprocess  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]

PAGES = ("/article/metformin-lactic-acidosis", "/article/hfe-hemochromatosis", "/article/hypertension",
         "/forum/thread-ferritin.html", "/docs/diabetes-guideline.pdf")


async def run(args: argparse.Namespace) -> int:
    # the site runs in its own process so its threads do not compete with the fetcher for the GIL
    server = subprocess.Popen([sys.executable, "-m", "tests.support.site", str(args.latency)], cwd=ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    base = server.stdout.readline().strip()

    def stop() -> None:
        server.stdin.close()
        server.wait(timeout=10)
    urls = [f"{base}/app/article.html?n={i}" for i in range(args.js)]
    urls += [f"{base}{PAGES[i % len(PAGES)]}?n={i}" for i in range(args.urls - args.js)]
    browser = "auto" if find_chromium() and args.js else "never"
    options = FetchOptions(allow_hosts=("127.0.0.1",), total_concurrency=args.concurrency, per_host=args.concurrency,
                           browser=browser, browser_pages=args.pages, browser_args=(TEST_RESOLVER_RULES,),
                           timeout_s=20.0)
    fetcher = make_fetcher(options)
    started = time.monotonic()
    try:
        sources = await asyncio.gather(*(fetcher.fetch(u) for u in urls))
    finally:
        wall = time.monotonic() - started
        launches = fetcher.launches if isinstance(fetcher, BrowserFetcher) else 0
        await fetcher.aclose()
        stop()
    # every URL costs one request; a JS page costs two more in the browser (the page and its data)
    http_ideal = args.urls * args.latency / args.concurrency
    browser_ideal = args.js * 2 * args.latency / max(1, min(args.pages, args.concurrency))
    ideal = http_ideal + (browser_ideal if browser == "auto" else 0.0)
    outcomes = Counter(f"{s.status.value}/{s.origin}" for s in sources)
    rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"urls={args.urls} js={args.js} latency={args.latency * 1000:.0f}ms concurrency={args.concurrency} "
          f"browser={browser} pages={args.pages}")
    print(f"outcomes: {dict(sorted(outcomes.items()))}")
    print(f"wall={wall:.2f}s ideal={ideal:.2f}s (http {http_ideal:.2f}s + browser {browser_ideal:.2f}s) "
          f"ratio={wall / ideal:.2f}" if ideal else f"wall={wall:.2f}s")
    print(f"browser launches={launches} peak_rss_python={rss_mb:.0f} MB")
    bad = [s for s in sources if s.status.value != "ok" or not s.text]
    for s in bad[:5]:
        print(f"  not ok: {s.url} {s.status.value} {s.reason}")
    return 1 if bad else 0


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--urls", type=int, default=200)
    parser.add_argument("--js", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--pages", type=int, default=4, help="browser pages at once")
    return asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
