"""The main window: input (paste, files, folders), runs, results, review and suggestions.

Everything it does is an engine call: ingest to read answers, pipeline.Audit (in AuditThread)
to audit, sourcecheckup.views.* to shape stored runs, review.add_review to override a verdict,
report.write_report to export. It keeps no numbers of its own.
"""
from __future__ import annotations

import time
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QModelIndex, QSignalBlocker, Qt, QTimer, QUrl, Signal
from PySide6.QtGui import (QAction, QCloseEvent, QDesktopServices, QDragEnterEvent, QDropEvent, QGuiApplication,
                           QKeySequence, QShortcut)
from PySide6.QtWidgets import (QAbstractItemView, QDialog, QFileDialog, QHBoxLayout, QHeaderView, QInputDialog,
                               QLabel, QLineEdit, QMainWindow, QMessageBox, QPlainTextEdit, QProgressBar,
                               QPushButton, QSplitter, QStackedWidget, QTableView, QTabWidget, QVBoxLayout, QWidget)

from sourcecheckup import review
from sourcecheckup.events import ProgressEvent
from sourcecheckup.models import Label
from sourcecheckup.judge_report import run_usage
from sourcecheckup.judges import validate_judge_spec
from sourcecheckup.ingest import CsvMapping, IngestError, IngestResult, load_path, load_text
from sourcecheckup.pipeline import RunConfig
from sourcecheckup.report import write_report
from sourcecheckup.store import Store, StoreError
from sourcecheckup import cleanup
from sourcecheckup.cleanup import Decision, SuggestionRow
from sourcecheckup.views.matrix import SCREENING_JUDGE_SHORT, MatrixCell, support_matrix, uses_screening_judge, verdict_word
from sourcecheckup.views.results import RunView, load_run_view
from sourcecheckup.views.review import PairRef, review_pairs, review_progress
from sourcecheckup.views.runs import run_summaries
from sourcecheckup.views.sources import source_summaries
from sourcecheckup.views.text import reason_for_app, word_diff

from .elide import ElidedLabel, placeholder_with_tooltip
from .facets import FacetBar
from .run_label import RunLabelDialog
from .dialogs import CsvMappingDialog, SettingsDialog, show_about
from .models import MatrixModel, ResponsesModel, RunsModel, SortFilterProxy, SourcesModel, SuggestionsModel
from .settings import AppSettings
from .theme import CONTRADICTED_MARK, LABEL_MARK, REVIEW_FIRST_MARK, REVIEW_MARK, STATUS_MARK, safe_tooltip
from .widgets import AnswerView, MetricsBar, SourceViewer, plain_label
from .benchmark_page import BenchmarkPage
from .compare_page import ComparePage
from .sample_page import SamplePage
from .worker import AuditThread, CleanupThread, StoreReader

TABLE_EXTENSIONS = (".csv", ".tsv")
LIVE_REFRESH_MS = 1500
NO_SUGGESTIONS = "No suggestions yet: “Suggest fixes…” writes them for the unsupported statements"
LEFT_MIN_WIDTH = 230        # the input form's buttons stay whole
RIGHT_MIN_WIDTH = 520
RESPONSES_MIN_HEIGHT = 120  # the filter, the header and at least three responses
DETAILS_MIN_HEIGHT = 200
PAIR_HINT = "Click a cell to see the verdict and the evidence."
CARD_HINT = "Click a statement to see its verdicts, or a [n] marker to see that source."


def _table(model: object, *, stretch_last: bool = True) -> QTableView:
    view = QTableView()
    view.setModel(model)  # type: ignore[arg-type]
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.setAlternatingRowColors(True)
    view.setWordWrap(False)
    view.verticalHeader().setVisible(False)
    view.verticalHeader().setDefaultSectionSize(22)
    view.horizontalHeader().setStretchLastSection(stretch_last)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    return view


class MainWindow(QMainWindow):
    run_shown = Signal(str)          # a run's results are on screen (after each load)
    audit_finished = Signal(str, str)  # run id, status
    export_finished = Signal(str, str)  # path written ("" on failure), error message
    cleanup_finished = Signal(str, str)  # run id, status of a Suggest fixes

    def __init__(self, db_path: str | Path | None = None, settings: AppSettings | None = None) -> None:
        super().__init__()
        self.settings = settings or AppSettings()
        self.db_path = Path(db_path) if db_path else self.settings.default_db
        self.store = Store(self.db_path)
        self.reader = StoreReader(self)
        self.worker: AuditThread | None = None
        self.cleanup_worker: CleanupThread | None = None
        self.view: RunView | None = None
        self.run_id: str | None = None
        self.response_pk: int | None = None
        self.pending = IngestResult()
        self.pending_label = ""
        self.pairs: list[PairRef] = []
        self._closing = False
        self._dirty = False
        self._run_started_at = 0.0
        self._suggestions: list[SuggestionRow] = []
        self._last_load_s = 0.0
        self.usage: dict[str, dict] = {}
        self._last_load_at = 0.0
        self._next_run_name = ""   # the name typed for the run being started

        self.setWindowTitle("SourceCheckup")
        self.setAcceptDrops(True)
        self._build_ui()
        self._fit_to_screen(1280, 800)
        self._build_menus()
        self._build_review_shortcuts()
        self.live_timer = QTimer(self)
        self.live_timer.setInterval(LIVE_REFRESH_MS)
        self.live_timer.timeout.connect(self._live_refresh)
        hints = QGuiApplication.styleHints()
        if hasattr(hints, "colorSchemeChanged"):
            hints.colorSchemeChanged.connect(lambda *_: self._redraw())
        self.settings.add_recent("databases", str(self.db_path))
        self._update_title()
        self.refresh_runs()

    # ------------------------------------------------------------------------ layout
    def _fit_to_screen(self, width: int, height: int) -> None:
        """The preferred size, or the screen's free area on a small laptop (down to 1024x640)."""
        screen = self.screen() or QGuiApplication.primaryScreen()
        if screen is not None:
            free = screen.availableGeometry()
            width, height = min(width, free.width()), min(height, free.height())
        self.resize(width, height)

    def _build_ui(self) -> None:
        self.pages = QTabWidget()
        self.pages.setDocumentMode(True)
        self.setCentralWidget(self.pages)
        splitter = QSplitter(Qt.Orientation.Horizontal)
        self.pages.addTab(splitter, "Results")

        # left: input and runs
        self.left_tabs = QTabWidget()
        splitter.addWidget(self.left_tabs)
        inp = QWidget()
        il = QVBoxLayout(inp)
        self.question_edit = QLineEdit()
        self.question_edit.setPlaceholderText("Question (optional)")
        self.model_edit = QLineEdit()
        self.model_edit.setPlaceholderText("Model name (optional)")
        self.paste_edit = QPlainTextEdit()
        self.paste_edit.setPlaceholderText("Paste an answer here: text with links or [1] markers, or the JSON "
                                           '{"response": ..., "citations": [...]}. Or drop files here.')
        self.run_name_edit = QLineEdit()
        self.run_name_edit.setPlaceholderText("Run name (optional)")
        self.run_name_edit.setToolTip("A name for the next run, shown in Runs and in its reports")
        il.addWidget(self.run_name_edit)
        il.addWidget(QLabel("Question"))
        il.addWidget(self.question_edit)
        il.addWidget(QLabel("Model"))
        il.addWidget(self.model_edit)
        il.addWidget(QLabel("Answer"))
        il.addWidget(self.paste_edit, 1)
        self.batch_label = plain_label("No batch loaded: the pasted answer will be audited.")
        il.addWidget(self.batch_label)
        row = QHBoxLayout()
        self.open_file_btn = QPushButton("Open file…")
        self.open_file_btn.clicked.connect(self.open_file_dialog)
        self.open_folder_btn = QPushButton("Open folder…")
        self.open_folder_btn.clicked.connect(self.open_folder_dialog)
        self.clear_batch_btn = QPushButton("Clear batch")
        self.clear_batch_btn.clicked.connect(self.clear_batch)
        for b in (self.open_file_btn, self.open_folder_btn, self.clear_batch_btn):
            row.addWidget(b)
        il.addLayout(row)
        row = QHBoxLayout()
        self.audit_btn = QPushButton("Audit")
        self.audit_btn.setDefault(True)
        self.audit_btn.clicked.connect(self.start_audit)
        self.cancel_btn = QPushButton("Cancel")
        self.cancel_btn.setEnabled(False)
        self.cancel_btn.clicked.connect(self.cancel_audit)
        row.addWidget(self.audit_btn, 2)
        row.addWidget(self.cancel_btn, 1)
        il.addLayout(row)
        self.left_tabs.addTab(inp, "Input")

        runs = QWidget()
        rl = QVBoxLayout(runs)
        self.runs_model = RunsModel(self)
        self.runs_table = _table(self.runs_model)
        self.runs_table.horizontalHeader().setTextElideMode(Qt.TextElideMode.ElideRight)
        for col, width in enumerate((150, 110, 80, 70)):
            self.runs_table.setColumnWidth(col, width)
        self.runs_table.doubleClicked.connect(lambda idx: self.open_run(self.runs_model.rows[idx.row()].id))
        rl.addWidget(self.runs_table, 1)
        row = QHBoxLayout()
        b = QPushButton("Open")
        b.clicked.connect(self._open_selected_run)
        row.addWidget(b)
        self.resume_btn = QPushButton("Resume")
        self.resume_btn.clicked.connect(self._resume_selected_run)
        row.addWidget(self.resume_btn)
        b = QPushButton("Refresh")
        b.clicked.connect(self.refresh_runs)
        row.addWidget(b)
        rl.addLayout(row)
        self.label_run_btn = QPushButton("Name and note…")
        self.label_run_btn.setToolTip("Name the selected run and write a note on it (shown here and in its reports)")
        self.label_run_btn.clicked.connect(self.label_selected_run)
        rl.addWidget(self.label_run_btn)
        self.refetch_btn = QPushButton("Fetch sources again")
        self.refetch_btn.setToolTip("Audit the selected run's answers again with every source fetched anew (not "
                                    "from the cache), under the current Settings: hosts allowed since, pages "
                                    "that were down, and pages changed since are read again")
        self.refetch_btn.clicked.connect(self._refetch_selected_run)
        rl.addWidget(self.refetch_btn)
        self.left_tabs.addTab(runs, "Runs")

        # right: metrics, responses, details
        right = QWidget()
        rl = QVBoxLayout(right)
        rl.setContentsMargins(0, 0, 0, 0)
        self.metrics_bar = MetricsBar()
        self.metrics_bar.overrides_toggled.connect(lambda _: self.reload_run())
        rl.addWidget(self.metrics_bar)
        vsplit = QSplitter(Qt.Orientation.Vertical)
        rl.addWidget(vsplit, 1)
        top = QWidget()
        tl = QVBoxLayout(top)
        tl.setContentsMargins(0, 0, 0, 0)
        self.search_edit = QLineEdit()
        placeholder_with_tooltip(self.search_edit, "Filter responses: id, model, question, problem…")
        self.search_edit.setClearButtonEnabled(True)
        frow = QHBoxLayout()
        frow.addWidget(self.search_edit, 3)
        self.facets = FacetBar()
        frow.addWidget(self.facets, 5)
        tl.addLayout(frow)
        self.responses_model = ResponsesModel(self)
        self.responses_proxy = SortFilterProxy(self)
        self.responses_proxy.setSourceModel(self.responses_model)
        self.responses_proxy.set_row_filter(self.facets.accepts)
        self.facets.changed.connect(self.responses_proxy.invalidateRowsFilter)
        self.search_edit.textChanged.connect(self.responses_proxy.setFilterFixedString)
        self.responses_table = _table(self.responses_proxy)
        self.responses_table.setSortingEnabled(True)
        self.responses_table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # input order
        for col, width in enumerate((150, 120, 50, 70, 130, 100)):
            self.responses_table.setColumnWidth(col, width)
        self.responses_table.selectionModel().currentRowChanged.connect(self._on_response_changed)
        tl.addWidget(self.responses_table)
        vsplit.addWidget(top)

        self.detail_tabs = QTabWidget()
        vsplit.addWidget(self.detail_tabs)
        vsplit.setSizes([200, 300])
        top.setMinimumHeight(RESPONSES_MIN_HEIGHT)
        self.detail_tabs.setMinimumHeight(DETAILS_MIN_HEIGHT)
        vsplit.setCollapsible(0, False)
        vsplit.setCollapsible(1, False)
        self.results_vsplit = vsplit

        # answer
        ans = QWidget()
        al = QVBoxLayout(ans)
        self.question_label = plain_label()
        al.addWidget(self.question_label)
        self.answer_view = AnswerView()
        self.answer_view.statement_clicked.connect(self.show_statement_card)
        self.answer_view.marker_clicked.connect(self.show_marker_card)
        # a statement's card beside the answer: its verdict against each cited source, with the quote
        asplit = QSplitter(Qt.Orientation.Horizontal)
        asplit.addWidget(self.answer_view)
        self.statement_card = QPlainTextEdit()
        self.statement_card.setReadOnly(True)
        self.statement_card.setPlaceholderText(CARD_HINT)
        asplit.addWidget(self.statement_card)
        asplit.setSizes([600, 360])
        al.addWidget(asplit, 1)
        legend = "   ".join(f"{m} {w}" for m, w in STATUS_MARK.values())
        al.addWidget(plain_label(legend, selectable=False))
        self.detail_tabs.addTab(ans, "Answer")

        # sources
        src = QWidget()
        sl = QVBoxLayout(src)
        self.sources_model = SourcesModel(self)
        self.sources_table = _table(self.sources_model)
        for col, width in enumerate((30, 200, 100, 150, 130, 150, 120, 100)):
            self.sources_table.setColumnWidth(col, width)
        self.sources_table.doubleClicked.connect(lambda idx: self.open_source_in_browser(idx.row()))
        sl.addWidget(self.sources_table, 1)
        b = QPushButton("Open in browser")
        b.clicked.connect(lambda: self.open_source_in_browser(self.sources_table.currentIndex().row()))
        sl.addWidget(b, 0, Qt.AlignmentFlag.AlignLeft)
        self.detail_tabs.addTab(src, "Sources")

        # support matrix with the pair detail and review controls
        msplit = QSplitter(Qt.Orientation.Horizontal)
        self.matrix_model = MatrixModel(self)
        self.matrix_table = QTableView()
        self.matrix_table.setModel(self.matrix_model)
        self.matrix_table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.matrix_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.matrix_table.verticalHeader().setMaximumWidth(210)
        # headers hold the whole statement and the page title: cut with "…", whole in the tooltip
        self.matrix_table.verticalHeader().setTextElideMode(Qt.TextElideMode.ElideRight)
        self.matrix_table.horizontalHeader().setTextElideMode(Qt.TextElideMode.ElideRight)
        self.matrix_table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Fixed)
        self.matrix_table.verticalHeader().setDefaultSectionSize(24)
        self.matrix_table.horizontalHeader().setDefaultSectionSize(150)
        self.matrix_table.horizontalHeader().setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.matrix_table.clicked.connect(self._on_matrix_clicked)
        self.matrix_table.selectionModel().currentChanged.connect(lambda cur, _: self._on_matrix_clicked(cur))
        msplit.addWidget(self.matrix_table)
        detail = QWidget()
        dl = QVBoxLayout(detail)
        dl.setContentsMargins(4, 0, 0, 0)
        self.pair_statement = plain_label(PAIR_HINT)
        self.pair_source = plain_label()
        self.pair_verdicts = plain_label()
        self.pair_quote = plain_label()
        self.pair_review = plain_label()
        for w in (self.pair_statement, self.pair_source, self.pair_verdicts, self.pair_quote, self.pair_review):
            dl.addWidget(w)
        self.reason_edit = QLineEdit()
        self.reason_edit.setPlaceholderText("Reason for your label (optional)")
        dl.addWidget(self.reason_edit)
        rrow = QHBoxLayout()
        self.review_buttons: dict[str, QPushButton] = {}
        for key, text, tip in ((review.ReviewLabel.SUPPORTED.value, "✓ Supported", "S in review mode"),
                               (review.ReviewLabel.NOT_SUPPORTED.value, "✗ Not supported", "N in review mode"),
                               (review.ReviewLabel.UNSURE.value, "? Unsure", "U in review mode")):
            btn = QPushButton(text)
            btn.setToolTip(f"Override the verdict: {text[2:].lower()} ({tip})")
            btn.setEnabled(False)
            btn.clicked.connect(lambda _=False, k=key: self.review_current(k))
            rrow.addWidget(btn)
            self.review_buttons[key] = btn
        prev_btn = QPushButton("◀")
        prev_btn.setToolTip("Previous pair (K)")
        prev_btn.clicked.connect(lambda: self.step_pair(-1))
        prev_btn.setMaximumWidth(36)
        next_btn = QPushButton("▶")
        next_btn.setToolTip("Next pair (J)")
        next_btn.clicked.connect(lambda: self.step_pair(1))
        next_btn.setMaximumWidth(36)
        rrow.addWidget(prev_btn)
        rrow.addWidget(next_btn)
        dl.addLayout(rrow)
        self.source_viewer = SourceViewer()
        dl.addWidget(self.source_viewer, 1)
        msplit.addWidget(detail)
        msplit.setSizes([560, 420])
        self.detail_tabs.addTab(msplit, "Support matrix")

        # suggestions (SourceCleanup)
        sugg_page = QWidget()
        spl = QVBoxLayout(sugg_page)
        spl.setContentsMargins(0, 0, 0, 0)
        srow = QHBoxLayout()
        self.suggest_btn = QPushButton("Suggest fixes…")
        self.suggest_btn.setToolTip("SourceCleanup: an LLM rewrites each unsupported statement so its source "
                                    "supports it (or suggests deleting it); the run's judges verify every rewrite")
        self.suggest_btn.clicked.connect(lambda: self.suggest_fixes())
        srow.addWidget(self.suggest_btn)
        self.cleanup_label = plain_label(selectable=False)
        srow.addWidget(self.cleanup_label, 1)
        spl.addLayout(srow)
        self.sugg_stack = QStackedWidget()
        spl.addWidget(self.sugg_stack, 1)
        self.sugg_empty = plain_label(NO_SUGGESTIONS, selectable=False)
        self.sugg_empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.sugg_stack.addWidget(self.sugg_empty)
        sugg = QWidget()
        gl = QVBoxLayout(sugg)
        self.sugg_model = SuggestionsModel(self)
        self.sugg_table = _table(self.sugg_model)
        self.sugg_table.selectionModel().currentRowChanged.connect(lambda cur, _: self._show_suggestion(cur.row()))
        gl.addWidget(self.sugg_table, 1)
        self.sugg_diff = QPlainTextEdit()
        self.sugg_diff.setReadOnly(True)
        self.sugg_diff.setMaximumHeight(90)
        gl.addWidget(self.sugg_diff)
        row = QHBoxLayout()
        self.accept_btn = QPushButton("✓ Accept")
        self.accept_btn.clicked.connect(lambda: self.decide_current_suggestion(Decision.ACCEPTED))
        self.reject_btn = QPushButton("✗ Reject")
        self.reject_btn.clicked.connect(lambda: self.decide_current_suggestion(Decision.REJECTED))
        row.addWidget(self.accept_btn)
        row.addWidget(self.reject_btn)
        row.addStretch(1)
        gl.addLayout(row)
        gl.addWidget(QLabel("Revised answer"))
        self.revised_edit = QPlainTextEdit()
        self.revised_edit.setReadOnly(True)
        gl.addWidget(self.revised_edit, 1)
        row = QHBoxLayout()
        b = QPushButton("Copy")
        b.clicked.connect(lambda: QGuiApplication.clipboard().setText(self.revised_edit.toPlainText()))
        row.addWidget(b)
        b = QPushButton("Save revised answer…")
        b.clicked.connect(self._save_revised)
        row.addWidget(b)
        row.addStretch(1)
        gl.addLayout(row)
        self.sugg_stack.addWidget(sugg)
        self.detail_tabs.addTab(sugg_page, "Suggestions")

        splitter.addWidget(right)
        splitter.setSizes([260, 1020])
        splitter.setStretchFactor(1, 1)
        # neither side can be dragged shut or squeezed below what it needs to be read
        self.left_tabs.setMinimumWidth(LEFT_MIN_WIDTH)
        right.setMinimumWidth(RIGHT_MIN_WIDTH)
        splitter.setCollapsible(0, False)
        splitter.setCollapsible(1, False)
        self.results_splitter = splitter

        self.benchmark_page = BenchmarkPage(self)
        self.pages.addTab(self.benchmark_page, "Benchmark")
        self.compare_page = ComparePage(self)
        self.pages.addTab(self.compare_page, "Compare runs")
        self.sample_page = SamplePage(self)
        self.pages.addTab(self.sample_page, "Review sample")
        self.pages.currentChanged.connect(self._on_page_changed)

        # status bar: progress of a run
        self.progress_bar = QProgressBar()
        self.progress_bar.setMaximumWidth(260)
        self.progress_bar.setVisible(False)
        # messages ("Report written to …", "Labelled …", review-mode keys) have a label of their own, so
        # a run's long progress line never hides them; the progress line sits beside its bar
        self.message_label = ElidedLabel(min_chars=20)
        self.statusBar().addWidget(self.message_label, 1)
        self._message_timer = QTimer(self)
        self._message_timer.setSingleShot(True)
        self._message_timer.timeout.connect(self.message_label.clear)
        self.progress_label = ElidedLabel(min_chars=12)
        self.progress_label.setMaximumWidth(720)
        self.statusBar().addPermanentWidget(self.progress_label)
        self.statusBar().addPermanentWidget(self.progress_bar)
        # a report being written (PDF takes seconds): a busy bar of its own, apart from the run's progress
        self.export_label = plain_label(selectable=False)
        self.export_bar = QProgressBar()
        self.export_bar.setRange(0, 0)
        self.export_bar.setMaximumWidth(120)
        self.export_bar.setVisible(False)
        self.statusBar().addPermanentWidget(self.export_label)
        self.statusBar().addPermanentWidget(self.export_bar)
        # after an export: open what was written (hidden until then)
        self.last_report: Path | None = None
        self.open_report_btn = QPushButton("Open report")
        self.open_report_btn.setFlat(True)
        self.open_report_btn.setVisible(False)
        self.open_report_btn.clicked.connect(self.open_last_report)
        self.statusBar().addPermanentWidget(self.open_report_btn)

    def _action(self, text: str, slot: Callable[[], object], shortcut: str | QKeySequence.StandardKey | None = None,
                *, checkable: bool = False) -> QAction:
        act = QAction(text, self)
        if shortcut is not None:
            act.setShortcut(QKeySequence(shortcut))
        act.setCheckable(checkable)
        act.triggered.connect(lambda checked=False: slot())
        return act

    def _build_menus(self) -> None:
        bar = self.menuBar()
        m = bar.addMenu("&File")
        m.addAction(self._action("Open answers &file…", self.open_file_dialog, QKeySequence.StandardKey.Open))
        m.addAction(self._action("Open answers f&older…", self.open_folder_dialog, "Ctrl+Shift+O"))
        m.addSeparator()
        m.addAction(self._action("Open &database…", self.open_database_dialog, "Ctrl+Shift+D"))
        m.addAction(self._action("&New database…", self.new_database_dialog))
        self.recent_db_menu = m.addMenu("Recent databases")
        self.recent_runs_menu = m.addMenu("Recent runs")
        self.recent_db_menu.aboutToShow.connect(self._fill_recent_dbs)
        self.recent_runs_menu.aboutToShow.connect(self._fill_recent_runs)
        m.addSeparator()
        ex = m.addMenu("&Export run")
        ex.addAction(self._action("HTML report…", lambda: self.export_dialog("html"), "Ctrl+E"))
        ex.addAction(self._action("PDF report…", lambda: self.export_dialog("pdf"), "Ctrl+Shift+E"))
        ex.addAction(self._action("Excel workbook (xlsx)…", lambda: self.export_dialog("xlsx")))
        ex.addAction(self._action("JSON…", lambda: self.export_dialog("json")))
        ex.addAction(self._action("CSV…", lambda: self.export_dialog("csv")))
        m.addSeparator()
        m.addAction(self._action("Settings…", self.open_settings, QKeySequence.StandardKey.Preferences))
        m.addAction(self._action("&Quit", self.close, QKeySequence.StandardKey.Quit))

        m = bar.addMenu("&Audit")
        self.audit_action = self._action("&Audit", self.start_audit, "Ctrl+Return")
        m.addAction(self.audit_action)
        self.cancel_action = self._action("&Cancel run", self.cancel_audit, "Ctrl+.")
        self.cancel_action.setEnabled(False)
        m.addAction(self.cancel_action)
        m.addAction(self._action("&Resume selected run", self._resume_selected_run, "Ctrl+Shift+R"))
        m.addAction(self._action("Suggest &fixes…", self.suggest_fixes))
        m.addAction(self._action("Fetch sources &again (selected run)", self._refetch_selected_run))
        m.addAction(self._action("Show &runs", lambda: self._show_left(1), "Ctrl+2"))
        m.addAction(self._action("Show &input", lambda: self._show_left(0), "Ctrl+1"))
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
        self.overrides_action = self._action("Metrics &with overrides", lambda: self.metrics_bar.with_overrides.toggle(),
                                             "Ctrl+Shift+V")
        m.addAction(self.overrides_action)
        m.addAction(self._action("Review &sample…", lambda: self.pages.setCurrentWidget(self.sample_page),
                                 "Ctrl+Shift+S"))
        m.addAction(self._action("Change reviewer name…", lambda: self.ask_reviewer(force=True)))

        m = bar.addMenu("&Help")
        m.addAction(self._action("&About SourceCheckup", lambda: show_about(self), "F1"))

        tb = self.addToolBar("Main")
        tb.setObjectName("main-toolbar")
        tb.setMovable(False)
        for act in (self.audit_action, self.cancel_action):
            tb.addAction(act)
        tb.addSeparator()
        tb.addAction(self._action("Export…", lambda: self.export_dialog(None)))
        tb.addAction(self.review_mode_action)
        tb.addAction(self._action("Settings", self.open_settings))

    def _build_review_shortcuts(self) -> None:
        self.review_shortcuts: list[QShortcut] = []
        keys = {"S": lambda: self.review_current("supported"), "N": lambda: self.review_current("not_supported"),
                "U": lambda: self.review_current("unsure"), "J": lambda: self.step_pair(1),
                "K": lambda: self.step_pair(-1), "Right": lambda: self.step_pair(1),
                "Left": lambda: self.step_pair(-1)}
        for key, fn in keys.items():
            sc = QShortcut(QKeySequence(key), self)
            sc.activated.connect(fn)
            sc.setEnabled(False)
            self.review_shortcuts.append(sc)

    # ------------------------------------------------------------------------ database
    def _update_title(self) -> None:
        self.setWindowTitle(f"SourceCheckup — {self.db_path.name}" + (f" — run {self.run_id}" if self.run_id else ""))

    def open_database(self, path: str | Path) -> bool:
        if self.worker is not None or self.benchmark_page.worker is not None:
            self._warn("A run is in progress", "Cancel or finish the running audit before switching databases.")
            return False
        try:
            store = Store(path)
        except StoreError as exc:
            self._warn("Cannot open database", str(exc))
            return False
        self.store.close()
        self.store = store
        self.db_path = Path(path)
        self.settings.add_recent("databases", str(self.db_path))
        self.view = None
        self.run_id = None
        self._clear_results()
        self.benchmark_page.clear()
        self._update_title()
        self.refresh_runs()
        self._on_page_changed(self.pages.currentIndex())
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
            self.recent_db_menu.addAction(p, lambda p=p: self.open_database(p))

    def _fill_recent_runs(self) -> None:
        self.recent_runs_menu.clear()
        for entry in self.settings.recent("runs"):
            db, _, rid = entry.rpartition("::")
            self.recent_runs_menu.addAction(f"{rid} ({Path(db).name})", lambda db=db, rid=rid: self._open_recent(db, rid))

    def _open_recent(self, db: str, rid: str) -> None:
        if Path(db) != self.db_path and not self.open_database(db):
            return
        self.open_run(rid)

    # ------------------------------------------------------------------------ runs
    def refresh_runs(self) -> None:
        self.reader.submit("runs", self.db_path, run_summaries, self._on_runs_listed,
                           lambda msg: self._status(f"could not list runs: {msg}"))

    def _on_runs_listed(self, runs: list) -> None:
        self.runs_model.set_rows(runs)
        self.compare_page.set_runs(runs)

    def _show_left(self, index: int) -> None:
        self.pages.setCurrentIndex(0)
        self.left_tabs.setCurrentIndex(index)

    def show_run(self, run_id: str) -> None:
        """Switch to the Results page and show a run (the Benchmark page's audit run, say)."""
        self.pages.setCurrentIndex(0)
        self.open_run(run_id)

    def _on_page_changed(self, index: int) -> None:
        page = self.pages.widget(index)
        if page is self.sample_page:
            self.sample_page.refresh()
        elif page is self.benchmark_page:
            self.benchmark_page.refresh_benches()
        elif page is self.compare_page:
            self.refresh_runs()

    def _selected_run_id(self) -> str | None:
        idx = self.runs_table.currentIndex()
        row = self.runs_model.row_at(idx.row()) if idx.isValid() else None
        return row.id if row else self.run_id

    def _open_selected_run(self) -> None:
        rid = self._selected_run_id()
        if rid:
            self.open_run(rid)

    def open_run(self, run_id: str) -> None:
        """Show a stored run; the loading happens off the GUI thread and run_shown fires when on screen."""
        if run_id != self.run_id:
            self.response_pk = None
            self._clear_pair_detail()   # never show (or let a reviewer label) another run's pair
        self.run_id = run_id
        self.settings.add_recent("runs", f"{self.db_path}::{run_id}")
        self._update_title()
        self.reload_run()

    def reload_run(self) -> None:
        if not self.run_id:
            return
        with_overrides = self.metrics_bar.with_overrides.isChecked()
        rid = self.run_id
        self._dirty = False
        started = time.monotonic()

        def load(st: Store) -> tuple[RunView, dict]:
            view = load_run_view(st, rid, with_overrides=with_overrides)
            usage = run_usage(st, rid)
            self._last_load_s = time.monotonic() - started
            return view, usage

        self.reader.submit("run", self.db_path, load, self._on_loaded,
                           lambda msg: self._warn("Cannot open run", msg))

    def _on_loaded(self, result: tuple[RunView, dict]) -> None:
        view, self.usage = result
        self._on_run_loaded(view)

    def _on_run_loaded(self, view: RunView) -> None:
        if view.data.run.id != self.run_id:
            return
        self._last_load_at = time.monotonic()
        self.view = view
        self.pairs = review_pairs(view, review_first=True)
        self.metrics_bar.show_metrics(view.metrics, len(view.overrides), view.data.run.status, self.cost_text(),
                                      view.data.run.judges)
        keep = self.response_pk
        self.responses_model.set_rows(view.summaries)
        self.facets.set_rows(view.summaries)
        self.facets.show_review_progress(*review_progress(view))
        if view.summaries:
            pks = [s.response_pk for s in view.summaries]
            self.select_response(keep if keep in pks else pks[0])
        else:
            self._clear_details()
        if self.pages.currentWidget() is self.sample_page and (
                self.sample_page.sample is None or self.sample_page.sample.run_id != view.data.run.id):
            self.sample_page.refresh()
        self.run_shown.emit(view.data.run.id)

    def label_selected_run(self) -> bool:
        """Ask for the selected run's name and note and store them."""
        rid = self._selected_run_id()
        if not rid:
            self._status("Select a run in the Runs list first")
            return False
        dialog = RunLabelDialog(self.store.get_run(rid), self)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return False
        self.set_run_label(rid, dialog.name(), dialog.note())
        return True

    def set_run_label(self, run_id: str, name: str, note: str) -> None:
        run = self.store.set_run_label(run_id, name=name, note=note)
        self._status(f"Run {run.id} named “{run.name}”" if run.name else f"Run {run.id}: note saved")
        self._update_title()
        self.refresh_runs()

    def _resume_selected_run(self) -> None:
        rid = self._selected_run_id()
        if not rid:
            return
        run = self.store.get_run(rid)
        if run.status == "completed":
            self._status(f"run {rid} is already complete")
            return
        self.resume_run(rid)

    # ------------------------------------------------------------------------ inputs
    def open_file_dialog(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(
            self, "Open answers", "", "Answers (*.json *.jsonl *.ndjson *.csv *.tsv *.md *.markdown *.txt);;All files (*)")
        if paths:
            self.load_files(paths)

    def open_folder_dialog(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Open a folder of answers")
        if path:
            self.load_files([path])

    def ask_csv_mapping(self, path: str | Path) -> CsvMapping | None:
        dialog = CsvMappingDialog(path, self)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return None
        return dialog.mapping()

    def load_files(self, paths: list[str | Path]) -> IngestResult:
        """Read answer files or folders into the pending batch (audited on the next Audit)."""
        added = IngestResult()
        names = []
        for p in paths:
            p = Path(p)
            mapping = None
            if p.is_file() and p.suffix.lower() in TABLE_EXTENSIONS:
                mapping = self.ask_csv_mapping(p)
                if mapping is None:
                    continue
            try:
                # the Question and Model fields belong to the pasted answer: a file keeps its own fields
                part = load_path(p, mapping=mapping)
            except (IngestError, OSError) as exc:
                self._warn("Cannot read the file", str(exc))
                continue
            added.extend(part)
            names.append(p.name)
        if names:
            self.pending.extend(added)
            self.pending_label = ", ".join(filter(None, [self.pending_label, *names]))
            self._show_batch()
            self._show_left(0)
        return added

    def clear_batch(self) -> None:
        self.pending = IngestResult()
        self.pending_label = ""
        self._show_batch()

    def _show_batch(self) -> None:
        n, k = len(self.pending.responses), len(self.pending.skipped)
        if not n and not k:
            self.batch_label.setText("No batch loaded: the pasted answer will be audited.")
            return
        text = (f"Batch: {n} answers from {self.pending_label} (each with the question and model its file gives; "
                "the fields above apply to a pasted answer only)")
        if k:
            text += f"; {k} skipped: " + "; ".join(f"{s.origin}: {s.problem}" for s in self.pending.skipped[:3])
        self.batch_label.setText(text)

    def dragEnterEvent(self, event: QDragEnterEvent) -> None:
        if event.mimeData().hasUrls() and all(u.isLocalFile() for u in event.mimeData().urls()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dropEvent(self, event: QDropEvent) -> None:
        paths = [u.toLocalFile() for u in event.mimeData().urls() if u.isLocalFile()]
        if paths:
            event.acceptProposedAction()
            self.load_files(paths)

    def collect_inputs(self) -> tuple[IngestResult, str] | None:
        if self.pending.responses or self.pending.skipped:
            return self.pending, self.pending_label
        text = self.paste_edit.toPlainText()
        if not text.strip():
            self._warn("Nothing to audit", "Paste an answer, or open a file or a folder of answers.")
            return None
        try:
            result = load_text(text, question=self.question_edit.text().strip() or None,
                               model=self.model_edit.text().strip() or None, name_by_words=True)
        except IngestError as exc:
            self._warn("Cannot read the pasted answer", str(exc))
            return None
        return result, "pasted answer"

    # ------------------------------------------------------------------------ audit
    def start_audit(self) -> bool:
        if self.worker is not None:
            return False
        got = self.collect_inputs()
        if got is None:
            return False
        result, label = got
        if not result.responses:
            self._warn("No answers found", "; ".join(f"{s.origin}: {s.problem}" for s in result.skipped) or
                       "The input held no answers.")
            return False
        if not self.judges_ready(self.settings.judges):
            return False
        self._next_run_name = self.run_name_edit.text().strip()
        self._start_worker(AuditThread(self.db_path, self.settings.run_config(), responses=result.responses,
                                       skipped=result.skipped, label=label, parent=self))
        self.run_name_edit.clear()
        self.clear_batch()
        return True

    def judge_problems(self, judges: list[str]) -> list[str]:
        return [p for p in (validate_judge_spec(j) for j in judges) if p]

    def judges_ready(self, judges: list[str]) -> bool:
        """Check the judge specs (and their API keys) before a run starts; say how to fix them."""
        problems = self.judge_problems(judges)
        if problems:
            self._warn("Judge settings need fixing", "\n".join(problems) +
                       "\n\nFix them in Settings → Judges (File → Settings…), then start again.")
        return not problems

    def resume_run(self, run_id: str) -> bool:
        """Resume a run with its stored settings; when its judge settings cannot run (a bad spec, a
        missing key) it resumes with the judges in Settings, once those are valid."""
        if self.worker is not None:
            return False
        run = self.store.get_run(run_id)
        config = RunConfig.from_dict(run.config)
        replace = False
        if self.judge_problems(config.judges):
            if not self.judges_ready(self.settings.judges):
                return False
            config.judges = list(self.settings.judges)
            replace = True
            self._status(f"Resuming run {run.id} with the judges in Settings: {', '.join(config.judges)}")
        self.open_run(run.id)
        self._start_worker(AuditThread(self.db_path, config, resume_run=run.id, replace_config=replace,
                                       parent=self))
        return True

    def _refetch_selected_run(self) -> None:
        rid = self._selected_run_id()
        if rid:
            self.refetch_run(rid)

    def refetch_run(self, run_id: str) -> bool:
        """"Fetch sources again": a new run over the run's answers with every source fetched anew
        (refetch=True) under the current fetch settings, through the Audit worker.

        The one place the app asks for a refetch, so it can switch to an engine call made for it."""
        if self.worker is not None:
            return False
        run = self.store.get_run(run_id)
        responses = [row.response for row in self.store.responses(run.id)]
        if not responses:
            self._warn("Nothing to fetch", f"Run {run.id} holds no answers.")
            return False
        config = RunConfig.from_dict(run.config)
        if self.judge_problems(config.judges):
            if not self.judges_ready(self.settings.judges):
                return False
            config.judges = list(self.settings.judges)
        config.fetch = self.settings.fetch_options()   # hosts allowed (or a source pack set) since then
        config.refetch = True
        self._status(f"Fetching the sources of run {run.id} again")
        self._start_worker(AuditThread(self.db_path, config, responses=responses,
                                       label=f"{run.input} (sources fetched again from run {run.id})", parent=self))
        return True

    def _start_worker(self, worker: AuditThread) -> None:
        self.worker = worker
        worker.progress.connect(self._on_progress)
        worker.run_started.connect(self._on_run_started)
        worker.loading.connect(self.progress_label.setText)
        worker.done.connect(self._on_audit_done)
        self.audit_btn.setEnabled(False)
        self.audit_action.setEnabled(False)
        self.cancel_btn.setEnabled(True)
        self.cancel_action.setEnabled(True)
        self.progress_bar.setVisible(True)
        self.progress_bar.setRange(0, 0)
        self.progress_label.setText("Starting…")
        self._run_started_at = time.monotonic()
        self.live_timer.start()
        worker.start()

    def _on_run_started(self, run_id: str) -> None:
        if self._next_run_name:
            self.store.set_run_label(run_id, name=self._next_run_name)
            self._next_run_name = ""
        self.open_run(run_id)
        self.refresh_runs()

    def _on_progress(self, ev: ProgressEvent) -> None:
        self._dirty = True
        total = ev.pairs_total or ev.sources_total
        done = ev.pairs_done if ev.pairs_total else ev.sources_done
        if total:
            self.progress_bar.setRange(0, total)
            self.progress_bar.setValue(min(done, total))
        elapsed = time.monotonic() - self._run_started_at
        eta = ""
        if ev.pairs_total and ev.pairs_done and ev.pairs_done < ev.pairs_total:
            eta = f" · about {elapsed / ev.pairs_done * (ev.pairs_total - ev.pairs_done):.0f} s left"
            cost = self.cost_so_far()
            if cost:   # extrapolated from the pairs judged so far
                eta += f" · est. cost ${cost / ev.pairs_done * ev.pairs_total:.2f}"
        self.progress_label.setText(
            f"Responses {ev.responses_done}/{ev.responses_total} · sources fetched {ev.sources_done}/"
            f"{ev.sources_total} · pairs judged {ev.pairs_done}/{ev.pairs_total} · fetch failures "
            f"{ev.fetch_failures} · judge errors {ev.judge_errors} · {elapsed:.0f} s{eta}")

    def cost_so_far(self) -> float | None:
        """USD spent by the run's judges so far (engine estimate); None when a model has no price."""
        costs = [u.get("cost_usd") for u in self.usage.values()]
        return None if any(c is None for c in costs) else float(sum(costs))  # type: ignore[arg-type]

    def cost_text(self) -> str:
        cost = self.cost_so_far()
        if cost is None:
            return "cost unknown (a model is not in prices.json)"
        return "no API cost" if cost == 0 else f"judge cost ${cost:.4f}"

    def _live_refresh(self) -> None:
        # a big run takes a while to load: refresh less often so the engine keeps the CPU
        if self._dirty and self.run_id and not self.reader.busy("run") and \
                time.monotonic() - self._last_load_at >= 4 * self._last_load_s:
            self.reload_run()

    def cancel_audit(self) -> None:
        if self.worker is not None:
            self.worker.cancel()
            self.cancel_btn.setEnabled(False)
            self.cancel_action.setEnabled(False)
            self.progress_label.setText("Cancelling: finishing the pairs in flight…")

    def _on_audit_done(self, run_id: str, status: str, message: str) -> None:
        worker = self.worker
        self.worker = None
        if worker is not None:
            worker.wait(5000)
            worker.deleteLater()
        self.live_timer.stop()
        self.audit_btn.setEnabled(True)
        self.audit_action.setEnabled(True)
        self.cancel_btn.setEnabled(False)
        self.cancel_action.setEnabled(False)
        self.progress_bar.setVisible(False)
        hint = " It can be resumed from the Runs tab." if status in ("cancelled", "failed") else ""
        self.progress_label.setText(f"Run {run_id} {status}" + (f": {message}" if message else "") + "." + hint)
        self.audit_finished.emit(run_id, status)
        if self._closing:
            self.close()
            return
        if run_id:
            self.run_id = run_id
            self.reload_run()
        self.refresh_runs()

    # ------------------------------------------------------------------------ results
    def _clear_results(self) -> None:
        self.metrics_bar.clear()
        self.responses_model.set_rows([])
        self.facets.set_rows([])
        self.facets.clear_progress()
        self._clear_details()

    def _clear_details(self) -> None:
        self.answer_view.clear()
        self.statement_card.clear()
        self.question_label.setText("")
        self.sources_model.set_rows([])
        from sourcecheckup.views.matrix import SupportMatrix

        self.matrix_model.set_matrix(SupportMatrix([], [], {}))
        self.sugg_model.set_rows([])
        self.sugg_stack.setCurrentIndex(0)
        self._clear_pair_detail()

    def _clear_pair_detail(self) -> None:
        """The matrix detail panel back to empty, its review buttons off."""
        self.pair_statement.setText(PAIR_HINT)
        for w in (self.pair_source, self.pair_verdicts, self.pair_quote, self.pair_review):
            w.setText("")
        for b in self.review_buttons.values():
            b.setEnabled(False)
        self.reason_edit.clear()
        self.source_viewer.show_source("")

    def _redraw(self) -> None:
        if self.view is not None:
            self._on_run_loaded(self.view)

    def select_response(self, response_pk: int) -> None:
        for row, s in enumerate(self.responses_model.rows):
            if s.response_pk == response_pk:
                idx = self.responses_proxy.mapFromSource(self.responses_model.index(row, 0))
                if idx.isValid():
                    with QSignalBlocker(self.responses_table.selectionModel()):
                        self.responses_table.setCurrentIndex(idx)
                    self.responses_table.viewport().update()
                    self.responses_table.scrollTo(idx)
                self.show_response(response_pk)
                return

    def _on_response_changed(self, current: QModelIndex, _prev: QModelIndex) -> None:
        if not current.isValid():
            return
        src = self.responses_proxy.mapToSource(current)
        summary = self.responses_model.row_at(src.row())
        if summary is not None and summary.response_pk != self.response_pk:
            self.show_response(summary.response_pk)

    def show_response(self, response_pk: int) -> None:
        view = self.view
        if view is None:
            return
        a = view.assessment(response_pk)
        if a is None:
            return
        self.response_pk = response_pk
        resp = next(r for r in view.data.responses if r.pk == response_pk).response
        q = resp.question or "(no question given)"
        self.question_label.setText(f"Question: {q}   ·   Model: {resp.model or 'unknown'}   ·   {resp.origin}")
        self.answer_view.show_answer(resp.text, a.statements)
        self.statement_card.clear()
        self.sources_model.set_rows(source_summaries(view, response_pk))
        current = self.matrix_table.currentIndex()
        keep = self.matrix_model.cell(current) if current.isValid() else None
        self.matrix_model.set_matrix(support_matrix(view, response_pk))
        idx = self.matrix_model.index_of(keep.statement_pk, keep.url) if keep is not None else QModelIndex()
        if idx.isValid():
            self.matrix_table.setCurrentIndex(idx)
            self.show_cell(self.matrix_model.cell(idx))
        else:
            self._clear_pair_detail()
        self._load_suggestions()

    def _pair_lines(self, cell: MatrixCell, number: int) -> list[str]:
        view = self.view
        src_row = view.data.sources.get(cell.url) if view is not None else None
        title = f" — {src_row.source.title}" if src_row and src_row.source.title else ""
        lines = [f"[{number}] {cell.url}{title}"]
        if not cell.readable:
            outcome = src_row.source.status.plain if src_row else "not fetched yet"
            reason = reason_for_app(src_row.source.reason) if src_row and src_row.source.reason else ""
            lines.append(f"   ⊘ {outcome}" + (f": {reason}" if reason else "") + "; not judged")
            return lines
        if not cell.verdicts:
            lines.append("   … not judged yet")
        for v in cell.verdicts:
            word = verdict_word(v.verdict)
            mark = CONTRADICTED_MARK if word == "contradicted" else LABEL_MARK[v.verdict.label][0]
            lines.append(f"   {mark} {word} ({v.verdict.judge_id})" + (f": {v.verdict.rationale}"
                                                                       if v.verdict.rationale else ""))
            if v.verdict.quote:
                found = "" if v.verdict.quote_found else " (not found in the source)"
                # a judge that found no support may still name the passage it read: not evidence
                what = "quote" if v.verdict.label is Label.SUPPORTED else "closest passage"
                lines.append(f"   {what}{found}: “{v.verdict.quote}”")
        if cell.review_first:
            lines.append(f"   {REVIEW_FIRST_MARK} review first: the screening judge is unsure")
        if cell.override is not None:
            lines.append(f"   {REVIEW_MARK} reviewer: {LABEL_MARK[cell.override][1]}")
        return lines

    def show_statement_card(self, statement_pk: int) -> None:
        """The statement's verdicts against every cited source, beside the answer."""
        self._select_statement_row(statement_pk)
        matrix = self.matrix_model.matrix
        s = next((s for s in matrix.statements if s.row.pk == statement_pk), None)
        if s is None:
            return
        mark, word = STATUS_MARK[s.status]
        lines = [f"{mark} {word}: {s.row.statement.text}", ""]
        if not s.row.statement.informative:
            lines.append("Not a claim (conversation, a question or a disclaimer): not judged.")
        elif not matrix.urls:
            lines.append("The answer cites no source.")
        else:
            for i, url in enumerate(matrix.urls):
                lines += self._pair_lines(matrix.cells[(statement_pk, url)], i + 1)
        self.statement_card.setPlainText("\n".join(lines))

    def show_marker_card(self, label: str) -> None:
        """A citation marker [n]: its source, and how each statement fared against it."""
        view = self.view
        if view is None or self.response_pk is None:
            return
        resp = next(r for r in view.data.responses if r.pk == self.response_pk).response
        index = resp.markers.get(label, resp.markers.get(label.lstrip("^")))
        if index is None and label.isdigit() and 0 < int(label) <= len(resp.citations):
            index = int(label) - 1
        if index is None or not 0 <= index < len(resp.citations):
            self.statement_card.setPlainText(f"[{label}] points to no cited source in this answer.")
            return
        url = resp.citations[index]
        matrix = self.matrix_model.matrix
        if url not in matrix.urls:
            self.statement_card.setPlainText(f"[{label}] {url}")
            return
        col = matrix.urls.index(url)
        lines = [f"Source [{label}]", ""]
        for s in matrix.statements:
            if not s.row.statement.informative:
                continue
            lines.append(f"{s.row.statement.text}")
            lines += self._pair_lines(matrix.cells[(s.row.pk, url)], col + 1)[1:]
        src = self.sources_model.row_at(col)
        if src is not None and src.url == url:
            self.sources_table.selectRow(col)
        self.statement_card.setPlainText("\n".join([f"[{label}] {url}"] + lines[1:]))

    def _select_statement_row(self, statement_pk: int) -> None:
        for r, s in enumerate(self.matrix_model.matrix.statements):
            if s.row.pk == statement_pk and self.matrix_model.columnCount():
                self.matrix_table.setCurrentIndex(self.matrix_model.index(r, 0))
                return

    def open_source_in_browser(self, row: int) -> None:
        s = self.sources_model.row_at(row)
        if s is not None and s.url.lower().startswith(("http://", "https://")):
            QDesktopServices.openUrl(QUrl(s.url))

    def _on_matrix_clicked(self, index: QModelIndex) -> None:
        cell = self.matrix_model.cell(index)
        if cell is not None:
            self.show_cell(cell)

    def show_cell(self, cell: MatrixCell | None) -> None:
        """The pair's verdicts, the quote, and the source text scrolled to the quote."""
        view = self.view
        if cell is None or view is None:
            return
        statement = next((s for s in self.matrix_model.matrix.statements if s.row.pk == cell.statement_pk), None)
        st_text = statement.row.statement.text if statement else ""
        mark, word = STATUS_MARK[statement.status] if statement else ("", "")
        self.pair_statement.setText(f"Statement ({mark} {word}): {st_text}")
        src_row = view.data.sources.get(cell.url)
        title = src_row.source.title if src_row and src_row.source.title else ""
        outcome = src_row.source.status.plain if src_row else "not fetched yet"
        if src_row is not None and not src_row.source.status.readable and src_row.source.reason:
            outcome += f": {reason_for_app(src_row.source.reason)}"
        self.pair_source.setText(f"Source: {cell.url}\n{title} ({outcome})".strip())
        lines = []
        screening = False
        for v in cell.verdicts:
            vm, _ = LABEL_MARK[v.verdict.label]
            word = verdict_word(v.verdict)
            if word == "contradicted":
                vm = CONTRADICTED_MARK
            judge = v.verdict.judge_id
            if uses_screening_judge([judge]):
                screening = True
                judge += " (screening judge)"
            lines.append(f"{vm} {judge}: {word} (score {v.verdict.score:.2f}). {v.verdict.rationale}")
        if cell.review_first:
            lines.append(f"{REVIEW_FIRST_MARK} Review first: the screening judge is unsure of this pair.")
        if screening:
            lines.append(SCREENING_JUDGE_SHORT)
        if cell.disagreement:
            lines.append("≠ The judges disagree on this pair.")
        if not cell.readable:
            lines.append("⊘ The source could not be read, so this pair was not judged.")
        elif not cell.verdicts:
            lines.append("… Not judged yet.")
        self.pair_verdicts.setText("\n".join(lines))
        primary = cell.primary
        quote = primary.verdict.quote if primary else ""
        if quote:
            found = {True: "found in the source", False: "NOT found in the source", None: "not checked"}[
                primary.verdict.quote_found]  # type: ignore[union-attr]
            what = "Quote" if primary.verdict.label is Label.SUPPORTED else "Closest passage"  # type: ignore[union-attr]
            self.pair_quote.setText(f"{what} ({found}): “{quote}”")
        else:
            self.pair_quote.setText("No quote offered.")
        if cell.override is not None:
            om, ow = LABEL_MARK[cell.override]
            used = "counted" if view.with_overrides else "not counted (overrides hidden)"
            self.pair_review.setText(f"{REVIEW_MARK} Reviewer override: {om} {ow}, {used}.")
        else:
            self.pair_review.setText("")
        can_review = cell.readable and bool(statement and statement.row.statement.informative)
        for b in self.review_buttons.values():
            b.setEnabled(can_review)
        self.source_viewer.show_source(src_row.source.text if src_row else "", quote)

    def current_cell(self) -> MatrixCell | None:
        return self.matrix_model.cell(self.matrix_table.currentIndex())

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
        """Store the reviewer's label on the selected pair; metrics reload with it. On the Review
        sample page the label goes to that page's current pair, within its sample."""
        if self.pages.currentWidget() is self.sample_page:
            return self.sample_page.label_current(label)
        cell = self.current_cell()
        if cell is None or not self.run_id or not cell.readable:
            return False
        reviewer = self.ask_reviewer()
        if not reviewer:
            return False
        review.add_review(self.store, self.run_id, cell.statement_pk, cell.url, reviewer, label,
                          self.reason_edit.text().strip())
        self.reason_edit.clear()
        self._status(f"Labelled {label.replace('_', ' ')} as {reviewer}")
        if self.review_mode_action.isChecked():
            self.step_pair(1)
        self.reload_run()
        return True

    def toggle_review_mode(self) -> None:
        on = self.review_mode_action.isChecked()
        for sc in self.review_shortcuts:
            sc.setEnabled(on)
        if on and self.pages.currentWidget() is self.sample_page:
            self.ask_reviewer()
            self.sample_page.focus_pairs()
            self._status("Review mode: S supported · N not supported · U unsure · J/→ next · K/← previous")
        elif on:
            self.pages.setCurrentIndex(0)
            self.ask_reviewer()
            self.detail_tabs.setCurrentIndex(2)
            self.matrix_table.setFocus()
            if self.current_cell() is None:
                self.step_pair(1)
            self._status("Review mode: S supported · N not supported · U unsure · J/→ next · K/← previous")
        else:
            self._status("Review mode off")

    def step_pair(self, delta: int) -> None:
        if self.pages.currentWidget() is self.sample_page:
            self.sample_page.step(delta)
            return
        if not self.pairs:
            return
        cell = self.current_cell()
        pos = -1
        if cell is not None:
            pos = next((i for i, p in enumerate(self.pairs)
                        if p.statement_pk == cell.statement_pk and p.url == cell.url), -1)
        if pos < 0:
            nxt = 0 if delta > 0 else len(self.pairs) - 1
        else:
            nxt = max(0, min(len(self.pairs) - 1, pos + delta))
        pair = self.pairs[nxt]
        if pair.response_pk != self.response_pk:
            self.select_response(pair.response_pk)
        idx = self.matrix_model.index_of(pair.statement_pk, pair.url)
        if idx.isValid():
            self.detail_tabs.setCurrentIndex(2)
            self.matrix_table.setCurrentIndex(idx)
            self.matrix_table.scrollTo(idx)
            self.show_cell(self.matrix_model.cell(idx))

    # ------------------------------------------------------------------------ suggestions
    def _load_suggestions(self) -> None:
        if not self.run_id or self.response_pk is None:
            return
        self._suggestions = cleanup.suggestions(self.store, self.run_id, self.response_pk)
        with QSignalBlocker(self.sugg_table.selectionModel()):
            self.sugg_model.set_rows(self._suggestions)
        self.sugg_stack.setCurrentIndex(1 if self._suggestions else 0)
        self.sugg_diff.clear()
        self._show_revised()

    def cleanup_writer(self) -> str | None:
        """The LLM that writes suggestions: the run's first LLM judge, else the first in Settings → Judges."""
        run_judges = self.view.data.run.judges if self.view is not None else []
        return cleanup.writer_spec(run_judges) or cleanup.writer_spec(self.settings.judges)

    def suggest_fixes(self) -> bool:
        """SourceCleanup for the open run, off the GUI thread, once the user has seen the writer, the
        verifying judges and the estimated cost."""
        if not self.run_id or self.cleanup_worker is not None:
            return False
        if self.worker is not None:
            self._warn("An audit is running", "Suggest fixes once the audit has finished.")
            return False
        writer = self.cleanup_writer()
        if writer is None:
            self._warn("Suggest fixes needs an LLM", "Suggestions are written by an LLM, and neither this run's "
                       "judges nor Settings → Judges name one. Add one there, e.g. openai:gpt-4o or "
                       "openai-compatible:http://localhost:11434/v1#llama3.1.")
            return False
        problem = validate_judge_spec(writer)
        if problem:
            self._warn("Suggest fixes cannot start", f"{problem}\n\nFix it in Settings → Judges.")
            return False
        plan = cleanup.plan_cleanup(self.store, self.run_id, model_spec=writer)
        if not plan.pairs:
            self._status("No unsupported statement with a readable source: nothing to suggest")
            return False
        text = (f"Write suggestions for {plan.pairs} unsupported statement × source pair(s) of run {plan.run_id}.\n\n"
                f"Writer: {writer}\nVerified by: {', '.join(plan.verifiers)}\nEstimated cost: {plan.cost_text}\n\n"
                "Start?")
        if not self.confirm("Suggest fixes", text):
            return False
        worker = CleanupThread(self.db_path, self.run_id, writer, parent=self)
        self.cleanup_worker = worker
        worker.progress.connect(lambda ev: self.cleanup_label.setText(
            f"Suggesting fixes: {ev.pairs_done}/{ev.pairs_total} pairs"))
        worker.done.connect(self._on_cleanup_done)
        self.suggest_btn.setEnabled(False)
        self.cleanup_label.setText(f"Suggesting fixes with {writer}…")
        worker.start()
        return True

    def _on_cleanup_done(self, run_id: str, status: str, message: str) -> None:
        worker = self.cleanup_worker
        self.cleanup_worker = None
        if worker is not None:
            worker.wait(5000)
            worker.deleteLater()
        self.suggest_btn.setEnabled(True)
        self.cleanup_label.setText(f"Suggest fixes {status}: {message}")
        if status == "failed":
            self._warn("Suggest fixes failed", message)
        if run_id == self.run_id:
            self.reload_run()
        self.cleanup_finished.emit(run_id, status)

    def _show_suggestion(self, row: int) -> None:
        g = self.sugg_model.row_at(row)
        if g is None:
            return
        text = word_diff(g.original, g.suggested)
        if g.quote:
            text += f"\n\nSupporting quote: “{g.quote}”"
        text += f"\nVerification: {g.status.value.replace('_', ' ')}"
        self.sugg_diff.setPlainText(text)

    def decide_current_suggestion(self, decision: Decision | str) -> None:
        idx = self.sugg_table.currentIndex()
        g = self.sugg_model.row_at(idx.row()) if idx.isValid() else None
        if g is None:
            return
        reviewer = self.ask_reviewer()
        cleanup.set_decision(self.store, g.pk, decision, reviewer or "anonymous")
        row = idx.row()
        self._load_suggestions()
        self.sugg_table.setCurrentIndex(self.sugg_model.index(row, 0))
        self._show_suggestion(row)

    def _show_revised(self) -> None:
        view = self.view
        if view is None or self.response_pk is None:
            return
        resp = next(r for r in view.data.responses if r.pk == self.response_pk).response
        try:
            revised = cleanup.revised_answer(self.store, view.data.run.id, resp.id).revised
        except cleanup.CleanupError as exc:
            revised = f"{resp.text}\n\n[{exc}]"
        self.revised_edit.setPlainText(revised)

    def _save_revised(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save revised answer", "revised-answer.txt", "Text (*.txt)")
        if path:
            Path(path).write_text(self.revised_edit.toPlainText(), encoding="utf-8")

    # ------------------------------------------------------------------------ export & settings
    def export_run(self, path: str | Path, fmt: str | None = None) -> Path | None:
        if not self.run_id:
            self._warn("No run open", "Open or audit a run first.")
            return None
        overrides = review.overrides(self.store, self.run_id) if self.metrics_bar.with_overrides.isChecked() else None
        out = write_report(self.store, self.run_id, path, fmt, overrides=overrides)
        self._status(f"Report written to {out}")
        return out

    def export_run_async(self, path: str | Path, fmt: str | None = None) -> bool:
        """Write the report off the GUI thread (a PDF takes seconds) with a busy indicator;
        export_finished(path, error) fires when it is done."""
        if not self.run_id:
            self._warn("No run open", "Open or audit a run first.")
            return False
        if self.reader.busy("export"):
            self._status("A report is still being written")
            return False
        rid, with_overrides = self.run_id, self.metrics_bar.with_overrides.isChecked()
        target = Path(path)

        def work(st: Store) -> str:
            overrides = review.overrides(st, rid) if with_overrides else None
            return str(write_report(st, rid, target, fmt, overrides=overrides))

        kind = (fmt or target.suffix.lstrip(".") or "json").upper()
        self.export_bar.setVisible(True)
        self.export_label.setText(f"Writing the {kind} report…")
        self.reader.submit("export", self.db_path, work, self._on_exported, self._on_export_failed)
        return True

    def _on_exported(self, path: str) -> None:
        self.export_bar.setVisible(False)
        self.export_label.setText("")
        self.last_report = Path(path)
        self.settings.export_dir = self.last_report.parent
        self.open_report_btn.setVisible(True)
        self.open_report_btn.setToolTip(safe_tooltip(f"Open {path}"))
        self._status(f"Report written to {path}")
        self.export_finished.emit(path, "")

    def _on_export_failed(self, message: str) -> None:
        self.export_bar.setVisible(False)
        self.export_label.setText("")
        self._warn("Export failed", message)
        self.export_finished.emit("", message)

    EXPORT_FILTERS = {"html": "HTML report (*.html)", "pdf": "PDF report (*.pdf)",
                      "xlsx": "Excel workbook (*.xlsx)", "json": "JSON (*.json)", "csv": "CSV (*.csv)"}

    def export_start_path(self, fmt: str | None) -> Path:
        """The file name Export offers: in the last export's folder, else Documents."""
        return self.settings.export_dir / f"sourcecheckup-{self.run_id}.{fmt or 'html'}"

    def export_dialog(self, fmt: str | None) -> None:
        if not self.run_id:
            self._warn("No run open", "Open or audit a run first.")
            return
        filters = self.EXPORT_FILTERS
        chosen = filters[fmt] if fmt else ";;".join(filters.values())
        path, picked = QFileDialog.getSaveFileName(self, "Export run", str(self.export_start_path(fmt)), chosen)
        if path:
            if fmt is None:
                fmt = next((k for k, v in filters.items() if v == picked), None)
                if Path(path).suffix.lstrip(".").lower() in filters:
                    fmt = Path(path).suffix.lstrip(".").lower()
            self.export_run_async(path, fmt)

    def open_last_report(self) -> bool:
        """Open the report just written with the system's viewer for its kind."""
        if self.last_report is None or not self.last_report.exists():
            return False
        return QDesktopServices.openUrl(QUrl.fromLocalFile(str(self.last_report)))

    def open_settings(self) -> None:
        SettingsDialog(self.settings, self).exec()

    # ------------------------------------------------------------------------ closing
    def confirm(self, title: str, text: str) -> bool:
        answer = QMessageBox.question(self, title, text, QMessageBox.StandardButton.Yes | QMessageBox.StandardButton.No,
                                      QMessageBox.StandardButton.No)
        return answer == QMessageBox.StandardButton.Yes

    def closeEvent(self, event: QCloseEvent) -> None:
        if self.cleanup_worker is not None:   # the suggestions stored so far are kept
            self.cleanup_worker.cancel()
            self.cleanup_worker.wait(10_000)
        if self.benchmark_page.worker is not None:
            if not self._closing and not self.confirm(
                    "Benchmark running", "A benchmark step is running. Stop it and close? Everything made so "
                    "far is kept, and the benchmark can be resumed later."):
                event.ignore()
                return
            self.benchmark_page.shutdown()
        if self.worker is not None:
            if not self._closing:
                if not self.confirm("Audit running", "An audit is running. Stop it and close? Everything judged so "
                                    "far is kept, and the run can be resumed later."):
                    event.ignore()
                    return
                self._closing = True
                self.cancel_audit()
                # the engine stops between pairs; a judge that never returns must not keep the window open
                QTimer.singleShot(15000, self._force_close)
            event.ignore()
            return
        self.live_timer.stop()
        self.reader.shutdown()
        self.store.close()
        event.accept()

    def _force_close(self) -> None:
        if self.worker is not None:
            # the thread stays parented to the window until it ends; the window may go now
            self.worker.done.disconnect()
            self._abandoned = self.worker
            self.worker = None
            self.close()

    # ------------------------------------------------------------------------ messages
    def _status(self, text: str, timeout_ms: int = 12000) -> None:
        self.message_label.setText(text)
        self._message_timer.start(timeout_ms)

    def _warn(self, title: str, text: str) -> None:
        box = QMessageBox(QMessageBox.Icon.Warning, title, text, QMessageBox.StandardButton.Ok, self)
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.open()   # non-blocking: a message never stalls the window (or a test)
