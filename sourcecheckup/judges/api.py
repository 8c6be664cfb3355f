"""LLM judges behind an API: ``openai:MODEL``, ``anthropic:MODEL``, ``openai-compatible:BASE_URL#MODEL``.

The judge owns what decides a verdict: the verifier prompts, the evidence it shows, the
verdict schema and its parsing; it talks through an :class:`~sourcecheckup.llm.client.LLMClient`,
which owns keys, retries, rate limits and usage. Its rules:

- temperature 0 and a seed where the API has one;
- the source goes in a block with a random boundary and is declared data, never instructions;
- an unparsable reply gets one repair attempt, then ``judge_error`` with the raw reply kept;
- a refusal, a timeout or an exhausted retry budget is ``judge_error``, never ``not_supported``;
- the API key never appears in a verdict, a log record or an exception message.
"""
from __future__ import annotations

import asyncio
import logging
from dataclasses import asdict, dataclass, fields
from typing import Any, Mapping, Sequence

from ..evidence import approx_tokens, quote_in_source, select_passages
from ..injection import FLAG as INJECTION_FLAG
from ..injection import detect_injection
from ..llm import make_client, split_options
from ..llm.client import CallOptions, ClientSettings, LLMClient
from ..llm.pricing import UsageReport
from ..llm.replies import Schema, TaskError, ask_json, delimit_source, new_boundary
from ..models import CONTRADICTED, REVIEW_FIRST, Label, Verdict, contradicted_rationale
from ..prompts import DEFAULT_BATCH_VERIFIER, DEFAULT_VERIFIER, Prompt, load_prompt
from .base import BaseJudge, JudgeSpecError, SourceText
from .verdict_reply import ParsedVerdict, parse_batch, parse_verdict, read_bare_verdict, verdict_from_object

__all__ = ["ApiJudge", "JudgeSettings", "ParsedVerdict", "parse_batch", "parse_verdict", "verdict_from_object",
           "VERDICT_SCHEMA", "BATCH_SCHEMA"]

log = logging.getLogger("sourcecheckup.judges")

# ---------------------------------------------------------------------------------------------
# The reply we ask for

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "label": {"type": "string", "enum": ["supported", "not_supported"]},
        "quote": {"type": "string"},
        "rationale": {"type": "string"},
    },
    "required": ["label", "quote", "rationale"],
    "additionalProperties": False,
}

BATCH_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "verdicts": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"index": {"type": "integer"}, **VERDICT_SCHEMA["properties"]},
                "required": ["index", "label", "quote", "rationale"],
                "additionalProperties": False,
            },
        }
    },
    "required": ["verdicts"],
    "additionalProperties": False,
}


SINGLE = Schema("verdict", VERDICT_SCHEMA, "Record whether the source supports the statement.",
                example='{"label": "supported" | "not_supported", "quote": "...", "rationale": "..."}')
BATCH = Schema("verdicts", BATCH_SCHEMA, "Record, for each numbered statement, whether the source supports it.",
               example='{"verdicts": [{"index": 1, "label": "supported" | "not_supported", "quote": "...", '
                       '"rationale": "..."}, ...]}')


# ---------------------------------------------------------------------------------------------
# Settings and the evidence shown


@dataclass(frozen=True)
class JudgeSettings:
    """What shapes an API judge's verdicts, with its client's settings; stored with a run (no key)."""

    client: ClientSettings
    prompt_path: str | None = None
    batch_prompt_path: str | None = None
    full_source: bool = False
    token_budget: int = 1000          # evidence tokens per statement when passages are selected
    batch: bool = False               # all statements of a response against one source per call
    max_batch: int = 10
    max_output_tokens: int = 600

    def describe(self) -> dict[str, Any]:
        own = asdict(self)
        own.pop("client")
        return {**self.client.describe(), **own}

    @classmethod
    def from_options(cls, client: ClientSettings, options: Mapping[str, Any]) -> "JudgeSettings":
        """The judge's settings from ``make_judge`` options; options meant for others are ignored."""
        names = {f.name for f in fields(cls)} - {"client"}
        settings = cls(client, **{k: v for k, v in options.items() if k in names and v is not None})
        if settings.token_budget < 50:
            raise JudgeSpecError("token_budget must be >= 50")
        return settings


def evidence_text(statements: Sequence[str], source: SourceText, settings: JudgeSettings,
                  context_tokens: int | None = None) -> tuple[str, list[str]]:
    """(what the model reads of ``source`` for ``statements``, flags): the whole text or the best passages,
    within ``context_tokens`` (the server's reported context; else the configured window)."""
    context = context_tokens or settings.client.context_tokens
    if settings.full_source:
        if approx_tokens(source.text) + 1500 <= context:
            return source.text, []
        flags = ["full_source_did_not_fit"]
    else:
        flags = []
    budget = (settings.token_budget if len(statements) == 1
              else max(300, 2 * settings.token_budget // len(statements)))
    # a small served context: the prompt (about 500 tokens) and a short reply must fit beside the evidence
    room = context - 500 - min(settings.max_output_tokens, context // 4) - 60 * len(statements)
    if room < budget:
        budget = max(100, room)
        flags.append("evidence_cut_to_context")
    chosen: set[int] = set()
    index = {p: i for i, p in enumerate(source.passages)}
    for statement in statements:
        for passage in select_passages(statement, source, budget):
            chosen.add(index[passage])
    ordered = sorted(chosen)
    parts: list[str] = []
    for n, i in enumerate(ordered):
        if n and i != ordered[n - 1] + 1:
            parts.append("[…]")
        parts.append(source.passages[i])
    return "\n".join(parts), flags


def source_flags(source: SourceText) -> list[str]:
    """The source's flags plus ``possible_injection`` when its text reads like orders to a model."""
    flags = list(source.flags)
    found = source.cache.get("injection_reasons")
    if found is None:
        found = detect_injection(source.text)
        source.cache["injection_reasons"] = found
        if found:
            log.warning("possible prompt injection in source %s: %s", source.url or "(no url)",
                        "; ".join(found))
    if found and INJECTION_FLAG not in flags:
        flags.append(INJECTION_FLAG)
    return flags


def source_block(evidence: str, source: SourceText) -> tuple[str, str]:
    """(the evidence as a delimited data block, its boundary)."""
    boundary = new_boundary()
    while boundary in evidence:  # astronomically unlikely, but the block must stay unambiguous
        boundary = new_boundary()
    return delimit_source(evidence, boundary, source.title, source.url), boundary


# ---------------------------------------------------------------------------------------------
# The judge

TEMPERATURE = 0   # every verdict call asks for greedy decoding (a server that refuses the field is flagged)
_PARAM_FLAGS = {"temperature": "temperature_not_applied", "seed": "seed_not_applied",
                "response_format": "structured_output_not_applied"}


class ApiJudge(BaseJudge):
    """An LLM judge: verifier prompts and verdict rules over an :class:`LLMClient`."""

    kind: str = "api"

    def __init__(self, client: LLMClient, settings: JudgeSettings):
        self.client = client
        self.settings = settings
        self.id = client.id
        self.concurrency = client.settings.concurrency
        self.prompt = load_prompt(settings.prompt_path, default=DEFAULT_VERIFIER,
                                  required=("source", "statement"))
        self.batch_prompt = load_prompt(settings.batch_prompt_path, default=DEFAULT_BATCH_VERIFIER,
                                        required=("source", "statements"))
        self.prompt_version = self.batch_prompt.version if settings.batch else self.prompt.version

    def _redact(self, text: str | None) -> str | None:
        return self.client.redact(text)

    def provenance(self) -> dict[str, Any]:
        """What shapes this judge's verdicts, stored with a run: sampling, token limits, every setting (no key)."""
        settings = self.settings.describe()
        return {"kind": "llm", "model": settings.get("model"), "temperature": TEMPERATURE,
                "seed": settings.get("seed"), "max_output_tokens": settings.get("max_output_tokens"),
                "batch_max_tokens": 8192 if settings.get("batch") else None, "settings": settings}

    def usage(self) -> UsageReport:
        return self.client.usage()
    async def verify(self, statement: str, source: SourceText) -> Verdict:
        return (await self._judge([statement], source, batch=False))[0]

    async def verify_batch(self, statements: Sequence[str], source: SourceText) -> list[Verdict]:
        """All ``statements`` against one ``source`` in one call (chunks of ``max_batch``)."""
        out: list[Verdict] = []
        size = max(1, self.settings.max_batch)
        for i in range(0, len(statements), size):
            chunk = list(statements[i:i + size])
            out.extend(await self._judge(chunk, source, batch=len(chunk) > 1))
        return out

    async def verify_many(self, pairs: Sequence[tuple[str, SourceText]]) -> list[Verdict]:
        if not self.settings.batch:
            return await super().verify_many(pairs)
        groups: dict[int, list[int]] = {}
        for position, (_, source) in enumerate(pairs):
            groups.setdefault(id(source), []).append(position)
        results: list[Verdict | None] = [None] * len(pairs)
        sem = asyncio.Semaphore(self.concurrency)

        async def run(positions: list[int]) -> None:
            source = pairs[positions[0]][1]
            async with sem:
                try:
                    verdicts = await self.verify_batch([pairs[p][0] for p in positions], source)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:  # a broken group must not sink the run
                    verdicts = [self._error(f"{type(exc).__name__}: {exc}") for _ in positions]
            for p, v in zip(positions, verdicts):
                results[p] = v

        await asyncio.gather(*(run(positions) for positions in groups.values()))
        return [v if v is not None else self._error("no verdict was produced for this pair")
                for v in results]

    # -- the verdict ---------------------------------------------------------------------------

    def _error(self, message: str, raw: str | None = None, prompt_version: str | None = None,
               **kw: Any) -> Verdict:
        return Verdict.error(self.id, self._redact(message) or "", raw=self._redact(raw),
                             prompt_version=prompt_version or self.prompt_version, **kw)

    async def _judge(self, statements: list[str], source: SourceText, batch: bool) -> list[Verdict]:
        if not source.text.strip():
            return [self._error("the source has no text to judge") for _ in statements]
        flags = source_flags(source)
        await self.client.server_limits()
        evidence, evidence_flags = evidence_text(statements, source, self.settings, self.client.context_tokens)
        flags += evidence_flags
        block, boundary = source_block(evidence, source)
        prompt: Prompt = self.batch_prompt if batch else self.prompt
        schema = BATCH if batch else SINGLE
        if batch:
            listed = "\n".join(f"{i}. {s}" for i, s in enumerate(statements, start=1))
            system, user = prompt.render(statements=listed, source=block, boundary=boundary)
            max_tokens = min(8192, self.settings.max_output_tokens * len(statements))
        else:
            system, user = prompt.render(statement=statements[0], source=block, boundary=boundary)
            max_tokens = self.settings.max_output_tokens

        def parse(obj: Mapping[str, Any]) -> list[ParsedVerdict]:
            if batch:
                return parse_batch(None, len(statements), obj)
            return [verdict_from_object(obj)]

        options = CallOptions(temperature=TEMPERATURE, seed=self.client.settings.seed, max_tokens=max_tokens)
        try:
            answer = await ask_json(self.client, system, user, schema, parse, options,
                                    read_text=None if batch else (lambda text: [read_bare_verdict(text)]),
                                    mend=True, last=True)
        except TaskError as exc:
            message = str(exc)
            if exc.refusal is not None:
                message = f"the model refused to judge: {exc.refusal}".strip()
            ins, outs = _split(exc.tokens_in, len(statements)), _split(exc.tokens_out, len(statements))
            return [self._error(message, raw=exc.raw, model_version=exc.model, tokens_in=ins[i] or None,
                                tokens_out=outs[i] or None, flags=tuple(flags), prompt_version=prompt.version)
                    for i in range(len(statements))]
        if answer.stop in ("length", "max_tokens"):
            # a reply cut off at the output limit was mended, not finished: its label is not the model's word
            message = (f"the reply was cut off at the {max_tokens}-token output limit (finish_reason "
                       f"'{answer.stop}'); a mended, unfinished reply is not a verdict")
            ins, outs = _split(answer.tokens_in, len(statements)), _split(answer.tokens_out, len(statements))
            return [self._error(message, model_version=answer.model, tokens_in=ins[i] or None,
                                tokens_out=outs[i] or None, flags=tuple(flags), prompt_version=prompt.version)
                    for i in range(len(statements))]
        if answer.repaired:
            flags.append("repaired")
        flags += sorted(_PARAM_FLAGS[p] for p in self.client.dropped_params if p in _PARAM_FLAGS)
        share_in = _split(answer.tokens_in, len(statements))
        share_out = _split(answer.tokens_out, len(statements))
        verdicts = []
        for i, p in enumerate(answer.value):
            quote_found = quote_in_source(p.quote, source.text) if p.quote else None
            own = list(flags)
            if p.label is Label.SUPPORTED and not p.quote:
                own.append("no_quote")
            if p.label is Label.SUPPORTED and quote_found is False:
                own.append(REVIEW_FIRST)     # "supported" with a quote the source does not hold
            if p.label is Label.SUPPORTED and INJECTION_FLAG in own:
                own.append(REVIEW_FIRST)     # the source gives orders to a model: a person reads it first
            rationale = self._redact(p.rationale) or ""
            if p.contradicted:
                own.append(CONTRADICTED)
                rationale = contradicted_rationale(rationale)
            verdicts.append(Verdict(
                label=p.label, score=1.0 if p.label is Label.SUPPORTED else 0.0,
                rationale=rationale, quote=self._redact(p.quote) or "",
                quote_found=quote_found, judge_id=self.id, prompt_version=prompt.version,
                model_version=answer.model, tokens_in=share_in[i], tokens_out=share_out[i],
                flags=tuple(dict.fromkeys(own))))
        return verdicts

    async def aclose(self) -> None:
        await self.client.aclose()


def _split(total: int, n: int) -> list[int]:
    """Share a call's tokens among the verdicts it produced; the shares add up to the total."""
    base, rest = divmod(total, n)
    return [base + (1 if i < rest else 0) for i in range(n)]


def _make(spec: str, options: Mapping[str, Any]) -> ApiJudge:
    client_options, judge_options = split_options(options)
    budget = judge_options.get("token_budget")
    if budget is not None and budget < 50:   # before a client (and its connection pool) exists
        raise JudgeSpecError("token_budget must be >= 50")
    client = make_client(spec, **client_options)
    return ApiJudge(client, JudgeSettings.from_options(client.settings, judge_options))


def from_openai_spec(arg: str, **options: Any) -> ApiJudge:
    """``openai:MODEL``; the key comes from ``api_key=``, the keyring or OPENAI_API_KEY."""
    return _make(f"openai:{arg}", options)


def from_anthropic_spec(arg: str, **options: Any) -> ApiJudge:
    """``anthropic:MODEL``; the key comes from ``api_key=``, the keyring or ANTHROPIC_API_KEY."""
    return _make(f"anthropic:{arg}", options)


def from_compatible_spec(arg: str, **options: Any) -> ApiJudge:
    """``openai-compatible:BASE_URL#MODEL``, e.g. ``http://localhost:11434/v1#llama3.1``."""
    return _make(f"openai-compatible:{arg}", options)
