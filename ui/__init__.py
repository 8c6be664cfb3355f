"""The SourceCheckup desktop app (PySide6): a view over the engine and its SQLite store."""

from . import pdf_qt  # noqa: E402,F401  (registers Qt's PDF writer with the engine for machines without Chromium)
