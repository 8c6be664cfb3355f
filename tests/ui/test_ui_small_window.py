"""The window as a new user meets it on a small laptop (1024x640): layout, cut-off text, export,
opening a database, naming runs and pasted answers, and facets over the responses."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

pytest.importorskip("pytestqt")

from PySide6.QtCore import QSize, Qt  # noqa: E402
from PySide6.QtWidgets import QFileDialog  # noqa: E402

from sourcecheckup import review  # noqa: E402
from sourcecheckup.ingest import load_text, name_from_first_words  # noqa: E402
from sourcecheckup.report import write_report  # noqa: E402
from sourcecheckup.store import MIGRATIONS, Store  # noqa: E402
from tests.support.app import WAIT_MS, audit_and_wait, pasted_answer, settings, window  # noqa: E402,F401
from tests.support.synth_run import synthesize_run  # noqa: E402
from ui import exporter as exporter_module  # noqa: E402
from ui.elide import ElidedLabel  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402
from ui.results import page as results_page  # noqa: E402

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
