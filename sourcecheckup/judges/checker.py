"""The checker protocol: ``checker:BASE_URL#MODEL``, a fact-checking model that answers Yes or No.

Bespoke-MiniCheck (``ollama pull bespoke-minicheck``, or served by vLLM) and models trained the
same way read ``Document: {text}\\nClaim: {claim}`` with no system prompt and answer "Yes" when the
document supports the claim. The source is cut into chunks of whole sentences (about 400 words);
every chunk is checked; the pair's score is the highest chunk's probability of "Yes" (from the
first token's logprobs, normalised over Yes and No, where the server returns them; else 1.0 or
0.0 from the answer text); supported when the score reaches the threshold (0.5). The quote is the
sentence of the best chunk that shares most words with the claim, checked against the source
like every quote.

A chunk whose reply says neither Yes nor No, or whose call failed, decides nothing: the pair is
``judge_error`` unless another chunk supports the claim, never ``not_supported``.
"""
from __future__ import annotations

import asyncio
import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

from ..evidence import quote_in_source, source_sentences, tokens
from ..llm import make_client, split_options
from ..llm.client import CallOptions, LLMCallError, LLMClient
from ..llm.pricing import UsageReport
from ..llm.replies import strip_reasoning
from ..llm.spec import parse_checker_spec
from ..models import Label, Verdict
from .api import source_flags
from .base import BaseJudge, JudgeSpecError, SourceText

PROMPT_VERSION = "minicheck-v1"
CHUNK_WORDS = 400
THRESHOLD = 0.5
TOP_LOGPROBS = 5


# the system prompt Bespoke-MiniCheck-7B was trained with (MiniCheck's inference code, Ollama's Modelfile)
SYSTEM_PROMPT = ("Determine whether the provided claim is consistent with the corresponding document. "
                 "Consistency in this context implies that all information presented in the claim is "
                 "substantiated by the document. If not, it should be considered inconsistent. Please assess "
                 "the claim's consistency with the document by responding with either \"Yes\" or \"No\".")


def document_prompt(chunk: str, claim: str) -> str:
    """The user message a MiniCheck model reads."""
    return f"Document: {chunk}\nClaim: {claim}"


def chunk_sentences(text: str, words: int = CHUNK_WORDS) -> list[list[str]]:
    """The source as chunks of whole sentences, each about ``words`` words (a longer sentence alone)."""
    chunks: list[list[str]] = []
    current: list[str] = []
    count = 0
    for sentence in source_sentences(text):
        n = len(sentence.split())
        if current and count + n > words:
            chunks.append(current)
            current, count = [], 0
        current.append(sentence)
        count += n
    if current:
        chunks.append(current)
    return chunks


class ChunkError(ValueError):
    """A chunk whose reply carries no Yes/No answer."""


def _answer_word(token: str) -> str:
    return re.sub(r"[^a-z]", "", token.lower())


def yes_probability(text: str | None, logprobs: Sequence[tuple[str, float]] | None) -> tuple[float, bool]:
    """(P(Yes), whether it came from logprobs): the first token's Yes/No mass normalised over the two,
    else 1.0 or 0.0 from the answer text; raises :class:`ChunkError` when the reply answers neither."""
    if logprobs:
        yes = sum(math.exp(lp) for token, lp in logprobs if _answer_word(token) == "yes")
        no = sum(math.exp(lp) for token, lp in logprobs if _answer_word(token) == "no")
        if yes + no > 0:
            return yes / (yes + no), True
    answer = re.match(r"^\W*(yes|no)\b", strip_reasoning(text or ""), re.I)
    if answer is None:
        shown = " ".join((text or "").split())[:120]
        raise ChunkError(f"the checker answered neither Yes nor No: {shown!r}" if shown
                         else "the checker's reply was empty")
    return (1.0 if answer.group(1).lower() == "yes" else 0.0), False


def best_sentence(sentences: Sequence[str], claim: str) -> str:
    """The sentence sharing most words with the claim (the earliest on a tie)."""
    wanted = set(tokens(claim))
    best, best_score = "", -1.0
    for sentence in sentences:
        have = set(tokens(sentence))
        score = len(have & wanted) / (len(wanted) or 1)
        if score > best_score:
            best, best_score = sentence, score
    return best


@dataclass(frozen=True)
class ChunkResult:
    index: int
    probability: float | None = None
    from_logprobs: bool = False
    error: str | None = None
    raw: str | None = None
    model: str = ""
    tokens_in: int = 0
    tokens_out: int = 0


class CheckerJudge(BaseJudge):
    """A Yes/No fact-checking model over an OpenAI-compatible client, chunk by chunk."""

    kind = "checker"
    prompt_version = PROMPT_VERSION

    def __init__(self, client: LLMClient, spec: str, *, chunk_words: int = CHUNK_WORDS,
                 threshold: float = THRESHOLD, max_output_tokens: int = 8):
        self.client = client
        self.id = spec
        self.concurrency = client.settings.concurrency
        self.chunk_words = chunk_words
        self.threshold = threshold
        self.max_output_tokens = max_output_tokens

    def usage(self) -> UsageReport:
        return self.client.usage()

    def provenance(self) -> dict[str, Any]:
        """What shapes this judge's verdicts, stored with a run: sampling, token limit, chunking (no key)."""
        return {"kind": "checker", "model": self.client.settings.model, "temperature": 0,
                "seed": self.client.settings.seed, "max_output_tokens": self.max_output_tokens,
                "chunk_words": self.chunk_words, "threshold": self.threshold,
                "settings": self.client.settings.describe()}

    async def _check(self, index: int, chunk: Sequence[str], claim: str) -> ChunkResult:
        options = CallOptions(temperature=0, seed=self.client.settings.seed, max_tokens=self.max_output_tokens,
                              structured=False, top_logprobs=TOP_LOGPROBS)
        try:
            reply = await self.client.complete(SYSTEM_PROMPT, document_prompt(" ".join(chunk), claim), None, options)
        except LLMCallError as exc:
            return ChunkResult(index, error=str(exc))
        try:
            probability, from_logprobs = yes_probability(reply.text, reply.first_token_logprobs)
        except ChunkError as exc:
            return ChunkResult(index, error=str(exc), raw=reply.text, model=reply.model,
                               tokens_in=reply.tokens_in, tokens_out=reply.tokens_out)
        return ChunkResult(index, probability, from_logprobs, model=reply.model,
                           tokens_in=reply.tokens_in, tokens_out=reply.tokens_out)

    async def verify(self, statement: str, source: SourceText) -> Verdict:
        chunks = chunk_sentences(source.text, self.chunk_words)
        if not chunks:
            return Verdict.error(self.id, "the source has no text to judge", prompt_version=self.prompt_version)
        flags = tuple(source_flags(source))
        results = await asyncio.gather(*(self._check(i, c, statement) for i, c in enumerate(chunks)))
        used = dict(tokens_in=sum(r.tokens_in for r in results) or None,
                    tokens_out=sum(r.tokens_out for r in results) or None,
                    model_version=next((r.model for r in results if r.model), ""))
        answered = [r for r in results if r.probability is not None]
        failed = [r for r in results if r.error is not None]
        best = max(answered, key=lambda r: r.probability or 0.0, default=None)
        where = f"{{}} of {len(chunks)}"
        if best is not None and (best.probability or 0.0) >= self.threshold:
            quote = best_sentence(chunks[best.index], statement)
            how = "" if best.from_logprobs else " (from the answer text: the server sent no logprobs)"
            rationale = (f"Chunk {where.format(best.index + 1)} of the source supports the claim: "
                         f"P(Yes) = {best.probability:.2f}{how}.")
            return Verdict(label=Label.SUPPORTED, score=best.probability or 0.0, rationale=rationale,
                           quote=quote, quote_found=quote_in_source(quote, source.text) if quote else None,
                           judge_id=self.id, prompt_version=self.prompt_version, flags=flags, **used)
        if failed:
            first = failed[0]
            message = (f"{len(failed)} of {len(chunks)} chunk(s) of the source got no Yes/No answer "
                       f"(chunk {first.index + 1}: {first.error}); no other chunk supports the claim")
            raws = "\n---\n".join(r.raw for r in failed if r.raw) or None
            return Verdict.error(self.id, self.client.redact(message) or "", raw=self.client.redact(raws),
                                 prompt_version=self.prompt_version, flags=flags, **used)
        assert best is not None
        rationale = (f"No chunk of the source supports the claim: the highest P(Yes) is "
                     f"{best.probability:.2f} (chunk {where.format(best.index + 1)}).")
        return Verdict(label=Label.NOT_SUPPORTED, score=best.probability or 0.0, rationale=rationale,
                       judge_id=self.id, prompt_version=self.prompt_version, flags=flags, **used)

    async def aclose(self) -> None:
        await self.client.aclose()


def from_spec(arg: str, **options: Any) -> CheckerJudge:
    """``checker:BASE_URL#MODEL``, e.g. ``checker:http://127.0.0.1:11434/v1#bespoke-minicheck``."""
    parsed = parse_checker_spec(f"checker:{arg}")
    client_options, own = split_options(options)
    chunk_words = int(own.get("chunk_words") or CHUNK_WORDS)
    threshold = float(own.get("checker_threshold") if own.get("checker_threshold") is not None else THRESHOLD)
    if chunk_words < 20 or not 0.0 < threshold <= 1.0:
        raise JudgeSpecError("chunk_words must be >= 20 and checker_threshold between 0 and 1")
    client = make_client(f"openai-compatible:{parsed.base_url}#{parsed.model}", **client_options)
    return CheckerJudge(client, f"checker:{parsed.base_url}#{parsed.model}", chunk_words=chunk_words,
                        threshold=threshold)
