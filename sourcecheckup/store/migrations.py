"""The database schema as ordered, append-only migration steps (schema_version N is step N).

Each later release adds a function at the end of :data:`MIGRATIONS`; never edit a released one.
"""
from __future__ import annotations

from typing import Callable

import sqlite_utils


def _m1_initial(db: sqlite_utils.Database) -> None:
    db["runs"].create({
        "id": str, "created_at": str, "finished_at": str, "status": str, "input": str,
        "config": str, "judges": str, "parser": str, "app_version": str,
        "n_records": int, "n_skipped": int, "message": str,
    }, pk="id")
    db["responses"].create({
        "pk": int, "run_id": str, "ord": int, "rid": str, "question": str, "model": str,
        "text": str, "citations": str, "markers": str, "origin": str, "extra": str,
        "parsed": int, "done": int,
    }, pk="pk", foreign_keys=[("run_id", "runs", "id")])
    db["responses"].create_index(["run_id", "ord"], unique=True)
    db["statements"].create({
        "pk": int, "response_pk": int, "run_id": str, "ord": int, "text": str,
        "category": str, "cited": str, "start": int, "end": int,
    }, pk="pk", foreign_keys=[("response_pk", "responses", "pk")])
    db["statements"].create_index(["response_pk", "ord"], unique=True)
    db["statements"].create_index(["run_id"])
    db["sources"].create({
        "id": int, "url": str, "status": str, "reason": str, "http_status": int,
        "final_url": str, "content_type": str, "title": str, "text": str, "sha256": str,
        "fetched_at": str, "elapsed_s": float, "origin": str, "flags": str, "meta": str,
        "raw": bytes,
    }, pk="id")
    db["sources"].create_index(["url"])
    db["run_sources"].create({"run_id": str, "url": str, "source_id": int},
                             pk=("run_id", "url"))
    db["verdicts"].create({
        "pk": int, "run_id": str, "statement_pk": int, "url": str, "source_id": int,
        "judge_id": str, "label": str, "score": float, "rationale": str, "quote": str,
        "quote_found": int, "prompt_version": str, "model_version": str, "raw": str,
        "tokens_in": int, "tokens_out": int, "flags": str, "created_at": str,
    }, pk="pk")
    db["verdicts"].create_index(["run_id", "statement_pk", "url", "judge_id"], unique=True)
    db["skipped"].create({"pk": int, "run_id": str, "origin": str, "problem": str}, pk="pk")
    db["skipped"].create_index(["run_id"])
    db["run_log"].create({"pk": int, "run_id": str, "at": str, "level": str, "message": str}, pk="pk")
    db["run_log"].create_index(["run_id"])


def _m2_reviews_and_suggestions(db: sqlite_utils.Database) -> None:
    # a person's label on one pair; every row is kept (who and when), the latest per reviewer counts
    db["reviews"].create({
        "pk": int, "run_id": str, "statement_pk": int, "url": str, "reviewer": str, "label": str,
        "reason": str, "blind": int, "sample": str, "created_at": str,
    }, pk="pk")
    db["reviews"].create_index(["run_id", "statement_pk", "url"])
    # SourceCleanup edit suggestions and the user's decision on each
    db["suggestions"].create({
        "pk": int, "run_id": str, "statement_pk": int, "url": str, "kind": str, "original": str,
        "suggested": str, "quote": str, "status": str, "judge_id": str, "verification": str,
        "decision": str, "decided_by": str, "decided_at": str, "created_at": str,
    }, pk="pk")
    db["suggestions"].create_index(["run_id", "statement_pk"])


def _m3_review_samples(db: sqlite_utils.Database) -> None:
    # a named draw of pairs for human review (review-sample); labels land in `reviews` with the same name
    db["review_samples"].create({
        "pk": int, "run_id": str, "sample": str, "ord": int, "statement_pk": int, "url": str,
        "stratum": str, "blind": int, "seed": int, "created_at": str,
    }, pk="pk")
    db["review_samples"].create_index(["run_id", "sample", "ord"], unique=True)


def _m4_benchmarks(db: sqlite_utils.Database) -> None:
    # the model-benchmark workflow: documents -> questions -> answers (K draws) -> one audit run
    db["benchmarks"].create({
        "id": str, "created_at": str, "finished_at": str, "status": str, "input": str, "config": str,
        "run_id": str, "message": str,
    }, pk="id")
    db["bench_documents"].create({
        "pk": int, "bench_id": str, "ord": int, "location": str, "source_id": int, "title": str,
        "valid": int, "reason": str, "created_at": str,
    }, pk="pk")
    db["bench_documents"].create_index(["bench_id", "location"], unique=True)
    db["bench_questions"].create({
        "pk": int, "bench_id": str, "ord": int, "qid": str, "question": str, "reference_answer": str,
        "question_source": str, "variant": str, "parent_qid": str, "document_pk": int, "document_url": str,
        "generator": str, "prompt_version": str, "tokens_in": int, "tokens_out": int, "flags": str,
        "dropped": int, "edited": int, "original_question": str, "created_at": str,
    }, pk="pk")
    db["bench_questions"].create_index(["bench_id", "qid"], unique=True)
    db["bench_answers"].create({
        "pk": int, "bench_id": str, "qid": str, "model": str, "draw": int, "status": str, "text": str,
        "citations": str, "model_version": str, "prompt_version": str, "tokens_in": int, "tokens_out": int,
        "attempts": int, "raw": str, "error": str, "flags": str, "in_run": int, "selected": int,
        "created_at": str,
    }, pk="pk")
    db["bench_answers"].create_index(["bench_id", "qid", "model", "draw"], unique=True)
    db["bench_accuracy"].create({
        "pk": int, "bench_id": str, "qid": str, "model": str, "draw": int, "label": str, "rationale": str,
        "grader": str, "prompt_version": str, "tokens_in": int, "tokens_out": int, "created_at": str,
    }, pk="pk")
    db["bench_accuracy"].create_index(["bench_id", "qid", "model", "draw"], unique=True)


def _m5_run_name_and_note(db: sqlite_utils.Database) -> None:
    # a run's name and note, given by the user (the id stays the run's key)
    db["runs"].add_column("name", str, not_null_default="")
    db["runs"].add_column("note", str, not_null_default="")


def _m6_references(db: sqlite_utils.Database) -> None:
    # the reference strings an answer wrote (citation index -> raw string), JSON
    db["responses"].add_column("refs", str)
    # one reference check per cited reference of a run (ReferenceCheck.to_dict() in `check`)
    db["reference_checks"].create({
        "pk": int, "run_id": str, "url": str, "status": str, "retracted": int, "check": str,
        "checked_at": str,
    }, pk="pk")
    db["reference_checks"].create_index(["run_id", "url"], unique=True)
    # what Crossref / PubMed / OpenAlex answered, so a rerun or a resume never asks twice
    db["lookup_cache"].create({"service": str, "key": str, "payload": str, "fetched_at": str},
                              pk=("service", "key"))


def _m7_embedding_cache(db: sqlite_utils.Database) -> None:
    # source sentences' embeddings (sha256 of the sentence text + the model's id -> float32 bytes), so a
    # page judged against many statements, or again in a later run, is embedded once
    db["embedding_cache"].create({"model": str, "text_sha256": str, "vector": bytes},
                                 pk=("model", "text_sha256"))


def _m8_expert_references(db: sqlite_utils.Database) -> None:
    # an answer's expert material (OLAPH / EVAL): the reference answer and the must-have / nice-to-have
    # statements (JSON lists), on the response and on a benchmark's question
    db["responses"].add_column("reference_answer", str)
    for table in ("responses", "bench_questions"):
        db[table].add_column("must_have", str)
        db[table].add_column("nice_to_have", str)
    # one judge's verdict on one expert statement (the claim) against the answer text (the source)
    db["expert_verdicts"].create({
        "pk": int, "run_id": str, "response_pk": int, "kind": str, "ord": int, "statement": str,
        "judge_id": str, "label": str, "contradicted": int, "score": float, "rationale": str, "quote": str,
        "prompt_version": str, "model_version": str, "flags": str, "created_at": str,
    }, pk="pk")
    db["expert_verdicts"].create_index(["run_id", "response_pk", "kind", "ord", "judge_id"], unique=True)
    # an answer's similarity to its reference answer, one row per method (late interaction, sentence cosine)
    db["expert_similarity"].create({
        "pk": int, "run_id": str, "response_pk": int, "method": str, "model": str, "value": float,
        "created_at": str,
    }, pk="pk")
    db["expert_similarity"].create_index(["run_id", "response_pk", "method"], unique=True)


def _m9_answer_grades(db: sqlite_utils.Database) -> None:
    # answer grades (issue 32, item 4): a person's Good/Bad on a whole answer, kept apart from pair labels;
    # every row is kept (who and when), the latest per reviewer counts. Written to run at any position.
    db.execute("CREATE TABLE IF NOT EXISTS answer_grades (pk INTEGER PRIMARY KEY, run_id TEXT, response_pk INTEGER, "
               "reviewer TEXT, grade TEXT, note TEXT, sample TEXT, created_at TEXT)")
    db.execute("CREATE INDEX IF NOT EXISTS idx_answer_grades_run ON answer_grades (run_id, response_pk)")
    # a trained grader's score of an answer (issue 32, item 5): P(Good), one row per (run, answer, grader)
    db.execute("CREATE TABLE IF NOT EXISTS answer_scores (run_id TEXT, response_pk INTEGER, grader TEXT, "
               "score REAL, created_at TEXT, PRIMARY KEY (run_id, response_pk, grader))")


def _m11_repairs(db: sqlite_utils.Database) -> None:
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
                                                            _m11_repairs]   # repairs (issue 44)
