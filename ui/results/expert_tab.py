"""The Expert tab beside the support matrix: the answer measured against the expert's material (OLAPH's
comprehensiveness and hallucination over the must-have / nice-to-have statements, EVAL's similarity to the
reference answer), each statement's reading, and the figures per model. A view over the engine's section."""
from __future__ import annotations

from typing import Any, Mapping

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (
    QAbstractItemView,
    QHeaderView,
    QLabel,
    QScrollArea,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from sourcecheckup.expert.metrics import expert_section
from sourcecheckup.views.expert import ExpertStatementRow, answer_lines, model_lines, statement_rows

from ..models import _RowModel

NO_MATERIAL = ("This answer has no expert material. Give a question reference_answer, must_have and nice_to_have "
               "(JSON/JSONL fields or CSV columns) to measure answers against it.")


class ExpertStatementsModel(_RowModel[ExpertStatementRow]):
    columns = (("Kind", lambda r: r.kind), ("Expert statement", lambda r: r.statement),
               ("Reading", lambda r: r.reading), ("Judge", lambda r: r.judge), ("Rationale", lambda r: r.rationale))


class ExpertTab(QWidget):
    def __init__(self, page: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.page = page
        self.section: Mapping[str, Any] | None = None
        self._run_key: tuple[Any, ...] | None = None
        layout = QVBoxLayout(self)
        self.answer_label = QLabel("")
        self.models_label = QLabel("")
        for label in (self.answer_label, self.models_label):
            label.setTextFormat(Qt.TextFormat.PlainText)
            label.setWordWrap(True)
            label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.statements_model = ExpertStatementsModel(self)
        self.table = QTableView()
        self.table.setModel(self.statements_model)
        self.table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.table.setWordWrap(True)
        header = self.table.horizontalHeader()
        for col in (0, 2, 3):     # kind, reading, judge: as wide as their text; the statement and rationale share the rest
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.ResizeToContents)
        for col in (1, 4):
            header.setSectionResizeMode(col, QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        # the per-model figures scroll in their own pane under the statements (a splitter between them)
        models = QScrollArea()
        models.setWidgetResizable(True)
        models.setWidget(self.models_label)
        self.models_label.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.table)
        split.addWidget(models)
        split.setStretchFactor(0, 3)
        split.setStretchFactor(1, 1)
        layout.addWidget(self.answer_label)
        layout.addWidget(split, 1)

    def show_answer(self, run_id: str, response_id: str) -> None:
        """Show the answer's figures; the run's section is read (off the GUI thread) once per run and answer count."""
        run = getattr(getattr(self.page.view, "data", None), "run", None)   # read again once the run moves on
        key = (run_id, getattr(run, "status", None), getattr(run, "finished_at", None))
        if self.section is not None and self._run_key == key:
            self._fill(response_id)
            return

        def work(st: Any) -> Mapping[str, Any]:
            return expert_section(st, run_id)

        def done(section: Mapping[str, Any]) -> None:
            if self.page.run_id != run_id:
                return
            self.section, self._run_key = section, key
            self._fill(response_id)

        self.page.host.db.read("expert", work, done, lambda msg: self.answer_label.setText(f"Cannot read: {msg}"))

    def _fill(self, response_id: str) -> None:
        section = self.section or {}
        lines = answer_lines(section, response_id)
        self.answer_label.setText("\n".join(lines) if lines else NO_MATERIAL)
        self.statements_model.set_rows(statement_rows(section, response_id))
        self.models_label.setText("\n".join(model_lines(section)))

    def clear(self) -> None:
        self.section, self._run_key = None, None
        self.answer_label.setText("")
        self.models_label.setText("")
        self.statements_model.set_rows([])
