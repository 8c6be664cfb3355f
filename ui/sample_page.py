"""The Review sample page: the study's validation for any run.

Draw a seeded, stratified sample of judged pairs (review.sample.draw_sample), label each pair
(review.add_review with sample= the sample's name), blind by default: the judge's verdict is
hidden and the source is shown scrolled to the passage that best matches the statement (BM25),
never to the judge's quote. The window's keyboard review mode drives this page too
(S / N / U, J / K or arrows). The agreement panel shows agreement.agreement_report; "Which judge
to trust…" opens judge_compare_panel (judge_compare.compare_judges).
"""
from __future__ import annotations

from PySide6.QtCore import QSignalBlocker, Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QHBoxLayout,
    QLabel,
    QLineEdit,
    QPushButton,
    QSpinBox,
    QSplitter,
    QTableView,
    QVBoxLayout,
    QWidget,
)

from sourcecheckup import review
from sourcecheckup.review import answer_grades
from sourcecheckup.review.agreement import agreement_report
from sourcecheckup.review.sample import STRATA, SampleError, SamplePair, draw_sample, list_samples
from sourcecheckup.store import Store, StoreError
from sourcecheckup.views.review import (
    SampleReview,
    agreement_rows,
    agreement_summary,
    load_sample_review,
    sample_labels,
)
from sourcecheckup.views.text import count_noun

from .host import Host
from .judge_compare_panel import JudgeCompareDialog
from .models import AgreementModel, SamplePairsModel
from .widgets import SourceViewer, plain_label

JUDGE_WORDS = {"supported": "✓ supported", "not_supported": "✗ not supported", "judge_error": "⚠ judge error"}


class SamplePage(QWidget):
    sample_shown = Signal(str)       # sample name, once its pairs are on screen
    agreement_shown = Signal()
    labelled = Signal(int)           # pair id

    def __init__(self, host: Host, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.sample: SampleReview | None = None
        self._judges_dialog: JudgeCompareDialog | None = None
        self._build()

    def _build(self) -> None:
        layout = QVBoxLayout(self)
        row = QHBoxLayout()
        self.run_label = plain_label("No run open: open a run in Results first.", selectable=False)
        row.addWidget(self.run_label, 1)
        row.addWidget(QLabel("Pairs"))
        self.n_spin = QSpinBox()
        self.n_spin.setRange(1, 10_000)
        self.n_spin.setValue(50)
        row.addWidget(self.n_spin)
        row.addWidget(QLabel("Stratify by"))
        self.stratify = QComboBox()
        self.stratify.addItems(list(STRATA))
        row.addWidget(self.stratify)
        row.addWidget(QLabel("Seed"))
        self.seed = QSpinBox()
        self.seed.setRange(0, 1_000_000)
        self.seed.setValue(1)
        row.addWidget(self.seed)
        self.blind = QCheckBox("Blind (hide the judge's verdict)")
        self.blind.setChecked(True)
        self.blind.toggled.connect(self._on_blind_toggled)
        row.addWidget(self.blind)
        self.draw_btn = QPushButton("Draw sample")
        self.draw_btn.clicked.connect(lambda: self.draw())
        row.addWidget(self.draw_btn)
        layout.addLayout(row)
        row = QHBoxLayout()
        row.addWidget(QLabel("Sample"))
        self.samples = QComboBox()
        self.samples.setMinimumContentsLength(24)
        row.addWidget(self.samples, 1)
        b = QPushButton("Open sample")
        b.clicked.connect(lambda: self.open_sample(self.samples.currentData()) if self.samples.currentData() else None)
        row.addWidget(b)
        layout.addLayout(row)

        split = QSplitter(Qt.Orientation.Horizontal)
        self.pairs_model = SamplePairsModel(self)
        self.pairs_table = QTableView()
        self.pairs_table.setModel(self.pairs_model)
        self.pairs_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.pairs_table.setSelectionMode(QAbstractItemView.SelectionMode.SingleSelection)
        self.pairs_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.pairs_table.setAlternatingRowColors(True)
        self.pairs_table.verticalHeader().setVisible(False)
        self.pairs_table.verticalHeader().setDefaultSectionSize(22)
        for col, w in enumerate((32, 250, 130, 115)):
            self.pairs_table.setColumnWidth(col, w)
        self.pairs_table.horizontalHeader().setStretchLastSection(True)
        self.pairs_table.selectionModel().currentRowChanged.connect(lambda cur, _: self._show_pair(cur.row()))
        split.addWidget(self.pairs_table)

        detail = QWidget()
        dl = QVBoxLayout(detail)
        dl.setContentsMargins(4, 0, 0, 0)
        self.position = plain_label("Draw or open a sample to start.", selectable=False)
        self.statement = plain_label()
        self.source = plain_label()
        self.judge = plain_label()
        for label in (self.position, self.statement, self.source, self.judge):
            dl.addWidget(label)
        self.reason_edit = QLineEdit()
        self.reason_edit.setPlaceholderText("Reason for your label (optional)")
        dl.addWidget(self.reason_edit)
        rrow = QHBoxLayout()
        self.label_buttons: dict[str, QPushButton] = {}
        for key, text in ((review.ReviewLabel.SUPPORTED.value, "✓ Supported (S)"),
                          (review.ReviewLabel.NOT_SUPPORTED.value, "✗ Not supported (N)"),
                          (review.ReviewLabel.UNSURE.value, "? Unsure (U)")):
            btn = QPushButton(text)
            btn.setEnabled(False)
            btn.clicked.connect(lambda _=False, k=key: self.label_current(k))
            rrow.addWidget(btn)
            self.label_buttons[key] = btn
        prev_btn = QPushButton("◀")
        prev_btn.setToolTip("Previous pair (K)")
        prev_btn.setMaximumWidth(36)
        prev_btn.clicked.connect(lambda: self.step(-1))
        next_btn = QPushButton("▶")
        next_btn.setToolTip("Next pair (J)")
        next_btn.setMaximumWidth(36)
        next_btn.clicked.connect(lambda: self.step(1))
        rrow.addWidget(prev_btn)
        rrow.addWidget(next_btn)
        dl.addLayout(rrow)
        dl.addWidget(plain_label("Keyboard review mode (Ctrl+R): S · N · U to label, J/→ next, K/← previous; "
                                 "G · B grade the whole answer good or bad.",
                                 selectable=False))
        self.viewer = SourceViewer()
        dl.addWidget(self.viewer, 1)
        split.addWidget(detail)
        split.setSizes([640, 600])
        layout.addWidget(split, 1)

        row = QHBoxLayout()
        self.agreement_label = plain_label("Agreement: no reviews yet.", selectable=False)
        row.addWidget(self.agreement_label, 1)
        self.judges_btn = QPushButton("Which judge to trust…")
        self.judges_btn.setToolTip("Each judge against the reviewers' majority: agreement, kappa, balanced "
                                   "accuracy, the pairs they disagree on, and a recommendation")
        self.judges_btn.clicked.connect(lambda: self.compare_judges())
        row.addWidget(self.judges_btn)
        layout.addLayout(row)
        self.agreement_model = AgreementModel(self)
        self.agreement_table = QTableView()
        self.agreement_table.setModel(self.agreement_model)
        self.agreement_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.agreement_table.verticalHeader().setVisible(False)
        self.agreement_table.verticalHeader().setDefaultSectionSize(22)
        self.agreement_table.horizontalHeader().setStretchLastSection(True)
        for col, w in enumerate((150, 150, 150, 50, 230)):
            self.agreement_table.setColumnWidth(col, w)
        self.agreement_table.setMaximumHeight(120)
        layout.addWidget(self.agreement_table)

    # ------------------------------------------------------------------------ run and samples
    @property
    def run_id(self) -> str | None:
        return self.host.results.run_id

    def refresh(self) -> None:
        """Follow the window's current run: its samples and its agreement statistics."""
        rid = self.run_id
        self.run_label.setText(f"Run {rid}" if rid else "No run open: open a run in Results first.")
        self.draw_btn.setEnabled(bool(rid))
        if self.sample is not None and self.sample.run_id != rid:
            self.sample = None
            self.pairs_model.set_rows([])
            self.viewer.clear()
        self.samples.clear()
        if rid:
            for s in list_samples(self.host.store, rid):
                blind = " · blind" if s["blind"] else ""
                self.samples.addItem(f"{s['sample']} ({count_noun(s['pairs'], 'pair')}{blind})", s["sample"])
            self.refresh_agreement()

    def draw(self, name: str | None = None) -> bool:
        rid = self.run_id
        if not rid:
            self.host.warn("No run open", "Open a run in Results first.")
            return False
        n, stratify, seed, blind = (self.n_spin.value(), self.stratify.currentText(), self.seed.value(),
                                    self.blind.isChecked())

        def work(st: Store) -> str:
            # the sample is stored by this call (its own connection), so it can be drawn off the GUI thread
            try:
                return draw_sample(st, rid, n, stratify=stratify, seed=seed, name=name, blind=blind)[0].sample
            except (SampleError, StoreError) as exc:
                raise SampleError(str(exc)) from None

        self.draw_btn.setEnabled(False)
        self.host.db.read("draw", work, self._on_drawn, self._on_draw_failed)
        return True

    def _on_drawn(self, name: str) -> None:
        self.refresh()
        self.samples.setCurrentIndex(max(0, self.samples.findData(name)))
        self.open_sample(name)

    def _on_draw_failed(self, message: str) -> None:
        self.draw_btn.setEnabled(bool(self.run_id))
        self.host.warn("Cannot draw a sample", message.removeprefix("SampleError: "))

    def open_sample(self, name: str) -> None:
        rid = self.run_id
        if not rid or not name:
            return
        self.host.db.read("sample", lambda st: load_sample_review(st, rid, name),
                                self._on_sample_loaded, lambda msg: self.host.warn("Cannot open the sample", msg))

    def _on_sample_loaded(self, sample: SampleReview) -> None:
        if sample.run_id != self.run_id:
            return
        self.sample = sample
        if sample.pairs:
            with QSignalBlocker(self.blind):
                self.blind.setChecked(sample.pairs[0].blind)
        self.pairs_model.blind = self.blind.isChecked()
        self.pairs_model.set_rows(sample.pairs)
        self._reload_labels()
        first = next((i for i, p in enumerate(sample.pairs)
                      if (p.statement_pk, p.url) not in self.pairs_model.labels), 0)
        if sample.pairs:
            self.pairs_table.setCurrentIndex(self.pairs_model.index(first, 0))
        self.sample_shown.emit(sample.name)

    def _reload_labels(self) -> None:
        reviewer = self.host.settings.reviewer
        if self.sample is None or not reviewer:
            self.pairs_model.set_labels({})
            return
        self.pairs_model.set_labels(sample_labels(self.host.store, self.sample.run_id, self.sample.name, reviewer))

    def _on_blind_toggled(self, on: bool) -> None:
        self.pairs_model.set_blind(on)
        self._show_pair(self.pairs_table.currentIndex().row())

    # ------------------------------------------------------------------------ one pair
    def current_pair(self) -> SamplePair | None:
        idx = self.pairs_table.currentIndex()
        return self.pairs_model.row_at(idx.row()) if idx.isValid() else None

    def _show_pair(self, row: int) -> None:
        p = self.pairs_model.row_at(row)
        sample = self.sample
        for b in self.label_buttons.values():
            b.setEnabled(p is not None)
        if p is None or sample is None:
            return
        done = len(self.pairs_model.labels)
        self.position.setText(f"Pair {row + 1} of {len(sample.pairs)} · sample {sample.name} · {done} labelled "
                              f"by {self.host.settings.reviewer or 'you'}")
        self.statement.setText(f"Statement (response {p.response_id}): {p.statement}")
        self.source.setText(f"Source: {p.url}" + (f"\n{p.source_title}" if p.source_title else ""))
        if self.blind.isChecked():
            self.judge.setText("Judge's verdict: hidden (blind review). The passage that best matches the "
                               "statement is highlighted; read around it.")
            mark = sample.passages.get(p.pair_id, "")
        else:
            self.judge.setText(f"Judge's verdict: {JUDGE_WORDS.get(p.judge_label or '', 'not judged')}")
            mark = p.source_excerpt or sample.passages.get(p.pair_id, "")
        self.viewer.show_source(sample.texts.get(p.url, ""), mark)
        mine = self.pairs_model.labels.get((p.statement_pk, p.url))
        for key, b in self.label_buttons.items():
            b.setDefault(key == mine)

    def step(self, delta: int) -> None:
        n = self.pairs_model.rowCount()
        if not n:
            return
        idx = self.pairs_table.currentIndex()
        row = (0 if delta > 0 else n - 1) if not idx.isValid() else max(0, min(n - 1, idx.row() + delta))
        self.pairs_table.setCurrentIndex(self.pairs_model.index(row, 0))
        self.pairs_table.scrollTo(self.pairs_model.index(row, 0))

    def label_current(self, label: str) -> bool:
        """Store the reviewer's label on the selected pair, within this sample; go to the next pair."""
        p = self.current_pair()
        if p is None or self.sample is None:
            return False
        reviewer = self.host.ask_reviewer()
        if not reviewer:
            return False
        review.add_review(self.host.store, p.run_id, p.statement_pk, p.url, reviewer, label,
                          self.reason_edit.text().strip(), blind=self.blind.isChecked(), sample=p.sample)
        self.reason_edit.clear()
        self._reload_labels()
        self.labelled.emit(p.pair_id)
        self.step(1)
        self.refresh_agreement()
        return True

    def grade_current(self, grade: str) -> bool:
        """Grade the whole answer of the selected pair Good or Bad, within this sample (not a pair label)."""
        p = self.current_pair()
        if p is None or self.sample is None:
            return False
        reviewer = self.host.ask_reviewer()
        if not reviewer:
            return False
        response_pk = self.host.store.response_pk_of_statement(p.statement_pk)
        if response_pk is None:
            return False
        answer_grades.add_answer_grade(self.host.store, p.run_id, response_pk, reviewer, grade, sample=p.sample)
        self.host.show_status(f"Graded answer {p.response_id} {grade} as {reviewer}")
        return True

    # ------------------------------------------------------------------------ agreement
    def refresh_agreement(self) -> None:
        rid = self.run_id
        if not rid:
            return

        def work(st: Store) -> dict:
            return agreement_report(st, st.load_run(rid))

        self.host.db.read("agreement", work, self._show_agreement)

    def _show_agreement(self, report: dict) -> None:
        if not report.get("reviews"):
            self.agreement_label.setText("Agreement: no reviews yet.")
            self.agreement_model.set_rows([])
        else:
            self.agreement_label.setText("Agreement: " + agreement_summary(report))
            self.agreement_model.set_rows(agreement_rows(report))
        self.agreement_shown.emit()

    def compare_judges(self) -> JudgeCompareDialog | None:
        """Open "Which judge to trust" for the current run (judge_compare.compare_judges)."""
        rid = self.run_id
        if not rid:
            self.host.warn("No run open", "Open a run in Results first.")
            return None
        # one dialog, kept (not deleted on close) so a comparison still being computed has a live panel to fill
        if self._judges_dialog is None:
            self._judges_dialog = JudgeCompareDialog(self.host, self)
        self._judges_dialog.panel.load(self.host, rid)
        self._judges_dialog.show()
        self._judges_dialog.raise_()
        return self._judges_dialog

    def focus_pairs(self) -> None:
        self.pairs_table.setFocus()
        if not self.pairs_table.currentIndex().isValid():
            self.step(1)

