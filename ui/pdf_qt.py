"""Qt's PDF writer for reports, used when Chromium is missing; registered with the engine on import."""
from __future__ import annotations

import os
from pathlib import Path

from PySide6.QtCore import QMarginsF
from PySide6.QtGui import QPageLayout, QPageSize, QPdfWriter, QTextDocument
from PySide6.QtWidgets import QApplication

from sourcecheckup.report.pdf import register_pdf_writer


def pdf_with_qt(html: str, path: Path) -> None:
    """Qt's rich-text engine: fewer CSS features (no SVG charts), but page numbers and the same text."""
    app = QApplication.instance()
    if app is None:  # outside the app (a test, a script): no window is shown, so no display is needed
        if not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        app = QApplication([])  # noqa: F841 - fonts need an application
    writer = QPdfWriter(str(path))
    writer.setPageSize(QPageSize(QPageSize.PageSizeId.A4))
    writer.setPageMargins(QMarginsF(12, 12, 12, 16), QPageLayout.Unit.Millimeter)
    writer.setTitle("SourceCheckup report")
    doc = QTextDocument()
    doc.setHtml(html)
    doc.print_(writer)  # paginates and prints the page number at the foot of each page


register_pdf_writer("qt", pdf_with_qt)
