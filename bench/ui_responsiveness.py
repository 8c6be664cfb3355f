"""Does the app stay responsive? (issue 5)

1. A 1,000-pair audit (250 answers x 4 claims x 1 source, 50 distinct pages) against the local
   fixture site, run from the main window offscreen, while a 10 ms heartbeat timer ticks on the
   GUI thread: the longest gap between ticks is the longest stall (target < 100 ms).
2. The time to open a stored run of 1,000 responses (target < 1 s).
3. The time to show one response's 200 x 40 support matrix (target < 1 s).
Runs 2 and 3 are written straight through Store (tests/support/synth_run.py).

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/ui_responsiveness.py [--judge keyword:0.005]

With ``--answers 1000,20000,100000`` it measures the app on stored runs of those sizes instead (issue 17):
the run is built straight through the Store with batched inserts (tests/support/large_run.py; the
build time is printed, and the database is cached in the temp dir by size, so a rerun starts at once),
then, while the 10 ms heartbeat ticks: open the run (until its first row and its count are on screen;
target < 1 s), scroll the responses table top to bottom in 20 steps (each step until the rows shown
are read), filter by the search box and by the model facet (target < 200 ms each), by the status facet
once the run's metrics are summed, and open a response (its statements, sources and matrix). Every
figure is printed against its target; the longest stall of the whole sequence has the target < 50 ms.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/ui_responsiveness.py --answers 1000,20000,100000

``first verdict after launch`` (issue 28; also printed last by the default run, or alone with
``--first-verdict``): a fresh process launches the app offscreen as `sourcecheckup gui` does (the
built-in judge, its model loading in the background from the start), pastes one answer citing 3 pages
of the local fixture site and presses Audit at once; the time from Audit to the first verdict on
screen (target < 10 s), with its parts: interpreter and imports, app start, the model's load (and how
much of it was left when Audit was pressed), fetch, judge, shown. The ideal, measured in the same
process: the same audit again, the model loaded and the pages cached.

    QT_QPA_PLATFORM=offscreen .venv/bin/python bench/ui_responsiveness.py --first-verdict
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from pathlib import Path

MODULE_START = time.perf_counter()   # a fresh process (the first-verdict child): before the app's imports
MODULE_START_WALL = time.time()

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

    def start(self, settle_ms: int = 0) -> None:
        self.gaps.clear()
        self.clock.invalidate()
        self.timer.start()
        if settle_ms:       # a first tick before the work starts, so a block at once is counted
            loop = QEventLoop()
            QTimer.singleShot(settle_ms, loop.quit)
            loop.exec()

    def stop(self, settle_ms: int = 0) -> dict[str, float]:
        if settle_ms:       # let one more tick land, so a block just before the stop is counted
            loop = QEventLoop()
            QTimer.singleShot(settle_ms, loop.quit)
            loop.exec()
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
    ap.add_argument("--first-verdict", action="store_true", help="only the first verdict after launch (issue 28)")
    ap.add_argument("--first-verdict-child", default="", help=argparse.SUPPRESS)   # the fresh process's part
    ap.add_argument("--answers", default="", help="comma-separated run sizes: measure the app on stored runs of "
                                                  "these many answers (e.g. 1000,20000,100000) instead")
    args = ap.parse_args()
    if args.first_verdict_child:
        return first_verdict_child(json.loads(args.first_verdict_child))
    if args.first_verdict:
        return print_first_verdicts()
    if args.answers:
        return large_runs([int(n) for n in args.answers.replace("_", "").split(",") if n.strip()])
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
    return print_first_verdicts()


def print_first_verdicts() -> int:
    """The figure twice, each in a fresh process: Audit pressed as soon as the window is shown (the worst
    case), and after a paste's time (PASTE_S), as a user meets it."""
    return max(print_first_verdict(first_verdict(0.0)), print_first_verdict(first_verdict(PASTE_S)))


# ----------------------------------------------------------------------------- first verdict after launch (issue 28)
FIRST_VERDICT_TARGET_S = 10.0
FIRST_VERDICT_PAGES = ("/medicines/paracetamol-for-adults", "/medicines/metformin-side-effects", "/article/hypertension")


def first_verdict_answer(base: str) -> str:
    """The clinician's pasted answer: three statements, each citing one of three pages."""
    one, two, three = (base + p for p in FIRST_VERDICT_PAGES)
    return ("The usual adult dose of paracetamol is one or two 500mg tablets up to 4 times in 24 hours, with at "
            "least 4 hours between doses [1]. Lactic acidosis is a rare but serious side effect of metformin [2]. "
            "Hypertension is defined as a blood pressure of 130/80 mm Hg or higher [3].\n\n"
            f"[1]: {one}\n[2]: {two}\n[3]: {three}\n")


PASTE_S = 5.0   # about the time a user takes to copy an answer from a chat window and paste it


def first_verdict(delay_s: float = 0.0) -> dict[str, object]:
    """Start a fresh process (the child below) against the fixture site, Audit pressed ``delay_s`` after
    the window is shown; its figures."""
    import subprocess

    base, stop = start_site()
    tmp = Path(tempfile.mkdtemp(prefix="sc-first-verdict-"))
    try:
        spec = {"base": base, "tmp": str(tmp), "spawned": time.time(), "delay_s": delay_s}
        env = {**os.environ, "QT_QPA_PLATFORM": "offscreen", "SOURCECHECKUP_ARCHIVE": "off",
               "SOURCECHECKUP_REFERENCES": "off"}
        p = subprocess.run([sys.executable, str(Path(__file__).resolve()), "--first-verdict-child", json.dumps(spec)],
                           capture_output=True, text=True, timeout=300, env=env)
    finally:
        stop()
    line = next((ln for ln in p.stdout.splitlines() if ln.startswith("FIRST_VERDICT ")), None)
    if line is None:
        return {"error": f"the app process gave no figure (exit {p.returncode}): {p.stderr[-1500:]}"}
    return json.loads(line.removeprefix("FIRST_VERDICT "))


def first_verdict_child(spec: dict) -> int:
    """The fresh process: launch as `sourcecheckup gui` does, paste, press Audit, wait for a verdict on screen."""
    from sourcecheckup.events import EventKind
    from sourcecheckup.plugins import load_plugins

    imported = time.perf_counter()
    tmp = Path(spec["tmp"])
    app = application()
    settings = AppSettings(QSettings(str(tmp / "settings.ini"), QSettings.Format.IniFormat))
    settings.judges = ["builtin"]          # the default a fresh install has
    settings.allow_hosts = ["127.0.0.1"]   # the fixture site
    settings.browser = "never"
    settings.references = False
    settings.judge_guide_seen = True
    load_plugins()
    w = MainWindow(tmp / "audits.db", settings)
    w.resize(1280, 800)
    w.show()
    beat = Heartbeat()   # does the load in the background stall the window?
    beat.start()
    preloading = w.preload_judge_model()   # what ui.app.main() does right after show()
    app.processEvents()
    shown_at = time.perf_counter()
    out: dict[str, object] = {"preload_started": preloading, "delay_s": spec.get("delay_s", 0.0),
                              "interpreter_s": round(MODULE_START_WALL - spec["spawned"], 2),
                              "imports_s": round(imported - MODULE_START, 2),
                              "app_start_s": round(shown_at - MODULE_START, 2)}

    # every engine event as the worker thread gets it (the window's signal drops some within 50 ms)
    from ui.worker import AuditThread

    events: list[tuple[float, object]] = []
    passed_on = AuditThread._on_event

    def recorded(self, event) -> None:
        events.append((time.perf_counter(), event))
        passed_on(self, event)

    AuditThread._on_event = recorded

    def one_audit(delay_s: float = 0.0) -> dict[str, float]:
        marks: dict[str, float] = {}
        events.clear()

        def on_progress(_ev) -> None:
            for at, ev in list(events):
                marks.setdefault("engine_started", at)   # the model loaded (the audit waits for it), the run begun
                if ev.kind is EventKind.PARSED:
                    marks["parsed"] = at
                if ev.kind is EventKind.FETCHED and ev.sources_done >= ev.sources_total:
                    marks.setdefault("fetched", at)
                if ev.kind is EventKind.JUDGED:
                    marks.setdefault("judged", at)

        w.results.input.paste_edit.setPlainText(first_verdict_answer(spec["base"]))
        if delay_s:   # the user pasting: the window idle meanwhile
            pump(int(delay_s * 1000))
        pressed = time.perf_counter()
        if not w.audit.start_audit():
            raise RuntimeError("Audit did not start: " + w.audit.progress_label.text())
        run_ids: list[str] = []
        w.audit.worker.progress.connect(on_progress)
        w.audit.worker.run_started.connect(run_ids.append)

        def verdict_on_screen() -> bool:
            view = w.results.view
            return bool(run_ids) and view is not None and view.data.run.id == run_ids[0] and \
                any(view.data.verdicts.values())

        until(verdict_on_screen, 120)
        seen = time.perf_counter()
        if w.audit.worker is not None:
            wait_for(w.audit.audit_finished, 120)
        rel = {k: round(v - pressed, 2) for k, v in marks.items()}
        return {"first_verdict_s": round(seen - pressed, 2), "pressed_at": pressed, **{f"{k}_at_s": v for k, v in rel.items()}}

    try:
        first = one_audit(float(spec.get("delay_s") or 0.0))
        out["gui_stall_ms"] = beat.stop()["longest_stall_ms"]   # from the load's start to the first verdict
        preload = w.model_preload
        if preload.started_at is not None and preload.seconds is not None:
            loaded_at = preload.started_at + preload.seconds
            out["model_load_s"] = round(preload.seconds, 2)
            out["model_load_left_at_audit_s"] = round(max(0.0, loaded_at - first["pressed_at"]), 2)
        first.pop("pressed_at")
        out["first"] = first
        again = one_audit()      # the ideal: the same audit, the model loaded and the pages cached
        again.pop("pressed_at")
        out["again"] = again
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    print("FIRST_VERDICT " + json.dumps(out), flush=True)
    w.db.wait(10_000)
    dispose(app, w)
    return 0


def print_first_verdict(r: dict) -> int:
    first, again = r.get("first") or {}, r.get("again") or {}
    when = (f"Audit pressed {r['delay_s']:g} s after the window is shown (a paste's time)" if r.get("delay_s")
            else "Audit pressed as soon as the window is shown")
    print(f"\nfirst verdict after launch (a fresh app process, one pasted answer citing 3 local pages, {when}):")
    if "error" in r:
        print(f"  ERROR {r['error']}")
        if not first:
            return 1
    t = first.get("first_verdict_s")
    print(f"  Audit -> first verdict on screen: {t} s (target < {FIRST_VERDICT_TARGET_S:g}): "
          f"{verdict(t, FIRST_VERDICT_TARGET_S)}")
    print(f"  parts: interpreter {r.get('interpreter_s')} s + imports {r.get('imports_s')} s (app start to window "
          f"shown {r.get('app_start_s')} s, before Audit); model load {r.get('model_load_s')} s in the background "
          f"(preload started: {r.get('preload_started')}), {r.get('model_load_left_at_audit_s')} s of it left when "
          f"Audit was pressed; after Audit: the run began at {first.get('engine_started_at_s')} s, answer parsed at "
          f"{first.get('parsed_at_s')} s, sources fetched at {first.get('fetched_at_s')} s, first verdict judged "
          f"at {first.get('judged_at_s')} s, on screen at {t} s; longest GUI stall meanwhile "
          f"{r.get('gui_stall_ms')} ms")
    ideal = again.get("first_verdict_s")
    if t is not None and ideal:
        print(f"  ideal (the same audit again in the same process, model loaded, pages cached): {ideal} s; "
              f"the first is {t / ideal:.1f}x it")
    print("  " + json.dumps(r))
    return 0


# ----------------------------------------------------------------------------- large runs (issue 17)
OPEN_TARGET_S, FILTER_TARGET_S, STALL_TARGET_MS = 1.0, 0.2, 50.0


def pump(ms: int = 5) -> None:
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def until(pred, timeout_s: float) -> float:
    """Run the event loop until ``pred()``; the seconds it took (raises after ``timeout_s``)."""
    t0 = time.perf_counter()
    while not pred():
        if time.perf_counter() - t0 > timeout_s:
            raise TimeoutError(f"not done within {timeout_s} s")
        pump()
    return time.perf_counter() - t0


def shown(table, row: int) -> bool:
    """The row is on screen with its figures (not the "…" of a row still being read)."""
    model = table.model()
    return 0 <= row < model.rowCount() and model.index(row, 0).data() not in (None, "…")


def top_row(table) -> int:
    return max(0, table.rowAt(0))


def one_large_run(app, settings: AppSettings, n: int, tmp: Path) -> dict[str, object]:
    from tests.support.large_run import cached_large_run

    db, run_id, built_s = cached_large_run(n)
    out: dict[str, object] = {"answers": n, "build_seconds": round(built_s, 1) if built_s else "cached"}
    w = MainWindow(db, settings)
    w.resize(1280, 800)
    w.show()
    page = w.results
    table = page.responses_table
    beat = Heartbeat()
    stalls: dict[str, float] = {}
    paged = hasattr(page, "paged")     # the same script measures the code before issue 17
    try:
        until(lambda: not w.db.busy("runs"), 600)      # the startup runs list
        beat.start(25)
        t0 = time.perf_counter()
        page.open_run(run_id)
        until(lambda: page.run_id == run_id and shown(table, 0) and (not paged or page.count_label.text()), 600)
        out["open_s"] = round(time.perf_counter() - t0, 3)
        out["rows"] = table.model().rowCount()
        out["count_shown"] = page.count_label.text() if paged else f"{table.model().rowCount()} rows"
        stalls["open"] = beat.stop(30)["longest_stall_ms"]

        beat.start(25)
        bar = table.verticalScrollBar()
        steps = []
        for k in range(1, 21):
            t1 = time.perf_counter()
            bar.setValue(bar.maximum() * k // 20)
            until(lambda: shown(table, top_row(table)), 60)
            steps.append(time.perf_counter() - t1)
        out["scroll_step_s_max"] = round(max(steps), 3)
        out["scroll_steps"] = len(steps)
        out["rows_read"] = page.paged_model.loaded_rows() if paged and page.paged else table.model().rowCount()
        stalls["scroll"] = beat.stop(30)["longest_stall_ms"]

        beat.start(25)
        out["filter_search_s"] = round(filtered(page, table, lambda: page.search_edit.setText("r1999"), paged), 3)
        out["filter_search_rows"] = table.model().rowCount()
        out["filter_model_s"] = round(filtered(page, table, lambda: page.facets.select(model="model-b"), paged), 3)
        out["filter_model_rows"] = table.model().rowCount()
        out["filter_clear_s"] = round(filtered(page, table, lambda: (page.search_edit.setText(""),
                                                                     page.facets.select(model="")), paged), 3)
        stalls["filter"] = beat.stop(30)["longest_stall_ms"]

        beat.start(25)
        t2 = time.perf_counter()
        if paged and page.paged:
            until(lambda: page.totals is not None, 600)
        out["metrics_summed_s"] = round(time.perf_counter() - t2, 2)
        out["status_filter_s"] = round(filtered(page, table, lambda: page.facets.select(status="not_supported"),
                                                paged), 3)
        out["status_filter_rows"] = table.model().rowCount()
        stalls["metrics_and_status"] = beat.stop(30)["longest_stall_ms"]

        beat.start(25)
        t3 = time.perf_counter()
        got: list[int] = []
        if paged:
            page.response_shown.connect(got.append)
        table.setCurrentIndex(table.model().index(5, 0))
        if paged:
            until(lambda: bool(got), 60)
        app.processEvents()
        out["open_response_s"] = round(time.perf_counter() - t3, 3)
        out["matrix"] = [page.matrix_tab.matrix_model.rowCount(), page.matrix_tab.matrix_model.columnCount()]
        stalls["open_response"] = beat.stop(30)["longest_stall_ms"]
    except TimeoutError as exc:
        out["error"] = str(exc)
    finally:
        import resource

        out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)   # the app's process
        out["stall_ms"] = stalls
        out["longest_stall_ms"] = max(stalls.values()) if stalls else None
        w.db.wait(30_000)
        dispose(app, w)
    return out


def filtered(page, table, action, paged: bool) -> float:
    """Seconds from the user's change to the filtered table on screen with its first row read."""
    t0 = time.perf_counter()
    if paged and page.paged:
        got: list[int] = []
        page.filter_applied.connect(got.append)
        action()
        until(lambda: bool(got), 60)
        page.filter_applied.disconnect(got.append)
    else:
        action()
    until(lambda: table.model().rowCount() == 0 or shown(table, 0), 60)
    return time.perf_counter() - t0


def verdict(value: float | None, target: float) -> str:
    return "n/a" if value is None else ("meets" if value < target else "MISSES")


def large_runs(sizes: list[int]) -> int:
    app = application()
    tmp = Path(tempfile.mkdtemp(prefix="sc-ui-large-"))
    settings = AppSettings(QSettings(str(tmp / "settings.ini"), QSettings.Format.IniFormat))
    settings.judges = ["keyword:0"]
    settings.reviewer = "bench"
    # the ideal: the longest gap of the heartbeat alone, the app doing nothing, on this machine now
    beat = Heartbeat()
    beat.start(25)
    pump(3000)
    idle = beat.stop(30)["longest_stall_ms"]
    results = [one_large_run(app, settings, n, tmp) for n in sizes]
    print(json.dumps(results, indent=2))
    print(f"\nthe heartbeat alone, the app idle for 3 s: longest gap {idle} ms (this machine's floor; "
          "each stall below is also given as a ratio to it)")
    for r in results:
        print(f"\n{r['answers']:,} answers (build: {r['build_seconds']} s)" + (f"  ERROR {r['error']}" if 'error' in r else ""))
        print(f"  open the run: {r.get('open_s')} s (target < {OPEN_TARGET_S:g}): {verdict(r.get('open_s'), OPEN_TARGET_S)}")
        print(f"  scroll top to bottom, {r.get('scroll_steps')} steps: slowest step {r.get('scroll_step_s_max')} s; "
              f"rows read {r.get('rows_read')} of {r.get('rows')}")
        for key, what in (("filter_search_s", "filter by the search box"), ("filter_model_s", "filter by model"),
                          ("status_filter_s", "filter by status")):
            print(f"  {what}: {r.get(key)} s (target < {FILTER_TARGET_S:g}): {verdict(r.get(key), FILTER_TARGET_S)}")
        print(f"  metrics summed in the background after {r.get('metrics_summed_s')} s more")
        print(f"  open a response: {r.get('open_response_s')} s, matrix {r.get('matrix')}")
        print(f"  the app's peak memory so far (this process, not the summing worker): {r.get('peak_rss_mb')} MB")
        print(f"  longest GUI stall: {r.get('longest_stall_ms')} ms (target < {STALL_TARGET_MS:g}): "
              f"{verdict(r.get('longest_stall_ms'), STALL_TARGET_MS)}; "
              f"{(r.get('longest_stall_ms') or 0) / max(idle, 1.0):.1f}x the idle floor; by phase {r.get('stall_ms')}")
    return 0


if __name__ == "__main__":
    code = main()
    from sourcecheckup.workers import close_shared_pool

    close_shared_pool()   # os._exit below skips atexit, which would stop the workers
    sys.stdout.flush()
    sys.stderr.flush()
    # several windows and threads were made and torn down in one process; PySide6 6.12 can abort
    # while collecting them at interpreter exit, after every figure is printed, so exit directly
    os._exit(code)
