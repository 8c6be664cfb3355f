"""A partial run in the app: the metric cards say so and leave pending sources out (a real MetricsBar,
offscreen), and the counts line says it whole at 1920 px."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
pytest.importorskip("pytestqt")

from sourcecheckup.metrics import compute_metrics
from sourcecheckup.store import Store
from tests.support.app import WAIT_MS
from tests.support.synth_run import synthesize_run
from ui.widgets import MetricsBar


def test_metric_cards_say_partial_run_and_leave_pending_sources_out(qtbot, tmp_path):
    store = Store(tmp_path / "u.db")
    run_id = synthesize_run(store, responses=2, statements=2, sources=2, status="cancelled")
    with store.db.conn:   # the second source was never fetched before Cancel
        store.db.execute("DELETE FROM run_sources WHERE run_id = ? AND url LIKE '%/1'", [run_id])
    metrics = compute_metrics(store.load_run(run_id))
    bar = MetricsBar()
    qtbot.addWidget(bar)
    bar.show_metrics(metrics, 0, "cancelled")
    assert "partial run: 4 of 8 pairs judged" in bar.counts.text()
    assert "0 unreadable cited URLs" in bar.counts.text()
    assert "100.0%" in bar.labels["url_validity"].text() and "2/2" in bar.labels["url_validity"].text()
    done = synthesize_run(store, responses=2, statements=2, sources=2)
    bar.show_metrics(compute_metrics(store.load_run(done)), 0, "completed")
    assert "partial" not in bar.counts.text()


def test_the_counts_line_of_a_partial_run_is_whole_at_1920_px(qtbot, window, tmp_path):
    """at 1920 px the counts line still ended "partial run: …" with the rest only in a tooltip."""
    from PySide6.QtCore import QSize

    from tests.support.synth_run import synthesize_run

    w = window
    w.resize(QSize(1920, 1040))
    qtbot.waitUntil(lambda: w.width() == 1920, timeout=WAIT_MS)
    with Store(w.db_path) as store:
        run_id = synthesize_run(store, responses=3, statements=2, sources=2, status="cancelled")
        with store.db.conn:   # the second source was never fetched before Cancel
            store.db.execute("DELETE FROM run_sources WHERE run_id = ? AND url LIKE '%/1'", [run_id])
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        w.results.open_run(run_id)
    counts = w.results.metrics_bar.counts
    qtbot.wait(50)
    assert "partial run:" in counts.text() and "judge " in counts.text(), counts.text()
    assert not counts.is_elided(), counts.shown_lines()
