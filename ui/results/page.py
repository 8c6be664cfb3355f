"""The Results page: Input and Runs on the left; on the right the open run's metrics, its
responses, and the selected response's Answer, Sources, Support matrix and Suggestions tabs.

It shows one stored run at a time (``run_id``, ``view``); the run is loaded and assessed off the
GUI thread through the window's DbSession, and ``run_shown`` fires once it is on screen.

A run of more than FULL_LOAD_MAX responses is paged (``paged``): the table holds the responses' keys
and reads rows a page at a time as they are shown, the search and the model facet are SQL queries;
the metrics, the status and problem facets and the review progress arrive from a chunked pass in a
worker process; ``view`` holds only the selected response (review stepping stays within it).
"""
from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import QModelIndex, QSignalBlocker, Qt, Signal
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QSplitter, QTabWidget, QVBoxLayout, QWidget

from sourcecheckup import review
from sourcecheckup.judges.versions import from_usage
from sourcecheckup.models import Response
from sourcecheckup.review import answer_grades
from sourcecheckup.store import Store
from sourcecheckup.views.browse import (
    STATUS_KEYS,
    BrowseStart,
    RunTotals,
    run_totals_at,
    slice_view,
)
from sourcecheckup.views.loading import RunLoad, filter_paged, load_for_results
from sourcecheckup.views.matrix import MatrixCell, support_matrix
from sourcecheckup.views.results import ResponseSummary, RunView
from sourcecheckup.views.review import PairRef, review_pairs, review_progress
from sourcecheckup.views.sources import source_summaries
from sourcecheckup.views.text import count_noun

from ..elide import placeholder_with_tooltip
from ..facets import FacetBar
from ..host import Host
from ..models import ResponsesModel, SortFilterProxy
from ..widgets import MetricsBar, table_view
from .answer_tab import AnswerTab
from .expert_tab import ExpertTab
from .input_panel import InputPanel
from .matrix_tab import MatrixTab
from .paged_responses import PAGE, PagedResponsesModel
from .repairs_tab import RepairsTab
from .runs_panel import RUNS_SHARE, RunsPanel
from .sources_tab import SourcesTab
from .suggestions_tab import SuggestionsTab

LEFT_MIN_WIDTH = 230        # the input form's buttons stay whole
RIGHT_MIN_WIDTH = 520
RESPONSES_MIN_HEIGHT = 120  # the filter, the header and at least three responses
DETAILS_MIN_HEIGHT = 200
MATRIX_TAB = 2


class ResultsPage(QSplitter):
    run_shown = Signal(str)          # a run's results are on screen (after each load)
    response_shown = Signal(int)     # the selected response's tabs are filled (its pk)
    filter_applied = Signal(int)     # a paged run's filter is on screen (the responses it shows)
    totals_shown = Signal(str)       # a paged run's metrics and facets are on screen

    def __init__(self, host: Host, parent: QWidget | None = None) -> None:
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
        self.paged = False            # the open run is shown a page at a time (more than FULL_LOAD_MAX responses)
        self.totals: RunTotals | None = None
        self._total_responses = 0
        self._paged_filter: tuple = ()
        self._paged_run_id = ""
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
        self._input_width = 0          # the left column's width on the Input tab, restored on leaving Runs
        self.left_tabs.currentChanged.connect(self._fit_left)

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
        # the count ends the filter row: on a 640 px screen its own line was one row fewer of responses
        self.count_label = QLabel("")
        self.count_label.setTextFormat(Qt.TextFormat.PlainText)
        frow.addWidget(self.count_label)
        tl.addLayout(frow)
        self.responses_model = ResponsesModel(self)
        self.responses_proxy = SortFilterProxy(self)
        self.responses_proxy.setSourceModel(self.responses_model)
        self.responses_proxy.set_row_filter(self.facets.row_test())
        self.paged_model = PagedResponsesModel(lambda *a, **kw: self.host.db.read(*a, **kw), self)
        self.facets.changed.connect(lambda: self._on_filter_changed(facets=True))
        self.search_edit.textChanged.connect(lambda _text: self._on_filter_changed(facets=False))
        for signal in (self.responses_proxy.modelReset, self.responses_proxy.rowsInserted,
                       self.responses_proxy.rowsRemoved, self.responses_proxy.layoutChanged):
            signal.connect(self._show_count)
        self.responses_table = table_view(self.responses_proxy)
        self._use_table_model(self.responses_proxy, force=True)
        tl.addWidget(self.responses_table)
        vsplit.addWidget(top)

        self.detail_tabs = QTabWidget()
        vsplit.addWidget(self.detail_tabs)
        # the details (the verdict, its evidence, the source text) take most of what a taller window adds
        vsplit.setSizes([190, 350])
        vsplit.setStretchFactor(0, 1)
        vsplit.setStretchFactor(1, 3)
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
        self.repairs_tab = RepairsTab(self)   # a source for each unsupported statement (issue 44)
        self.detail_tabs.addTab(self.repairs_tab, "Repairs")
        # OLAPH / EVAL: the answer against the expert's material (after the tabs whose places users know)
        self.expert_tab = ExpertTab(self)
        self.detail_tabs.addTab(self.expert_tab, "Expert")

        self.addWidget(right)
        self.setSizes([260, 1020])
        self.setStretchFactor(1, 1)
        # neither side can be dragged shut or squeezed below what it needs to be read
        self.left_tabs.setMinimumWidth(LEFT_MIN_WIDTH)
        right.setMinimumWidth(RIGHT_MIN_WIDTH)
        self.setCollapsible(0, False)
        self.setCollapsible(1, False)

    def _use_table_model(self, model: Any, *, force: bool = False) -> None:
        """The whole-run proxy (sortable) or the paged model (input order) behind the responses table."""
        table = self.responses_table
        if table.model() is model and not force:
            return
        table.setModel(model)
        table.setSortingEnabled(model is self.responses_proxy)
        if model is self.responses_proxy:
            table.horizontalHeader().setSortIndicator(-1, Qt.SortOrder.AscendingOrder)  # input order
        for col, width in enumerate((150, 120, 50, 70, 130, 100)):
            table.setColumnWidth(col, width)
        table.selectionModel().currentRowChanged.connect(self._on_response_changed)

    def _on_filter_changed(self, *, facets: bool) -> None:
        if self.paged:
            self._refilter()
        elif facets:
            self.responses_proxy.set_row_filter(self.facets.row_test())
        else:
            self.responses_proxy.setFilterFixedString(self.search_edit.text())

    def _show_count(self, *_: object) -> None:
        if self.paged:
            shown, total = self.paged_model.rowCount(), self._total_responses
        elif self.run_id is None:
            self.count_label.setText("")
            return
        else:
            shown, total = self.responses_proxy.rowCount(), self.responses_model.rowCount()
        noun = "response" if total == 1 else "responses"
        self.count_label.setText(f"{total:,} {noun}" if shown == total else f"{shown:,} of {total:,} {noun}")

    def _fit_left(self, index: int) -> None:
        """The Runs tab takes half the page (its figures side by side, to compare runs); the Input tab
        gets its own narrower width back."""
        sizes = self.sizes()
        total = sum(sizes)
        if len(sizes) != 2 or total <= 0:
            return
        if self.left_tabs.widget(index) is self.runs:
            self._input_width = sizes[0]
            left = max(sizes[0], min(int(total * RUNS_SHARE), total - RIGHT_MIN_WIDTH))
        elif self._input_width:
            left = self._input_width
        else:
            return
        self.setSizes([left, total - left])

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

        search, (model, _, _) = self.search_edit.text(), self.facets.chosen()
        load_key = self._filter_key()

        def load(st: Store) -> tuple[RunLoad, float]:
            return (load_for_results(st, rid, search=search, model=model, with_overrides=with_overrides, first=PAGE),
                    time.monotonic() - started)

        self.host.db.read("run", load, lambda result: self._on_loaded(result, load_key),
                          lambda msg: self.host.warn("Cannot open run", msg))

    def _on_loaded(self, result: tuple[RunLoad, float], load_key: tuple = ()) -> None:
        loaded, self.last_load_s = result
        if loaded.start is not None:
            self.show_paged(loaded.start, load_key)
            return
        assert loaded.view is not None
        self.usage = loaded.usage or {}
        self.show_view(loaded.view, loaded.review)

    # ------------------------------------------------------------------------ a large run, paged
    def show_paged(self, start: BrowseStart, load_key: tuple = ()) -> None:
        """Put a large run on screen: its first rows and count now, its metrics when they are summed.
        ``load_key``: the filter when the keys were read (only its search text and model were applied)."""
        if start.run.id != self.run_id:
            return
        self.last_load_at = time.monotonic()
        self.paged = True
        self._paged_run = start.run
        self._model_counts = dict(start.models)
        self.view = None
        self.pairs = []
        self.responses_model.set_rows([])
        self._use_table_model(self.paged_model)
        self._total_responses = sum(n for _, n in start.models)
        if self.totals is None or self._paged_run_id != start.run.id:
            self.totals = None
            self.metrics_bar.clear()
            self.metrics_bar.counts.setText(f"Run {start.run.status} · {count_noun(self._total_responses, 'response')} · "
                                            "summing the metrics…")
            with QSignalBlocker(self.facets):
                self.facets.set_choices([m for m, _ in start.models], None, None, model_counts=dict(start.models))
            self.facets.clear_progress()
        self._paged_run_id = start.run.id
        # what start.pks answers; a facet chosen since, or status and problem, then filter again
        self._paged_filter = load_key[:3] + (None, None) + load_key[5:] if load_key else self._filter_key()
        self._show_pks(start.pks, start.first_rows)
        self._sum_totals()
        self.run_shown.emit(start.run.id)
        self._refilter()

    def _filter_key(self) -> tuple:
        """(run, search text, model, status, problem, with overrides): what the paged table shows."""
        return (self.run_id, self.search_edit.text().strip(), *self.facets.chosen(),
                self.metrics_bar.with_overrides.isChecked())

    def _show_pks(self, pks: list[int], first_rows: list[ResponseSummary]) -> None:
        keep = self.response_pk
        self.paged_model.set_responses(self.run_id, pks, with_overrides=self.metrics_bar.with_overrides.isChecked(),
                                       first_rows=first_rows)
        self._show_count()
        if pks:
            self.select_response(keep if keep in pks else pks[0])
        else:
            self.response_pk = None
            self.view = None
            self.clear_details()

    def _refilter(self) -> None:
        """The search text and the model facet as an SQL query, the status and problem facets over the
        run's totals, both in the read pool."""
        key = self._filter_key()
        if key == self._paged_filter or not self.run_id:
            return
        self._paged_filter = key
        rid, search, (model, status, problem) = self.run_id, self.search_edit.text(), self.facets.chosen()
        with_overrides = self.metrics_bar.with_overrides.isChecked()
        totals = self.totals if (status is not None or problem is not None) else None
        accepts = self.facets.facts_test()

        def work(st: Store) -> tuple[list[int], list[ResponseSummary]]:
            return filter_paged(st, rid, search=search, model=model, totals=totals, accepts=accepts,
                                with_overrides=with_overrides, first=PAGE)

        def done(result: tuple[list[int], list[ResponseSummary]]) -> None:
            if self.paged and self.run_id == rid:
                self._show_pks(*result)
                self.filter_applied.emit(self.paged_model.rowCount())

        self.host.db.read("filter", work, done, lambda msg: self.host.warn("Cannot filter the responses", msg))

    def _sum_totals(self) -> None:
        """The run's metrics, review progress and facet figures, summed chunk by chunk in a worker process."""
        rid = self.run_id
        self.host.db.compute("run-totals", run_totals_at, (rid, self.metrics_bar.with_overrides.isChecked()),
                             self._on_totals, lambda msg: self.metrics_bar.counts.setText(
                                 f"Cannot sum the run's metrics: {msg}"))

    def _on_totals(self, totals: RunTotals) -> None:
        if not self.paged:
            return
        self.totals, self.usage = totals, totals.usage
        run = self._paged_run
        self.metrics_bar.show_metrics(totals.metrics, totals.overrides, run.status, self.cost_text(), run.judges,
                                      **from_usage(self.usage or {}))
        statuses = {STATUS_KEYS[i] for i in set(totals.status)}
        problems = {p for kinds in totals.problem_kinds for p in kinds}
        with QSignalBlocker(self.facets):
            self.facets.set_choices(sorted(self._model_counts), statuses, problems, model_counts=self._model_counts)
        self.facets.show_review_progress(totals.reviewed, totals.reviewable, totals.unsure)
        _, status, problem = self.facets.chosen()
        if status is not None or problem is not None:   # the statuses changed (a review): filter by the new ones
            self._paged_filter = ()
        self._refilter()
        self.totals_shown.emit(self.run_id or "")

    def show_view(self, view: RunView, review: tuple[list[PairRef], tuple[int, int, int]] | None = None) -> None:
        """Put a loaded run on screen, keeping the selected response when the run still has it;
        ``review``: its review pairs and progress when the load worked them out already."""
        if view.data.run.id != self.run_id:
            return
        self.last_load_at = time.monotonic()
        self._leave_paged()
        self.view = view
        pairs, progress = review or (review_pairs(view, review_first=True), review_progress(view))
        self.pairs = pairs
        self.metrics_bar.show_metrics(view.metrics, len(view.overrides), view.data.run.status, self.cost_text(),
                                      view.data.run.judges, **from_usage(self.usage or {}),
                                      with_overrides=view.with_overrides, studies=view.studies)
        keep = self.response_pk
        with QSignalBlocker(self.facets):
            self.facets.set_rows(view.summaries)
        self.responses_proxy.row_filter = self.facets.row_test()   # the rows are filtered once, as they are set
        self.responses_model.set_rows(view.summaries)
        self.facets.show_review_progress(*progress)
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

    def _leave_paged(self) -> None:
        """Back to the whole-run table: no paged run, its totals, filter or rows."""
        self.paged = False
        self.totals = None
        self._paged_filter = ()
        self._paged_run_id = ""
        self.paged_model.set_responses(None, [])
        self._use_table_model(self.responses_proxy)

    def redraw(self) -> None:
        """Draw the run again (the palette changed)."""
        if self.paged:
            self.reload_run()
        elif self.view is not None:
            self.show_view(self.view)

    def close_run(self) -> None:
        """Nothing on screen (another database was opened)."""
        self.view = None
        self.run_id = None
        self._leave_paged()
        self.metrics_bar.clear()
        self.responses_model.set_rows([])
        self._show_count()
        self.facets.set_rows([])
        self.facets.clear_progress()
        self.clear_details()

    def clear_details(self) -> None:
        self.answer_tab.clear()
        self.sources_tab.sources_model.set_rows([])
        self.matrix_tab.clear()
        self.expert_tab.clear()
        self.suggestions_tab.clear()

    # ------------------------------------------------------------------------ the selected response
    def select_response(self, response_pk: int) -> None:
        if self.paged:
            row = self.paged_model.row_of(response_pk)
            if row < 0:
                return
            idx = self.paged_model.index(row, 0)
            with QSignalBlocker(self.responses_table.selectionModel()):
                self.responses_table.setCurrentIndex(idx)
            self.responses_table.viewport().update()
            self.responses_table.scrollTo(idx)
            self.show_response(response_pk)
            return
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
        if self.paged:
            pk = self.paged_model.pk_at(current.row())
            if pk is not None and pk != self.response_pk:
                self.show_response(pk)
            return
        src = self.responses_proxy.mapToSource(current)
        summary = self.responses_model.row_at(src.row())
        if summary is not None and summary.response_pk != self.response_pk:
            self.show_response(summary.response_pk)

    def show_response(self, response_pk: int) -> None:
        if self.paged:
            self._read_response(response_pk)
            return
        view = self.view
        if view is None:
            return
        if view.assessment(response_pk) is None:
            return
        self.response_pk = response_pk
        self._fill_tabs(view, response_pk)

    def _fill_tabs(self, view: RunView, response_pk: int) -> None:
        a = view.assessment(response_pk)
        self.answer_tab.show_answer(self.current_response(), a)  # type: ignore[arg-type]
        self.sources_tab.sources_model.set_rows(source_summaries(view, response_pk))
        self.matrix_tab.show_matrix(support_matrix(view, response_pk))
        self.suggestions_tab.load_suggestions()
        self.repairs_tab.load(a)
        if (response := self.current_response()) is not None and self.run_id:
            self.expert_tab.show_answer(self.run_id, response.id)
        self.response_shown.emit(response_pk)

    def _read_response(self, response_pk: int) -> None:
        """A paged run's response: its rows read and assessed in the read pool, then its tabs filled."""
        self.response_pk = response_pk
        rid, with_overrides = self.run_id, self.metrics_bar.with_overrides.isChecked()

        def work(st: Store) -> RunView:
            return slice_view(st, rid, [response_pk], with_overrides=with_overrides)  # type: ignore[arg-type]

        def done(view: RunView) -> None:
            if not self.paged or view.data.run.id != self.run_id or response_pk != self.response_pk \
                    or view.assessment(response_pk) is None:
                return
            self.view = view
            self.pairs = review_pairs(view, review_first=True)
            self._fill_tabs(view, response_pk)

        self.host.db.read("response", work, done, lambda msg: self.host.warn("Cannot show the response", msg),
                          priority=1)

    def current_response(self) -> Response | None:
        view = self.view
        if view is None or self.response_pk is None:
            return None
        return next((r.response for r in view.data.responses if r.pk == self.response_pk), None)

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
        self.host.show_status(f"Labelled {label.replace('_', ' ')} as {reviewer}")
        if step:
            self.step_pair(1)
        self.reload_run()
        return True

    def start_review(self) -> None:
        """Where review mode starts: the first pair no reviewer has labelled, the pairs the screening judge
        is unsure of first; a selected cell (a focused matrix selects S1 x [1]) does not hold it back."""
        if not self.pairs:
            return
        done = set(self.view.overrides) if self.view is not None else set()
        cell = self.current_cell()
        if cell is not None and cell.review_first:
            return   # the reviewer chose a pair to review first: start there
        pair = next((p for p in self.pairs if (p.statement_pk, p.url) not in done), self.pairs[0])
        self._go_to_pair(pair)

    def grade_current(self, grade: str) -> bool:
        """Store the reviewer's Good/Bad grade of the selected response (an answer grade, not a pair label)."""
        if not self.run_id or self.response_pk is None:
            return False
        reviewer = self.host.ask_reviewer()
        if not reviewer:
            return False
        answer_grades.add_answer_grade(self.host.store, self.run_id, self.response_pk, reviewer, grade)
        self.host.show_status(f"Graded the answer {grade} as {reviewer}")
        self.answer_tab.load_grades()
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
        self._go_to_pair(self.pairs[nxt])

    def _go_to_pair(self, pair: PairRef) -> None:
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
