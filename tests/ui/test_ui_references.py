"""The reference checks in the desktop app (offscreen): badges and evidence in the Sources tab, the matrix
header badges, the Answer tab's mark for statements supported only by retracted papers, Settings, and a
written reference not found, which is no dead link and no cited URL."""
from __future__ import annotations

import inspect

import pytest

pytest.importorskip("pytestqt")

import json

from PySide6.QtCore import QSettings, Qt

from sourcecheckup.cli import main
from sourcecheckup.metrics import compute_metrics, exclusion_notes
from sourcecheckup.models import utcnow
from sourcecheckup.references import Reference, ReferenceCheck, ReferenceStatus, reference_key
from sourcecheckup.references.step import FABRICATED, unread_reference
from sourcecheckup.store import Store
from tests.support import reference_runs as rr
from tests.support.app import WAIT_MS, open_and_wait
from tests.support.synth_run import synthesize_run
from ui.main_window import MainWindow
from ui.settings import AppSettings, accepted_reference_choices


def _open_seeded(qtbot, w: MainWindow) -> str:
    with Store(w.db_path) as st:
        run_id = rr.seed_reference_run(st)
    with qtbot.waitSignal(w.results.run_shown, timeout=WAIT_MS):
        w.results.open_run(run_id)
    w.results.select_response(next(s.response_pk for s in w.results.view.summaries if s.rid == "r1"))
    return run_id


def test_sources_tab_shows_a_reference_badge_per_citation_and_the_evidence(qtbot, window):
    w = window
    _open_seeded(qtbot, w)
    m = w.results.sources_tab.sources_model
    col = [m.headerData(c, Qt.Orientation.Horizontal) for c in range(m.columnCount())].index("Reference")
    badges = {m.rows[r].url: m.data(m.index(r, col)) for r in range(m.rowCount())}
    assert badges == {rr.VERIFIED: "✓ verified", rr.MISMATCH: "≠ mismatch", rr.NOT_FOUND: "✗ not found",
                      rr.AMBIGUOUS: "? ambiguous", rr.LOOKUP_FAILED: "⚠ lookup failed",
                      rr.RETRACTED: "⊠ retracted (verified)", rr.CORRECTED: "✓ verified · corrected",
                      rr.PLAIN: "—"}
    row = [s.url for s in m.rows].index(rr.MISMATCH)
    tip = m.data(m.index(row, col), Qt.ItemDataRole.ToolTipRole)
    assert "The DOI exists but names another paper" in tip and "cited “Aspirin for stroke”" in tip
    assert "<script>" not in tip and "&lt;script&gt;" in tip            # the found title is untrusted: escaped
    # the column is shown beside the fetch outcome, and the pane below holds the evidence of the selected row
    header = w.results.sources_tab.sources_table.horizontalHeader()
    assert header.visualIndex(col) == 5
    w.results.detail_tabs.setCurrentIndex(1)
    w.results.sources_tab.sources_table.selectRow([s.url for s in m.rows].index(rr.RETRACTED))
    pane = w.results.sources_tab.reference_pane.toPlainText()
    assert "Notice: retraction of 2010-02-02 from retraction watch" in pane
    assert "Notice: retraction of 2010-02-02 from crossref, notice doi 10.1016/s0140-6736(10)60175-4" in pane
    w.results.sources_tab.sources_table.selectRow([s.url for s in m.rows].index(rr.NOT_FOUND))
    pane = w.results.sources_tab.reference_pane.toPlainText()
    assert "Best weak candidate (match 0.41):" in pane and "Statin use in nonagenarians" in pane
    w.results.sources_tab.sources_table.selectRow([s.url for s in m.rows].index(rr.PLAIN))
    assert "not checked" in w.results.sources_tab.reference_pane.toPlainText()


def test_matrix_headers_carry_badges_for_retracted_not_found_and_mismatched_references(qtbot, window):
    w = window
    _open_seeded(qtbot, w)
    mm = w.results.matrix_tab.matrix_model
    heads = {mm.matrix.urls[c]: mm.headerData(c, Qt.Orientation.Horizontal) for c in range(mm.columnCount())}
    assert "⊠ retracted" in heads[rr.RETRACTED]
    assert "✗ not found" in heads[rr.NOT_FOUND]
    assert "≠ mismatch" in heads[rr.MISMATCH]
    for url in (rr.VERIFIED, rr.AMBIGUOUS, rr.LOOKUP_FAILED, rr.CORRECTED, rr.PLAIN):
        assert not any(b in heads[url] for b in ("⊠", "✗", "≠")), heads[url]
    col = mm.matrix.urls.index(rr.RETRACTED)
    tip = mm.headerData(col, Qt.Orientation.Horizontal, Qt.ItemDataRole.ToolTipRole)
    assert "it was retracted in 2010" in tip


def test_answer_tab_marks_a_statement_supported_only_by_retracted_papers(qtbot, window):
    w = window
    _open_seeded(qtbot, w)
    view = w.results.answer_tab.answer_view
    text = view.toPlainText()
    assert "The MMR vaccine causes autism ✓ ⊠." in text                 # after its status mark
    assert text.count("⊠") == 1                                          # no other statement is marked
    spk = next(s.row.pk for s in w.results.view.assessment(w.results.response_pk).statements
               if s.row.statement.text.startswith("The MMR"))
    w.results.answer_tab.show_statement_card(spk)
    card = w.results.answer_tab.statement_card.toPlainText()
    assert "⊠ Supported only by retracted papers" in card
    assert "reference: ⊠ retracted (verified): Crossref holds the DOI; it was retracted in 2010." in card


def test_reference_settings_round_trip_through_the_dialog(qtbot, tmp_path):
    from ui.dialogs import SettingsDialog

    path = tmp_path / "settings.ini"
    rw = tmp_path / "retraction_watch.csv"
    rw.write_text("Record ID,Title,OriginalPaperDOI,RetractionNature\n1,A,10.1/a,Retraction\n"
                  "2,B,10.1/b,Expression of concern\n3,C,10.1/c,Retraction\n", encoding="utf-8")
    settings = AppSettings(QSettings(str(path), QSettings.Format.IniFormat))
    assert settings.references is True and settings.crossref_endpoint == "https://api.crossref.org"
    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    box = dialog.reference_box
    box.enabled.setChecked(False)
    box.endpoints["crossref_endpoint"].setText("http://127.0.0.1:8081/crossref")
    box.endpoints["pubmed_endpoint"].setText("http://127.0.0.1:8082/eutils")
    box.endpoints["openalex_endpoint"].setText("http://127.0.0.1:8083")
    box.contact_email.setText("librarian@example.org")
    box.retraction_data.setText(str(rw))
    assert box.lookup_numbers["lookup_timeout_s"].value() == 10.0   # the defaults, as LookupSettings
    box.lookup_numbers["lookup_timeout_s"].setValue(30)
    box.lookup_numbers["lookup_requests_per_second"].setValue(1.5)
    box.lookup_numbers["match_threshold"].setValue(0.9)
    box.lookup_numbers["match_threshold"].setValue(7)               # past its range: held at 1
    assert box.retraction_status.text().startswith("✓ 3 rows, file of 20")
    dialog.save()
    again = AppSettings(QSettings(str(path), QSettings.Format.IniFormat))
    assert again.reference_choices() == {
        "references": False, "crossref_endpoint": "http://127.0.0.1:8081/crossref",
        "pubmed_endpoint": "http://127.0.0.1:8082/eutils", "openalex_endpoint": "http://127.0.0.1:8083",
        "contact_email": "librarian@example.org", "lookup_timeout_s": 30.0, "match_threshold": 1.0,
        "lookup_requests_per_second": 1.5, "retraction_data": str(rw)}
    reopened = SettingsDialog(again)
    qtbot.addWidget(reopened)
    assert reopened.reference_box.endpoints["pubmed_endpoint"].text() == "http://127.0.0.1:8082/eutils"
    assert not reopened.reference_box.enabled.isChecked()
    assert reopened.reference_box.lookup_numbers["lookup_requests_per_second"].value() == 1.5
    lookup = again.run_config().references   # what an audit from the app uses
    assert (lookup.timeout_s, lookup.match_threshold, lookup.requests_per_second) == (30.0, 1.0, 1.5)


def test_settings_refuse_a_bad_endpoint_and_a_file_that_is_not_retraction_watch(qtbot, tmp_path):
    from ui.dialogs import SettingsDialog

    path = tmp_path / "settings.ini"
    settings = AppSettings(QSettings(str(path), QSettings.Format.IniFormat))
    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    box = dialog.reference_box
    box.endpoints["openalex_endpoint"].setText("api.openalex.org")
    other = tmp_path / "other.csv"
    other.write_text("doi,title\n10.1/a,A\n", encoding="utf-8")
    box.retraction_data.setText(str(other))
    assert box.retraction_status.text().startswith("⚠ not a Retraction Watch file")
    dialog.save()
    assert dialog.result() != dialog.DialogCode.Accepted
    assert "OpenAlex endpoint must be an http(s) base URL" in box.problem.text()
    assert "Retraction Watch file" in box.problem.text()
    assert AppSettings(QSettings(str(path), QSettings.Format.IniFormat)).openalex_endpoint == \
        "https://api.openalex.org"


def test_run_config_passes_the_reference_settings_only_under_names_the_builder_accepts(tmp_path, monkeypatch):
    from sourcecheckup import config

    settings = AppSettings(QSettings(str(tmp_path / "s.ini"), QSettings.Format.IniFormat))
    settings.contact_email = "librarian@example.org"
    params = inspect.signature(config.build_run_config).parameters
    if "references" not in params:            # this engine has no reference checks yet: nothing is passed
        assert accepted_reference_choices(settings.reference_choices()) == {}
        settings.run_config()                  # and **fetch_choices is not handed unknown keywords
    seen: dict[str, object] = {}
    real = config.build_run_config

    def builder(*, references: bool = True, contact_email: str = "", **kw):   # an engine that takes two of them
        seen.update(references=references, contact_email=contact_email)
        return real(**kw)
    monkeypatch.setattr(config, "build_run_config", builder)
    settings.run_config()
    assert seen == {"references": True, "contact_email": "librarian@example.org"}


def test_responses_table_names_each_responses_reference_problems(qtbot, window):
    w = window
    _open_seeded(qtbot, w)
    problems = {s.rid: s.problems for s in w.results.responses_model.rows}
    assert problems["r1"] == ("1 retracted reference · 1 reference not found · 1 mismatched reference · "
                              "1 reference lookup failed · 1 supported only by retracted papers")
    assert problems["r2"] == "1 retracted reference · 1 reference not found · 1 supported only by retracted papers"
    facets = w.results.facets
    kinds = [facets.problem_box.itemText(i) for i in range(facets.problem_box.count())]
    assert {"retracted reference", "reference not found", "supported only by retracted papers"} <= set(kinds)
    facets.select(problem="mismatched reference")
    assert w.results.responses_proxy.rowCount() == 1
    mm = w.results.matrix_tab.matrix_model
    row = next(i for i, s in enumerate(mm.matrix.statements) if s.row.statement.text.startswith("The MMR"))
    assert mm.headerData(row, Qt.Orientation.Vertical).startswith("✓⊠ S6")
    assert "only by retracted papers" in mm.headerData(row, Qt.Orientation.Vertical, Qt.ItemDataRole.ToolTipRole)


def test_every_reference_mark_is_in_the_apps_font(qtbot):
    from PySide6.QtGui import QFontMetrics
    from PySide6.QtWidgets import QApplication

    from sourcecheckup.views.references import NO_CHECK, REFERENCE_MARK, RETRACTED_MARK

    metrics = QFontMetrics(QApplication.font())
    for mark in [RETRACTED_MARK, NO_CHECK, *(m for m, _ in REFERENCE_MARK.values())]:
        assert metrics.inFontUcs4(ord(mark)), f"{mark!r} would show as an empty box"


def test_the_longer_settings_dialog_squeezes_no_wrapped_label(qtbot, settings):
    from PySide6.QtWidgets import QLabel

    from ui.dialogs import SettingsDialog

    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    dialog.show()
    qtbot.waitExposed(dialog, timeout=WAIT_MS)
    squeezed = [label.text()[:40] for label in dialog.findChildren(QLabel)
                if label.isVisible() and label.wordWrap() and label.text()
                and label.height() < label.heightForWidth(label.width()) - 1]
    assert not squeezed


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
