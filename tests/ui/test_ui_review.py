"""Reviewing in the app, offscreen: an "unsure" label is marked and counts as reviewed so progress reaches
n/n, the agreement table of a few pairs shows n and an exact interval (no kappa), and review mode starts
at the first review-first pair.
"""
from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from sourcecheckup import review
from sourcecheckup.models import REVIEW_FIRST, Label, Verdict
from sourcecheckup.report import build_report, report_html
from sourcecheckup.store import Store
from sourcecheckup.views.results import load_run_view
from tests.support.app import open_and_wait
from tests.support.synth_run import synthesize_run

pytest.importorskip("pytestqt")


def test_an_unsure_label_is_marked_counts_as_reviewed_and_progress_reaches_n_of_n(qtbot, window):
    w = window
    with Store(w.db_path) as st:
        run_id = synthesize_run(st, responses=1, statements=2, sources=2)
        data = st.load_run(run_id)
        pks = [s.pk for s in data.statements[data.responses[0].pk]]
        urls = list(data.responses[0].response.citations)
        review.add_review(st, run_id, pks[0], urls[0], "Dr Tester", "not_supported")
        review.add_review(st, run_id, pks[0], urls[1], "Dr Tester", "unsure")
    open_and_wait(qtbot, w, run_id)
    facets = w.results.facets
    assert facets.reviewed_label.text() == "2/4 pairs reviewed (1 unsure)"
    matrix = w.results.matrix_tab.matrix_model
    unsure = matrix.index(0, 1).data()
    assert unsure.startswith("✎") and "(reviewed: unsure)" in unsure
    assert "reviewed: unsure (the judge&#x27;s label still counts)" in matrix.index(0, 1).data(Qt.ItemDataRole.ToolTipRole)
    # the Review sample page counts the same pairs
    w.pages.setCurrentWidget(w.sample_page)
    qtbot.waitUntil(lambda: "pairs reviewed" in w.sample_page.agreement_label.text(), timeout=120_000)
    assert "2 pairs reviewed" in w.sample_page.agreement_label.text()
    # labelling every pair, one more of them unsure, completes the review
    w.pages.setCurrentWidget(w.results)
    with Store(w.db_path) as st:
        review.add_review(st, run_id, pks[1], urls[0], "Dr Tester", "unsure")
        review.add_review(st, run_id, pks[1], urls[1], "Dr Tester", "supported")
    open_and_wait(qtbot, w, run_id)
    qtbot.waitUntil(lambda: facets.reviewed_label.text().startswith("4/4"), timeout=120_000)
    assert facets.reviewed_label.text() == "4/4 pairs reviewed (2 unsure)"


def test_the_agreement_table_shows_n_an_exact_interval_and_no_kappa_on_three_pairs(qtbot, window, tmp_path):
    w = window
    with Store(w.db_path) as st:
        run_id = synthesize_run(st, responses=2, statements=2, sources=2)
        data = st.load_run(run_id)
        judged = sorted((spk, v.url, v.verdict.label.value) for spk, vs in data.verdicts.items() for v in vs)
        for spk, url, label in judged[:3]:           # one reviewer agrees with the judge on three pairs
            review.add_review(st, run_id, spk, url, "Dr Tester", label)
    open_and_wait(qtbot, w, run_id)
    page = w.sample_page
    with qtbot.waitSignal(page.agreement_shown, timeout=120_000):
        w.pages.setCurrentWidget(page)
    rows = {(r.rater_a, r.rater_b): r for r in page.agreement_model.rows}
    judge = rows[("builtin", "Dr Tester")]
    assert judge.n == 3
    assert judge.agreement == "3/3 · 100.0% (95% CI 29–100)"        # exact: 3/3 says little
    assert judge.kappa == "too few pairs to estimate (3 < 10)"
    assert not any("1.00 to 1.00" in r.kappa or "(95% CI" in r.kappa for r in page.agreement_model.rows)
    # the report follows the same rule
    with Store(w.db_path) as st:
        report = build_report(st, run_id)
    [c] = [c for c in report["review"]["comparisons"] if c["rater_b"] == "Dr Tester" and c["rater_a"] == "builtin"]
    assert c["kappa"]["value"] is None and c["kappa"]["min_pairs"] == 10
    assert c["agreement"]["ci95"] == pytest.approx([0.292, 1.0], abs=1e-3)
    assert "too few pairs" in report_html(report)


def test_review_mode_starts_at_the_review_first_pair_when_the_matrix_has_focus(qtbot, window):
    w = window
    with Store(w.db_path) as st:
        rid = synthesize_run(st, responses=1, statements=3, sources=2)
        view = load_run_view(st, rid)
        last = sorted((r for rows in view.data.verdicts.values() for r in rows),
                      key=lambda r: (r.statement_pk, r.url))[-1]
        st.save_verdict(rid, last.statement_pk, last.url, last.source_id, Verdict(
            label=Label.NOT_SUPPORTED, score=0.45, judge_id="builtin", flags=(REVIEW_FIRST,)))
    open_and_wait(qtbot, w, rid)
    tab = w.results.matrix_tab
    w.results.detail_tabs.setCurrentWidget(tab)
    tab.matrix_table.setFocus()
    tab.matrix_table.setCurrentIndex(tab.matrix_model.index(0, 0))   # what focusing the matrix selects
    assert w.results.current_cell().statement_pk != last.statement_pk
    w.review_mode_action.trigger()
    try:
        cell = w.results.current_cell()
        assert (cell.statement_pk, cell.url) == (last.statement_pk, last.url)
        assert cell.review_first
    finally:
        w.review_mode_action.trigger()
