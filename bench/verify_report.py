"""What verify-report and the evidence digest cost on a synthetic run, as ratios to writing the JSON report
(CPU seconds of this process, so a busy machine does not skew them).

    python bench/verify_report.py [--answers 2000]

The run is bench/report.py's synthetic one (4 statements and 3 cited sources per answer, every pair judged).
Prints: the JSON report's write time, the evidence digest's share of it, verify-report's time as a ratio to
the write, and the bytes the row digests add to the report.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--answers", type=int, default=2000)
    args = ap.parse_args()
    from bench.report import cached_db
    from sourcecheckup.report import write_report
    from sourcecheckup.report.integrity import evidence_digest
    from sourcecheckup.report.verify import verify_report_full
    from sourcecheckup.store import Store

    db, run_id, _ = cached_db(args.answers, fresh=False)
    store = Store(db)
    out = Path(tempfile.mkdtemp()) / "r.json"
    t0 = time.process_time()
    write_report(store, run_id, out)
    write_s = time.process_time() - t0
    t0 = time.process_time()
    evidence = evidence_digest(store, run_id)
    digest_s = time.process_time() - t0
    report = json.loads(out.read_text(encoding="utf-8"))
    t0 = time.process_time()
    result = verify_report_full(report, store)
    verify_s = time.process_time() - t0
    size = out.stat().st_size
    digests = sum(len(t["row_digests"]) for t in evidence["tables"].values())
    rows = sum(t["rows"] for t in evidence["tables"].values())
    print(f"{args.answers} answers, {rows:,} evidence rows; report {size / 1e6:.1f} MB")
    print(f"write JSON {write_s:.2f} s, of which the evidence digest {digest_s:.2f} s ({digest_s / write_s:.0%})")
    print(f"verify-report {verify_s:.2f} s = {verify_s / write_s:.2f} x the write; differences: "
          f"{len(result.differences)}")
    print(f"row digests: {digests / 1e6:.2f} MB = {digests / size:.1%} of the report")


if __name__ == "__main__":
    main()
