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
