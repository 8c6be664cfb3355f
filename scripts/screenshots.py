"""Screenshots of the desktop app's main screens on the bundled sample, for the README.

Audits resources/samples (answers + the local source pack, offline, built-in judge) into a
temporary database, opens the main window at 1280x800 and saves PNGs to docs/screenshots/.
The Compare page compares that run with a second audit in which one cited page was revised;
the Benchmark page runs a small benchmark against the test suite's local fixture site and
scripted fake OpenAI-compatible models (tests/support), so it needs no network either.
Run under a display, e.g.:

    xvfb-run -a -s "-screen 0 1400x900x24" env QT_QPA_PLATFORM=xcb .venv/bin/python scripts/screenshots.py
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")

from PySide6.QtCore import QEventLoop, QSettings, Qt, QTimer  # noqa: E402
from PySide6.QtWidgets import QApplication, QWidget  # noqa: E402

from sourcecheckup.fetching import FetchOptions  # noqa: E402
from sourcecheckup.ingest import load_path  # noqa: E402
from sourcecheckup.models import StatementStatus  # noqa: E402
from sourcecheckup.pipeline import Audit, RunConfig  # noqa: E402
from sourcecheckup.resources import resources_dir  # noqa: E402
from sourcecheckup.store import Store  # noqa: E402
from ui.app import application, dark_palette  # noqa: E402
from ui.dialogs import SettingsDialog  # noqa: E402
from ui.main_window import MainWindow  # noqa: E402
from ui.settings import AppSettings  # noqa: E402


def settle(ms: int = 300) -> None:
    loop = QEventLoop()
    QTimer.singleShot(ms, loop.quit)
    loop.exec()


def wait_for(signal, timeout_s: float = 60) -> None:
    loop = QEventLoop()
    signal.connect(lambda *a: loop.quit())
    QTimer.singleShot(int(timeout_s * 1000), loop.quit)
    loop.exec()


def save(widget: QWidget, out: Path, name: str) -> None:
    settle()
    path = out / f"{name}.png"
    widget.grab().save(str(path))
    print(f"saved {path.relative_to(ROOT) if path.is_relative_to(ROOT) else path}")


def audit_samples(db: Path, judge: str, sources: Path | None = None, label: str = "resources/samples/answers") -> str:
    samples = resources_dir() / "samples"
    loaded = load_path(samples / "answers")
    # a revised pack must be read again, not taken from the sources cached by the first audit
    config = RunConfig(judges=[judge], fetch=FetchOptions(sources_dir=sources or samples / "sources"),
                       refetch=sources is not None)
    with Store(db) as store:
        return asyncio.run(Audit(store, config).start(loaded.responses, loaded.skipped, label))


def revised_sources(tmp: Path) -> Path:
    """The sample source pack with one page revised: the HFE abstract no longer gives the 28.4% figure."""
    pack = tmp / "sources-revised"
    shutil.copytree(resources_dir() / "samples" / "sources", pack)
    page = pack / "pages" / "pubmed-18199861-hfe.html"
    page.write_text(page.read_text(encoding="utf-8").replace("28.4%", "a minority"), encoding="utf-8")
    return pack


def benchmark_screens(w: MainWindow, tmp: Path, out: Path, judge: str) -> None:
    """Drive the Benchmark page as a user would: generate, edit one question, drop one, answer and audit."""
    from tests.support.bench_llm import TOPICS, responder
    from tests.support.fake_llm import FakeLLMServer
    from tests.support.site import start_site
    from ui.models import QuestionsModel

    site, stop_site = start_site()
    try:
        with FakeLLMServer("openai", responder=responder(site, {"wrong": "unsupported", "prose": "text"})) as llm:
            docs = tmp / "reference-pages.txt"
            docs.write_text("\n".join(f"{site}/article/{p}" for p in TOPICS) + "\n")
            page = w.benchmark_page
            w.settings.allow_hosts = ["127.0.0.1"]      # the fixture site and the fake models are local
            w.pages.setCurrentWidget(page)
            page.docs_edit.setText(str(docs))
            page.models_edit.setPlainText("\n".join(f"openai-compatible:{llm.base_url}#{m}"
                                                     for m in ("good", "wrong", "prose")))
            page.judge_edit.setText(judge)
            page.accuracy.setChecked(True)
            page.per_doc.setValue(2)
            page.generate_questions()
            wait_for(page.questions_shown, 120)
            settle(300)
            if not page.questions_model.rows:
                raise SystemExit(f"no questions were generated: {page.progress_label.text()}")
            m = page.questions_model
            m.setData(m.index(0, QuestionsModel.QUESTION), m.rows[0].question + " Answer for an adult outpatient.")
            m.setData(m.index(3, QuestionsModel.USE), 0, Qt.ItemDataRole.CheckStateRole)
            page.questions_table.resizeRowsToContents()
            save(w, out, "08-benchmark-questions")
            page.answer_and_audit()
            wait_for(page.results_shown, 300)
            settle(800)
            save(w, out, "09-benchmark-results")
    finally:
        stop_site()


def small_window_screen(w: MainWindow, run_id: str, out: Path) -> None:
    """The window at 1024x640 (a small laptop) after the demo run: named, noted, one pair reviewed."""
    w.results.runs.set_run_label(run_id, "Sample answers (demo)", "The bundled sample, audited offline with the built-in judge")
    w.resize(1024, 640)
    w.pages.setCurrentIndex(0)
    w.results.left_tabs.setCurrentIndex(1)
    w.results.open_run(run_id)
    wait_for(w.results.run_shown)
    settle(600)
    w.results.detail_tabs.setCurrentIndex(2)
    idx = w.results.matrix_tab.matrix_model.index(0, 0)
    w.results.matrix_tab.matrix_table.setCurrentIndex(idx)
    w.results.matrix_tab.show_cell(w.results.matrix_tab.matrix_model.cell(idx))
    save(w, out, "12-small-window-1024x640")


def expert_screens(w: MainWindow, run_id: str, out: Path) -> None:
    """The Expert tab on the sample answer that carries a reference answer and must-have statements, and the
    support matrix in a full-HD window (1920x1080)."""
    w.pages.setCurrentIndex(0)
    w.results.left_tabs.setCurrentIndex(0)
    w.results.open_run(run_id)
    wait_for(w.results.run_shown)
    view = w.results.view
    assert view is not None
    expert = next((r for r in view.data.responses if r.response.expert), None)
    if expert is not None:
        w.results.select_response(expert.pk)
        w.results.detail_tabs.setCurrentWidget(w.results.expert_tab)
        settle(1500)
        save(w, out, "15-expert")
    w.resize(1920, 1080)
    w.results.detail_tabs.setCurrentIndex(2)
    settle(800)
    save(w, out, "16-large-window-1920x1080")
    w.resize(1280, 800)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("-o", "--output", default=str(ROOT / "docs" / "screenshots"))
    ap.add_argument("--judge", default="builtin")
    ap.add_argument("--only-small", action="store_true", help="only the 1024x640 window (12-small-window-1024x640)")
    args = ap.parse_args()
    out = Path(args.output)
    out.mkdir(parents=True, exist_ok=True)
    app: QApplication = application()
    tmp = Path(tempfile.mkdtemp(prefix="sc-shots-"))
    db = tmp / "samples.db"
    print(f"auditing the sample answers with the {args.judge} judge…")
    run_id = audit_samples(db, args.judge)
    if args.only_small:
        settings = AppSettings(QSettings(str(tmp / "settings.ini"), QSettings.Format.IniFormat))
        w = MainWindow(db, settings)
        w.show()
        small_window_screen(w, run_id, out)
        w.close()
        return 0
    print("auditing them again against a revised source pack (for the Compare page)…")
    audit_samples(db, args.judge, revised_sources(tmp), "resources/samples/answers (one page revised)")
    settings = AppSettings(QSettings(str(tmp / "settings.ini"), QSettings.Format.IniFormat))
    settings.reviewer = "Dr A. Reviewer"
    w = MainWindow(db, settings)
    w.resize(1280, 800)
    w.show()
    w.results.open_run(run_id)
    wait_for(w.results.run_shown)
    view = w.results.view
    assert view is not None
    # show the answer with the most varied statuses: the screen that explains most
    best = max(view.assessed, key=lambda a: (len({s.status for s in a.statements}), len(a.urls)))
    w.results.select_response(best.response_pk)
    w.results.input.paste_edit.setPlainText(view.data.responses[0].response.text)
    w.results.detail_tabs.setCurrentIndex(0)
    # the card beside the answer: the first claim that is not supported, else the first claim
    claims = [s for s in best.statements if s.row.statement.informative]
    shown = next((s for s in claims if s.status is StatementStatus.NOT_SUPPORTED), claims[0] if claims else None)
    if shown is not None:
        w.results.answer_tab.show_statement_card(shown.row.pk)
    save(w, out, "01-answer")
    w.results.detail_tabs.setCurrentIndex(1)
    save(w, out, "02-sources")
    # a supported cell, so the source viewer shows the highlighted quote
    w.results.detail_tabs.setCurrentIndex(2)
    target = None
    for r, s in enumerate(w.results.matrix_tab.matrix_model.matrix.statements):
        for c, url in enumerate(w.results.matrix_tab.matrix_model.matrix.urls):
            cell = w.results.matrix_tab.matrix_model.cell(w.results.matrix_tab.matrix_model.index(r, c))
            if s.status is StatementStatus.SUPPORTED and cell.primary and cell.primary.verdict.quote:
                target = (r, c)
                break
        if target:
            break
    idx = w.results.matrix_tab.matrix_model.index(*(target or (0, 0)))
    w.results.matrix_tab.matrix_table.setCurrentIndex(idx)
    w.results.matrix_tab.show_cell(w.results.matrix_tab.matrix_model.cell(idx))
    save(w, out, "03-support-matrix")
    w.results.detail_tabs.setCurrentIndex(3)
    save(w, out, "04-suggestions")
    w.results.left_tabs.setCurrentIndex(1)
    w.refresh_runs()
    settle(800)
    save(w, out, "05-runs")
    # the same screen in the dark palette the app uses when the system is dark (Xvfb has no system scheme)
    light = app.palette()
    app.setPalette(dark_palette())
    w.results.left_tabs.setCurrentIndex(0)
    w.results.detail_tabs.setCurrentIndex(2)
    w.results.redraw()
    w.results.matrix_tab.show_cell(w.results.matrix_tab.matrix_model.cell(w.results.matrix_tab.matrix_table.currentIndex()))
    save(w, out, "07-dark-support-matrix")
    app.setPalette(light)
    w.results.redraw()
    dialog = SettingsDialog(settings, w)
    dialog.show()
    save(dialog, out, "06-settings")
    dialog.close()
    w.pages.setCurrentWidget(w.compare_page)
    settle(800)
    w.compare_page.compare_btn.click()
    wait_for(w.compare_page.compared)
    save(w, out, "10-compare")
    w.results.open_run(run_id)
    wait_for(w.results.run_shown)
    w.pages.setCurrentWidget(w.sample_page)
    w.sample_page.n_spin.setValue(20)
    w.sample_page.draw()
    wait_for(w.sample_page.sample_shown)
    for label in ("supported", "not_supported", "supported"):
        w.sample_page.label_current(label)
    settle(1500)
    save(w, out, "11-review-sample")
    expert_screens(w, run_id, out)
    small_window_screen(w, run_id, out)
    w.resize(1280, 800)
    print("running a small benchmark against local fake models…")
    benchmark_screens(w, tmp, out, args.judge)
    w.close()
    return 0


if __name__ == "__main__":
    code = main()
    from sourcecheckup.workers import close_shared_pool

    close_shared_pool()   # os._exit below skips atexit, which would stop the workers
    sys.stdout.flush()
    os._exit(code)   # skip PySide6's teardown at interpreter exit: the PNGs are written
