"""Issue 12 item 3 in the app: the metric cards say when a run is partial (a real MetricsBar, offscreen)."""
from __future__ import annotations

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
pytest.importorskip("pytestqt")

from sourcecheckup.metrics import compute_metrics  # noqa: E402
from sourcecheckup.store import Store  # noqa: E402
from tests.support.synth_run import synthesize_run  # noqa: E402
from ui.widgets import MetricsBar  # noqa: E402


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
