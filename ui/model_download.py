"""Settings → Judges → Download…: the catalogue of recommended checkers (size, licence, hardware,
published accuracy), a pull off the GUI thread with a progress bar and Cancel, "Import from folder…"
for machines without internet, Remove, and "Use as judge", which puts ``local:NAME`` in the Judges field.

Every action is an engine call (``sourcecheckup.judges.models_hub``), the same as
``sourcecheckup models list | pull | import | remove``; this module only shows and asks.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QModelIndex, QObject, Qt, QThread, Signal
from PySide6.QtWidgets import (
    QAbstractButton,
    QDialog,
    QDialogButtonBox,
    QFileDialog,
    QHBoxLayout,
    QInputDialog,
    QMessageBox,
    QProgressBar,
    QPushButton,
    QVBoxLayout,
    QWidget,
)

from sourcecheckup.judges import models_hub
from sourcecheckup.judges.models_hub import CatalogueEntry, InstalledModel, PullProgress

from .models import _RowModel
from .widgets import plain_label, table_view

NON_COMMERCIAL = "⚠ non-commercial"
UNCLEAR = "⚠ commercial use unclear"


@dataclass(frozen=True)
class ModelRow:
    """One line of the dialog: a catalogue entry, an installed model, or both."""

    name: str
    entry: CatalogueEntry | None
    installed: InstalledModel | None
    partial: bool = False        # an unfinished pull is kept: Download resumes it

    @property
    def downloadable(self) -> bool:
        return self.entry is not None and self.entry.via == "huggingface" and self.installed is None

    @property
    def status(self) -> str:
        if self.installed is not None:
            return "installed" if self.installed.source == "hub" else "installed (imported)"
        if self.entry is not None and self.entry.via == "ollama":
            return "via Ollama"
        return "partly downloaded" if self.partial else "not installed"

    @property
    def licence(self) -> str:
        licence = self.entry.licence if self.entry else (self.installed.licence if self.installed else "")
        if self.entry is not None and self.entry.commercial_use is False:
            return f"{NON_COMMERCIAL}: {licence}"
        if self.entry is not None and self.entry.commercial_use is None:
            return f"{UNCLEAR}: {licence}"
        return licence or "–"

    def details(self) -> str:
        """Everything known about the model, for the pane under the table."""
        lines = [self.name]
        if self.entry is not None:
            e = self.entry
            lines += [f"{e.repo} · {e.kind} · {e.parameters} · {e.size}",
                      f"Licence: {self.licence}",
                      f"Hardware: {e.hardware}",
                      f"Accuracy (published by its authors): {e.accuracy}",
                      f"Source: {e.citation}"]
            if e.via == "ollama":
                lines.append(f"Not downloaded here: {e.judge}.")
        if self.installed is not None:
            m = self.installed
            lines += [f"Installed in {m.path} ({m.size_bytes / 1e6:.1f} MB, "
                      f"{'pulled from ' + m.repo if m.source == 'hub' else 'imported from a folder'})",
                      f"Judge with: {m.judge_spec} (works offline)"]
        return "\n".join(lines)


def model_rows() -> list[ModelRow]:
    """The catalogue, each entry with its installed copy, then the other installed models."""
    have = {m.name: m for m in models_hub.installed()}
    partial_root = models_hub.models_dir() / ".partial"
    rows = [ModelRow(e.name, e, have.pop(e.name, None), (partial_root / e.name).is_dir())
            for e in models_hub.catalogue()]
    rows += [ModelRow(m.name, None, m) for m in have.values()]
    return rows


class ModelRowsModel(_RowModel[ModelRow]):
    columns = (
        ("Model", lambda r: r.name),
        ("Status", lambda r: r.status),
        ("Size", lambda r: r.entry.size if r.entry else
         (f"{r.installed.size_bytes / 1e6:.1f} MB" if r.installed else "")),
        ("Licence", lambda r: r.licence),
        ("Hardware", lambda r: r.entry.hardware if r.entry else ""),
        ("Published accuracy", lambda r: r.entry.accuracy if r.entry else ""),
    )


def unreachable_text(exc: "models_hub.HubUnreachable") -> str:
    """What the dialog says when the download could not reach the hub: what happened, then what to do."""
    kept = " The part downloaded so far is kept; Download again resumes it." if exc.partial else ""
    return (f"⚠ The download could not reach the model hub ({exc.hub}): this computer seems to have no internet "
            f"connection, or the address does not resolve.{kept}\n"
            "What to do: download the model on a computer with internet (`sourcecheckup models pull NAME` there, "
            "then copy its folder here) and use Import from folder…; or, behind a mirror or proxy, set "
            "HF_ENDPOINT to the mirror's address and start SourceCheckup again."
            + (f"\n(Network error: {exc.cause})" if exc.cause else ""))


class HubJob(QThread):
    """One engine call (pull or import) off the GUI thread.

    ``progress(PullProgress)`` while it runs, then exactly one of ``installed(InstalledModel)``,
    ``cancelled(reason)`` or ``failed(reason)``."""

    progress = Signal(object)
    installed = Signal(object)
    cancelled = Signal(str)
    failed = Signal(str)

    def __init__(self, work: Callable[[Callable[[PullProgress], None], threading.Event], InstalledModel],
                 parent: QObject | None = None) -> None:
        super().__init__(parent)
        self.work = work
        self.cancel = threading.Event()

    def run(self) -> None:  # noqa: D401 - QThread entry point
        try:
            model = self.work(self.progress.emit, self.cancel)
        except models_hub.PullCancelled as exc:
            self.cancelled.emit(str(exc))
        except models_hub.HubUnreachable as exc:
            self.failed.emit(unreachable_text(exc))
        except models_hub.ModelHubError as exc:
            self.failed.emit(str(exc))
        except Exception as exc:   # told in the dialog, never raised into Qt's event loop
            self.failed.emit(f"{type(exc).__name__}: {exc}")
        else:
            self.installed.emit(model)


class ModelDownloadDialog(QDialog):
    """The recommended checkers and the installed models; ``spec_chosen(local:NAME)`` on "Use as judge"."""

    spec_chosen = Signal(str)
    job_finished = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Download a checker")
        self.setMinimumSize(900, 440)
        self.job: HubJob | None = None
        self.last_progress: PullProgress | None = None
        self.licence_box: QMessageBox | None = None
        layout = QVBoxLayout(self)
        layout.addWidget(plain_label(
            "Open fact-checking models that judge on this computer, offline once installed. Accuracy is what "
            f"their authors published. Models are kept in {models_hub.models_dir()}; downloads come from "
            f"{models_hub.endpoint()}."))
        self.model = ModelRowsModel(self)
        self.table = table_view(self.model)
        self.table.horizontalHeader().setStretchLastSection(True)
        layout.addWidget(self.table, 1)
        self.details = plain_label()
        self.details.setMinimumHeight(90)
        self.details.setAlignment(Qt.AlignmentFlag.AlignTop | Qt.AlignmentFlag.AlignLeft)
        layout.addWidget(self.details)
        self.progress_bar = QProgressBar()
        self.progress_bar.setRange(0, 100)
        self.progress_bar.setValue(0)
        self.progress_bar.setVisible(False)
        layout.addWidget(self.progress_bar)
        self.status = plain_label(selectable=True)
        self.status.setVisible(False)
        layout.addWidget(self.status)

        row = QHBoxLayout()
        self.download_button = QPushButton("Download")
        self.download_button.clicked.connect(self.download_selected)
        self.cancel_button = QPushButton("Cancel download")
        self.cancel_button.setEnabled(False)
        self.cancel_button.clicked.connect(self.cancel_job)
        self.import_button = QPushButton("Import from folder…")
        self.import_button.setToolTip("Install a model folder copied from another computer (no internet needed)")
        self.import_button.clicked.connect(self.choose_import_folder)
        self.remove_button = QPushButton("Remove")
        self.remove_button.clicked.connect(self.remove_selected)
        self.use_button = QPushButton("Use as judge")
        self.use_button.setToolTip("Put local:NAME first in the Judges field")
        self.use_button.clicked.connect(self.use_selected)
        for button in (self.download_button, self.cancel_button, self.import_button, self.remove_button,
                       self.use_button):
            row.addWidget(button)
        row.addStretch(1)
        layout.addLayout(row)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)

        self.table.selectionModel().currentRowChanged.connect(lambda *_: self._update_actions())
        self.refresh()
        if self.model.rowCount():
            self.table.selectRow(0)
        widths = (190, 130, 150, 210, 230)
        for column, width in enumerate(widths):
            self.table.setColumnWidth(column, width)

    # -- the table ---------------------------------------------------------------------------
    def refresh(self, select: str | None = None) -> None:
        """Read the catalogue and the models folder again; keep (or move to) the row named ``select``."""
        current = select or (row.name if (row := self.selected()) else None)
        self.model.set_rows(model_rows())
        names = [r.name for r in self.model.rows]
        if current in names:
            self.table.selectRow(names.index(current))
        self._update_actions()

    def selected(self) -> ModelRow | None:
        index = self.table.selectionModel().currentIndex() if self.table.selectionModel() else QModelIndex()
        return self.model.row_at(index.row()) if index.isValid() else None

    def select(self, name: str) -> None:
        names = [r.name for r in self.model.rows]
        self.table.selectRow(names.index(name))

    def _update_actions(self) -> None:
        row = self.selected()
        busy = self.job is not None and self.job.isRunning()
        self.details.setText(row.details() if row else "")
        self.download_button.setEnabled(not busy and row is not None and row.downloadable)
        self.download_button.setText("Resume download" if row is not None and row.partial and row.downloadable
                                     else "Download")
        self.remove_button.setEnabled(not busy and row is not None and (row.installed is not None or row.partial))
        self.use_button.setEnabled(row is not None and row.installed is not None)
        self.import_button.setEnabled(not busy)
        self.cancel_button.setEnabled(busy)

    def _say(self, text: str) -> None:
        self.status.setText(text)
        self.status.setVisible(True)

    # -- download ----------------------------------------------------------------------------
    def download_selected(self) -> None:
        """Download the selected catalogue model; a licence that limits its use is shown first."""
        row = self.selected()
        if row is None or not row.downloadable or row.entry is None:
            return
        warning = row.entry.licence_warning
        if not warning:
            self.start_pull(row.entry.name)
            return
        box = QMessageBox(QMessageBox.Icon.Warning, "Licence", "", QMessageBox.StandardButton.NoButton, self)
        box.setTextFormat(Qt.TextFormat.PlainText)
        box.setText(f"{warning}\n\nDownload {row.entry.name} ({row.entry.size})?")
        accept = box.addButton("Download", QMessageBox.ButtonRole.AcceptRole)
        box.addButton(QMessageBox.StandardButton.Cancel)
        name = row.entry.name

        def answered(button: QAbstractButton) -> None:
            self.licence_box = None
            if button is accept:
                self.start_pull(name)
            else:
                self._say(f"{name} was not downloaded.")

        box.buttonClicked.connect(answered)
        self.licence_box = box
        box.open()

    def start_pull(self, name: str) -> None:
        self.last_progress = None
        self.progress_bar.setRange(0, 100)
        self.progress_bar.setValue(0)
        self.progress_bar.setFormat("%p%")
        self._say(f"Downloading {name}…")
        self._run(lambda progress, cancel: models_hub.pull(name, progress=progress, cancel=cancel))

    def _run(self, work: Callable[[Callable[[PullProgress], None], threading.Event], InstalledModel]) -> None:
        if self.job is not None and self.job.isRunning():
            return
        job = HubJob(work, self)
        job.progress.connect(self._show_progress)
        job.installed.connect(self._installed)
        job.cancelled.connect(self._cancelled)
        job.failed.connect(self._failed)
        job.finished.connect(self._job_done)
        self.job = job
        self.progress_bar.setVisible(True)
        job.start()
        self._update_actions()

    def _show_progress(self, p: PullProgress) -> None:
        self.last_progress = p
        percent = int(100 * p.done_bytes / p.total_bytes) if p.total_bytes else 100
        self.progress_bar.setValue(min(percent, 100))
        self.progress_bar.setFormat(f"%p% · {p.done_bytes / 1e6:.1f} of {p.total_bytes / 1e6:.1f} MB · "
                                    f"file {p.files_done + 1} of {p.files_total}: {p.file}")

    def cancel_job(self) -> None:
        if self.job is not None and self.job.isRunning():
            self.job.cancel.set()
            self._say("Cancelling…")

    def _installed(self, model: InstalledModel) -> None:
        self.refresh(select=model.name)
        self._say(f"{model.name} is installed and works offline. \"Use as judge\" puts {model.judge_spec} "
                  "in the Judges field.")

    def _cancelled(self, reason: str) -> None:
        self.refresh()
        self._say(f"Cancelled: {reason}.")

    def _failed(self, reason: str) -> None:
        self.refresh()
        self.progress_bar.setVisible(False)   # nothing is under way: no bar left at 0% looking busy
        self._say(reason if reason.startswith("⚠") else f"⚠ {reason}")

    def _job_done(self) -> None:
        if self.progress_bar.maximum() == 0:    # an import's busy bar
            self.progress_bar.setVisible(False)
            self.progress_bar.setRange(0, 100)
        self._update_actions()
        self.job_finished.emit()

    # -- import, remove, use -----------------------------------------------------------------
    def choose_import_folder(self) -> None:
        folder = QFileDialog.getExistingDirectory(self, "Import a model folder")
        if not folder:
            return
        name, ok = QInputDialog.getText(self, "Import a model folder", "Judge with local:NAME, NAME =",
                                        text=Path(folder).name.lower())
        if ok and name.strip():
            self.import_from(Path(folder), name.strip())

    def import_from(self, folder: Path, name: str) -> None:
        """Copy ``folder`` in as ``name`` off the GUI thread (a model folder can be gigabytes)."""
        self.progress_bar.setRange(0, 0)     # a copy has no byte count to show: busy
        self._say(f"Importing {folder} as {name}…")
        self._run(lambda _progress, _cancel: models_hub.import_folder(folder, name))

    def remove_selected(self) -> None:
        row = self.selected()
        if row is None or (row.installed is None and not row.partial):
            return
        answer = QMessageBox.question(self, "Remove a model", f"Delete {row.name} from this computer?")
        if answer != QMessageBox.StandardButton.Yes:
            return
        try:
            folder = models_hub.remove(row.name)
        except models_hub.ModelHubError as exc:
            self._say(f"⚠ {exc}")
            return
        self.refresh(select=row.name)
        self._say(f"Removed {folder}.")

    def use_selected(self) -> None:
        row = self.selected()
        if row is None or row.installed is None:
            return
        self.spec_chosen.emit(row.installed.judge_spec)
        self._say(f"{row.installed.judge_spec} is now the first judge in the Judges field.")

    # -- closing -------------------------------------------------------------------------------
    def shutdown(self, wait_ms: int = 10_000) -> None:
        """Cancel a pull in flight (its bytes are kept to resume) and wait for it to stop."""
        if self.job is not None and self.job.isRunning():
            self.job.cancel.set()
            self.job.wait(wait_ms)

    def done(self, result: int) -> None:
        self.shutdown()
        super().done(result)


__all__ = ["HubJob", "ModelDownloadDialog", "ModelRow", "ModelRowsModel", "model_rows"]
