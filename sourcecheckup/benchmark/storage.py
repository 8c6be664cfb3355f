"""The benchmark's records over the SourceCheckup database (the SQL is in :mod:`sourcecheckup.store.benchmark`).

Every generated question, answer and grade is committed when it is made, so a benchmark
interrupted at any step resumes with only what is missing.
"""
from __future__ import annotations

import builtins
import secrets
from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from ..models import Source, utcnow
from ..store import Store, StoreError, dump_json, load_json
from .records import AccuracyGrade, AccuracyLabel, Answer, AnswerStatus, Document, Question


@dataclass(frozen=True)
class BenchRow:
    id: str
    created_at: str
    finished_at: str | None
    status: str
    input: str
    config: dict[str, Any]
    run_id: str | None
    message: str


class BenchStore:
    """Benchmark rows over an open :class:`~sourcecheckup.store.Store` (same thread rules)."""

    def __init__(self, store: Store) -> None:
        self.store = store

    # -- benchmarks --------------------------------------------------------------------
    def create(self, *, input: str, config: dict[str, Any], bench_id: str | None = None) -> str:
        bench_id = bench_id or f"bench-{utcnow()[:10].replace('-', '')}-{secrets.token_hex(3)}"
        self.store.add_benchmark(bench_id, input=input, config=config)
        return bench_id

    def get(self, bench_id: str) -> BenchRow:
        r = self.store.find_by_id("benchmarks", bench_id, "benchmark")
        return BenchRow(r["id"], r["created_at"], r["finished_at"], r["status"], r["input"] or "",
                        load_json(r["config"], {}), r["run_id"], r["message"] or "")

    # the method `list` hides the builtin inside the class: the annotations below name it as builtins.list
    def list(self) -> list[BenchRow]:
        return [self.get(bench_id) for bench_id in self.store.benchmark_ids()]

    def set_status(self, bench_id: str, status: str, message: str = "") -> None:
        finished = utcnow() if status in ("completed", "failed", "cancelled") else None
        self.store.update_benchmark(bench_id, status=status, message=message, finished_at=finished)

    def set_run(self, bench_id: str, run_id: str) -> None:
        self.store.update_benchmark(bench_id, run_id=run_id)

    def set_config(self, bench_id: str, config: dict[str, Any]) -> None:
        self.store.update_benchmark(bench_id, config=config)

    # -- documents ---------------------------------------------------------------------
    def add_document(self, bench_id: str, ord: int, location: str, source: Source) -> Document:
        source_id = self.store.add_source(source)
        reason = "" if source.valid else (source.reason or source.status.plain)
        pk = self.store.add_bench_document(bench_id, ord, location, source_id, source.title, source.valid, reason)
        return Document(pk=pk, ord=ord, location=location, source_id=source_id,
                        title=source.title, text=source.text, valid=source.valid, reason=reason)

    def documents(self, bench_id: str) -> builtins.list[Document]:
        out = []
        for r in self.store.bench_document_rows(bench_id):
            out.append(Document(pk=r["pk"], ord=r["ord"], location=r["location"], source_id=r["source_id"],
                                title=r["title"], text=r["text"] or "", valid=bool(r["valid"]),
                                reason=r["reason"] or ""))
        return out

    # -- questions ---------------------------------------------------------------------
    def add_questions(self, bench_id: str, questions: Iterable[Question]) -> None:
        self.store.add_bench_questions(bench_id, questions)

    def questions(self, bench_id: str, *, include_dropped: bool = False) -> builtins.list[Question]:
        return [self._question(r) for r in self.store.bench_question_rows(bench_id, include_dropped=include_dropped)]

    @staticmethod
    def _question(r: dict[str, Any]) -> Question:
        return Question(qid=r["qid"], question=r["question"], reference_answer=r["reference_answer"] or "",
                        question_source=r["question_source"], variant=r["variant"], parent_qid=r["parent_qid"],
                        document_pk=r["document_pk"], document_url=r["document_url"], generator=r["generator"] or "",
                        prompt_version=r["prompt_version"] or "", tokens_in=r["tokens_in"] or 0,
                        tokens_out=r["tokens_out"] or 0, flags=tuple(load_json(r["flags"], [])),
                        dropped=bool(r["dropped"]), edited=bool(r["edited"]),
                        must_have=tuple(load_json(r.get("must_have"), [])),
                        nice_to_have=tuple(load_json(r.get("nice_to_have"), [])),
                        expect=r.get("expect") or "", expect_reason=r.get("expect_reason") or "",
                        directive_kind=r.get("directive_kind") or "", payload=r.get("payload") or "",
                        directive_version=r.get("directive_version") or "")

    def _require_question(self, bench_id: str, qid: str) -> None:
        if not self.store.has_bench_question(bench_id, qid):
            raise StoreError(f"no question '{qid}' in benchmark {bench_id}")

    def _answered(self, bench_id: str, qid: str) -> bool:
        return self.store.has_bench_answer(bench_id, qid, except_status=AnswerStatus.ERROR.value)

    def edit_question(self, bench_id: str, qid: str, *, question: str | None = None,
                      reference_answer: str | None = None, must_have: Sequence[str] | None = None,
                      nice_to_have: Sequence[str] | None = None) -> Question:
        """Change a question before it is answered (the generated text is kept as the original)."""
        self._require_question(bench_id, qid)
        if self._answered(bench_id, qid):
            raise StoreError(f"question '{qid}' already has answers; edit questions before answering "
                             "(or start a new benchmark from the edited questions file)")
        changes: dict[str, Any] = {"edited": 1}
        if question is not None:
            if not question.strip():
                raise ValueError("a question cannot be empty; drop it instead")
            changes["question"] = question.strip()
        if reference_answer is not None:
            changes["reference_answer"] = reference_answer.strip()
        for key, statements in (("must_have", must_have), ("nice_to_have", nice_to_have)):
            if statements is not None:   # the expert statements (OLAPH), as a reviewer left them
                changes[key] = dump_json([s.strip() for s in statements if s.strip()])
        self.store.update_bench_question(bench_id, qid, **changes)
        return next(q for q in self.questions(bench_id, include_dropped=True) if q.qid == qid)

    def set_dropped(self, bench_id: str, qid: str, dropped: bool = True) -> None:
        """Drop a question (it is not answered or audited) or bring it back."""
        self._require_question(bench_id, qid)
        self.store.set_bench_question_dropped(bench_id, qid, dropped)

    def apply_review(self, bench_id: str, reviewed: Sequence[Question]) -> dict[str, int]:
        """Apply a reviewed questions file: changed text is an edit, ``drop`` or a deleted line
        drops, a new id is added. Returns counts of each."""
        stored = {q.qid: q for q in self.questions(bench_id, include_dropped=True)}
        given = {q.qid: q for q in reviewed}
        counts = {"edited": 0, "dropped": 0, "restored": 0, "added": 0}
        for qid, q in stored.items():
            new = given.get(qid)
            if new is None or new.dropped:
                if not q.dropped:
                    self.set_dropped(bench_id, qid, True)
                    counts["dropped"] += 1
                continue
            if q.dropped:
                self.set_dropped(bench_id, qid, False)
                counts["restored"] += 1
            if (new.question, new.reference_answer, new.must_have, new.nice_to_have) != \
                    (q.question, q.reference_answer, q.must_have, q.nice_to_have):
                self.edit_question(bench_id, qid, question=new.question, reference_answer=new.reference_answer,
                                   must_have=new.must_have, nice_to_have=new.nice_to_have)
                counts["edited"] += 1
        added = [q for qid, q in given.items() if qid not in stored and not q.dropped]
        self.add_questions(bench_id, added)
        counts["added"] = len(added)
        return counts

    # -- answers -----------------------------------------------------------------------
    def save_answer(self, bench_id: str, a: Answer) -> None:
        self.store.save_bench_answer(bench_id, a)

    def answers(self, bench_id: str) -> builtins.list[Answer]:
        return [self._answer(r) for r in self.store.bench_answer_rows(bench_id)]

    @staticmethod
    def _answer(r: dict[str, Any]) -> Answer:
        return Answer(qid=r["qid"], model=r["model"], draw=r["draw"], status=AnswerStatus(r["status"]),
                      text=r["text"] or "", citations=tuple(load_json(r["citations"], [])),
                      model_version=r["model_version"] or "", prompt_version=r["prompt_version"] or "",
                      tokens_in=r["tokens_in"] or 0, tokens_out=r["tokens_out"] or 0, attempts=r["attempts"] or 0,
                      raw=r["raw"], error=r["error"] or "", flags=tuple(load_json(r["flags"], [])))

    def answer_flags(self, bench_id: str) -> dict[tuple[str, str, int], tuple[bool, bool]]:
        """(qid, model, draw) -> (in the audit run, selected by best-of-K)."""
        return self.store.bench_answer_flags(bench_id)

    def mark_in_run(self, bench_id: str, keys: Iterable[tuple[str, str, int]]) -> None:
        self.store.mark_bench_answers_in_run(bench_id, keys)

    def set_selected(self, bench_id: str, keys: Iterable[tuple[str, str, int]]) -> None:
        self.store.set_bench_answers_selected(bench_id, keys)

    # -- accuracy ----------------------------------------------------------------------
    def save_grade(self, bench_id: str, g: AccuracyGrade) -> None:
        self.store.save_bench_grade(bench_id, g)

    def grades(self, bench_id: str) -> builtins.list[AccuracyGrade]:
        return [AccuracyGrade(qid=r["qid"], model=r["model"], draw=r["draw"], label=AccuracyLabel(r["label"]),
                              rationale=r["rationale"] or "", grader=r["grader"] or "",
                              prompt_version=r["prompt_version"] or "", tokens_in=r["tokens_in"] or 0,
                              tokens_out=r["tokens_out"] or 0)
                for r in self.store.bench_grade_rows(bench_id)]
