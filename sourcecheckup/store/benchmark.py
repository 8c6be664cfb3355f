"""The benchmark's tables (migration 4): benchmarks, bench_documents, bench_questions, bench_answers,
bench_accuracy; and (migration 10) bench_behaviour, source_relevance and response_behaviour. Rows go in and
come out as stored; :mod:`sourcecheckup.benchmark.storage` makes records."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterable

import sqlite_utils

from ..models import utcnow
from .columns import dump_json

if TYPE_CHECKING:
    from ..benchmark.records import AccuracyGrade, Answer, Question

# the columns a question's edit may change
QUESTION_EDITS = ("question", "reference_answer", "edited", "must_have", "nice_to_have")


class BenchTables:
    """Store methods over the benchmark tables (mixed into :class:`~sourcecheckup.store.Store`)."""

    db: sqlite_utils.Database

    # -- benchmarks --------------------------------------------------------------------
    def add_benchmark(self, bench_id: str, *, input: str, config: dict[str, Any]) -> None:
        with self.db.conn:
            self.db.table("benchmarks").insert({"id": bench_id, "created_at": utcnow(), "finished_at": None,
                                          "status": "created", "input": input, "config": dump_json(config),
                                          "run_id": None, "message": ""})

    def benchmark_of_run(self, run_id: str) -> str | None:
        """The benchmark whose audit run this is, if any."""
        row = self.db.execute("SELECT id FROM benchmarks WHERE run_id = ?", [run_id]).fetchone()
        return None if row is None else str(row[0])

    def benchmark_ids(self) -> list[str]:
        """Every benchmark's id, newest first."""
        return [r["id"] for r in self.db.query("SELECT id FROM benchmarks ORDER BY created_at DESC")]

    def update_benchmark(self, bench_id: str, **changes: Any) -> None:
        """Set a benchmark's status, message, finished_at, run_id or config (a dict, stored as JSON)."""
        if "config" in changes:
            changes["config"] = dump_json(changes["config"])
        with self.db.conn:
            self.db.table("benchmarks").update(bench_id, changes)

    # -- documents ---------------------------------------------------------------------
    def add_bench_document(self, bench_id: str, ord: int, location: str, source_id: int, title: str | None,
                           valid: bool, reason: str) -> int:
        """Store (or replace) a reference document; returns its pk."""
        with self.db.conn:
            cur = self.db.conn.execute(
                "INSERT OR REPLACE INTO bench_documents (bench_id, ord, location, source_id, title, valid, reason, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [bench_id, ord, location, source_id, title, int(valid), reason, utcnow()])
        return int(cur.lastrowid or 0)

    def bench_document_rows(self, bench_id: str) -> list[dict[str, Any]]:
        """The documents in order, each with its source's text (``text``)."""
        return list(self.db.query("SELECT d.*, s.text AS text FROM bench_documents d LEFT JOIN sources s "
                                  "ON s.id = d.source_id WHERE d.bench_id = ? ORDER BY d.ord", [bench_id]))

    # -- questions ---------------------------------------------------------------------
    def add_bench_questions(self, bench_id: str, questions: Iterable[Question]) -> None:
        """Append questions after the stored ones; a qid already stored is left as it is."""
        start = self.db.execute("SELECT COALESCE(MAX(ord), -1) + 1 FROM bench_questions WHERE bench_id = ?",
                                [bench_id]).fetchone()[0]
        with self.db.conn:
            for i, q in enumerate(questions):
                self.db.conn.execute(
                    "INSERT OR IGNORE INTO bench_questions (bench_id, ord, qid, question, reference_answer, "
                    "question_source, variant, parent_qid, document_pk, document_url, generator, prompt_version, "
                    "tokens_in, tokens_out, flags, dropped, edited, original_question, created_at, must_have, nice_to_have, "
                    "expect, expect_reason, directive_kind, payload, directive_version) "
                    "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                    [bench_id, start + i, q.qid, q.question, q.reference_answer, q.question_source, q.variant,
                     q.parent_qid, q.document_pk, q.document_url, q.generator, q.prompt_version, q.tokens_in,
                     q.tokens_out, dump_json(list(q.flags)), int(q.dropped), int(q.edited), q.question, utcnow(),
                     dump_json(list(q.must_have)), dump_json(list(q.nice_to_have)), q.expect, q.expect_reason,
                     q.directive_kind, q.payload, q.directive_version])

    def bench_question_rows(self, bench_id: str, *, include_dropped: bool = False) -> list[dict[str, Any]]:
        sql = "SELECT * FROM bench_questions WHERE bench_id = ?" + ("" if include_dropped else " AND dropped = 0")
        return list(self.db.query(sql + " ORDER BY ord", [bench_id]))

    def has_bench_question(self, bench_id: str, qid: str) -> bool:
        return bool(self.db.execute("SELECT 1 FROM bench_questions WHERE bench_id = ? AND qid = ?",
                                    [bench_id, qid]).fetchone())

    def has_bench_answer(self, bench_id: str, qid: str, *, except_status: str) -> bool:
        """Whether the question has an answer whose status is not ``except_status``."""
        return bool(self.db.execute("SELECT 1 FROM bench_answers WHERE bench_id = ? AND qid = ? AND status != ?",
                                    [bench_id, qid, except_status]).fetchone())

    def update_bench_question(self, bench_id: str, qid: str, **changes: Any) -> None:
        """Change a question's text, reference answer or ``edited`` mark."""
        unknown = set(changes) - set(QUESTION_EDITS)
        if unknown:
            raise ValueError(f"a question edit changes {', '.join(QUESTION_EDITS)}, not {', '.join(sorted(unknown))}")
        with self.db.conn:
            self.db.conn.execute(
                "UPDATE bench_questions SET " + ", ".join(f"{k} = ?" for k in changes)
                + " WHERE bench_id = ? AND qid = ?", [*changes.values(), bench_id, qid])

    def set_bench_question_dropped(self, bench_id: str, qid: str, dropped: bool) -> None:
        with self.db.conn:
            self.db.conn.execute("UPDATE bench_questions SET dropped = ? WHERE bench_id = ? AND qid = ?",
                                 [int(dropped), bench_id, qid])

    # -- answers -----------------------------------------------------------------------
    def save_bench_answer(self, bench_id: str, a: Answer) -> None:
        with self.db.conn:
            self.db.conn.execute(
                "INSERT OR REPLACE INTO bench_answers (bench_id, qid, model, draw, status, text, citations, "
                "model_version, prompt_version, tokens_in, tokens_out, attempts, raw, error, flags, in_run, "
                "selected, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, 0, 0, ?)",
                [bench_id, a.qid, a.model, a.draw, a.status.value, a.text, dump_json(list(a.citations)), a.model_version,
                 a.prompt_version, a.tokens_in, a.tokens_out, a.attempts, a.raw, a.error, dump_json(list(a.flags)),
                 utcnow()])

    def bench_answer_rows(self, bench_id: str) -> list[dict[str, Any]]:
        return list(self.db.query("SELECT * FROM bench_answers WHERE bench_id = ? ORDER BY pk", [bench_id]))

    def bench_answer_flags(self, bench_id: str) -> dict[tuple[str, str, int], tuple[bool, bool]]:
        """(qid, model, draw) -> (in the audit run, selected by best-of-K)."""
        return {(r[0], r[1], r[2]): (bool(r[3]), bool(r[4])) for r in self.db.execute(
            "SELECT qid, model, draw, in_run, selected FROM bench_answers WHERE bench_id = ?", [bench_id])}

    def mark_bench_answers_in_run(self, bench_id: str, keys: Iterable[tuple[str, str, int]]) -> None:
        with self.db.conn:
            self.db.conn.executemany(
                "UPDATE bench_answers SET in_run = 1 WHERE bench_id = ? AND qid = ? AND model = ? AND draw = ?",
                [(bench_id, *k) for k in keys])

    def set_bench_answers_selected(self, bench_id: str, keys: Iterable[tuple[str, str, int]]) -> None:
        """Mark exactly these (qid, model, draw) answers as selected."""
        with self.db.conn:
            self.db.conn.execute("UPDATE bench_answers SET selected = 0 WHERE bench_id = ?", [bench_id])
            self.db.conn.executemany(
                "UPDATE bench_answers SET selected = 1 WHERE bench_id = ? AND qid = ? AND model = ? AND draw = ?",
                [(bench_id, *k) for k in keys])

    # -- accuracy ----------------------------------------------------------------------
    def save_bench_grade(self, bench_id: str, g: AccuracyGrade) -> None:
        with self.db.conn:
            self.db.conn.execute(
                "INSERT OR REPLACE INTO bench_accuracy (bench_id, qid, model, draw, label, rationale, grader, "
                "prompt_version, tokens_in, tokens_out, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [bench_id, g.qid, g.model, g.draw, g.label.value, g.rationale, g.grader, g.prompt_version,
                 g.tokens_in, g.tokens_out, utcnow()])

    def bench_grade_rows(self, bench_id: str) -> list[dict[str, Any]]:
        return list(self.db.query("SELECT * FROM bench_accuracy WHERE bench_id = ? ORDER BY pk", [bench_id]))

    # -- behaviour (refusal / redirection) and directive payloads ----------------------
    def save_bench_behaviour(self, bench_id: str, qid: str, model: str, draw: int, *, behaviour: str, method: str,
                             version: str, payload_present: bool | None, rationale: str = "") -> None:
        with self.db.conn:
            self.db.conn.execute(
                "INSERT OR REPLACE INTO bench_behaviour (bench_id, qid, model, draw, behaviour, method, version, "
                "payload_present, rationale, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [bench_id, qid, model, draw, behaviour, method, version,
                 None if payload_present is None else int(payload_present), rationale, utcnow()])

    def bench_behaviour_rows(self, bench_id: str) -> list[dict[str, Any]]:
        return list(self.db.query("SELECT * FROM bench_behaviour WHERE bench_id = ? ORDER BY pk", [bench_id]))

    # -- context relevance: each cited source against the answer's question -------------
    def save_source_relevance(self, run_id: str, rows: Iterable[dict[str, Any]]) -> None:
        with self.db.conn:
            self.db.conn.executemany(
                "INSERT OR REPLACE INTO source_relevance (run_id, response_pk, url, label, judge, version, score, "
                "rationale, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(run_id, r["response_pk"], r["url"], r["label"], r["judge"], r["version"], r.get("score"),
                  r.get("rationale", ""), utcnow()) for r in rows])

    def source_relevance_rows(self, run_id: str) -> list[dict[str, Any]]:
        return list(self.db.query("SELECT * FROM source_relevance WHERE run_id = ? ORDER BY response_pk, url, judge",
                                  [run_id]))

    # -- behaviour of an audited answer that carries its expected behaviour (outside a benchmark) ------
    def save_response_behaviour(self, run_id: str, rows: Iterable[dict[str, Any]]) -> None:
        with self.db.conn:
            self.db.conn.executemany(
                "INSERT OR REPLACE INTO response_behaviour (run_id, response_pk, behaviour, method, version, rationale, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?)",
                [(run_id, r["response_pk"], r["behaviour"], r["method"], r["version"], r.get("rationale", ""),
                  utcnow()) for r in rows])

    def response_behaviour_rows(self, run_id: str) -> list[dict[str, Any]]:
        return list(self.db.query("SELECT * FROM response_behaviour WHERE run_id = ? ORDER BY response_pk", [run_id]))
