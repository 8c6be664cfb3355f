"""The window as a new user meets it on a small laptop (1024x640): layout, cut-off text, the window, its
title bar and the judge dialog fitting the screen, the status bar's whole texts and plurals, export and
"Open report" without a viewer, opening a database (its latest run, the last one's status cleared),
naming runs and pasted answers and telling runs apart, and facets over the responses."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QFileDialog, QLabel

from sourcecheckup import review
from sourcecheckup.ingest import load_text, name_from_first_words
from sourcecheckup.report import write_report
from sourcecheckup.store import MIGRATIONS, Store
from sourcecheckup.views.results import problem_kind, problem_phrase
from sourcecheckup.views.review import agreement_summary
from tests.support.app import WAIT_MS, audit_and_wait, pasted_answer
from tests.support.synth_run import synthesize_run
from ui import exporter as exporter_module
from ui.elide import ElidedLabel
from ui.facets import problem_kinds_of
from ui.main_window import REVIEW_MODE_HELP, MainWindow
from ui.results import page as results_page

SMALL = QSize(1024, 640)


def open_synthetic(qtbot, w: MainWindow, **kw) -> str:
    with Store(w.db_path) as st:
        rid = synthesize_run(st, **kw)
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        w.results.open_run(rid)
    return rid


# ---------------------------------------------------------------------------- 16: layout


def test_window_works_at_1024x640_and_keeps_its_size_after_a_run(qtbot, window, site):
    w = window
    w.resize(SMALL)
    qtbot.waitUntil(lambda: w.size() == SMALL, timeout=WAIT_MS)
    for page in range(w.pages.count()):   # no page forces the window to grow
        hint = w.pages.widget(page).minimumSizeHint()
        assert hint.width() <= 1000 and hint.height() <= 520, (w.pages.tabText(page), hint)
    w.results.input.run_name_edit.setText("Hypertension check")
    w.results.input.paste_edit.setPlainText(pasted_answer(site))
    audit_and_wait(qtbot, w)
    qtbot.wait(200)
    assert w.size() == SMALL                                  # it used to grow by about 20 px
    bar = w.results.metrics_bar
    assert bar.columns == 4                                   # four cards fit beside each other
    fm = bar.counts.fontMetrics()
    assert bar.counts.height() < 2 * fm.height() + 8          # the counts on one line, not nine
    assert "1 response ·" in bar.counts.text()                  # one response, said so
    right = w.results.widget(1)
    assert right.geometry().right() <= w.results.width()   # the right edge is not cut
    table = w.results.responses_table
    rows_visible = table.viewport().height() // table.verticalHeader().defaultSectionSize()
    assert rows_visible >= 3
    assert w.results.detail_tabs.height() >= 200
    # the count ends the filter row, and the question and the grade share one line: the height goes to the
    # responses and the verdicts (issue 41 item 15: 2½ rows and about 3 lines of verdict before)
    page = w.results
    assert abs(page.count_label.mapTo(page, page.count_label.rect().center()).y()
               - page.search_edit.mapTo(page, page.search_edit.rect().center()).y()) < 6
    tab = page.answer_tab
    assert tab.question_label.height() < 2 * fm.height()
    assert tab.question_label.text().startswith("Question:")
    assert tab.question_label.toolTip() or not tab.question_label.is_elided()
    card = tab.statement_card
    assert card.viewport().height() // card.fontMetrics().lineSpacing() >= 5
    # narrower: the cards reflow two to a row instead of squeezing their text
    w.results.setSizes([w.results.width() - 560, 560])
    qtbot.waitUntil(lambda: bar.columns == 2, timeout=WAIT_MS)
    assert all(not label.is_elided() or label.toolTip() for label in bar.labels.values())
    # the splitters keep their minimums: neither side can be dragged shut
    w.results.setSizes([0, w.results.width()])
    qtbot.wait(50)
    assert w.results.left_tabs.width() >= results_page.LEFT_MIN_WIDTH
    assert not w.results.isCollapsible(0) and not w.results.results_vsplit.isCollapsible(0)


def test_elided_label_cuts_to_its_width_and_keeps_the_whole_text_in_its_tooltip(qtbot):
    label = ElidedLabel("Run 20250101-abc completed: 3 refused (unsafe address) and 2 dead links")
    qtbot.addWidget(label)
    label.resize(120, 24)
    label.show()
    qtbot.waitExposed(label, timeout=WAIT_MS)
    assert label.is_elided()
    assert label.shown_lines()[0].endswith("…")
    assert "3 refused (unsafe address) and 2 dead links" in label.toolTip()
    assert label.minimumSizeHint().width() < 150          # a long text never widens the window
    label.resize(900, 24)
    assert not label.is_elided() and label.toolTip() == ""
    label.setText("<b>not markup</b>")
    label.resize(40, 24)
    assert "&lt;b&gt;" in label.toolTip()                   # escaped: shown as text


# ---------------------------------------------------------------------------- 17: cut-off text


def test_matrix_headers_show_the_page_title_and_the_whole_statement_in_tooltips(qtbot, window):
    w = window
    w.resize(SMALL)
    open_synthetic(qtbot, w, responses=2, statements=3, sources=2, base_url="http://127.0.0.1:9/page")
    m = w.results.matrix_tab.matrix_model
    header = m.headerData(0, Qt.Orientation.Horizontal)
    assert header.startswith("[1] Page about")               # the title, not "[1] 127.0.0.1"
    tip = m.headerData(0, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)
    assert "Page about" in tip and "http://127.0.0.1:9/page/0" in tip
    row = m.headerData(0, Qt.Orientation.Vertical)
    statement = m.matrix.statements[0].row.statement.text
    assert statement in row                                  # the whole text: the header view cuts it
    assert statement in m.headerData(0, Qt.Orientation.Vertical, Qt.ItemDataRole.ToolTipRole)
    assert w.results.matrix_tab.matrix_table.verticalHeader().textElideMode() == Qt.TextElideMode.ElideRight
    assert w.results.matrix_tab.matrix_table.horizontalHeader().textElideMode() == Qt.TextElideMode.ElideRight
    # Runs list: a column too narrow for its header keeps the header in a tooltip
    assert w.results.runs.runs_model.headerData(2, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole) == "Statement support"
    # the Benchmark page's long placeholder is in its tooltip too
    docs = w.benchmark_page.docs_edit
    assert "questions CSV/JSONL" in docs.toolTip()


# ---------------------------------------------------------------------------- 18: export, open database


def test_export_offers_the_last_folder_then_opens_the_report(qtbot, window, tmp_path, monkeypatch):
    w = window
    open_synthetic(qtbot, w, responses=1, statements=2, sources=1)
    offered: list[str] = []
    target = tmp_path / "reports" / "audit.html"
    target.parent.mkdir()

    def fake_save(parent, caption, directory, filters, *a, **k):
        offered.append(directory)
        return str(target), "HTML report (*.html)"

    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(fake_save))
    first = w.exporter.export_start_path("html")
    assert first.parent != Path.cwd() or first.parent == w.settings.export_dir
    assert first.parent == w.settings.export_dir             # Documents (or home) on a first export
    assert not w.exporter.open_report_btn.isVisible()
    with qtbot.waitSignal(w.exporter.export_finished, timeout=WAIT_MS) as done:
        w.exporter.export_dialog("html")
    assert done.args == [str(target), ""]
    assert offered == [str(first)]
    assert w.exporter.open_report_btn.isVisible()
    opened: list[str] = []
    monkeypatch.setattr(exporter_module.QDesktopServices, "openUrl",
                        staticmethod(lambda url: opened.append(url.toLocalFile()) or True))
    w.exporter.open_report_btn.click()
    assert opened == [str(target)]
    assert w.exporter.export_start_path("pdf") == target.parent / f"sourcecheckup-{w.results.run_id}.pdf"   # the last folder


def test_open_database_uses_an_open_dialog(qtbot, window, tmp_path, monkeypatch):
    w = window
    other = tmp_path / "other.db"
    with Store(other) as st:
        synthesize_run(st, responses=1)
    calls: list[str] = []

    def fake_open(parent, caption, directory, filters, *a, **k):
        calls.append(caption)
        return str(other), filters

    def no_save(*a, **k):
        raise AssertionError("Open database must not show a Save dialog")

    monkeypatch.setattr(QFileDialog, "getOpenFileName", staticmethod(fake_open))
    monkeypatch.setattr(QFileDialog, "getSaveFileName", staticmethod(no_save))
    w.open_database_dialog()
    assert calls == ["Open a database"]
    assert w.db_path == other


# ---------------------------------------------------------------------------- 19: names and notes


def test_a_run_is_named_and_noted_in_runs_and_in_its_report(qtbot, window, site, tmp_path):
    w = window
    w.results.input.run_name_edit.setText("Hypertension check")
    w.results.input.paste_edit.setPlainText(pasted_answer(site))
    rid = audit_and_wait(qtbot, w)
    runs = w.results.runs.runs_model
    qtbot.waitUntil(lambda: bool(runs.rows) and runs.rows[0].name == "Hypertension check", timeout=WAIT_MS)
    # the pasted answer is named by its first words, not "pasted-1"
    assert w.results.view.data.responses[0].response.id == "hypertension-is-now-defined-as"
    w.results.runs.set_run_label(rid, "Hypertension check", "Second try <b>after</b> the fix")
    qtbot.waitUntil(lambda: runs.rows[0].note.startswith("Second try"), timeout=WAIT_MS)
    shown = runs.index(0, 0)
    assert shown.data() == "Hypertension check"
    assert rid in shown.data(Qt.ItemDataRole.ToolTipRole)
    note_col = [c[0] for c in runs.columns].index("Note")
    assert runs.index(0, note_col).data() == "Second try <b>after</b> the fix"
    with Store(w.db_path) as st:
        html = write_report(st, rid, tmp_path / "r.html").read_text(encoding="utf-8")
        js = write_report(st, rid, tmp_path / "r.json").read_text(encoding="utf-8")
    assert "SourceCheckup audit report: Hypertension check" in html
    assert "Second try &lt;b&gt;after&lt;/b&gt; the fix" in html and "<b>after</b>" not in html
    assert '"name": "Hypertension check"' in js


def test_run_name_and_note_come_from_an_append_only_migration(tmp_path):
    with Store(tmp_path / "a.db") as st:
        assert st.schema_version == len(MIGRATIONS)
        rid = synthesize_run(st, responses=1)
        assert (st.get_run(rid).name, st.get_run(rid).note) == ("", "")
        run = st.set_run_label(rid, name="  Cardiology batch ", note="first pass")
        assert (run.name, run.note) == ("Cardiology batch", "first pass")
        assert st.set_run_label(rid, note="second pass").name == "Cardiology batch"   # None keeps a field


def test_pasted_answers_are_named_by_their_first_words():
    assert name_from_first_words("Metformin is contraindicated [1] in patients with an eGFR below 30 "
                                 "(see https://x.org/a).") == "metformin-is-contraindicated-in-patients"
    two = load_text('[{"response": "Aspirin helps.", "citations": []}, {"response": "Aspirin helps.", '
                    '"citations": []}, {"id": "mine", "response": "Kept as given.", "citations": []}]',
                    name_by_words=True)
    assert [r.id for r in two.responses] == ["aspirin-helps", "aspirin-helps-2", "mine"]
    assert [r.id for r in load_text("Plain answer.").responses] == ["pasted-1"]   # the CLI's ids are unchanged


# ---------------------------------------------------------------------------- 20: facets


def test_facets_filter_responses_by_model_status_and_problem_and_count_reviewed_pairs(qtbot, window):
    w = window
    rid = open_synthetic(qtbot, w, responses=4, statements=2, sources=2)
    facets = w.results.facets
    proxy = w.results.responses_proxy
    assert proxy.rowCount() == 4
    total = facets.reviewed_label.text()
    assert total == "0/16 pairs reviewed"                    # 4 answers x 2 claims x 2 sources
    facets.select(model="model-a")
    assert proxy.rowCount() == 2
    assert {proxy.index(r, 1).data() for r in range(proxy.rowCount())} == {"model-a"}
    facets.select(model="")
    # a reviewer says the one source that supports r1's first claim does not: r1 is no longer all supported
    first = w.results.view.assessed[0]
    claim = first.statements[0]
    url = next(u for u in first.urls if claim.row.pk in {s.row.pk for s in first.statements})
    supporting = [v.url for v in w.results.view.data.verdicts[claim.row.pk] if v.verdict.label.value == "supported"]
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):     # the figures and statuses with reviews
        w.results.metrics_bar.with_overrides.setChecked(True)
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        review.add_review(w.store, rid, claim.row.pk, supporting[0], "Dr Tester", "not_supported")
        w.results.reload_run()
    assert url
    assert facets.reviewed_label.text() == "1/16 pairs reviewed"
    facets.select(status="not_supported")
    assert proxy.rowCount() == 1 and proxy.index(0, 0).data() == "r1"
    facets.select(status="", problem="unsupported")
    assert proxy.rowCount() == 1
    facets.select(problem="\x00none")
    assert proxy.rowCount() == 3
    w.results.search_edit.setText("r2")                              # the free-text filter works beside the facets
    assert proxy.rowCount() == 1


def _database_with_runs(path, n: int) -> list[str]:
    with Store(path) as store:
        ids = [store.create_run(input=f"batch {i}", config={}, judges=["keyword:0"], parser="builtin",
                                app_version="test") for i in range(n)]
        for rid in ids:
            store.set_run_status(rid, "completed")
    return ids


def test_opening_a_database_opens_its_latest_run_and_clears_the_last_ones_status(qtbot, window, tmp_path):
    """File → Open database showed "No run open" and kept the previous database's "Run … completed."."""
    w = window
    ids = _database_with_runs(tmp_path / "other.db", 2)
    w.audit.progress_label.setText("Run 20261126-af21d7 completed.")
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        assert w.open_database(tmp_path / "other.db")
    with Store(tmp_path / "other.db") as store:
        assert w.results.run_id == store.latest_run_id() and w.results.run_id in ids
    assert "20261126-af21d7" not in w.audit.progress_label.text()


def test_on_a_1024x640_screen_the_window_and_its_title_bar_fit(qtbot, settings, tmp_path, monkeypatch):
    """the window opened 1024x640 plus its title bar, so its bottom was off the screen."""
    from PySide6.QtCore import QRect

    from ui.main_window import TITLE_BAR_PX, MainWindow

    class SmallScreen:
        def availableGeometry(self) -> QRect:  # noqa: N802 - Qt's name
            return QRect(0, 0, 1024, 640)

    monkeypatch.setattr(MainWindow, "screen", lambda self: SmallScreen())
    w = MainWindow(tmp_path / "audits.db", settings)
    qtbot.addWidget(w)
    assert w.width() == 1024 and w.height() + TITLE_BAR_PX <= 640, w.size()


def test_which_judge_scrolls_at_1024x640_and_no_option_is_cut(qtbot, settings):
    """at 1024x640 the three option boxes were cut mid-sentence, with no scroll bar."""
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


def two_pasted_runs(db) -> tuple[str, str]:
    """Two unnamed runs of one pasted answer each, as a clinician makes them."""
    ids = []
    with Store(db) as st:
        for words in ("The usual adult dose is one or two 500mg tablets up to 4 times in 24 hours.",
                      "Lactic acidosis is a rare but serious side effect of metformin."):
            ids.append(synthesize_run(st, responses=1, statements=1, sources=1,
                                      answer_text=lambda i, sents, words=words: words))
            with st.db.conn:
                st.db.execute("UPDATE runs SET input = 'pasted answer' WHERE id = ?", [ids[-1]])
    return ids[0], ids[1]


def test_runs_are_told_apart_and_their_figures_fit_the_runs_tab_at_1024x640(qtbot, window):
    w = window
    w.resize(1024, 640)
    first, second = two_pasted_runs(w.db_path)
    w.refresh_runs()
    runs = w.results.runs.runs_model
    qtbot.waitUntil(lambda: runs.rowCount() == 2, timeout=120_000)
    names = [runs.index(r, 0).data() for r in range(2)]
    assert names == ["“Lactic acidosis is a rare but…”", "“The usual adult dose is one or…”"], names
    assert second in runs.index(0, 0).data(Qt.ItemDataRole.ToolTipRole)
    combo = w.compare_page.run_a
    labels = [combo.itemText(i) for i in range(combo.count())]
    assert labels[0].startswith("“Lactic acidosis") and labels[1].startswith("“The usual adult dose")
    assert len(set(labels)) == 2 and all(" · 20" in text for text in labels)     # and their start time
    # the Runs tab widens so that the run, its start and the three figures are all in view
    w.results.show_left(1)
    qtbot.waitUntil(lambda: w.results.sizes()[0] > 400, timeout=2000)
    table = w.results.runs.runs_table
    headers = [runs.headerData(c, Qt.Orientation.Horizontal) for c in range(runs.columnCount())]
    last = headers.index("URL validity")
    assert table.columnViewportPosition(last) + table.columnWidth(last) <= table.viewport().width()
    assert "judges only" in " ".join(lab.text() for lab in w.results.runs.findChildren(QLabel))
    # back on Input, the column narrows again
    w.results.show_left(0)
    assert w.results.sizes()[0] < 400


def test_the_status_bar_shows_whole_texts_when_there_is_room(qtbot, window):
    w = window
    for width in (1366, 1920):
        w.resize(QSize(width, 768))
        qtbot.waitUntil(lambda: w.width() == width, timeout=3000)
        w.audit.progress_label.setText("Run 20261126-af21d7 completed.")
        w.show_status(REVIEW_MODE_HELP)
        qtbot.wait(50)
        assert not w.audit.progress_label.is_elided(), w.audit.progress_label.shown_lines()
        assert not w.message_label.is_elided()
    # a progress line longer than any fixed cap is whole on a wide window, cut (with its tooltip) on a small one
    line = ("Responses 3/150 · sources fetched 40/120 · pairs judged 300/900 · verdicts 300/900 · unreadable "
            "sources 2 · judge errors 0 · 28 s · about 57 s left")
    w.audit.progress_label.setText(line)
    w.show_status("")
    qtbot.wait(50)
    assert not w.audit.progress_label.is_elided()
    w.resize(QSize(1024, 640))
    qtbot.waitUntil(lambda: w.width() == 1024, timeout=3000)
    w.audit.progress_label.setText(line + " · " + line)
    qtbot.wait(50)
    assert w.audit.progress_label.is_elided() and line in w.audit.progress_label.toolTip()


def test_counts_agree_with_their_nouns(qtbot, window, site):
    w = window
    w.results.input.paste_edit.setPlainText(
        f"Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher [1] [2] [3].\n\n"
        f"[1]: {site}/article/hypertension\n[2]: {site}/status/404\n[3]: {site}/status/410\n")
    audit_and_wait(qtbot, w)
    counts = w.results.metrics_bar.counts.text()
    assert "1 response ·" in counts and "1 responses" not in counts, counts
    assert "no reviewer overrides" in counts
    (summary,) = w.results.view.summaries
    assert "2 dead links" in summary.problems, summary.problems
    assert problem_kinds_of(summary.problems) == ["dead link"]
    assert problem_phrase(1, "dead link") == "1 dead link" and problem_kind("3 references not found") == \
        "reference not found"
    assert agreement_summary({"pairs_reviewed": 1, "reviewers": ["a"], "reviews": 1, "unsure": 0,
                              "pairs_with_majority": 1, "overturned": []}).startswith("1 pair reviewed by 1 reviewer (")


def test_open_report_says_when_no_viewer_opened_it_and_offers_the_path(qtbot, window, tmp_path, monkeypatch):
    w = window
    report = tmp_path / "sourcecheckup-run.html"
    report.write_text("<html></html>", encoding="utf-8")
    w.exporter.last_report = report
    opened: list[str] = []
    monkeypatch.setattr(QDesktopServices, "openUrl", lambda url: opened.append(url.toLocalFile()) or False)
    assert w.exporter.open_last_report() is False
    assert opened == [str(report)]
    box = w.exporter.not_opened_box
    assert box is not None and box.isVisible()
    assert str(report) in box.text() and "No program on this computer opened it" in box.text()
    assert box.textInteractionFlags() & Qt.TextInteractionFlag.TextSelectableByMouse
    copy = next(b for b in box.buttons() if b.text() == "Copy path")
    copy.click()
    assert QGuiApplication.clipboard().text() == str(report)
    QGuiApplication.clipboard().clear()
    # the file gone: said too
    report.unlink()
    assert w.exporter.open_last_report() is False
    assert "no longer there" in w.exporter.not_opened_box.text()
    w.exporter.not_opened_box.close()
