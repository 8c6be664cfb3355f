"""Export: the open run's report (HTML, PDF, XLSX, JSON, CSV) written off the GUI thread with a busy
indicator in the status bar, and a button to open what was written."""
from __future__ import annotations

from pathlib import Path

from PySide6.QtCore import QObject, Qt, QUrl, Signal
from PySide6.QtGui import QDesktopServices, QGuiApplication
from PySide6.QtWidgets import QFileDialog, QMessageBox, QProgressBar, QPushButton

from sourcecheckup import review
from sourcecheckup.report import write_report
from sourcecheckup.store import Store

from .host import Host
from .theme import safe_tooltip
from .widgets import plain_label

EXPORT_FILTERS = {"html": "HTML report (*.html)", "pdf": "PDF report (*.pdf)",
                  "xlsx": "Excel workbook (*.xlsx)", "json": "JSON (*.json)", "csv": "CSV (*.csv)"}


class Exporter(QObject):
    export_finished = Signal(str, str)  # path written ("" on failure), error message

    def __init__(self, host: Host) -> None:
        super().__init__(host.window())
        self.host = host
        self.last_report: Path | None = None
        self.not_opened_box: QMessageBox | None = None   # the latest "Cannot open the report" message
        # the status bar's widgets (the window places them): a busy bar apart from the run's progress
        self.export_label = plain_label(selectable=False)
        self.export_bar = QProgressBar()
        self.export_bar.setRange(0, 0)
        self.export_bar.setMaximumWidth(120)
        self.export_bar.setVisible(False)
        # after an export: open what was written (hidden until then)
        self.open_report_btn = QPushButton("Open report")
        self.open_report_btn.setFlat(True)
        self.open_report_btn.setVisible(False)
        self.open_report_btn.clicked.connect(self.open_last_report)

    def _open_run(self) -> tuple[str, bool] | None:
        """The open run's id and whether metrics count reviewer overrides; None (and a warning) if none."""
        results = self.host.results
        if not results.run_id:
            self.host.warn("No run open", "Open or audit a run first.")
            return None
        return results.run_id, results.metrics_bar.with_overrides.isChecked()

    def export_run(self, path: str | Path, fmt: str | None = None) -> Path | None:
        """Write the report on the GUI thread (for scripts and tests; the menu uses export_run_async)."""
        got = self._open_run()
        if got is None:
            return None
        rid, with_overrides = got
        store = self.host.store
        overrides = review.overrides(store, rid) if with_overrides else None
        out = write_report(store, rid, path, fmt, overrides=overrides)
        self.host.show_status(f"Report written to {out}")
        return out

    def export_run_async(self, path: str | Path, fmt: str | None = None) -> bool:
        """Write the report off the GUI thread (a PDF takes seconds) with a busy indicator;
        export_finished(path, error) fires when it is done."""
        got = self._open_run()
        if got is None:
            return False
        if self.host.db.busy("export"):
            self.host.show_status("A report is still being written")
            return False
        rid, with_overrides = got
        target = Path(path)

        def work(st: Store) -> str:
            overrides = review.overrides(st, rid) if with_overrides else None
            return str(write_report(st, rid, target, fmt, overrides=overrides))

        kind = (fmt or target.suffix.lstrip(".") or "json").upper()
        self.export_bar.setVisible(True)
        self.export_label.setText(f"Writing the {kind} report…")
        self.host.db.read("export", work, self._on_exported, self._on_export_failed)
        return True

    def _on_exported(self, path: str) -> None:
        self.export_bar.setVisible(False)
        self.export_label.setText("")
        self.last_report = Path(path)
        self.host.settings.export_dir = self.last_report.parent
        self.open_report_btn.setVisible(True)
        self.open_report_btn.setToolTip(safe_tooltip(f"Open {path}"))
        self.host.show_status(f"Report written to {path}")
        self.export_finished.emit(path, "")

    def _on_export_failed(self, message: str) -> None:
        self.export_bar.setVisible(False)
        self.export_label.setText("")
        self.host.warn("Export failed", message)
        self.export_finished.emit("", message)

    def export_start_path(self, fmt: str | None) -> Path:
        """The file name Export offers: in the last export's folder, else Documents."""
        return self.host.settings.export_dir / f"sourcecheckup-{self.host.results.run_id}.{fmt or 'html'}"

    def export_dialog(self, fmt: str | None) -> None:
        if self._open_run() is None:
            return
        chosen = EXPORT_FILTERS[fmt] if fmt else ";;".join(EXPORT_FILTERS.values())
        path, picked = QFileDialog.getSaveFileName(self.host.window(), "Export run", str(self.export_start_path(fmt)),
                                                   chosen)
        if path:
            if fmt is None:
                fmt = next((k for k, v in EXPORT_FILTERS.items() if v == picked), None)
                if Path(path).suffix.lstrip(".").lower() in EXPORT_FILTERS:
                    fmt = Path(path).suffix.lstrip(".").lower()
            self.export_run_async(path, fmt)

    def open_last_report(self) -> bool:
        """Open the report just written with the system's viewer for its kind; when none opens it (no
        viewer for the kind, the file gone), say so with the path, which can be selected and copied."""
        path = self.last_report
        if path is None:
            return False
        if not path.exists():
            self._not_opened(path, "The report is no longer there (moved or deleted since it was written).")
            return False
        if QDesktopServices.openUrl(QUrl.fromLocalFile(str(path))):
            return True
        self._not_opened(path, f"No program on this computer opened it: there may be no viewer for "
                               f"{path.suffix.lstrip('.').upper() or 'this kind of'} files. Open it from a file "
                               "manager or another program; the path is below (select it or use Copy path).")
        return False

    def _not_opened(self, path: Path, why: str) -> QMessageBox:
        box = QMessageBox(QMessageBox.Icon.Warning, "Cannot open the report", f"{why}\n\n{path}",
                          QMessageBox.StandardButton.Ok, self.host.window())
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        copy = box.addButton("Copy path", QMessageBox.ButtonRole.ActionRole)
        copy.clicked.connect(lambda: QGuiApplication.clipboard().setText(str(path)))
        self.not_opened_box = box
        self.host.show_status(f"Could not open {path}")
        box.open()   # non-blocking, as every message of the window
        return box
