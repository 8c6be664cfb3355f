"""Helpers for the desktop app's tests (their fixtures, ``settings`` and ``window``, are in tests/conftest.py):
the ceiling of every wait, a pasted answer, an audit started from the Audit button, a run opened."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import tests.support.fake_judge  # noqa: E402,F401  registers keyword:LATENCY
from ui.main_window import MainWindow  # noqa: E402

# the ceiling of every wait on real work in the UI tests: waits end on their event, and a busy machine only
# makes them slower, never fails them (issue 31)
WAIT_MS = 120_000
AUDIT_TIMEOUT_MS = WAIT_MS


def pasted_answer(site: str) -> str:
    """A pasted answer with one supported and one planted overclaim, citing the fixture site."""
    return (f"Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher [1]. "
            f"The DASH diet cures hypertension within one week [1].\n\n[1]: {site}/article/hypertension\n")


def audit_and_wait(qtbot, w: MainWindow) -> str:
    """Start the Audit button's audit, wait until it completes and its run is on screen; the run id."""
    with qtbot.waitSignal(w.audit.audit_finished, timeout=AUDIT_TIMEOUT_MS) as finished:
        assert w.audit.start_audit()
    run_id, status = finished.args
    assert status == "completed", w.audit.progress_label.text()
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        pass
    qtbot.waitUntil(lambda: w.results.view is not None and w.results.view.data.run.id == run_id, timeout=WAIT_MS)
    return run_id


def open_and_wait(qtbot, w: MainWindow, run_id: str) -> None:
    """Open a stored run on the Results page and wait until it is on screen."""
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        w.results.open_run(run_id)
