"""Table models over engine objects (sourcecheckup.views); the widgets hold no data of their own.

Every DisplayRole is plain text: Qt's item views never interpret it as markup.
"""
from __future__ import annotations

import re
from typing import Any, Callable, Generic, Sequence, TypeVar

from PySide6.QtCore import QAbstractTableModel, QModelIndex, QPersistentModelIndex, QSortFilterProxyModel, Qt
from PySide6.QtGui import QColor, QFont

from sourcecheckup.benchmark import Question
from sourcecheckup.cleanup import SuggestionKind, SuggestionRow
from sourcecheckup.metrics import percent
from sourcecheckup.models import Label
from sourcecheckup.references.metrics import is_retracted
from sourcecheckup.review.sample import SamplePair
from sourcecheckup.urls import host_note
from sourcecheckup.views.benchmark import BenchModelRow
from sourcecheckup.views.matrix import MatrixCell, SupportMatrix, verdict_word
from sourcecheckup.views.references import RETRACTED_MARK, reference_detail
from sourcecheckup.views.results import ResponseSummary
from sourcecheckup.views.review import AgreementRow
from sourcecheckup.views.runs import ChangedSource, ChangedStatement, MetricDifference, RunSummary
from sourcecheckup.views.sources import SourceSummary
from sourcecheckup.views.text import reason_for_app

from .theme import (
    CONTRADICTED_MARK,
    LABEL_MARK,
    REVIEW_FIRST_MARK,
    REVIEW_MARK,
    STATUS_MARK,
    label_tint,
    safe_tooltip,
    tint,
)

T = TypeVar("T")
Index = QModelIndex | QPersistentModelIndex
ROW_ROLE = Qt.ItemDataRole.UserRole + 1     # the engine object behind a row
SORT_ROLE = Qt.ItemDataRole.UserRole + 2


def _pct(v: float | None) -> str:
    return percent(v, 0, missing="–")


class _RowModel(QAbstractTableModel, Generic[T]):
    """A list of engine records, one per row; subclasses name the columns."""

    columns: Sequence[tuple[str, Callable[[Any], Any]]] = ()

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.rows: list[T] = []
        self._haystacks: dict[int, str] = {}
        self.dataChanged.connect(lambda *_: self._haystacks.clear())

    def set_rows(self, rows: Sequence[T]) -> None:
        self.beginResetModel()
        self.rows = list(rows)
        self._haystacks.clear()
        self.endResetModel()

    def row_at(self, row: int) -> T | None:
        return self.rows[row] if 0 <= row < len(self.rows) else None

    def haystack(self, row: int) -> str:
        """Every column's shown text of a row, case-folded, for the search box."""
        text = self._haystacks.get(row)
        if text is None:
            if type(self).data is _RowModel.data:
                # the shown text straight from the columns: no model index per cell (1,000 rows x 10
                # columns through data() held the GUI thread for tens of milliseconds)
                item = self.rows[row]
                cells = ("" if (v := fn(item)) is None else str(v) for _, fn in self.columns)
            else:
                cells = (str(self.data(self.index(row, c))) for c in range(self.columnCount()))
            text = "\n".join(cells).casefold()
            self._haystacks[row] = text
        return text

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.rows)

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.columns)

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if orientation == Qt.Orientation.Horizontal and role in (Qt.ItemDataRole.DisplayRole,
                                                                  Qt.ItemDataRole.ToolTipRole):
            return self.columns[section][0]   # the tooltip: a narrow column cuts its header
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        item = self.rows[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            value = self.columns[index.column()][1](item)
            return "" if value is None else str(value)
        if role == ROW_ROLE:
            return item
        if role == SORT_ROLE:
            return self.sort_key(item, index.column())
        if role == Qt.ItemDataRole.ToolTipRole:
            value = self.columns[index.column()][1](item)
            return safe_tooltip(str(value)) if value else None
        return self.extra(item, index.column(), role)

    def sort_key(self, item: T, column: int) -> Any:
        value = self.columns[column][1](item)
        return "" if value is None else value

    def extra(self, item: T, column: int, role: int) -> Any:
        return None


def _supported_mark(r: ResponseSummary) -> str:
    if not r.parsed:
        return "… not read yet"
    if r.supported is True:
        return "✓ all supported"
    if r.supported is False:
        return "✗ not all supported"
    return "… undecided" if r.claims else "– no claims"


class ResponsesModel(_RowModel[ResponseSummary]):
    columns = (
        ("Response", lambda r: r.rid),
        ("Model", lambda r: r.model),
        ("Claims", lambda r: r.claims_text),
        ("Supported", lambda r: r.support_text),
        ("Status", _supported_mark),
        ("Sources", lambda r: r.sources_text),
        ("Problems", lambda r: r.problems),
    )

    def haystack(self, row: int) -> str:
        # the question too, as the search box says (a paged run's search is id, model and question)
        return super().haystack(row) + "\n" + self.rows[row].question.casefold()

    def sort_key(self, item: ResponseSummary, column: int) -> Any:
        if column == 2:
            return item.claims if item.parsed else -1
        if column == 3:
            return item.supported_claims / item.decided_claims if item.decided_claims else -1.0
        if column == 5:
            return item.valid_sources
        return super().sort_key(item, column)

    def extra(self, item: ResponseSummary, column: int, role: int) -> Any:
        if role == Qt.ItemDataRole.BackgroundRole and column == 4:
            key = {True: "supported", False: "not_supported", None: "pending"}[item.supported]
            return tint(key)
        return None


class SourcesModel(_RowModel[SourceSummary]):
    columns = (
        ("#", lambda s: None),
        ("URL", lambda s: s.url),
        ("Domain", lambda s: s.domain + (f" [{note}]" if (note := host_note(s.domain)) else "")),   # lookalikes
        ("Title", lambda s: s.title),
        ("Outcome", lambda s: s.outcome),
        ("Notes", lambda s: s.note_text),
        ("Used", lambda s: {True: "✓ supports a claim", False: "✗ supports none", None: "–"}[s.used]),
        ("Flags", lambda s: ("⚠ " + s.flag_text) if s.flags else ""),
        ("Reason", lambda s: reason_for_app(s.reason)),
        ("Reference", lambda s: s.reference_badge),
    )
    REFERENCE_COLUMN = 9

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if index.isValid() and index.column() == 0 and role == Qt.ItemDataRole.DisplayRole:
            return str(index.row() + 1)
        if index.isValid() and role == Qt.ItemDataRole.ToolTipRole and index.column() == 4:
            s = self.rows[index.row()]
            reason = reason_for_app(s.reason)
            return safe_tooltip(f"{s.outcome}: {reason}" if reason else s.outcome)
        if index.isValid() and role == Qt.ItemDataRole.ToolTipRole and index.column() == self.REFERENCE_COLUMN:
            return safe_tooltip(self.rows[index.row()].reference_detail)
        return super().data(index, role)

    def extra(self, item: SourceSummary, column: int, role: int) -> Any:
        if role == Qt.ItemDataRole.BackgroundRole and column == 4:
            if item.status is None:
                return tint("pending")
            return tint("supported" if item.status.readable else "no_readable_source")
        if role == Qt.ItemDataRole.BackgroundRole and column == self.REFERENCE_COLUMN and item.reference is not None:
            return tint(_reference_tint(item.reference))
        return None


def _reference_tint(check: Any) -> str:
    """A reference badge's tint: retracted, mismatched and not found as problems; a failed lookup as an error."""
    if is_retracted(check) or check.status.value in ("mismatch", "not_found"):
        return "not_supported"
    return {"verified": "supported", "lookup_failed": "judge_error"}.get(check.status.value, "pending")


class RunsModel(_RowModel[RunSummary]):
    columns = (
        # what tells runs apart first (name, else the answer's first words or the input), then the figures
        ("Run", lambda r: r.what),
        ("Started", lambda r: r.created_at.replace("T", " ")[:16]),
        ("Statement support", lambda r: _pct(r.statement_support)),
        ("Response support", lambda r: _pct(r.response_support)),
        ("URL validity", lambda r: _pct(r.url_validity)),
        ("Responses", lambda r: r.responses),
        ("Status", lambda r: r.status),
        ("Note", lambda r: r.note),
        ("Judges", lambda r: ", ".join(r.judges)),
        ("Input", lambda r: r.input),
        ("Id", lambda r: r.id),
    )

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if index.isValid() and index.column() == 0 and role == Qt.ItemDataRole.ToolTipRole:
            r = self.rows[index.row()]
            head = f"{r.name} (run {r.id})" if r.name else f"run {r.id}"
            return safe_tooltip(f"{head}\n{r.note}" if r.note else head)
        return super().data(index, role)


_VERIFICATION_WORDS = {"verified": "✓ verified by the judge", "failed_verification": "✗ judge: still unsupported",
                       "verification_error": "⚠ could not be verified", "delete": "– delete recommended"}


class SuggestionsModel(_RowModel[SuggestionRow]):
    columns = (
        ("Statement", lambda g: g.original),
        ("Suggestion", lambda g: "delete the statement" if g.kind is SuggestionKind.DELETE else g.suggested),
        ("Verification", lambda g: _VERIFICATION_WORDS.get(g.status.value, g.status.value)),
        ("Decision", lambda g: {"accepted": "✓ accepted", "rejected": "✗ rejected"}.get(g.decision.value, "open")),
    )


class MatrixModel(QAbstractTableModel):
    """The support matrix of one response: statements (rows) x cited sources (columns)."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.matrix = SupportMatrix([], [], {})
        self._bold = QFont()
        self._bold.setBold(True)
        self._italic = QFont()
        self._italic.setItalic(True)

    def set_matrix(self, matrix: SupportMatrix) -> None:
        self.beginResetModel()
        self.matrix = matrix
        self.endResetModel()

    def rowCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.matrix.statements)

    def columnCount(self, parent: Index = QModelIndex()) -> int:
        return 0 if parent.isValid() else len(self.matrix.urls)

    def cell(self, index: Index) -> MatrixCell | None:
        if not index.isValid():
            return None
        return self.matrix.cell(index.row(), index.column())

    def index_of(self, statement_pk: int, url: str) -> QModelIndex:
        for r, s in enumerate(self.matrix.statements):
            if s.row.pk == statement_pk and url in self.matrix.urls:
                return self.index(r, self.matrix.urls.index(url))
        return QModelIndex()

    def headerData(self, section: int, orientation: Qt.Orientation, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        # the whole text: the header view cuts it to the column's width, the tooltip holds it all
        if orientation == Qt.Orientation.Horizontal:
            if not 0 <= section < len(self.matrix.urls):
                return None
            url = self.matrix.urls[section]
            title = self.matrix.titles.get(url, "")
            badge = self.matrix.header_badge(section)   # a retracted, not-found or mismatched reference
            if role == Qt.ItemDataRole.DisplayRole:
                from sourcecheckup.urls import domain_of

                return f"[{section + 1}] " + (f"{badge} " if badge else "") + f"{title or domain_of(url) or url}"
            if role == Qt.ItemDataRole.ToolTipRole:
                tip = f"[{section + 1}] {title}\n{url}" if title else f"[{section + 1}] {url}"
                if url in self.matrix.references:
                    tip += "\n\n" + reference_detail(self.matrix.references[url])
                return safe_tooltip(tip)
            if role == Qt.ItemDataRole.BackgroundRole and badge:
                return tint("not_supported")
            return None
        if not 0 <= section < len(self.matrix.statements):
            return None
        s = self.matrix.statements[section]
        mark, word = STATUS_MARK[s.status]
        if s.row.pk in self.matrix.retracted_only:
            mark, word = f"{mark}{RETRACTED_MARK}", f"{word}, only by retracted papers"
        if role == Qt.ItemDataRole.DisplayRole:
            return f"{mark} S{section + 1}  {s.row.statement.text}"
        if role == Qt.ItemDataRole.ToolTipRole:
            return safe_tooltip(f"S{section + 1} ({word}): {s.row.statement.text}")
        if role == Qt.ItemDataRole.BackgroundRole:
            return tint(s.status.value)
        return None

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        cell = self.cell(index)
        if cell is None:
            return None
        statement = self.matrix.statements[index.row()]
        if role == Qt.ItemDataRole.DisplayRole:
            if not statement.row.statement.informative:
                return "–"
            if not cell.readable:
                return "⊘ unreadable"
            mark, word = LABEL_MARK[cell.label]
            if cell.override is None and cell.label is Label.NOT_SUPPORTED and cell.contradicted:
                mark, word = CONTRADICTED_MARK, "contradicted"
            text = f"{mark} {word}"
            if cell.review_first:
                text = f"{REVIEW_FIRST_MARK} {text}"
            if cell.override is not None and cell.override is not cell.label:   # overrides not applied
                text = f"{REVIEW_MARK} {text} (reviewer: {LABEL_MARK[cell.override][1]})"
            elif cell.override is not None:
                text = f"{REVIEW_MARK} {text} (reviewed)"
            elif cell.reviewed_without_label:     # looked at, no label: the judge's label still counts
                text = f"{REVIEW_MARK} {text} (reviewed: {cell.reviewed_without_label})"
            if cell.disagreement:
                text += " ≠"
            if len(cell.verdicts) > 1:
                text += "  [" + " ".join(LABEL_MARK[v.verdict.label][0] for v in cell.verdicts) + "]"
            return text
        if role == Qt.ItemDataRole.BackgroundRole:
            if cell.override is not None:
                return tint("override")
            if not cell.readable or not statement.row.statement.informative:
                return tint("unreadable")
            if cell.label is Label.NOT_SUPPORTED and cell.contradicted:
                return tint("contradicted")
            return label_tint(cell.label)
        if role == Qt.ItemDataRole.FontRole:
            return self._italic if cell.override is not None else None
        if role == Qt.ItemDataRole.ToolTipRole:
            lines = []
            for v in cell.verdicts:
                lines.append(f"{v.verdict.judge_id}: {verdict_word(v.verdict)}")
            if cell.review_first:
                lines.append("review first: the judge is unsure of this pair")
            if cell.override is not None:
                lines.append(f"reviewer override: {LABEL_MARK[cell.override][1]}")
            elif cell.reviewed_without_label:
                lines.append(f"reviewed: {cell.reviewed_without_label} (the judge's label still counts)")
            if cell.disagreement:
                lines.append("the judges disagree")
            return safe_tooltip("\n".join(lines)) if lines else None
        if role == Qt.ItemDataRole.TextAlignmentRole:
            return int(Qt.AlignmentFlag.AlignCenter)
        return None


# ----------------------------------------------------------------------------- benchmark


class QuestionsModel(_RowModel[Question]):
    """A benchmark's questions; the question text and reference answer can be edited and a question
    dropped (the "Use" check) while ``editable``. Every change goes through ``editor`` (an engine
    call made by the page), which returns the question as stored, or None when it refused."""

    QUESTION, REFERENCE, USE = 2, 3, 5
    columns = (
        ("Id", lambda q: q.qid),
        ("Variant", lambda q: q.variant),
        ("Question", lambda q: q.question),
        ("Reference answer", lambda q: q.reference_answer),
        ("Document", lambda q: _document_name(q.document_url)),
        ("Use", lambda q: "✗ dropped" if q.dropped else ("✎ edited" if q.edited else "✓ use")),
    )

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.editable = False
        self.editor: Callable[[Question, str, Any], Question | None] | None = None

    def flags(self, index: Index) -> Qt.ItemFlag:
        base = super().flags(index)
        if not index.isValid() or not self.editable:
            return base
        if index.column() in (self.QUESTION, self.REFERENCE):
            return base | Qt.ItemFlag.ItemIsEditable
        if index.column() == self.USE:
            return base | Qt.ItemFlag.ItemIsUserCheckable
        return base

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if not index.isValid():
            return None
        q = self.rows[index.row()]
        if role == Qt.ItemDataRole.EditRole and index.column() in (self.QUESTION, self.REFERENCE):
            return q.question if index.column() == self.QUESTION else q.reference_answer
        if role == Qt.ItemDataRole.CheckStateRole and index.column() == self.USE:
            return Qt.CheckState.Unchecked if q.dropped else Qt.CheckState.Checked
        if role == Qt.ItemDataRole.ToolTipRole and index.column() == 4:
            return safe_tooltip(q.document_url) if q.document_url else None
        if role == Qt.ItemDataRole.FontRole and q.dropped:
            font = QFont()
            font.setStrikeOut(True)
            return font
        return super().data(index, role)

    def setData(self, index: Index, value: Any, role: int = Qt.ItemDataRole.EditRole) -> bool:
        if not index.isValid() or not self.editable or self.editor is None:
            return False
        q = self.rows[index.row()]
        if role == Qt.ItemDataRole.EditRole and index.column() == self.QUESTION:
            if str(value).strip() == q.question:
                return False
            new = self.editor(q, "question", str(value))
        elif role == Qt.ItemDataRole.EditRole and index.column() == self.REFERENCE:
            if str(value).strip() == q.reference_answer:
                return False
            new = self.editor(q, "reference_answer", str(value))
        elif role == Qt.ItemDataRole.CheckStateRole and index.column() == self.USE:
            checked = Qt.CheckState(value) == Qt.CheckState.Checked if not isinstance(value, bool) else value
            new = self.editor(q, "dropped", not checked)
        else:
            return False
        if new is None:
            return False
        self.rows[index.row()] = new
        self.dataChanged.emit(self.index(index.row(), 0), self.index(index.row(), self.columnCount() - 1))
        return True

    def extra(self, item: Question, column: int, role: int) -> Any:
        if role == Qt.ItemDataRole.ForegroundRole and item.dropped:
            return QColor("#888888")
        return None


def _document_name(location: str | None) -> str:
    """The last part of a document's URL or path ("hypertension", "guideline.pdf"); the tooltip has it all."""
    if not location:
        return ""
    return location.rstrip("/").rsplit("/", 1)[-1] or location


class BenchResultsModel(_RowModel[BenchModelRow]):
    columns = (
        ("Model", lambda r: r.name),
        ("Answers", lambda r: r.answers),
        ("URL validity", lambda r: r.url_validity),
        ("Statement support", lambda r: r.statement_support),
        ("Response support", lambda r: r.response_support),
        ("Accuracy", lambda r: r.accuracy),
        # the other studies: ASTRID (refusal accuracy, context relevance), Almanac (adversarial safety,
        # per-answer citation validity); each with its 95% interval and k/n
        ("Refusal accuracy", lambda r: r.refusal_accuracy),
        ("Context relevance", lambda r: r.context_relevance),
        ("Adversarial safety", lambda r: r.adversarial_safety),
        ("Answer citation validity", lambda r: r.answer_citation_validity),
        ("Refused / answered", lambda r: r.refusal_confusion or "–"),
        ("Best-of-K gain", lambda r: r.best_of or "–"),
        ("Accuracy grades", lambda r: r.accuracy_labels or "–"),
        ("Answer outcomes", lambda r: r.answer_status),
        ("Tokens", lambda r: r.tokens),
        ("Cost", lambda r: r.cost),
    )

    def data(self, index: Index, role: int = Qt.ItemDataRole.DisplayRole) -> Any:
        if index.isValid() and index.column() == 0 and role == Qt.ItemDataRole.ToolTipRole:
            return safe_tooltip(self.rows[index.row()].model)
        return super().data(index, role)


# ----------------------------------------------------------------------------- comparison, review


class DifferencesModel(_RowModel[MetricDifference]):
    columns = (("Metric", lambda d: d.metric), ("Run A", lambda d: d.a), ("Run B", lambda d: d.b),
               ("B − A", lambda d: d.diff))


class ChangedStatementsModel(_RowModel[ChangedStatement]):
    columns = (
        ("Response", lambda s: s.response_id),
        ("Statement", lambda s: s.statement),
        ("In run A", lambda s: _support_word(s.supported_a, s.status_a)),
        ("In run B", lambda s: _support_word(s.supported_b, s.status_b)),
        ("Change", lambda s: s.move),
    )

    def extra(self, item: ChangedStatement, column: int, role: int) -> Any:
        if role == Qt.ItemDataRole.BackgroundRole and column in (2, 3):
            sup = item.supported_a if column == 2 else item.supported_b
            return tint({True: "supported", False: "not_supported", None: "pending"}[sup])
        return None


def _support_word(supported: bool | None, words: str) -> str:
    return {True: "✓ ", False: "✗ ", None: "– "}[supported] + words


class ChangedSourcesModel(_RowModel[ChangedSource]):
    columns = (("URL", lambda s: s.url), ("What changed", lambda s: s.change),
               ("Read in A", lambda s: s.fetched_a), ("Read in B", lambda s: s.fetched_b))


class AgreementModel(_RowModel[AgreementRow]):
    columns = (("Rater", lambda r: r.rater_a), ("Compared with", lambda r: r.rater_b), ("Kind", lambda r: r.kind),
               ("Pairs", lambda r: r.n), ("Agreement", lambda r: r.agreement), ("Cohen's kappa", lambda r: r.kappa))


class SamplePairsModel(_RowModel[SamplePair]):
    """The pairs of a review sample with the reviewer's labels; the judge's label only when not blind."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.blind = True
        self.labels: dict[tuple[int, str], str] = {}

    @property
    def columns(self) -> Sequence[tuple[str, Callable[[Any], Any]]]:  # type: ignore[override]
        return (
            ("#", lambda p: p.ord + 1),
            ("Statement", lambda p: p.statement),
            ("Source", lambda p: p.source_title or p.url),
            ("Your label", lambda p: _REVIEW_WORDS.get(self.labels.get((p.statement_pk, p.url), ""), "… to do")),
            ("Judge", lambda p: "hidden (blind)" if self.blind else
             _REVIEW_WORDS.get(p.judge_label or "", "–")),
        )

    def set_labels(self, labels: dict[tuple[int, str], str]) -> None:
        self.labels = dict(labels)
        if self.rows:
            self.dataChanged.emit(self.index(0, 3), self.index(len(self.rows) - 1, 4))

    def set_blind(self, blind: bool) -> None:
        self.blind = blind
        if self.rows:
            self.dataChanged.emit(self.index(0, 4), self.index(len(self.rows) - 1, 4))


def _unescape(pattern: str) -> str:
    """The text of a fixed-string filter (QSortFilterProxyModel stores it regex-escaped)."""
    return re.sub(r"\\(.)", r"\1", pattern)


_REVIEW_WORDS = {"supported": "✓ supported", "not_supported": "✗ not supported", "unsure": "? unsure"}


class SortFilterProxy(QSortFilterProxyModel):
    """Case-insensitive search over every column; sorts by the model's SORT_ROLE."""

    def __init__(self, parent: Any = None) -> None:
        super().__init__(parent)
        self.setFilterCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.setFilterKeyColumn(-1)
        self.setSortRole(SORT_ROLE)
        self.row_filter: Callable[[Any], bool] | None = None   # a test on the row's record (the facets)

    def set_row_filter(self, row_filter: Callable[[Any], bool] | None) -> None:
        self.row_filter = row_filter
        self.invalidateRowsFilter()

    def filterAcceptsRow(self, source_row: int, source_parent: Index) -> bool:
        model = self.sourceModel()
        if self.row_filter is not None:
            item = model.row_at(source_row) if isinstance(model, _RowModel) else \
                model.index(source_row, 0, source_parent).data(ROW_ROLE)
            if item is not None and not self.row_filter(item):
                return False
        if isinstance(model, _RowModel) and not source_parent.isValid():
            # the row's shown texts, joined and case-folded once per row: one test, not one per column
            needle = self.filterRegularExpression().pattern()
            return not needle or _unescape(needle).casefold() in model.haystack(source_row)
        return super().filterAcceptsRow(source_row, source_parent)

    def lessThan(self, left: Index, right: Index) -> bool:
        a, b = left.data(SORT_ROLE), right.data(SORT_ROLE)
        try:
            return a < b
        except TypeError:
            return str(a) < str(b)


__all__ = ["ResponsesModel", "SourcesModel", "RunsModel", "SuggestionsModel", "MatrixModel", "SortFilterProxy",
           "ROW_ROLE", "Label"]
