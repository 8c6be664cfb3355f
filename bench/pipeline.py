"""Pipeline throughput: 200 answers x 5 statements x 3 sources against a local site.

The site answers every page after 50 ms; the judge takes a fixed 100 ms a pair at a
concurrency of 16. The ideal wall time is pairs x judge latency / concurrency plus the
fetch critical path (one page latency before the first pair can start). Prints the wall
time, its ratio to the ideal (target <= 1.2) and peak memory.

    .venv/bin/python bench/pipeline.py [--answers 200] [--concurrency 16]
"""
from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sourcecheckup.fetching import FetchOptions  # noqa: E402
from sourcecheckup.models import Response  # noqa: E402
from sourcecheckup.pipeline import Audit, RunConfig  # noqa: E402
from sourcecheckup.store import Store  # noqa: E402
from tests.support.fake_judge import KeywordJudge  # noqa: E402
from tests.support.site import start_site  # noqa: E402

PAGES = ["hypertension", "metformin-lactic-acidosis", "hfe-hemochromatosis"]
SENTENCES = [
    "Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher.",
    "Metformin is a biguanide used as first-line treatment for type 2 diabetes.",
    "Iron-overload-related disease was present in 28.4% of male C282Y homozygotes.",
    "The DASH diet alone can lower systolic blood pressure by about 11 mm Hg.",
    "Lactic acidosis presents with malaise, myalgia and abdominal pain.",
]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--answers", type=int, default=200)
    ap.add_argument("--concurrency", type=int, default=16)
    ap.add_argument("--site-latency", type=float, default=0.05)
    ap.add_argument("--judge-latency", type=float, default=0.1)
    a = ap.parse_args()
    base, stop = start_site(latency_s=a.site_latency)
    try:
        responses = [Response(id=f"b{i}", text=" ".join(f"{s} [{k % 3 + 1}]" for k, s in enumerate(SENTENCES)),
                              citations=tuple(f"{base}/article/{p}?copy={i}" for p in PAGES),
                              markers={"1": 0, "2": 1, "3": 2})
                     for i in range(a.answers)]
        pairs = a.answers * len(SENTENCES) * len(PAGES)
        with tempfile.TemporaryDirectory() as tmp:
            store = Store(Path(tmp) / "bench.db")
            config = RunConfig(judges=["keyword"], judge_concurrency=a.concurrency,
                               fetch=FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=30))
            audit = Audit(store, config, judges=[KeywordJudge(a.judge_latency)])
            t0 = time.perf_counter()
            run_id = asyncio.run(audit.start(responses))
            wall = time.perf_counter() - t0
            judged = store.db.execute("SELECT COUNT(*) FROM verdicts WHERE run_id = ?", [run_id]).fetchone()[0]
    finally:
        stop()
    ideal = pairs * a.judge_latency / a.concurrency + a.site_latency
    peak_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"pipeline: {a.answers} answers x {len(SENTENCES)} statements x {len(PAGES)} sources = {pairs} pairs "
          f"({judged} judged), {a.answers * len(PAGES)} URLs")
    print(f"  site latency {a.site_latency * 1000:.0f} ms, judge latency {a.judge_latency * 1000:.0f} ms, "
          f"concurrency {a.concurrency}")
    print(f"  wall time        {wall:8.2f} s")
    print(f"  ideal            {ideal:8.2f} s  (pairs x latency / concurrency + one page latency)")
    print(f"  ratio to ideal   {wall / ideal:8.3f}  (target <= 1.2)")
    print(f"  peak memory      {peak_mb:8.1f} MiB")


if __name__ == "__main__":
    main()
