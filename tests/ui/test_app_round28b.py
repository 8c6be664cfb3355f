"""The app as a clinician, a librarian and a regulator meet it (issue 28, part b): the verdict panel
names the check that decided and the sentence it read, the pair's text scrolls and the source viewer
has room, matrix cells whole, the status bar and its plurals, "Open report" that cannot open, review
mode's first pair, Download without internet, the first-launch guide and Settings sized to their
text, and the built-in judge's model loading from the moment the app opens."""
from __future__ import annotations

import os

from tests.support.paths import FIXTURES

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import socket  # noqa: E402
import threading  # noqa: E402

import pytest  # noqa: E402

pytest.importorskip("pytestqt")

from PySide6.QtCore import QSize, Qt  # noqa: E402
from PySide6.QtGui import QDesktopServices, QGuiApplication  # noqa: E402
from PySide6.QtWidgets import QApplication, QLabel, QScrollArea  # noqa: E402

from sourcecheckup import embeddings, warmup  # noqa: E402
from sourcecheckup.evidence import SourceText  # noqa: E402
from sourcecheckup.judges.builtin.judge import BuiltinJudge  # noqa: E402
from sourcecheckup.models import REVIEW_FIRST, Label, Verdict, decided_by  # noqa: E402
from sourcecheckup.store import Store  # noqa: E402
from sourcecheckup.views.matrix import how_decided  # noqa: E402
from sourcecheckup.views.results import load_run_view, problem_kind, problem_phrase  # noqa: E402
from sourcecheckup.views.review import agreement_summary  # noqa: E402
from tests.support.app import audit_and_wait, settings, window  # noqa: E402,F401
from tests.support.synth_run import synthesize_run  # noqa: E402
from ui.facets import problem_kinds_of  # noqa: E402
from ui.judge_guide import FirstLaunchGuide  # noqa: E402
from ui.main_window import REVIEW_MODE_HELP, MainWindow  # noqa: E402
from ui.model_download import ModelDownloadDialog  # noqa: E402

SITE_DIR = FIXTURES / "site"


def open_run(qtbot, w: MainWindow, rid: str) -> None:
    with qtbot.waitSignal(w.results.run_shown, timeout=120_000):
        w.results.open_run(rid)


def page_text(name: str) -> str:
    """The visible text of a fixture page, paragraph by paragraph (what the fetcher keeps of it)."""
    import re

    html = (SITE_DIR / "medicines" / name).read_text(encoding="utf-8")
    body = html.split("<main", 1)[1].split("</main>", 1)[0]
    return "\n".join(re.sub(r"<[^>]+>", "", p).strip() for p in re.findall(r"<(?:h1|h2|p)[^>]*>(.*?)</(?:h1|h2|p)>", body, re.S))


def label_is_whole(label: QLabel) -> bool:
    """A wrapped label is as tall as its text needs at its width: no line cut off."""
    return label.height() >= label.heightForWidth(label.width()) - 1


# ---------------------------------------------------------------------------- 3: which check decided


def test_builtin_verdicts_record_the_step_that_decided_without_changing_label_or_score():
    judge = BuiltinJudge()
    page = SourceText.from_text(page_text("paracetamol-for-adults.html"), title="Paracetamol for adults")
    wrong = "The usual adult dose of paracetamol is one or two 500mg tablets up to 6 times in 24 hours."
    right = "The usual dose for adults is one or two 500mg tablets up to 4 times in 24 hours."
    v_wrong, v_right = judge.score_pairs([(wrong, page), (right, page)])
    assert v_wrong.label is Label.NOT_SUPPORTED and decided_by(v_wrong.flags) == "quantity"
    assert "4 times in 24 hours" in v_wrong.quote   # the sentence the quantity check read
    assert v_right.label is Label.SUPPORTED and decided_by(v_right.flags) in ("score", "completeness", "outright")
    assert how_decided(v_wrong) == "the exact quantity/dose check"
    # another judge's verdict is its own procedure; an error decided nothing
    llm = Verdict(label=Label.SUPPORTED, judge_id="openai:gpt-4o", prompt_version="verifier-v1", model_version="gpt-4o")
    assert how_decided(llm) == "openai:gpt-4o's own procedure (verifier-v1, model gpt-4o)"
    assert how_decided(Verdict.error("builtin", "boom")) == ""
    # a built-in verdict stored before the step was recorded says so instead of guessing
    assert "does not record" in how_decided(Verdict(label=Label.SUPPORTED, judge_id="builtin"))


def test_the_issue_examples_are_judged_as_their_pages_say():
    """The NHS-like wording of issue 28: "4 times in 24 hours" with "at least 4 hours between doses" is no
    "6 hours apart", and "a rare but serious side effect" is not negated by the page that says it."""
    judge = BuiltinJudge()
    paracetamol = SourceText.from_text(page_text("paracetamol-for-adults.html"))
    metformin = SourceText.from_text(page_text("metformin-side-effects.html"))
    dose = ("The usual adult dose is one or two 500mg tablets up to 4 times in 24 hours, with at least 4 hours "
            "between doses.")
    acidosis = "Lactic acidosis is a rare but serious side effect of metformin."
    v_dose, v_acid = judge.score_pairs([(dose, paracetamol), (acidosis, metformin)])
    assert v_dose.label is Label.SUPPORTED and not v_dose.contradicted, v_dose.rationale
    assert v_acid.label is Label.SUPPORTED, v_acid.rationale


def test_the_verdict_panel_names_the_deciding_check_and_the_source_sentence(qtbot, window, settings, site):
    w = window
    settings.judges = ["builtin"]
    w.results.input.paste_edit.setPlainText(
        "The usual adult dose of paracetamol is one or two 500mg tablets up to 6 times in 24 hours [1].\n\n"
        f"[1]: {site}/medicines/paracetamol-for-adults\n")
    audit_and_wait(qtbot, w)
    tab = w.results.matrix_tab
    assert tab.select_pair(tab.matrix_model.matrix.statements[0].row.pk, tab.matrix_model.matrix.urls[0])
    verdicts = tab.pair_verdicts.text()
    assert "Decided by the exact quantity/dose check." in verdicts, verdicts
    assert tab.pair_quote.text().startswith("Source sentence it read (found in the source):")
    assert "4 times in 24 hours" in tab.pair_quote.text()
    # the statement card beside the answer says the same
    w.results.detail_tabs.setCurrentIndex(0)
    w.results.answer_tab.show_statement_card(tab.matrix_model.matrix.statements[0].row.pk)
    card = w.results.answer_tab.statement_card.toPlainText()
    assert "decided by the exact quantity/dose check" in card and "source sentence it read" in card, card


# ---------------------------------------------------------------------------- 7: the pane and the source viewer


@pytest.mark.parametrize("size", [QSize(1280, 800), QSize(1366, 768)])
def test_the_pair_text_scrolls_and_the_source_viewer_has_room(qtbot, window, size):
    w = window
    long_reason = "The source words it another way. " * 30
    with Store(w.db_path) as st:
        rid = synthesize_run(st, responses=1, statements=3, sources=2)
        view = load_run_view(st, rid)
        row = next(iter(view.data.verdicts.values()))[0]
        st.save_verdict(rid, row.statement_pk, row.url, row.source_id,
                        Verdict(label=Label.NOT_SUPPORTED, score=0.3, rationale=long_reason, judge_id="builtin",
                                quote=row.verdict.quote))
    w.resize(size)
    qtbot.waitUntil(lambda: w.size() == size, timeout=3000)
    open_run(qtbot, w, rid)
    w.results.detail_tabs.setCurrentIndex(2)
    tab = w.results.matrix_tab
    assert tab.select_pair(row.statement_pk, row.url)
    labels = (tab.pair_statement, tab.pair_source, tab.pair_verdicts, tab.pair_quote)
    try:   # the layout settles in a turn or two of the event loop
        qtbot.waitUntil(lambda: all(label_is_whole(label) for label in labels), timeout=10_000)
    except AssertionError:
        pass
    for label in labels:
        assert label_is_whole(label), (label.text()[:60], label.height(), label.heightForWidth(label.width()))
    # the text is taller than its pane: it scrolls rather than being cut
    assert tab.pair_scroll.widget().height() > tab.pair_scroll.viewport().height()
    # the scroll bar shows once the scroll area has laid out the taller text (a turn of the event loop)
    qtbot.waitUntil(lambda: tab.pair_scroll.verticalScrollBar().isVisible(), timeout=30_000)
    lines = tab.source_viewer.viewport().height() // tab.source_viewer.fontMetrics().lineSpacing()
    assert lines >= 6, lines


# ---------------------------------------------------------------------------- 17: matrix cells whole at 1024x640


def test_matrix_cells_are_whole_at_1024x640(qtbot, window):
    w = window
    with Store(w.db_path) as st:
        rid = synthesize_run(st, responses=1, statements=2, sources=2, judges=("builtin", "keyword:0"))
        view = load_run_view(st, rid)
        for rows in view.data.verdicts.values():
            for r in rows:   # the judges split and the screen is unsure: the longest cell texts
                if r.verdict.judge_id == "builtin":
                    st.save_verdict(rid, r.statement_pk, r.url, r.source_id, Verdict(
                        label=Label.NOT_SUPPORTED, score=0.45, judge_id="builtin", flags=(REVIEW_FIRST,)))
    w.resize(QSize(1024, 640))
    qtbot.waitUntil(lambda: w.size() == QSize(1024, 640), timeout=3000)
    open_run(qtbot, w, rid)
    w.results.detail_tabs.setCurrentIndex(2)
    table, model = w.results.matrix_tab.matrix_table, w.results.matrix_tab.matrix_model
    fm = table.fontMetrics()
    texts = []
    for r in range(model.rowCount()):
        for c in range(model.columnCount()):
            text = model.index(r, c).data()
            texts.append(text)
            assert fm.horizontalAdvance(text) + 6 <= table.columnWidth(c), (text, table.columnWidth(c))
    assert any(t.startswith("⚑") and "not supported" in t for t in texts), texts


# ---------------------------------------------------------------------------- 11: status bar and plurals


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


# ---------------------------------------------------------------------------- 15: Open report without a viewer


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


# ---------------------------------------------------------------------------- 16: review mode's first pair


def test_review_mode_starts_at_the_review_first_pair_when_the_matrix_has_focus(qtbot, window):
    w = window
    with Store(w.db_path) as st:
        rid = synthesize_run(st, responses=1, statements=3, sources=2)
        view = load_run_view(st, rid)
        last = sorted((r for rows in view.data.verdicts.values() for r in rows),
                      key=lambda r: (r.statement_pk, r.url))[-1]
        st.save_verdict(rid, last.statement_pk, last.url, last.source_id, Verdict(
            label=Label.NOT_SUPPORTED, score=0.45, judge_id="builtin", flags=(REVIEW_FIRST,)))
    open_run(qtbot, w, rid)
    tab = w.results.matrix_tab
    w.results.detail_tabs.setCurrentWidget(tab)
    tab.matrix_table.setFocus()
    tab.matrix_table.setCurrentIndex(tab.matrix_model.index(0, 0))   # what focusing the matrix selects
    assert w.results.current_cell().statement_pk != last.statement_pk
    w.review_mode_action.trigger()
    try:
        cell = w.results.current_cell()
        assert (cell.statement_pk, cell.url) == (last.statement_pk, last.url)
        assert cell.review_first
    finally:
        w.review_mode_action.trigger()


# ---------------------------------------------------------------------------- 8: Download with no internet


def test_download_without_internet_says_what_happened_and_what_to_do(qtbot, tmp_path, monkeypatch):
    from huggingface_hub import constants

    with socket.socket() as s:      # a port nothing listens on: refused, as an offline machine is
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("SOURCECHECKUP_MODELS", str(tmp_path / "models"))
    dialog = ModelDownloadDialog()
    qtbot.addWidget(dialog)
    dialog.show()
    with qtbot.waitSignal(dialog.job_finished, timeout=120_000):
        dialog.start_pull("minicheck-roberta-large")
    text = dialog.status.text()
    assert text.startswith("⚠ The download could not reach the model hub"), text
    for what in ("Import from folder…", "HF_ENDPOINT", "sourcecheckup models pull"):
        assert what in text, what
    assert not text.startswith("⚠ ConnectError") and "ConnectError:" not in text.splitlines()[0]
    assert not dialog.progress_bar.isVisible()   # nothing under way: no bar at 0% looking busy


# ---------------------------------------------------------------------------- 10: the guide and Settings


def test_first_launch_guide_fits_its_text_without_blank_bands(qtbot, settings):
    guide = FirstLaunchGuide(settings)
    qtbot.addWidget(guide)
    guide.show()
    qtbot.waitExposed(guide)
    qtbot.wait(50)
    labels = [lab for lab in guide.findChildren(QLabel) if lab.isVisible() and lab.text()]
    assert len(labels) >= 5
    line = guide.fontMetrics().lineSpacing()
    for label in labels:
        needed = label.heightForWidth(label.width())
        assert label_is_whole(label), label.text()[:40]
        assert label.height() <= needed + line, (label.text()[:40], label.height(), needed)   # no blank band
    assert not any(a.horizontalScrollBar().isVisible() for a in guide.findChildren(QScrollArea))


def test_settings_show_the_whole_compact_guide_with_a_large_font(qtbot, settings):
    from ui.dialogs import SettingsDialog

    app = QApplication.instance()
    font = app.font()
    big = app.font()
    big.setPointSize(max(font.pointSize(), 9) + 4)
    app.setFont(big)
    try:
        dialog = SettingsDialog(settings)
        qtbot.addWidget(dialog)
        dialog.show()
        qtbot.waitExposed(dialog)
        qtbot.wait(50)
        summary = dialog.judge_guide.summary
        assert summary.text().count("\n") == 2   # the three ways
        assert label_is_whole(summary)
        scroll = dialog.findChild(QScrollArea)
        body, viewport = scroll.widget(), scroll.viewport()
        assert body.width() <= viewport.width()    # nothing cut at the right edge
        assert summary.geometry().right() <= viewport.width()
        buttons = (dialog.judge_guide.details_button, dialog.judge_guide.find_button,
                   dialog.judge_guide.download_button, dialog.judge_guide.use_button)
        assert all(b.geometry().right() <= body.width() for b in buttons)
        dialog.reject()
    finally:
        app.setFont(font)


# ---------------------------------------------------------------------------- the first verdict's wait


def test_the_model_loads_in_the_background_from_launch(qtbot, window, settings, monkeypatch):
    w = window
    loaded_on: list[str] = []
    release = threading.Event()

    def slow_preload() -> None:
        loaded_on.append(threading.current_thread().name)
        release.wait(10)

    steps: list[str] = []
    monkeypatch.setattr(warmup, "warm_up_judges", lambda judges: steps.append(f"judges {judges}"))
    monkeypatch.setattr(warmup, "warm_up_reading", lambda: steps.append("reading"))
    monkeypatch.setattr(embeddings, "is_loaded", lambda: False)
    monkeypatch.setattr(embeddings, "available", lambda: True)
    monkeypatch.setattr(embeddings, "preload", slow_preload)
    assert w.preload_judge_model() is False          # the test window's judge needs no model
    settings.judges = ["builtin"]
    with qtbot.waitSignal(w.model_preload.loaded, timeout=120_000):
        assert w.preload_judge_model() is True       # returns at once: the GUI thread never waits for it
        assert w.model_preload.running
        release.set()
    assert loaded_on == ["judge-model-preload"]
    assert w.model_preload.wait(10)
    # then what else the first audit pays once: the judge's first call, the page reader's imports
    assert steps == ["judges ['builtin']", "reading"]
    assert w.preload_judge_model() is False          # once per launch


def test_the_app_starts_the_load_when_it_opens(qtbot, monkeypatch, tmp_path):
    """ui.app.main, as `sourcecheckup gui` runs it: the window is shown, then the model starts loading."""
    from PySide6.QtCore import QSettings

    from ui import app as app_module
    from ui import main_window as main_window_module
    from ui.settings import AppSettings

    calls: list[str] = []
    monkeypatch.setattr(MainWindow, "preload_judge_model", lambda self: calls.append("preload") or True)
    monkeypatch.setattr(MainWindow, "offer_judge_guide", lambda self: None)
    monkeypatch.setattr(type(QApplication.instance()), "exec", lambda self: 0)
    monkeypatch.setattr(main_window_module, "AppSettings",
                        lambda: AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat)))
    assert app_module.main(["--db", str(tmp_path / "audits.db")]) == 0
    assert calls == ["preload"]
    for widget in QApplication.topLevelWidgets():
        if isinstance(widget, MainWindow):
            widget.db.wait(10_000)
            widget.close()
            widget.deleteLater()
