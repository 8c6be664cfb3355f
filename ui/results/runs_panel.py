"""The Runs tab: the runs stored in the database, to open, resume, name or fetch again."""
from __future__ import annotations

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QDialog, QHBoxLayout, QPushButton, QVBoxLayout, QWidget

from sourcecheckup.metrics import JUDGES_ONLY

from ..host import Host
from ..models import RunsModel
from ..run_label import RunLabelDialog
from ..widgets import plain_label, table_view

# run, started, the three figures, responses: what comparing runs needs, visible once the tab widens
RUNS_COLUMN_WIDTHS = (150, 118, 64, 64, 64, 70, 80)
# the Runs tab's share of the page while it is shown (the Input tab keeps the narrow column)
RUNS_SHARE = 0.5


class RunsPanel(QWidget):
    def __init__(self, host: Host, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        rl = QVBoxLayout(self)
        self.runs_model = RunsModel(self)
        self.runs_table = table_view(self.runs_model)
        self.runs_table.horizontalHeader().setTextElideMode(Qt.TextElideMode.ElideRight)
        for col, width in enumerate(RUNS_COLUMN_WIDTHS):
            self.runs_table.setColumnWidth(col, width)
        # the figures' basis, beside them (the same as `sourcecheckup runs` and `show`)
        rl.addWidget(plain_label(f"Support and validity: {JUDGES_ONLY} (reviewer overrides not applied).",
                                 selectable=False))
        self.runs_table.doubleClicked.connect(lambda idx: self.host.results.open_run(self.runs_model.rows[idx.row()].id))
        rl.addWidget(self.runs_table, 1)
        row = QHBoxLayout()
        b = QPushButton("Open")
        b.clicked.connect(self.open_selected_run)
        row.addWidget(b)
        self.resume_btn = QPushButton("Resume")
        self.resume_btn.clicked.connect(self.resume_selected_run)
        row.addWidget(self.resume_btn)
        b = QPushButton("Refresh")
        b.clicked.connect(lambda: self.host.refresh_runs())
        row.addWidget(b)
        rl.addLayout(row)
        self.label_run_btn = QPushButton("Name and note…")
        self.label_run_btn.setToolTip("Name the selected run and write a note on it (shown here and in its reports)")
        self.label_run_btn.clicked.connect(self.label_selected_run)
        rl.addWidget(self.label_run_btn)
        self.refetch_btn = QPushButton("Fetch sources again")
        self.refetch_btn.setToolTip("Audit the selected run's answers again with every source fetched anew (not "
                                    "from the cache), under the current Settings: hosts allowed since, pages "
                                    "that were down, and pages changed since are read again")
        self.refetch_btn.clicked.connect(self.refetch_selected_run)
        rl.addWidget(self.refetch_btn)

    def selected_run_id(self) -> str | None:
        """The run selected in the list, else the run on screen."""
        idx = self.runs_table.currentIndex()
        row = self.runs_model.row_at(idx.row()) if idx.isValid() else None
        return row.id if row else self.host.results.run_id

    def open_selected_run(self) -> None:
        rid = self.selected_run_id()
        if rid:
            self.host.results.open_run(rid)

    def label_selected_run(self) -> bool:
        """Ask for the selected run's name and note and store them."""
        rid = self.selected_run_id()
        if not rid:
            self.host.show_status("Select a run in the Runs list first")
            return False
        dialog = RunLabelDialog(self.host.store.get_run(rid), self)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return False
        self.set_run_label(rid, dialog.name(), dialog.note())
        return True

    def set_run_label(self, run_id: str, name: str, note: str) -> None:
        run = self.host.store.set_run_label(run_id, name=name, note=note)
        self.host.show_status(f"Run {run.id} named “{run.name}”" if run.name else f"Run {run.id}: note saved")
        self.host.update_title()
        self.host.refresh_runs()

    def resume_selected_run(self) -> None:
        rid = self.selected_run_id()
        if not rid:
            return
        run = self.host.store.get_run(rid)
        if run.status == "completed":
            self.host.show_status(f"run {rid} is already complete")
            return
        self.host.audit.resume_run(rid)

    def refetch_selected_run(self) -> None:
        rid = self.selected_run_id()
        if rid:
            self.host.audit.refetch_run(rid)
