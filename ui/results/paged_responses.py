"""The responses table of a large run: every response's key is known (one SQL query), its row is read
and assessed a page at a time, in the window's read pool, when the table first asks to show it.

Rows not read yet show "…"; the row count is the run's (or the filter's) response count from the start.
"""
from __future__ import annotations

from typing import Any, Callable

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, Qt, Signal

from sourcecheckup.store import Store
from sourcecheckup.views.browse import page_summaries
from sourcecheckup.views.results import ResponseSummary

from ..models import ROW_ROLE, ResponsesModel
from ..theme import safe_tooltip, tint

Index = QModelIndex | QPersistentModelIndex
PAGE = 50               # rows read and assessed at a time
NOT_READ = "…"


class PagedResponsesModel(QAbstractTableModel):
    """Responses of one run (``pks`` in display order) with the columns of ResponsesModel."""

    page_loaded = Signal(int)        # a page of rows arrived (its number)

    columns = ResponsesModel.columns

    def __init__(self, read: Callable[..., Any], parent: Any = None) -> None:
        """``read`` is DbSession.read: ``read(key, fn, on_done, on_error)``."""
        super().__init__(parent)
        self._read = read
        self.run_id: str | None = None
        self.with_overrides = True
        self.pks: list[int] = []
        self._rows: dict[int, ResponseSummary] = {}
        self._asked: set[int] = set()
        self._generation = 0

    def set_responses(self, run_id: str | None, pks: list[int], *, with_overrides: bool = True,
                      first_rows: list[ResponseSummary] = ()) -> None:  # type: ignore[assignment]
        """Show these responses; ``first_rows``: the first page, read with the keys (one trip, not two)."""
        self.beginResetModel()
        self._generation += 1
        self.run_id, self.pks, self.with_overrides = run_id, list(pks), with_overrides
        self._rows = {s.response_pk: s for s in first_rows}
        self._asked = {0} if first_rows else set()
        self.endResetModel()

    def row_of(self, response_pk: int) -> int:
        try:
            return self.pks.index(response_pk)
        except ValueError:
            return -1

    def pk_at(self, row: int) -> int | None:
        return self.pks[row] if 0 <= row < len(self.pks) else None

    def row_at(self, row: int) -> ResponseSummary | None:
        pk = self.pk_at(row)
        return None if pk is None else self._rows.get(pk)

    def loaded_rows(self) -> int:
        return len(self._rows)

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.pks)

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role in (Qt.ItemDataRole.DisplayRole,
                                                                  Qt.ItemDataRole.ToolTipRole):
            return self.columns[section][0]
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        item = self.row_at(index.row())
        if item is None:
            if role == Qt.ItemDataRole.DisplayRole:
                self._ask(index.row() // PAGE)
                return NOT_READ
            return None
        if role == Qt.ItemDataRole.DisplayRole:
            value = self.columns[index.column()][1](item)
            return "" if value is None else str(value)
        if role == ROW_ROLE:
            return item
        if role == Qt.ItemDataRole.ToolTipRole:
            value = self.columns[index.column()][1](item)
            return safe_tooltip(str(value)) if value else None
        if role == Qt.ItemDataRole.BackgroundRole and index.column() == 4:
            return tint({True: "supported", False: "not_supported", None: "pending"}[item.supported])
        return None

    def _ask(self, page: int) -> None:
        if page in self._asked or self.run_id is None:
            return
        self._asked.add(page)
        run_id, pks, generation, overrides = self.run_id, self.pks[page * PAGE:(page + 1) * PAGE], \
            self._generation, self.with_overrides

        def work(st: Store) -> list[ResponseSummary]:
            return page_summaries(st, run_id, pks, with_overrides=overrides)

        self._read(f"responses-page:{generation}:{page}", work,
                   lambda rows: self._on_page(generation, page, rows),
                   lambda _msg: self._asked.discard(page), priority=2)

    def _on_page(self, generation: int, page: int, rows: list[ResponseSummary]) -> None:
        if generation != self._generation:
            return
        for s in rows:
            self._rows[s.response_pk] = s
        first, last = page * PAGE, min(len(self.pks), (page + 1) * PAGE) - 1
        if last >= first:
            self.dataChanged.emit(self.index(first, 0), self.index(last, self.columnCount() - 1))
        self.page_loaded.emit(page)
