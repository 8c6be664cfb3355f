"""How soon the fetcher, model-server detection, whois, the judges, reference lookups and the HTML report give up on
what they must refuse or cut (moved from the unit suite, issue 31: the unit tests keep the outcome, the time
lives here).

Fetch probes fetch from the local fixture site; their ideal is measured in the same run: a plain fetch of a fast
page (the fetcher's own floor), plus the wait the probe must make (a time cap, or waves of a per-host limit).
The other probes talk to the test suite's fakes on 127.0.0.1 (silent servers that accept and never answer, a
slow LLM server, slow Crossref/OpenAlex); their ideal is the time cap they must wait out, plus the same floor.
The hostile-report probe renders the escaping test's run and compares it with the same report whose strings
are replaced by plain letters of the same length (escaping and cutting hostile text should cost little).
Each line prints the wall time, the ideal and their ratio. Target: a ratio near 1 (the unit tests used to hold
bounds of about 1.5-2x, which failed on a loaded machine).

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
        line(name, took, wait_s + floor, outcomes == [expected], f"{outcomes}, wanted {expected}")


def line(name: str, took: float, ideal: float, ok: bool, unexpected: str = "") -> None:
    flag = "" if ok else f"  (UNEXPECTED outcome: {unexpected})"
    print(f"{name:<44} {took:6.2f} s  ideal {ideal:5.2f} s  ratio {took / ideal:5.2f}{flag}")


async def other_caps() -> None:
    """Detection, judges and reference lookups against silent or slow fakes; each floor is the same call
    answered at once."""
    from sourcecheckup.judges import make_judge
    from sourcecheckup.judges.detect import detect_servers
    from sourcecheckup.models import Label
    from sourcecheckup.references.model import ReferenceStatus
    from sourcecheckup.references.resolve import ReferenceResolver
    from tests.support.fake_llm import FakeLLMServer, slow
    from tests.support.fake_model_servers import silent, vllm
    from tests.support.fake_scholarly import start_scholarly
    from tests.judges.test_judge_openai import KEY, STATEMENT
    from tests.references.test_reference_lookup import UNKNOWN_DOI, ZINMAN, settings

    with silent() as a, silent() as b, silent() as c, vllm() as vl:
        await detect_servers([vl.port], timeout_s=0.4)   # imports and first connection
        started = time.perf_counter()
        await detect_servers([vl.port], timeout_s=0.4)
        floor = time.perf_counter() - started   # asking the answering server alone
        started = time.perf_counter()
        servers = await detect_servers([a.port, b.port, c.port, vl.port], timeout_s=0.4)
        took = time.perf_counter() - started
    line("detect: 3 silent servers + 1, 0.4 s cap", took, 0.4 + floor, [s.kind for s in servers] == ["vLLM"],
         str([s.kind for s in servers]))

    from sourcecheckup.evidence import SourceText
    page = SourceText.from_text("Iron overload develops in 28.4% of male C282Y homozygotes.",
                                url="https://example.org/haemochromatosis", title="Haemochromatosis")
    with FakeLLMServer("openai", api_key=KEY, model_versions={"gpt-4o": "gpt-4o-2024-08-06"}) as server:
        judge = make_judge("openai:gpt-4o", api_key=KEY, base_url=server.base_url, timeout_s=0.3, max_retries=1,
                           backoff_s=0.01)
        try:
            await judge.verify(STATEMENT, page)   # imports, first connection
            started = time.perf_counter()
            await judge.verify(STATEMENT, page)
            floor = time.perf_counter() - started   # a verdict the fake answers at once
            server.script(slow(3), slow(3))
            started = time.perf_counter()
            v = await judge.verify(STATEMENT, page)
            took = time.perf_counter() - started
        finally:
            await judge.aclose()
    line("openai judge: 2 x 0.3 s cap (one retry)", took, 0.6 + 0.01 + floor, v.label is Label.JUDGE_ERROR,
         v.label.value)

    fake, stop = start_scholarly()
    try:
        async with ReferenceResolver(settings(fake)) as resolver:
            await resolver.check(ZINMAN)
        async with ReferenceResolver(settings(fake)) as resolver:
            started = time.perf_counter()
            await resolver.check(ZINMAN)
            floor = time.perf_counter() - started   # a DOI Crossref answers at once
        fake.slow = True
        async with ReferenceResolver(settings(fake)) as resolver:
            started = time.perf_counter()
            result = await resolver.check(UNKNOWN_DOI)
            took = time.perf_counter() - started
    finally:
        stop()
    # Crossref then OpenAlex, one try each at a 0.5 s cap
    line("reference lookup: 2 services x 0.5 s cap", took, 1.0 + floor,
         result.status is ReferenceStatus.LOOKUP_FAILED, result.status.value)


def whois_cap() -> None:
    from sourcecheckup.report.whois import whois_countries
    from tests.report.test_whois import FakeWhois

    quiet = FakeWhois(lambda q: None)
    answering = FakeWhois(lambda q: b"Registrant Country: DE\r\n")
    try:
        whois_countries(["warm.de"], server=answering.address, timeout_s=1.0)
        started = time.perf_counter()
        whois_countries(["x.de"], server=answering.address, timeout_s=1.0)
        floor = time.perf_counter() - started   # one lookup answered at once
        started = time.perf_counter()
        answers = whois_countries(["a.com", "b.com", "c.com"], server=quiet.address, timeout_s=1.0, concurrency=1)
        took = time.perf_counter() - started
    finally:
        quiet.close()
        answering.close()
    line("whois: silent server, 3 domains, 1 s cap", took, 1.0 + floor,
         all(a.country is None for a in answers.values()) and quiet.connections == 1,
         f"{quiet.connections} connections")


def hostile_report() -> None:
    import json as _json
    import tempfile

    from sourcecheckup.report import build_report, report_html
    from tests.report.test_report_escaping import _hostile_run

    def plain(value):   # the same report with every string replaced by as many plain letters
        if isinstance(value, str):
            return "a" * len(value)
        if isinstance(value, list):
            return [plain(v) for v in value]
        if isinstance(value, dict):
            return {k: plain(v) if k not in ("label", "status", "kind") else v for k, v in value.items()}
        return value

    with tempfile.TemporaryDirectory() as tmp:
        store, run_id = _hostile_run(Path(tmp))
        try:
            report = build_report(store, run_id)
        finally:
            store.close()
    benign = _json.loads(_json.dumps(plain(report)))
    ideal = min(_timed_render(report_html, benign) for _ in range(3))
    took = min(_timed_render(report_html, report) for _ in range(3))
    html = report_html(report)
    line("HTML report of the hostile run (best of 3)", took, ideal, "<script>alert" not in html,
         "a script survived")


def _timed_render(render, report) -> float:
    started = time.perf_counter()
    render(report)
    return time.perf_counter() - started


def main() -> int:
    site, stop = start_site()
    try:
        asyncio.run(main_async(site))
    finally:
        stop()
    asyncio.run(other_caps())
    whois_cap()
    hostile_report()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
