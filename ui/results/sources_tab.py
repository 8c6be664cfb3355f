"""The Sources tab: a response's cited sources, what fetching each gave, its reference check, and a way
to open it. Below the table, the selected source's reference check with its evidence."""
from __future__ import annotations

from PySide6.QtCore import QModelIndex, Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QPlainTextEdit, QPushButton, QSplitter, QVBoxLayout, QWidget

from ..models import SourcesModel
from ..widgets import table_view

REFERENCE_HINT = "Select a source to see its reference check (DOIs, PMIDs and written references are checked)."


class SourcesTab(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        sl = QVBoxLayout(self)
        self.sources_model = SourcesModel(self)
        self.sources_table = table_view(self.sources_model)
        for col, width in enumerate((30, 200, 100, 150, 130, 150, 120, 100)):
            self.sources_table.setColumnWidth(col, width)
        # the Reference column is the model's last; shown beside the fetch outcome
        header = self.sources_table.horizontalHeader()
        header.moveSection(header.visualIndex(SourcesModel.REFERENCE_COLUMN), 5)
        self.sources_table.setColumnWidth(SourcesModel.REFERENCE_COLUMN, 150)
        self.sources_table.doubleClicked.connect(lambda idx: self.open_source_in_browser(idx.row()))
        self.sources_table.selectionModel().currentRowChanged.connect(self._on_row_changed)
        split = QSplitter(Qt.Orientation.Vertical)
        split.addWidget(self.sources_table)
        self.reference_pane = QPlainTextEdit()   # plain text: a title or an evidence sentence is never markup
        self.sources_model.modelReset.connect(lambda: self.reference_pane.setPlainText(""))
        self.reference_pane.setReadOnly(True)
        self.reference_pane.setPlaceholderText(REFERENCE_HINT)
        split.addWidget(self.reference_pane)
        split.setSizes([240, 110])
        sl.addWidget(split, 1)
        b = QPushButton("Open in browser")
        b.clicked.connect(lambda: self.open_source_in_browser(self.sources_table.currentIndex().row()))
        sl.addWidget(b, 0, Qt.AlignmentFlag.AlignLeft)

    def _on_row_changed(self, current: QModelIndex, _previous: QModelIndex) -> None:
        self.show_reference(current.row())

    def show_reference(self, row: int) -> None:
        """The selected source's reference check in the pane below the table."""
        s = self.sources_model.row_at(row)
        self.reference_pane.setPlainText(s.reference_detail if s is not None else "")

    def select_url(self, row: int, url: str) -> None:
        src = self.sources_model.row_at(row)
        if src is not None and src.url == url:
            self.sources_table.selectRow(row)

    def open_source_in_browser(self, row: int) -> None:
        s = self.sources_model.row_at(row)
        if s is not None and s.url.lower().startswith(("http://", "https://")):
            QDesktopServices.openUrl(QUrl(s.url))
