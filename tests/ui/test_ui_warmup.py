"""The built-in judge's model loads in the background from the moment the app opens, so the first verdict
does not wait for it (offscreen, real widgets).
"""
from __future__ import annotations

import threading

import pytest
from PySide6.QtWidgets import QApplication

from sourcecheckup import embeddings, warmup
from ui.main_window import MainWindow

pytest.importorskip("pytestqt")


def test_the_model_loads_in_the_background_from_launch(qtbot, window, settings, monkeypatch):
    w = window
    loaded_on: list[str] = []
    release = threading.Event()

    def slow_preload() -> None:
        loaded_on.append(threading.current_thread().name)
        release.wait(10)

    steps: list[str] = []
    monkeypatch.setattr(warmup, "warm_up_judges", lambda judges: steps.append(f"judges {judges}"))
    monkeypatch.setattr(warmup, "warm_up_reading", lambda: steps.append("reading"))
    monkeypatch.setattr(embeddings, "is_loaded", lambda: False)
    monkeypatch.setattr(embeddings, "available", lambda: True)
    monkeypatch.setattr(embeddings, "preload", slow_preload)
    assert w.preload_judge_model() is False          # the test window's judge needs no model
    settings.judges = ["builtin"]
    with qtbot.waitSignal(w.model_preload.loaded, timeout=120_000):
        assert w.preload_judge_model() is True       # returns at once: the GUI thread never waits for it
        assert w.model_preload.running
        release.set()
    assert loaded_on == ["judge-model-preload"]
    assert w.model_preload.wait(10)
    # then what else the first audit pays once: the judge's first call, the page reader's imports
    assert steps == ["judges ['builtin']", "reading"]
    assert w.preload_judge_model() is False          # once per launch


def test_the_app_starts_the_load_when_it_opens(qtbot, monkeypatch, tmp_path):
    """ui.app.main, as `sourcecheckup gui` runs it: the window is shown, then the model starts loading."""
    from PySide6.QtCore import QSettings

    from ui import app as app_module
    from ui import main_window as main_window_module
    from ui.settings import AppSettings

    calls: list[str] = []
    monkeypatch.setattr(MainWindow, "preload_judge_model", lambda self: calls.append("preload") or True)
    monkeypatch.setattr(MainWindow, "offer_judge_guide", lambda self: None)
    monkeypatch.setattr(type(QApplication.instance()), "exec", lambda self: 0)
    monkeypatch.setattr(main_window_module, "AppSettings",
                        lambda: AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)))
    assert app_module.main(["--db", str(tmp_path / "audits.db")]) == 0
    assert calls == ["preload"]
    for widget in QApplication.topLevelWidgets():
        if isinstance(widget, MainWindow):
            widget.db.wait(10_000)
            widget.close()
            widget.deleteLater()
