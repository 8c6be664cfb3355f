"""A run whose verdicts are mostly judge errors says so loudly in the app's metric bar (a real
MetricsBar, offscreen) and in the engine's note the CLI prints."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
pytest.importorskip("pytestqt")

from sourcecheckup.metrics import compute_metrics, judge_error_note  # noqa: E402
from sourcecheckup.store import Store  # noqa: E402
from tests.support.synth_run import synthesize_run  # noqa: E402
from ui.widgets import MetricsBar  # noqa: E402


def test_judge_error_note_speaks_only_when_most_verdicts_failed():
    assert judge_error_note({"verdicts": 10, "judge_errors": 5}) == ""
    assert "6 of 10 verdicts (60%) are judge errors" in judge_error_note({"verdicts": 10, "judge_errors": 6})
    assert judge_error_note({"verdicts": 55, "judge_errors": 55}).startswith("every verdict is a judge error")
    assert judge_error_note({"verdicts": 0, "judge_errors": 0}) == ""


def test_metric_bar_warns_when_most_verdicts_are_judge_errors(qtbot, tmp_path):
    store = Store(tmp_path / "u.db")
    metrics = compute_metrics(store.load_run(synthesize_run(store, responses=2, statements=2, sources=2)))
    bar = MetricsBar()
    qtbot.addWidget(bar)
    bar.show_metrics(metrics, 0, "completed")
    assert "⚠" not in bar.counts.text()
    metrics.counts.update(verdicts=8, judge_errors=8)
    bar.show_metrics(metrics, 0, "completed")
    assert "⚠ every verdict is a judge error" in bar.counts.text()
