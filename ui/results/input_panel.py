"""The Input tab: a pasted answer (question, model, run name) or a batch of answer files."""
from __future__ import annotations

from pathlib import Path
from typing import Sequence

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QDialog, QFileDialog, QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from sourcecheckup.ingest import CsvMapping, IngestError, IngestResult, load_path, load_text
from sourcecheckup.views.text import count_noun

from ..dialogs import CsvMappingDialog
from ..host import Host
from ..paste_box import PasteBox
from ..theme import safe_tooltip
from ..widgets import plain_label

TABLE_EXTENSIONS = (".csv", ".tsv")
NO_BATCH = "No batch loaded: the pasted answer will be audited."


class InputPanel(QWidget):
    """What the next Audit reads: the pending batch when one is loaded, else the pasted answer."""

    files_loaded = Signal()     # answers were added to the batch

    def __init__(self, host: Host, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.pending = IngestResult()
        self.pending_label = ""
        il = QVBoxLayout(self)
        self.question_edit = QLineEdit()
        self.question_edit.setPlaceholderText("Question (optional)")
        self.model_edit = QLineEdit()
        self.model_edit.setPlaceholderText("Model name (optional)")
        self.paste_edit = PasteBox()
        self.paste_edit.setPlaceholderText("Paste an answer here: copied from a chat app (its links and numbered "
                                           "sources are kept), text with links or [1] markers, or the JSON "
                                           '{"response": ..., "citations": [...]}. Or drop files here.')
        self.paste_edit.page_pasted.connect(self._show_pasted)
        self.paste_edit.textChanged.connect(self._paste_edited)
        self.run_name_edit = QLineEdit()
        self.run_name_edit.setPlaceholderText("Run name (optional)")
        self.run_name_edit.setToolTip("A name for the next run, shown in Runs and in its reports")
        il.addWidget(self.run_name_edit)
        il.addWidget(QLabel("Question"))
        il.addWidget(self.question_edit)
        il.addWidget(QLabel("Model"))
        il.addWidget(self.model_edit)
        il.addWidget(QLabel("Answer"))
        il.addWidget(self.paste_edit, 1)
        self.pasted_label = plain_label("")       # "12 statements, 7 sources from the pasted page"
        self.pasted_label.setVisible(False)
        il.addWidget(self.pasted_label)
        self.batch_label = plain_label(NO_BATCH)
        il.addWidget(self.batch_label)
        row = QHBoxLayout()
        self.open_file_btn = QPushButton("Open file…")
        self.open_file_btn.clicked.connect(self.open_file_dialog)
        self.open_folder_btn = QPushButton("Open folder…")
        self.open_folder_btn.clicked.connect(self.open_folder_dialog)
        self.clear_batch_btn = QPushButton("Clear batch")
        self.clear_batch_btn.clicked.connect(self.clear_batch)
        for b in (self.open_file_btn, self.open_folder_btn, self.clear_batch_btn):
            row.addWidget(b)
        il.addLayout(row)
        row = QHBoxLayout()
        self.audit_btn = QPushButton("Audit")
        self.audit_btn.setDefault(True)
        self.audit_btn.clicked.connect(lambda: self.host.audit.start_audit())
        self.cancel_btn = QPushButton("Cancel")
        self.cancel_btn.setEnabled(False)
        self.cancel_btn.clicked.connect(lambda: self.host.audit.cancel_audit())
        row.addWidget(self.audit_btn, 2)
        row.addWidget(self.cancel_btn, 1)
        il.addLayout(row)

    def open_file_dialog(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(
            self, "Open answers", "",
            "Answers (*.json *.jsonl *.ndjson *.csv *.tsv *.md *.markdown *.txt *.html *.htm *.docx *.pdf);;"
            "Chat exports (conversations.json) (*.json);;Documents (*.docx *.pdf);;Saved pages (*.html *.htm);;"
            "All files (*)")
        if paths:
            self.load_files(paths)

    def open_folder_dialog(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Open a folder of answers")
        if path:
            self.load_files([path])

    def _show_pasted(self, page: object) -> None:
        """What the rich paste found, before Audit; the links it left out, and why, in the tooltip."""
        self.pasted_label.setText(page.summary)  # type: ignore[attr-defined]
        lines = page.left_out_lines()  # type: ignore[attr-defined]
        self.pasted_label.setToolTip(safe_tooltip("Left out:\n" + "\n".join(lines[:30])) if lines else "")
        self.pasted_label.setVisible(True)
        asked = page.question  # type: ignore[attr-defined]
        if asked and not self.question_edit.text().strip():   # the user's turn of a chat page copied whole
            self.question_edit.setText(asked)

    def _paste_edited(self) -> None:
        if not self.paste_edit.toPlainText().strip():
            self.pasted_label.setVisible(False)

    def ask_csv_mapping(self, path: str | Path) -> CsvMapping | None:
        dialog = CsvMappingDialog(path, self)
        if dialog.exec() != QDialog.DialogCode.Accepted:
            return None
        return dialog.mapping()

    def load_files(self, paths: Sequence[str | Path]) -> IngestResult:
        """Read answer files or folders into the pending batch (audited on the next Audit)."""
        added = IngestResult()
        names = []
        for p in paths:
            p = Path(p)
            mapping = None
            if p.is_file() and p.suffix.lower() in TABLE_EXTENSIONS:
                mapping = self.ask_csv_mapping(p)
                if mapping is None:
                    continue
            try:
                # the Question and Model fields belong to the pasted answer: a file keeps its own fields
                part = load_path(p, mapping=mapping)
            except (IngestError, OSError) as exc:
                self.host.warn("Cannot read the file", str(exc))
                continue
            added.extend(part)
            names.append(p.name)
        if names:
            self.pending.extend(added)
            self.pending_label = ", ".join(filter(None, [self.pending_label, *names]))
            self._show_batch()
            self.files_loaded.emit()
        return added

    def clear_batch(self) -> None:
        self.pending = IngestResult()
        self.pending_label = ""
        self._show_batch()

    def _show_batch(self) -> None:
        n, k = len(self.pending.responses), len(self.pending.skipped)
        if not n and not k:
            self.batch_label.setText(NO_BATCH)
            return
        text = (f"Batch: {count_noun(n, 'answer')} from {self.pending_label} (each with the question and model its "
                "file gives; the fields above apply to a pasted answer only)")
        if k:
            text += f"; {k} skipped: " + "; ".join(f"{s.origin}: {s.problem}" for s in self.pending.skipped[:3])
        read_as = [n for n in self.pending.notes if ": read as " in n]   # what a chat export or document held
        if read_as:
            text += "\n" + "\n".join(read_as[:3])
        self.batch_label.setText(text)
        self.batch_label.setToolTip(safe_tooltip("\n".join(self.pending.notes[:40])) if self.pending.notes else "")

    def collect_inputs(self) -> tuple[IngestResult, str] | None:
        """The answers the next Audit reads and how the run names its input; None (and a warning) if none."""
        if self.pending.responses or self.pending.skipped:
            return self.pending, self.pending_label
        text = self.paste_edit.toPlainText()
        if not text.strip():
            self.host.warn("Nothing to audit", "Paste an answer, or open a file or a folder of answers.")
            return None
        try:
            result = load_text(text, question=self.question_edit.text().strip() or None,
                               model=self.model_edit.text().strip() or None, name_by_words=True)
        except IngestError as exc:
            self.host.warn("Cannot read the pasted answer", str(exc))
            return None
        return result, "pasted answer"
