"""Naming a run and writing a note on it (Store.set_run_label); both show in Runs and in reports."""
from __future__ import annotations

from PySide6.QtWidgets import QDialog, QDialogButtonBox, QFormLayout, QLineEdit, QPlainTextEdit, QVBoxLayout, QWidget

from sourcecheckup.store import RunRow

NAME_MAX_CHARS = 120
NOTE_MAX_CHARS = 4000


class RunLabelDialog(QDialog):
    """The run's name and note, prefilled with what is stored."""

    def __init__(self, run: RunRow, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle(f"Name and note — run {run.id}")
        layout = QVBoxLayout(self)
        form = QFormLayout()
        self.name_edit = QLineEdit(run.name)
        self.name_edit.setMaxLength(NAME_MAX_CHARS)
        self.name_edit.setPlaceholderText("e.g. GPT-4o, cardiology questions, March")
        form.addRow("Name", self.name_edit)
        self.note_edit = QPlainTextEdit(run.note)
        self.note_edit.setPlaceholderText("What this run is for, what changed since the last one…")
        self.note_edit.setTabChangesFocus(True)
        form.addRow("Note", self.note_edit)
        layout.addLayout(form)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Save | QDialogButtonBox.StandardButton.Cancel)
        buttons.accepted.connect(self.accept)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
        self.resize(460, 240)

    def name(self) -> str:
        return self.name_edit.text().strip()

    def note(self) -> str:
        return self.note_edit.toPlainText().strip()[:NOTE_MAX_CHARS]
