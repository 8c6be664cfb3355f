"""The app, offscreen: an answer copied from a chat app is pasted through the real clipboard with its HTML,
the box shows what was found before Audit, and the audit keeps every statement's sources; chat exports,
Word files and PDFs open (Open and drag and drop) and audit; a semicolon CSV maps by its real columns."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import QMimeData, QPointF, Qt, QUrl
from PySide6.QtGui import QDropEvent, QGuiApplication
from PySide6.QtWidgets import QDialog

from sourcecheckup.store import Store
from tests.ingest.test_rich_inputs import FIXTURES, _site_inputs
from tests.support.app import audit_and_wait
from tests.support.documents import build_docx
from ui.dialogs import CsvMappingDialog

SUPPORTED = "Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher"


@pytest.fixture(autouse=True)
def _clipboard_emptied_after_each_test(qapp):
    """The clipboard owns the QMimeData set on it: left there, it is destroyed after the application at
    interpreter exit, which crashes the process (exit 139) once every test has passed."""
    yield
    QGuiApplication.clipboard().clear()
    qapp.processEvents()


def copy_to_clipboard(html: str, text: str) -> None:
    """What a browser puts on the clipboard for a selection: its HTML and its plain text."""
    mime = QMimeData()
    mime.setHtml(html)
    mime.setText(text)
    QGuiApplication.clipboard().setMimeData(mime)


def paste(qtbot, w) -> None:
    box = w.results.input.paste_edit
    box.setFocus()
    box.clear()
    qtbot.keyClick(box, Qt.Key.Key_V, Qt.KeyboardModifier.ControlModifier)


def test_pasting_a_chat_answer_keeps_its_sources_and_says_what_was_found(qtbot, window):
    w = window
    html = (FIXTURES / "paste" / "copilot.html").read_text(encoding="utf-8")
    # the plain-text flavour keeps the numbers and drops the URLs, as browsers do
    copy_to_clipboard(html, "Paracetamol is the preferred pain reliever during pregnancy ...1. Ibuprofen ...2 3.")
    paste(qtbot, w)
    box = w.results.input.paste_edit.toPlainText()
    assert "the shortest time [1]." in box
    assert "[2]: https://www.fda.gov/drugs/drug-safety-and-availability/fda-recommends-avoiding-use-nsaids" in box
    label = w.results.input.pasted_label
    assert label.isVisible() and label.text() == "3 statements, 4 sources from the pasted page"


def test_a_pasted_page_lists_the_links_it_left_out(qtbot, window):
    w = window
    copy_to_clipboard((FIXTURES / "paste" / "tracking_and_hidden.html").read_text(encoding="utf-8"), "plain")
    paste(qtbot, w)
    label = w.results.input.pasted_label
    assert label.text() == "4 statements, 4 sources from the pasted page; 11 link(s) left out"
    assert "mailto:pharmacy@example.org (e-mail the pharmacy): not a web address (mailto:)" in label.toolTip()
    assert "ads.example" not in w.results.input.paste_edit.toPlainText()


def test_plain_text_on_the_clipboard_pastes_as_it_is(qtbot, window):
    w = window
    mime = QMimeData()
    mime.setText("Metformin is first-line [1].\n\n[1]: https://www.nhs.uk/medicines/metformin/")
    QGuiApplication.clipboard().setMimeData(mime)
    paste(qtbot, w)
    assert w.results.input.paste_edit.toPlainText() == mime.text()
    assert not w.results.input.pasted_label.isVisible()


def test_a_pasted_answer_audits_with_each_statement_bound_to_its_source(qtbot, window, site):
    w = window
    html = (f'<html><body><!--StartFragment--><p>{SUPPORTED}<sup><a href="https://www.google.com/url?q={site}'
            f'/article/hypertension&amp;sa=D">1</a></sup>. Serious muscle damage from metformin affects 1 in 10 '
            f'people<sup><a href="#fn2">2</a></sup>.</p><ol class="footnotes"><li id="fn2"><a href="{site}/article/'
            f'metformin-lactic-acidosis">Metformin and lactic acidosis</a></li></ol><!--EndFragment--></body></html>')
    copy_to_clipboard(html, f"{SUPPORTED}1. Serious muscle damage from metformin affects 1 in 10 people2.")
    paste(qtbot, w)
    assert w.results.input.pasted_label.text() == "2 statements, 2 sources from the pasted page"
    run_id = audit_and_wait(qtbot, w)
    with Store(w.db_path) as store:
        (row,) = store.responses(run_id)
        cited = {s.statement.text: {row.response.citations[i] for i in s.statement.cited}
                 for s in store.statements_for(row.pk)}
    assert cited == {f"{SUPPORTED}.": {f"{site}/article/hypertension"},
                     "Serious muscle damage from metformin affects 1 in 10 people.":
                         {f"{site}/article/metformin-lactic-acidosis"}}


@pytest.mark.parametrize("kind", ["chatgpt.json", "claude.json", "answer.docx", "answer.pdf", "page.html"])
def test_exports_and_documents_open_in_the_app_and_audit(qtbot, window, site, tmp_path: Path, kind: str):
    w = window
    path = _site_inputs(tmp_path, site)[kind]
    added = w.results.input.load_files([path])
    assert added.responses
    assert f"{path.name}: read as " in w.results.input.batch_label.text()
    run_id = audit_and_wait(qtbot, w)
    with Store(w.db_path) as store:
        rows = store.responses(run_id)
        assert len(rows) == len(added.responses)
        assert all(store.statements_for(r.pk) for r in rows)


def test_a_document_dropped_on_the_window_joins_the_batch(qtbot, window, tmp_path: Path):
    w = window
    path = build_docx("af_answer", tmp_path / "af.docx")
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(path))])
    event = QDropEvent(QPointF(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                       Qt.KeyboardModifier.NoModifier)
    w.dropEvent(event)
    assert [r.id for r in w.results.input.pending.responses] == ["af-1"]
    assert "af.docx: read as a Word document: 4 citation(s)" in w.results.input.batch_label.text()


def test_a_chat_page_copied_whole_gives_the_users_turn_as_the_question_not_a_claim(qtbot, window):
    """Issue 41 item 3: Ctrl+A, Ctrl+C on a chat page copies the user's message with the answer; the message is
    the question (the answer's id no longer starts with the user's words) and no statement of the answer."""
    w = window
    page = (FIXTURES / "pages" / "chatgpt_saved_page.html").read_text(encoding="utf-8")
    first_turns = page[page.index('<div data-testid="conversation-turn-1">'):
                       page.index('<div data-testid="conversation-turn-3">')]
    asked = "I'm 52 and have back pain. Do statins commonly cause muscle pain?"
    first_turns = first_turns.replace("Do statins commonly cause muscle pain?", asked)
    copy_to_clipboard(f"<html><body><!--StartFragment-->{first_turns}<!--EndFragment--></body></html>",
                      f"You said:\n{asked}\nChatGPT said:\nMuscle symptoms are reported ...")
    paste(qtbot, w)
    box = w.results.input.paste_edit.toPlainText()
    assert box.startswith("Muscle symptoms are reported by about 10% of people taking statins"), box
    assert "back pain" not in box and "You said" not in box
    assert w.results.input.question_edit.text() == asked
    assert w.results.input.pasted_label.text() == "2 statements, 2 sources from the pasted page"
    result = w.results.input.paste_edit.last_page.result
    assert result.responses[0].question == asked and "back pain" not in result.responses[0].text


def test_the_column_mapping_dialog_reads_a_semicolon_csv_as_the_engine_does(qtbot, window, site, tmp_path,
                                                                             monkeypatch):
    url = f"{site}/article/hypertension"
    table = tmp_path / "five.csv"
    table.write_text("answer_id;llm;prompt;answer_text;links\n" + "".join(
        f"a{i};model-{i};What is hypertension?;Hypertension is a blood pressure of 130/80 mm Hg or higher [1].;"
        f"{url}\n" for i in range(5)), encoding="utf-8")
    dialog = CsvMappingDialog(table)
    qtbot.addWidget(dialog)
    assert dialog.columns == ["answer_id", "llm", "prompt", "answer_text", "links"]
    # each field is guessed from the column names the librarian's export uses
    assert dialog.combos["text_col"].currentText() == "answer_text"
    assert dialog.combos["citations_col"].currentText() == "links"
    assert dialog.combos["question_col"].currentText() == "prompt"
    assert dialog.combos["model_col"].currentText() == "llm"
    assert dialog.combos["id_col"].currentText() == "answer_id"
    assert dialog.mapping().delimiter == ";"

    monkeypatch.setattr(CsvMappingDialog, "exec", lambda self: QDialog.DialogCode.Accepted)
    window.results.input.load_files([table])
    responses = window.results.input.pending.responses
    assert [r.id for r in responses] == [f"a{i}" for i in range(5)]
    assert responses[0].model == "model-0" and responses[0].question == "What is hypertension?"
    assert responses[0].text.startswith("Hypertension is a blood pressure") and ";" not in responses[0].text
    assert responses[0].citations == (url,)
