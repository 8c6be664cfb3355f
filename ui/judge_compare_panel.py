"""Which judge to trust: the run's judges against the reviewers' majority (judge_compare.compare_judges).

A table of the judges (pairs, agreement with its 95% interval, Cohen's kappa, balanced accuracy,
judge errors), the recommendation in one sentence, and the pairs where the selected judge and the
reviewers disagree. Opened from the Review sample page; computed off the GUI thread.
"""
from __future__ import annotations

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QAbstractItemView, QDialog, QDialogButtonBox, QTableView, QVBoxLayout, QWidget

from sourcecheckup.metrics import percent
from sourcecheckup.review.agreement import kappa_words
from sourcecheckup.review.judge_compare import Disagreement, JudgeComparison, JudgeScore, agreement_text, compare_judges
from sourcecheckup.views.text import count_noun

from .host import Host
from .models import _RowModel
from .widgets import plain_label

_WORDS = {"supported": "✓ supported", "not_supported": "✗ not supported"}


class JudgeScoresModel(_RowModel[JudgeScore]):
    columns = (("Judge", lambda s: s.judge), ("Pairs", lambda s: s.pairs),
               ("Agreement", agreement_text),
               ("Cohen's kappa", lambda s: kappa_words(s.kappa, s.pairs)),
               ("Balanced accuracy", lambda s: percent(s.balanced_accuracy)),
               ("Judge errors", lambda s: s.judge_errors), ("Disagrees on", lambda s: len(s.disagreements)))


class DisagreementsModel(_RowModel[Disagreement]):
    columns = (("Response", lambda d: d.response_id), ("Statement", lambda d: d.statement),
               ("Source", lambda d: d.source_title or d.url), ("Judge", lambda d: _WORDS[d.judge_label]),
               ("Reviewers", lambda d: _WORDS[d.reviewers_label]),
               ("Reviews", lambda d: ", ".join(f"{who}: {lab.replace('_', ' ')}" for who, lab in d.reviews.items())))


def _table(model: _RowModel, widths: tuple[int, ...]) -> QTableView:
    t = QTableView()
    t.setModel(model)
    t.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    t.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    t.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    t.verticalHeader().setVisible(False)
    t.verticalHeader().setDefaultSectionSize(22)
    t.horizontalHeader().setStretchLastSection(True)
    for col, w in enumerate(widths):
        t.setColumnWidth(col, w)
    return t


class JudgeComparePanel(QWidget):
    shown = Signal()          # once a comparison is on screen

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.comparison: JudgeComparison | None = None
        layout = QVBoxLayout(self)
        self.summary = plain_label("No comparison yet.", selectable=False)
        layout.addWidget(self.summary)
        self.scores_model = JudgeScoresModel(self)
        self.scores_table = _table(self.scores_model, (180, 50, 200, 90, 120, 80))
        self.scores_table.setMaximumHeight(140)
        self.scores_table.selectionModel().currentRowChanged.connect(lambda cur, _: self._show_judge(cur.row()))
        layout.addWidget(self.scores_table)
        self.recommendation = plain_label()
        font = self.recommendation.font()
        font.setBold(True)
        self.recommendation.setFont(font)
        layout.addWidget(self.recommendation)
        self.disagreements_label = plain_label("", selectable=False)
        layout.addWidget(self.disagreements_label)
        self.disagreements_model = DisagreementsModel(self)
        self.disagreements_table = _table(self.disagreements_model, (70, 320, 180, 110, 110))
        layout.addWidget(self.disagreements_table, 1)

    def load(self, host: Host, run_id: str) -> None:
        """Compute the comparison for ``run_id`` in a pool thread and show it."""
        self.summary.setText(f"Comparing the judges of run {run_id}…")
        host.db.read("judge_compare", lambda st: compare_judges(st, run_id), self.show_comparison,
                     lambda msg: self.summary.setText(f"Cannot compare the judges: {msg}"))

    def show_comparison(self, c: JudgeComparison) -> None:
        self.comparison = c
        self.summary.setText(
            f"Run {c.run_id}: {count_noun(c.pairs_reviewed, 'pair')} reviewed by "
            f"{count_noun(len(c.reviewers), 'reviewer')}, a majority on "
            f"{c.pairs_with_majority}. Each judge is compared with the reviewers' majority on the pairs it decided; "
            f"balanced accuracy averages its recall of supported and of not supported pairs.")
        self.scores_model.set_rows(c.judges)
        self.recommendation.setText(c.recommendation)
        best = next((i for i, s in enumerate(c.judges) if s.judge == c.recommended), 0)
        if c.judges:
            self.scores_table.setCurrentIndex(self.scores_model.index(best, 0))
        self._show_judge(best)
        self.shown.emit()

    def _show_judge(self, row: int) -> None:
        s = self.scores_model.row_at(row)
        if s is None:
            self.disagreements_label.setText("")
            self.disagreements_model.set_rows([])
            return
        self.disagreements_label.setText(f"Where {s.judge} disagrees with the reviewers: "
                                         f"{count_noun(len(s.disagreements), 'pair')}")
        self.disagreements_model.set_rows(s.disagreements)


class JudgeCompareDialog(QDialog):
    """The panel in a window of its own, for the Review sample page's "Which judge to trust…" button
    (the page calls ``panel.load(host, run_id)``)."""

    def __init__(self, host: Host, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setWindowTitle("Which judge to trust")
        self.resize(900, 560)
        layout = QVBoxLayout(self)
        self.panel = JudgeComparePanel(self)
        layout.addWidget(self.panel, 1)
        buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Close)
        buttons.rejected.connect(self.reject)
        layout.addWidget(buttons)
