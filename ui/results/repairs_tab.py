"""The Repairs tab: the open answer's unsupported statements, each with "Find a source" (PubMed, Europe PMC,
Crossref) and "Open-access copy" (of its cited paywalled paper), run off the GUI thread with a Cancel; what
was offered, with its verdict and quote, or "no supporting source found" with the candidates tried."""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import Signal
from PySide6.QtWidgets import (
    QHBoxLayout,
    QListWidget,
    QListWidgetItem,
    QPlainTextEdit,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from sourcecheckup.models import StatementStatus
from sourcecheckup.references import repair

from ..widgets import plain_label
from ..worker import RepairThread

NO_STATEMENTS = "No unsupported statements in this answer"


class RepairsTab(QWidget):
    repair_finished = Signal(str, str)   # run id, status

    def __init__(self, page: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.page = page
        self.host = page.host
        self.worker: RepairThread | None = None
        self._acceptable: str | None = None   # the kind of the current statement's offered, unaccepted repair
        self.endpoints: dict[str, str] = {}   # the services' base URLs when not the public ones (tests)
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.statements = QListWidget()
        self.statements.currentRowChanged.connect(lambda _row: self._show_current())
        lay.addWidget(self.statements, 1)
        row = QHBoxLayout()
        self.find_btn = QPushButton("Find a source")
        self.find_btn.setToolTip("Search PubMed, Europe PMC and Crossref for a paper that supports this statement; "
                                 "each candidate is judged by the run's judge")
        self.find_btn.clicked.connect(lambda: self.start(open_access=False))
        self.oa_btn = QPushButton("Open-access copy")
        self.oa_btn.setToolTip("Look up an open-access copy of the cited paper (Unpaywall, Europe PMC) and judge "
                               "the statement against it")
        self.oa_btn.clicked.connect(lambda: self.start(open_access=True))
        self.cancel_btn = QPushButton("Cancel")
        self.cancel_btn.setVisible(False)
        self.cancel_btn.clicked.connect(lambda: self.cancel())
        self.accept_btn = QPushButton("Accept")
        self.accept_btn.setToolTip("Accept the source offered for this statement: `sourcecheckup revised RUN "
                                   "--repairs` then cites it in the revised answer")
        self.accept_btn.setEnabled(False)
        self.accept_btn.clicked.connect(lambda: self.accept())
        for b in (self.find_btn, self.oa_btn, self.accept_btn, self.cancel_btn):
            row.addWidget(b)
        self.status_label = plain_label(selectable=False)
        row.addWidget(self.status_label, 1)
        lay.addLayout(row)
        self.detail = QPlainTextEdit()
        self.detail.setReadOnly(True)
        lay.addWidget(self.detail, 1)

    def load(self, assessment: Any) -> None:
        """The open answer's unsupported statements, from the assessment the other tabs show."""
        self.statements.clear()
        if assessment is None:
            return
        for sa in assessment.statements:
            if sa.status is StatementStatus.NOT_SUPPORTED:
                item = QListWidgetItem(f"s{sa.row.statement.index + 1}: {sa.row.statement.text}")
                item.setData(256, sa.row.pk)
                self.statements.addItem(item)
        if not self.statements.count():
            self.detail.setPlainText(NO_STATEMENTS)
        else:
            self.statements.setCurrentRow(0)

    def current_statement(self) -> int | None:
        item = self.statements.currentItem()
        return int(item.data(256)) if item is not None else None

    def _show_current(self) -> None:
        pk, rid = self.current_statement(), self.page.run_id
        self._acceptable = None
        self.accept_btn.setEnabled(False)
        if pk is None or not rid:
            return
        lines = []
        for r in self.host.store.repairs(rid):
            if r["statement_pk"] != pk:
                continue
            what = "Open-access copy" if r["kind"] == "open_access" else "Find a source"
            offered = next((c for c in r["candidates"] if c["key"] == r["offered_key"]), None)
            if offered:
                accepted = r["decision"] == "accepted"
                if not accepted and (self._acceptable is None or r["kind"] == "find"):
                    self._acceptable = r["kind"]   # a found source before an open-access copy
                lines.append(f"{what}: {offered['url']} — {offered['title']}\n  verdict: {offered['label']}; quote: "
                             f"“{offered['quote']}”\n  found by: {offered['found_by']}"
                             + ("\n  accepted" if accepted else ""))
            else:
                lines.append(f"{what}: " + (repair.NO_SOURCE if r["status"] == "none_found" else "not finished")
                             + f" ({len(r['candidates'])} candidate(s) tried)")
            lines += [f"  service failed: {e}" for e in r["errors"]]
        self.detail.setPlainText("\n".join(lines) or "Not repaired yet")
        self.accept_btn.setEnabled(self._acceptable is not None and self.worker is None)

    def accept(self) -> bool:
        """Accept the offered repair of the current statement (a small write, on the GUI thread)."""
        pk, rid, kind = self.current_statement(), self.page.run_id, self._acceptable
        if pk is None or not rid or kind is None:
            return False
        try:
            row = repair.accept_repair(self.host.store, rid, pk, kind)
        except repair.RepairError as exc:
            self.status_label.setText(str(exc))
            return False
        self.status_label.setText(f"Accepted {row.get('offered_key') or 'the offered source'}: "
                                  f"`sourcecheckup revised {rid} --repairs` cites it")
        self._show_current()
        return True

    def start(self, *, open_access: bool) -> bool:
        pk, rid = self.current_statement(), self.page.run_id
        if pk is None or not rid or self.worker is not None:
            return False
        settings = self.host.settings
        self.worker = RepairThread(self.host.db_path, rid, pk, open_access=open_access,
                                   contact_email=settings.contact_email, endpoints=self.endpoints,
                                   allow_hosts=tuple(settings.allow_hosts), parent=self)
        self.worker.progress.connect(self.status_label.setText)
        self.worker.done.connect(self._done)
        self._busy(True)
        self.status_label.setText("Searching…" if not open_access else "Looking up an open-access copy…")
        self.worker.start()
        return True

    def cancel(self) -> None:
        if self.worker is not None:
            self.worker.cancel()

    def _busy(self, busy: bool) -> None:
        self.find_btn.setEnabled(not busy)
        self.oa_btn.setEnabled(not busy)
        self.accept_btn.setEnabled(not busy and self._acceptable is not None)
        self.cancel_btn.setVisible(busy)

    def _done(self, run_id: str, status: str, message: str) -> None:
        worker, self.worker = self.worker, None
        if worker is not None:
            worker.wait(10_000)
        self._busy(False)
        self.status_label.setText(f"{status}: {message}")
        self._show_current()
        self.repair_finished.emit(run_id, status)
