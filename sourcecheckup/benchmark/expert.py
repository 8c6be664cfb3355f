"""A question's expert statements (OLAPH's MedLFQA must-have / nice-to-have), written from its reference
document by the question model: ``sourcecheckup questions --expert-statements`` and the benchmark's
``expert_statements`` setting. A question whose statements cannot be had keeps going without them, flagged."""
from __future__ import annotations

from dataclasses import replace
from typing import Any, Mapping, Sequence

from ..llm.client import CallOptions, LLMCallError, LLMClient
from ..llm.replies import ReplyError, Schema
from ..prompts import Prompt, load_prompt
from .records import Document, Question
from .steps import _structured, document_block

EXPERT = "expert-v1"
EXPERT_SCHEMA = Schema("expert_statements", {
    "type": "object",
    "properties": {"must_have": {"type": "array", "items": {"type": "string"}},
                   "nice_to_have": {"type": "array", "items": {"type": "string"}}},
    "required": ["must_have", "nice_to_have"], "additionalProperties": False},
    "Record the must-have and nice-to-have statements.")


def load_expert_prompt(override: str | None = None) -> Prompt:
    return load_prompt(override, default=EXPERT, required=("question", "document"))


def _parse(obj: Mapping[str, Any]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    lists = []
    for key in ("must_have", "nice_to_have"):
        value = obj.get(key, [])
        if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
            raise ReplyError(f'"{key}" must be a list of statements')
        lists.append(tuple(dict.fromkeys(v.strip() for v in value if v.strip())))
    if not lists[0]:
        raise ReplyError('the reply must have at least one "must_have" statement')
    return lists[0], lists[1]


async def with_expert_statements(model: LLMClient, prompt: Prompt, doc: Document, questions: Sequence[Question], *,
                                 options: CallOptions, max_doc_tokens: int = 12_000) -> list[Question]:
    """The questions with their must-have / nice-to-have statements from ``doc``; one that fails is flagged
    ``no_expert_statements`` and kept."""
    out = []
    for q in questions:
        block, boundary, _ = document_block(doc, max_doc_tokens)
        system, user = prompt.render(question=q.question, reference=q.reference_answer or "(none)",
                                     document=block, boundary=boundary)
        try:
            (must, nice), tin, tout, _, _ = await _structured(model, system, user, EXPERT_SCHEMA, options, _parse)
        except (ReplyError, LLMCallError):
            out.append(replace(q, flags=tuple(dict.fromkeys((*q.flags, "no_expert_statements")))))
            continue
        out.append(replace(q, must_have=must, nice_to_have=nice, tokens_in=q.tokens_in + tin,
                           tokens_out=q.tokens_out + tout))
    return out
