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

from sourcecheckup.models import FetchStatus, Response, Source, utcnow
from sourcecheckup.store import Store
from tests.support.app import AUDIT_TIMEOUT_MS, audit_and_wait, pasted_answer, settings, window  # noqa: F401
from tests.support.synth_run import synthesize_run
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


# ----------------------------------------------------------------------------- 2. unread answers look pending


def open_and_wait(qtbot, w, run_id: str) -> None:
    with qtbot.waitSignal(w.results.run_shown, timeout=5000):
        w.results.open_run(run_id)


def cancelled_batch_with_an_unread_answer(db) -> str:
    """A batch cancelled after its first answer: the second answer was never read nor its source fetched."""
    with Store(db) as st:
        run_id = synthesize_run(st, responses=1, statements=2, sources=1, status="cancelled")
        st.add_responses(run_id, [Response(id="unread", text="Sodium should be under 1500 mg a day [1].",
                                           citations=("https://example.org/never-fetched",), origin="batch:2")])
    return run_id


def test_an_answer_not_read_yet_looks_pending_in_its_row_status_and_answer_tab(qtbot, window):
    w = window
    run_id = cancelled_batch_with_an_unread_answer(w.db_path)
    open_and_wait(qtbot, w, run_id)
    model = w.results.responses_model
    row = next(i for i, r in enumerate(model.rows) if r.rid == "unread")
    shown = [model.data(model.index(row, c)) for c in range(model.columnCount())]
    assert shown[2] == "…" and shown[4] == "… not read yet" and shown[5] == "… not fetched yet", shown
    assert "no claims" not in " ".join(shown) and "0/1 readable" not in " ".join(shown)
    read = next(i for i, r in enumerate(model.rows) if r.rid == "r1")
    assert model.data(model.index(read, 2)) == "2" and model.data(model.index(read, 5)) == "1/1 readable"
    # the status facet offers it as what it is
    assert "… not read yet" in [w.results.facets.status_box.itemText(i)
                                for i in range(w.results.facets.status_box.count())]
    w.results.show_response(model.rows[row].response_pk)
    notice = w.results.answer_tab.notice
    assert notice.isVisible() and notice.text().startswith("… Not read yet")
    w.results.show_response(model.rows[read].response_pk)
    assert not notice.isVisible()


# ----------------------------------------------------------------------------- 9. a refused private address


def test_an_answer_citing_a_refused_private_address_says_so_on_the_answer_tab(qtbot, window):
    w = window
    with Store(w.db_path) as st:
        run_id = synthesize_run(st, responses=1, statements=2, sources=1, base_url="http://10.1.2.3/x")
        with st.db.conn:   # the cited page was refused before any byte was read, so nothing was judged
            st.db.conn.execute("DELETE FROM verdicts WHERE run_id = ?", [run_id])
        sid = st.add_source(Source(url="http://10.1.2.3/x/0", status=FetchStatus.UNSAFE_URL,
                                   reason="10.1.2.3 is a private address; add --allow-host 10.1.2.3 to fetch it "
                                          "anyway", fetched_at=utcnow()))
        st.link_run_source(run_id, "http://10.1.2.3/x/0", sid)
    open_and_wait(qtbot, w, run_id)
    w.results.show_response(w.results.responses_model.rows[0].response_pk)
    notice = w.results.answer_tab.notice
    assert notice.isVisible()
    text = notice.text()
    assert "Source [1] was refused" in text and "10.1.2.3 is a private address" in text
    assert "Settings → Allowed private hosts" in text and "--allow-host" not in text
    assert "invalid URL in URL validity" in text
    assert "2 claims with no other readable source count as not supported (no readable source)" in text
    # and the figures are what the notice says
    assert "0.0%" in w.results.metrics_bar.labels["url_validity"].text()
    assert "0.0%" in w.results.metrics_bar.labels["statement_support"].text()
