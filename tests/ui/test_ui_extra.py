"""The desktop app's Benchmark page, reports, run comparison (each change called by its move), blind review
samples and source notes, offscreen, against the local fixture site and a local fake OpenAI-compatible
server."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt

from sourcecheckup import review
from sourcecheckup.models import FetchStatus, Label, Source, sha256_bytes, utcnow
from sourcecheckup.store import Store
from sourcecheckup.views.sources import source_notes
from tests.support.app import WAIT_MS, open_and_wait
from tests.support.bench_llm import TOPICS, responder
from tests.support.fake_llm import FakeLLMServer
from tests.support.synth_run import synthesize_run
from ui.models import QuestionsModel

ANSWERING = "You are a medical expert answering"


# ----------------------------------------------------------------------------- benchmark


def test_benchmark_page_shows_answering_and_auditing_together_while_both_go_on(window):
    from sourcecheckup.benchmark import BenchEvent, BenchStage
    from sourcecheckup.events import EventKind, ProgressEvent

    page = window.benchmark_page
    page._on_progress(BenchEvent(BenchStage.ANSWERS, 12, 300))
    audit = ProgressEvent(EventKind.JUDGED, "run", sources_done=5, sources_total=9, pairs_done=7, pairs_total=40)
    page._on_progress(BenchEvent(BenchStage.AUDIT, 7, 40, audit=audit))
    text = page.progress_label.text()
    assert "Asking the models: 12/300" in text and "pairs judged 7/40" in text
    assert page.progress_bar.maximum() == 300 and page.progress_bar.value() == 12   # the answers lead
    page._on_progress(BenchEvent(BenchStage.ANSWERS, 300, 300))
    page._on_progress(BenchEvent(BenchStage.AUDIT, 30, 60, audit=audit))
    assert "Asking the models" not in page.progress_label.text()
    assert page.progress_bar.maximum() == 60 and page.progress_bar.value() == 30


def test_benchmark_page_generates_questions_applies_edits_and_drops_then_shows_model_results(
        qtbot, window, site, tmp_path):
    w = window
    page = w.benchmark_page
    docs = tmp_path / "documents.txt"
    docs.write_text("\n".join(f"{site}/article/{p}" for p in TOPICS) + "\n")
    with FakeLLMServer("openai", responder=responder(site)) as llm:
        model = f"openai-compatible:{llm.base_url}#good"
        w.pages.setCurrentWidget(page)
        page.docs_edit.setText(str(docs))
        page.models_edit.setPlainText(model)
        page.judge_edit.setText("keyword:0")
        with qtbot.waitSignal(page.step_finished, timeout=WAIT_MS) as step:
            assert page.generate_questions()
            assert not page.generate_btn.isEnabled() and page.cancel_btn.isEnabled()
        assert step.args[1] == "questions_ready", page.progress_label.text()
        qtbot.waitUntil(lambda: page.questions_model.rowCount() == 3, timeout=WAIT_MS)
        assert not any(ANSWERING in r.all_text for r in llm.requests)   # stopped for review

        m = page.questions_model
        rows = {q.document_url.rsplit("/", 1)[-1]: i for i, q in enumerate(m.rows)}
        edited_row, dropped_row = rows["hypertension"], rows["hfe-hemochromatosis"]
        dropped_text = m.rows[dropped_row].question
        assert m.flags(m.index(edited_row, QuestionsModel.QUESTION)) & Qt.ItemFlag.ItemIsEditable
        new_text = "At what blood pressure does the ACC/AHA guideline now diagnose hypertension in adults?"
        assert m.setData(m.index(edited_row, QuestionsModel.QUESTION), new_text, Qt.ItemDataRole.EditRole)
        assert m.setData(m.index(dropped_row, QuestionsModel.USE), Qt.CheckState.Unchecked.value,
                         Qt.ItemDataRole.CheckStateRole)
        assert "2 of 3 questions kept" in page.questions_label.text()
        assert m.data(m.index(dropped_row, QuestionsModel.USE)) == "✗ dropped"

        with qtbot.waitSignal(page.step_finished, timeout=WAIT_MS) as step:
            assert page.answer_and_audit()
        assert step.args[1] == "completed", page.progress_label.text()
        qtbot.waitUntil(lambda: page.results_model.rowCount() == 1, timeout=WAIT_MS)
        asked = [r.user_text for r in llm.requests if ANSWERING in r.all_text]

    assert len(asked) == 2
    assert any(new_text in t for t in asked)                    # the edit reached the model
    assert not any(dropped_text in t for t in asked)            # the dropped question was never asked
    row = page.results_model.rows[0]
    assert row.model == model and row.answers == 2
    assert page.results_model.headerData(3, Qt.Orientation.Horizontal) == "Statement support"
    assert page.results_model.data(page.results_model.index(0, 3)) == "100.0% (16–100)"   # all supported over 2 answers: Korn-Graubard, never a point
    assert page.results_model.data(page.results_model.index(0, 5)) == "not graded"
    assert "2 questions" in page.results_label.text()
    assert not m.editable                                        # answered: questions are frozen
    assert page.open_run_btn.isEnabled()
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        page.open_run_btn.click()
    assert w.pages.currentIndex() == 0 and w.results.run_id == page.run_id
    assert sorted(r.model for r in w.results.responses_model.rows) == [model, model]


# ----------------------------------------------------------------------------- reports


def test_export_to_xlsx_and_pdf_runs_off_the_gui_thread_and_writes_real_files(qtbot, window, tmp_path):
    from openpyxl import load_workbook
    from pypdf import PdfReader

    w = window
    with Store(w.db_path) as st:
        run_id = synthesize_run(st, responses=3)
    open_and_wait(qtbot, w, run_id)
    with qtbot.waitSignal(w.exporter.export_finished, timeout=WAIT_MS) as done:
        assert w.exporter.export_run_async(tmp_path / "r.xlsx")
    assert done.args == [str(tmp_path / "r.xlsx"), ""]
    book = load_workbook(tmp_path / "r.xlsx", read_only=True)
    assert len(book.sheetnames) >= 2
    with qtbot.waitSignal(w.exporter.export_finished, timeout=WAIT_MS) as done:
        assert w.exporter.export_run_async(tmp_path / "report.pdf", "pdf")
        assert w.exporter.export_bar.isVisible() and "PDF" in w.exporter.export_label.text()   # busy while Chromium prints
    assert done.args[1] == "", done.args[1]
    assert not w.exporter.export_bar.isVisible()
    pdf = PdfReader(str(tmp_path / "report.pdf"))
    assert len(pdf.pages) >= 1 and run_id in "".join(p.extract_text() for p in pdf.pages)


# ----------------------------------------------------------------------------- compare


def test_compare_view_lists_a_statement_whose_support_changed_and_the_changed_source(qtbot, window):
    w = window
    url = "https://example.org/page/1"
    with Store(w.db_path) as st:
        run_a = synthesize_run(st, responses=3, statements=2, sources=2)
        run_b = synthesize_run(st, responses=3, statements=2, sources=2)
        text = "A rewritten page."
        sid = st.add_source(Source(url=url, status=FetchStatus.OK, text=text, sha256=sha256_bytes(text.encode()),
                                   fetched_at=utcnow()))
        st.link_run_source(run_b, url, sid)
        spk = st.db.execute("SELECT st.pk FROM statements st JOIN responses r ON r.pk = st.response_pk "
                            "WHERE r.run_id = ? AND r.rid = 'r1' AND st.ord = 1", [run_b]).fetchone()[0]
        with st.db.conn:
            st.db.execute("UPDATE verdicts SET label = ? WHERE run_id = ? AND statement_pk = ? AND url = ?",
                          [Label.NOT_SUPPORTED.value, run_b, spk, url])
    w.pages.setCurrentWidget(w.compare_page)
    qtbot.waitUntil(lambda: w.compare_page.run_a.count() == 2, timeout=WAIT_MS)
    assert (w.compare_page.run_a.currentData(), w.compare_page.run_b.currentData()) == (run_a, run_b)
    with qtbot.waitSignal(w.compare_page.compared, timeout=WAIT_MS):
        w.compare_page.compare_btn.click()
    sm = w.compare_page.statements_model
    assert sm.rowCount() == 1
    assert [sm.data(sm.index(0, c)) for c in (0, 2, 3)] == ["r1", "✓ supported", "✗ not supported"]
    src = w.compare_page.sources_model
    assert src.data(src.index(0, 0)) == url and "content changed" in src.data(src.index(0, 1))
    diffs = {d.metric: d for d in w.compare_page.diff_model.rows}
    assert diffs["Statement-level support"].diff.startswith("-16.7 points (95% CI")
    assert "support changed for 1" in w.compare_page.summary.text()


# ----------------------------------------------------------------------------- review samples


def test_blind_review_sample_hides_the_verdict_and_stores_labels_with_the_sample_name(qtbot, window):
    w = window
    with Store(w.db_path) as st:
        run_id = synthesize_run(st, responses=3, statements=2, sources=2)
    open_and_wait(qtbot, w, run_id)
    page = w.sample_page
    w.pages.setCurrentWidget(page)
    page.n_spin.setValue(4)
    assert page.blind.isChecked()
    with qtbot.waitSignal(page.sample_shown, timeout=WAIT_MS) as shown:
        assert page.draw()
    name = shown.args[0]
    assert page.pairs_model.rowCount() == 4
    assert "hidden" in page.judge.text() and "supported" not in page.judge.text()
    assert {page.pairs_model.data(page.pairs_model.index(r, 4)) for r in range(4)} == {"hidden (blind)"}
    first = page.current_pair()
    # the highlighted passage is chosen by the statement, not by the judge's quote
    assert page.viewer.quote_span is not None

    w.activateWindow()
    w.review_mode_action.trigger()
    with qtbot.waitSignal(page.agreement_shown, timeout=WAIT_MS):
        qtbot.keyClick(page.pairs_table, Qt.Key.Key_N)
    assert page.current_pair() != first                       # moved on to the next pair
    with qtbot.waitSignal(page.agreement_shown, timeout=WAIT_MS):
        page.label_current("supported")
    with Store(w.db_path) as st:
        stored = review.reviews(st, run_id)
    assert [(r.sample, r.blind, r.reviewer) for r in stored] == [(name, True, "Dr Tester")] * 2
    assert (stored[0].statement_pk, stored[0].url, stored[0].label.value) == \
        (first.statement_pk, first.url, "not_supported")
    assert page.pairs_model.data(page.pairs_model.index(0, 3)) == "✗ not supported"
    assert page.agreement_model.rowCount() >= 1
    assert page.agreement_model.rows[0].rater_b == "Dr Tester" and page.agreement_model.rows[0].n == 2
    assert "2 pairs reviewed" in page.agreement_label.text()

    page.blind.setChecked(False)                               # unblinded: the judge's verdict is shown
    assert "Judge's verdict: ✓" in page.judge.text() or "Judge's verdict: ✗" in page.judge.text()


# ----------------------------------------------------------------------------- sources, settings


def test_sources_table_says_changed_since_with_the_date_of_the_earlier_read(qtbot, window):
    w = window
    with Store(w.db_path) as st:
        synthesize_run(st, responses=1, statements=2, sources=1)
        earlier = st.latest_source("https://example.org/page/0").source.fetched_at
        run_id = synthesize_run(st, responses=1, statements=2, sources=1,
                                source_text=lambda k: "The page was rewritten. Hypertension is defined as a blood "
                                                      "pressure of 130/80 mm Hg or higher.")
    open_and_wait(qtbot, w, run_id)
    sm = w.results.sources_tab.sources_model
    notes_col = [sm.headerData(c, Qt.Orientation.Horizontal) for c in range(sm.columnCount())].index("Notes")
    assert sm.data(sm.index(0, notes_col)) == f"changed since {earlier[:10]}"
    assert "changed since last audit" in sm.data(sm.index(0, notes_col + 2))
    reason_col = [sm.headerData(c, Qt.Orientation.Horizontal) for c in range(sm.columnCount())].index("Reason")
    assert sm.data(sm.index(0, reason_col)) == "HTTP 200 OK"


def test_source_notes_name_the_archived_copy_and_the_doi():
    archived = Source(url="https://example.org/retired", status=FetchStatus.OK, text="x", origin="archive",
                      flags=("archived",), meta={"archive": {"snapshot_url": "https://web.archive.org/web/1/x",
                                                             "timestamp": "20190315083000", "date": "2019-03-15"}})
    assert source_notes(archived) == ("archived copy of 2019-03-15",)
    dead = Source(url="https://example.org/gone", status=FetchStatus.DEAD, origin="http",
                  meta={"archive": {"snapshot_url": "https://web.archive.org/web/2/x", "date": "2020-01-02"}})
    assert source_notes(dead) == ("archived copy of 2020-01-02 exists",)
    doi = Source(url="https://doi.org/10.5555/jnp.2023.0456", status=FetchStatus.OK, text="x",
                 meta={"doi": "10.5555/jnp.2023.0456"})
    assert source_notes(doi) == ("DOI 10.5555/jnp.2023.0456",)


def test_settings_say_clearly_when_no_browser_is_available(qtbot, settings, monkeypatch):
    import ui.dialogs

    monkeypatch.setattr(ui.dialogs, "browser_status", lambda: (
        False, "Chromium not found at /usr/lib/chromium/chromium: install the 'chromium' package; pages that "
               "need JavaScript will be read as plain HTML"))
    dialog = ui.dialogs.SettingsDialog(settings)
    qtbot.addWidget(dialog)
    text = dialog.browser_status.text()
    assert text.startswith("⚠ No browser available") and "read as plain HTML" in text
    assert not dialog.browser_available


def test_the_compare_page_calls_a_refused_then_fetched_source_by_its_move(qtbot, window):
    w = window
    url = "http://10.1.2.3/x/0"
    with Store(w.db_path) as st:
        run_a = synthesize_run(st, responses=1, statements=2, sources=1, base_url="http://10.1.2.3/x")
        run_b = synthesize_run(st, responses=1, statements=2, sources=1, base_url="http://10.1.2.3/x")
        sid = st.add_source(Source(url=url, status=FetchStatus.UNSAFE_URL, fetched_at=utcnow(),
                                   reason="10.1.2.3 is a private address"))
        st.link_run_source(run_a, url, sid)
        with st.db.conn:
            st.db.execute("DELETE FROM verdicts WHERE run_id = ?", [run_a])
            st.db.execute("UPDATE verdicts SET label = 'not_supported' WHERE run_id = ? AND statement_pk IN "
                          "(SELECT pk FROM statements WHERE run_id = ? AND ord = 1)", [run_b, run_b])
    w.refresh_runs()
    w.pages.setCurrentWidget(w.compare_page)
    qtbot.waitUntil(lambda: w.compare_page.run_a.count() == 2, timeout=120_000)
    with qtbot.waitSignal(w.compare_page.compared, timeout=120_000):
        w.compare_page.compare(run_a, run_b)
    summary = w.compare_page.summary.text()
    assert "support changed for 1; other status moves: 1 no readable source → judged" in summary
    assert "Judges only" in summary
    src = w.compare_page.sources_model
    assert src.data(src.index(0, 1)) == "refused (unsafe address) → full text"
    sm = w.compare_page.statements_model
    moves = sorted(sm.data(sm.index(r, 4)) for r in range(sm.rowCount()))
    assert moves == ["no readable source → judged", "support changed"]
