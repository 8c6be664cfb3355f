"""Text that does not fit is cut with "…" and the whole text goes in the tooltip.

Only plain text: the label never renders markup, and its tooltip is escaped (safe_tooltip).
"""
from __future__ import annotations

from PySide6.QtCore import QSize, Qt
from PySide6.QtGui import QPainter, QResizeEvent
from PySide6.QtWidgets import QFrame, QLineEdit, QSizePolicy, QWidget

from .theme import safe_tooltip


class ElidedLabel(QFrame):
    """One or more lines of plain text, each cut with "…" to the label's width; when any line is
    cut, the tooltip holds the whole text. Its minimum width is small and fixed, so a long text
    never makes the window grow."""

    def __init__(self, text: str = "", parent: QWidget | None = None, *, min_chars: int = 8) -> None:
        super().__init__(parent)
        self._text = ""
        self._min_chars = min_chars
        self._extra_tip = ""
        self.setSizePolicy(QSizePolicy.Policy.Preferred, QSizePolicy.Policy.Preferred)
        self.setText(text)

    def text(self) -> str:
        return self._text

    def setText(self, text: str) -> None:
        self._text = text or ""
        self.updateGeometry()
        self._update_tooltip()
        self.update()

    def clear(self) -> None:
        self.setText("")

    def set_tooltip_extra(self, text: str) -> None:
        """A tooltip shown even when nothing is cut (it is added after the whole text when it is)."""
        self._extra_tip = text
        self._update_tooltip()

    def lines(self) -> list[str]:
        return self._text.split("\n") if self._text else []

    def shown_lines(self) -> list[str]:
        """The lines as painted: each cut to the width inside the frame."""
        fm = self.fontMetrics()
        width = max(0, self.contentsRect().width() - 4)
        return [fm.elidedText(line, Qt.TextElideMode.ElideRight, width) for line in self.lines()]

    def is_elided(self) -> bool:
        return self.shown_lines() != self.lines()

    def _update_tooltip(self) -> None:
        parts = [self._text] if self._text and self.is_elided() else []
        if self._extra_tip:
            parts.append(self._extra_tip)
        self.setToolTip(safe_tooltip("\n\n".join(parts)) if parts else "")

    def sizeHint(self) -> QSize:
        fm = self.fontMetrics()
        m = self.contentsMargins()
        lines = self.lines() or [""]
        # the painted width (contents less 2 px a side) plus a pixel's slack: the whole line fits, uncut
        width = max(fm.horizontalAdvance(line) for line in lines) + 1
        return QSize(width + m.left() + m.right() + 4 + 1, fm.height() * len(lines) + m.top() + m.bottom() + 2)

    def minimumSizeHint(self) -> QSize:
        fm = self.fontMetrics()
        m = self.contentsMargins()
        lines = max(1, len(self.lines()))
        return QSize(fm.averageCharWidth() * self._min_chars + m.left() + m.right(),
                     fm.height() * lines + m.top() + m.bottom() + 2)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._update_tooltip()

    def paintEvent(self, event: object) -> None:
        super().paintEvent(event)  # type: ignore[arg-type]
        painter = QPainter(self)
        rect = self.contentsRect().adjusted(2, 1, -2, -1)
        fm = self.fontMetrics()
        shown = self.shown_lines()
        top = rect.top() + max(0, (rect.height() - fm.height() * len(shown)) // 2)
        for i, line in enumerate(shown):
            painter.drawText(rect.left(), top + i * fm.height() + fm.ascent(), line)
        painter.end()


def placeholder_with_tooltip(edit: QLineEdit, text: str) -> None:
    """A placeholder that Qt cuts in a narrow field, with the whole of it in the tooltip."""
    edit.setPlaceholderText(text)
    if not edit.toolTip():
        edit.setToolTip(safe_tooltip(text))
