"""The support matrix and the verdict panel beside it, offscreen: the panel names the check that decided and
the source sentence it read, the pair's text scrolls and the source viewer has room, cells are whole at
1024x640, and a reviewer's label not applied is shown beside the judge's.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import QSize
from PySide6.QtWidgets import QLabel

from sourcecheckup import review
from sourcecheckup.models import REVIEW_FIRST, Label, Verdict
from sourcecheckup.store import Store
from sourcecheckup.views.results import load_run_view
from tests.support.app import audit_and_wait, open_and_wait
from tests.support.synth_run import synthesize_run

pytest.importorskip("pytestqt")


def test_the_verdict_panel_names_the_deciding_check_and_the_source_sentence(qtbot, window, settings, site):
    w = window
    settings.judges = ["builtin"]
    w.results.input.paste_edit.setPlainText(
        "The usual adult dose of paracetamol is one or two 500mg tablets up to 6 times in 24 hours [1].\n\n"
        f"[1]: {site}/medicines/paracetamol-for-adults\n")
    audit_and_wait(qtbot, w)
    tab = w.results.matrix_tab
    assert tab.select_pair(tab.matrix_model.matrix.statements[0].row.pk, tab.matrix_model.matrix.urls[0])
    verdicts = tab.pair_verdicts.text()
    assert "Decided by the exact quantity/dose check." in verdicts, verdicts
    assert tab.pair_quote.text().startswith("Source sentence it read (found in the source):")
    assert "4 times in 24 hours" in tab.pair_quote.text()
    # the statement card beside the answer says the same
    w.results.detail_tabs.setCurrentIndex(0)
    w.results.answer_tab.show_statement_card(tab.matrix_model.matrix.statements[0].row.pk)
    card = w.results.answer_tab.statement_card.toPlainText()
    assert "decided by the exact quantity/dose check" in card and "source sentence it read" in card, card


def label_is_whole(label: QLabel) -> bool:
    """A wrapped label is as tall as its text needs at its width: no line cut off."""
    return label.height() >= label.heightForWidth(label.width()) - 1


@pytest.mark.parametrize("size", [QSize(1280, 800), QSize(1366, 768)])
def test_the_pair_text_scrolls_and_the_source_viewer_has_room(qtbot, window, size):
    w = window
    long_reason = "The source words it another way. " * 30
    with Store(w.db_path) as st:
        rid = synthesize_run(st, responses=1, statements=3, sources=2)
        view = load_run_view(st, rid)
        row = next(iter(view.data.verdicts.values()))[0]
        st.save_verdict(rid, row.statement_pk, row.url, row.source_id,
                        Verdict(label=Label.NOT_SUPPORTED, score=0.3, rationale=long_reason, judge_id="builtin",
                                quote=row.verdict.quote))
    w.resize(size)
    qtbot.waitUntil(lambda: w.size() == size, timeout=3000)
    open_and_wait(qtbot, w, rid)
    w.results.detail_tabs.setCurrentIndex(2)
    tab = w.results.matrix_tab
    assert tab.select_pair(row.statement_pk, row.url)
    labels = (tab.pair_statement, tab.pair_source, tab.pair_verdicts, tab.pair_quote)
    try:   # the layout settles in a turn or two of the event loop
        qtbot.waitUntil(lambda: all(label_is_whole(label) for label in labels), timeout=10_000)
    except AssertionError:
        pass
    for label in labels:
        assert label_is_whole(label), (label.text()[:60], label.height(), label.heightForWidth(label.width()))
    # the text is taller than its pane: it scrolls rather than being cut
    assert tab.pair_scroll.widget().height() > tab.pair_scroll.viewport().height()
    # the scroll bar shows once the scroll area has laid out the taller text (a turn of the event loop)
    qtbot.waitUntil(lambda: tab.pair_scroll.verticalScrollBar().isVisible(), timeout=30_000)
    lines = tab.source_viewer.viewport().height() // tab.source_viewer.fontMetrics().lineSpacing()
    assert lines >= 6, lines


def test_matrix_cells_are_whole_at_1024x640(qtbot, window):
    w = window
    with Store(w.db_path) as st:
        rid = synthesize_run(st, responses=1, statements=2, sources=2, judges=("builtin", "keyword:0"))
        view = load_run_view(st, rid)
        for rows in view.data.verdicts.values():
            for r in rows:   # the judges split and the screen is unsure: the longest cell texts
                if r.verdict.judge_id == "builtin":
                    st.save_verdict(rid, r.statement_pk, r.url, r.source_id, Verdict(
                        label=Label.NOT_SUPPORTED, score=0.45, judge_id="builtin", flags=(REVIEW_FIRST,)))
    w.resize(QSize(1024, 640))
    qtbot.waitUntil(lambda: w.size() == QSize(1024, 640), timeout=3000)
    open_and_wait(qtbot, w, rid)
    w.results.detail_tabs.setCurrentIndex(2)
    table, model = w.results.matrix_tab.matrix_table, w.results.matrix_tab.matrix_model
    fm = table.fontMetrics()
    texts = []
    for r in range(model.rowCount()):
        for c in range(model.columnCount()):
            text = model.index(r, c).data()
            texts.append(text)
            assert fm.horizontalAdvance(text) + 6 <= table.columnWidth(c), (text, table.columnWidth(c))
    assert any(t.startswith("⚑") and "not supported" in t for t in texts), texts


def test_a_reviewer_label_not_applied_is_shown_beside_the_judges_label_in_the_matrix(qtbot, window):
    w = window
    with Store(w.db_path) as st:
        run_id = synthesize_run(st, responses=1, statements=1, sources=1)
        data = st.load_run(run_id)
        pk = data.statements[data.responses[0].pk][0].pk
        review.add_review(st, run_id, pk, "https://example.org/page/0", "Dr Tester", "not_supported")
    open_and_wait(qtbot, w, run_id)
    matrix = w.results.matrix_tab.matrix_model
    assert matrix.index(0, 0).data() == "✎ ✓ supported (reviewer: not supported)"    # judges only: the judge's
    with qtbot.waitSignal(w.results.run_shown, timeout=120_000):
        w.results.metrics_bar.with_overrides.setChecked(True)
    assert matrix.index(0, 0).data() == "✎ ✗ not supported (reviewed)"
