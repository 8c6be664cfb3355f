"""Time every report format of a synthetic run and measure each writer's peak memory (PSS).

    python bench/report.py [--answers 1000] [--formats json,csv,xlsx,html,pdf] [--out DIR]

Rows go into SQLite through the store and batch inserts (tests/support/synth_run.py): 4 statements and
3 cited sources per answer, two models, every pair judged. The database is kept in the temporary
directory keyed by size, so a second run at 100,000 answers starts at once (--fresh rebuilds it).

Each format is written by a child process (``write_report``, as ``sourcecheckup report`` does) while
this process samples the child's proportional set size (/proc/PID/smaps_rollup) every 50 ms (the PDF's
Chromium processes are not counted). Targets:
up to 2,000 answers (the full HTML with its support matrix) HTML < 5 s and PDF < 20 s; above that (the
large-run HTML/PDF: figures and the first unsupported statements, the matrix left to CSV/XLSX) HTML and
PDF < 60 s. JSON, CSV and XLSX stream a page of answers at a time: their memory should not grow with
the run (compare the "above start" column at two sizes). The last line is for scripts.
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.support.memory import pss_kb  # noqa: E402

FORMATS = ("json", "csv", "xlsx", "html", "pdf")
STATEMENTS, SOURCES = 4, 3


def cached_db(answers: int, fresh: bool) -> tuple[Path, str, float | None]:
    """The synthetic run of ``answers`` answers (built once per size); its path, run id and build time."""
    from sourcecheckup.store import Store
    from tests.support.synth_run import synthesize_run

    folder = Path(tempfile.gettempdir()) / "sourcecheckup-bench-report"
    folder.mkdir(exist_ok=True)
    path = folder / f"answers-{answers}-s{STATEMENTS}-u{SOURCES}.db"
    if path.exists() and not fresh:
        with Store(path) as store:
            run_id = store.latest_run_id()
        if run_id:
            return path, run_id, None
    part = path.with_suffix(".part")
    for p in (path, part, Path(f"{part}-wal"), Path(f"{part}-shm")):
        p.unlink(missing_ok=True)
    t0 = time.perf_counter()
    with Store(part) as store:
        run_id = synthesize_run(store, responses=answers, statements=STATEMENTS, sources=SOURCES)
        store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    part.replace(path)
    return path, run_id, time.perf_counter() - t0


def child(fmt: str, db: Path, run_id: str, out: Path) -> None:
    """Write one report (in its own process, so its memory is its own) and print what it took as JSON."""
    from sourcecheckup.report import write_report
    from sourcecheckup.store import Store

    start_kb = pss_kb(os.getpid())
    with Store(db) as store:
        t0 = time.perf_counter()
        cpu0 = time.process_time()
        write_report(store, run_id, out, fmt)
        wall, cpu = time.perf_counter() - t0, time.process_time() - cpu0
    print(json.dumps({"seconds": wall, "cpu_seconds": cpu, "start_kb": start_kb, "bytes": out.stat().st_size}))


def measure(fmt: str, db: Path, run_id: str, out: Path) -> dict:
    proc = subprocess.Popen([sys.executable, __file__, "--child", fmt, "--db", str(db), "--run", run_id,
                             "--output", str(out)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)})
    peak = 0
    while proc.poll() is None:
        peak = max(peak, pss_kb(proc.pid) or 0)
        time.sleep(0.05)
    stdout, stderr = proc.communicate()
    if proc.returncode != 0:
        return {"error": (stderr.strip().splitlines() or ["exit status %d" % proc.returncode])[-1]}
    result = json.loads(stdout.strip().splitlines()[-1])
    result["peak_kb"] = peak
    return result


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--answers", "--responses", type=int, default=1000, dest="answers")
    ap.add_argument("--formats", default=",".join(FORMATS), help="comma-separated, of " + ", ".join(FORMATS))
    ap.add_argument("--out", type=Path, default=None, help="folder for the reports (default: a temporary one)")
    ap.add_argument("--fresh", action="store_true", help="rebuild the cached synthetic database")
    ap.add_argument("--child", choices=FORMATS, help=argparse.SUPPRESS)
    ap.add_argument("--db", type=Path, help=argparse.SUPPRESS)
    ap.add_argument("--run", help=argparse.SUPPRESS)
    ap.add_argument("--output", type=Path, help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        child(args.child, args.db, args.run, args.output)
        return
    from sourcecheckup.report.stream import LARGE_RUN_RESPONSES

    formats = [f.strip() for f in args.formats.split(",") if f.strip()]
    unknown = sorted(set(formats) - set(FORMATS))
    if unknown:
        ap.error(f"unknown format(s) {', '.join(unknown)}: choose from {', '.join(FORMATS)}")
    out = args.out or Path(tempfile.mkdtemp(prefix="sc-bench-report-"))
    out.mkdir(parents=True, exist_ok=True)
    db, run_id, built = cached_db(args.answers, args.fresh)
    pairs = args.answers * STATEMENTS * SOURCES
    print(f"synthetic run: {args.answers:,} answers, {args.answers * STATEMENTS:,} statements, {pairs:,} pairs; "
          + (f"written in {built:.1f} s" if built is not None else "cached") + f"; {db.stat().st_size / 1e6:.0f} MB at {db}")
    large = args.answers > LARGE_RUN_RESPONSES
    targets = {"html": 60.0, "pdf": 60.0} if large else {"html": 5.0, "pdf": 20.0}
    print(f"{'format':7} {'seconds':>8} {'cpu s':>7} {'peak PSS':>9} {'above start':>12} {'file':>9}  target")
    summary = []
    for fmt in formats:
        r = measure(fmt, db, run_id, out / f"report.{fmt}")
        if "error" in r:
            print(f"{fmt:7} failed: {r['error']}")
            summary.append(f"{fmt} failed")
            continue
        peak_mb, start_mb = r["peak_kb"] / 1024, (r["start_kb"] or 0) / 1024
        target = targets.get(fmt)
        verdict = "" if target is None else f"< {target:g} s {'OK' if r['seconds'] < target else 'SLOW'}"
        print(f"{fmt:7} {r['seconds']:8.1f} {r['cpu_seconds']:7.1f} {peak_mb:7.0f} MB {peak_mb - start_mb:9.0f} MB "
              f"{r['bytes'] / 1e6:7.1f} MB  {verdict}")
        summary.append(f"{fmt} {r['seconds']:.1f} s {peak_mb:.0f} MB")
    print(f"({'large-run' if large else 'full'} HTML/PDF; PSS of the writing process, sampled every 50 ms; files in {out})")
    print(f"report: answers {args.answers}; " + "; ".join(summary))


if __name__ == "__main__":
    main()
