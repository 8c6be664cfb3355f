"""The Sources tab: a response's cited sources, what fetching each gave, and a way to open it."""
from __future__ import annotations

from PySide6.QtCore import Qt, QUrl
from PySide6.QtGui import QDesktopServices
from PySide6.QtWidgets import QPushButton, QVBoxLayout, QWidget

from ..models import SourcesModel
from ..widgets import table_view


class SourcesTab(QWidget):
    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        sl = QVBoxLayout(self)
        self.sources_model = SourcesModel(self)
        self.sources_table = table_view(self.sources_model)
        for col, width in enumerate((30, 200, 100, 150, 130, 150, 120, 100)):
            self.sources_table.setColumnWidth(col, width)
        self.sources_table.doubleClicked.connect(lambda idx: self.open_source_in_browser(idx.row()))
        sl.addWidget(self.sources_table, 1)
        b = QPushButton("Open in browser")
        b.clicked.connect(lambda: self.open_source_in_browser(self.sources_table.currentIndex().row()))
        sl.addWidget(b, 0, Qt.AlignmentFlag.AlignLeft)

    def select_url(self, row: int, url: str) -> None:
        src = self.sources_model.row_at(row)
        if src is not None and src.url == url:
            self.sources_table.selectRow(row)

    def open_source_in_browser(self, row: int) -> None:
        s = self.sources_model.row_at(row)
        if s is not None and s.url.lower().startswith(("http://", "https://")):
            QDesktopServices.openUrl(QUrl(s.url))
