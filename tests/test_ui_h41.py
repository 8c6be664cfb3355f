"""Issue 41, the app's screens (offscreen, real widgets): File → Open database, the judge dialog at 1024x640."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

pytest.importorskip("pytestqt")

from sourcecheckup.store import Store  # noqa: E402
from tests.support.app import WAIT_MS, settings, window  # noqa: E402,F401  (fixtures)


def _database_with_runs(path, n: int) -> list[str]:
    with Store(path) as store:
        ids = [store.create_run(input=f"batch {i}", config={}, judges=["keyword:0"], parser="builtin",
                                app_version="test") for i in range(n)]
        for rid in ids:
            store.set_run_status(rid, "completed")
    return ids


def test_opening_a_database_opens_its_latest_run_and_clears_the_last_ones_status(qtbot, window, tmp_path):  # noqa: F811
    """Item 13: File → Open database showed "No run open" and kept the previous database's "Run … completed."."""
    w = window
    ids = _database_with_runs(tmp_path / "other.db", 2)
    w.audit.progress_label.setText("Run 20261126-af21d7 completed.")
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        assert w.open_database(tmp_path / "other.db")
    with Store(tmp_path / "other.db") as store:
        assert w.results.run_id == store.latest_run_id() and w.results.run_id in ids
    assert "20261126-af21d7" not in w.audit.progress_label.text()
