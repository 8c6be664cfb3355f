"""The checker protocol: ``checker:BASE_URL#MODEL``, a fact-checking model that answers Yes or No.

Bespoke-MiniCheck-7B (``ollama pull bespoke-minicheck``, or served by vLLM or llama.cpp) is run as
its authors run it (MiniCheck, ``minicheck/inference.py``, ``LLMCheck``):

- the source is cut into sentences, line by line, and the sentences are gathered into chunks of at
  most ``chunk_size`` tokens counted with the model's tokenizer, where ``chunk_size`` is the model's
  context less 300 tokens kept for the claim, so a page that fits is read whole; here the context
  is the one the server reports (llama.cpp ``/props``, vLLM ``/v1/models``, Ollama ``/api/show``)
  and tokens are counted by the server's ``/tokenize`` (else estimated at 3 characters a token);
- each chunk is asked ``Document: {chunk}\\nClaim: {sentence}`` under the authors' system prompt,
  one token at temperature 0 with 5 top logprobs, once per sentence of the claim;
- P(support) of a reply is the sum of the probabilities of the top tokens whose text is "yes" in
  any case; a sentence's score is its best chunk's, the claim's is its weakest sentence's
  (SentenceFusion); supported when the score is above 0.5.

Where this differs from the authors, the verdict says so: sentences are split by the project's
splitter (the authors use NLTK's punkt), and a server that reports no context is given 8,192 tokens.
Garbage never becomes a verdict: the logprobs count only when the sampled token is Yes/No or Yes
and No hold most of the first token's probability; else the reply's text decides; else the chunk
decides nothing. A chunk the server read shorter than it was sent (a silent truncation) decides
nothing either. A pair is ``judge_error`` when what is left cannot decide it, never
``not_supported``.
"""
from __future__ import annotations

import asyncio
import math
import re
from dataclasses import dataclass
from typing import Any, Sequence

from ..evidence import quote_in_source, source_sentences, tokens
from ..llm import make_client, split_options
from ..llm.client import CallOptions, LLMCallError, LLMClient, Reply
from ..llm.pricing import UsageReport
from ..llm.replies import strip_reasoning
from ..llm.server_limits import count_tokens
from ..llm.spec import parse_checker_spec
from ..models import Label, Verdict
from .api import source_flags
from .base import BaseJudge, JudgeSpecError, SourceText

PROMPT_VERSION = "minicheck-v2"
CLAIM_RESERVE = 300        # the authors keep 300 tokens of the context for the claim and the template
THRESHOLD = 0.5
TOP_LOGPROBS = 5

# the system prompt Bespoke-MiniCheck-7B was trained with (MiniCheck's minicheck/utils.py, Ollama's Modelfile)
SYSTEM_PROMPT = ("Determine whether the provided claim is consistent with the corresponding document. "
                 "Consistency in this context implies that all information presented in the claim is "
                 "substantiated by the document. If not, it should be considered inconsistent. Please assess "
                 "the claim's consistency with the document by responding with either \"Yes\" or \"No\".")


def document_prompt(chunk: str, claim: str) -> str:
    """The user message a MiniCheck model reads."""
    return f"Document: {chunk}\nClaim: {claim}"


def sentences_with_newlines(text: str) -> list[str]:
    """The source's sentences line by line, with "\\n" between lines (the authors' sent_tokenize_with_newlines)."""
    out: list[str] = []
    for block in text.split("\n"):
        out.extend(source_sentences(block))
        out.append("\n")
    return out[:-1]


def gather_chunks(sentences: Sequence[str], counts: Sequence[int], chunk_size: int) -> list[list[str]]:
    """Sentences gathered into chunks of at most ``chunk_size`` tokens, as the authors gather them
    (a sentence longer than a chunk alone makes a chunk of its own)."""
    chunks: list[list[str]] = []
    current: list[str] = []
    count = 0
    for sentence, n in zip(sentences, counts):
        if count + n > chunk_size:
            chunks.append(current)
            current, count = [sentence], n
        else:
            current.append(sentence)
            count += n
    if current:
        chunks.append(current)
    return chunks


def chunk_text(sentences: Sequence[str]) -> str:
    """A chunk as the model reads it: ``' '.join`` with the line breaks mended, as the authors write it."""
    return " ".join(sentences).replace(" \n ", "\n").strip()


def estimate_tokens(text: str) -> int:
    """A cautious token count where the server has no tokenizer to ask (3 characters a token)."""
    return max(1, math.ceil(len(text) / 3))


class ChunkError(ValueError):
    """A chunk whose reply carries no Yes/No answer."""


def _answer_word(token: str) -> str:
    return re.sub(r"[^a-z]", "", token.lower())


def support_probability(text: str | None, logprobs: Sequence[tuple[str, float]] | None,
                        first_token: str | None = None) -> tuple[float, bool]:
    """(P(support), whether it came from logprobs).

    From logprobs (the authors' sum of the top tokens whose text is "yes" in any case) only when the
    sampled token is Yes or No, or Yes and No hold most of the first token's probability; else 1.0 or
    0.0 from the reply's text; raises :class:`ChunkError` when the reply answers neither.
    """
    if logprobs:
        sampled = first_token if first_token is not None else max(logprobs, key=lambda t: t[1])[0]
        answer_mass = sum(math.exp(lp) for token, lp in logprobs if _answer_word(token) in ("yes", "no"))
        if _answer_word(sampled) in ("yes", "no") or answer_mass > 0.5:
            return sum(math.exp(lp) for token, lp in logprobs if token.lower() == "yes"), True
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
        if not sentence.strip():
            continue
        have = set(tokens(sentence))
        score = len(have & wanted) / (len(wanted) or 1)
        if score > best_score:
            best, best_score = sentence, score
    return best


@dataclass(frozen=True)
class Chunks:
    """A source cut for one chunk size: the chunks' sentences and texts, and how they were sized."""

    sentences: list[list[str]]
    texts: list[str]
    tokens: list[int | None]      # each chunk's tokens by the server's tokenizer (None: estimated)
    chunk_size: int
    context: int
    context_reported: bool
    exact: bool                   # token counts from the server's tokenizer


@dataclass(frozen=True)
class Answer:
    chunk: int
    sentence: int
    probability: float | None = None
    from_logprobs: bool = False
    error: str | None = None
    raw: str | None = None
    model: str = ""
    tokens_in: int = 0
    tokens_out: int = 0


class CheckerJudge(BaseJudge):
    """A Yes/No fact-checking model over an OpenAI-compatible client, read as MiniCheck's authors read it."""

    kind = "checker"
    prompt_version = PROMPT_VERSION

    def __init__(self, client: LLMClient, spec: str, *, threshold: float = THRESHOLD,
                 chunk_tokens: int | None = None):
        self.client = client
        self.id = spec
        self.concurrency = client.settings.concurrency
        self.threshold = threshold
        self.chunk_tokens = chunk_tokens      # a chunk size the user chose (else the served context less 300)

    def usage(self) -> UsageReport:
        return self.client.usage()

    def provenance(self) -> dict[str, Any]:
        """What shapes this judge's verdicts, stored with a run: sampling, token limit, chunking (no key)."""
        return {"kind": "checker", "model": self.client.settings.model, "temperature": 0,
                "seed": self.client.settings.seed, "max_output_tokens": 1, "top_logprobs": TOP_LOGPROBS,
                "chunk_tokens": self.chunk_tokens, "threshold": self.threshold,
                "settings": self.client.settings.describe()}

    async def load(self) -> None:
        await self.client.server_limits()

    async def _count(self, texts: list[str]) -> tuple[list[int], bool]:
        limits = await self.client.server_limits()
        exact = await count_tokens(self.client.settings.base_url or "", self.client.settings.model, texts,
                                   limits.tokenizer, getattr(self.client, "_api_key", None))
        if exact is not None:
            return exact, True
        return [estimate_tokens(t) if t.strip() else 1 for t in texts], False

    async def chunks(self, text: str) -> Chunks:
        """The source's chunks for the served context (the authors' chunking)."""
        limits = await self.client.server_limits()
        context = self.client.context_tokens
        chunk_size = self.chunk_tokens or max(50, context - CLAIM_RESERVE)
        sentences = sentences_with_newlines(text) or [""]
        whole, exact = await self._count([text])
        if whole[0] <= chunk_size * 0.9:      # fits with room to spare: one chunk, without counting each sentence
            groups = [sentences]
        else:
            counts, exact = await self._count(sentences)
            groups = gather_chunks(sentences, counts, chunk_size)
        kept = [(g, chunk_text(g)) for g in groups]
        kept = [(g, t) for g, t in kept if t] or [([""], "")]
        texts = [t for _, t in kept]
        sizes: list[int | None] = list((await self._count(texts))[0]) if exact else [None] * len(texts)
        return Chunks([g for g, _ in kept], texts, sizes, chunk_size, context,
                      bool(limits.context_tokens), exact)

    async def _source_chunks(self, source: SourceText) -> Chunks:
        key = ("checker_chunks", self.chunk_tokens, self.client.context_tokens)
        cache: dict[Any, Any] = source.cache   # declared dict[str, Any]; this judge keys it by a tuple
        task = cache.get(key)
        if task is None:
            task = asyncio.ensure_future(self.chunks(source.text))
            cache[key] = task
        return await task

    async def _ask(self, chunks: Chunks, index: int, sentence_index: int, sentence: str) -> Answer:
        options = CallOptions(temperature=0, seed=self.client.settings.seed, max_tokens=1,
                              structured=False, top_logprobs=TOP_LOGPROBS)
        where: dict[str, Any] = dict(chunk=index, sentence=sentence_index)
        try:
            reply = await self.client.complete(SYSTEM_PROMPT, document_prompt(chunks.texts[index], sentence),
                                               None, options)
        except LLMCallError as exc:
            return Answer(**where, error=str(exc))
        used: dict[str, Any] = dict(raw=reply.text, model=reply.model, tokens_in=reply.tokens_in,
                                    tokens_out=reply.tokens_out)
        cut = _truncated(reply, chunks, index)
        if cut:
            return Answer(**where, error=cut, **used)
        try:
            probability, from_logprobs = support_probability(reply.text, reply.first_token_logprobs,
                                                             reply.first_token)
        except ChunkError as exc:
            return Answer(**where, error=str(exc), **used)
        return Answer(**where, probability=probability, from_logprobs=from_logprobs, **used)

    async def verify(self, statement: str, source: SourceText) -> Verdict:
        if not source.text.strip():
            return Verdict.error(self.id, "the source has no text to judge", prompt_version=self.prompt_version)
        chunks = await self._source_chunks(source)
        claims = source_sentences(statement) or [statement]
        flags = tuple(source_flags(source))
        answers = await asyncio.gather(*(self._ask(chunks, c, s, claim) for c in range(len(chunks.texts))
                                         for s, claim in enumerate(claims)))
        used: dict[str, Any] = dict(tokens_in=sum(a.tokens_in for a in answers) or None,
                                    tokens_out=sum(a.tokens_out for a in answers) or None,
                                    model_version=next((a.model for a in answers if a.model), ""))
        how = self._how_read(chunks)
        best: list[Answer | None] = []          # each claim sentence's best chunk
        undecided: list[int] = []
        for s in range(len(claims)):
            mine = [a for a in answers if a.sentence == s]
            top = max((a for a in mine if a.probability is not None), key=lambda a: a.probability or 0.0,
                      default=None)
            best.append(top)
            if any(a.error for a in mine) and (top is None or (top.probability or 0.0) <= self.threshold):
                undecided.append(s)
        decided = [(s, b) for s, b in enumerate(best) if s not in undecided and b is not None]
        weakest = min(decided, key=lambda sb: sb[1].probability or 0.0, default=None)
        if weakest is not None and (weakest[1].probability or 0.0) <= self.threshold:
            _, answer = weakest
            rationale = (f"No chunk supports the claim{_sentence(weakest[0], claims)}: the highest P(support) is "
                         f"{answer.probability:.2f} (chunk {answer.chunk + 1} of {len(chunks.texts)}). {how}")
            return Verdict(label=Label.NOT_SUPPORTED, score=answer.probability or 0.0, rationale=rationale,
                           judge_id=self.id, prompt_version=self.prompt_version, flags=flags, **used)
        if undecided:
            failed = [a for a in answers if a.error]
            first = failed[0]
            message = (f"{len(failed)} of {len(answers)} check(s) of the source got no usable Yes/No answer "
                       f"(chunk {first.chunk + 1} of {len(chunks.texts)}: {first.error}); the rest do not "
                       f"decide the claim. {how}")
            raws = "\n---\n".join(a.raw for a in failed if a.raw) or None
            return Verdict.error(self.id, self.client.redact(message) or "", raw=self.client.redact(raws),
                                 prompt_version=self.prompt_version, flags=flags, **used)
        assert weakest is not None
        answer = weakest[1]
        quote = best_sentence(chunks.sentences[(best[0] or answer).chunk], statement)
        text_note = "" if answer.from_logprobs else " (from the answer text: the server sent no usable logprobs)"
        rationale = (f"Chunk {answer.chunk + 1} of {len(chunks.texts)} supports the claim: P(support) = "
                     f"{answer.probability:.2f}{text_note}. {how}")
        return Verdict(label=Label.SUPPORTED, score=answer.probability or 0.0, rationale=rationale,
                       quote=quote, quote_found=quote_in_source(quote, source.text) if quote else None,
                       judge_id=self.id, prompt_version=self.prompt_version, flags=flags, **used)

    def _how_read(self, chunks: Chunks) -> str:
        n = len(chunks.texts)
        read = "read whole" if n == 1 else f"read in {n} chunks"
        context = (f"the server's {chunks.context:,}-token context" if chunks.context_reported
                   else f"an assumed {chunks.context:,}-token context (the server did not report one)")
        size = (f"chunks of up to {chunks.chunk_size:,} tokens" if self.chunk_tokens
                else f"chunks of up to {chunks.chunk_size:,} tokens, {context} less {CLAIM_RESERVE}")
        counted = "counted by the server's tokenizer" if chunks.exact else "estimated at 3 characters a token"
        return f"The source was {read} ({size}; {counted}; MiniCheck's procedure)."

    async def aclose(self) -> None:
        await self.client.aclose()


def _sentence(index: int, claims: Sequence[str]) -> str:
    return f" (sentence {index + 1} of {len(claims)})" if len(claims) > 1 else ""


def _truncated(reply: Reply, chunks: Chunks, index: int) -> str | None:
    """Why the server must have read less than the chunk it was sent, or None."""
    expected = chunks.tokens[index]
    if reply.tokens_in and expected is not None and reply.tokens_in < expected:
        return (f"the server read {reply.tokens_in} prompt tokens of a {expected}-token chunk: it cut the "
                f"chunk to fit its context")
    if reply.tokens_in and chunks.context_reported and reply.tokens_in >= chunks.context:
        return f"the prompt filled the server's {chunks.context}-token context: the chunk was likely cut"
    return None


def from_spec(arg: str, **options: Any) -> CheckerJudge:
    """``checker:BASE_URL#MODEL``, e.g. ``checker:http://127.0.0.1:11434/v1#bespoke-minicheck``."""
    parsed = parse_checker_spec(f"checker:{arg}")
    client_options, own = split_options(options)
    chunk_tokens = own.get("chunk_tokens")
    given_threshold = own.get("checker_threshold")
    threshold = float(given_threshold if given_threshold is not None else THRESHOLD)
    if (chunk_tokens is not None and int(chunk_tokens) < 50) or not 0.0 < threshold < 1.0:
        raise JudgeSpecError("chunk_tokens must be >= 50 and checker_threshold between 0 and 1")
    client = make_client(f"openai-compatible:{parsed.base_url}#{parsed.model}", **client_options)
    return CheckerJudge(client, f"checker:{parsed.base_url}#{parsed.model}", threshold=threshold,
                        chunk_tokens=int(chunk_tokens) if chunk_tokens is not None else None)
