"""Fetch benchmark: 200 URLs on the local fixture site, 100 ms latency each, 20 needing the browser.

The site listens on 127.0.0.1 .. 127.0.0.<hosts> (all loopback) so the per-host limit does not
hide the total concurrency. Prints wall time, the ideal and their ratio, browser launches and
peak memory (this process plus its children: the site server's process is left out; Chromium
and the extraction workers are counted).

The ideal for the configured limits:
  http    = URLs x latency / effective concurrency, where effective = min(total, per_host x hosts)
            (+ 2 x latency: the last JavaScript page can only be rendered after its HTTP read)
  browser = latency (the first HTTP read that shows a page needs JavaScript) + measured launch
            + ceil(js / pages) x latency (a rendered page gets its HTML from the plain HTTP read
            and asks the site only for its data)
  ideal   = max(http, browser): browser pages render while plain HTTP fetches go on.

The CPU floor: no run can be faster than its CPU work allows, so the target is stated against
  floor   = max(all CPU seconds / cores, the fetcher process's own CPU seconds)
            (the fetcher's Python runs under one interpreter lock: one core at a time)
  target: wall / max(ideal, floor) <= 1.3.
The last line is for scripts: `fetch: ratio R (to max(ideal, cpu floor)); cpu ms/url C`.
It also measures the extractor and the page detectors alone (CPU ms per URL over the same
pages, in this process, after the run), the part of the floor that scales with every URL.

Run: .venv/bin/python bench/fetch.py [--urls 200] [--js 20] [--latency 0.1] [--concurrency 16]
     [--per-host 4] [--hosts 8] [--pages 4] [--extract-workers N]
"""
from __future__ import annotations

import argparse
import asyncio
import math
import os
import resource
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.memory import cpu_seconds, descendants, pss_kb  # noqa: E402
from sourcecheckup.fetching.browser import BrowserFetcher, browser_status  # noqa: E402
from sourcecheckup.fetching.extract import warm_up  # noqa: E402
from sourcecheckup.fetching import FetchOptions, make_fetcher  # noqa: E402
from sourcecheckup.workers import AUTO, shared_pool  # noqa: E402

PAGES = ("/article/metformin-lactic-acidosis", "/article/hfe-hemochromatosis", "/article/hypertension",
         "/forum/thread-ferritin.html", "/docs/diabetes-guideline.pdf")


class ProcessSampler:
    """Peak memory (PSS) and CPU time of this process and its children, sampled once a second
    (reading the memory maps of 30 Chromium processes costs CPU of its own, so not more often;
    CPU times are cumulative, and the last sample is taken before the browser closes)."""

    def __init__(self, exclude: int = 0) -> None:
        self.exclude = exclude   # the site's process: a child of this one, but not the fetcher's work
        self._proc = None
        # /proc first: it gives PSS, where psutil's RSS counts Chromium's shared pages once per process
        if Path("/proc/self/status").exists():
            self.how = "/proc PSS: Python + child processes (Chromium, extraction workers)"
        else:
            try:
                import psutil  # type: ignore[import-not-found]

                self._proc = psutil.Process()
                self.how = "psutil RSS: Python + child processes (Chromium, extraction workers)"
            except ImportError:
                self.how = "Python only (no psutil, no /proc)"
        self.peak = 0
        self.cpu: dict[int, float] = {}   # pid -> CPU seconds seen (children that exit keep their last figure)
        self.kinds: dict[int, str] = {}   # pid -> what the process is, from its command line when first seen
        self._task: asyncio.Task[None] | None = None

    def sample(self) -> None:
        if self._proc is not None:
            procs = [p for p in [self._proc, *self._proc.children(recursive=True)] if p.pid != self.exclude]
            total = 0
            for p in procs:
                try:
                    total += p.memory_info().rss
                    times = p.cpu_times()
                    self.cpu[p.pid] = times.user + times.system
                except Exception:
                    pass
        elif Path("/proc/self/status").exists():
            me = os.getpid()
            pids = [p for p in [me, *descendants(me)] if p != self.exclude]
            total = sum((pss_kb(p) or 0) * 1024 for p in pids)
            for p in pids:
                self.cpu[p] = max(self.cpu.get(p, 0.0), cpu_seconds(p))
                if p not in self.kinds:
                    self.kinds[p] = _kind(p)
        else:
            total = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
        self.peak = max(self.peak, total)

    async def _run(self) -> None:
        while True:
            self.sample()
            await asyncio.sleep(1.0)

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        self.sample()
        if self._task:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass


async def run(args: argparse.Namespace) -> int:
    # the site runs in its own process so its threads do not compete with the fetcher for the GIL
    server = subprocess.Popen([sys.executable, "-m", "tests.support.site", str(args.latency), str(args.hosts)],
                              cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert server.stdout is not None and server.stdin is not None
    bases = [server.stdout.readline().strip() for _ in range(args.hosts)]
    hosts = [b.split("//", 1)[1].rsplit(":", 1)[0] for b in bases]

    def stop() -> None:
        server.stdin.close()   # type: ignore[union-attr]
        server.wait(timeout=10)

    # JavaScript pages spread evenly through the list, every host used in turn
    every = max(1, args.urls // max(1, args.js)) if args.js else args.urls + 1
    urls, js_seen = [], 0
    for i in range(args.urls):
        base = bases[i % len(bases)]
        if args.js and i % every == 0 and js_seen < args.js:
            urls.append(f"{base}/app/article.html?n={i}")
            js_seen += 1
        else:
            urls.append(f"{base}{PAGES[i % len(PAGES)]}?n={i}")
    available, browser_message = browser_status()
    browser = "auto" if available and args.js else "never"
    resolver_rules = "--host-resolver-rules=MAP * ~NOTFOUND, " + ", ".join(f"EXCLUDE {h}" for h in hosts)
    options = FetchOptions(allow_hosts=tuple(hosts), total_concurrency=args.concurrency, per_host=args.per_host,
                           browser=browser, browser_pages=args.pages, browser_args=(resolver_rules,),
                           timeout_s=20.0, extract_workers=args.extract_workers)
    fetcher = make_fetcher(options)
    warm_up()   # the extractor's one-off imports are start-up, not throughput: done before the clock starts
    if args.extract_workers == AUTO:
        shared_pool().start(wait=True)   # so is starting the worker processes (about 1 s, once per process)
    memory = ProcessSampler(exclude=server.pid)
    memory.sample()
    cpu_before = dict(memory.cpu)
    load_before = os.getloadavg()[0]
    memory.start()
    started = time.monotonic()
    try:
        sources = await asyncio.gather(*(fetcher.fetch(u) for u in urls))
    finally:
        wall = time.monotonic() - started
        await memory.stop()
        load_after = os.getloadavg()[0]
        pool = fetcher.pool if isinstance(fetcher, BrowserFetcher) else None
        await fetcher.aclose()
        stop()
    launches = pool.launches if pool else 0
    launch_s = pool.launch_s if pool else 0.0
    effective = min(args.concurrency, args.per_host * len(hosts))
    js = args.js if browser == "auto" else 0
    http_ideal = args.urls * args.latency / effective + (2 * args.latency if js else 0.0)
    browser_ideal = (args.latency + launch_s + math.ceil(js / max(1, args.pages)) * args.latency) if js else 0.0
    ideal = max(http_ideal, browser_ideal)
    outcomes = Counter(f"{s.status.value}/{s.origin}" for s in sources)
    print(f"urls={args.urls} js={args.js} latency={args.latency * 1000:.0f}ms hosts={len(hosts)} "
          f"concurrency={args.concurrency} per_host={args.per_host} (effective {effective}) "
          f"browser={browser} pages={args.pages} extract_workers={args.extract_workers}")
    if browser == "never" and args.js:
        print(f"browser: {browser_message}")
    print(f"outcomes: {dict(sorted(outcomes.items()))}")
    print(f"wall={wall:.2f}s ideal={ideal:.2f}s (http {http_ideal:.2f}s, browser {browser_ideal:.2f}s "
          f"incl. launch {launch_s:.2f}s) ratio={wall / ideal:.2f}")
    me = os.getpid()
    cpu_self = memory.cpu.get(me, 0.0) - cpu_before.get(me, 0.0)
    cpu_children = sum(v - cpu_before.get(p, 0.0) for p, v in memory.cpu.items() if p != me)
    print(f"browser launches={launches}")
    cores = os.cpu_count() or 1
    spread = (cpu_self + cpu_children) / cores
    floor = max(spread, cpu_self)
    bound = max(ideal, floor)
    cpu_ms_url = (cpu_self + cpu_children) * 1000 / max(1, args.urls)
    print(f"cpu: fetcher {cpu_self:.2f}s + children {cpu_children:.2f}s on {cores} cores "
          f"= {cpu_ms_url:.1f} ms/url (fetcher {cpu_self * 1000 / max(1, args.urls):.1f}); "
          f"load average {load_before:.1f} before, {load_after:.1f} after (the machine is shared)")
    print("cpu by process kind: " + ", ".join(f"{kind} {secs:.2f}s" for kind, secs in _cpu_by_kind(memory, cpu_before)))
    print(f"cpu floor={floor:.2f}s = max(all CPU over {cores} cores {spread:.2f}s, fetcher process {cpu_self:.2f}s) "
          f"= {floor / ideal:.2f} x ideal")
    extract_ms = extraction_cpu_ms(urls)
    print(f"extract+detect cpu={extract_ms:.2f} ms/url (trafilatura/pypdf and the page detectors, "
          f"one thread, same pages)")
    ratio = wall / bound
    print(f"ratio to ideal={wall / ideal:.2f}; ratio to max(ideal, cpu floor)={ratio:.2f} "
          f"(target <= 1.3: {'met' if ratio <= 1.3 else 'not met'}; the larger bound is "
          f"{'the cpu floor' if floor > ideal else 'latency'})")
    print(f"peak memory={memory.peak / 2**20:.0f} MB ({memory.how}); "
          f"peak_rss_python={resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MB")
    bad = [s for s in sources if s.status.value != "ok" or not s.text]
    for s in bad[:5]:
        print(f"  not ok: {s.url} {s.status.value} {s.reason}")
    print(f"fetch: ratio {ratio:.2f} (to max(ideal, cpu floor)); cpu ms/url {cpu_ms_url:.1f}")
    return 1 if bad or (js and launches != 1) else 0


def _kind(pid: int) -> str:
    try:
        cmd = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
    except OSError:
        return "exited"
    if pid == os.getpid():
        return "fetcher"
    if "multiprocessing" in cmd:
        return "extraction workers"
    if "node" in cmd.split(" ", 1)[0] or "playwright" in cmd and "driver" in cmd:
        return "playwright driver"
    for part in ("renderer", "gpu-process", "utility", "zygote"):
        if f"--type={part}" in cmd:
            return f"chromium {part}"
    return "chromium browser" if "chrom" in cmd.lower() else cmd.split(" ", 1)[0].rsplit("/", 1)[-1]


def _cpu_by_kind(memory: "ProcessSampler", before: dict[int, float]) -> list[tuple[str, float]]:
    """CPU seconds of the run by process kind (the sampler saw each pid; a pid gone is "exited")."""
    out: Counter[str] = Counter()
    for pid, secs in memory.cpu.items():
        out[memory.kinds.get(pid, "unknown")] += secs - before.get(pid, 0.0)
    return sorted(out.items(), key=lambda kv: -kv[1])


def extraction_cpu_ms(urls: list[str], rounds: int = 3) -> float:
    """CPU ms per URL of reading the fixture pages (extraction and detection), in this thread."""
    from tests.support.site import SITE_DIR, _guideline_pdf
    from sourcecheckup.fetching.documents import source_from_document

    docs = []
    for url in urls:
        path = url.split("//", 1)[1].split("/", 1)[1].split("?", 1)[0]
        if path.endswith(".pdf"):
            docs.append((_guideline_pdf(), "application/pdf"))
        else:
            file = SITE_DIR / path
            docs.append(((file if file.suffix else file.with_suffix(".html")).read_bytes(), "text/html; charset=utf-8"))
    started = time.thread_time()
    for _ in range(rounds):
        for (raw, ctype), url in zip(docs, urls):
            source_from_document(url, raw, ctype, final_url=url, http_status=200, origin="http",
                                 reason_ok="HTTP 200 OK", started=time.monotonic())
    return (time.thread_time() - started) * 1000 / max(1, rounds * len(docs))


def main() -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--urls", type=int, default=200)
    parser.add_argument("--js", type=int, default=20)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--per-host", type=int, default=4)
    parser.add_argument("--hosts", type=int, default=8, help="loopback addresses 127.0.0.1 .. 127.0.0.N")
    parser.add_argument("--pages", type=int, default=4, help="browser pages at once")
    parser.add_argument("--extract-workers", type=int, default=AUTO,
                        help="processes for text extraction (-1: the audit's default, the shared pool, "
                             "started before the clock; 0: threads in this process; N: a pool of N)")
    return asyncio.run(run(parser.parse_args()))


if __name__ == "__main__":
    sys.exit(main())
