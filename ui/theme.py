"""Status marks and colours. A status is always shown by a text mark and a word, colour only adds."""
from __future__ import annotations

import html

from PySide6.QtGui import QColor, QGuiApplication, QPalette

from sourcecheckup.models import Label, StatementStatus

# mark, word; the mark is plain text so it reads in any font, screen reader and print
STATUS_MARK: dict[StatementStatus, tuple[str, str]] = {
    StatementStatus.SUPPORTED: ("✓", "supported"),
    StatementStatus.NOT_SUPPORTED: ("✗", "not supported"),
    StatementStatus.NO_READABLE_SOURCE: ("⊘", "no readable source"),
    StatementStatus.JUDGE_ERROR: ("⚠", "judge error"),
    StatementStatus.JUDGES_DISAGREE: ("≠", "judges disagree"),
    StatementStatus.NOT_A_CLAIM: ("–", "not a claim"),
    StatementStatus.PENDING: ("…", "pending"),
}

LABEL_MARK: dict[Label | None, tuple[str, str]] = {
    Label.SUPPORTED: ("✓", "supported"),
    Label.NOT_SUPPORTED: ("✗", "not supported"),
    Label.JUDGE_ERROR: ("⚠", "judge error"),
    Label.JUDGES_DISAGREE: ("≠", "judges disagree"),
    None: ("…", "pending"),
}
REVIEW_MARK = "✎"   # a reviewer's override
CONTRADICTED_MARK = "⊗"   # a judge found the source stating something different
REVIEW_FIRST_MARK = "⚑"   # the screening judge is unsure: a reviewer should look at it first

# light, dark background tints
_TINTS: dict[str, tuple[str, str]] = {
    "supported": ("#d4f4dd", "#1f4d2c"),
    "not_supported": ("#fbd5d5", "#5c2323"),
    "contradicted": ("#f3a5a5", "#7a1c1c"),
    "no_readable_source": ("#fde7c8", "#5a4019"),
    "judge_error": ("#efe0fa", "#45305a"),
    "judges_disagree": ("#efe0fa", "#45305a"),
    "not_a_claim": ("#e8e8e8", "#3a3a3a"),
    "pending": ("#e3ecfa", "#283a55"),
    "unreadable": ("#eeeeee", "#333333"),
    "override": ("#fff3b0", "#5a5213"),
}


def is_dark() -> bool:
    app = QGuiApplication.instance()
    if app is None:
        return False
    return QGuiApplication.palette().color(QPalette.ColorRole.Window).lightness() < 128


def tint(key: str) -> QColor:
    light, dark = _TINTS.get(key, _TINTS["pending"])
    return QColor(dark if is_dark() else light)


def status_tint(status: StatementStatus) -> QColor:
    return tint(status.value)


def label_tint(label: Label | None) -> QColor:
    return tint("pending" if label is None else label.value)


def safe_tooltip(text: str, limit: int = 1500) -> str:
    """Tooltips guess rich text; escaping untrusted text and marking it rich keeps it inert."""
    if len(text) > limit:
        text = text[:limit] + "…"
    return "<qt>" + html.escape(text, quote=True).replace("\n", "<br>") + "</qt>"
