"""Fixtures for the desktop app's tests: isolated settings and a main window offscreen."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from PySide6.QtCore import QSettings  # noqa: E402

import tests.support.fake_judge  # noqa: E402,F401  registers keyword:LATENCY
from ui.main_window import MainWindow  # noqa: E402
from ui.settings import AppSettings  # noqa: E402


@pytest.fixture
def settings(tmp_path: Path) -> AppSettings:
    s = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    s.judges = ["keyword:0"]
    s.allow_hosts = ["127.0.0.1"]
    s.concurrency = 4
    s.reviewer = "Dr Tester"
    s.browser = "never"   # the app's tests read the local site as plain HTTP (the default is auto)
    return s


@pytest.fixture
def window(qtbot, tmp_path: Path, settings: AppSettings):
    w = MainWindow(tmp_path / "audits.db", settings)
    qtbot.addWidget(w)
    w.show()
    yield w
    w.benchmark_page.shutdown(10_000)
    if w.audit.worker is not None:
        w.audit.worker.cancel()
        w.audit.worker.wait(10_000)
    w.db.wait(10_000)


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
