"""Issue 28 (first half): what the clinician, the librarian and the regulator read on screen is true.

A semicolon CSV maps by its real columns; unread answers look pending; the override basis is named;
review progress and agreement are honest; a refused private address, a compare, a written reference
without a URL are each called what they are."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtWidgets import QDialog

from tests.support.app import AUDIT_TIMEOUT_MS, audit_and_wait, pasted_answer, settings, window  # noqa: F401
from ui.dialogs import CsvMappingDialog


# ----------------------------------------------------------------------------- 1. semicolon CSV


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
