"""Facets over a run's responses: filter by model, status and problem, and the review's progress.

The choices come from the rows on screen (sourcecheckup.views.results.ResponseSummary); the filter is a
test on each row that the responses proxy applies beside the free-text search.
"""
from __future__ import annotations

from typing import Callable, Iterable, Mapping, Sequence

from PySide6.QtCore import Signal
from PySide6.QtWidgets import QComboBox, QHBoxLayout, QWidget

from sourcecheckup.views.results import ResponseSummary, problem_kind

from .elide import ElidedLabel

ALL = ""                 # the "All …" entry of every facet
ANY_PROBLEM = "\x00any"  # the "Any problem" entry
NO_PROBLEM = "\x00none"  # the "No problem" entry
STATUS_WORDS = {"supported": "✓ all supported", "not_supported": "✗ not all supported",
                "undecided": "… undecided", "no_claims": "– no claims", "not_read": "… not read yet"}


def status_key(r: ResponseSummary) -> str:
    return r.status_key


def problem_kinds(r: ResponseSummary) -> list[str]:
    """"2 unsupported · 2 dead links" -> ["unsupported", "dead link"] (read off the row's counts)."""
    return list(r.problem_kinds)


def problem_kinds_of(problems: str) -> list[str]:
    """The kinds a problems line names (a line typed or stored as text; rows carry their kinds)."""
    return [problem_kind(p) for p in problems.split(" · ") if p.strip()]


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
                                              "(claims × readable sources). An \"unsure\" label counts as "
                                              "reviewed but overrides nothing: the judge's label still counts")
        layout.addWidget(self.reviewed_label)
        self.set_rows([])

    def set_rows(self, rows: Sequence[ResponseSummary]) -> None:
        """Offer the models, statuses and problems these rows hold; keep a choice that still applies."""
        self.set_choices(sorted({r.model for r in rows}), {status_key(r) for r in rows},
                         {k for r in rows for k in problem_kinds(r)})

    def set_choices(self, models: Sequence[str], statuses: Iterable[str] | None,
                    problems: Iterable[str] | None, *, model_counts: Mapping[str, int] | None = None) -> None:
        """Offer these choices (a large run's, from SQL and from its totals); None leaves that box
        showing only its "All" entry, disabled, until the figures behind it are known."""
        counted = (lambda m: f"{m or '(no model)'} ({model_counts.get(m, 0):,})") if model_counts else \
            (lambda m: m or "(no model)")
        self._fill(self.model_box, "All models", [(counted(m), m) for m in models])
        self.status_box.setEnabled(statuses is not None)
        self.problem_box.setEnabled(problems is not None)
        wanted = set(statuses or ())
        self._fill(self.status_box, "All statuses", [(STATUS_WORDS[k], k) for k in STATUS_WORDS if k in wanted])
        self._fill(self.problem_box, "All problems",
                   [] if problems is None else [("Any problem", ANY_PROBLEM), ("No problem", NO_PROBLEM)]
                   + [(p, p) for p in sorted(set(problems))])
        self.changed.emit()

    def chosen(self) -> tuple[str | None, str | None, str | None]:
        """(model, status, problem) chosen; None where the box shows everything."""
        return tuple(None if b.currentData() in (ALL, None) else b.currentData()  # type: ignore[return-value]
                     for b in (self.model_box, self.status_box, self.problem_box))

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
        return self.row_test()(r)

    def row_test(self) -> Callable[[ResponseSummary], bool]:
        """:meth:`accepts` for the choices made now: the proxy asks it once per row."""
        model, want_status, problem = self.chosen()
        return lambda r: (model is None or r.model == model) and _accepts(want_status, problem, r.status_key,
                                                                          r.problem_kinds)

    def accepts_facts(self, status: str, kinds: Sequence[str]) -> bool:
        """The status and problem facets' test on one response's status key and problem kinds."""
        return self.facts_test()(status, kinds)

    def facts_test(self) -> Callable[[str, Sequence[str]], bool]:
        """:meth:`accepts_facts` for the choices made now, as a plain function (for a pool thread)."""
        _, want_status, problem = self.chosen()
        return lambda status, kinds: _accepts(want_status, problem, status, kinds)

    def show_review_progress(self, reviewed: int, total: int, unsure: int = 0) -> None:
        """``unsure``: of the reviewed pairs, those labelled "unsure" (reviewed; they override nothing)."""
        text = f"{reviewed}/{total} pairs reviewed" if total else "No pairs to review"
        if total and unsure:
            text += f" ({unsure} unsure)"
        self.reviewed_label.setText(text)
        # short and always whole: the search field gives way, not this count
        self.reviewed_label.setMinimumWidth(self.reviewed_label.fontMetrics().horizontalAdvance(text) + 8)

    def clear_progress(self) -> None:
        self.reviewed_label.setText("")


def _accepts(want_status: str | None, problem: str | None, status: str, kinds: Sequence[str]) -> bool:
    if want_status is not None and status != want_status:
        return False
    if problem == ANY_PROBLEM:
        return bool(kinds)
    if problem == NO_PROBLEM:
        return not kinds
    if problem is not None and problem not in kinds:
        return False
    return True
