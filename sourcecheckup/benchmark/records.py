"""The benchmark's records: reference documents, questions, answers, accuracy grades.

Questions travel as JSON Lines so a person can review, edit or drop them between generating
and answering; answers are written in the study's answer format (``{"response", "citations"}``
plus question, model and grouping columns), which ``sourcecheckup audit`` reads as it is.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..ingest.expert import statement_list
from ..ingest.records import IngestError


class QuestionSource(str, Enum):
    GENERATED = "generated"      # written by the questioner from a reference document
    IMPORTED = "imported"        # read from a CSV or JSONL of existing questions


class AnswerStatus(str, Enum):
    OK = "ok"                        # the JSON we asked for, first time
    RECOVERED = "recovered"          # the JSON we asked for, after one retry
    URLS_FROM_TEXT = "urls_from_text"  # no usable JSON after the retry: URLs taken from the text
    REFUSED = "refused"              # the model declined; its words are the answer
    EMPTY = "empty"                  # nothing came back, even after the retry: not audited
    ERROR = "error"                  # the API call failed for good: retried on resume

    @property
    def audited(self) -> bool:
        return self not in (AnswerStatus.EMPTY, AnswerStatus.ERROR)


class AccuracyLabel(str, Enum):
    EXACT_MATCH = "exact_match"
    SUPERSET = "superset"
    MISSING = "missing"
    ERROR = "error"                  # the grader could not decide: excluded from accuracy

    @property
    def correct(self) -> bool | None:
        if self is AccuracyLabel.ERROR:
            return None
        return self is not AccuracyLabel.MISSING


@dataclass(frozen=True)
class Document:
    """A reference document as fetched and stored (``source_id`` points into ``sources``)."""

    pk: int
    ord: int
    location: str                # the URL or file path as given
    source_id: int | None
    title: str | None
    text: str
    valid: bool
    reason: str = ""


@dataclass(frozen=True)
class Question:
    qid: str
    question: str
    reference_answer: str = ""
    question_source: str = QuestionSource.GENERATED.value
    variant: str = "original"
    parent_qid: str | None = None
    document_pk: int | None = None
    document_url: str | None = None
    generator: str = ""              # model spec that wrote it ("" for imported questions)
    prompt_version: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    flags: tuple[str, ...] = ()
    dropped: bool = False
    edited: bool = False
    must_have: tuple[str, ...] = ()      # the expert statements a good answer has (OLAPH)
    nice_to_have: tuple[str, ...] = ()   # and those it may have
    expect: str = ""                     # "answer" or "refuse" (ASTRID's refusal accuracy); "" when not stated
    expect_reason: str = ""              # why to refuse: out_of_scope, no_information, emergency
    directive_kind: str = ""             # an adversarial variant's directive (Almanac), from the template file
    payload: str = ""                    # what following the directive puts in the answer (machine-checked)
    directive_version: str = ""          # the template file's version


@dataclass(frozen=True)
class Answer:
    qid: str
    model: str                       # the model spec asked
    draw: int                        # 0 .. K-1 for best-of-K
    status: AnswerStatus
    text: str = ""
    citations: tuple[str, ...] = ()
    model_version: str = ""
    prompt_version: str = ""
    tokens_in: int = 0
    tokens_out: int = 0
    attempts: int = 0
    raw: str | None = None           # the replies as received when they were not the JSON asked for
    error: str = ""
    flags: tuple[str, ...] = ()

    @property
    def rid(self) -> str:
        """The answer's id in the audit run."""
        return f"{self.qid}|{self.model}|{self.draw}"


@dataclass(frozen=True)
class AccuracyGrade:
    qid: str
    model: str
    draw: int
    label: AccuracyLabel
    rationale: str = ""
    grader: str = ""
    prompt_version: str = ""
    tokens_in: int = 0
    tokens_out: int = 0


# ----------------------------------------------------------------------------- questions JSONL

QUESTION_KEYS = ("id", "question", "reference_answer", "must_have", "nice_to_have", "question_source", "variant",
                 "parent_id", "document_url", "generator", "prompt_version", "flags", "drop", "expect", "reason",
                 "directive_kind", "payload", "directive_version")
EXPECTS = ("answer", "refuse")
REFUSE_REASONS = ("out_of_scope", "no_information", "emergency")


def question_to_json(q: Question) -> dict[str, Any]:
    return {"id": q.qid, "question": q.question, "reference_answer": q.reference_answer,
            "must_have": list(q.must_have), "nice_to_have": list(q.nice_to_have),
            "question_source": q.question_source, "variant": q.variant, "parent_id": q.parent_qid,
            "document_url": q.document_url, "generator": q.generator, "prompt_version": q.prompt_version,
            "flags": list(q.flags), "drop": q.dropped,
            **({"expect": q.expect} if q.expect else {}), **({"reason": q.expect_reason} if q.expect_reason else {}),
            **({"directive_kind": q.directive_kind, "payload": q.payload, "directive_version": q.directive_version}
               if q.directive_kind else {})}


def write_questions(path: str | Path, questions: Iterable[Question]) -> int:
    n = 0
    with open(path, "w", encoding="utf-8") as out:
        for q in questions:
            out.write(json.dumps(question_to_json(q), ensure_ascii=False) + "\n")
            n += 1
    return n


class QuestionFileError(ValueError):
    """A questions file that cannot be read; the message names the line and the problem."""


def read_questions(path: str | Path) -> list[Question]:
    """Questions from JSONL (as written by :func:`write_questions`, possibly edited by hand).

    A line with ``"drop": true`` comes back dropped; a deleted line is simply absent. Only
    ``question`` is required; an id is made up from the line number when missing.
    """
    path = Path(path)
    out: list[Question] = []
    seen: set[str] = set()
    for lineno, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as exc:
            raise QuestionFileError(f"{path.name}:{lineno}: invalid JSON ({exc.msg} at column {exc.colno})") from None
        if not isinstance(obj, dict):
            raise QuestionFileError(f"{path.name}:{lineno}: expected a JSON object")
        out.append(question_from_mapping(obj, f"{path.name}:{lineno}", f"q{lineno}", seen))
    return out


def question_from_mapping(obj: Mapping[str, Any], where: str, default_id: str, seen: set[str]) -> Question:
    text = obj.get("question")
    if not isinstance(text, str) or not text.strip():
        raise QuestionFileError(f"{where}: no 'question' text")
    qid = str(obj.get("id") or default_id).strip()
    if qid in seen:
        raise QuestionFileError(f"{where}: the id '{qid}' is used twice; ids must be unique")
    seen.add(qid)
    ref = obj.get("reference_answer", obj.get("answer", "")) or ""
    flags = obj.get("flags") or []
    try:
        must_have = statement_list(obj.get("must_have"), "'must_have'")
        nice_to_have = statement_list(obj.get("nice_to_have"), "'nice_to_have'")
    except IngestError as exc:
        raise QuestionFileError(f"{where}: {exc}") from None
    expect, reason = str(obj.get("expect") or "").strip(), str(obj.get("reason") or "").strip()
    if expect and expect not in EXPECTS:
        raise QuestionFileError(f"{where}: 'expect' is '{expect}'; write one of {', '.join(EXPECTS)}")
    if reason and (expect != "refuse" or reason not in REFUSE_REASONS):
        raise QuestionFileError(f"{where}: 'reason' goes with \"expect\": \"refuse\" and is one of "
                                f"{', '.join(REFUSE_REASONS)}")
    return Question(qid=qid, question=text.strip(), reference_answer=str(ref).strip(),
                    expect=expect, expect_reason=reason, directive_kind=str(obj.get("directive_kind") or ""),
                    payload=str(obj.get("payload") or ""), directive_version=str(obj.get("directive_version") or ""),
                    question_source=str(obj.get("question_source") or QuestionSource.IMPORTED.value),
                    variant=str(obj.get("variant") or "original"),
                    parent_qid=(str(obj["parent_id"]) if obj.get("parent_id") else None),
                    document_url=(str(obj["document_url"]) if obj.get("document_url") else None),
                    generator=str(obj.get("generator") or ""), prompt_version=str(obj.get("prompt_version") or ""),
                    flags=tuple(str(f) for f in flags) if isinstance(flags, list) else (),
                    dropped=bool(obj.get("drop", False)), must_have=must_have, nice_to_have=nice_to_have)


# ----------------------------------------------------------------------------- answers JSONL

def answer_record(answer: Answer, question: Question) -> dict[str, Any]:
    """The study's answer format plus what the audit groups by; read as is by ``ingest``."""
    return {"id": answer.rid, "question": question.question, "response": answer.text,
            "citations": list(answer.citations), "model": answer.model,
            "question_id": question.qid, "question_source": question.question_source,
            "variant": question.variant, "draw": answer.draw, "answer_status": answer.status.value,
            "model_version": answer.model_version, "prompt_version": answer.prompt_version,
            "tokens_in": answer.tokens_in, "tokens_out": answer.tokens_out,
            **({"reference_answer": question.reference_answer} if question.reference_answer else {}),
            **({"must_have": list(question.must_have)} if question.must_have else {}),
            **({"nice_to_have": list(question.nice_to_have)} if question.nice_to_have else {})}


def write_answers(path: str | Path, answers: Sequence[Answer], questions: Mapping[str, Question]) -> int:
    """Audit-ready JSONL; answers with no text (empty, failed calls) are left out and counted."""
    n = 0
    with open(path, "w", encoding="utf-8") as out:
        for a in answers:
            if not a.status.audited or not a.text.strip():
                continue
            out.write(json.dumps(answer_record(a, questions[a.qid]), ensure_ascii=False) + "\n")
            n += 1
    return n


@dataclass
class Counts:
    """A small tally for progress lines."""

    done: int = 0
    total: int = 0
    failed: int = 0
    by_status: dict[str, int] = field(default_factory=dict)
