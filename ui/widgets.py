"""The app's custom widgets. Untrusted text (answers, pages, URLs, rationales) is only ever set as
plain text: QPlainTextEdit.setPlainText / QTextCursor.insertText, or QLabel with Qt.PlainText."""
from __future__ import annotations

import re
from typing import Any, Collection, Mapping, Sequence

from PySide6.QtCore import QEvent, QObject, Qt, QTimer, Signal
from PySide6.QtGui import (
    QColor,
    QFont,
    QGuiApplication,
    QResizeEvent,
    QTextCharFormat,
    QTextCursor,
    QTextDocument,
    QTextFormat,
)
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QFrame,
    QGridLayout,
    QHBoxLayout,
    QLabel,
    QPlainTextDocumentLayout,
    QPlainTextEdit,
    QScrollArea,
    QTableView,
    QTextEdit,
    QToolTip,
    QVBoxLayout,
    QWidget,
)

from sourcecheckup.evidence import locate_quote
from sourcecheckup.metrics import (
    Metric,
    MetricSet,
    StatementAssessment,
    exclusion_notes,
    figure_basis,
    judge_error_note,
    overrides_words,
    partial_run_note,
    percent,
)
from sourcecheckup.models import StatementStatus
from sourcecheckup.views.matrix import SCREENING_JUDGE_NOTE, builtin_judge_note, uses_screening_judge
from sourcecheckup.views.references import RETRACTED_MARK, RETRACTED_ONLY_WORDS
from sourcecheckup.views.text import statement_spans

from .elide import ElidedLabel
from .theme import STATUS_MARK, is_dark, safe_tooltip, status_tint

MAX_SHOWN_CHARS = 2_000_000   # a longer text is cut for display (and says so); the store keeps it all


def table_view(model: object, *, stretch_last: bool = True) -> QTableView:
    """A read-only table of whole rows, one selected at a time."""
    view = QTableView()
    view.setModel(model)  # type: ignore[arg-type]
    view.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
    view.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
    view.setAlternatingRowColors(True)
    view.setWordWrap(False)
    view.verticalHeader().setVisible(False)
    view.verticalHeader().setDefaultSectionSize(22)
    view.horizontalHeader().setStretchLastSection(stretch_last)
    view.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
    return view


def fit_scrolling_dialog(dialog: QWidget, scroll: QScrollArea, min_width: int) -> None:
    """Size a dialog whose body scrolls: wide enough for the body's widest row (no sideways scrolling,
    no line cut at the right edge), as tall as the wrapped body needs at that width (no blank bands),
    both within the screen; what does not fit the screen's height scrolls."""
    screen = dialog.screen() or QGuiApplication.primaryScreen()
    free = screen.availableGeometry() if screen is not None else None
    max_w, max_h = (free.width() - 40, free.height() - 60) if free is not None else (1880, 1020)
    body, outer = scroll.widget(), dialog.layout()
    if body is None or outer is None:
        return
    m = outer.contentsMargins()
    bar = scroll.verticalScrollBar().sizeHint().width()
    frame = 2 * scroll.frameWidth()
    width = min(max_w, max(min_width, body.minimumSizeHint().width() + bar + frame + m.left() + m.right()))
    inner = width - m.left() - m.right() - frame
    layout = body.layout()
    body_h = (layout.totalHeightForWidth(inner) if layout is not None and layout.hasHeightForWidth()
              else body.sizeHint().height())
    others = outer.sizeHint().height() - scroll.sizeHint().height()
    dialog.resize(width, min(max_h, body_h + frame + others))


def plain_label(text: str = "", *, wrap: bool = True, selectable: bool = True) -> QLabel:
    """A QLabel that can never render markup: for anything that came from an answer or a page."""
    label = QLabel()
    label.setTextFormat(Qt.TextFormat.PlainText)
    label.setWordWrap(wrap)
    if selectable:
        label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    label.setText(text)
    return label


_UNDERLINE = {
    StatementStatus.SUPPORTED: QTextCharFormat.UnderlineStyle.SingleUnderline,
    StatementStatus.NOT_SUPPORTED: QTextCharFormat.UnderlineStyle.WaveUnderline,
    StatementStatus.NO_READABLE_SOURCE: QTextCharFormat.UnderlineStyle.DashUnderline,
    StatementStatus.JUDGE_ERROR: QTextCharFormat.UnderlineStyle.DotLine,
    StatementStatus.JUDGES_DISAGREE: QTextCharFormat.UnderlineStyle.DotLine,
    StatementStatus.PENDING: QTextCharFormat.UnderlineStyle.DotLine,
    StatementStatus.NOT_A_CLAIM: QTextCharFormat.UnderlineStyle.NoUnderline,
}


_MARKER = re.compile(r"\[(\^?[A-Za-z0-9_-]{1,16})\]")


class AnswerView(QPlainTextEdit):
    """The answer as plain text, each statement tinted by status and followed by a text mark
    ("✓", "✗", "⊘", "⚠", "–", "…"); hovering a statement lists the sources that support it."""

    statement_clicked = Signal(int)   # statement pk
    marker_clicked = Signal(str)      # a citation marker's label: "1" for [1], "^note" for [^note]

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setUndoRedoEnabled(False)
        self.setLineWrapMode(QPlainTextEdit.LineWrapMode.WidgetWidth)
        self.ranges: list[tuple[int, int, StatementAssessment]] = []
        self.markers: list[tuple[int, int, str]] = []
        self._supporters: dict[int, Sequence[str]] = {}
        self.viewport().installEventFilter(self)

    def show_answer(self, text: str, statements: Sequence[StatementAssessment],
                    retracted_only: Collection[int] = ()) -> None:
        """``retracted_only``: statement pks supported only by retracted papers, marked "⊠" after their mark."""
        self.ranges = []
        self._supporters = {s.row.pk: s.supporting_urls for s in statements}
        if len(text) > MAX_SHOWN_CHARS:
            text = text[:MAX_SHOWN_CHARS]
        doc = QTextDocument()
        doc.setDocumentLayout(QPlainTextDocumentLayout(doc))
        doc.setDefaultFont(self.font())
        cursor = QTextCursor(doc)
        cursor.beginEditBlock()   # one layout pass, not one per inserted piece
        plain = QTextCharFormat()
        mark_fmt = QTextCharFormat()
        mark_fmt.setFontWeight(QFont.Weight.Bold)
        pos = 0
        placed = set()
        for start, end, s in statement_spans(text, statements):
            if start < pos:
                continue
            cursor.insertText(text[pos:start], plain)
            fmt = QTextCharFormat()
            fmt.setBackground(status_tint(s.status))
            fmt.setUnderlineStyle(_UNDERLINE[s.status])
            doc_start = cursor.position()
            cursor.insertText(text[start:end], fmt)
            mark, word = STATUS_MARK[s.status]
            m = QTextCharFormat(mark_fmt)
            m.setBackground(status_tint(s.status))
            m.setToolTip(word)
            cursor.insertText(f" {mark}", m)
            if s.row.pk in retracted_only:
                r = QTextCharFormat(m)
                r.setToolTip(RETRACTED_ONLY_WORDS)
                cursor.insertText(f" {RETRACTED_MARK}", r)
            self.ranges.append((doc_start, cursor.position(), s))
            placed.add(s.row.pk)
            pos = end
        cursor.insertText(text[pos:], plain)
        unplaced = [s for s in statements if s.row.pk not in placed]
        if unplaced:  # statements the parser rewrote: list them after the answer so none is hidden
            cursor.insertText("\n\nStatements not found verbatim in the answer:\n", mark_fmt)
            for s in unplaced:
                fmt = QTextCharFormat()
                fmt.setBackground(status_tint(s.status))
                mark, _ = STATUS_MARK[s.status]
                if s.row.pk in retracted_only:
                    mark += f" {RETRACTED_MARK}"
                doc_start = cursor.position()
                cursor.insertText(f"{mark} {s.row.statement.text}", fmt)
                self.ranges.append((doc_start, cursor.position(), s))
                cursor.insertText("\n", plain)
        cursor.endEditBlock()
        self.setDocument(doc)
        self._doc = doc   # the view does not own a document it was given: keep it alive here
        self._mark_citations()
        self.moveCursor(QTextCursor.MoveOperation.Start)

    def _mark_citations(self) -> None:
        """Citation markers ([1], [^note]) look and act as links to their sources."""
        self.markers = [(m.start(), m.end(), m.group(1)) for m in _MARKER.finditer(self.document().toPlainText())]
        selections = []
        for start, end, _ in self.markers:
            sel = QTextEdit.ExtraSelection()
            cursor = QTextCursor(self.document())
            cursor.setPosition(start)
            cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
            sel.cursor = cursor
            fmt = QTextCharFormat()
            fmt.setForeground(self.palette().link())
            fmt.setFontUnderline(True)
            sel.format = fmt
            selections.append(sel)
        self.setExtraSelections(selections)

    def marker_at(self, doc_pos: int) -> str | None:
        for start, end, label in self.markers:
            if start <= doc_pos < end:
                return label
        return None

    def statement_at(self, doc_pos: int) -> StatementAssessment | None:
        for start, end, s in self.ranges:
            if start <= doc_pos < end:
                return s
        return None

    def hover_text(self, s: StatementAssessment) -> str:
        mark, word = STATUS_MARK[s.status]
        urls = self._supporters.get(s.row.pk) or ()
        if urls:
            return f"{mark} {word}. Supported by:\n" + "\n".join(urls)
        return f"{mark} {word}. No cited source supports it."

    def eventFilter(self, obj: QObject, event: QEvent) -> bool:
        if obj is self.viewport():
            if event.type() == QEvent.Type.ToolTip:
                s = self.statement_at(self.cursorForPosition(event.pos()).position())  # type: ignore[attr-defined]
                if s is not None:
                    QToolTip.showText(event.globalPos(), safe_tooltip(self.hover_text(s)), self)  # type: ignore[attr-defined]
                else:
                    QToolTip.hideText()
                return True
            if event.type() == QEvent.Type.MouseButtonRelease:
                pos = self.cursorForPosition(event.position().toPoint()).position()  # type: ignore[attr-defined]
                label = self.marker_at(pos)
                s = self.statement_at(pos)
                if label is not None:
                    self.marker_clicked.emit(label)
                elif s is not None:
                    self.statement_clicked.emit(s.row.pk)
        return super().eventFilter(obj, event)


class SourceViewer(QPlainTextEdit):
    """A source's text, as plain text, scrolled to the evidence quote with the quote highlighted."""

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.setReadOnly(True)
        self.setUndoRedoEnabled(False)
        self.quote_span: tuple[int, int] | None = None

    def show_source(self, text: str, quote: str = "") -> bool:
        """Show ``text``; returns True when the quote was found and highlighted."""
        shown = text[:MAX_SHOWN_CHARS]
        if len(text) > MAX_SHOWN_CHARS:
            shown += f"\n\n[… {len(text) - MAX_SHOWN_CHARS:,} more characters not shown]"
        self.setPlainText(shown)
        self.quote_span = locate_quote(quote, shown) if quote else None
        if self.quote_span is None:
            self.setExtraSelections([])
            self.moveCursor(QTextCursor.MoveOperation.Start)
            return False
        start, end = self.quote_span
        sel = QTextEdit.ExtraSelection()
        cursor = QTextCursor(self.document())
        cursor.setPosition(start)
        cursor.setPosition(end, QTextCursor.MoveMode.KeepAnchor)
        sel.cursor = cursor
        fmt = QTextCharFormat()
        fmt.setBackground(QColor("#7a6a00" if is_dark() else "#fff176"))
        fmt.setFontWeight(QFont.Weight.Bold)
        fmt.setProperty(QTextFormat.Property.FullWidthSelection, False)
        sel.format = fmt
        self.setExtraSelections([sel])
        self._center_quote()
        # the layout of a freshly set text settles on the next turn of the event loop: centre again then
        QTimer.singleShot(0, self._center_quote)
        return True

    def _center_quote(self) -> None:
        if self.quote_span is None:
            return
        caret = QTextCursor(self.document())
        caret.setPosition(self.quote_span[0])
        self.setTextCursor(caret)
        self.centerCursor()

    def highlighted_text(self) -> str:
        sels = self.extraSelections()
        return sels[0].cursor.selectedText() if sels else ""


def metric_text(name: str, m: Metric, basis: str = "") -> str:
    """A metric card's three short lines: its name, the estimate with its counts and its basis ("judges only",
    "with reviews"), the 95% interval."""
    tail = f" · {basis}" if basis else ""
    if m.value is None:
        return f"{name}\nn/a{tail}"
    lo, hi = m.ci95
    ci = "" if lo is None or hi is None else f"\n95% CI {100 * lo:.0f}–{100 * hi:.0f}%"
    return f"{name}\n{percent(m.value)} · {m.k}/{m.n}{tail}{ci}"


CARD_MIN_WIDTH = 150   # a card narrower than this moves to the next row


class MetricsBar(QWidget):
    """The run's four metrics with their 95% intervals as cards that reflow (four in a row, or two
    and two on a narrow window), the run's counts on one line below, and the overrides toggle.
    Every text is cut with "…" to its space (the whole text in its tooltip), so the bar's height
    and the window's size never change with what a run holds."""

    overrides_toggled = Signal(bool)

    def __init__(self, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        outer = QVBoxLayout(self)
        outer.setContentsMargins(4, 2, 4, 2)
        outer.setSpacing(2)
        self.grid = QGridLayout()
        self.grid.setContentsMargins(0, 0, 0, 0)
        self.grid.setSpacing(4)
        outer.addLayout(self.grid)
        self.labels = {key: ElidedLabel(min_chars=10) for key in
                       ("statement_support", "response_support", "url_validity", "unused_sources")}
        for label in self.labels.values():
            label.setFrameShape(QFrame.Shape.StyledPanel)
        self.columns = 0
        self._reflow(4)
        row = QHBoxLayout()
        row.setContentsMargins(0, 0, 0, 0)
        self.counts = ElidedLabel(min_chars=20)
        self._count_parts: list[str] = []
        row.addWidget(self.counts, 1)
        # judges only by default, as `show`, `runs` and `report` are; the basis is named on every card
        self.with_overrides = QCheckBox("With reviewer overrides")
        self.with_overrides.setChecked(False)
        self.with_overrides.setToolTip("Off: every figure is the judges' alone (as the CLI and the report lead "
                                       "with). On: reviewers' labels replace the judge's on the pairs they "
                                       "reviewed.")
        self.with_overrides.toggled.connect(self.overrides_toggled)
        row.addWidget(self.with_overrides)
        outer.addLayout(row)
        # what the built-in judge can and cannot do, said where the figures are read
        self.judge_note = ElidedLabel(SCREENING_JUDGE_NOTE, min_chars=20)
        self.judge_note.setVisible(False)
        outer.addWidget(self.judge_note)
        self.clear()

    def _reflow(self, columns: int) -> None:
        """Lay the cards out ``columns`` to a row."""
        if columns == self.columns:
            return
        self.columns = columns
        for label in self.labels.values():
            self.grid.removeWidget(label)
        for i, label in enumerate(self.labels.values()):
            self.grid.addWidget(label, i // columns, i % columns)
        for c in range(4):
            self.grid.setColumnStretch(c, 1 if c < columns else 0)

    def resizeEvent(self, event: QResizeEvent) -> None:
        super().resizeEvent(event)
        self._reflow(4 if event.size().width() >= 4 * CARD_MIN_WIDTH + 24 else 2)
        self._fold_counts()

    def _fold_counts(self) -> None:
        """The run's counts on one line when they fit, else on two, broken between two parts: a wide
        window shows all of them (the end, "partial run: …", used to go to the tooltip)."""
        parts = self._count_parts
        fm = self.counts.fontMetrics()
        # the counts' share of the row (the checkbox beside it keeps its own width)
        width = self.width() - self.with_overrides.sizeHint().width() - 24
        line = " · ".join(parts)
        if len(parts) < 2 or width <= 0 or fm.horizontalAdvance(line) <= width:
            text = line
        else:
            cut = 1
            while cut < len(parts) - 1 and fm.horizontalAdvance(" · ".join(parts[:cut + 1])) <= width:
                cut += 1
            text = " · ".join(parts[:cut]) + "\n" + " · ".join(parts[cut:])
        if text != self.counts.text():
            self.counts.setText(text)

    def clear(self) -> None:
        for label in self.labels.values():
            label.setText("–")
        self._count_parts = ["No run open"]
        self.counts.setText("No run open")
        self.judge_note.setVisible(False)

    def show_metrics(self, metrics: MetricSet, n_overrides: int, status: str, cost: str = "",
                     judges: Sequence[str] = (), judge_versions: str = "", judge_warning: str = "",
                     with_overrides: bool | None = None, studies: Mapping[str, Any] | None = None) -> None:
        """``judge_versions``: the judge version that gave the verdicts, in words; ``judge_warning``: set
        when it ran degraded (the built-in judge without its embedding model), shown in the judge's line;
        ``with_overrides``: the figures' basis (default: the toggle's state), named on every card."""
        applied = self.with_overrides.isChecked() if with_overrides is None else with_overrides
        basis = figure_basis(applied, short=True)   # a card is 150 px wide at the least
        if judge_warning:
            self.judge_note.setText(f"⚠ Warning: {judge_warning[0].upper()}{judge_warning[1:]}.")
        else:
            self.judge_note.setText(builtin_judge_note(judge_versions))
        self.judge_note.setVisible(uses_screening_judge(judges) or bool(judge_warning))
        names = {"statement_support": "Statement support", "response_support": "Response support",
                 "url_validity": "URL validity", "unused_sources": "Unused sources"}
        for key, label in self.labels.items():
            label.setText(metric_text(names[key], getattr(metrics, key), basis))
        c = metrics.counts
        parts = [f"Run {status}", _count(c.get("responses", 0), "response"), overrides_words(n_overrides, applied),
                 _count(c.get("judge_errors", 0), "judge error"), _count(c.get("fetch_failures", 0), "unreadable cited URL")]
        if c.get("judges_disagree"):
            parts.append(f"judges disagree on {_count(c['judges_disagree'], 'claim')}")
        # what the support figures leave out, and why (the engine's words, as in every report)
        notes = exclusion_notes(c)
        for key, name in (("statement_support", "statement support"), ("response_support", "response support")):
            if notes.get(key, "leaves out nothing") != "leaves out nothing":
                parts.append(f"{name} {notes[key]}")
        full = getattr(metrics, "full_text_validity", None)
        if full is not None and full.value is not None:
            parts.append(f"full-text validity {percent(full.value)} ({full.k}/{full.n})")
        answers = getattr(metrics, "answer_citation_validity", None)   # Almanac: every citation of the answer valid
        if answers is not None and answers.value is not None:
            parts.append(f"per-answer citation validity {percent(answers.value)} ({answers.k}/{answers.n})")
        for key, name in (("context_relevance", "context relevance"), ("refusal_accuracy", "refusal accuracy"),
                          ("adversarial_safety", "adversarial safety")):   # the other studies, where the run has them
            fig = (studies or {}).get("overall", {}).get(key) or {}
            if fig.get("value") is not None:
                parts.append(f"{name} {percent(fig['value'])} ({fig['k']}/{fig['n']})")
        if c.get("partial"):
            parts.append(partial_run_note(c))
        if judge_error_note(c):
            parts.append("⚠ " + judge_error_note(c))
        if cost:
            parts.append(cost)
        if judge_versions:
            parts.append(f"judge {judge_versions}")
        self._count_parts = parts
        self._fold_counts()


def _count(n: int, noun: str) -> str:
    """"1 judge error", "2 judge errors"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"
