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


def test_which_judge_scrolls_at_1024x640_and_no_option_is_cut(qtbot, settings):  # noqa: F811
    """Item 7: at 1024x640 the three option boxes were cut mid-sentence, with no scroll bar."""
    from PySide6.QtCore import QPoint, QPointF, Qt
    from PySide6.QtGui import QWheelEvent
    from PySide6.QtWidgets import QApplication, QLabel, QScrollArea

    from ui.dialogs import SettingsDialog

    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    dialog.show()
    details = dialog.judge_guide.show_details()
    qtbot.waitUntil(details.isVisible, timeout=WAIT_MS)
    details.resize(details.width(), 560)   # what a 1024x640 screen leaves under the title and task bars
    qtbot.waitUntil(lambda: details.height() <= 560, timeout=WAIT_MS)
    qtbot.wait(50)
    scroll = details.findChild(QScrollArea)
    assert scroll is not None
    bar = scroll.verticalScrollBar()
    assert bar.maximum() > 0 and bar.isVisible()          # what does not fit scrolls
    for label in scroll.widget().findChildren(QLabel):    # each box has the height its wrapped text needs
        if label.wordWrap() and label.text():
            assert label.height() >= label.heightForWidth(label.width()), label.text()[:60]
    # the wheel scrolls it
    before = bar.value()
    viewport = scroll.viewport()
    centre = QPointF(viewport.width() / 2, viewport.height() / 2)
    event = QWheelEvent(centre, viewport.mapToGlobal(centre), QPoint(0, 0), QPoint(0, -120),
                        Qt.MouseButton.NoButton, Qt.KeyboardModifier.NoModifier, Qt.ScrollPhase.NoScrollPhase, False)
    QApplication.sendEvent(viewport, event)
    assert bar.value() > before


def test_the_counts_line_of_a_partial_run_is_whole_at_1920_px(qtbot, window, tmp_path):  # noqa: F811
    """Item 14: at 1920 px the counts line still ended "partial run: …" with the rest only in a tooltip."""
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


def test_on_a_1024x640_screen_the_window_and_its_title_bar_fit(qtbot, settings, tmp_path, monkeypatch):  # noqa: F811
    """Item 15: the window opened 1024x640 plus its title bar, so its bottom was off the screen."""
    from PySide6.QtCore import QRect

    from ui.main_window import TITLE_BAR_PX, MainWindow

    class SmallScreen:
        def availableGeometry(self) -> QRect:  # noqa: N802 - Qt's name
            return QRect(0, 0, 1024, 640)

    monkeypatch.setattr(MainWindow, "screen", lambda self: SmallScreen())
    w = MainWindow(tmp_path / "audits.db", settings)
    qtbot.addWidget(w)
    assert w.width() == 1024 and w.height() + TITLE_BAR_PX <= 640, w.size()


def test_the_answer_legend_never_parts_a_mark_from_its_meaning(qtbot, window):  # noqa: F811
    """Item 15: at 1024x640 the legend's "⊠" wrapped onto a line of its own, away from its label."""
    from PySide6.QtGui import QTextLayout

    from sourcecheckup.views.references import RETRACTED_MARK
    from ui.theme import STATUS_MARK

    label = window.results.answer_tab.legend
    text = label.text()
    marks = {m for m, _ in STATUS_MARK.values()} | {RETRACTED_MARK}
    for width in range(200, 1000, 7):
        layout = QTextLayout(text, label.font())
        layout.beginLayout()
        lines = []
        while (line := layout.createLine()).isValid():
            line.setLineWidth(width)
            lines.append(text[line.textStart():line.textStart() + line.textLength()])
        layout.endLayout()
        assert len(lines) >= 1
        for shown in lines:
            words = shown.replace("\u00a0", " ").replace("\u2060", " ").split()
            assert words and words[-1] not in marks, (width, lines)
