"""The Results page: Input and Runs on the left; on the right the open run's metrics, its
responses, and the selected response's Answer, Sources, Support matrix and Suggestions tabs.

It shows one stored run at a time (``run_id``, ``view``); the run is loaded and assessed off the
GUI thread through the window's DbSession, and ``run_shown`` fires once it is on screen.
"""
from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import QModelIndex, QSignalBlocker, Qt, Signal
from PySide6.QtWidgets import QLineEdit, QHBoxLayout, QSplitter, QTabWidget, QVBoxLayout, QWidget

from sourcecheckup import review
from sourcecheckup.judge_report import run_usage
from sourcecheckup.models import Response
from sourcecheckup.store import Store
from sourcecheckup.views.matrix import MatrixCell, support_matrix
from sourcecheckup.views.results import RunView, load_run_view
from sourcecheckup.views.review import PairRef, review_pairs, review_progress
from sourcecheckup.views.sources import source_summaries

from ..elide import placeholder_with_tooltip
from ..facets import FacetBar
from ..models import ResponsesModel, SortFilterProxy
from ..widgets import MetricsBar, table_view
from .answer_tab import AnswerTab
from .input_panel import InputPanel
from .matrix_tab import MatrixTab
from .runs_panel import RunsPanel
from .sources_tab import SourcesTab
from .suggestions_tab import SuggestionsTab

LEFT_MIN_WIDTH = 230        # the input form's buttons stay whole
RIGHT_MIN_WIDTH = 520
RESPONSES_MIN_HEIGHT = 120  # the filter, the header and at least three responses
DETAILS_MIN_HEIGHT = 200
MATRIX_TAB = 2


class ResultsPage(QSplitter):
    run_shown = Signal(str)          # a run's results are on screen (after each load)

    def __init__(self, host: Any, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.host = host
        self.view: RunView | None = None
        self.run_id: str | None = None
        self.response_pk: int | None = None
        self.pairs: list[PairRef] = []
        self.usage: dict[str, dict] = {}
        self.stale = False            # the run on screen has changed in the database since it was loaded
        self.last_load_s = 0.0        # how long the latest load took
        self.last_load_at = 0.0
        self._build()

    def _build(self) -> None:
        # left: input and runs
        self.left_tabs = QTabWidget()
        self.addWidget(self.left_tabs)
        self.input = InputPanel(self.host)
        self.input.files_loaded.connect(lambda: self.show_left(0))
        self.left_tabs.addTab(self.input, "Input")
        self.runs = RunsPanel(self.host)
        self.left_tabs.addTab(self.runs, "Runs")

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
        self.responses_table = table_view(self.responses_proxy)
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
        self.answer_tab = AnswerTab(self)
        self.detail_tabs.addTab(self.answer_tab, "Answer")
        self.sources_tab = SourcesTab()
        self.detail_tabs.addTab(self.sources_tab, "Sources")
        self.matrix_tab = MatrixTab(self)
        self.detail_tabs.addTab(self.matrix_tab, "Support matrix")
        self.suggestions_tab = SuggestionsTab(self)
        self.detail_tabs.addTab(self.suggestions_tab, "Suggestions")

        self.addWidget(right)
        self.setSizes([260, 1020])
        self.setStretchFactor(1, 1)
        # neither side can be dragged shut or squeezed below what it needs to be read
        self.left_tabs.setMinimumWidth(LEFT_MIN_WIDTH)
        right.setMinimumWidth(RIGHT_MIN_WIDTH)
        self.setCollapsible(0, False)
        self.setCollapsible(1, False)

    def show_left(self, index: int) -> None:
        """The Input (0) or Runs (1) tab, on this page."""
        self.host.pages.setCurrentWidget(self)
        self.left_tabs.setCurrentIndex(index)

    # ------------------------------------------------------------------------ the open run
    def open_run(self, run_id: str) -> None:
        """Show a stored run; the loading happens off the GUI thread and run_shown fires when on screen."""
        if run_id != self.run_id:
            self.response_pk = None
            self.matrix_tab.clear_pair_detail()   # never show (or let a reviewer label) another run's pair
        self.run_id = run_id
        self.host.settings.add_recent("runs", f"{self.host.db_path}::{run_id}")
        self.host.update_title()
        self.reload_run()

    def reload_run(self) -> None:
        if not self.run_id:
            return
        with_overrides = self.metrics_bar.with_overrides.isChecked()
        rid = self.run_id
        self.stale = False
        started = time.monotonic()

        def load(st: Store) -> tuple[RunView, dict, float]:
            view = load_run_view(st, rid, with_overrides=with_overrides)
            return view, run_usage(st, rid), time.monotonic() - started

        self.host.db.read("run", load, self._on_loaded, lambda msg: self.host._warn("Cannot open run", msg))

    def _on_loaded(self, result: tuple[RunView, dict, float]) -> None:
        view, self.usage, self.last_load_s = result
        self.show_view(view)

    def show_view(self, view: RunView) -> None:
        """Put a loaded run on screen, keeping the selected response when the run still has it."""
        if view.data.run.id != self.run_id:
            return
        self.last_load_at = time.monotonic()
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
            self.clear_details()
        sample = self.host.sample_page
        if self.host.pages.currentWidget() is sample and (sample.sample is None or
                                                          sample.sample.run_id != view.data.run.id):
            sample.refresh()
        self.run_shown.emit(view.data.run.id)

    def redraw(self) -> None:
        """Draw the run again (the palette changed)."""
        if self.view is not None:
            self.show_view(self.view)

    def close_run(self) -> None:
        """Nothing on screen (another database was opened)."""
        self.view = None
        self.run_id = None
        self.metrics_bar.clear()
        self.responses_model.set_rows([])
        self.facets.set_rows([])
        self.facets.clear_progress()
        self.clear_details()

    def clear_details(self) -> None:
        self.answer_tab.clear()
        self.sources_tab.sources_model.set_rows([])
        self.matrix_tab.clear()
        self.suggestions_tab.clear()

    # ------------------------------------------------------------------------ the selected response
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
        self.answer_tab.show_answer(self.current_response(), a)  # type: ignore[arg-type]
        self.sources_tab.sources_model.set_rows(source_summaries(view, response_pk))
        self.matrix_tab.show_matrix(support_matrix(view, response_pk))
        self.suggestions_tab.load_suggestions()

    def current_response(self) -> Response | None:
        view = self.view
        if view is None or self.response_pk is None:
            return None
        return next(r for r in view.data.responses if r.pk == self.response_pk).response

    def current_cell(self) -> MatrixCell | None:
        return self.matrix_tab.current_cell()

    # ------------------------------------------------------------------------ review
    def review_current(self, label: str, *, step: bool = False) -> bool:
        """Store the reviewer's label on the selected pair (then go to the next pair when ``step``);
        metrics reload with it."""
        cell = self.current_cell()
        if cell is None or not self.run_id or not cell.readable:
            return False
        reviewer = self.host.ask_reviewer()
        if not reviewer:
            return False
        reason = self.matrix_tab.reason_edit
        review.add_review(self.host.store, self.run_id, cell.statement_pk, cell.url, reviewer, label,
                          reason.text().strip())
        reason.clear()
        self.host._status(f"Labelled {label.replace('_', ' ')} as {reviewer}")
        if step:
            self.step_pair(1)
        self.reload_run()
        return True

    def step_pair(self, delta: int) -> None:
        """The next (or previous) pair to review, the pairs the screening judge is unsure of first."""
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
        if self.matrix_tab.matrix_model.index_of(pair.statement_pk, pair.url).isValid():
            self.detail_tabs.setCurrentIndex(MATRIX_TAB)
            self.matrix_tab.select_pair(pair.statement_pk, pair.url)

    # ------------------------------------------------------------------------ cost
    def cost_so_far(self) -> float | None:
        """USD spent by the run's judges so far (engine estimate); None when a model has no price."""
        costs = [u.get("cost_usd") for u in self.usage.values()]
        return None if any(c is None for c in costs) else float(sum(costs))  # type: ignore[arg-type]

    def cost_text(self) -> str:
        cost = self.cost_so_far()
        if cost is None:
            return "cost unknown (a model is not in prices.json)"
        return "no API cost" if cost == 0 else f"judge cost ${cost:.4f}"
