"""The Answer tab: the answer with its statements marked, and a card with a statement's (or a
citation marker's) verdicts against each cited source."""
from __future__ import annotations

from typing import Any

from PySide6.QtCore import Qt
from PySide6.QtWidgets import QFrame, QHBoxLayout, QPlainTextEdit, QSplitter, QVBoxLayout, QWidget

from sourcecheckup.metrics import ResponseAssessment
from sourcecheckup.models import Label, Response
from sourcecheckup.review.answer_grades import answer_grades, grade_summary
from sourcecheckup.views.matrix import MatrixCell, how_decided, verdict_word
from sourcecheckup.views.references import RETRACTED_MARK, RETRACTED_ONLY_WORDS, reference_badge
from sourcecheckup.views.results import answer_notices
from sourcecheckup.views.text import reason_for_app

from ..elide import ElidedLabel
from ..theme import CONTRADICTED_MARK, LABEL_MARK, REVIEW_FIRST_MARK, REVIEW_MARK, STATUS_MARK
from ..widgets import AnswerView, plain_label

CARD_HINT = "Click a statement to see its verdicts, or a [n] marker to see that source."


class AnswerTab(QWidget):
    def __init__(self, page: Any, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.page = page
        al = QVBoxLayout(self)
        # one line, the whole question in its tooltip: on a 640 px screen the answer and the verdicts need
        # the height (issue 41 item 15)
        head = QHBoxLayout()
        self.question_label = ElidedLabel(min_chars=20)
        head.addWidget(self.question_label, 3)
        # the reviewers' Good/Bad grades of the whole answer (G / B in review mode), apart from pair labels
        self.grade_label = ElidedLabel(min_chars=12)
        head.addWidget(self.grade_label, 1)   # the question keeps three parts of the width in four when both are long
        al.addLayout(head)
        # what a reader must not miss above the answer: not read yet, a cited address refused
        self.notice = plain_label()
        self.notice.setFrameShape(QFrame.Shape.StyledPanel)
        self.notice.setMargin(6)
        self.notice.setVisible(False)
        al.addWidget(self.notice)
        self.answer_view = AnswerView()
        self.answer_view.statement_clicked.connect(self.show_statement_card)
        self.answer_view.marker_clicked.connect(self.show_marker_card)
        # a statement's card beside the answer: its verdict against each cited source, with the quote
        asplit = QSplitter(Qt.Orientation.Horizontal)
        asplit.addWidget(self.answer_view)
        self.statement_card = QPlainTextEdit()
        self.statement_card.setReadOnly(True)
        self.statement_card.setPlaceholderText(CARD_HINT)
        asplit.addWidget(self.statement_card)
        asplit.setSizes([600, 360])
        al.addWidget(asplit, 1)
        # each mark and its words joined by no-break spaces: a narrow window wraps between entries, never
        # leaving "⊠" at the end of one line and its meaning on the next (issue 41 item 15)
        entries = [*STATUS_MARK.values(), (RETRACTED_MARK, RETRACTED_ONLY_WORDS)]
        # (and a word joiner after the mark: "–" is itself a place a line may break)
        self.legend = plain_label("   ".join(f"{m}\u2060\u00a0" + w.replace(" ", "\u00a0") for m, w in entries),
                                  selectable=False)
        al.addWidget(self.legend)

    def show_answer(self, resp: Response, assessment: ResponseAssessment) -> None:
        q = resp.question or "(no question given)"
        self.question_label.setText(f"Question: {q}   ·   Model: {resp.model or 'unknown'}   ·   {resp.origin}")
        view = self.page.view
        self.answer_view.show_answer(resp.text, assessment.statements,
                                     view.retracted_only if view is not None else ())
        notices = answer_notices(view, assessment.response_pk) if view is not None else []
        self.notice.setText("\n".join(reason_for_app(n) for n in notices))
        self.notice.setVisible(bool(notices))
        self.statement_card.clear()
        self.load_grades()

    def load_grades(self) -> None:
        """The selected answer's grades, read off the GUI thread."""
        run_id, pk = self.page.run_id, self.page.response_pk
        if not run_id or pk is None:
            self.grade_label.setText("")
            return

        def done(text: str) -> None:
            if (self.page.run_id, self.page.response_pk) == (run_id, pk):
                self.grade_label.setText(text)

        self.page.host.db.read("answer-grades", lambda st: grade_summary(answer_grades(st, run_id, response_pk=pk)),
                               done, lambda msg: self.grade_label.setText(f"Answer grade: could not be read ({msg})"))

    def clear(self) -> None:
        self.answer_view.clear()
        self.statement_card.clear()
        self.question_label.setText("")
        self.grade_label.setText("")
        self.notice.setText("")
        self.notice.setVisible(False)

    def _pair_lines(self, cell: MatrixCell, number: int) -> list[str]:
        view = self.page.view
        src_row = view.data.sources.get(cell.url) if view is not None else None
        title = f" — {src_row.source.title}" if src_row and src_row.source.title else ""
        lines = [f"[{number}] {cell.url}{title}"]
        check = view.references.get(cell.url) if view is not None else None
        if check is not None:
            lines.append(f"   reference: {reference_badge(check)}: {check.evidence}")
        if not cell.readable:
            outcome = src_row.source.status.plain if src_row else "not fetched yet"
            reason = reason_for_app(src_row.source.reason) if src_row and src_row.source.reason else ""
            lines.append(f"   ⊘ {outcome}" + (f": {reason}" if reason else "") + "; not judged")
            return lines
        if not cell.verdicts:
            lines.append("   … not judged yet")
        for v in cell.verdicts:
            word = verdict_word(v.verdict)
            mark = CONTRADICTED_MARK if word == "contradicted" else LABEL_MARK[v.verdict.label][0]
            lines.append(f"   {mark} {word} ({v.verdict.judge_id})" + (f": {v.verdict.rationale}"
                                                                       if v.verdict.rationale else ""))
            decider = how_decided(v.verdict)
            if decider:
                lines.append(f"   decided by {decider}")
            if v.verdict.quote:
                found = "" if v.verdict.quote_found else " (not found in the source)"
                # a judge that found no support may still name the sentence it read: not evidence
                what = "quote" if v.verdict.label is Label.SUPPORTED else "source sentence it read"
                lines.append(f"   {what}{found}: “{v.verdict.quote}”")
        if cell.review_first:
            lines.append(f"   {REVIEW_FIRST_MARK} review first: the judge is unsure")
        if cell.override is not None:
            lines.append(f"   {REVIEW_MARK} reviewer: {LABEL_MARK[cell.override][1]}")
        return lines

    def show_statement_card(self, statement_pk: int) -> None:
        """The statement's verdicts against every cited source, beside the answer."""
        self.page.matrix_tab.select_statement_row(statement_pk)
        matrix = self.page.matrix_tab.matrix_model.matrix
        s = next((s for s in matrix.statements if s.row.pk == statement_pk), None)
        if s is None:
            return
        mark, word = STATUS_MARK[s.status]
        lines = [f"{mark} {word}: {s.row.statement.text}", ""]
        if s.row.pk in matrix.retracted_only:
            lines[1:1] = [f"{RETRACTED_MARK} {RETRACTED_ONLY_WORDS[0].upper()}{RETRACTED_ONLY_WORDS[1:]}: every "
                          "source that supports it was retracted."]
        if not s.row.statement.informative:
            lines.append("Not a claim (conversation, a question or a disclaimer): not judged.")
        elif not matrix.urls:
            lines.append("The answer cites no source.")
        else:
            for i, url in enumerate(matrix.urls):
                lines += self._pair_lines(matrix.cells[(statement_pk, url)], i + 1)
        self.statement_card.setPlainText("\n".join(lines))

    def show_marker_card(self, label: str) -> None:
        """A citation marker [n]: its source, and how each statement fared against it."""
        resp = self.page.current_response()
        if resp is None:
            return
        index = resp.markers.get(label, resp.markers.get(label.lstrip("^")))
        if index is None and label.isdigit() and 0 < int(label) <= len(resp.citations):
            index = int(label) - 1
        if index is None or not 0 <= index < len(resp.citations):
            self.statement_card.setPlainText(f"[{label}] points to no cited source in this answer.")
            return
        url = resp.citations[index]
        matrix = self.page.matrix_tab.matrix_model.matrix
        if url not in matrix.urls:
            self.statement_card.setPlainText(f"[{label}] {url}")
            return
        col = matrix.urls.index(url)
        lines = [f"Source [{label}]", ""]
        for s in matrix.statements:
            if not s.row.statement.informative:
                continue
            lines.append(f"{s.row.statement.text}")
            lines += self._pair_lines(matrix.cells[(s.row.pk, url)], col + 1)[1:]
        self.page.sources_tab.select_url(col, url)
        self.statement_card.setPlainText("\n".join([f"[{label}] {url}"] + lines[1:]))
