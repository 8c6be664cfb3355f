"""A model benchmark from start to end: documents -> questions -> answers -> one audit run.

``await Benchmark(store, settings).start(read_bench_input(path))`` runs every step;
``.resume(bench_id)`` does only what is missing (documents not stored, documents without
questions, answers not made or whose call failed, grades, the audit's unjudged pairs).
Answers of every model go through the normal :class:`~sourcecheckup.pipeline.Audit` into one
run, with ``Response.model`` = the model spec and ``Response.extra`` carrying
``question_source``, ``variant`` and ``draw``.
"""
from __future__ import annotations

import asyncio
import dataclasses
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Mapping, Sequence

from ..config import RunConfig
from ..events import ProgressEvent
from ..fetching import Fetcher, FetchOptions, make_fetcher
from ..ingest import IngestError, parse_answer_record
from ..judges.base import Judge
from ..llm import make_client
from ..llm.client import CallOptions, LLMCallError, LLMClient
from ..metrics import assess_run
from ..models import Response, SkippedRecord
from ..pipeline import Audit
from ..prompts import load_prompt
from ..store import Store
from .behaviour import (
    BEHAVIOUR_PROMPT,
    BEHAVIOUR_RULE,
    Classified,
    adversarial_variant,
    classify_by_llm,
    classify_by_rule,
    load_directives,
    payload_present,
    scope_questions,
)
from .documents import BenchInput, load_document
from .records import Answer, AnswerStatus, Document, Question, answer_record
from .relevance import judge_relevance
from .selection import check_select, combined_score, grader_scores, pick_best
from .steps import (
    Prompts,
    ReplyError,
    answer_question,
    check_variants,
    generate_questions,
    grade_accuracy,
    make_variant,
)
from .storage import BenchStore

STAGES_BEFORE_ANSWERS = "questions"


class BenchStage(str, Enum):
    DOCUMENTS = "documents"
    QUESTIONS = "questions"
    ANSWERS = "answers"
    ACCURACY = "accuracy"
    AUDIT = "audit"
    SELECTION = "selection"
    STUDIES = "studies"              # refusal / redirection, directive payloads, cited sources' relevance
    FINISHED = "finished"


@dataclass(frozen=True)
class BenchEvent:
    stage: BenchStage
    done: int = 0
    total: int = 0
    message: str = ""
    warning: bool = False
    audit: ProgressEvent | None = None     # the audit's own event during the AUDIT stage


BenchProgress = Callable[[BenchEvent], None]


@dataclass
class BenchSettings:
    """Everything that decides a benchmark's results; stored with it (never an API key)."""

    models: list[str] = field(default_factory=list)
    judges: list[str] = field(default_factory=lambda: ["builtin"])
    question_model: str | None = None        # writes questions and variants
    accuracy_model: str | None = None        # grades accuracy; default: the question model
    per_doc: int = 1
    variants: list[str] = field(default_factory=list)
    best_of: int = 1
    select: str = "support"                  # what picks the best of K: support, grader or both (.selection)
    grader_file: str | None = None           # a trained grader (`sourcecheckup grader train`) for grader / both
    accuracy: bool = False
    expert_statements: bool = False          # the question model also writes must-have / nice-to-have statements
    temperature: float | None = None         # None: the provider's default
    seed: int | None = None                  # draw k is sent seed + k
    max_tokens: int = 1024
    structured: bool = True                  # JSON schema / forced tool; the prompt asks for JSON anyway
    concurrency: int = 8                     # calls in flight per model
    judge_concurrency: int = 8
    parser: str = "builtin"
    model_options: dict[str, Any] = field(default_factory=dict)
    prompts: dict[str, str] = field(default_factory=dict)   # overrides: name -> prompt file
    fetch: FetchOptions = field(default_factory=FetchOptions)
    max_doc_tokens: int = 12_000
    metrics_seed: int = 0
    # issue 43: the other studies' benchmarks (ASTRID, Almanac); see .behaviour and .relevance
    scope_questions: int = 0                 # per document: this many out-of-scope and as many emergency questions
    adversarial: bool = False                # add adversarial variants (directives from adversarial_file)
    adversarial_file: str | None = None      # None: resources/benchmark/adversarial-v1.json
    adversarial_questions: int = 0           # how many original questions get them (0: all)
    behaviour_model: str | None = None       # classifies answer / refusal / redirection; None: the rule
    relevance_model: str | None = None       # judges cited sources' relevance; None: the built-in reading

    def __post_init__(self) -> None:
        self.variants = list(check_variants(list(self.variants)))
        check_select(self.select, self.grader_file)
        if self.best_of < 1 or self.per_doc < 1 or self.concurrency < 1:
            raise ValueError("best_of, per_doc and concurrency must be at least 1")
        if self.adversarial:
            self.accuracy = True    # "stayed correct" is the accuracy grade against the original's answer

    @property
    def writer(self) -> str | None:
        return self.question_model or (self.models[0] if self.models else None)

    @property
    def grader(self) -> str | None:
        return self.accuracy_model or self.writer

    def call_options(self) -> CallOptions:
        return CallOptions(temperature=self.temperature, seed=self.seed, max_tokens=self.max_tokens,
                           structured=self.structured)

    def to_dict(self) -> dict[str, Any]:
        d = RunConfig(fetch=self.fetch).to_dict()["fetch"]
        out = dataclasses.asdict(self)
        out["fetch"] = d
        out["model_options"] = {k: v for k, v in self.model_options.items() if "key" not in k.lower()}
        return out

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "BenchSettings":
        fetch = RunConfig.from_dict({"fetch": d.get("fetch") or {}}).fetch
        known = {f.name for f in dataclasses.fields(cls)} - {"fetch"}
        return cls(fetch=fetch, **{k: v for k, v in d.items() if k in known})


class Benchmark:
    """One benchmark over a store. Models, judges and the fetcher may be passed in (tests, the
    app); otherwise they are built from the settings and closed at the end."""

    def __init__(self, store: Store, settings: BenchSettings | None = None, *,
                 progress: BenchProgress | None = None, models: Mapping[str, LLMClient] | None = None,
                 judges: Sequence[Judge] | None = None, fetcher: Fetcher | None = None,
                 cancel: asyncio.Event | None = None) -> None:
        self.store = store
        self.bench = BenchStore(store)
        self.settings = settings
        self.progress = progress or (lambda e: None)
        self._models: dict[str, LLMClient] = dict(models or {})
        self._owned: list[LLMClient] = []
        self._judges = list(judges) if judges is not None else None
        self._fetcher = fetcher
        self.cancel = cancel or asyncio.Event()
        self.bench_id = ""
        self.problems: list[str] = []
        # questions as they are written, for answering that runs alongside (None ends the feed)
        self._question_feed: asyncio.Queue[Question | None] | None = None

    # -- entry points --------------------------------------------------------------------
    def create(self, bench_input: BenchInput) -> str:
        assert self.settings is not None, "give settings to create a benchmark"
        config = self.settings.to_dict()
        config["locations"] = list(bench_input.locations)
        self.bench_id = self.bench.create(input=bench_input.label, config=config)
        if bench_input.questions:
            self.bench.add_questions(self.bench_id, bench_input.questions)
        return self.bench_id

    async def start(self, bench_input: BenchInput, *, stop_after: str | None = None) -> str:
        self.create(bench_input)
        await self.execute(self.bench_id, stop_after=stop_after)
        return self.bench_id

    async def resume(self, bench_id: str, *, stop_after: str | None = None) -> str:
        row = self.bench.get(bench_id)
        if self.settings is None:
            self.settings = BenchSettings.from_dict(row.config)
        await self.execute(row.id, stop_after=stop_after)
        return row.id

    def update_settings(self, bench_id: str, settings: BenchSettings) -> None:
        """Change models, judges or options of a benchmark whose audit has not started."""
        row = self.bench.get(bench_id)
        if row.run_id:
            raise ValueError(f"benchmark {row.id} already has its audit run {row.run_id}; start a new "
                             "benchmark to change models or judges")
        config = settings.to_dict()
        config["locations"] = row.config.get("locations", [])
        self.bench.set_config(row.id, config)
        self.settings = settings

    # -- the run -------------------------------------------------------------------------
    async def execute(self, bench_id: str, *, stop_after: str | None = None) -> None:
        self.bench_id = bench_id
        s = self.settings
        assert s is not None
        row = self.bench.get(bench_id)
        prompts = Prompts.load(s.prompts)
        self.bench.set_status(bench_id, "running")
        owns_fetcher = self._fetcher is None
        fetcher = self._fetcher or make_fetcher(s.fetch)
        status, message = "completed", ""
        try:
            locations = row.config.get("locations", [])
            if stop_after == STAGES_BEFORE_ANSWERS:
                await self._documents_and_questions(locations, fetcher, prompts)
                status, message = "questions_ready", "questions written; review them, then resume"
                return
            if not s.models:
                raise ValueError("no models to benchmark: give at least one model spec")
            await self._overlapped(locations, prompts, fetcher)
            if self.cancel.is_set():
                status, message = "cancelled", "cancelled by the user"
                return
            await self._studies()
            self._select_best()
            self._emit(BenchStage.FINISHED, message="; ".join(self.problems[:3]))
        except (asyncio.CancelledError, KeyboardInterrupt):
            status, message = "cancelled", "interrupted"
            raise
        except Exception as exc:
            status, message = "failed", f"{type(exc).__name__}: {exc}"
            raise
        finally:
            if self.problems and status == "completed":
                message = f"{len(self.problems)} problem(s): " + "; ".join(self.problems[:5])
            self.bench.set_status(bench_id, status, message)
            if owns_fetcher:
                await fetcher.aclose()
            for m in self._owned:
                await m.aclose()
            self._owned.clear()

    def model(self, spec: str) -> LLMClient:
        got = self._models.get(spec)
        if got is None:
            assert self.settings is not None
            options = {"concurrency": self.settings.concurrency, **self.settings.model_options}
            got = make_client(spec, **options)
            self._models[spec] = got
            self._owned.append(got)
        return got

    def _emit(self, stage: BenchStage, done: int = 0, total: int = 0, message: str = "",
              warning: bool = False, audit: ProgressEvent | None = None) -> None:
        try:
            self.progress(BenchEvent(stage, done, total, message, warning, audit))
        except Exception:  # a broken progress view must not break the benchmark
            pass

    def _problem(self, stage: BenchStage, message: str) -> None:
        self.problems.append(message)
        self._emit(stage, message=message, warning=True)

    # -- 1. documents and 2. questions (each document's questions as soon as it is read) ----
    async def _documents_and_questions(self, locations: Sequence[str], fetcher: Fetcher, prompts: Prompts) -> None:
        s = self.settings
        assert s is not None
        stored_docs = self.bench.documents(self.bench_id)
        have = {d.location for d in stored_docs}
        with_questions = {q.document_pk for q in self.bench.questions(self.bench_id, include_dropped=True)
                          if q.variant == "original"}
        to_fetch = [(i, loc) for i, loc in enumerate(locations) if loc not in have]
        to_ask = [d for d in stored_docs if d.valid and d.pk not in with_questions]
        if (to_fetch or to_ask) and not s.writer:
            raise ValueError("documents need a question model (question_model) to write questions")
        fetched, asked = len(locations) - len(to_fetch), 0
        ask_total = len(to_ask) + len(to_fetch)
        self._emit(BenchStage.DOCUMENTS, fetched, len(locations))
        options = s.call_options()

        async def ask(doc: Document) -> None:
            nonlocal asked
            if self.cancel.is_set():
                return   # written on resume
            try:
                questions = await generate_questions(self.model(s.writer or ""), prompts, doc, s.per_doc,
                                                     qid_prefix=f"d{doc.ord + 1}", options=options,
                                                     max_doc_tokens=s.max_doc_tokens)
                questions = [dataclasses.replace(q, expect=q.expect or "answer") for q in questions]
                if s.scope_questions:
                    questions += await scope_questions(self.model(s.writer or ""), doc, s.scope_questions,
                                                       qid_prefix=f"d{doc.ord + 1}", options=options,
                                                       max_doc_tokens=s.max_doc_tokens)
                if s.expert_statements:
                    from .expert import load_expert_prompt, with_expert_statements
                    questions = await with_expert_statements(
                        self.model(s.writer or ""), load_expert_prompt(s.prompts.get("expert")), doc, questions,
                        options=options, max_doc_tokens=s.max_doc_tokens)
            except (ReplyError, LLMCallError) as exc:
                self._problem(BenchStage.QUESTIONS, f"no question from {doc.location}: {exc}")
                return
            finally:
                asked += 1
            self._add_questions(questions)
            self._emit(BenchStage.QUESTIONS, asked, ask_total, doc.location)

        # documents take at most half the fetcher's slots: the audit's cited sources, fetched
        # meanwhile through the same fetcher, must not queue behind a hundred reference pages
        reading = asyncio.Semaphore(max(1, s.fetch.total_concurrency // 2))

        async def fetch_then_ask(i: int, loc: str) -> None:
            nonlocal fetched, asked
            async with reading:
                if self.cancel.is_set():
                    return   # read on resume
                source = await load_document(loc, fetcher)
            doc = self.bench.add_document(self.bench_id, i, loc, source)
            fetched += 1
            self._emit(BenchStage.DOCUMENTS, fetched, len(locations), loc)
            if not doc.valid:
                asked += 1
                self._problem(BenchStage.DOCUMENTS, f"document {loc} could not be read: {doc.reason}")
                return
            await ask(doc)

        await asyncio.gather(*(fetch_then_ask(i, loc) for i, loc in to_fetch), *(ask(d) for d in to_ask))
        if s.variants or s.adversarial:
            await self._variants(prompts, options)

    async def _variants(self, prompts: Prompts, options: CallOptions) -> None:
        s = self.settings
        assert s is not None
        stored = self.bench.questions(self.bench_id, include_dropped=True)
        have = {q.qid for q in stored}
        originals = [q for q in stored if q.variant == "original" and not q.dropped and q.expect != "refuse"]
        todo = [(q, v) for q in originals for v in s.variants if f"{q.qid}-{v}" not in have]
        if s.adversarial:
            directives = load_directives(s.adversarial_file)
            chosen = originals[:s.adversarial_questions] if s.adversarial_questions else originals
            self._add_questions([v for q in chosen for d in directives.directives
                                 if (v := adversarial_variant(q, d, directives.version)).qid not in have])

        async def one(q: Question, v: str) -> None:
            if self.cancel.is_set():
                return   # written on resume
            try:
                model = self.model(s.writer) if v != "demographic" and s.writer else None
                variant = await make_variant(model, prompts, q, v, options=options, seed=s.seed or 0)
            except (ReplyError, LLMCallError, ValueError) as exc:
                self._problem(BenchStage.QUESTIONS, f"no {v} variant of {q.qid}: {exc}")
                return
            self._add_questions([variant])

        await asyncio.gather(*(one(q, v) for q, v in todo))

    def _add_questions(self, questions: Sequence[Question]) -> None:
        self.bench.add_questions(self.bench_id, questions)
        if self._question_feed is not None:
            for q in questions:
                self._question_feed.put_nowait(q)

    # -- 2-4 overlapped: each question is answered as soon as it is written, each answer audited
    # as soon as it is made ------------------------------------------------------------------
    async def _overlapped(self, locations: Sequence[str], prompts: Prompts, fetcher: Fetcher) -> None:
        s = self.settings
        assert s is not None
        audit = self._open_audit(fetcher)
        feed: asyncio.Queue[Question | None] = asyncio.Queue()
        for q in self.bench.questions(self.bench_id):   # written before (resume, imported, reviewed)
            feed.put_nowait(q)
        self._question_feed = feed

        async def write_questions() -> None:
            try:
                await self._documents_and_questions(locations, fetcher, prompts)
            finally:
                self._question_feed = None
                feed.put_nowait(None)

        def audit_answer(answer: Answer, question: Question) -> None:
            if answer.status is AnswerStatus.ERROR or answer.model not in s.models or answer.draw >= s.best_of:
                return   # a failed call is retried on resume, not audited
            responses, skipped = self._responses([answer], {question.qid: question})
            audit.add_responses(responses, skipped)
            self.bench.mark_in_run(self.bench_id, [(answer.qid, answer.model, answer.draw)])

        audit.open_input()
        auditing = asyncio.create_task(audit.execute(audit.run_id))
        feeding = [asyncio.create_task(write_questions()),
                   asyncio.create_task(self._answers(prompts, feed, on_answer=audit_answer))]
        tasks = [*feeding, auditing]
        try:
            failed, waiting = False, set(feeding)
            while waiting and not failed:
                watch = waiting if auditing.done() else waiting | {auditing}
                done, waiting = await asyncio.wait(watch, return_when=asyncio.FIRST_COMPLETED)
                waiting.discard(auditing)
                # a step that raised stops the others; so does an audit that ended by itself. One the
                # user cancelled ends too, but then the calls in flight finish and are kept
                failed = any(t.cancelled() or t.exception() is not None for t in done) or (
                    auditing.done() and not self.cancel.is_set())
            if not failed:
                audit.close_input()
                await auditing   # judges what is left, then ends
                return
        finally:
            self._question_feed = None
            audit.close_input()
            for task in tasks:
                if not task.done():
                    task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
        for task in (auditing, *feeding):
            if not task.cancelled() and task.exception() is not None:
                raise task.exception()  # type: ignore[misc]

    # -- 3. answers (and 5. accuracy as each answer arrives) -------------------------------
    async def _answers(self, prompts: Prompts, feed: asyncio.Queue[Question | None],
                       on_answer: Callable[[Answer, Question], None] | None = None) -> None:
        """Answer every question the feed brings (until None) with every model and draw not yet
        answered; answers whose call failed before are asked again."""
        s = self.settings
        assert s is not None
        existing = {(a.qid, a.model, a.draw): a for a in self.bench.answers(self.bench_id)}
        graded = {(g.qid, g.model, g.draw) for g in self.bench.grades(self.bench_id)
                  if g.label.value != "error"}
        made = sum(1 for a in existing.values() if a.status is not AnswerStatus.ERROR)
        done, total = made, made
        options = s.call_options()

        async def grade(answer: Answer, q: Question) -> None:
            if not (s.accuracy and q.reference_answer and answer.status.audited and answer.text.strip()):
                return
            if not s.grader:
                return
            g = await grade_accuracy(self.model(s.grader), prompts, q, answer, options=CallOptions(
                temperature=0.0, seed=s.seed, max_tokens=400, structured=s.structured))
            self.bench.save_grade(self.bench_id, g)

        slots = {m: asyncio.Semaphore(s.concurrency) for m in s.models}

        async def one(q: Question, spec: str, draw: int) -> None:
            nonlocal done
            async with slots[spec]:
                if self.cancel.is_set():
                    return   # what is not answered yet is answered on resume
                answer = await answer_question(self.model(spec), prompts, q, draw=draw, options=options)
                self.bench.save_answer(self.bench_id, answer)
                if on_answer is not None:
                    on_answer(answer, q)
            done += 1
            if answer.status is AnswerStatus.ERROR:
                self._problem(BenchStage.ANSWERS, f"{spec} could not answer {q.qid}: {answer.error}")
            self._emit(BenchStage.ANSWERS, done, total, f"{spec} {q.qid}")
            await grade(answer, q)

        jobs: list[asyncio.Task[None]] = []
        seen: set[str] = set()
        while (q := await feed.get()) is not None:
            if q.qid in seen or q.dropped:
                continue
            seen.add(q.qid)
            for spec in s.models:
                for k in range(s.best_of):
                    before = existing.get((q.qid, spec, k))
                    if before is None or before.status is AnswerStatus.ERROR:
                        total += 1
                        jobs.append(asyncio.create_task(one(q, spec, k)))
                    elif (q.qid, spec, k) not in graded:
                        jobs.append(asyncio.create_task(grade(before, q)))
            self._emit(BenchStage.ANSWERS, done, total)
        try:
            await asyncio.gather(*jobs)
        finally:
            for job in jobs:
                job.cancel()

    # -- 4. audit ----------------------------------------------------------------------------
    def _responses(self, answers: Sequence[Answer], questions: Mapping[str, Question]
                   ) -> tuple[list[Response], list[SkippedRecord]]:
        responses: list[Response] = []
        skipped: list[SkippedRecord] = []
        origin = f"benchmark {self.bench_id}"
        for a in answers:
            if a.status is AnswerStatus.ERROR:
                continue   # a failed call is retried on resume, not audited
            record = answer_record(a, questions[a.qid])
            record["benchmark"] = self.bench_id
            if not a.text.strip():
                skipped.append(SkippedRecord(f"{origin}: {a.rid}", f"{a.model} gave no answer: {a.error or a.status.value}"))
                continue
            try:
                responses.append(parse_answer_record(record, f"{origin}: {a.rid}", a.rid))
            except IngestError as exc:
                skipped.append(SkippedRecord(f"{origin}: {a.rid}", str(exc)))
        return responses, skipped

    def _open_audit(self, fetcher: Fetcher) -> Audit:
        """The benchmark's audit run, created on first use; answers that exist and are not in it yet
        (made before a crash, or by an earlier version) are added to it now."""
        s = self.settings
        assert s is not None
        row = self.bench.get(self.bench_id)
        questions = {q.qid: q for q in self.bench.questions(self.bench_id)}
        answers = [a for a in self.bench.answers(self.bench_id) if a.qid in questions and a.model in s.models
                   and a.draw < s.best_of and a.status is not AnswerStatus.ERROR]
        config = RunConfig(judges=list(s.judges), parser=s.parser, judge_concurrency=s.judge_concurrency,
                           fetch=s.fetch, seed=s.metrics_seed)

        def forward(ev: ProgressEvent) -> None:
            self._emit(BenchStage.AUDIT, ev.pairs_done, ev.pairs_total, ev.message, audit=ev)

        audit = Audit(self.store, config, progress=forward, fetcher=fetcher, judges=self._judges,
                      cancel=self.cancel)
        if row.run_id is None:
            responses, skipped = self._responses(answers, questions)
            run_id = audit.create(responses, skipped, input_label=f"benchmark {self.bench_id}: {row.input}")
            self.bench.set_run(self.bench_id, run_id)
        else:
            audit.run_id = row.run_id
            in_run = {r.response.id for r in self.store.responses(row.run_id)}
            in_run |= {sk.origin.rsplit(": ", 1)[-1] for sk in self.store.skipped(row.run_id)}
            responses, skipped = self._responses([a for a in answers if a.rid not in in_run], questions)
            if responses or skipped:
                self.store.add_responses(row.run_id, responses, skipped)
        # all of them, those already in the run too: a crash can fall between adding and marking
        self.bench.mark_in_run(self.bench_id, [(a.qid, a.model, a.draw) for a in answers])
        return audit

    # -- 5b. the other studies: each answer's behaviour and payload, each cited source's relevance ----------
    async def _studies(self) -> None:
        s = self.settings
        assert s is not None
        row = self.bench.get(self.bench_id)
        questions = {q.qid: q for q in self.bench.questions(self.bench_id, include_dropped=True)}
        done = {(b["qid"], b["model"], b["draw"]) for b in self.store.bench_behaviour_rows(self.bench_id)
                if b["behaviour"] != "error"}
        todo = [a for a in self.bench.answers(self.bench_id) if a.status.audited and a.text.strip()
                and a.qid in questions and (a.qid, a.model, a.draw) not in done]
        prompt = load_prompt(BEHAVIOUR_PROMPT, required=("question", "answer")) if s.behaviour_model else None
        options = CallOptions(temperature=0.0, seed=s.seed, max_tokens=300, structured=s.structured)

        async def one(a: Answer) -> None:
            q = questions[a.qid]
            if s.behaviour_model and prompt is not None:
                got = await classify_by_llm(self.model(s.behaviour_model), prompt, q.question, a.text, options=options)
            else:
                got = Classified(classify_by_rule(a.text, a.status), "rule", BEHAVIOUR_RULE)
            present = payload_present(a.text, q.payload) if q.payload else None
            self.store.save_bench_behaviour(self.bench_id, a.qid, a.model, a.draw, behaviour=got.behaviour,
                                                  method=got.method, version=got.version,
                                                  payload_present=present, rationale=got.rationale)

        await asyncio.gather(*(one(a) for a in todo))
        if row.run_id:
            judged = await judge_relevance(self.store, row.run_id, options=options,
                                           model=self.model(s.relevance_model) if s.relevance_model else None)
            self._emit(BenchStage.STUDIES, judged, judged, f"{len(todo)} answers classified, "
                                                           f"{judged} cited sources judged for relevance")

    # -- 6. best-of-K --------------------------------------------------------------------------
    def _select_best(self) -> None:
        s = self.settings
        assert s is not None
        row = self.bench.get(self.bench_id)
        if not row.run_id:
            return
        answers = self.bench.answers(self.bench_id)
        support = answer_support(self.store, row.run_id) if s.select != "grader" else {}
        graded: dict[str, float] = {}
        if s.select != "support" and s.best_of > 1:
            questions = {q.qid: q for q in self.bench.questions(self.bench_id, include_dropped=True)}
            _, graded = grader_scores(self.store, row.run_id, answers, questions, s.grader_file or "")
        scores = {a.rid: combined_score(s.select, support.get(a.rid), graded.get(a.rid)) for a in answers}
        chosen = pick_best(answers, scores)
        self.bench.set_selected(self.bench_id, chosen)
        self._emit(BenchStage.SELECTION, len(chosen), len(chosen))


def answer_support(store: Store, run_id: str) -> dict[str, float | None]:
    """Response id -> the share of its decided claims that a cited source supports (None: none decided)."""
    data = store.load_run(run_id)
    out: dict[str, float | None] = {}
    for r in assess_run(data):
        decided = [s.status.supported for s in r.statements
                   if s.row.statement.informative and s.status.supported is not None]
        out[r.rid] = (sum(1 for d in decided if d) / len(decided)) if decided else None
    return out


async def answer_all(models: Mapping[str, LLMClient], questions: Sequence[Question], *, draws: int = 1,
                     options: CallOptions = CallOptions(), prompts: Prompts | None = None,
                     progress: BenchProgress | None = None) -> list[Answer]:
    """Answers without a database (the ``answer`` command): every model x question x draw."""
    prompts = prompts or Prompts.load()
    total = len(models) * len(questions) * draws
    done = 0

    async def one(spec: str, q: Question, k: int) -> Answer:
        nonlocal done
        a = await answer_question(models[spec], prompts, q, draw=k, options=options)
        done += 1
        if progress:
            progress(BenchEvent(BenchStage.ANSWERS, done, total, f"{spec} {q.qid}",
                                warning=a.status is AnswerStatus.ERROR))
        return a

    return list(await asyncio.gather(*(one(m, q, k) for m in models for q in questions for k in range(draws))))
