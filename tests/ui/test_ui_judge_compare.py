"""The Review sample page's "Which judge to trust" dialog, offscreen, over a run with two judges and reviews."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

pytest.importorskip("pytestqt")

from sourcecheckup import review
from sourcecheckup.store import Store
from tests.support.app import WAIT_MS
from tests.support.judge_reviews import KEYWORD, SYNTH, pairs_by_label, review_pair, reviewed_two_judge_run
from ui.judge_compare_panel import JudgeCompareDialog


def test_which_judge_to_trust_lists_each_judge_recommends_one_and_shows_its_disagreements(qtbot, window):
    w = window
    with Store(w.db_path) as st:
        run_id, flipped = reviewed_two_judge_run(st)
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        w.results.open_run(run_id)
    page = w.sample_page
    w.pages.setCurrentWidget(page)
    assert page.judges_btn.isVisible()
    page.judges_btn.click()
    dialog = page.findChild(JudgeCompareDialog)
    assert dialog is not None and dialog.isVisible()
    panel = dialog.panel
    qtbot.waitUntil(lambda: panel.comparison is not None, timeout=WAIT_MS)   # computed in a pool thread
    scores = panel.scores_model

    def row(judge: str) -> list[str]:
        r = next(i for i in range(scores.rowCount()) if scores.data(scores.index(i, 0)) == judge)
        return [scores.data(scores.index(r, c)) for c in range(scores.columnCount())]

    assert row(SYNTH) == [SYNTH, "24", "87.5% (95% CI 67.6%–97.3%)", "0.73", "85.6%", "1", "3"]
    assert row(KEYWORD) == [KEYWORD, "24", "37.5% (95% CI 18.8%–59.4%)", "0.00", "50.0%", "1", "15"]
    assert panel.recommendation.text() == \
        f"Recommended: {SYNTH}, the highest balanced accuracy (85.6%) on 24 reviewed pairs."
    assert "26 pairs reviewed by 3 reviewers, a majority on 25" in panel.summary.text()

    # the recommended judge is selected: its 3 disagreements, with the statement and both labels
    dis = panel.disagreements_model
    assert dis.rowCount() == 3 and "synthetic disagrees" in panel.disagreements_label.text()
    assert {(d.statement_pk, d.url) for d in dis.rows} == flipped
    cells = [dis.data(dis.index(0, c)) for c in range(dis.columnCount())]
    assert cells[0] == "r1" and cells[1].startswith("Hypertension") and cells[2].startswith("Page about")
    assert {cells[3], cells[4]} == {"✓ supported", "✗ not supported"} and "ana:" in cells[5]

    keyword_row = next(i for i in range(scores.rowCount()) if scores.data(scores.index(i, 0)) == KEYWORD)
    panel.scores_table.setCurrentIndex(scores.index(keyword_row, 0))
    assert dis.rowCount() == 15 and {dis.data(dis.index(r, 3)) for r in range(15)} == {"✓ supported"}

    # opened again after one more review, the same dialog computes the comparison afresh
    with Store(w.db_path) as st:
        reviewed = {(r.statement_pk, r.url) for r in review.reviews(st, run_id)}
        spk, url, label, _ = next(p for p in pairs_by_label(st, run_id) if p[:2] not in reviewed)
        review_pair(st, run_id, spk, url, label)
    panel.comparison = None
    page.judges_btn.click()
    assert page.findChildren(JudgeCompareDialog) == [dialog] and dialog.isVisible()
    qtbot.waitUntil(lambda: panel.comparison is not None, timeout=WAIT_MS)
    assert "27 pairs reviewed" in panel.summary.text() and row(SYNTH)[1] == "25"
    dialog.close()
