"""The Benchmark page: the steps of `sourcecheckup benchmark`, with a review of the questions between.

1. reference documents (a file of URLs, a folder, a questions CSV/JSONL), models, judge, options;
2. "Generate questions" runs the benchmark up to its questions (BenchmarkThread, stop_after="questions");
3. the questions table: edit a question or its reference answer, untick "Use" to drop it
   (BenchStore.edit_question / set_dropped);
4. "Answer and audit" resumes the benchmark (answers, accuracy, audit, best-of-K) with a progress view;
5. the per-model results (benchmark.benchmark_results) and a button to open the audit run.

Every action is an engine call; the page keeps no numbers of its own.
"""
from __future__ import annotations

import time
from typing import Any

from PySide6.QtCore import Qt, Signal
from PySide6.QtWidgets import (
    QAbstractItemView,
    QCheckBox,
    QComboBox,
    QFileDialog,
    QFormLayout,
    QGridLayout,
    QGroupBox,
    QHBoxLayout,
    QLineEdit,
    QPlainTextEdit,
    QProgressBar,
    QPushButton,
    QScrollArea,
    QSpinBox,
    QSplitter,
    QTableView,
    QTabWidget,
    QVBoxLayout,
    QWidget,
)

from sourcecheckup.benchmark import (
    VARIANTS,
    BenchEvent,
    BenchSettings,
    BenchStage,
    BenchStore,
    DocumentsError,
    Question,
    QuestionFileError,
    benchmark_results,
    read_bench_input,
)
from sourcecheckup.llm.spec import is_model_spec
from sourcecheckup.store import Store, StoreError
from sourcecheckup.views.benchmark import bench_model_rows, bench_summary

from .elide import placeholder_with_tooltip
from .host import Host
from .models import BenchResultsModel, QuestionsModel
from .widgets import plain_label
from .worker import BenchmarkThread

QUESTIONS_READY = "questions_ready"
STAGE_WORDS = {BenchStage.DOCUMENTS: "Reading reference documents", BenchStage.QUESTIONS: "Writing questions",
               BenchStage.ANSWERS: "Asking the models", BenchStage.ACCURACY: "Grading accuracy",
               BenchStage.AUDIT: "Auditing the answers", BenchStage.SELECTION: "Choosing the best of K",
               BenchStage.STUDIES: "Classifying refusals and judging sources' relevance",
               BenchStage.FINISHED: "Finished"}


class BenchmarkPage(QWidget):
    questions_shown = Signal(str)          # bench id, after the questions table is filled
    results_shown = Signal(str)            # bench id, after the results table is filled
    step_finished = Signal(str, str)       # bench id, status

    def __init__(self, host: Host, parent: QWidget | None = None) -> None:
        super().__init__(parent)
        self.host = host
        self.worker: BenchmarkThread | None = None
        self.bench_id: str | None = None
        self.run_id: str | None = None
        self._started = 0.0
        self._answering = ""   # the latest "Asking the models: n/N" while answers are still coming in
        self._build()
        self._set_busy(False)

    # ------------------------------------------------------------------------ layout
    def _build(self) -> None:
        outer = QHBoxLayout(self)
        split = QSplitter(Qt.Orientation.Horizontal)
        outer.addWidget(split)

        form_box = QWidget()
        fl = QVBoxLayout(form_box)
        fl.setContentsMargins(0, 0, 4, 0)
        docs = QGroupBox("1. Reference documents")
        dl = QVBoxLayout(docs)
        self.docs_edit = QLineEdit()
        placeholder_with_tooltip(self.docs_edit, "a file of URLs, a folder of pages/PDFs, or a questions CSV/JSONL")
        dl.addWidget(self.docs_edit)
        row = QHBoxLayout()
        b = QPushButton("File…")
        b.clicked.connect(self._choose_file)
        row.addWidget(b)
        b = QPushButton("Folder…")
        b.clicked.connect(self._choose_folder)
        row.addWidget(b)
        row.addStretch(1)
        dl.addLayout(row)
        fl.addWidget(docs)

        models = QGroupBox("2. Models and judge")
        ml = QFormLayout(models)
        self.models_edit = QPlainTextEdit()
        self.models_edit.setPlaceholderText("one model spec a line:\nopenai:gpt-4o\nanthropic:claude-sonnet-4-5\n"
                                            "openai-compatible:http://localhost:11434/v1#llama3.1")
        self.models_edit.setMaximumHeight(84)
        self.models_edit.setLineWrapMode(QPlainTextEdit.LineWrapMode.NoWrap)
        ml.addRow("Models", self.models_edit)
        self.question_model_edit = QLineEdit()
        placeholder_with_tooltip(self.question_model_edit, "default: the first model")
        ml.addRow("Question writer", self.question_model_edit)
        self.judge_edit = QLineEdit(", ".join(self.host.settings.judges))
        self.judge_edit.setToolTip("Judge spec(s), comma-separated: builtin, openai:gpt-4o, …")
        ml.addRow("Judge", self.judge_edit)
        fl.addWidget(models)

        opts = QGroupBox("3. Options")
        ol = QFormLayout(opts)
        self.per_doc = QSpinBox()
        self.per_doc.setRange(1, 20)
        ol.addRow("Questions per document", self.per_doc)
        vgrid = QGridLayout()
        self.variant_checks: dict[str, QCheckBox] = {}
        for i, v in enumerate(VARIANTS):
            cb = QCheckBox(v)
            cb.setToolTip(f"also ask a '{v}' rewording of each question")
            self.variant_checks[v] = cb
            vgrid.addWidget(cb, i // 2, i % 2)
        ol.addRow("Variants", vgrid)
        self.best_of = QSpinBox()
        self.best_of.setRange(1, 10)
        self.best_of.setToolTip("draw K answers per question and keep the best supported one")
        ol.addRow("Best of K", self.best_of)
        self.accuracy = QCheckBox("Grade accuracy")
        self.accuracy.setToolTip("grade each answer against the short answer taken from its document "
                                 "(exact match / superset / missing), kept apart from citation support")
        ol.addRow("", self.accuracy)
        # the other studies (docs/benchmark-studies.md): questions to refuse (ASTRID), directives (Almanac)
        self.scope_questions = QSpinBox()
        self.scope_questions.setRange(0, 5)
        self.scope_questions.setToolTip("per document, also this many out-of-scope and as many emergency questions "
                                        "the models should refuse or redirect (refusal accuracy)")
        ol.addRow("Questions to refuse", self.scope_questions)
        self.adversarial = QCheckBox("Adversarial variants")
        self.adversarial.setToolTip("also ask each question with adversarial directives appended and score "
                                    "adversarial safety (grades accuracy too)")
        ol.addRow("", self.adversarial)
        fl.addWidget(opts)

        steps = QGroupBox("4. Run")
        sl = QVBoxLayout(steps)
        row = QHBoxLayout()
        self.generate_btn = QPushButton("Generate questions")
        self.generate_btn.clicked.connect(self.generate_questions)
        self.answer_btn = QPushButton("Answer and audit")
        self.answer_btn.clicked.connect(self.answer_and_audit)
        self.cancel_btn = QPushButton("Cancel")
        self.cancel_btn.clicked.connect(self.cancel)
        row.addWidget(self.generate_btn, 2)
        row.addWidget(self.answer_btn, 2)
        row.addWidget(self.cancel_btn, 1)
        sl.addLayout(row)
        self.progress_bar = QProgressBar()
        sl.addWidget(self.progress_bar)
        self.progress_label = plain_label("Choose the reference documents and the models, then generate questions.")
        sl.addWidget(self.progress_label)
        self.log = QPlainTextEdit()
        self.log.setReadOnly(True)
        self.log.setMaximumHeight(90)
        self.log.setPlaceholderText("Warnings (unreadable documents, failed calls) appear here.")
        sl.addWidget(self.log)
        row = QHBoxLayout()
        self.benches = QComboBox()
        self.benches.setMinimumContentsLength(18)
        self.benches.setToolTip("benchmarks stored in this database")
        row.addWidget(self.benches, 1)
        b = QPushButton("Open")
        b.setToolTip("show a stored benchmark's questions and results (resume it with Answer and audit)")
        b.clicked.connect(lambda: self.load_bench(self.benches.currentData()) if self.benches.currentData() else None)
        row.addWidget(b)
        sl.addLayout(row)
        fl.addWidget(steps)
        fl.addStretch(1)
        # on a small screen the form scrolls rather than setting the window's height
        form_scroll = QScrollArea()
        form_scroll.setWidgetResizable(True)
        form_scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        form_scroll.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        form_scroll.setWidget(form_box)
        form_scroll.setMinimumWidth(form_box.minimumSizeHint().width() + 16)
        split.addWidget(form_scroll)

        right = QTabWidget()
        self.right_tabs = right
        qw = QWidget()
        ql = QVBoxLayout(qw)
        self.questions_label = plain_label("No questions yet.")
        ql.addWidget(self.questions_label)
        self.questions_model = QuestionsModel(self)
        self.questions_model.editor = self._edit_question
        self.questions_model.dataChanged.connect(lambda *_: self._count_questions())
        self.questions_table = QTableView()
        self.questions_table.setModel(self.questions_model)
        self.questions_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.questions_table.setAlternatingRowColors(True)
        self.questions_table.setWordWrap(True)
        self.questions_table.verticalHeader().setVisible(False)
        self.questions_table.setEditTriggers(QAbstractItemView.EditTrigger.DoubleClicked
                                             | QAbstractItemView.EditTrigger.EditKeyPressed
                                             | QAbstractItemView.EditTrigger.AnyKeyPressed)
        for col, width in enumerate((50, 70, 310, 170, 110, 90)):
            self.questions_table.setColumnWidth(col, width)
        self.questions_table.horizontalHeader().setStretchLastSection(True)
        ql.addWidget(self.questions_table, 1)
        right.addTab(qw, "Questions")

        rw = QWidget()
        rl = QVBoxLayout(rw)
        self.results_label = plain_label("No results yet.")
        rl.addWidget(self.results_label)
        self.results_model = BenchResultsModel(self)
        self.results_table = QTableView()
        self.results_table.setModel(self.results_model)
        self.results_table.setSelectionBehavior(QAbstractItemView.SelectionBehavior.SelectRows)
        self.results_table.setEditTriggers(QAbstractItemView.EditTrigger.NoEditTriggers)
        self.results_table.setAlternatingRowColors(True)
        self.results_table.verticalHeader().setVisible(False)
        self.results_table.setWordWrap(False)
        for col, width in enumerate((160, 60, 120, 130, 130, 120, 220, 190, 200, 150, 70)):
            self.results_table.setColumnWidth(col, width)
        rl.addWidget(self.results_table, 1)
        rl.addWidget(plain_label("In brackets: the 95% bootstrap interval. Citation metrics count each model's "
                                 "first draw of every question; accuracy is graded separately against the "
                                 "document's own answer.", selectable=False))
        row = QHBoxLayout()
        self.open_run_btn = QPushButton("Open the audit run in Results")
        self.open_run_btn.setEnabled(False)
        self.open_run_btn.clicked.connect(self.open_audit_run)
        row.addWidget(self.open_run_btn)
        row.addStretch(1)
        rl.addLayout(row)
        right.addTab(rw, "Results")
        split.addWidget(right)
        form_box.setMaximumWidth(450)
        split.setSizes([380, 900])
        split.setStretchFactor(1, 1)

    # ------------------------------------------------------------------------ inputs
    def _choose_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Reference documents or questions", "",
                                              "URL lists, questions, documents (*.txt *.csv *.tsv *.jsonl *.html "
                                              "*.htm *.pdf *.md);;All files (*)")
        if path:
            self.docs_edit.setText(path)

    def _choose_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "A folder of reference documents")
        if path:
            self.docs_edit.setText(path)

    def model_specs(self) -> list[str]:
        text = self.models_edit.toPlainText().replace(",", "\n")
        return [line.strip() for line in text.splitlines() if line.strip()]

    def bench_settings(self) -> BenchSettings | None:
        """The options as the engine's BenchSettings, or None after telling the user what is wrong."""
        models = self.model_specs()
        bad = [m for m in models if not is_model_spec(m)]
        writer = self.question_model_edit.text().strip() or None
        if writer and not is_model_spec(writer):
            bad.append(writer)
        if bad:
            self.host.warn("Not a model", f"'{bad[0]}' is not a model that can write: use openai:MODEL, "
                            "anthropic:MODEL or openai-compatible:URL#MODEL.")
            return None
        judges = [j.strip() for j in self.judge_edit.text().split(",") if j.strip()] or ["builtin"]
        s = self.host.settings
        try:
            return BenchSettings(models=models, judges=judges, question_model=writer, per_doc=self.per_doc.value(),
                                 variants=[v for v, cb in self.variant_checks.items() if cb.isChecked()],
                                 best_of=self.best_of.value(), accuracy=self.accuracy.isChecked(),
                                 scope_questions=self.scope_questions.value(), adversarial=self.adversarial.isChecked(),
                                 judge_concurrency=s.concurrency, parser=s.parser, fetch=s.fetch_options(batch=True))
        except ValueError as exc:
            self.host.warn("Cannot start the benchmark", str(exc))
            return None

    # ------------------------------------------------------------------------ steps
    def generate_questions(self) -> bool:
        """Step 1: read the documents and write the questions; stops for review."""
        if self.worker is not None:
            return False
        path = self.docs_edit.text().strip()
        if not path:
            self.host.warn("No reference documents", "Choose a file of URLs, a folder, or a questions file.")
            return False
        settings = self.bench_settings()
        if settings is None:
            return False
        try:
            bench_input = read_bench_input(path)
        except (DocumentsError, QuestionFileError, OSError) as exc:
            self.host.warn("Cannot read the reference documents", str(exc))
            return False
        if bench_input.locations and not settings.writer:
            self.host.warn("No question writer", "Give at least one model (or a question writer) to write "
                            "questions from the documents.")
            return False
        self.clear()
        self._start(BenchmarkThread(self.host.db_path, settings, bench_input=bench_input, stop_after="questions",
                                    parent=self))
        return True

    def answer_and_audit(self) -> bool:
        """Step 2: answer the questions kept, audit the answers, show the per-model results."""
        if self.worker is not None:
            return False
        if not self.bench_id:
            self.host.warn("No questions yet", "Generate questions first (or open a stored benchmark).")
            return False
        settings = self.bench_settings()
        if settings is None:
            return False
        if not settings.models:
            self.host.warn("No models", "Give at least one model to answer the questions.")
            return False
        self._start(BenchmarkThread(self.host.db_path, settings, resume_bench=self.bench_id, parent=self))
        return True

    def cancel(self) -> None:
        if self.worker is not None:
            self.worker.cancel()
            self.cancel_btn.setEnabled(False)
            self.progress_label.setText("Cancelling: finishing the calls in flight…")

    def _start(self, worker: BenchmarkThread) -> None:
        self.worker = worker
        worker.progress.connect(self._on_progress)
        worker.bench_started.connect(self._on_bench_started)
        worker.done.connect(self._on_done)
        self._started = time.monotonic()
        self._answering = ""
        self.log.clear()
        self.progress_bar.setRange(0, 0)
        self.progress_label.setText("Starting…")
        self._set_busy(True)
        worker.start()

    def _set_busy(self, busy: bool) -> None:
        self.generate_btn.setEnabled(not busy)
        self.answer_btn.setEnabled(not busy and bool(self.bench_id) and not self.run_id)
        self.cancel_btn.setEnabled(busy)
        self.progress_bar.setVisible(busy)
        self.questions_model.editable = not busy and bool(self.bench_id) and not self.run_id

    def clear(self) -> None:
        self.bench_id = None
        self.run_id = None
        self.questions_model.set_rows([])
        self.results_model.set_rows([])
        self.questions_label.setText("No questions yet.")
        self.results_label.setText("No results yet.")
        self.open_run_btn.setEnabled(False)

    def _on_bench_started(self, bench_id: str) -> None:
        self.bench_id = bench_id

    def _on_progress(self, ev: BenchEvent) -> None:
        if ev.warning:
            self.log.appendPlainText(f"⚠ {ev.message}")
            return
        words = STAGE_WORDS.get(ev.stage, ev.stage.value)
        text = f"{words}: {ev.done}/{ev.total}" if ev.total else words
        if ev.audit is not None:
            a = ev.audit
            text += (f" · sources fetched {a.sources_done}/{a.sources_total} · pairs judged {a.pairs_done}/"
                     f"{a.pairs_total} · unreadable sources {a.fetch_failures} · judge errors {a.judge_errors}")
        # answers are audited as they arrive: both lines stay in view until the answers are all in
        if ev.stage is BenchStage.ANSWERS:
            self._answering = text if ev.total and ev.done < ev.total else ""
        if ev.stage is BenchStage.AUDIT and self._answering:
            text = f"{self._answering}\n{text}"
        elif ev.total:   # the bar follows the answers while they come in, then the audit
            self.progress_bar.setRange(0, ev.total)
            self.progress_bar.setValue(min(ev.done, ev.total))
        self.progress_label.setText(f"{text} · {time.monotonic() - self._started:.0f} s")

    def _on_done(self, bench_id: str, status: str, message: str) -> None:
        worker = self.worker
        self.worker = None
        if worker is not None:
            worker.wait(5000)
            worker.deleteLater()
        self.bench_id = bench_id or self.bench_id
        hint = ""
        if status == QUESTIONS_READY:
            message = ""    # the engine's "review them, then resume" is said below in the app's words
            hint = " Review the questions: double-click to edit, untick Use to drop one; then Answer and audit."
        elif status in ("cancelled", "failed"):
            hint = " Answer and audit resumes it where it stopped."
        self.progress_label.setText(f"Benchmark {bench_id or ''} {status.replace('_', ' ')}"
                                    + (f": {message}" if message else "") + "." + hint)
        self._set_busy(False)
        self.refresh_benches()
        if self.bench_id:
            self.load_bench(self.bench_id, show_results=status not in (QUESTIONS_READY,))
        self.step_finished.emit(bench_id, status)

    # ------------------------------------------------------------------------ questions
    def _edit_question(self, q: Question, field: str, value: Any) -> Question | None:
        if not self.bench_id or self.worker is not None:
            return None
        bs = BenchStore(self.host.store)
        try:
            if field == "dropped":
                bs.set_dropped(self.bench_id, q.qid, bool(value))
                return next(x for x in bs.questions(self.bench_id, include_dropped=True) if x.qid == q.qid)
            return bs.edit_question(self.bench_id, q.qid, **{field: str(value)})
        except (StoreError, ValueError) as exc:
            self.host.warn("Cannot change the question", str(exc))
            return None

    def _count_questions(self) -> None:
        rows = self.questions_model.rows
        kept = sum(1 for q in rows if not q.dropped)
        state = ("answered: questions can no longer change" if self.run_id else
                 "double-click a question to edit it, untick Use to drop it")
        self.questions_label.setText(f"Benchmark {self.bench_id}: {kept} of {len(rows)} questions kept · {state}")

    def load_bench(self, bench_id: str, *, show_results: bool = True) -> None:
        """Show a stored benchmark: its questions, and its results once it has an audit run."""

        def load(st: Store) -> tuple[Any, list[Question], Any]:
            bs = BenchStore(st)
            row = bs.get(bench_id)
            questions = bs.questions(row.id, include_dropped=True)
            results = benchmark_results(st, row.id) if row.run_id else None
            return row, questions, results

        self.host.db.read("bench", load, lambda got: self._on_loaded(got, show_results),
                                lambda msg: self.host.warn("Cannot open the benchmark", msg))

    def _on_loaded(self, got: tuple[Any, list[Question], Any], show_results: bool) -> None:
        row, questions, results = got
        self.bench_id = row.id
        self.run_id = row.run_id
        cfg = row.config
        if not self.model_specs() and cfg.get("models"):
            self.models_edit.setPlainText("\n".join(cfg["models"]))
        self.questions_model.set_rows(questions)
        self.questions_table.resizeRowsToContents()
        self._count_questions()
        if results is not None:
            self.results_model.set_rows(bench_model_rows(results))
            self.results_label.setText(bench_summary(results))
            self.open_run_btn.setEnabled(bool(row.run_id))
        if show_results and results is not None:
            self.right_tabs.setCurrentIndex(1)
        else:
            self.right_tabs.setCurrentIndex(0)
        self._set_busy(self.worker is not None)
        self.questions_shown.emit(row.id)
        if results is not None:
            self.results_shown.emit(row.id)

    def refresh_benches(self) -> None:
        def load(st: Store) -> list[tuple[str, str]]:
            return [(r.id, f"{r.id} · {r.status.replace('_', ' ')} · {r.input[:40]}") for r in BenchStore(st).list()]

        self.host.db.read("benches", load, self._fill_benches)

    def _fill_benches(self, items: list[tuple[str, str]]) -> None:
        self.benches.clear()
        for bench_id, text in items:
            self.benches.addItem(text, bench_id)

    def open_audit_run(self) -> None:
        if self.run_id:
            self.host.show_run(self.run_id)

    def shutdown(self, msecs: int = 15000) -> None:
        """Cancel a running step and wait for it (the window is closing)."""
        worker = self.worker
        if worker is not None:
            worker.done.disconnect()
            worker.cancel()
            if not worker.wait(msecs):
                # a model call that never returns must not keep the window open, nor may Qt delete a
                # running thread: hand it to no parent and keep a reference until the process ends
                worker.setParent(None)
                self._abandoned = worker
            self.worker = None
