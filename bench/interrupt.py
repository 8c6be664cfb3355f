"""Ctrl-C stop: how soon an interrupted `sourcecheckup audit` exits, keeping what it committed.

A batch of answers citing pages of the local fixture site is audited by the CLI (built-in judge) in a
subprocess; once the first verdicts are in the database it gets SIGINT (Ctrl-C), and the seconds until it
exits are measured. At that moment the judge's threads are embedding and judging and the worker processes
are reading pages. The ideal is the same command interrupted while it holds nothing but waits: its every
page answers after a minute, so no judge thread and no worker has work in hand; it gets SIGINT a second
after its run starts. Prints both medians and their ratio; the target is an exit within 1-2 s. Before the
stop signal the built-in judge's queued threads each finished their batch first (3-4 s on the demo, about
20 s on a loaded machine), and the interpreter's teardown (torch, the worker pool) added 1-2 s more.

    .venv/bin/python bench/interrupt.py [--answers 30] [--runs 3]
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.site import start_site  # noqa: E402

PAGES = ("hypertension", "metformin-lactic-acidosis", "hfe-hemochromatosis")
SENTENCES = ("Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher.",
             "Metformin is a biguanide used as first-line treatment for type 2 diabetes.",
             "Iron-overload-related disease was present in 28.4% of male C282Y homozygotes.",
             "The DASH diet alone can lower systolic blood pressure by about 11 mm Hg.")


def _count(db: Path, sql: str) -> int:
    try:
        with sqlite3.connect(db, timeout=5) as c:
            return c.execute(sql).fetchone()[0]
    except sqlite3.OperationalError:   # not created yet
        return 0


def _verdicts(db: Path) -> int:
    return _count(db, "SELECT COUNT(*) FROM verdicts")


def write_answers(path: Path, base: str, answers: int, tag: str) -> None:
    """``answers`` answers of four statements citing three pages; ``tag`` makes every URL new (no run reads
    the pages or vectors an earlier one stored)."""
    path.write_text("\n".join(json.dumps({
        "id": f"b{i}", "response": " ".join(f"{s} Case {i}." for s in SENTENCES),
        "citations": [f"{base}/article/{p}?run={tag}&copy={i}" for p in PAGES]}) for i in range(answers)))


def stop_seconds(answers: Path, db: Path, busy: bool) -> tuple[float, int, int]:
    """(seconds from SIGINT to exit, verdicts at the signal, verdicts kept) for one interrupted audit:
    ``busy``: once its first verdicts are stored; else a second after its run starts."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "SOURCECHECKUP_ARCHIVE": "off"}
    proc = subprocess.Popen([sys.executable, "-m", "sourcecheckup", "audit", str(answers), "--db", str(db),
                             "--allow-host", "127.0.0.1", "--no-references", "--browser", "never", "--timeout", "120",
                             "-q"], cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            # a background shell job starts with SIGINT ignored, and the audit would inherit it
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    deadline = time.monotonic() + 300
    ready = (lambda: _verdicts(db) > 0) if busy else (lambda: _count(db, "SELECT COUNT(*) FROM runs") > 0)
    while not ready() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    if not busy:
        time.sleep(1.0)
    if proc.poll() is not None:
        raise SystemExit("the audit ended before it could be interrupted; give more --answers")
    at_signal = _verdicts(db)
    started = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=300)
    took = time.monotonic() - started
    if proc.returncode != 130:
        raise SystemExit(f"the interrupted audit exited {proc.returncode}: {err.decode()[-400:]}")
    return took, at_signal, _verdicts(db)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--answers", type=int, default=30)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args(argv)
    base, stop = start_site()
    slow, stop_slow = start_site(latency_s=60.0)
    results: dict[str, list[float]] = {"busy": [], "waiting": []}
    try:
        with tempfile.TemporaryDirectory() as tmp:
            answers = Path(tmp) / "batch.jsonl"
            for run in range(args.runs):
                for kind, site in (("busy", base), ("waiting", slow)):
                    write_answers(answers, site, args.answers, f"{kind}{run}")
                    took, at_signal, kept = stop_seconds(answers, Path(tmp) / f"{kind}-{run}.db", kind == "busy")
                    results[kind].append(took)
                    print(f"  run {run + 1} {kind:<8} exit {took:5.2f} s after SIGINT "
                          f"({at_signal} verdicts at the signal, {kept} kept)")
    finally:
        stop()
        stop_slow()
    busy, ideal = (statistics.median(results[k]) for k in ("busy", "waiting"))
    print(f"ctrl-c stop: {busy:.2f} s with the built-in judge and the workers busy (median of {args.runs}), "
          f"ideal {ideal:.2f} s (nothing in hand but waiting): ratio {busy / ideal:.2f}; target <= 2 s "
          f"({'met' if busy <= 2.0 else 'missed'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
