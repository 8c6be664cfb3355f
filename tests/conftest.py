"""Shared test set-up: fixture servers on 127.0.0.1 only, no network, no real keyring; and the fixtures that
tests in several folders use (the app's settings and main window, a keyring that holds nothing, the fake
model hub)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
# subprocess runs of the CLI must never look dead links up on the public web archive
os.environ["SOURCECHECKUP_ARCHIVE"] = "off"
# ...nor ask the public metadata services (Crossref, PubMed, OpenAlex) about cited references
os.environ["SOURCECHECKUP_REFERENCES"] = "off"
# the app's tests run offscreen
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# the fixture site, and the fake metadata and repair services (fixtures `site`, `scholarly`, `repair_servers`)
pytest_plugins = ["tests.support.site", "tests.support.fake_scholarly", "tests.support.fake_repair"]


# -- the desktop app (Qt is imported only by the tests that ask for these) ------------------------------

@pytest.fixture
def settings(tmp_path: Path):
    """The app's settings in a file of the test's own, set for the fixture site and the keyword judge."""
    from PySide6.QtCore import QSettings

    import tests.support.fake_judge  # noqa: F401  registers keyword:LATENCY, which the settings name
    from ui.settings import AppSettings

    s = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    s.judges = ["keyword:0"]
    s.allow_hosts = ["127.0.0.1"]
    s.concurrency = 4
    s.reviewer = "Dr Tester"
    s.browser = "never"   # the app's tests read the local site as plain HTTP (the default is auto)
    return s


@pytest.fixture
def window(qtbot, tmp_path: Path, settings):
    """The main window offscreen, on a database in tmp_path; its work is stopped and waited for after the test."""
    from ui.main_window import MainWindow

    w = MainWindow(tmp_path / "audits.db", settings)
    qtbot.addWidget(w)
    w.show()
    yield w
    w.benchmark_page.shutdown(10_000)
    if w.audit.worker is not None:
        w.audit.worker.cancel()
        w.audit.worker.wait(10_000)
    w.db.wait(10_000)
