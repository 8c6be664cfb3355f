"""The desktop app, offscreen: paste and audit, batches, cancel/resume, matrix, review, inert text, closing."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import asyncio
import json
import re
import threading

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QLabel

from sourcecheckup import review
from sourcecheckup.judges.base import register
from sourcecheckup.models import Label
from sourcecheckup.store import Store
from tests.support.app import WAIT_MS, audit_and_wait, pasted_answer
from tests.support.fake_judge import KeywordJudge
from tests.support.synth_run import synthesize_run
from ui.app import parse_args
from ui.dialogs import CsvMappingDialog, about_text
from ui.main_window import MainWindow
from ui.results.suggestions_tab import NO_SUGGESTIONS


def metric_label(w: MainWindow, key: str = "statement_support") -> str:
    return w.results.metrics_bar.labels[key].text()


def click_cell(qtbot, w: MainWindow, row: int, col: int) -> None:
    w.results.detail_tabs.setCurrentIndex(2)
    idx = w.results.matrix_tab.matrix_model.index(row, col)
    rect = w.results.matrix_tab.matrix_table.visualRect(idx)
    qtbot.mouseClick(w.results.matrix_tab.matrix_table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def test_paste_and_audit_shows_statements_metrics_and_highlighted_quote(qtbot, window, site):
    w = window
    w.results.input.question_edit.setText("What counts as hypertension?")
    w.results.input.model_edit.setText("chatbot-1")
    w.results.input.paste_edit.setPlainText(pasted_answer(site))
    audit_and_wait(qtbot, w)

    assert w.results.responses_model.rowCount() == 1
    assert w.results.responses_model.rows[0].model == "chatbot-1"
    assert "50.0%" in metric_label(w) and "95% CI" in metric_label(w)
    shown = w.results.answer_tab.answer_view.toPlainText()
    assert "130/80 mm Hg or higher [1]. ✓" in shown      # status by a text mark, not colour alone
    assert "within one week [1]. ✗" in shown
    assert w.results.sources_tab.sources_model.rows[0].outcome == "full text"

    click_cell(qtbot, w, 0, 0)
    cell = w.results.current_cell()
    assert cell is not None and cell.label is Label.SUPPORTED
    assert w.results.matrix_tab.source_viewer.quote_span is not None
    highlighted = w.results.matrix_tab.source_viewer.highlighted_text()
    assert "130/80 mm Hg or higher" in highlighted
    # the viewer scrolled to the quote: the caret sits at its start
    viewer = w.results.matrix_tab.source_viewer
    assert viewer.textCursor().position() == viewer.quote_span[0]
    assert "found in the source" in w.results.matrix_tab.pair_quote.text()


def test_paste_and_audit_with_the_builtin_judge_end_to_end(qtbot, window, site, settings):
    w = window
    settings.judges = ["builtin"]
    w.results.input.paste_edit.setPlainText(pasted_answer(site))
    with qtbot.waitSignal(w.audit.audit_finished, timeout=WAIT_MS) as finished:
        assert w.audit.start_audit()
    assert finished.args[1] == "completed", w.audit.progress_label.text()
    qtbot.waitUntil(lambda: w.results.view is not None and w.results.view.data.run.id == finished.args[0]
                    and w.results.view.data.run.status == "completed", timeout=WAIT_MS)
    click_cell(qtbot, w, 0, 0)
    assert w.results.current_cell().primary.verdict.judge_id == "builtin"
    assert w.results.current_cell().label is Label.SUPPORTED
    assert "130/80" in w.results.matrix_tab.source_viewer.highlighted_text()


def test_batch_load_of_jsonl_and_csv_with_column_mapping(qtbot, window, site, tmp_path, monkeypatch):
    w = window
    url = f"{site}/article/hypertension"
    jsonl = tmp_path / "answers.jsonl"
    jsonl.write_text("\n".join(json.dumps({"id": f"j{i}", "model": "json-model", "response":
                                           "Hypertension is a blood pressure of 130/80 mm Hg or higher [1].",
                                           "citations": [url]}) for i in range(2)) + "\n", encoding="utf-8")
    table = tmp_path / "answers.csv"
    table.write_text("row,llm,answer_body,refs\n"
                     f"c1,csv-model,Home readings matter for diagnosis [1].,{url}\n"
                     f"c2,csv-model,Sodium should be under 1500 mg a day [1].,{url}\n", encoding="utf-8")

    def fill_mapping(dialog: CsvMappingDialog) -> int:
        dialog.combos["text_col"].setCurrentText("answer_body")
        dialog.combos["citations_col"].setCurrentText("refs")
        dialog.combos["model_col"].setCurrentText("llm")
        dialog.combos["id_col"].setCurrentText("row")
        return QDialog.DialogCode.Accepted

    monkeypatch.setattr(CsvMappingDialog, "exec", fill_mapping)
    w.results.input.load_files([jsonl, table])
    assert len(w.results.input.pending.responses) == 4
    assert "4 answers" in w.results.input.batch_label.text()
    audit_and_wait(qtbot, w)
    models = sorted(r.model for r in w.results.responses_model.rows)
    assert models == ["csv-model", "csv-model", "json-model", "json-model"]
    assert {r.rid for r in w.results.responses_model.rows} >= {"c1", "c2"}
    assert not w.results.input.pending.responses     # the batch is consumed by the audit
    w.results.search_edit.setText("csv-model")
    assert w.results.responses_proxy.rowCount() == 2


def slow_answers(site: str, n: int = 3) -> str:
    url = f"{site}/article/hypertension"
    objs = [{"id": f"slow{i}", "response": "Hypertension is a blood pressure of 130/80 mm Hg or higher [1]. "
             "Lifestyle measures include losing weight [1]. Home readings matter [1]. Doctors confirm "
             "a diagnosis with ambulatory monitoring [1].", "citations": [url]} for i in range(n)]
    return json.dumps(objs)


GATE = threading.Event()
OPEN_PAIRS = 3


class GatedJudge(KeywordJudge):
    """``gated``: judges its first OPEN_PAIRS pairs at once, the rest once GATE is set, so a test stops a
    run part way whatever the machine's load (a cancel ends the wait at once: it is an asyncio sleep)."""

    def __init__(self) -> None:
        super().__init__(0.0)
        self.id = "gated"
        self.seen = 0

    async def verify(self, statement, source):
        self.seen += 1
        while self.seen > OPEN_PAIRS and not GATE.is_set():
            await asyncio.sleep(0.02)
        return await super().verify(statement, source)


register("gated", lambda arg, **options: GatedJudge())
JUDGED_SOME = re.compile(r"pairs judged [1-9]\d*/")


def test_cancel_mid_run_then_resume_judges_only_the_missing_pairs(qtbot, window, site, settings):
    w = window
    GATE.clear()
    settings.judges = ["gated"]
    settings.concurrency = 1
    w.results.input.paste_edit.setPlainText(slow_answers(site))
    with qtbot.waitSignal(w.audit.audit_finished, timeout=WAIT_MS) as finished:
        assert w.audit.start_audit()
        qtbot.waitUntil(lambda: JUDGED_SOME.search(w.audit.progress_label.text()) is not None, timeout=WAIT_MS)
        w.audit.cancel_audit()
    run_id, status = finished.args
    assert status == "cancelled"
    with Store(w.db_path) as st:
        judged = len(st.judged_keys(run_id))
        assert st.get_run(run_id).status == "cancelled"
    assert 0 < judged < 12
    GATE.set()
    w.results.runs.runs_table.clearSelection()
    with qtbot.waitSignal(w.audit.audit_finished, timeout=WAIT_MS) as finished:
        assert w.audit.resume_run(run_id)
    assert finished.args == [run_id, "completed"]
    with Store(w.db_path) as st:
        rows = list(st.db.query("SELECT statement_pk, url, judge_id FROM verdicts WHERE run_id = ?", [run_id]))
    assert len(rows) == 12 and len({tuple(r.values()) for r in rows}) == 12


def test_review_override_changes_the_metric_and_is_persisted(qtbot, window, site):
    w = window
    w.results.input.paste_edit.setPlainText(pasted_answer(site))
    run_id = audit_and_wait(qtbot, w)
    assert "50.0%" in metric_label(w)

    click_cell(qtbot, w, 1, 0)                       # the unsupported statement
    assert w.results.current_cell().label is Label.NOT_SUPPORTED
    w.results.matrix_tab.reason_edit.setText("the page says lifestyle changes, not a cure")
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        assert w.review_current("supported")
    # judges only by default (as the CLI's figures), the override counted but named as not applied
    assert "50.0%" in metric_label(w) and "· judges only" in metric_label(w)
    assert "1 override (not applied)" in w.results.metrics_bar.counts.text()
    with qtbot.waitSignal(w.results.run_shown, timeout=120_000):
        w.results.metrics_bar.with_overrides.setChecked(True)
    assert "100.0%" in metric_label(w) and "· with reviews" in metric_label(w)
    assert "1 override applied" in w.results.metrics_bar.counts.text()
    cell_text = w.results.matrix_tab.matrix_model.data(w.results.matrix_tab.matrix_model.index(1, 0))
    assert "reviewed" in cell_text and "✎" in cell_text

    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        w.results.metrics_bar.with_overrides.setChecked(False)
    assert "50.0%" in metric_label(w)

    with Store(w.db_path) as st:
        stored = review.reviews(st, run_id)
    assert [(r.reviewer, r.label.value) for r in stored] == [("Dr Tester", "supported")]
    assert stored[0].reason.startswith("the page says")


def test_keyboard_review_mode_labels_pairs_with_s_n_u(qtbot, window, site):
    w = window
    w.results.input.paste_edit.setPlainText(pasted_answer(site))
    run_id = audit_and_wait(qtbot, w)
    w.activateWindow()
    w.review_mode_action.trigger()
    assert w.results.current_cell() is not None
    first = w.results.current_cell()
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        qtbot.keyClick(w.results.matrix_tab.matrix_table, Qt.Key.Key_N)
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        qtbot.keyClick(w.results.matrix_tab.matrix_table, Qt.Key.Key_U)
    with Store(w.db_path) as st:
        labels = [(r.statement_pk, r.label.value) for r in review.reviews(st, run_id)]
    assert labels[0] == (first.statement_pk, "not_supported")
    assert labels[1][1] == "unsure" and labels[1][0] != first.statement_pk


HOSTILE_ANSWER = ('<script>alert("answer")</script> <img src=x onerror=alert(1)> '
                  'Hypertension is defined as a blood pressure of 130/80 mm Hg or higher. '
                  '\u202eThe DASH diet can lower systolic blood pressure by about 11 mm Hg.\u202c '
                  '<a href="javascript:alert(2)">click</a> <b>bold</b>')


def hostile_page(k: int) -> str:
    return ('<html><script>document.write("pwned")</script><iframe src="http://evil.invalid"></iframe>'
            + "مرحبا بالعالم " * 50 + " <b>Hypertension is defined as a blood pressure of 130/80 mm Hg or higher.</b> "
            + "filler text " * 40_000 + " The DASH diet can lower systolic blood pressure by about 11 mm Hg.")


def test_hostile_answer_and_page_render_as_inert_plain_text(qtbot, window):
    w = window
    with Store(w.db_path) as st:
        run_id = synthesize_run(st, responses=1, statements=2, sources=1,
                                answer_text=lambda i, sents: HOSTILE_ANSWER, source_text=hostile_page)
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        w.results.open_run(run_id)
    shown = w.results.answer_tab.answer_view.toPlainText()
    assert '<script>alert("answer")</script>' in shown and "<b>bold</b>" in shown and "\u202e" in shown
    click_cell(qtbot, w, 1, 0)
    src = w.results.matrix_tab.source_viewer.toPlainText()
    assert "<script>document.write" in src and len(src) > 400_000
    assert "DASH diet" in w.results.matrix_tab.source_viewer.highlighted_text()
    assert w.results.matrix_tab.source_viewer.verticalScrollBar().value() > 0        # scrolled deep into the huge page
    for label in w.findChildren(QLabel):
        if "<" in label.text() or "\u202e" in label.text():
            assert label.textFormat() == Qt.TextFormat.PlainText, label.text()[:80]
    tip = w.results.matrix_tab.matrix_model.headerData(0, Qt.Orientation.Vertical, Qt.ItemDataRole.ToolTipRole)
    assert "<script>" not in tip
    w.results.detail_tabs.setCurrentIndex(0)
    w.grab()   # painting the hostile text must not raise


def test_window_closes_during_a_run_without_hanging_and_the_run_is_resumable(qtbot, window, site, settings):
    w = window
    GATE.clear()
    settings.judges = ["gated"]
    settings.concurrency = 1
    w.results.input.paste_edit.setPlainText(slow_answers(site, 2))
    assert w.audit.start_audit()
    # progress counts committed verdicts, a commit window at a time: some judged, the run still going
    qtbot.waitUntil(lambda: bool(w.results.run_id) and JUDGED_SOME.search(w.audit.progress_label.text()) is not None,
                    timeout=WAIT_MS)
    run_id = w.results.run_id
    w.confirm = lambda title, text: True
    w.close()
    qtbot.waitUntil(lambda: not w.isVisible(), timeout=WAIT_MS)
    assert w.audit.worker is None
    with Store(w.db_path) as st:
        assert st.get_run(run_id).status == "cancelled"


def test_suggestions_pane_accept_applies_rewrite_and_delete_to_revised_answer(qtbot, window):
    w = window
    tab = w.results.suggestions_tab
    with Store(w.db_path) as st:
        run_id = synthesize_run(st, responses=1, statements=3, sources=1)
        stmts = list(st.db.query("SELECT pk, text FROM statements WHERE run_id = ? ORDER BY ord", [run_id]))
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        w.results.open_run(run_id)
    assert tab.sugg_stack.currentIndex() == 0 and tab.sugg_empty.text() == NO_SUGGESTIONS
    with Store(w.db_path) as st, st.db.conn:
        st.db["suggestions"].insert_all([
            {"run_id": run_id, "statement_pk": stmts[1]["pk"], "url": "https://example.org/page/0", "kind": "rewrite",
             "original": stmts[1]["text"], "suggested": "The DASH diet can lower blood pressure.",
             "quote": "DASH", "status": "verified", "created_at": "2026-01-01T00:00:00+00:00"},
            {"run_id": run_id, "statement_pk": stmts[2]["pk"], "url": "https://example.org/page/0", "kind": "delete",
             "original": stmts[2]["text"], "suggested": "", "quote": "", "status": "delete",
             "created_at": "2026-01-01T00:00:00+00:00"}])
    w.results.show_response(w.results.response_pk)
    assert tab.sugg_stack.currentIndex() == 1 and tab.sugg_model.rowCount() == 2
    w.results.detail_tabs.setCurrentIndex(3)
    for row in (0, 1):
        tab.sugg_table.setCurrentIndex(tab.sugg_model.index(row, 0))
        if row == 0:
            assert "{+" in tab.sugg_diff.toPlainText()
        with qtbot.waitSignal(tab.revised_shown, timeout=WAIT_MS):   # built off the GUI thread
            tab.decide_current_suggestion("accepted")
    revised = tab.revised_edit.toPlainText()
    assert "The DASH diet can lower blood pressure." in revised
    assert stmts[2]["text"] not in revised and stmts[0]["text"] in revised
    with Store(w.db_path) as st:
        decided = list(st.db.query("SELECT decision, decided_by FROM suggestions WHERE run_id = ?", [run_id]))
    assert decided == [{"decision": "accepted", "decided_by": "Dr Tester"}] * 2



def test_moving_between_responses_reads_no_whole_run_on_the_gui_thread(qtbot, window, monkeypatch):
    """A run's responses (and the whole run) are read only in pool threads, the revised answer
    included, so moving through a run of thousands of answers never stalls the window."""
    w = window
    with Store(w.db_path) as st:
        run_id = synthesize_run(st, responses=3, statements=2, sources=1)
    on_gui: list[str] = []
    for name in ("load_run", "responses"):
        real = getattr(Store, name)

        def spy(self, *args, _real=real, _name=name, **kwargs):
            if threading.current_thread() is threading.main_thread():
                on_gui.append(_name)
            return _real(self, *args, **kwargs)

        monkeypatch.setattr(Store, name, spy)
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        w.results.open_run(run_id)
    tab = w.results.suggestions_tab
    for summary in reversed(w.results.view.summaries):
        with qtbot.waitSignal(tab.revised_shown, timeout=WAIT_MS):
            w.results.select_response(summary.response_pk)
        assert w.results.current_response().text in tab.revised_edit.toPlainText()
    assert on_gui == []

def test_export_writes_the_engine_report_and_about_names_the_screening_judge(qtbot, window, tmp_path):
    w = window
    with Store(w.db_path) as st:
        run_id = synthesize_run(st, responses=3)
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        w.results.open_run(run_id)
    out = w.exporter.export_run(tmp_path / "r.json")
    assert json.loads(out.read_text())["run"]["id"] == run_id
    assert "<html" in w.exporter.export_run(tmp_path / "r.html").read_text().lower()
    assert "screening judge" in about_text()
    w.refresh_runs()
    qtbot.waitUntil(lambda: w.results.runs.runs_model.rowCount() == 1, timeout=WAIT_MS)
    assert w.results.runs.runs_model.rows[0].statement_support is not None


def test_settings_become_the_run_config_and_args_parse(settings):
    settings.browser = "auto"
    cfg = settings.run_config()
    assert cfg.judges == ["keyword:0"] and cfg.fetch.allow_hosts == ("127.0.0.1",) and cfg.fetch.browser == "auto"
    args = parse_args(["--db", "x.db", "--run", "abc"])
    assert (args.db, args.run) == ("x.db", "abc")


def test_a_large_run_opens_with_every_response_listed(qtbot, window):
    w = window
    with Store(w.db_path) as st:
        run_id = synthesize_run(st, responses=1000, statements=4, sources=3)
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        w.results.open_run(run_id)
    assert w.results.responses_model.rowCount() == 1000   # how soon: bench/ui_responsiveness.py (1 s target)


def test_dropping_answer_files_loads_them_as_a_batch(qtbot, window, tmp_path):
    from PySide6.QtCore import QMimeData, QPointF, QUrl
    from PySide6.QtGui import QDropEvent

    w = window
    folder = tmp_path / "answers"
    folder.mkdir()
    (folder / "a.md").write_text("Metformin is first-line [1].\n\n[1]: https://example.org/metformin\n")
    (folder / "b.json").write_text(json.dumps({"response": "Statins cause myalgia [1].",
                                                "citations": ["https://example.org/statins"]}))
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(folder))])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    w.dropEvent(event)
    assert len(w.results.input.pending.responses) == 2 and "answers" in w.results.input.batch_label.text()


def test_hovering_a_statement_lists_the_sources_that_support_it(qtbot, window):
    w = window
    with Store(w.db_path) as st:
        run_id = synthesize_run(st, responses=1, statements=2, sources=2)
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        w.results.open_run(run_id)
    start, _, first = w.results.answer_tab.answer_view.ranges[0]
    assert w.results.answer_tab.answer_view.statement_at(start + 1) is first
    text = w.results.answer_tab.answer_view.hover_text(first)
    assert "Supported by:" in text and "https://example.org/page/0" in text


def test_storing_an_api_key_without_a_keyring_says_to_use_the_environment_variable(qtbot, settings, monkeypatch):
    from PySide6.QtWidgets import QMessageBox

    from ui.dialogs import SettingsDialog

    shown: list[str] = []
    monkeypatch.setattr(QMessageBox, "warning", lambda parent, title, text, *a: shown.append(text))
    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    dialog.key_edits["openai"].setText("sk-test-not-a-real-key")
    dialog.concurrency.setValue(3)
    dialog.save()
    assert settings.concurrency == 3
    assert shown and "OPENAI_API_KEY" in shown[0]
    assert "sk-test" not in shown[0]


def test_a_batch_respects_robots_txt_as_the_cli_does_and_a_single_answer_does_not(qtbot, window, site):
    """More than one answer is a batch (crawling on the user's behalf): the site's robots.txt is read and
    a disallowed page is recorded as blocked, with the reason; one pasted answer reads it, as a person would."""
    w = window
    url = f"{site}/private-area/report"
    claim = "Hypertension is a blood pressure of 130/80 mm Hg or higher [1]."
    w.results.input.paste_edit.setPlainText(json.dumps([{"id": f"b{i}", "response": claim, "citations": [url]}
                                                        for i in range(2)]))
    audit_and_wait(qtbot, w)
    batch = w.results.view.data.sources[url].source
    assert batch.status.value == "blocked"
    assert batch.reason == "the site's robots.txt disallows /private-area/report for crawlers"
    w.results.input.paste_edit.setPlainText(f"{claim}\n\n[1]: {url}\n")
    audit_and_wait(qtbot, w)
    single = w.results.view.data.sources[url].source
    assert single.status.value == "ok" and "130/80" in single.text
