"""The model calls of a benchmark: write questions, rewrite them, answer them, grade the answers.

Each step is one function over an :class:`~sourcecheckup.llm.client.LLMClient` that returns a record and never
raises for a bad reply: an unusable reply gets one retry, and what still fails is recorded as
what it is (an empty answer, URLs taken from the text, a grader error).
"""
from __future__ import annotations

import asyncio
import random
import re
from dataclasses import dataclass, replace
from typing import Any, Mapping, TypedDict

from ..evidence import approx_tokens
from ..llm.client import CallOptions, LLMCallError, LLMClient, Reply
from ..llm.replies import ReplyError, Schema, extract_json_object, new_boundary
from ..prompts import Prompt, load_prompt
from ..urls import dedupe, find_urls, normalise_url
from .records import AccuracyGrade, AccuracyLabel, Answer, AnswerStatus, Document, Question, QuestionSource

QUESTIONER, PERTURBER, ANSWERER, ACCURACY = "questioner-v1", "perturber-v1", "answerer-v1", "accuracy-v1"
DEMOGRAPHIC_VERSION = "demographic-prefix-v1"

QUESTIONS_SCHEMA = Schema("questions", {
    "type": "object",
    "properties": {"questions": {"type": "array", "items": {
        "type": "object", "properties": {"question": {"type": "string"}, "answer": {"type": "string"}},
        "required": ["question", "answer"], "additionalProperties": False}}},
    "required": ["questions"], "additionalProperties": False}, "Record the questions and their answers.")
QUESTION_SCHEMA = Schema("question", {
    "type": "object", "properties": {"question": {"type": "string"}},
    "required": ["question"], "additionalProperties": False}, "Record the rewritten question.")
ANSWER_SCHEMA = Schema("answer", {
    "type": "object",
    "properties": {"response": {"type": "string"}, "citations": {"type": "array", "items": {"type": "string"}}},
    "required": ["response", "citations"], "additionalProperties": False},
    "Record the answer and the URLs it cites.")
GRADE_SCHEMA = Schema("grade", {
    "type": "object",
    "properties": {"label": {"type": "string", "enum": ["exact_match", "superset", "missing"]},
                   "rationale": {"type": "string"}},
    "required": ["label", "rationale"], "additionalProperties": False}, "Record the accuracy grade.")

# What each rewriting style asks for; the prompt file describes the styles, this names one.
VARIANT_INSTRUCTIONS: dict[str, str] = {
    "lay": "Rewrite it as a patient without medical training would ask it.",
    "comorbidities": "Add one or two common medical conditions that have no bearing on the answer.",
    "rephrase": "Rephrase it heavily, with synonyms and a different sentence structure.",
    "terse": "Rewrite it as a busy clinician would type it: as few words as possible.",
}
VARIANTS = ("lay", "demographic", "comorbidities", "rephrase", "terse")

_AGES = range(19, 86)
_SEXES = ("man", "woman")
_ORIGINS = ("White", "Black", "Hispanic", "Asian", "South Asian", "Middle Eastern", "Native American",
            "Pacific Islander", "mixed-race")
_MENTIONS_DOCUMENT = re.compile(r"\b(the|this|that)\s+(document|article|text|passage|source|page|report|"
                                r"excerpt)\b", re.I)


class VariantError(ValueError):
    """An unknown variant name."""


def check_variants(names: tuple[str, ...] | list[str]) -> tuple[str, ...]:
    bad = [n for n in names if n not in VARIANTS]
    if bad:
        raise VariantError(f"unknown variant(s) {', '.join(bad)}: choose from {', '.join(VARIANTS)}")
    return tuple(dict.fromkeys(names))


@dataclass(frozen=True)
class Prompts:
    questioner: Prompt
    perturber: Prompt
    answerer: Prompt
    accuracy: Prompt

    @classmethod
    def load(cls, overrides: Mapping[str, str] | None = None) -> "Prompts":
        o = dict(overrides or {})
        return cls(questioner=load_prompt(o.get("questioner"), default=QUESTIONER, required=("document", "count")),
                   perturber=load_prompt(o.get("perturber"), default=PERTURBER, required=("question",)),
                   answerer=load_prompt(o.get("answerer"), default=ANSWERER, required=("question",)),
                   accuracy=load_prompt(o.get("accuracy"), default=ACCURACY,
                                        required=("question", "reference", "answer")))

    def versions(self) -> dict[str, str]:
        return {k: getattr(self, k).version for k in ("questioner", "perturber", "answerer", "accuracy")}


def _object(c: Reply) -> dict[str, Any]:
    if c.payload is not None:
        return dict(c.payload)
    return extract_json_object(c.text or "")


async def _structured(model: LLMClient, system: str, user: str, schema: Schema, options: CallOptions,
                      parse: Any) -> tuple[Any, int, int, str, list[str]]:
    """(parsed, tokens_in, tokens_out, model_version, raws): one retry on an unusable reply."""
    tin = tout = 0
    raws: list[str] = []
    version = ""
    problem = ""
    for _ in range(2):
        c = await model.complete(system, user, schema, options)
        tin, tout, version = tin + c.tokens_in, tout + c.tokens_out, c.model
        raws.append(c.text or c.refusal or "")
        if c.refusal:
            raise ReplyError(f"the model refused: {c.refusal}")
        try:
            return parse(_object(c)), tin, tout, version, raws
        except ReplyError as exc:
            problem = exc.problem
    raise ReplyError(f"{problem} (after one retry); replies: {' | '.join(r[:300] for r in raws)}")


# ----------------------------------------------------------------------------- questions

def document_block(doc: Document, max_tokens: int) -> tuple[str, str, bool]:
    """(block, boundary, truncated): the document delimited as data, cut to ``max_tokens``."""
    text = doc.text
    truncated = approx_tokens(text) > max_tokens
    if truncated:
        text = text[: max_tokens * 4]
    boundary = new_boundary()
    head = [f"Title: {doc.title}"] if doc.title else []
    body = "\n".join(head + ([""] if head else []) + [text])
    return f"BEGIN DOCUMENT {boundary}\n{body}\nEND DOCUMENT {boundary}", boundary, truncated


def _parse_questions(obj: Mapping[str, Any]) -> list[tuple[str, str]]:
    items = obj.get("questions")
    if items is None and isinstance(obj.get("question"), str):
        items = [obj]   # one question without the list around it
    if not isinstance(items, list) or not items:
        raise ReplyError('the reply must have a non-empty "questions" list')
    out = []
    for item in items:
        if not isinstance(item, Mapping) or not isinstance(item.get("question"), str) \
                or not item["question"].strip():
            raise ReplyError('every entry of "questions" needs a "question" text')
        answer = item.get("answer", "")
        out.append((item["question"].strip(), str(answer or "").strip()))
    return out


async def generate_questions(model: LLMClient, prompts: Prompts, doc: Document, count: int, *,
                             qid_prefix: str, options: CallOptions, max_doc_tokens: int = 12_000
                             ) -> list[Question]:
    """``count`` questions (with their short answers) from one document; raises ReplyError or
    LLMCallError when none can be had."""
    block, boundary, truncated = document_block(doc, max_doc_tokens)
    system, user = prompts.questioner.render(document=block, boundary=boundary, count=str(count))
    pairs, tin, tout, _, _ = await _structured(model, system, user, QUESTIONS_SCHEMA, options, _parse_questions)
    pairs = pairs[:count]
    out = []
    for n, (text, answer) in enumerate(pairs, 1):
        flags = []
        if _MENTIONS_DOCUMENT.search(text):
            flags.append("mentions_document")   # the prompt forbids it; a reviewer should look
        if truncated:
            flags.append("document_truncated")
        if not answer:
            flags.append("no_reference_answer")
        out.append(Question(qid=f"{qid_prefix}-q{n}", question=text, reference_answer=answer,
                            question_source=QuestionSource.GENERATED.value, variant="original",
                            document_pk=doc.pk, document_url=doc.location, generator=model.id,
                            prompt_version=prompts.questioner.version,
                            tokens_in=tin // len(pairs), tokens_out=tout // len(pairs), flags=tuple(flags)))
    return out


def demographic_prefix(rng: random.Random) -> str:
    sex = rng.choice(_SEXES)
    return f"I am a {rng.choice(_AGES)}-year-old {rng.choice(_ORIGINS)} {sex}."


async def make_variant(model: LLMClient | None, prompts: Prompts, original: Question, variant: str, *,
                       options: CallOptions, seed: int = 0) -> Question:
    """One rewritten form of ``original``; the demographic prefix is drawn in code (seeded)."""
    base = Question(qid=f"{original.qid}-{variant}", question="", reference_answer=original.reference_answer,
                    must_have=original.must_have, nice_to_have=original.nice_to_have,
                    question_source=original.question_source, variant=variant, parent_qid=original.qid,
                    document_pk=original.document_pk, document_url=original.document_url, expect=original.expect,
                    expect_reason=original.expect_reason)
    if variant == "demographic":
        rng = random.Random(f"{seed}:{original.qid}")
        return replace(base, question=f"{demographic_prefix(rng)} {original.question}", generator="",
                       prompt_version=DEMOGRAPHIC_VERSION)
    if variant not in VARIANT_INSTRUCTIONS:
        raise VariantError(f"unknown variant {variant!r}: choose from {', '.join(VARIANTS)}")
    if model is None:
        raise ValueError(f"the {variant} variant needs a model to rewrite questions")

    def parse(obj: Mapping[str, Any]) -> str:
        text = obj.get("question")
        if not isinstance(text, str) or not text.strip():
            raise ReplyError('the reply needs a "question" text')
        return text.strip()

    system, user = prompts.perturber.render(question=original.question, style=variant,
                                            instruction=VARIANT_INSTRUCTIONS[variant])
    text, tin, tout, _, _ = await _structured(model, system, user, QUESTION_SCHEMA, options, parse)
    return replace(base, question=text, generator=model.id, prompt_version=prompts.perturber.version,
                   tokens_in=tin, tokens_out=tout)


# ----------------------------------------------------------------------------- answers

def _citations(value: Any) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str):
        value = [u for u, _, _ in find_urls(value)] or [value]
    if not isinstance(value, list):
        raise ReplyError('"citations" must be a list of URLs')
    out = []
    for item in value:
        if isinstance(item, Mapping):
            item = next((item[k] for k in ("url", "href", "link") if isinstance(item.get(k), str)), None)
        if isinstance(item, str):
            url = normalise_url(item)
            if url:
                out.append(url)
    return out


def parse_answer(obj: Mapping[str, Any]) -> tuple[str, list[str]]:
    """(response text, cited URLs) from the answerer's JSON; raises ReplyError when unusable."""
    text = next((obj[k] for k in ("response", "answer", "text") if k in obj), None)
    if not isinstance(text, str) or not text.strip():
        raise ReplyError('the reply needs a non-empty "response" text')
    return text.strip(), _citations(obj.get("citations"))


class _Calls(TypedDict):
    """What an answer records of the calls that made it."""

    model_version: str
    prompt_version: str
    tokens_in: int
    tokens_out: int
    attempts: int


async def answer_question(model: LLMClient, prompts: Prompts, question: Question, *, draw: int,
                          options: CallOptions) -> Answer:
    """One answer, as the study took them: retry once on an empty or non-JSON reply, then use
    the text and the URLs written in it. Never raises for the model's behaviour."""
    system, user = prompts.answerer.render(question=question.question)
    if options.seed is not None:
        options = replace(options, seed=options.seed + draw)   # K draws must be K samples
    tin = tout = attempts = 0
    version = ""
    replies: list[str] = []
    flags: list[str] = []
    for attempt in range(2):
        try:
            c = await model.complete(system, user, ANSWER_SCHEMA, options)
        except LLMCallError as exc:
            return Answer(question.qid, model.id, draw, AnswerStatus.ERROR, prompt_version=prompts.answerer.version,
                          tokens_in=tin, tokens_out=tout, attempts=attempts + 1, error=str(exc),
                          raw="\n--- retry ---\n".join(replies) or None)
        attempts += 1
        tin, tout, version = tin + c.tokens_in, tout + c.tokens_out, c.model
        common = _Calls(model_version=version, prompt_version=prompts.answerer.version, tokens_in=tin,
                        tokens_out=tout, attempts=attempts)
        if c.refusal:
            return Answer(question.qid, model.id, draw, AnswerStatus.REFUSED, text=c.refusal, **common)
        replies.append(c.text or "")
        try:
            text, cited = parse_answer(_object(c))
        except ReplyError:
            continue
        if not cited:
            cited = dedupe(u for u, _, _ in find_urls(text))
            if cited:
                flags.append("urls_from_text")
        status = AnswerStatus.OK if attempt == 0 else AnswerStatus.RECOVERED
        raw = "\n--- retry ---\n".join(replies[:-1]) or None
        return Answer(question.qid, model.id, draw, status, text=text, citations=tuple(dedupe(cited)),
                      raw=raw, flags=tuple(flags), **common)
    common = _Calls(model_version=version, prompt_version=prompts.answerer.version, tokens_in=tin,
                    tokens_out=tout, attempts=attempts)
    raw = "\n--- retry ---\n".join(replies)
    text = next((r.strip() for r in reversed(replies) if r.strip()), "")
    if not text:
        return Answer(question.qid, model.id, draw, AnswerStatus.EMPTY,
                      error="the model returned an empty reply twice", raw=raw, **common)
    cited = dedupe(u for u, _, _ in find_urls(text))
    return Answer(question.qid, model.id, draw, AnswerStatus.URLS_FROM_TEXT, text=text, citations=tuple(cited),
                  flags=("not_json",), raw=raw, **common)


# ----------------------------------------------------------------------------- accuracy

def _parse_grade(obj: Mapping[str, Any]) -> tuple[AccuracyLabel, str]:
    label = str(obj.get("label", "")).strip().lower().replace(" ", "_").replace("-", "_")
    try:
        parsed = AccuracyLabel(label)
    except ValueError:
        parsed = None
    if parsed is None or parsed is AccuracyLabel.ERROR:
        raise ReplyError(f'"label" must be exact_match, superset or missing, got {obj.get("label")!r}')
    return parsed, str(obj.get("rationale", "") or "").strip()


async def grade_accuracy(model: LLMClient, prompts: Prompts, question: Question, answer: Answer, *,
                         options: CallOptions) -> AccuracyGrade:
    """exact_match / superset / missing against the document's own answer; ``error`` when undecided."""
    # an error until the grader decides
    base = AccuracyGrade(qid=answer.qid, model=answer.model, draw=answer.draw, label=AccuracyLabel.ERROR,
                         grader=model.id, prompt_version=prompts.accuracy.version)
    system, user = prompts.accuracy.render(question=question.question, reference=question.reference_answer,
                                           answer=answer.text)
    try:
        (label, rationale), tin, tout, _, _ = await _structured(model, system, user, GRADE_SCHEMA, options,
                                                                _parse_grade)
    except (ReplyError, LLMCallError) as exc:
        return replace(base, rationale=str(exc)[:500])
    except asyncio.CancelledError:
        raise
    return replace(base, label=label, rationale=rationale, tokens_in=tin, tokens_out=tout)
