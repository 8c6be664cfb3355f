"""The answer box of the Input tab. Typed or plain-text pastes go in as they are; a paste that brings HTML
(an answer selected in a chat app and copied) goes in as the Markdown answer the engine reads from it
(sourcecheckup.ingest.paste.read_pasted_html), so its links and numbered markers keep their sources."""
from __future__ import annotations

from PySide6.QtCore import QMimeData, Signal
from PySide6.QtWidgets import QPlainTextEdit

from sourcecheckup.ingest.paste import PastedPage, read_pasted_html


class PasteBox(QPlainTextEdit):
    page_pasted = Signal(object)      # the PastedPage just inserted

    def __init__(self) -> None:
        super().__init__()
        self.last_page: PastedPage | None = None

    def insertFromMimeData(self, source: QMimeData) -> None:  # noqa: N802 - Qt's name
        page = read_pasted_html(source.html()) if source.hasHtml() else None
        if page is None or not page.markdown:
            super().insertFromMimeData(source)       # plain text, or HTML without a link: its text is as good
            return
        self.textCursor().insertText(page.markdown)  # plain text only: the page's markup never renders here
        self.last_page = page
        self.page_pasted.emit(page)
