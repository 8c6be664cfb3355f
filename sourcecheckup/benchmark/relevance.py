"""Context relevance (ASTRID: Chowdhury et al.): is each source an answer cites relevant to the question asked?

Judged per cited source, not per statement: a source can support a sentence and still be beside the point of
the question. Two judges, each versioned in every stored row:

- ``builtin`` (:data:`RULE_VERSION`): the question read against the page: the share of the question's content
  words (stop words and the words every medical question uses left out, each word matched on its first five
  letters) found in the page; relevant at :data:`THRESHOLD` or more. Its figure on the labelled set
  ``tests/fixtures/relevance/labelled.jsonl`` is stated in docs/benchmark-studies.md.
- an LLM (``resources/prompts/relevance-v1.txt``): a failed call or an unusable reply is a ``judge_error``,
  left out of the figure, never counted not relevant.

Only sources read with text are judged (a dead link is URL validity's business, not relevance's).
"""
from __future__ import annotations

import asyncio
import json
from typing import Any

from ..evidence import tokens
from ..llm.client import CallOptions, LLMCallError, LLMClient
from ..llm.replies import ReplyError, Schema, new_boundary
from ..metrics.studies import NOT_RELEVANT, RELEVANT
from ..prompts import Prompt, load_prompt
from ..store import RunData, Store

RULE_VERSION = "relevance-rule-v1"
RELEVANCE_PROMPT = "relevance-v1"
THRESHOLD = 0.5
MAX_SOURCE_CHARS = 24_000
# words a medical question uses whatever it asks about: they say nothing of its subject
QUESTION_WORDS = frozenset("""
    what which when where who whom whose why how does do did should would could can may might must much many
    long often take taking taken dose doses treatment treat treated patient patients people person adult adults
    recommended recommend usual usually normal best good need needs help safe risk risks cause causes effect
    effects doctor used use using mean means happen happens someone know tell there their them they this that
""".split())

RELEVANCE_SCHEMA = Schema("relevance", {
    "type": "object", "properties": {"relevant": {"type": "boolean"}, "rationale": {"type": "string"}},
    "required": ["relevant", "rationale"], "additionalProperties": False}, "Record whether the page is relevant.")


def _stem(word: str) -> str:
    return word[:5]


def question_terms(question: str) -> set[str]:
    return {_stem(t) for t in tokens(question) if len(t) >= 3 and t not in QUESTION_WORDS and not t.isdigit()}


def builtin_relevance(question: str, page: str) -> tuple[str, float]:
    """(relevant / not_relevant, the share of the question's content words found in the page)."""
    terms = question_terms(question)
    if not terms:
        return NOT_RELEVANT, 0.0
    found = {_stem(t) for t in tokens(page)}
    share = len(terms & found) / len(terms)
    return (RELEVANT if share >= THRESHOLD else NOT_RELEVANT), round(share, 4)


async def llm_relevance(model: LLMClient, prompt: Prompt, question: str, page: str, *,
                        options: CallOptions) -> tuple[str, str]:
    """(relevant / not_relevant / judge_error, rationale)."""
    boundary = new_boundary()
    block = f"BEGIN SOURCE {boundary}\n{page[:MAX_SOURCE_CHARS]}\nEND SOURCE {boundary}"
    system, user = prompt.render(question=question, source=block)
    try:
        reply = await model.complete(system, user, RELEVANCE_SCHEMA, options)
        obj: Any = dict(reply.payload) if reply.payload is not None else json.loads(
            (reply.text or "")[(reply.text or "").find("{"):(reply.text or "").rfind("}") + 1])
        if not isinstance(obj.get("relevant"), bool):
            raise ReplyError('the reply needs "relevant": true or false')
        return (RELEVANT if obj["relevant"] else NOT_RELEVANT), str(obj.get("rationale", ""))[:500]
    except (LLMCallError, ReplyError, ValueError, AttributeError) as exc:
        return "judge_error", f"{type(exc).__name__}: {exc}"[:500]


def pending_pairs(store: Store, data: RunData, judge: str) -> list[tuple[int, str, str, str]]:
    """(response_pk, url, question, page text) of every read cited source of an answer with a question that
    ``judge`` has not judged yet."""
    done = {(r["response_pk"], r["url"]) for r in store.source_relevance_rows(data.run.id) if r["judge"] == judge}
    out = []
    for r in data.responses:
        question = (r.response.question or "").strip()
        if not question:
            continue
        for url in dict.fromkeys(r.response.citations):
            src = data.sources.get(url)
            if src is None or not src.source.valid or not (src.source.text or "").strip():
                continue
            if (r.pk, url) not in done:
                out.append((r.pk, url, question, src.source.text))
    return out


async def judge_relevance(store: Store, run_id: str, *, model: LLMClient | None = None,
                          prompt: Prompt | None = None, options: CallOptions = CallOptions(temperature=0.0),
                          concurrency: int = 8) -> int:
    """Judge every cited source of the run's answers against their questions (the built-in reading, or
    ``model``); stores the rows and returns how many were judged."""
    data = store.load_run(run_id)
    judge = "builtin" if model is None else f"llm:{model.id}"
    todo = pending_pairs(store, data, judge)
    if model is None:
        rows = []
        for pk, url, question, page in todo:
            label, share = builtin_relevance(question, page)
            rows.append({"response_pk": pk, "url": url, "label": label, "judge": judge, "version": RULE_VERSION,
                         "score": share, "rationale": f"{100 * share:.0f}% of the question's content words in the page"})
        store.save_source_relevance(run_id, rows)
        return len(rows)
    prompt = prompt or load_prompt(RELEVANCE_PROMPT, required=("question", "source"))
    slots = asyncio.Semaphore(concurrency)

    async def one(pk: int, url: str, question: str, page: str) -> dict[str, Any]:
        async with slots:
            label, why = await llm_relevance(model, prompt, question, page, options=options)
        return {"response_pk": pk, "url": url, "label": label, "judge": judge, "version": prompt.version,
                "score": None, "rationale": why}

    rows = list(await asyncio.gather(*(one(*t) for t in todo)))
    store.save_source_relevance(run_id, rows)
    return len(rows)


__all__ = ["RELEVANCE_PROMPT", "RULE_VERSION", "THRESHOLD", "builtin_relevance", "judge_relevance",
           "llm_relevance", "question_terms"]
