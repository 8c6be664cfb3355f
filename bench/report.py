"""Time the HTML and PDF reports for a synthetic run of 1,000 responses (targets: HTML < 5 s, PDF < 20 s).

    python bench/report.py [--responses 1000] [--out DIR]

Rows go into a fresh SQLite file through Store directly (no fetching, no judging): 4 statements
and 3 cited sources per response, two models, every pair judged.
"""
from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sourcecheckup.report.pdf import html_to_pdf  # noqa: E402
from sourcecheckup.report import build_report, report_html  # noqa: E402
from sourcecheckup.store import Store  # noqa: E402
from tests.support.synth_run import synthesize_run  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--responses", type=int, default=1000)
    ap.add_argument("--out", type=Path, default=None)
    args = ap.parse_args()
    out = args.out or Path(tempfile.mkdtemp(prefix="sc-bench-report-"))
    out.mkdir(parents=True, exist_ok=True)
    store = Store(out / "bench.db")
    t0 = time.perf_counter()
    run_id = synthesize_run(store, responses=args.responses, statements=4, sources=3)
    t_synth = time.perf_counter() - t0

    t0 = time.perf_counter()
    report = build_report(store, run_id)
    t_build = time.perf_counter() - t0
    t0 = time.perf_counter()
    html = report_html(report)
    (out / "report.html").write_text(html, encoding="utf-8")
    t_render = time.perf_counter() - t0
    t0 = time.perf_counter()
    result = html_to_pdf(html, out / "report.pdf")
    t_pdf = time.perf_counter() - t0

    from pypdf import PdfReader

    pages = len(PdfReader(str(out / "report.pdf")).pages)
    html_total = t_build + t_render
    print(f"synthetic run: {args.responses} responses, {report['counts']['statements']} statements, "
          f"{report['counts']['verdicts']} verdicts (written in {t_synth:.1f} s)")
    print(f"HTML: {html_total:.2f} s (report data {t_build:.2f} s + template {t_render:.2f} s), "
          f"{(out / 'report.html').stat().st_size / 1e6:.1f} MB  [target < 5 s] {'OK' if html_total < 5 else 'SLOW'}")
    print(f"PDF ({result.engine}): {t_pdf:.2f} s from the HTML ({html_total + t_pdf:.2f} s from the database), "
          f"{pages} pages, {(out / 'report.pdf').stat().st_size / 1e6:.1f} MB  "
          f"[target < 20 s] {'OK' if html_total + t_pdf < 20 else 'SLOW'}")
    print(f"files in {out}")


if __name__ == "__main__":
    main()
