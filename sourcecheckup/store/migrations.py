"""The database schema as ordered, append-only migration steps (schema_version N is step N).

Each later release adds a function at the end of :data:`MIGRATIONS`; never edit a released one.
"""
from __future__ import annotations

from typing import Callable

import sqlite_utils

from ..run_owner import parse_owner_line


def _m1_initial(db: sqlite_utils.Database) -> None:
    db.table("runs").create({
        "id": str, "created_at": str, "finished_at": str, "status": str, "input": str,
        "config": str, "judges": str, "parser": str, "app_version": str,
        "n_records": int, "n_skipped": int, "message": str,
    }, pk="id")
    db.table("responses").create({
        "pk": int, "run_id": str, "ord": int, "rid": str, "question": str, "model": str,
        "text": str, "citations": str, "markers": str, "origin": str, "extra": str,
        "parsed": int, "done": int,
    }, pk="pk", foreign_keys=[("run_id", "runs", "id")])
    db.table("responses").create_index(["run_id", "ord"], unique=True)
    db.table("statements").create({
        "pk": int, "response_pk": int, "run_id": str, "ord": int, "text": str,
        "category": str, "cited": str, "start": int, "end": int,
    }, pk="pk", foreign_keys=[("response_pk", "responses", "pk")])
    db.table("statements").create_index(["response_pk", "ord"], unique=True)
    db.table("statements").create_index(["run_id"])
    db.table("sources").create({
        "id": int, "url": str, "status": str, "reason": str, "http_status": int,
        "final_url": str, "content_type": str, "title": str, "text": str, "sha256": str,
        "fetched_at": str, "elapsed_s": float, "origin": str, "flags": str, "meta": str,
        "raw": bytes,
    }, pk="id")
    db.table("sources").create_index(["url"])
    db.table("run_sources").create({"run_id": str, "url": str, "source_id": int},
                             pk=("run_id", "url"))
    db.table("verdicts").create({
        "pk": int, "run_id": str, "statement_pk": int, "url": str, "source_id": int,
        "judge_id": str, "label": str, "score": float, "rationale": str, "quote": str,
        "quote_found": int, "prompt_version": str, "model_version": str, "raw": str,
        "tokens_in": int, "tokens_out": int, "flags": str, "created_at": str,
    }, pk="pk")
    db.table("verdicts").create_index(["run_id", "statement_pk", "url", "judge_id"], unique=True)
    db.table("skipped").create({"pk": int, "run_id": str, "origin": str, "problem": str}, pk="pk")
    db.table("skipped").create_index(["run_id"])
    db.table("run_log").create({"pk": int, "run_id": str, "at": str, "level": str, "message": str}, pk="pk")
    db.table("run_log").create_index(["run_id"])


def _m2_reviews_and_suggestions(db: sqlite_utils.Database) -> None:
    # a person's label on one pair; every row is kept (who and when), the latest per reviewer counts
    db.table("reviews").create({
        "pk": int, "run_id": str, "statement_pk": int, "url": str, "reviewer": str, "label": str,
        "reason": str, "blind": int, "sample": str, "created_at": str,
    }, pk="pk")
    db.table("reviews").create_index(["run_id", "statement_pk", "url"])
    # SourceCleanup edit suggestions and the user's decision on each
    db.table("suggestions").create({
        "pk": int, "run_id": str, "statement_pk": int, "url": str, "kind": str, "original": str,
        "suggested": str, "quote": str, "status": str, "judge_id": str, "verification": str,
        "decision": str, "decided_by": str, "decided_at": str, "created_at": str,
    }, pk="pk")
    db.table("suggestions").create_index(["run_id", "statement_pk"])


def _m3_review_samples(db: sqlite_utils.Database) -> None:
    # a named draw of pairs for human review (review-sample); labels land in `reviews` with the same name
    db.table("review_samples").create({
        "pk": int, "run_id": str, "sample": str, "ord": int, "statement_pk": int, "url": str,
        "stratum": str, "blind": int, "seed": int, "created_at": str,
    }, pk="pk")
    db.table("review_samples").create_index(["run_id", "sample", "ord"], unique=True)


def _m4_benchmarks(db: sqlite_utils.Database) -> None:
    # the model-benchmark workflow: documents -> questions -> answers (K draws) -> one audit run
    db.table("benchmarks").create({
        "id": str, "created_at": str, "finished_at": str, "status": str, "input": str, "config": str,
        "run_id": str, "message": str,
    }, pk="id")
    db.table("bench_documents").create({
        "pk": int, "bench_id": str, "ord": int, "location": str, "source_id": int, "title": str,
        "valid": int, "reason": str, "created_at": str,
    }, pk="pk")
    db.table("bench_documents").create_index(["bench_id", "location"], unique=True)
    db.table("bench_questions").create({
        "pk": int, "bench_id": str, "ord": int, "qid": str, "question": str, "reference_answer": str,
        "question_source": str, "variant": str, "parent_qid": str, "document_pk": int, "document_url": str,
        "generator": str, "prompt_version": str, "tokens_in": int, "tokens_out": int, "flags": str,
        "dropped": int, "edited": int, "original_question": str, "created_at": str,
    }, pk="pk")
    db.table("bench_questions").create_index(["bench_id", "qid"], unique=True)
    db.table("bench_answers").create({
        "pk": int, "bench_id": str, "qid": str, "model": str, "draw": int, "status": str, "text": str,
        "citations": str, "model_version": str, "prompt_version": str, "tokens_in": int, "tokens_out": int,
        "attempts": int, "raw": str, "error": str, "flags": str, "in_run": int, "selected": int,
        "created_at": str,
    }, pk="pk")
    db.table("bench_answers").create_index(["bench_id", "qid", "model", "draw"], unique=True)
    db.table("bench_accuracy").create({
        "pk": int, "bench_id": str, "qid": str, "model": str, "draw": int, "label": str, "rationale": str,
        "grader": str, "prompt_version": str, "tokens_in": int, "tokens_out": int, "created_at": str,
    }, pk="pk")
    db.table("bench_accuracy").create_index(["bench_id", "qid", "model", "draw"], unique=True)


def _m5_run_name_and_note(db: sqlite_utils.Database) -> None:
    # a run's name and note, given by the user (the id stays the run's key)
    db.table("runs").add_column("name", str, not_null_default="")
    db.table("runs").add_column("note", str, not_null_default="")


def _m6_references(db: sqlite_utils.Database) -> None:
    # the reference strings an answer wrote (citation index -> raw string), JSON
    db.table("responses").add_column("refs", str)
    # one reference check per cited reference of a run (ReferenceCheck.to_dict() in `check`)
    db.table("reference_checks").create({
        "pk": int, "run_id": str, "url": str, "status": str, "retracted": int, "check": str,
        "checked_at": str,
    }, pk="pk")
    db.table("reference_checks").create_index(["run_id", "url"], unique=True)
    # what Crossref / PubMed / OpenAlex answered, so a rerun or a resume never asks twice
    db.table("lookup_cache").create({"service": str, "key": str, "payload": str, "fetched_at": str},
                              pk=("service", "key"))


def _m7_embedding_cache(db: sqlite_utils.Database) -> None:
    # source sentences' embeddings (sha256 of the sentence text + the model's id -> float32 bytes), so a
    # page judged against many statements, or again in a later run, is embedded once
    db.table("embedding_cache").create({"model": str, "text_sha256": str, "vector": bytes},
                                 pk=("model", "text_sha256"))


def _m8_expert_references(db: sqlite_utils.Database) -> None:
    # an answer's expert material (OLAPH / EVAL): the reference answer and the must-have / nice-to-have
    # statements (JSON lists), on the response and on a benchmark's question
    db.table("responses").add_column("reference_answer", str)
    for table in ("responses", "bench_questions"):
        db.table(table).add_column("must_have", str)
        db.table(table).add_column("nice_to_have", str)
    # one judge's verdict on one expert statement (the claim) against the answer text (the source)
    db.table("expert_verdicts").create({
        "pk": int, "run_id": str, "response_pk": int, "kind": str, "ord": int, "statement": str,
        "judge_id": str, "label": str, "contradicted": int, "score": float, "rationale": str, "quote": str,
        "prompt_version": str, "model_version": str, "flags": str, "created_at": str,
    }, pk="pk")
    db.table("expert_verdicts").create_index(["run_id", "response_pk", "kind", "ord", "judge_id"], unique=True)
    # an answer's similarity to its reference answer, one row per method (late interaction, sentence cosine)
    db.table("expert_similarity").create({
        "pk": int, "run_id": str, "response_pk": int, "method": str, "model": str, "value": float,
        "created_at": str,
    }, pk="pk")
    db.table("expert_similarity").create_index(["run_id", "response_pk", "method"], unique=True)


def _m9_answer_grades(db: sqlite_utils.Database) -> None:
    # answer grades (issue 32, item 4): a person's Good/Bad on a whole answer, kept apart from pair labels;
    # every row is kept (who and when), the latest per reviewer counts. Written to run at any position.
    db.execute("CREATE TABLE IF NOT EXISTS answer_grades (pk INTEGER PRIMARY KEY, run_id TEXT, response_pk INTEGER, "
               "reviewer TEXT, grade TEXT, note TEXT, sample TEXT, created_at TEXT)")
    db.execute("CREATE INDEX IF NOT EXISTS idx_answer_grades_run ON answer_grades (run_id, response_pk)")
    # a trained grader's score of an answer (issue 32, item 5): P(Good), one row per (run, answer, grader)
    db.execute("CREATE TABLE IF NOT EXISTS answer_scores (run_id TEXT, response_pk INTEGER, grader TEXT, "
               "score REAL, created_at TEXT, PRIMARY KEY (run_id, response_pk, grader))")


def _m10_run_owner(db: sqlite_utils.Database) -> None:
    # the process running a run, in columns (issue 39): psutil tells on every OS whether it still runs, so a
    # killed run reads "interrupted". Filled from the newest owner line of the run log for runs written before.
    # Written to run at any position.
    have = {c.name for c in db.table("runs").columns}
    for name, kind in (("owner_pid", "INTEGER"), ("owner_host", "TEXT"), ("owner_started", "REAL")):
        if name not in have:
            db.execute(f"ALTER TABLE runs ADD COLUMN {name} {kind}")
    rows = db.execute("SELECT run_id, message FROM run_log WHERE message LIKE 'running in process %' "
                      "ORDER BY pk").fetchall()
    newest = {run_id: message for run_id, message in rows}
    for run_id, message in newest.items():
        owner = parse_owner_line(message)
        if owner is not None:
            db.execute("UPDATE runs SET owner_pid = ?, owner_host = ?, owner_started = ? WHERE id = ? "
                       "AND owner_pid IS NULL", [owner.pid, owner.host, owner.started, run_id])


def _m11_benchmark_studies(db: sqlite_utils.Database) -> None:
    # issue 43 (ASTRID, Almanac): a question's expected behaviour and adversarial directive; each answer's
    # behaviour (answer / refusal / redirection) and whether it carries a directive's payload; each cited
    # source's relevance to the question. Written to run at any position (guarded columns, IF NOT EXISTS).
    have = {c.name for c in db.table("bench_questions").columns}
    for column in ("expect", "expect_reason", "directive_kind", "payload", "directive_version"):
        if column not in have:
            db.execute(f"ALTER TABLE bench_questions ADD COLUMN {column} TEXT")
    db.execute("CREATE TABLE IF NOT EXISTS bench_behaviour (pk INTEGER PRIMARY KEY, bench_id TEXT, qid TEXT, "
               "model TEXT, draw INTEGER, behaviour TEXT, method TEXT, version TEXT, payload_present INTEGER, "
               "rationale TEXT, created_at TEXT)")
    db.execute("CREATE UNIQUE INDEX IF NOT EXISTS idx_bench_behaviour ON bench_behaviour "
               "(bench_id, qid, model, draw)")
    db.execute("CREATE TABLE IF NOT EXISTS source_relevance (pk INTEGER PRIMARY KEY, run_id TEXT, "
               "response_pk INTEGER, url TEXT, label TEXT, judge TEXT, version TEXT, score REAL, rationale TEXT, "
               "created_at TEXT)")
    db.execute("CREATE UNIQUE INDEX IF NOT EXISTS idx_source_relevance ON source_relevance "
               "(run_id, response_pk, url, judge)")
    # an audited answer (outside a benchmark) whose record says what it should do ("expect"): its behaviour
    db.execute("CREATE TABLE IF NOT EXISTS response_behaviour (pk INTEGER PRIMARY KEY, run_id TEXT, response_pk INTEGER, "
               "behaviour TEXT, method TEXT, version TEXT, rationale TEXT, created_at TEXT)")
    db.execute("CREATE UNIQUE INDEX IF NOT EXISTS idx_response_behaviour ON response_behaviour (run_id, response_pk)")


def _m12_repairs(db: sqlite_utils.Database) -> None:
    # after the audit, the repair (issue 44): one repair per (run, statement, kind: find | open_access) and
    # every candidate tried, with its verdicts and how it was found (JSON). Written to run at any position.
    db.execute("CREATE TABLE IF NOT EXISTS repairs (pk INTEGER PRIMARY KEY, run_id TEXT, statement_pk INTEGER, "
               "kind TEXT, status TEXT, query TEXT, offered_key TEXT, errors TEXT, decision TEXT, updated_at TEXT, "
               "UNIQUE (run_id, statement_pk, kind))")
    db.execute("CREATE TABLE IF NOT EXISTS repair_candidates (run_id TEXT, statement_pk INTEGER, kind TEXT, "
               "key TEXT, candidate TEXT, created_at TEXT, PRIMARY KEY (run_id, statement_pk, kind, key))")


# Append-only: each later release adds a function at the end; never edit a released one.
MIGRATIONS: list[Callable[[sqlite_utils.Database], None]] = [_m1_initial, _m2_reviews_and_suggestions,
                                                            _m3_review_samples, _m4_benchmarks,
                                                            _m5_run_name_and_note, _m6_references,
                                                            _m7_embedding_cache, _m8_expert_references,
                                                            _m9_answer_grades,   # answer grades (issue 32, item 4)
                                                            _m10_run_owner,
                                                            _m11_benchmark_studies,   # refusal, relevance (issue 43)
                                                            _m12_repairs]   # repairs (issue 44)
