"""The Support matrix tab: statements x sources, and beside it the selected pair's verdicts, its
quote in the source text, and the reviewer's buttons."""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import QModelIndex, Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QFrame,
    QHBoxLayout,
    QHeaderView,
    QLineEdit,
    QPushButton,
    QScrollArea,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from sourcecheckup import review
from sourcecheckup.models import Label
from sourcecheckup.views.matrix import (
    READER_JUDGE_SHORT,
    SCREENING_JUDGE_SHORT,
    MatrixCell,
    SupportMatrix,
    how_decided,
    is_reader_verdict,
    uses_screening_judge,
    verdict_word,
)
from sourcecheckup.views.references import reference_badge
from sourcecheckup.views.results import RunView
from sourcecheckup.views.text import reason_for_app

from ..models import MatrixModel
from ..theme import CONTRADICTED_MARK, LABEL_MARK, REVIEW_FIRST_MARK, REVIEW_MARK, STATUS_MARK
from ..widgets import SourceViewer, plain_label

PAIR_HINT = "Click a cell to see the verdict and the evidence."
COLUMN_MIN_WIDTH = 150   # a source column's width when its verdicts are short (its header shows the page title)
CELL_PADDING = 16        # a cell's margins and focus frame around its text
SOURCE_MIN_LINES = 4      # the source viewer never shrinks below this many lines of text


class MatrixTab(QSplitter):
    def __init__(self, page: Any, parent: QWidget | None = None) -> None:
        super().__init__(Qt.Orientation.Horizontal, parent)
        self.page = page
        self.host = page.host
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
        self.matrix_table.horizontalHeader().setDefaultSectionSize(COLUMN_MIN_WIDTH)
        self.matrix_table.horizontalHeader().setDefaultAlignment(Qt.AlignmentFlag.AlignLeft | Qt.AlignmentFlag.AlignVCenter)
        self.matrix_table.clicked.connect(self._on_matrix_clicked)
        self.matrix_table.selectionModel().currentChanged.connect(lambda cur, _: self._on_matrix_clicked(cur))
        self.addWidget(self.matrix_table)
        # the pair's text above (it scrolls when long, never cut), the review row and the source below;
        # a splitter between them, the source viewer taking what the text does not need
        detail = QSplitter(Qt.Orientation.Vertical)
        detail.setChildrenCollapsible(False)
        self.detail_split = detail
        self.pair_scroll = QScrollArea()
        self.pair_scroll.setWidgetResizable(True)
        self.pair_scroll.setFrameShape(QFrame.Shape.NoFrame)
        self.pair_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        text = QWidget()
        dl = QVBoxLayout(text)
        dl.setContentsMargins(4, 0, 4, 0)
        self.pair_statement = plain_label(PAIR_HINT)
        self.pair_source = plain_label()
        self.pair_verdicts = plain_label()
        self.pair_quote = plain_label()
        self.pair_review = plain_label()
        # the verdict and what it read first, where a short pane shows them without scrolling; the page last
        for w in (self.pair_statement, self.pair_verdicts, self.pair_quote, self.pair_review, self.pair_source):
            dl.addWidget(w)
        dl.addStretch(1)
        self.pair_scroll.setWidget(text)
        self.pair_scroll.setMinimumHeight(3 * self.fontMetrics().lineSpacing())
        detail.addWidget(self.pair_scroll)
        lower = QWidget()
        ll = QVBoxLayout(lower)
        ll.setContentsMargins(4, 0, 0, 0)
        self.reason_edit = QLineEdit()
        self.reason_edit.setPlaceholderText("Reason for your label (optional)")
        ll.addWidget(self.reason_edit)
        rrow = QHBoxLayout()
        self.review_buttons: dict[str, QPushButton] = {}
        for key, text_, tip in ((review.ReviewLabel.SUPPORTED.value, "✓ Supported", "S in review mode"),
                                (review.ReviewLabel.NOT_SUPPORTED.value, "✗ Not supported", "N in review mode"),
                                (review.ReviewLabel.UNSURE.value, "? Unsure", "U in review mode")):
            btn = QPushButton(text_)
            btn.setToolTip(f"Override the verdict: {text_[2:].lower()} ({tip})")
            btn.setEnabled(False)
            btn.clicked.connect(lambda _=False, k=key: self.host.review_current(k))
            rrow.addWidget(btn)
            self.review_buttons[key] = btn
        prev_btn = QPushButton("◀")
        prev_btn.setToolTip("Previous pair (K)")
        prev_btn.clicked.connect(lambda: self.host.step_pair(-1))
        prev_btn.setMaximumWidth(36)
        next_btn = QPushButton("▶")
        next_btn.setToolTip("Next pair (J)")
        next_btn.clicked.connect(lambda: self.host.step_pair(1))
        next_btn.setMaximumWidth(36)
        rrow.addWidget(prev_btn)
        rrow.addWidget(next_btn)
        ll.addLayout(rrow)
        self.source_viewer = SourceViewer()
        self.source_viewer.setMinimumHeight(SOURCE_MIN_LINES * self.source_viewer.fontMetrics().lineSpacing() + 12)
        ll.addWidget(self.source_viewer, 1)
        detail.addWidget(lower)
        detail.setSizes([130, 200])
        detail.setStretchFactor(0, 1)
        detail.setStretchFactor(1, 1)
        self.addWidget(detail)
        self.setSizes([560, 420])

    def show_matrix(self, matrix: SupportMatrix) -> None:
        """A response's matrix; the selected cell stays selected when the new matrix has it."""
        current = self.matrix_table.currentIndex()
        keep = self.matrix_model.cell(current) if current.isValid() else None
        self.matrix_model.set_matrix(matrix)
        self.fit_columns()
        idx = self.matrix_model.index_of(keep.statement_pk, keep.url) if keep is not None else QModelIndex()
        if idx.isValid():
            self.matrix_table.setCurrentIndex(idx)
            self.show_cell(self.matrix_model.cell(idx))
        else:
            self.clear_pair_detail()

    def fit_columns(self) -> None:
        """Each source column as wide as its widest verdict ("⚑ ✗ not supported", "✎ ✓ supported (reviewed)"),
        never narrower than COLUMN_MIN_WIDTH: a cell is never cut; the long page title in the header is."""
        table, model = self.matrix_table, self.matrix_model
        fm = table.fontMetrics()
        rows = range(model.rowCount())
        for c in range(model.columnCount()):
            # the distinct texts of the column, measured once each (the view's own size hint asks every
            # cell for every role: seconds on a 200 x 40 matrix)
            texts = {model.data(model.index(r, c)) or "" for r in rows}
            widest = max((fm.horizontalAdvance(t) for t in texts), default=0)
            table.setColumnWidth(c, max(COLUMN_MIN_WIDTH, widest + CELL_PADDING))

    def clear(self) -> None:
        self.matrix_model.set_matrix(SupportMatrix([], [], {}))
        self.clear_pair_detail()

    def clear_pair_detail(self) -> None:
        """The detail panel back to empty, its review buttons off."""
        self.pair_statement.setText(PAIR_HINT)
        for w in (self.pair_source, self.pair_verdicts, self.pair_quote, self.pair_review):
            w.setText("")
        for b in self.review_buttons.values():
            b.setEnabled(False)
        self.reason_edit.clear()
        self.source_viewer.show_source("")

    def current_cell(self) -> MatrixCell | None:
        return self.matrix_model.cell(self.matrix_table.currentIndex())

    def select_pair(self, statement_pk: int, url: str) -> bool:
        idx = self.matrix_model.index_of(statement_pk, url)
        if not idx.isValid():
            return False
        self.matrix_table.setCurrentIndex(idx)
        self.matrix_table.scrollTo(idx)
        self.show_cell(self.matrix_model.cell(idx))
        return True

    def select_statement_row(self, statement_pk: int) -> None:
        for r, s in enumerate(self.matrix_model.matrix.statements):
            if s.row.pk == statement_pk and self.matrix_model.columnCount():
                self.matrix_table.setCurrentIndex(self.matrix_model.index(r, 0))
                return

    def _on_matrix_clicked(self, index: QModelIndex) -> None:
        cell = self.matrix_model.cell(index)
        if cell is not None:
            self.show_cell(cell)

    def show_cell(self, cell: MatrixCell | None) -> None:
        """The pair's verdicts, the quote, and the source text scrolled to the quote."""
        view: RunView | None = self.page.view
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
        source_text = f"Source: {cell.url}\n{title} ({outcome})".strip()
        check = view.references.get(cell.url)
        if check is not None:   # the cited paper's reference check, with its evidence
            source_text += f"\nReference: {reference_badge(check)}: {check.evidence}"
        self.pair_source.setText(source_text)
        lines = []
        screening = reading = False
        for v in cell.verdicts:
            vm, _ = LABEL_MARK[v.verdict.label]
            word = verdict_word(v.verdict)
            if word == "contradicted":
                vm = CONTRADICTED_MARK
            judge = v.verdict.judge_id
            if is_reader_verdict(v.verdict):
                reading = True
                judge += " (learned reader)"
            elif uses_screening_judge([judge]):
                screening = True
                judge += " (screening judge)"
            lines.append(f"{vm} {judge}: {word} (score {v.verdict.score:.2f}). {v.verdict.rationale}")
            decider = how_decided(v.verdict)
            if decider:
                lines.append(f"    Decided by {decider}.")
        if cell.review_first:
            unsure = "the learned reader" if reading and not screening else "the screening judge"
            lines.append(f"{REVIEW_FIRST_MARK} Review first: {unsure} is unsure of this pair.")
        if screening:
            lines.append(SCREENING_JUDGE_SHORT)
        if reading:
            lines.append(READER_JUDGE_SHORT)
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
            # the sentence the deciding check (or the judge) read, whatever the label
            what = "Quote" if primary.verdict.label is Label.SUPPORTED else "Source sentence it read"  # type: ignore[union-attr]
            self.pair_quote.setText(f"{what} ({found}): “{quote}”")
        else:
            self.pair_quote.setText("No quote offered.")
        if cell.override is not None:
            om, ow = LABEL_MARK[cell.override]
            used = "counted" if view.with_overrides else "not counted (the figures are judges only)"
            self.pair_review.setText(f"{REVIEW_MARK} Reviewer override: {om} {ow}, {used}.")
        elif cell.reviewed_without_label:
            self.pair_review.setText(f"{REVIEW_MARK} Reviewed: {cell.reviewed_without_label}; the judge's label "
                                     "still counts.")
        else:
            self.pair_review.setText("")
        can_review = cell.readable and bool(statement and statement.row.statement.informative)
        for b in self.review_buttons.values():
            b.setEnabled(can_review)
        self.source_viewer.show_source(src_row.source.text if src_row else "", quote)
