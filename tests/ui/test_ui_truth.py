"""What the app shows must be true (issue 12, app side; issue 11 items 5 and 8): a clean detail panel
per run, visible status messages, "contradicted" and "review first" readings, the screening judge's
limits, judge settings checked before a run, batches that keep their own fields, Suggest fixes,
the Answer view's statement card, refused sources that name the Settings field, and a headline that
names its basis (the judges alone, as `show` gives it)."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import json

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt

from sourcecheckup import review
from sourcecheckup.cli import main
from sourcecheckup.store import Store
from tests.support.app import WAIT_MS, open_and_wait
from tests.support.synth_run import synthesize_run
from ui.main_window import MainWindow
from ui.results.matrix_tab import PAIR_HINT


def click_cell(qtbot, w: MainWindow, row: int, col: int) -> None:
    w.results.detail_tabs.setCurrentIndex(2)
    idx = w.results.matrix_tab.matrix_model.index(row, col)
    rect = w.results.matrix_tab.matrix_table.visualRect(idx)
    qtbot.mouseClick(w.results.matrix_tab.matrix_table.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def set_flags(db, run_id: str, statement_pk: int, url: str, flags: list[str], rationale: str | None = None) -> None:
    with Store(db) as st:
        with st.db.conn:
            st.db.conn.execute("UPDATE verdicts SET flags = ? WHERE run_id = ? AND statement_pk = ? AND url = ?",
                               (json.dumps(flags), run_id, statement_pk, url))
            if rationale is not None:
                st.db.conn.execute("UPDATE verdicts SET rationale = ? WHERE run_id = ? AND statement_pk = ? AND url = ?",
                                   (rationale, run_id, statement_pk, url))


def first_response_statements(db, run_id: str) -> list[int]:
    with Store(db) as st:
        data = st.load_run(run_id)
        pk = data.responses[0].pk
        return [s.pk for s in data.statements[pk]]


# ----------------------------------------------------------------------------- item 8


def test_detail_panel_is_cleared_and_review_buttons_disabled_when_another_run_opens(qtbot, window, tmp_path):
    w = window
    with Store(w.db_path) as st:
        run_a = synthesize_run(st, responses=2, statements=2, sources=2)
        run_b = synthesize_run(st, responses=2, statements=2, sources=2)
    open_and_wait(qtbot, w, run_a)
    click_cell(qtbot, w, 0, 0)
    assert w.results.current_cell() is not None
    assert w.results.matrix_tab.review_buttons["supported"].isEnabled()
    assert w.results.matrix_tab.pair_statement.text().startswith("Statement")
    open_and_wait(qtbot, w, run_b)
    assert w.results.matrix_tab.pair_statement.text() == PAIR_HINT
    assert w.results.matrix_tab.pair_verdicts.text() == "" and w.results.matrix_tab.pair_quote.text() == ""
    assert not any(b.isEnabled() for b in w.results.matrix_tab.review_buttons.values())
    assert w.results.matrix_tab.source_viewer.toPlainText() == ""
    assert w.review_current("supported") is False or w.results.current_cell() is not None


# ----------------------------------------------------------------------------- item 11


def test_status_messages_are_visible_beside_a_long_progress_line(qtbot, window):
    w = window
    w.resize(1280, 800)
    w.audit.progress_label.setText("Responses 3/10 · sources fetched 12/40 · pairs judged 20/400 · unreadable sources 0 · "
                             "judge errors 0 · 12 s · about 230 s left · est. cost $0.12")
    w.audit.progress_bar.setVisible(True)
    w.show_status("Report written to /tmp/some/where/report.html")
    qtbot.wait(50)
    label = w.message_label
    assert label.isVisible() and label.text() == "Report written to /tmp/some/where/report.html"
    # it is laid out wide enough to read, and does not sit under the progress line
    assert label.width() >= label.sizeHint().width()
    assert not label.geometry().intersects(w.audit.progress_label.geometry())
    assert w.audit.progress_label.isVisible()


# ----------------------------------------------------------------------------- item 16 and issue 11 items 5, 8


def test_contradicted_and_review_first_readings_and_the_screening_judge_note(qtbot, window):
    w = window
    with Store(w.db_path) as st:
        run = synthesize_run(st, responses=1, statements=2, sources=2, judges=("builtin",))
    s0, s1 = first_response_statements(w.db_path, run)
    # statement 0 is supported by page/0, not by page/1; statement 1 the other way round
    set_flags(w.db_path, run, s0, "https://example.org/page/1", ["contradicted"],
              "contradicted: source says 140/90 mm Hg")
    set_flags(w.db_path, run, s1, "https://example.org/page/1", ["review_first"])
    open_and_wait(qtbot, w, run)

    m = w.results.matrix_tab.matrix_model
    contradicted = m.data(m.index(0, 1))
    assert "contradicted" in contradicted and "⊗" in contradicted
    plain_no = m.data(m.index(1, 0))
    assert "not supported" in plain_no and "contradicted" not in plain_no
    assert m.data(m.index(0, 1), Qt.ItemDataRole.BackgroundRole) != m.data(m.index(1, 0), Qt.ItemDataRole.BackgroundRole)
    assert m.data(m.index(1, 1)).startswith("⚑")

    click_cell(qtbot, w, 0, 1)
    assert "contradicted (score" in w.results.matrix_tab.pair_verdicts.text()
    assert "source says 140/90" in w.results.matrix_tab.pair_verdicts.text()
    verdicts = w.results.matrix_tab.pair_verdicts.text()
    assert "screening judge" in verdicts and "Settings → Judges" in verdicts
    click_cell(qtbot, w, 1, 1)
    assert "Review first" in w.results.matrix_tab.pair_verdicts.text()

    # the review queue (keyboard review mode) starts with the pair the judge is unsure of
    assert (w.results.pairs[0].statement_pk, w.results.pairs[0].url) == (s1, "https://example.org/page/1")

    note = w.results.metrics_bar.judge_note
    assert note.isVisible()
    assert "screening judge" in note.text().lower() and "Settings → Judges" in note.text()
    assert "does not understand" in note.text()


def test_a_run_judged_by_the_learned_reader_is_not_called_a_screen(qtbot, window):
    """``builtin:reader`` shares the judge id "builtin"; its procedure version says it read the sources."""
    from sourcecheckup.judges.builtin.judge import READER_VERSION

    w = window
    with Store(w.db_path) as st:
        run = synthesize_run(st, responses=1, statements=1, sources=1, judges=("builtin",))
        with st.db.conn:
            st.db.conn.execute("UPDATE verdicts SET prompt_version = ?, model_version = ?, flags = ? WHERE run_id = ?",
                               (READER_VERSION, f"{READER_VERSION}/sourcecheckup-reader-minilm-l6-v2@4aca40177d53",
                                json.dumps(["review_first", "decided_by:reader_page"]), run))
    open_and_wait(qtbot, w, run)
    note = w.results.metrics_bar.judge_note
    assert note.isVisible() and "Learned reader" in note.text() and "does not understand" not in note.text()
    click_cell(qtbot, w, 0, 0)
    verdicts = w.results.matrix_tab.pair_verdicts.text()
    assert "(learned reader)" in verdicts and "screening judge" not in verdicts
    assert "the learned reader with the page's completeness gate" in verdicts
    assert "Review first: the learned reader is unsure" in verdicts


def test_no_screening_note_for_a_run_judged_by_another_judge(qtbot, window):
    w = window
    with Store(w.db_path) as st:
        run = synthesize_run(st, responses=1, statements=1, sources=1, judges=("openai:gpt-4o",))
    open_and_wait(qtbot, w, run)
    assert not w.results.metrics_bar.judge_note.isVisible()


# ----------------------------------------------------------------------------- item 10


def open_message_boxes() -> list[str]:
    from PySide6.QtWidgets import QApplication, QMessageBox

    return [w.text() for w in QApplication.topLevelWidgets() if isinstance(w, QMessageBox) and w.isVisible()]


def test_settings_refuse_a_bad_judge_spec_and_say_where_to_fix_it(qtbot, window, settings, no_keyring):
    from PySide6.QtWidgets import QDialog

    from ui.dialogs import SettingsDialog

    dialog = SettingsDialog(settings, window)
    qtbot.addWidget(dialog)
    dialog.judges.setText("gpt4")
    dialog.save()
    assert dialog.result() != QDialog.DialogCode.Accepted
    assert dialog.judge_problem.isVisibleTo(dialog)
    assert "unknown judge 'gpt4'" in dialog.judge_problem.text() and "Settings → Judges" in dialog.judge_problem.text()
    assert settings.judges == ["keyword:0"]            # nothing saved
    dialog.judges.setText("openai:gpt-4o")              # no key anywhere
    dialog.save()
    assert "no API key for openai" in dialog.judge_problem.text()
    dialog.judges.setText("builtin")
    dialog.save()
    assert dialog.result() == QDialog.DialogCode.Accepted and settings.judges == ["builtin"]


def test_audit_does_not_start_with_a_judge_that_cannot_run(qtbot, window, settings, site, no_keyring):
    w = window
    settings.judges = ["openai:gpt-4o"]
    w.results.input.paste_edit.setPlainText(f"Hypertension is 130/80 mm Hg or higher [1].\n\n[1]: {site}/article/hypertension\n")
    assert w.audit.start_audit() is False
    assert w.audit.worker is None
    assert any("no API key for openai" in t and "Settings → Judges" in t for t in open_message_boxes())
    assert w.store.list_runs() == []


def test_resume_of_a_run_with_bad_judge_settings_uses_the_corrected_settings(qtbot, window, settings, site):
    from sourcecheckup.fetching import FetchOptions
    from sourcecheckup.models import Response
    from sourcecheckup.pipeline import Audit, RunConfig

    w = window
    url = f"{site}/article/hypertension"
    with Store(w.db_path) as st:
        audit = Audit(st, RunConfig(judges=["gpt4"], fetch=FetchOptions(allow_hosts=("127.0.0.1",))))
        run_id = audit.create([Response(id="r1", text="Hypertension is 130/80 mm Hg or higher [1].",
                                        citations=(url,))])
        st.set_run_status(run_id, "failed", "JudgeSpecError: unknown judge 'gpt4'")
    settings.judges = ["keyword:0"]
    with qtbot.waitSignal(w.audit.audit_finished, timeout=WAIT_MS) as finished:
        assert w.audit.resume_run(run_id)
    assert finished.args == [run_id, "completed"]
    run = w.store.get_run(run_id)
    assert run.judges == ["keyword:0"] and run.config["judges"] == ["keyword:0"]


# ----------------------------------------------------------------------------- item 7


def test_pasted_answer_fields_do_not_carry_over_to_a_batch_and_notes_are_skipped(qtbot, window, tmp_path, site):
    w = window
    w.results.input.question_edit.setText("A question typed for the pasted answer?")
    w.results.input.model_edit.setText("pasted-model")
    folder = tmp_path / "answers"
    folder.mkdir()
    (folder / "a.md").write_text(f"Hypertension is 130/80 mm Hg or higher [1].\n\n[1]: {site}/article/hypertension\n",
                                 encoding="utf-8")
    (folder / "b.json").write_text(json.dumps({"question": "Its own question?", "model": "json-model",
                                               "response": "Salt raises blood pressure [1].",
                                               "citations": [f"{site}/article/hypertension"]}), encoding="utf-8")
    (folder / "notes.txt").write_text("Call the lab on Tuesday.\nAsk Sam about the slides.\n", encoding="utf-8")
    w.results.input.load_files([folder])
    by_origin = {r.origin: r for r in w.results.input.pending.responses}
    assert set(by_origin) == {"a.md", "b.json"}
    assert by_origin["a.md"].question is None and by_origin["a.md"].model is None
    assert by_origin["b.json"].question == "Its own question?" and by_origin["b.json"].model == "json-model"
    assert "notes.txt: not read as an answer" in w.results.input.batch_label.text()
    assert "apply to a pasted answer only" in w.results.input.batch_label.text()
    # the pasted answer still gets them
    w.results.input.clear_batch()
    w.results.input.paste_edit.setPlainText(f"Hypertension is 130/80 mm Hg or higher [1].\n\n[1]: {site}/article/hypertension\n")
    got, _ = w.results.input.collect_inputs()
    assert got.responses[0].question == "A question typed for the pasted answer?"
    assert got.responses[0].model == "pasted-model"


# ----------------------------------------------------------------------------- item 14


def test_a_refused_source_names_the_settings_field_not_the_cli_flag(qtbot, window, settings, site):
    w = window
    settings.allow_hosts = []
    w.results.input.paste_edit.setPlainText(f"Hypertension is 130/80 mm Hg or higher [1].\n\n[1]: {site}/article/hypertension\n")
    with qtbot.waitSignal(w.audit.audit_finished, timeout=WAIT_MS):
        assert w.audit.start_audit()
    m = w.results.sources_tab.sources_model
    qtbot.waitUntil(lambda: m.rowCount() == 1 and m.rows[0].status is not None, timeout=WAIT_MS)
    tip = m.data(m.index(0, 4), Qt.ItemDataRole.ToolTipRole)
    reason = m.data(m.index(0, 8))
    for text in (tip, reason):
        assert "Settings → Allowed private hosts" in text and "--allow-host" not in text
    click_cell(qtbot, w, 0, 0)
    assert "Settings → Allowed private hosts" in w.results.matrix_tab.pair_source.text()


# ----------------------------------------------------------------------------- item 13


def test_first_audit_says_the_builtin_model_is_loading(qtbot, window, settings, site, monkeypatch):
    import threading

    from sourcecheckup import embeddings

    w = window
    settings.judges = ["builtin"]
    real_preload = embeddings.preload
    release = threading.Event()

    def slow_preload() -> None:    # hold the load until the window has been looked at
        release.wait(10)
        real_preload()

    monkeypatch.setattr(embeddings, "is_loaded", lambda: False)
    monkeypatch.setattr(embeddings, "available", lambda: True)
    monkeypatch.setattr(embeddings, "preload", slow_preload)
    w.results.input.paste_edit.setPlainText(f"Hypertension is 130/80 mm Hg or higher [1].\n\n[1]: {site}/article/hypertension\n")
    with qtbot.waitSignal(w.audit.audit_finished, timeout=WAIT_MS) as finished:
        assert w.audit.start_audit()
        qtbot.waitUntil(lambda: w.audit.progress_label.text() == "Loading the built-in judge's model…", timeout=WAIT_MS)
        assert w.audit.progress_bar.isVisible()
        release.set()
    assert finished.args[1] == "completed"


# ----------------------------------------------------------------------------- item 12


def test_suggest_fixes_runs_from_the_app_after_showing_writer_and_cost(qtbot, window, monkeypatch):
    from tests.support.fake_llm import FakeLLMServer, Scripted, verdict
    from tests.support.synth_run import SENTENCES

    def responder(request):
        if "Rewrite the statement minimally" in request.user_text:
            return Scripted(json.dumps({"action": "rewrite", "statement": SENTENCES[2], "quote": SENTENCES[2]}))
        return verdict("supported", SENTENCES[2])

    w = window
    with FakeLLMServer("openai", responder=responder) as srv:
        judge = f"openai-compatible:{srv.base_url}#gpt-4o"
        with Store(w.db_path) as st:
            run = synthesize_run(st, responses=1, statements=2, sources=2, judges=(judge,))
        s0, s1 = first_response_statements(w.db_path, run)
        with Store(w.db_path) as st:   # statement 2 supported by no source
            with st.db.conn:
                st.db.conn.execute("UPDATE verdicts SET label = 'not_supported', quote = '' WHERE statement_pk = ?",
                                   (s1,))
        open_and_wait(qtbot, w, run)
        w.results.detail_tabs.setCurrentIndex(3)
        assert w.results.suggestions_tab.suggest_btn.isVisible() and w.results.suggestions_tab.suggest_btn.isEnabled()
        asked: list[str] = []
        monkeypatch.setattr(w, "confirm", lambda title, text: asked.append(text) or True)
        with qtbot.waitSignal(w.results.suggestions_tab.cleanup_finished, timeout=WAIT_MS) as finished:
            assert w.results.suggestions_tab.suggest_fixes()
            assert not w.results.suggestions_tab.suggest_btn.isEnabled()       # off the GUI thread: the window goes on
        assert finished.args == [run, "completed"]
        (text,) = asked
        assert "2 unsupported statement × source pairs" in text
        assert f"Writer: {judge}" in text and f"Verified by: {judge}" in text
        assert "Estimated cost: about $" in text
        # 2 writing calls and 2 verifying calls were made, then the suggestions are on screen
        assert len(srv.requests) == 4
    qtbot.waitUntil(lambda: w.results.suggestions_tab.sugg_model.rowCount() == 2, timeout=WAIT_MS)
    assert w.results.suggestions_tab.sugg_stack.currentIndex() == 1
    assert {r.suggested for r in w.results.suggestions_tab.sugg_model.rows} == {SENTENCES[2]}
    assert "completed" in w.results.suggestions_tab.cleanup_label.text()


def test_suggest_fixes_without_an_llm_says_where_to_add_one(qtbot, window, settings):
    w = window
    settings.judges = ["builtin"]
    with Store(w.db_path) as st:
        run = synthesize_run(st, responses=1, statements=2, sources=2)
    open_and_wait(qtbot, w, run)
    assert w.results.suggestions_tab.suggest_fixes() is False
    assert any("Settings → Judges" in t for t in open_message_boxes())


# ----------------------------------------------------------------------------- item 15


def click_answer_text(qtbot, w: MainWindow, needle: str, offset: int = 1) -> None:
    from PySide6.QtGui import QTextCursor

    view = w.results.answer_tab.answer_view
    pos = view.toPlainText().index(needle) + offset
    cursor = QTextCursor(view.document())
    cursor.setPosition(pos)
    rect = view.cursorRect(cursor)
    qtbot.mouseClick(view.viewport(), Qt.MouseButton.LeftButton, pos=rect.center())


def test_clicking_a_statement_opens_its_verdicts_and_a_marker_its_source(qtbot, window, site):
    w = window
    url = f"{site}/article/hypertension"
    w.results.input.paste_edit.setPlainText("Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher [1]. "
                              f"The DASH diet cures hypertension within one week [1].\n\n[1]: {url}\n")
    with qtbot.waitSignal(w.audit.audit_finished, timeout=WAIT_MS):
        assert w.audit.start_audit()
    qtbot.waitUntil(lambda: w.results.view is not None and w.results.view.data.run.status == "completed"
                    and w.results.matrix_tab.matrix_model.rowCount() == 2, timeout=WAIT_MS)
    w.results.detail_tabs.setCurrentIndex(0)
    assert w.results.answer_tab.statement_card.isVisible()

    click_answer_text(qtbot, w, "The DASH diet")
    card = w.results.answer_tab.statement_card.toPlainText()
    assert card.startswith("✗ not supported: The DASH diet cures hypertension within one week")
    assert f"[1] {url}" in card and "✗ not supported (keyword:0)" in card

    click_answer_text(qtbot, w, "Hypertension is now")
    card = w.results.answer_tab.statement_card.toPlainText()
    assert card.startswith("✓ supported: Hypertension is now defined")
    assert "quote: “" in card and "130/80" in card.split("quote: “", 1)[1]

    w.results.sources_tab.sources_table.clearSelection()
    click_answer_text(qtbot, w, "[1]")
    card = w.results.answer_tab.statement_card.toPlainText()
    assert card.startswith(f"[1] {url}")
    assert "The DASH diet cures hypertension" in card and "Hypertension is now defined" in card
    assert w.results.sources_tab.sources_table.currentIndex().row() == 0
    # the markers are drawn as links
    assert len(w.results.answer_tab.answer_view.markers) == 2 and len(w.results.answer_tab.answer_view.extraSelections()) == 2


# ----------------------------------------------------------------------------- item 1 (app side)


def test_fetch_sources_again_reads_a_source_refused_before_once_the_host_is_allowed(qtbot, window, settings, site):
    w = window
    settings.allow_hosts = []
    w.results.input.question_edit.setText("What counts as hypertension?")
    w.results.input.paste_edit.setPlainText("Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher [1].\n\n"
                              f"[1]: {site}/article/hypertension\n")
    with qtbot.waitSignal(w.audit.audit_finished, timeout=WAIT_MS) as first:
        assert w.audit.start_audit()
    first_run = first.args[0]
    with Store(w.db_path) as st:
        data = st.load_run(first_run)
        assert [s.source.status.value for s in data.sources.values()] == ["unsafe_url"]

    settings.allow_hosts = ["127.0.0.1"]            # the user allows the host in Settings
    with qtbot.waitSignal(w.audit.audit_finished, timeout=WAIT_MS) as again:
        assert w.audit.refetch_run(first_run)
    new_run, status = again.args
    assert status == "completed" and new_run != first_run
    with Store(w.db_path) as st:
        run = st.get_run(new_run)
        assert run.config["refetch"] is True
        data = st.load_run(new_run)
        assert [s.source.status.value for s in data.sources.values()] == ["ok"]
        assert data.responses[0].response.question == "What counts as hypertension?"
    qtbot.waitUntil(lambda: w.results.view is not None and w.results.view.data.run.id == new_run
                    and w.results.view.data.run.status == "completed", timeout=WAIT_MS)
    assert "100.0%" in w.results.metrics_bar.labels["statement_support"].text()


def test_suggest_fixes_can_be_cancelled_and_keeps_what_was_written(qtbot, window, monkeypatch):
    from tests.support.fake_llm import FakeLLMServer, Scripted, verdict
    from tests.support.synth_run import SENTENCES

    def responder(request):   # slow enough to be cancelled part-way
        if "Rewrite the statement minimally" in request.user_text:
            return Scripted(json.dumps({"action": "rewrite", "statement": SENTENCES[2], "quote": SENTENCES[2]}))
        return verdict("supported", SENTENCES[2])

    w = window
    tab = w.results.suggestions_tab
    with FakeLLMServer("openai", responder=responder, latency_s=0.4) as srv:
        judge = f"openai-compatible:{srv.base_url}#gpt-4o"
        with Store(w.db_path) as st:
            run = synthesize_run(st, responses=1, statements=6, sources=2, judges=(judge,))
            with st.db.conn:
                st.db.conn.execute("UPDATE verdicts SET label = 'not_supported', quote = '' WHERE run_id = ?", (run,))
        open_and_wait(qtbot, w, run)
        w.results.detail_tabs.setCurrentIndex(3)
        assert not tab.cancel_btn.isVisible()
        monkeypatch.setattr(w, "confirm", lambda title, text: True)
        with qtbot.waitSignal(tab.cleanup_finished, timeout=WAIT_MS) as finished:
            assert tab.suggest_fixes()
            assert tab.cancel_btn.isVisible() and tab.cancel_btn.isEnabled()
            qtbot.waitUntil(lambda: len(srv.requests) >= 1, timeout=WAIT_MS)
            assert tab.cancel_suggestions()
            assert not tab.cancel_btn.isEnabled() and "Stopping" in tab.cleanup_label.text()
        assert finished.args == [run, "cancelled"]
        asked = len(srv.requests)
    assert asked < 12 * 2                      # 12 pairs to write and verify: stopped well before the end
    assert not tab.cancel_btn.isVisible() and tab.suggest_btn.isEnabled()
    assert "cancelled" in tab.cleanup_label.text() and "kept" in tab.cleanup_label.text()


def test_the_app_headline_is_judges_only_like_show_and_names_its_basis(qtbot, window, capsys):
    w = window
    with Store(w.db_path) as st:
        run_id = synthesize_run(st, responses=2, statements=2, sources=2)
        data = st.load_run(run_id)
        pk = data.statements[data.responses[0].pk][0].pk
        for reviewer in ("Dr A", "Dr B"):          # both reviewers overturn one supported pair
            review.add_review(st, run_id, pk, "https://example.org/page/0", reviewer, "not_supported")
    open_and_wait(qtbot, w, run_id)
    bar = w.results.metrics_bar
    assert not bar.with_overrides.isChecked()
    assert main(["show", run_id, "--db", str(w.db_path)]) == 0
    shown = capsys.readouterr().out
    assert "(judges only)" in shown and "statement-level support  100.0%" in shown
    for key in ("statement_support", "response_support", "url_validity", "unused_sources"):
        assert " · judges only" in bar.labels[key].text()
    assert "100.0% · 4/4 · judges only" in bar.labels["statement_support"].text()
    assert "1 override (not applied)" in bar.counts.text()
    with qtbot.waitSignal(w.results.run_shown, timeout=120_000):
        bar.with_overrides.setChecked(True)
    assert "75.0% · 3/4 · with reviews" in bar.labels["statement_support"].text()
    assert "1 override applied" in bar.counts.text()
    # the CLI's list names the same basis
    assert main(["runs", "--db", str(w.db_path)]) == 0
    assert "judges only, reviewer overrides not applied" in capsys.readouterr().out
