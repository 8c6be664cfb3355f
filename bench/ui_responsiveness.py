"""Does the app stay responsive? (issue 5)

1. A 1,000-pair audit (250 answers x 4 claims x 1 source, 50 distinct pages) against the local
   fixture site, run from the main window offscreen, while a 10 ms heartbeat timer ticks on the
   GUI thread: the longest gap between ticks is the longest stall (target < 100 ms).
2. The time to open a stored run of 1,000 responses (target < 1 s).
3. The time to show one response's 200 x 40 support matrix (target < 1 s).
Runs 2 and 3 are written straight through Store (tests/support/synth_run.py).

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/ui_responsiveness.py [--judge keyword:0.005]
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
os.environ.setdefault("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from PySide6.QtCore import QElapsedTimer, QEvent, QEventLoop, QSettings, QTimer  # noqa: E402

import tests.support.fake_judge  # noqa: E402,F401  registers keyword:LATENCY
from sourcecheckup.ingest import load_text  # noqa: E402
from sourcecheckup.store import Store  # noqa: E402
from tests.support.site import start_site  # noqa: E402
from tests.support.synth_run import synthesize_run  # noqa: E402
from ui.app import application  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402
from ui.settings import AppSettings  # noqa: E402

CLAIMS = ["Hypertension is defined as a blood pressure of 130/80 mm Hg or higher [1].",
          "Nearly half of adults in the United States have high blood pressure [1].",
          "The DASH diet cures hypertension within a week [1].",
          "Home readings matter for the diagnosis [1]."]


class Heartbeat:
    """A 10 ms timer on the GUI thread; a long gap between ticks means the GUI was blocked."""

    def __init__(self, interval_ms: int = 10) -> None:
        self.timer = QTimer()
        self.timer.setInterval(interval_ms)
        self.timer.timeout.connect(self._tick)
        self.clock = QElapsedTimer()
        self.gaps: list[float] = []

    def _tick(self) -> None:
        if self.clock.isValid():
            self.gaps.append(self.clock.nsecsElapsed() / 1e6)
        self.clock.restart()

    def start(self) -> None:
        self.gaps.clear()
        self.clock.invalidate()
        self.timer.start()

    def stop(self) -> dict[str, float]:
        self.timer.stop()
        gaps = sorted(self.gaps) or [0.0]
        return {"ticks": len(self.gaps), "longest_stall_ms": round(gaps[-1], 1),
                "p99_gap_ms": round(gaps[int(0.99 * (len(gaps) - 1))], 1)}


def wait_for(signal, timeout_s: float) -> list:
    loop = QEventLoop()
    got: list = []

    def done(*args: object) -> None:
        got.extend(args)
        loop.quit()

    signal.connect(done)
    QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    loop.exec()
    signal.disconnect(done)
    return got


def dispose(app, w: MainWindow) -> None:
    w.close()
    w.deleteLater()
    app.sendPostedEvents(None, QEvent.Type.DeferredDelete)
    app.processEvents()


def answers_jsonl(base: str, n: int = 250, pages: int = 50) -> str:
    lines = []
    for i in range(n):
        url = f"{base}/article/hypertension?id={i % pages}"
        lines.append(json.dumps({"id": f"a{i}", "model": "bench", "response": " ".join(CLAIMS), "citations": [url]}))
    return "\n".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--judge", default="keyword:0.005", help="judge spec (default keyword:0.005, a fast local judge)")
    ap.add_argument("--concurrency", type=int, default=16)
    args = ap.parse_args()
    app = application()
    tmp = Path(tempfile.mkdtemp(prefix="sc-ui-bench-"))
    settings = AppSettings(QSettings(str(tmp / "settings.ini"), QSettings.Format.IniFormat))
    settings.judges = [args.judge]
    settings.allow_hosts = ["127.0.0.1"]
    settings.concurrency = args.concurrency
    settings.reviewer = "bench"
    base, stop = start_site()
    results: dict[str, object] = {"judge": args.judge}
    beat = Heartbeat()
    try:
        w = MainWindow(tmp / "audit.db", settings)
        w.resize(1280, 800)
        w.show()
        app.processEvents()
        loaded = load_text(answers_jsonl(base), fmt="jsonl")
        w.results.input.pending = loaded
        w.results.input.pending_label = "bench"
        beat.start()
        started = time.perf_counter()
        w.audit.start_audit()
        got = wait_for(w.audit.audit_finished, 600)
        wall = time.perf_counter() - started
        stall = beat.stop()
        with Store(w.db_path) as st:
            pairs = len(st.judged_keys(got[0])) if got else 0
        results["audit"] = {"status": got[1] if got else "timeout", "pairs": pairs, "seconds": round(wall, 2),
                            **stall}
        dispose(app, w)

        # opening a stored run of 1,000 responses
        with Store(tmp / "big.db") as st:
            big = synthesize_run(st, responses=1000, statements=4, sources=3)
        w = MainWindow(tmp / "big.db", settings)
        w.resize(1280, 800)
        w.show()
        w.db.wait(10_000)   # the startup runs list
        app.processEvents()
        beat.start()
        t0 = time.perf_counter()
        w.results.open_run(big)
        wait_for(w.results.run_shown, 30)
        app.processEvents()
        results["open_run_1000"] = {"seconds": round(time.perf_counter() - t0, 3),
                                    "rows": w.results.responses_model.rowCount(), **beat.stop()}
        dispose(app, w)

        # a 200 x 40 support matrix
        with Store(tmp / "matrix.db") as st:
            wide = synthesize_run(st, responses=1, statements=200, sources=40)
        w = MainWindow(tmp / "matrix.db", settings)
        w.resize(1280, 800)
        w.show()
        w.results.detail_tabs.setCurrentIndex(2)
        w.db.wait(10_000)
        app.processEvents()
        beat.start()
        t0 = time.perf_counter()
        w.results.open_run(wide)
        wait_for(w.results.run_shown, 30)
        app.processEvents()     # paint it
        opened = time.perf_counter() - t0
        t1 = time.perf_counter()
        w.results.show_response(w.results.response_pk)   # the matrix alone, data already loaded
        w.results.matrix_tab.matrix_table.viewport().repaint()
        results["matrix_200x40"] = {"open_seconds": round(opened, 3),
                                    "show_seconds": round(time.perf_counter() - t1, 3),
                                    "shape": [w.results.matrix_tab.matrix_model.rowCount(), w.results.matrix_tab.matrix_model.columnCount()],
                                    **beat.stop()}
        dispose(app, w)
    finally:
        stop()
    a = results["audit"]
    print(json.dumps(results, indent=2))
    print(f"\nlongest GUI stall during a {a['pairs']}-pair audit: {a['longest_stall_ms']} ms (target < 100)")
    print(f"open a run of 1,000 responses: {results['open_run_1000']['seconds']} s (target < 1)")
    print(f"show a 200 x 40 matrix: {results['matrix_200x40']['open_seconds']} s from open, "
          f"{results['matrix_200x40']['show_seconds']} s to redraw (target < 1)")
    return 0


if __name__ == "__main__":
    code = main()
    sys.stdout.flush()
    sys.stderr.flush()
    # several windows and threads were made and torn down in one process; PySide6 6.12 can abort
    # while collecting them at interpreter exit, after every figure is printed, so exit directly
    os._exit(code)
