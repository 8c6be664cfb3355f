"""Measure the API judges against the local fake OpenAI server (no network).

    .venv/bin/python bench/judges.py [--latency 0.05] [--pages 6]

Prints:
1. pairs per second at concurrency 1, 8 and 32 with a fixed server latency;
2. input tokens per pair with passage selection versus the full source on ~7,000-token pages
   (the study's mean source length was 6,905 tokens; the target is at least 5x fewer);
3. calls (and tokens) saved by judging all statements of a response against one source per call.
"""
from __future__ import annotations

import argparse
import asyncio
import multiprocessing
import os
import random
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sourcecheckup.evidence import approx_tokens  # noqa: E402
from sourcecheckup.evidence import SourceText  # noqa: E402
from sourcecheckup.judges import make_judge  # noqa: E402
from tests.support.fake_llm import FakeLLMServer  # noqa: E402

KEY = "sk-bench-not-a-real-key"

_SUBJECTS = ["Serum ferritin", "Transferrin saturation", "Liver iron concentration", "Hepcidin",
             "Haemoglobin", "Fasting glucose", "Systolic blood pressure", "LDL cholesterol",
             "Alanine aminotransferase", "Cardiac output", "Bone density", "Creatinine clearance"]
_VERBS = ["rose", "fell", "did not change", "doubled", "varied widely", "stabilised"]
_GROUPS = ["C282Y homozygotes", "compound heterozygotes", "postmenopausal women", "blood donors",
           "adults with fatigue", "people with type 2 diabetes", "children under twelve", "older men",
           "patients on chelation", "regular drinkers"]
_CONTEXT = ["after weekly venesection", "during the first year", "in the control arm", "after iron chelation",
            "at the 6-month visit", "in the observational cohort", "compared with baseline",
            "among non-smokers", "in the screening programme", "after dietary advice"]


def make_page(seed: int, target_tokens: int = 7000) -> tuple[str, list[str]]:
    """A page of ~target_tokens tokens of varied clinical findings, and statements drawn from it."""
    rng = random.Random(seed)
    sentences: list[str] = []
    while approx_tokens(" ".join(sentences)) < target_tokens:
        n = rng.randint(20, 4000)
        sentences.append(f"{rng.choice(_SUBJECTS)} {rng.choice(_VERBS)} by {rng.randint(2, 60)}% among "
                         f"{n} {rng.choice(_GROUPS)} {rng.choice(_CONTEXT)} (study {seed}-{len(sentences)}).")
        if len(sentences) % 9 == 0:
            sentences[-1] += "\n\n"
    picks = rng.sample(range(len(sentences)), 4)
    statements = [sentences[i].split(" (study")[0].strip() + "." for i in picks]
    return " ".join(sentences), statements


def _serve(latency: float, ready: "multiprocessing.Queue[str]", stop: "multiprocessing.synchronize.Event") -> None:
    with FakeLLMServer("openai", latency_s=latency) as server:
        ready.put(server.base_url)
        stop.wait(600)


class ServerProcess:
    """The fake server in its own process, so its threads do not share our GIL (like a real API)."""

    def __init__(self, latency: float):
        ctx = multiprocessing.get_context("spawn")
        self._ready = ctx.Queue()
        self._stop = ctx.Event()
        self._process = ctx.Process(target=_serve, args=(latency, self._ready, self._stop), daemon=True)

    def __enter__(self) -> str:
        self._process.start()
        return self._ready.get(timeout=60)

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._process.join(timeout=10)


async def pairs_per_second(base_url: str, concurrency: int, pairs: int) -> tuple[float, float]:
    """(pairs per second, client CPU milliseconds per pair)."""
    text, statements = make_page(1, target_tokens=1500)
    source = SourceText.from_text(text)
    judge = make_judge("openai:gpt-4o", api_key=KEY, base_url=base_url, concurrency=concurrency)
    try:
        work = [(statements[i % len(statements)], source) for i in range(pairs)]
        started, cpu = time.perf_counter(), time.process_time()
        verdicts = await judge.verify_many(work)
        elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu
    finally:
        await judge.aclose()
    assert all(v.label.value == "supported" for v in verdicts), "the fake server should say supported"
    return pairs / elapsed, cpu / pairs * 1000


async def tokens_per_pair(base_url: str, pages: int) -> tuple[float, float, float]:
    results = {}
    data = [make_page(100 + i) for i in range(pages)]
    page_tokens = statistics.mean(approx_tokens(t) for t, _ in data)
    for mode, options in (("passages", {}), ("full", {"full_source": True})):
        judge = make_judge("openai:gpt-4o", api_key=KEY, base_url=base_url, **options)
        try:
            pairs = [(s, SourceText.from_text(t)) for t, statements in data for s in statements]
            verdicts = await judge.verify_many(pairs)
        finally:
            await judge.aclose()
        results[mode] = statistics.mean(v.tokens_in or 0 for v in verdicts)
    return page_tokens, results["passages"], results["full"]


async def batching(base_url: str, responses: int, statements_per: int, sources_per: int
                   ) -> dict[str, tuple[int, int, float]]:
    out = {}
    corpus = [make_page(500 + i, target_tokens=3000) for i in range(responses * sources_per)]
    for mode, options in (("one pair per call", {}), ("per-source batch", {"batch": True})):
        pairs = []
        for r in range(responses):
            sources = [SourceText.from_text(corpus[r * sources_per + k][0]) for k in range(sources_per)]
            statements = [corpus[r * sources_per][1][i % 4] for i in range(statements_per)]
            pairs += [(s, src) for src in sources for s in statements]
        judge = make_judge("openai:gpt-4o", api_key=KEY, base_url=base_url, **options)
        try:
            started = time.perf_counter()
            verdicts = await judge.verify_many(pairs)
            elapsed = time.perf_counter() - started
        finally:
            await judge.aclose()
        assert len(verdicts) == len(pairs)
        out[mode] = (judge.usage().calls, sum(v.tokens_in or 0 for v in verdicts), elapsed)
    return out


async def main(latency: float, pages: int) -> None:
    with ServerProcess(latency) as base_url:
        print(f"fake OpenAI server on 127.0.0.1 (own process), fixed latency {latency * 1000:.0f} ms per call; "
              f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f}\n")
        print("1. throughput (pairs per second)")
        for concurrency, pairs in ((1, 30), (8, 160), (32, 320)):
            rate, cpu_ms = await pairs_per_second(base_url, concurrency, pairs)
            ideal = concurrency / latency
            print(f"   concurrency {concurrency:>2}: {rate:7.1f} pairs/s  ({pairs} pairs; "
                  f"latency-bound ceiling {ideal:.0f}/s; client CPU {cpu_ms:.1f} ms/pair)")

        page_tokens, selected, full = await tokens_per_pair(base_url, pages)
        print(f"\n2. input tokens per pair on {pages} pages of ~{page_tokens:,.0f} tokens "
              f"({pages * 4} statements)")
        print(f"   passage selection (BM25, default budget): {selected:8,.0f}")
        print(f"   full source:                             {full:8,.0f}")
        print(f"   ratio: {full / selected:.1f}x fewer tokens with passage selection (target >= 5x)")

        result = await batching(base_url, responses=10, statements_per=4, sources_per=3)
        (calls1, tok1, t1), (calls2, tok2, t2) = result["one pair per call"], result["per-source batch"]
        print("\n3. per-source batching (10 responses x 4 statements x 3 sources = 120 pairs)")
        print(f"   one pair per call: {calls1:4d} calls, {tok1:8,d} input tokens, {t1:5.2f} s")
        print(f"   per-source batch:  {calls2:4d} calls, {tok2:8,d} input tokens, {t2:5.2f} s")
        print(f"   calls saved: {calls1 - calls2} ({1 - calls2 / calls1:.0%}); "
              f"input tokens saved: {1 - tok2 / tok1:.0%}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--latency", type=float, default=0.05, help="server latency per call, seconds")
    parser.add_argument("--pages", type=int, default=6, help="7,000-token pages for the token comparison")
    args = parser.parse_args()
    asyncio.run(main(args.latency, args.pages))
