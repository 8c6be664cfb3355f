"""The main window, a shell: menus, toolbar and status bar, the pages (Results, Benchmark, Compare
runs, Review sample) and the open database (a DbSession).

The work is done elsewhere: ui.results (the Results page), ui.audit_controller (the audit in
progress), ui.exporter (reports), each calling the engine. It keeps no numbers of its own.
"""
from __future__ import annotations

from pathlib import Path
from typing import Callable, cast

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import (
    QAction,
    QCloseEvent,
    QDragEnterEvent,
    QDropEvent,
    QGuiApplication,
    QKeySequence,
    QResizeEvent,
    QShortcut,
)
from PySide6.QtWidgets import QFileDialog, QInputDialog, QMainWindow, QMessageBox, QStyle, QTabWidget

from sourcecheckup.store import Store, StoreError
from sourcecheckup.views.runs import run_summaries

from .audit_controller import IDLE, RUNNING, AuditController
from .benchmark_page import BenchmarkPage, Host
from .compare_page import ComparePage
from .db_session import DbSession
from .dialogs import SettingsDialog, show_about
from .elide import ElidedLabel
from .exporter import Exporter
from .judge_guide import FirstLaunchGuide, should_offer_guide
from .preload import ModelPreload
from .results import ResultsPage
from .sample_page import SamplePage
from .settings import AppSettings

TITLE_BAR_PX = 32      # a window manager's title bar, about (the frame is not known before the window shows)
PROGRESS_SHARE = 0.6   # the run's progress line takes at most this share of the status bar; messages the rest
REVIEW_MODE_HELP = ("Review mode: S supported · N not supported · U unsure · J/→ next · K/← previous · "
                    "G / B the whole answer good / bad")


class MainWindow(QMainWindow):
    results: ResultsPage   # the pages, declared here: they are built with the window as their Host
    sample_page: SamplePage

    def __init__(self, db_path: str | Path | None = None, settings: AppSettings | None = None) -> None:
        super().__init__()
        self.settings = settings or AppSettings()
        self.db = DbSession(Path(db_path) if db_path else self.settings.default_db, self)
        self.setWindowTitle("SourceCheckup")
        self.setAcceptDrops(True)
        self._build_pages()
        self.audit = AuditController(self)
        self.model_preload = ModelPreload(self)
        self.exporter = Exporter(self)
        self._build_status_bar()
        self._fit_to_screen(1280, 800)
        self._build_menus()
        self._build_review_shortcuts()
        self.audit.state_changed.connect(self._on_audit_state)
        hints = QGuiApplication.styleHints()
        if hasattr(hints, "colorSchemeChanged"):
            hints.colorSchemeChanged.connect(lambda *_: self.results.redraw())
        self.settings.add_recent("databases", str(self.db_path))
        self.update_title()
        self.refresh_runs()

    @property
    def store(self) -> Store:
        """The open database's connection on the GUI thread (small writes: a label, a decision)."""
        return self.db.store

    @property
    def db_path(self) -> Path:
        return self.db.path

    # ------------------------------------------------------------------------ layout
    def _fit_to_screen(self, width: int, height: int) -> None:
        """The preferred size, or the screen's free area on a small laptop (down to 1024x640), less the
        title bar the window manager adds above it (the window's bottom was off a 640 px screen)."""
        screen = self.screen() or QGuiApplication.primaryScreen()
        if screen is not None:
            free = screen.availableGeometry()
            title = max(TITLE_BAR_PX, self.style().pixelMetric(QStyle.PixelMetric.PM_TitleBarHeight))
            width, height = min(width, free.width()), min(height, free.height() - title)
        self.resize(width, height)

    def _build_pages(self) -> None:
        self.pages = QTabWidget()
        self.pages.setDocumentMode(True)
        self.setCentralWidget(self.pages)
        self.results = ResultsPage(self)
        self.pages.addTab(self.results, "Results")
        # the page only reads db_path and store, properties here (Host declares them as plain attributes)
        self.benchmark_page = BenchmarkPage(cast(Host, self))
        self.pages.addTab(self.benchmark_page, "Benchmark")
        self.compare_page = ComparePage(self)
        self.pages.addTab(self.compare_page, "Compare runs")
        self.sample_page = SamplePage(self)
        self.pages.addTab(self.sample_page, "Review sample")
        self.pages.currentChanged.connect(self._on_page_changed)

    def _build_status_bar(self) -> None:
        # messages ("Report written to …", "Labelled …", review-mode keys) have a label of their own, so
        # a run's long progress line never hides them; the progress line sits beside its bar
        bar = self.statusBar()
        self.message_label = ElidedLabel(min_chars=20)
        bar.addWidget(self.message_label, 1)
        self._message_timer = QTimer(self)
        self._message_timer.setSingleShot(True)
        self._message_timer.timeout.connect(self.message_label.clear)
        for w in (self.audit.progress_label, self.audit.progress_bar, self.exporter.export_label,
                  self.exporter.export_bar, self.exporter.open_report_btn):
            bar.addPermanentWidget(w)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        # the progress line is cut only when the window is too narrow for it, never at a fixed width
        self.audit.progress_label.setMaximumWidth(max(360, int(event.size().width() * PROGRESS_SHARE)))

    def _action(self, text: str, slot: Callable[[], object], shortcut: str | QKeySequence.StandardKey | None = None,
                *, checkable: bool = False) -> QAction:
        act = QAction(text, self)
        if shortcut is not None:
            act.setShortcut(QKeySequence(shortcut))
        act.setCheckable(checkable)
        act.triggered.connect(lambda checked=False: slot())
        return act

    def _build_menus(self) -> None:
        bar, results, export = self.menuBar(), self.results, self.exporter.export_dialog
        m = bar.addMenu("&File")
        m.addAction(self._action("Open answers &file…", results.input.open_file_dialog, QKeySequence.StandardKey.Open))
        m.addAction(self._action("Open answers f&older…", results.input.open_folder_dialog, "Ctrl+Shift+O"))
        m.addSeparator()
        m.addAction(self._action("Open &database…", self.open_database_dialog, "Ctrl+Shift+D"))
        m.addAction(self._action("&New database…", self.new_database_dialog))
        self.recent_db_menu = m.addMenu("Recent databases")
        self.recent_runs_menu = m.addMenu("Recent runs")
        self.recent_db_menu.aboutToShow.connect(self._fill_recent_dbs)
        self.recent_runs_menu.aboutToShow.connect(self._fill_recent_runs)
        m.addSeparator()
        ex = m.addMenu("&Export run")
        ex.addAction(self._action("HTML report…", lambda: export("html"), "Ctrl+E"))
        ex.addAction(self._action("PDF report…", lambda: export("pdf"), "Ctrl+Shift+E"))
        ex.addAction(self._action("Excel workbook (xlsx)…", lambda: export("xlsx")))
        ex.addAction(self._action("JSON…", lambda: export("json")))
        ex.addAction(self._action("CSV…", lambda: export("csv")))
        m.addSeparator()
        m.addAction(self._action("Settings…", self.open_settings, QKeySequence.StandardKey.Preferences))
        m.addAction(self._action("&Quit", self.close, QKeySequence.StandardKey.Quit))

        m = bar.addMenu("&Audit")
        self.audit_action = self._action("&Audit", self.audit.start_audit, "Ctrl+Return")
        m.addAction(self.audit_action)
        self.cancel_action = self._action("&Cancel run", self.audit.cancel_audit, "Ctrl+.")
        self.cancel_action.setEnabled(False)
        m.addAction(self.cancel_action)
        # the bundled sample answers against the bundled source pack, offline: what `sourcecheckup demo` runs
        self.demo_action = self._action("Audit the &demo sample (offline)", self.audit.start_demo)
        self.demo_action.setIconText("Demo")
        m.addAction(self.demo_action)
        m.addAction(self._action("&Resume selected run", results.runs.resume_selected_run, "Ctrl+Shift+R"))
        m.addAction(self._action("Suggest &fixes…", results.suggestions_tab.suggest_fixes))
        m.addAction(self._action("Fetch sources &again (selected run)", results.runs.refetch_selected_run))
        m.addAction(self._action("Show &runs", lambda: results.show_left(1), "Ctrl+2"))
        m.addAction(self._action("Show &input", lambda: results.show_left(0), "Ctrl+1"))
        m.addSeparator()
        m.addAction(self._action("&Benchmark models…", lambda: self.pages.setCurrentWidget(self.benchmark_page),
                                 "Ctrl+B"))
        m.addAction(self._action("C&ompare runs…", lambda: self.pages.setCurrentWidget(self.compare_page),
                                 "Ctrl+Shift+C"))

        m = bar.addMenu("&Review")
        self.review_mode_action = self._action("&Keyboard review mode", self.toggle_review_mode, "Ctrl+R",
                                               checkable=True)
        m.addAction(self.review_mode_action)
        m.addAction(self._action("Next pair", lambda: self.step_pair(1), "Ctrl+J"))
        m.addAction(self._action("Previous pair", lambda: self.step_pair(-1), "Ctrl+K"))
        self.overrides_action = self._action("Metrics &with overrides",
                                             lambda: results.metrics_bar.with_overrides.toggle(), "Ctrl+Shift+V")
        m.addAction(self.overrides_action)
        m.addAction(self._action("Review &sample…", lambda: self.pages.setCurrentWidget(self.sample_page),
                                 "Ctrl+Shift+S"))
        m.addAction(self._action("Change reviewer name…", lambda: self.ask_reviewer(force=True)))

        m = bar.addMenu("&Help")
        m.addAction(self._action("&About SourceCheckup", lambda: show_about(self), "F1"))
        m.addAction(self.demo_action)

        tb = self.addToolBar("Main")
        tb.setObjectName("main-toolbar")
        tb.setMovable(False)
        for act in (self.audit_action, self.cancel_action):
            tb.addAction(act)
        tb.addSeparator()
        tb.addAction(self.demo_action)
        tb.addAction(self._action("Export…", lambda: export(None)))
        tb.addAction(self.review_mode_action)
        tb.addAction(self._action("Settings", self.open_settings))

    def _build_review_shortcuts(self) -> None:
        self.review_shortcuts: list[QShortcut] = []
        keys = {"S": lambda: self.review_current("supported"), "N": lambda: self.review_current("not_supported"),
                "U": lambda: self.review_current("unsure"), "J": lambda: self.step_pair(1),
                "G": lambda: self.grade_current("good"), "B": lambda: self.grade_current("bad"),
                "K": lambda: self.step_pair(-1), "Right": lambda: self.step_pair(1),
                "Left": lambda: self.step_pair(-1)}
        for key, fn in keys.items():
            sc = QShortcut(QKeySequence(key), self)
            sc.activated.connect(fn)
            sc.setEnabled(False)
            self.review_shortcuts.append(sc)

    def _on_audit_state(self, state: str) -> None:
        inputs = self.results.input
        for w in (inputs.audit_btn, self.audit_action, self.demo_action):
            w.setEnabled(state == IDLE)
        for w in (inputs.cancel_btn, self.cancel_action):
            w.setEnabled(state == RUNNING)

    # ------------------------------------------------------------------------ database
    def update_title(self) -> None:
        rid = self.results.run_id
        self.setWindowTitle(f"SourceCheckup — {self.db_path.name}" + (f" — run {rid}" if rid else ""))

    def open_database(self, path: str | Path, *, open_latest: bool = True) -> bool:
        """Switch to another database; its latest run opens, as when the app starts with --db."""
        if self.audit.worker is not None or self.benchmark_page.worker is not None:
            self.warn("A run is in progress", "Cancel or finish the running audit before switching databases.")
            return False
        try:
            db = DbSession(path, self)
        except StoreError as exc:
            self.warn("Cannot open database", str(exc))
            return False
        self.db.close()
        self.db = db
        self.settings.add_recent("databases", str(self.db_path))
        self.results.close_run()
        self.benchmark_page.clear()
        # the status bar spoke of the previous database ("Run … completed."): not of this one
        self.audit.progress_label.setText("")
        self.message_label.clear()
        self.update_title()
        self.refresh_runs()
        self._on_page_changed(self.pages.currentIndex())
        latest = db.store.latest_run_id() if open_latest else None
        if latest is not None:
            self.results.open_run(latest)
        return True

    def open_database_dialog(self) -> None:
        """An Open dialog: it picks an existing database (New database… makes one)."""
        path, _ = QFileDialog.getOpenFileName(self, "Open a database", str(self.db_path.parent),
                                              "SourceCheckup database (*.db);;All files (*)")
        if path:
            self.open_database(path)

    def new_database_dialog(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "New database", str(self.db_path.parent / "audits.db"),
                                              "SourceCheckup database (*.db)")
        if path:
            self.open_database(path)

    def _fill_recent_dbs(self) -> None:
        self.recent_db_menu.clear()
        for p in self.settings.recent("databases"):
            self.recent_db_menu.addAction(p, cast(Callable[..., object], lambda p=p: self.open_database(p)))

    def _fill_recent_runs(self) -> None:
        self.recent_runs_menu.clear()
        for entry in self.settings.recent("runs"):
            db, _, rid = entry.rpartition("::")
            self.recent_runs_menu.addAction(f"{rid} ({Path(db).name})",
                                            cast(Callable[..., object], lambda db=db, rid=rid: self._open_recent(db, rid)))

    def _open_recent(self, db: str, rid: str) -> None:
        if Path(db) != self.db_path and not self.open_database(db, open_latest=False):
            return
        self.results.open_run(rid)

    def refresh_runs(self) -> None:
        """List the database's runs (off the GUI thread) for the Runs tab and the Compare page."""
        self.db.read("runs", lambda st: run_summaries(st, large_metrics=False), self._on_runs_listed,
                     lambda msg: self.show_status(f"could not list runs: {msg}"))

    def _on_runs_listed(self, runs: list) -> None:
        self.results.runs.runs_model.set_rows(runs)
        self.compare_page.set_runs(runs)

    # ------------------------------------------------------------------------ pages
    def show_run(self, run_id: str) -> None:
        """Switch to the Results page and show a run (the Benchmark page's audit run, say)."""
        self.pages.setCurrentWidget(self.results)
        self.results.open_run(run_id)

    def _on_page_changed(self, index: int) -> None:
        page = self.pages.widget(index)
        if page is self.sample_page:
            self.sample_page.refresh()
        elif page is self.benchmark_page:
            self.benchmark_page.refresh_benches()
        elif page is self.compare_page:
            self.refresh_runs()

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls() and all(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:
        paths: list[str | Path] = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.results.input.load_files(paths)

    # ------------------------------------------------------------------------ review
    def ask_reviewer(self, force: bool = False) -> str:
        name = self.settings.reviewer
        if name and not force:
            return name
        name, ok = QInputDialog.getText(self, "Reviewer", "Your name (stored with each of your labels):",
                                        text=name)
        if ok and name.strip():
            self.settings.reviewer = name.strip()
            return name.strip()
        return self.settings.reviewer if not force else name

    def review_current(self, label: str) -> bool:
        """Label the selected pair: on the Review sample page its current pair, within its sample;
        elsewhere the Results page's pair (the next pair follows in review mode)."""
        if self.pages.currentWidget() is self.sample_page:
            return self.sample_page.label_current(label)
        return self.results.review_current(label, step=self.review_mode_action.isChecked())

    def grade_current(self, grade: str) -> bool:
        """Grade the whole answer on screen Good or Bad (apart from its pair labels): on the Review sample
        page the current pair's answer, elsewhere the Results page's selected response."""
        if self.pages.currentWidget() is self.sample_page:
            return self.sample_page.grade_current(grade)
        return self.results.grade_current(grade)

    def step_pair(self, delta: int) -> None:
        if self.pages.currentWidget() is self.sample_page:
            self.sample_page.step(delta)
        else:
            self.results.step_pair(delta)

    def toggle_review_mode(self) -> None:
        on = self.review_mode_action.isChecked()
        for sc in self.review_shortcuts:
            sc.setEnabled(on)
        if on and self.pages.currentWidget() is self.sample_page:
            self.ask_reviewer()
            self.sample_page.focus_pairs()
            self.show_status(REVIEW_MODE_HELP)
        elif on:
            results = self.results
            self.pages.setCurrentWidget(results)
            self.ask_reviewer()
            results.detail_tabs.setCurrentWidget(results.matrix_tab)
            results.matrix_tab.matrix_table.setFocus()
            results.start_review()
            self.show_status(REVIEW_MODE_HELP)
        else:
            self.show_status("Review mode off")

    # ------------------------------------------------------------------------ settings, messages, closing
    def open_settings(self) -> None:
        SettingsDialog(self.settings, self).exec()

    def preload_judge_model(self) -> bool:
        """Load the built-in judge's model in the background now (the app does at launch), so the first
        audit's verdicts do not wait for it; False when no judge set needs it or it is loaded."""
        return self.model_preload.start(self.settings.judges)

    def offer_judge_guide(self) -> FirstLaunchGuide | None:
        """At the first launch, while only the built-in screen is set: the three ways to a strong judge,
        once; opened, not exec()ed, so the event loop runs on (the window behind it keeps loading)."""
        if not should_offer_guide(self.settings):
            return None
        guide = FirstLaunchGuide(self.settings, self)
        guide.setAttribute(Qt.WidgetAttribute.WA_DeleteOnClose)
        guide.open()
        return guide

    def show_status(self, text: str, timeout_ms: int = 12000) -> None:
        self.message_label.setText(text)
        self._message_timer.start(timeout_ms)

    def warn(self, title: str, text: str) -> None:
        box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok, self)
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.open()   # non-blocking: a message never stalls the window (or a test)

    def confirm(self, title: str, text: str) -> bool:
        answer = QMessageBox.question(self, title, text, QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                      QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def closeEvent(self, event: QCloseEvent) -> None:
        self.results.suggestions_tab.shutdown()
        if self.benchmark_page.worker is not None:
            if not self.audit.closing and not self.confirm(
                    "Benchmark running", "A benchmark step is running. Stop it and close? Everything made so "
                    "far is kept, and the benchmark can be resumed later."):
                event.ignore()
                return
            self.benchmark_page.shutdown()
        if not self.audit.may_close():
            event.ignore()
            return
        self.model_preload.wait()   # a model half loaded must not be torn down under its thread
        self.db.close()
        event.accept()
