"""The Suggestions tab (SourceCleanup): suggested rewrites of unsupported statements, the
reviewer's accept/reject, and the revised answer; "Suggest fixes…" writes them off the GUI thread."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from PySide6.QtCore import QSignalBlocker, Qt, Signal
from PySide6.QtGui import QGuiApplication
from PySide6.QtWidgets import (
    QFileDialog,
    QHBoxLayout,
    QLabel,
    QPlainTextEdit,
    QPushButton,
    QStackedWidget,
    QVBoxLayout,
    QWidget,
)

from sourcecheckup import cleanup
from sourcecheckup.cleanup import Decision, SuggestionRow
from sourcecheckup.judges import validate_judge_spec
from sourcecheckup.store import Store
from sourcecheckup.views.text import count_noun, word_diff

from ..models import SuggestionsModel
from ..widgets import plain_label, table_view
from ..worker import CleanupThread

NO_SUGGESTIONS = "No suggestions yet: “Suggest fixes…” writes them for the unsupported statements"


class SuggestionsTab(QWidget):
    cleanup_finished = Signal(str, str)   # run id, status of a Suggest fixes
    revised_shown = Signal()              # the revised answer is on screen (it is built off the GUI thread)

    def __init__(self, page: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.page = page
        self.host = page.host
        self.cleanup_worker: CleanupThread | None = None
        self._suggestions: list[SuggestionRow] = []
        self._revised_for: tuple[str, str] | None = None
        spl = QVBoxLayout(self)
        spl.setContentsMargins(0, 0, 0, 0)
        srow = QHBoxLayout()
        self.suggest_btn = QPushButton("Suggest fixes…")
        self.suggest_btn.setToolTip("SourceCleanup: an LLM rewrites each unsupported statement so its source "
                                    "supports it (or suggests deleting it); the run's judges verify every rewrite")
        self.suggest_btn.clicked.connect(lambda: self.suggest_fixes())
        srow.addWidget(self.suggest_btn)
        self.cancel_btn = QPushButton("Cancel")
        self.cancel_btn.setToolTip("Stop writing suggestions; those already written and verified are kept")
        self.cancel_btn.clicked.connect(lambda: self.cancel_suggestions())
        self.cancel_btn.setVisible(False)
        srow.addWidget(self.cancel_btn)
        self.cleanup_label = plain_label(selectable=False)
        srow.addWidget(self.cleanup_label, 1)
        spl.addLayout(srow)
        self.sugg_stack = QStackedWidget()
        spl.addWidget(self.sugg_stack, 1)
        self.sugg_empty = plain_label(NO_SUGGESTIONS, selectable=False)
        self.sugg_empty.setAlignment(Qt.AlignmentFlag.AlignCenter)
        self.sugg_stack.addWidget(self.sugg_empty)
        sugg = QWidget()
        gl = QVBoxLayout(sugg)
        self.sugg_model = SuggestionsModel(self)
        self.sugg_table = table_view(self.sugg_model)
        self.sugg_table.selectionModel().currentRowChanged.connect(lambda cur, _: self._show_suggestion(cur.row()))
        gl.addWidget(self.sugg_table, 1)
        self.sugg_diff = QPlainTextEdit()
        self.sugg_diff.setReadOnly(True)
        self.sugg_diff.setMaximumHeight(90)
        gl.addWidget(self.sugg_diff)
        row = QHBoxLayout()
        self.accept_btn = QPushButton("✓ Accept")
        self.accept_btn.clicked.connect(lambda: self.decide_current_suggestion(Decision.ACCEPTED))
        self.reject_btn = QPushButton("✗ Reject")
        self.reject_btn.clicked.connect(lambda: self.decide_current_suggestion(Decision.REJECTED))
        row.addWidget(self.accept_btn)
        row.addWidget(self.reject_btn)
        row.addStretch(1)
        gl.addLayout(row)
        gl.addWidget(QLabel("Revised answer"))
        self.revised_edit = QPlainTextEdit()
        self.revised_edit.setReadOnly(True)
        gl.addWidget(self.revised_edit, 1)
        row = QHBoxLayout()
        b = QPushButton("Copy")
        b.clicked.connect(lambda: QGuiApplication.clipboard().setText(self.revised_edit.toPlainText()))
        row.addWidget(b)
        b = QPushButton("Save revised answer…")
        b.clicked.connect(self._save_revised)
        row.addWidget(b)
        row.addStretch(1)
        gl.addLayout(row)
        self.sugg_stack.addWidget(sugg)

    # ------------------------------------------------------------------------ showing
    def load_suggestions(self) -> None:
        """The open response's suggestions; its revised answer follows from a pool thread."""
        rid, pk = self.page.run_id, self.page.response_pk
        if not rid or pk is None:
            return
        self._suggestions = cleanup.suggestions(self.host.store, rid, pk)
        with QSignalBlocker(self.sugg_table.selectionModel()):
            self.sugg_model.set_rows(self._suggestions)
        self.sugg_stack.setCurrentIndex(1 if self._suggestions else 0)
        self.sugg_diff.clear()
        self._show_revised()

    def clear(self) -> None:
        self.sugg_model.set_rows([])
        self.sugg_stack.setCurrentIndex(0)
        self.revised_edit.clear()
        self._revised_for = None

    def _show_revised(self) -> None:
        view, resp = self.page.view, self.page.current_response()
        if view is None or resp is None:
            return
        run_id, response_id, text = view.data.run.id, resp.id, resp.text
        if self._revised_for != (run_id, response_id):
            self.revised_edit.clear()   # never another answer's revision, even for a moment
        self._revised_for = (run_id, response_id)

        def work(st: Store) -> str:   # revised_answer loads the run: never on the GUI thread
            try:
                return cleanup.revised_answer(st, run_id, response_id).revised
            except cleanup.CleanupError as exc:
                return f"{text}\n\n[{exc}]"

        self.host.db.read("revised", work, self._on_revised,
                          lambda msg: self._on_revised(f"{text}\n\n[could not build the revised answer: {msg}]"))

    def _on_revised(self, text: str) -> None:
        self.revised_edit.setPlainText(text)
        self.revised_shown.emit()

    def _show_suggestion(self, row: int) -> None:
        g = self.sugg_model.row_at(row)
        if g is None:
            return
        text = word_diff(g.original, g.suggested)
        if g.quote:
            text += f"\n\nSupporting quote: “{g.quote}”"
        text += f"\nVerification: {g.status.value.replace('_', ' ')}"
        self.sugg_diff.setPlainText(text)

    def decide_current_suggestion(self, decision: Decision | str) -> None:
        idx = self.sugg_table.currentIndex()
        g = self.sugg_model.row_at(idx.row()) if idx.isValid() else None
        if g is None:
            return
        reviewer = self.host.ask_reviewer()
        cleanup.set_decision(self.host.store, g.pk, decision, reviewer or "anonymous")
        row = idx.row()
        self.load_suggestions()
        self.sugg_table.setCurrentIndex(self.sugg_model.index(row, 0))
        self._show_suggestion(row)

    def _save_revised(self) -> None:
        path, _ = QFileDialog.getSaveFileName(self, "Save revised answer", "revised-answer.txt", "Text (*.txt)")
        if path:
            Path(path).write_text(self.revised_edit.toPlainText(), encoding="utf-8")

    # ------------------------------------------------------------------------ Suggest fixes
    def cleanup_writer(self) -> str | None:
        """The LLM that writes suggestions: the run's first LLM judge, else the first in Settings → Judges."""
        view = self.page.view
        run_judges = view.data.run.judges if view is not None else []
        return cleanup.writer_spec(run_judges) or cleanup.writer_spec(self.host.settings.judges)

    def suggest_fixes(self) -> bool:
        """SourceCleanup for the open run, off the GUI thread, once the user has seen the writer, the
        verifying judges and the estimated cost."""
        run_id = self.page.run_id
        if not run_id or self.cleanup_worker is not None:
            return False
        if self.host.audit.worker is not None:
            self.host.warn("An audit is running", "Suggest fixes once the audit has finished.")
            return False
        writer = self.cleanup_writer()
        if writer is None:
            self.host.warn("Suggest fixes needs an LLM", "Suggestions are written by an LLM, and neither this run's "
                            "judges nor Settings → Judges name one. Add one there, e.g. openai:gpt-4o or "
                            "openai-compatible:http://localhost:11434/v1#llama3.1.")
            return False
        problem = validate_judge_spec(writer)
        if problem:
            self.host.warn("Suggest fixes cannot start", f"{problem}\n\nFix it in Settings → Judges.")
            return False
        plan = cleanup.plan_cleanup(self.host.store, run_id, model_spec=writer)
        if not plan.pairs:
            self.host.show_status("No unsupported statement with a readable source: nothing to suggest")
            return False
        text = (f"Write suggestions for {count_noun(plan.pairs, 'unsupported statement × source pair')} of run "
                f"{plan.run_id}.\n\n"
                f"Writer: {writer}\nVerified by: {', '.join(plan.verifiers)}\nEstimated cost: {plan.cost_text}\n\n"
                "Start?")
        if not self.host.confirm("Suggest fixes", text):
            return False
        worker = CleanupThread(self.host.db_path, run_id, writer, parent=self)
        self.cleanup_worker = worker
        worker.progress.connect(lambda ev: self.cleanup_label.setText(
            f"Suggesting fixes: {ev.pairs_done}/{ev.pairs_total} pairs"))
        worker.done.connect(self._on_cleanup_done)
        self.suggest_btn.setEnabled(False)
        self.cancel_btn.setEnabled(True)
        self.cancel_btn.setVisible(True)
        self.cleanup_label.setText(f"Suggesting fixes with {writer}…")
        worker.start()
        return True

    def cancel_suggestions(self) -> bool:
        """Stop a running Suggest fixes; what was written and verified so far stays stored."""
        if self.cleanup_worker is None:
            return False
        self.cleanup_worker.cancel()
        self.cancel_btn.setEnabled(False)
        self.cleanup_label.setText("Stopping: the suggestions written so far are kept…")
        return True

    def _on_cleanup_done(self, run_id: str, status: str, message: str) -> None:
        worker = self.cleanup_worker
        self.cleanup_worker = None
        if worker is not None:
            worker.wait(5000)
            worker.deleteLater()
        self.suggest_btn.setEnabled(True)
        self.cancel_btn.setVisible(False)
        self.cleanup_label.setText(f"Suggest fixes {status}: {message}")
        if status == "failed":
            self.host.warn("Suggest fixes failed", message)
        if run_id == self.page.run_id:
            self.page.reload_run()
        self.cleanup_finished.emit(run_id, status)

    def shutdown(self) -> None:
        """The window is closing: stop writing (the suggestions stored so far are kept)."""
        if self.cleanup_worker is not None:
            self.cleanup_worker.cancel()
            self.cleanup_worker.wait(10_000)
