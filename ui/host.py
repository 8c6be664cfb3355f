"""What the window's pages and panels may ask of the main window: one typed contract instead of
``host: Any`` and calls into the window's private methods (issue 39)."""
from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:   # the window and its pages import each other's types only for the checker
    from PySide6.QtWidgets import QTabWidget, QWidget

    from sourcecheckup.store import Store

    from .audit_controller import AuditController
    from .db_session import DbSession
    from .results.page import ResultsPage
    from .sample_page import SamplePage
    from .settings import AppSettings


class Host(Protocol):
    """The main window as its parts see it."""

    settings: AppSettings
    db: DbSession          # reads off the GUI thread
    pages: QTabWidget
    results: ResultsPage
    audit: AuditController
    sample_page: SamplePage

    @property
    def store(self) -> Store: ...        # the GUI thread's connection: small writes only

    @property
    def db_path(self) -> Path: ...

    def warn(self, title: str, text: str) -> None: ...          # a modal warning (plain text)

    def show_status(self, text: str, timeout_ms: int = 12000) -> None: ...   # the status line, for a while

    def confirm(self, title: str, text: str) -> bool: ...

    def ask_reviewer(self, force: bool = False) -> str: ...

    def review_current(self, label: str) -> bool: ...

    def step_pair(self, delta: int) -> None: ...

    def refresh_runs(self) -> None: ...

    def show_run(self, run_id: str) -> None: ...

    def update_title(self) -> None: ...

    def close(self) -> bool: ...

    def window(self) -> QWidget: ...     # the parent for dialogs and threads (QWidget.window: the window itself)
