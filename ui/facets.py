"""Facets over a run's responses: filter by model, status and problem, and the review's progress.

The choices come from the rows on screen (sourcecheckup.views.results.ResponseSummary); the filter is a
test on each row that the responses proxy applies beside the free-text search.
"""
from __future__ import annotations

import re
from typing import Sequence

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QWidget

from sourcecheckup.views.results import ResponseSummary

from .elide import ElidedLabel

ALL = ""                 # the "All …" entry of every facet
ANY_PROBLEM = "\x00any"  # the "Any problem" entry
NO_PROBLEM = "\x00none"  # the "No problem" entry
STATUS_WORDS = {"supported": "✓ all supported", "not_supported": "✗ not all supported",
                "undecided": "… undecided", "no_claims": "– no claims"}
_COUNT = re.compile(r"^\d+\s+")


def status_key(r: ResponseSummary) -> str:
    if r.supported is True:
        return "supported"
    if r.supported is False:
        return "not_supported"
    return "undecided" if r.claims else "no_claims"


def problem_kinds(r: ResponseSummary) -> list[str]:
    """"2 unsupported · 1 dead link" -> ["unsupported", "dead link"]."""
    return [_COUNT.sub("", p.strip()) for p in r.problems.split(" · ") if p.strip()]


class FacetBar(QWidget):
    """Three drop-downs (model, status, problem) and "k/n pairs reviewed"."""

    changed = Signal()

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        layout = QHBoxLayout(self)
        layout.setContentsMargins(0, 0, 0, 0)
        self.model_box = QComboBox()
        self.status_box = QComboBox()
        self.problem_box = QComboBox()
        for box, tip in ((self.model_box, "Show the answers of one model"),
                         (self.status_box, "Show the answers with one status"),
                         (self.problem_box, "Show the answers with one kind of problem")):
            box.setToolTip(tip)
            box.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            box.setMinimumContentsLength(8)
            box.currentIndexChanged.connect(lambda *_: self.changed.emit())
            layout.addWidget(box, 1)
        self.reviewed_label = ElidedLabel("", min_chars=18)
        self.reviewed_label.set_tooltip_extra("Pairs a reviewer has labelled, of the run's judgeable pairs "
                                              "(claims × readable sources)")
        layout.addWidget(self.reviewed_label)
        self.set_rows([])

    def set_rows(self, rows: Sequence[ResponseSummary]) -> None:
        """Offer the models, statuses and problems these rows hold; keep a choice that still applies."""
        models = sorted({r.model for r in rows})
        statuses = [k for k in STATUS_WORDS if any(status_key(r) == k for r in rows)]
        problems = sorted({k for r in rows for k in problem_kinds(r)})
        self._fill(self.model_box, "All models", [(m or "(no model)", m) for m in models])
        self._fill(self.status_box, "All statuses", [(STATUS_WORDS[k], k) for k in statuses])
        self._fill(self.problem_box, "All problems", [("Any problem", ANY_PROBLEM), ("No problem", NO_PROBLEM)]
                   + [(p, p) for p in problems])
        self.changed.emit()

    @staticmethod
    def _fill(box: QComboBox, all_text: str, items: list[tuple[str, str]]) -> None:
        keep = box.currentData()
        box.blockSignals(True)
        box.clear()
        box.addItem(all_text, ALL)
        for text, data in items:
            box.addItem(text, data)
        at = box.findData(keep) if keep is not None else -1
        box.setCurrentIndex(at if at >= 0 else 0)
        box.blockSignals(False)

    def select(self, *, model: str | None = None, status: str | None = None, problem: str | None = None) -> None:
        """Choose facets by their values (tests, and a click elsewhere that filters)."""
        for box, value in ((self.model_box, model), (self.status_box, status), (self.problem_box, problem)):
            if value is not None:
                at = box.findData(value)
                if at < 0:
                    raise ValueError(f"no such choice: {value!r}")
                box.setCurrentIndex(at)

    def is_active(self) -> bool:
        return any(b.currentData() not in (ALL, None) for b in (self.model_box, self.status_box, self.problem_box))

    def accepts(self, r: ResponseSummary) -> bool:
        model, status, problem = (b.currentData() for b in (self.model_box, self.status_box, self.problem_box))
        if model not in (ALL, None) and r.model != model:
            return False
        if status not in (ALL, None) and status_key(r) != status:
            return False
        if problem == ANY_PROBLEM:
            return bool(r.problems)
        if problem == NO_PROBLEM:
            return not r.problems
        if problem not in (ALL, None) and problem not in problem_kinds(r):
            return False
        return True

    def show_review_progress(self, reviewed: int, total: int) -> None:
        text = f"{reviewed}/{total} pairs reviewed" if total else "No pairs to review"
        self.reviewed_label.setText(text)
        # short and always whole: the search field gives way, not this count
        self.reviewed_label.setMinimumWidth(self.reviewed_label.fontMetrics().horizontalAdvance(text) + 8)

    def clear_progress(self) -> None:
        self.reviewed_label.setText("")
