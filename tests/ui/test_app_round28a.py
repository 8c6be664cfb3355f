"""Issue 28 (first half): what the clinician, the librarian and the regulator read on screen is true.

A semicolon CSV maps by its real columns; unread answers look pending; the override basis is named;
review progress and agreement are honest; a refused private address, a compare, a written reference
without a URL are each called what they are."""
from __future__ import annotations

import json
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest

pytest.importorskip("pytestqt")

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QLabel

from sourcecheckup import review
from sourcecheckup.cli import main
from sourcecheckup.metrics import compute_metrics, exclusion_notes
from sourcecheckup.models import FetchStatus, Response, Source, utcnow
from sourcecheckup.references import Reference, ReferenceCheck, ReferenceStatus, reference_key
from sourcecheckup.references.step import FABRICATED, unread_reference
from sourcecheckup.report import build_report, report_html
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
    with qtbot.waitSignal(w.results.run_shown, timeout=120_000):
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


# ----------------------------------------------------------------------------- 4. one basis, named


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


# ----------------------------------------------------------------------------- 12. runs told apart, side by side


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


# ----------------------------------------------------------------------------- 13. compare names each move


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


# ----------------------------------------------------------------------------- 5. review progress


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


# ----------------------------------------------------------------------------- 6. agreement on few pairs


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


# ----------------------------------------------------------------------------- 14. a written reference is no URL


def run_with_a_fabricated_written_reference(db) -> tuple[str, str]:
    """One answer citing a web page and "Johnson A et al. …", a written reference no service knows."""
    key = reference_key("Johnson A, Lee B. Paracetamol and sleep. Lancet 2020;395:1-9.")
    with Store(db) as st:
        run_id = synthesize_run(st, responses=1, statements=2, sources=1)
        check = ReferenceCheck(reference=Reference(raw=key[len("ref:"):]), status=ReferenceStatus.NOT_FOUND,
                               evidence=FABRICATED, checked_at=utcnow())
        with st.db.conn:
            st.db.execute("UPDATE responses SET citations = ? WHERE run_id = ?",
                          [json.dumps(["https://example.org/page/0", key]), run_id])
        st.link_run_source(run_id, key, st.add_source(unread_reference(key, check)))
        st.save_reference_check(run_id, key, check)
    return run_id, key


def test_a_written_reference_not_found_is_no_dead_link_and_no_cited_url(qtbot, window, capsys):
    w = window
    run_id, key = run_with_a_fabricated_written_reference(w.db_path)
    with Store(w.db_path) as st:
        metrics = compute_metrics(st.load_run(run_id))
    # URL validity counts the one cited URL; the written reference is left out, and the figure says so
    assert (metrics.url_validity.k, metrics.url_validity.n) == (1, 1)
    assert metrics.counts["fetch_outcomes"] == {"ok": 1}
    assert exclusion_notes(metrics.counts)["url_validity"] == (
        "leaves out 1 cited URL (1 written reference without a URL, checked as a reference)")
    assert main(["show", run_id, "--db", str(w.db_path)]) == 0
    shown = capsys.readouterr().out
    assert "source URL validity      100.0%" in shown and "1 written reference without a URL" in shown
    open_and_wait(qtbot, w, run_id)
    assert "1/1" in w.results.metrics_bar.labels["url_validity"].text()
    assert "0 unreadable cited URLs" in w.results.metrics_bar.counts.text()
    summary = w.results.responses_model.rows[0]
    assert "dead link" not in summary.problems and "1 reference not found" in summary.problems
    w.results.show_response(summary.response_pk)
    sources = w.results.sources_tab.sources_model
    row = next(r for r in range(sources.rowCount()) if sources.rows[r].url == key)
    assert sources.data(sources.index(row, 4)) == "reference not found (written, no URL)"


def test_a_reviewer_label_not_applied_is_shown_beside_the_judges_label_in_the_matrix(qtbot, window):
    w = window
    with Store(w.db_path) as st:
        run_id = synthesize_run(st, responses=1, statements=1, sources=1)
        data = st.load_run(run_id)
        pk = data.statements[data.responses[0].pk][0].pk
        review.add_review(st, run_id, pk, "https://example.org/page/0", "Dr Tester", "not_supported")
    open_and_wait(qtbot, w, run_id)
    matrix = w.results.matrix_tab.matrix_model
    assert matrix.index(0, 0).data() == "✎ ✓ supported (reviewer: not supported)"    # judges only: the judge's
    with qtbot.waitSignal(w.results.run_shown, timeout=120_000):
        w.results.metrics_bar.with_overrides.setChecked(True)
    assert matrix.index(0, 0).data() == "✎ ✗ not supported (reviewed)"
