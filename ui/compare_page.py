"""The Compare page: two runs side by side (sourcecheckup.compare.compare_runs, shaped by
views.runs.comparison_view): metric differences with 95% intervals, statements whose support
changed, sources whose content changed. The comparison is computed off the GUI thread."""
from __future__ import annotations

from typing import Any, Sequence

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QPushButton,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from sourcecheckup.compare import compare_runs
from sourcecheckup.store import Store
from sourcecheckup.views.runs import ComparisonView, RunSummary, comparison_view

from .host import Host
from .models import ChangedSourcesModel, ChangedStatementsModel, DifferencesModel
from .widgets import plain_label


def _table(model: Any, widths: Sequence[int]) -> QTableView:
    view = QTableView()
    view.setModel(model)
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    view.setAlternatingRowColors(True)
    view.verticalHeader().setVisible(False)
    view.horizontalHeader().setStretchLastSection(True)
    for col, w in enumerate(widths):
        view.setColumnWidth(col, w)
    return view


class ComparePage(QWidget):
    compared = Signal(str, str)      # run A, run B, once the tables are filled

    def __init__(self, host: Host, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.comparison: ComparisonView | None = None
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        row.addWidget(QLabel("Run A"))
        self.run_a = QComboBox()
        self.run_a.setMinimumContentsLength(28)
        row.addWidget(self.run_a, 1)
        row.addWidget(QLabel("Run B"))
        self.run_b = QComboBox()
        self.run_b.setMinimumContentsLength(28)
        row.addWidget(self.run_b, 1)
        self.compare_btn = QPushButton("Compare")
        self.compare_btn.clicked.connect(self._compare_chosen)
        row.addWidget(self.compare_btn)
        layout.addLayout(row)
        self.summary = plain_label("Choose two runs of the same answers (say, before and after a guideline "
                                   "update) and press Compare.")
        layout.addWidget(self.summary)
        self.diff_model = DifferencesModel(self)
        self.diff_table = _table(self.diff_model, (200, 150, 150))
        self.diff_table.verticalHeader().setDefaultSectionSize(24)
        # four metrics: the table is exactly as tall as its rows, so none hides behind a scroll bar
        self.diff_table.setFixedHeight(4 * 24 + self.diff_table.horizontalHeader().sizeHint().height() + 4)
        layout.addWidget(self._titled("Metrics (B − A, with the 95% interval of the difference)", self.diff_table))
        split = QSplitter(Qt.Orientation.Vertical)
        self.statements_model = ChangedStatementsModel(self)
        self.statements_table = _table(self.statements_model, (110, 440, 130, 130))
        split.addWidget(self._titled("Statements whose status changed (support, or a source read or lost)",
                                     self.statements_table))
        self.sources_model = ChangedSourcesModel(self)
        self.sources_table = _table(self.sources_model, (460, 280, 110))
        split.addWidget(self._titled("Sources whose content or outcome changed", self.sources_table))
        split.setSizes([340, 200])
        layout.addWidget(split, 1)

    @staticmethod
    def _titled(title: str, table: QTableView) -> QWidget:
        w = QWidget()
        lay = QVBoxLayout(w)
        lay.setContentsMargins(0, 0, 0, 0)
        lay.addWidget(plain_label(title, selectable=False))
        lay.addWidget(table, 1)
        return w

    def set_runs(self, runs: Sequence[RunSummary]) -> None:
        """Fill the run choosers (newest first): A defaults to the second newest, B to the newest."""
        keep_a, keep_b = self.run_a.currentData(), self.run_b.currentData()
        for combo in (self.run_a, self.run_b):
            combo.clear()
            for r in runs:
                # two unnamed runs of one pasted answer differ by their words and time; the id is in the tooltip
                combo.addItem(r.label, r.id)
                combo.setItemData(combo.count() - 1, f"run {r.id} · {r.input}", Qt.ItemDataRole.ToolTipRole)
        ids = [r.id for r in runs]
        self.run_a.setCurrentIndex(ids.index(keep_a) if keep_a in ids else min(1, len(ids) - 1))
        self.run_b.setCurrentIndex(ids.index(keep_b) if keep_b in ids else 0)

    def _compare_chosen(self) -> None:
        a, b = self.run_a.currentData(), self.run_b.currentData()
        if not a or not b:
            self.host.warn("Two runs needed", "Audit or open two runs of the same answers to compare them.")
            return
        self.compare(a, b)

    def compare(self, run_a: str, run_b: str) -> None:
        self.summary.setText(f"Comparing {run_a} with {run_b}…")
        self.compare_btn.setEnabled(False)

        def work(st: Store) -> ComparisonView:
            return comparison_view(compare_runs(st, run_a, run_b))

        self.host.db.read("compare", work, self._show, self._failed)

    def _failed(self, message: str) -> None:
        self.compare_btn.setEnabled(True)
        self.summary.setText(f"Could not compare: {message}")

    def _show(self, c: ComparisonView) -> None:
        self.compare_btn.setEnabled(True)
        self.comparison = c
        self.summary.setText(c.summary)
        self.diff_model.set_rows(c.differences)
        self.statements_model.set_rows(c.statements)
        self.sources_model.set_rows(c.sources)
        self.compared.emit(c.run_a, c.run_b)
