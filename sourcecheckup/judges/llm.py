"""What every API judge shares: prompts, JSON replies, retries, rate limits, tokens, cost.

A backend module (``openai_api``, ``anthropic_api``) only turns one prompt into one HTTP
call and says how its SDK reports errors; everything that decides a verdict lives here,
so every API judge follows the same rules:

- temperature 0 and a seed where the API has one;
- the source goes in a block with a random boundary and is declared data, never instructions;
- an unparsable reply gets one repair attempt, then ``judge_error`` with the raw reply kept;
- a refusal, a timeout or an exhausted retry budget is ``judge_error``, never ``not_supported``;
- the API key never appears in a verdict, a log record or an exception message.
"""
from __future__ import annotations

import asyncio
import json
import logging
import random
import re
import secrets
import time
from dataclasses import asdict, dataclass, field, fields
from functools import lru_cache
from pathlib import Path
from typing import Any, Callable, Mapping, Sequence

from ..evidence import approx_tokens, quote_in_source, select_passages
from ..injection import FLAG as INJECTION_FLAG
from ..injection import detect_injection
from ..models import CONTRADICTED, Label, Verdict, contradicted_rationale
from ..prompts import DEFAULT_BATCH_VERIFIER, DEFAULT_VERIFIER, Prompt, load_prompt
from ..resources import resources_dir
from ..retry_after import parse_retry_after
from ..evidence import SourceText
from .base import BaseJudge, JudgeSpecError

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


@dataclass(frozen=True)
class Schema:
    name: str
    json_schema: dict[str, Any]
    description: str
    example: str | None = None     # the reply's shape, told to the model when it must repair a reply


SINGLE = Schema("verdict", VERDICT_SCHEMA, "Record whether the source supports the statement.")
BATCH = Schema("verdicts", BATCH_SCHEMA, "Record, for each numbered statement, whether the source supports it.")


class ReplyError(ValueError):
    """A reply that is not the JSON we asked for; ``problem`` is told to the model on repair."""

    def __init__(self, problem: str):
        super().__init__(problem)
        self.problem = problem


def reply_problem(exc: ReplyError, reply: "Reply") -> str:
    """What was wrong with a reply, in words the repair request and the error row both use."""
    if reply.stop in ("length", "max_tokens"):
        return exc.problem + " (the reply was cut off at the output limit; keep it short)"
    return exc.problem


@dataclass(frozen=True)
class ParsedVerdict:
    label: Label
    quote: str
    rationale: str
    contradicted: bool = False     # the source says something different (label is not_supported)


_LABELS = {"supported": Label.SUPPORTED, "not_supported": Label.NOT_SUPPORTED,
           "not supported": Label.NOT_SUPPORTED, "unsupported": Label.NOT_SUPPORTED,
           "not-supported": Label.NOT_SUPPORTED, "contradicted": Label.NOT_SUPPORTED,
           "contradicts": Label.NOT_SUPPORTED, "refuted": Label.NOT_SUPPORTED}
_CONTRADICTING = frozenset({"contradicted", "contradicts", "refuted"})
_FENCE = re.compile(r"^\s*```(?:json)?\s*|\s*```\s*$", re.I)


def extract_json_object(text: str) -> dict[str, Any]:
    """The first JSON object in ``text`` (code fences and chatter around it are tolerated)."""
    if not text or not text.strip():
        raise ReplyError("the reply was empty")
    cleaned = _FENCE.sub("", text.strip())
    start = cleaned.find("{")
    if start < 0:
        raise ReplyError("the reply contained no JSON object")
    try:
        obj, _ = json.JSONDecoder().raw_decode(cleaned[start:])
    except json.JSONDecodeError as exc:
        raise ReplyError(f"the reply is not valid JSON ({exc.msg} at character {exc.pos})") from None
    if not isinstance(obj, dict):
        raise ReplyError("the reply is JSON but not an object")
    return obj


def verdict_from_object(obj: Mapping[str, Any]) -> ParsedVerdict:
    label = obj.get("label")
    if not isinstance(label, str) or label.strip().lower() not in _LABELS:
        raise ReplyError(f'"label" must be "supported" or "not_supported", got {label!r}')
    quote = obj.get("quote", "")
    rationale = obj.get("rationale", "")
    if quote is None:
        quote = ""
    if not isinstance(quote, str) or not isinstance(rationale, str):
        raise ReplyError('"quote" and "rationale" must be strings')
    key = label.strip().lower()
    said = obj.get("contradicted", False)
    if not isinstance(said, bool):
        raise ReplyError(f'"contradicted" must be true or false, got {said!r}')
    contradicted = key in _CONTRADICTING or said
    if contradicted and _LABELS[key] is Label.SUPPORTED:
        raise ReplyError('"contradicted": true goes with "label": "not_supported", not "supported"')
    return ParsedVerdict(_LABELS[key], quote.strip(), rationale.strip(), contradicted)


def parse_verdict(text: str | None, payload: Mapping[str, Any] | None = None) -> ParsedVerdict:
    """A verdict from a reply: a structured payload (tool input) or JSON text."""
    obj = payload if payload is not None else extract_json_object(text or "")
    return verdict_from_object(obj)


def parse_batch(text: str | None, count: int, payload: Mapping[str, Any] | None = None) -> list[ParsedVerdict]:
    obj = payload if payload is not None else extract_json_object(text or "")
    items = obj.get("verdicts")
    if not isinstance(items, list):
        raise ReplyError('the reply must have a "verdicts" list')
    by_index: dict[int, ParsedVerdict] = {}
    for position, item in enumerate(items, start=1):
        if not isinstance(item, Mapping):
            raise ReplyError("every entry of \"verdicts\" must be an object")
        index = item.get("index", position)
        if not isinstance(index, int) or not 1 <= index <= count:
            raise ReplyError(f'"index" must be a number from 1 to {count}, got {index!r}')
        by_index[index] = verdict_from_object(item)
    missing = [i for i in range(1, count + 1) if i not in by_index]
    if missing:
        raise ReplyError(f"verdicts are missing for statement(s) {', '.join(map(str, missing))}; "
                         f"give exactly {count}")
    return [by_index[i] for i in range(1, count + 1)]


def repair_instruction(problem: str, schema: Schema) -> str:
    shape = schema.example or ('{"label": "supported" | "not_supported", "quote": "...", "rationale": "..."}'
             if schema is SINGLE else
             '{"verdicts": [{"index": 1, "label": "supported" | "not_supported", "quote": "...", '
             '"rationale": "..."}, ...]}')
    return (f"Your reply could not be used: {problem}. Reply again with only a JSON object of "
            f"exactly this form and nothing else: {shape}")


# ---------------------------------------------------------------------------------------------
# The source block


def new_boundary() -> str:
    return secrets.token_hex(8).upper()


def delimit_source(text: str, boundary: str, title: str | None = None, url: str = "") -> str:
    """The source as a data block between two lines that carry a random boundary."""
    head = []
    if title:
        head.append(f"Title: {title}")
    if url:
        head.append(f"URL: {url}")
    body = "\n".join(head + ([""] if head else []) + [text])
    return f"BEGIN SOURCE {boundary}\n{body}\nEND SOURCE {boundary}"


# ---------------------------------------------------------------------------------------------
# Secrets


def redact(text: str | None, secrets_: Sequence[str]) -> str | None:
    if not text:
        return text
    for secret in secrets_:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, "[redacted]")
    return text


class _RedactingFilter(logging.Filter):
    """Scrubs known keys from records of the SDK loggers, which log request options at DEBUG."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        message = record.getMessage()
        if any(s in message for s in self.secrets):
            record.msg = redact(message, sorted(self.secrets))
            record.args = None
        return True


_REDACTOR = _RedactingFilter()
# a logger's filters see only records created on that very logger, so name the SDKs' own loggers
for _name in ("openai", "openai._base_client", "anthropic", "anthropic._base_client", "httpx", "httpx2",
              "httpcore", "httpcore2", "httpcore2.http11", "httpcore2.connection", "sourcecheckup.judges"):
    logging.getLogger(_name).addFilter(_REDACTOR)


def protect_secret(secret: str | None) -> None:
    """Make every log record of the SDKs and of this package scrub ``secret``."""
    if secret and len(secret) >= 4 and secret != "not-needed":
        _REDACTOR.secrets.add(secret)


# ---------------------------------------------------------------------------------------------
# Retries and rate limits


@dataclass(frozen=True)
class Failure:
    """How the retry loop should treat an exception from one API call."""

    kind: str                      # rate_limited | server_error | timeout | connection | unsupported_param | fatal
    message: str                   # redacted, for logs and judge_error rationales
    status: int | None = None
    retry_after: float | None = None
    param: str | None = None       # for unsupported_param: the request field to drop

    @property
    def retryable(self) -> bool:
        return self.kind in ("rate_limited", "server_error", "timeout", "connection")


def retry_after_seconds(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds the server asks us to wait: ``retry-after-ms``, ``retry-after`` (seconds or a date)."""
    if not headers:
        return None
    try:
        ms = headers.get("retry-after-ms")
        if ms is not None:
            return max(0.0, float(ms) / 1000.0)
    except ValueError:
        pass
    return parse_retry_after(headers.get("retry-after"), now)


_PARAM_REJECTED = re.compile(r"unsupported|not supported|does not support|deprecated|unrecognized|"
                             r"unknown|not allowed|not permitted|invalid|extra inputs", re.I)


def classify_sdk_error(exc: BaseException, sdk: Any, optional_params: Sequence[str] = ()) -> Failure:
    """Map an openai/anthropic SDK exception (they share their error classes) to a Failure."""
    message = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, sdk.APITimeoutError):
        return Failure("timeout", "the request timed out")
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        headers = getattr(exc.response, "headers", None)
        wait = retry_after_seconds(headers)
        if status == 429:
            return Failure("rate_limited", f"rate limited (HTTP 429): {exc}", status, wait)
        if status >= 500 or status in (408, 409):
            return Failure("server_error", f"server error (HTTP {status}): {exc}", status, wait)
        if status == 400:
            text = str(exc)
            for param in optional_params:
                if re.search(rf"\b{re.escape(param)}\b", text) and _PARAM_REJECTED.search(text):
                    return Failure("unsupported_param", f"the API rejected '{param}': {exc}", status, param=param)
        if status in (401, 403):
            return Failure("fatal", f"authentication failed (HTTP {status}): check the API key "
                                    f"(keyring service 'sourcecheckup' or the environment variable)", status)
        if status == 404:
            return Failure("fatal", f"not found (HTTP 404): check the model id and the base URL: {exc}", status)
        return Failure("fatal", f"request rejected (HTTP {status}): {exc}", status)
    if isinstance(exc, sdk.APIConnectionError):
        return Failure("connection", f"could not reach the API ({exc})")
    if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
        return Failure("timeout", "the request timed out")
    if isinstance(exc, (json.JSONDecodeError, getattr(sdk, "APIResponseValidationError", ()))):
        return Failure("server_error", f"the API sent a body that is not a valid reply ({type(exc).__name__})")
    return Failure("fatal", message)


class RateLimiter:
    """A token bucket holding one second's worth of a per-minute allowance.

    A request larger than the bucket waits for a full bucket and then runs into debt, so the
    average over a minute stays at the allowance and big requests are never starved.
    """

    def __init__(self, per_minute: float, clock: Callable[[], float] = time.monotonic):
        if per_minute <= 0:
            raise ValueError("a rate limit must be positive (per minute)")
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate)
        self.level = self.capacity
        self._clock = clock
        self._stamp = clock()
        self._lock = asyncio.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self.level = min(self.capacity, self.level + (now - self._stamp) * self.rate)
        self._stamp = now

    async def acquire(self, amount: float = 1.0) -> None:
        async with self._lock:
            need = min(amount, self.capacity)
            while True:
                self._refill()
                if self.level >= need:
                    self.level -= amount
                    return
                await asyncio.sleep((need - self.level) / self.rate)

    def adjust(self, delta: float) -> None:
        """Charge (or refund, when negative) the difference between an estimate and the truth."""
        self.level -= delta


# ---------------------------------------------------------------------------------------------
# Prices and usage


@lru_cache(maxsize=4)
def load_prices(path: Path | None = None) -> dict[str, tuple[float, float]]:
    """model id -> (USD per 1M input tokens, USD per 1M output tokens)."""
    path = path or resources_dir() / "prices.json"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return {}
    per = float(data.get("per_tokens", 1_000_000))
    scale = 1_000_000 / per
    return {model: (float(p["input"]) * scale, float(p["output"]) * scale)
            for model, p in data.get("models", {}).items()}


def estimate_cost(model: str, tokens_in: int, tokens_out: int,
                  prices: Mapping[str, tuple[float, float]] | None = None) -> float | None:
    """USD for the tokens, from the longest price-table entry ``model`` starts with; None if unknown."""
    prices = load_prices() if prices is None else prices
    model = (model or "").lower()
    matches = [m for m in prices if model == m.lower() or model.startswith(m.lower() + "-")
               or model.startswith(m.lower() + ":")]
    if not matches:
        return None
    price_in, price_out = prices[max(matches, key=len)]
    return (tokens_in * price_in + tokens_out * price_out) / 1_000_000


@dataclass(frozen=True)
class UsageReport:
    calls: int            # successful API calls (a repair counts as a call)
    attempts: int         # HTTP attempts, retries included
    retries: int
    tokens_in: int
    tokens_out: int
    cost_usd: float | None   # None when a model is missing from the price table
    models: tuple[str, ...]


@dataclass
class _Usage:
    calls: int = 0
    attempts: int = 0
    retries: int = 0
    by_model: dict[str, list[int]] = field(default_factory=dict)

    def add(self, model: str, tokens_in: int, tokens_out: int) -> None:
        self.calls += 1
        acc = self.by_model.setdefault(model, [0, 0])
        acc[0] += tokens_in
        acc[1] += tokens_out

    def report(self) -> UsageReport:
        costs = [estimate_cost(m, t[0], t[1]) for m, t in self.by_model.items()]
        total = None if any(c is None for c in costs) else sum(c for c in costs if c is not None)
        return UsageReport(self.calls, self.attempts, self.retries,
                           sum(t[0] for t in self.by_model.values()),
                           sum(t[1] for t in self.by_model.values()), total, tuple(self.by_model))


# ---------------------------------------------------------------------------------------------
# Settings


@dataclass(frozen=True)
class ApiJudgeSettings:
    """Everything that shapes an API judge's calls; stored with a run (the key is not in here)."""

    model: str
    base_url: str | None = None
    timeout_s: float = 60.0
    max_retries: int = 4
    concurrency: int = 8
    prompt_path: str | None = None
    batch_prompt_path: str | None = None
    full_source: bool = False
    token_budget: int = 1000          # evidence tokens per statement when passages are selected
    context_tokens: int = 128_000     # the model's window, for full_source
    seed: int | None = 42
    rpm: float | None = None          # client-side requests per minute
    tpm: float | None = None          # client-side tokens per minute
    batch: bool = False               # all statements of a response against one source per call
    max_batch: int = 10
    max_output_tokens: int = 600
    backoff_s: float = 1.0            # first retry wait without Retry-After; doubles each time
    max_backoff_s: float = 30.0
    max_retry_wait_s: float = 120.0   # a Retry-After longer than this ends the retries

    def describe(self) -> dict[str, Any]:
        return asdict(self)


_SETTING_NAMES = {f.name for f in fields(ApiJudgeSettings)}


def settings_from_options(model: str, options: Mapping[str, Any], **defaults: Any
                          ) -> tuple[ApiJudgeSettings, str | None]:
    """(settings, api_key) from ``make_judge`` options; options meant for other judges are ignored."""
    if not model:
        raise JudgeSpecError("the judge spec names no model; write e.g. 'openai:gpt-4o'")
    values = dict(defaults)
    unknown = []
    for key, value in options.items():
        if key == "api_key":
            continue
        if key in _SETTING_NAMES:
            if value is not None:
                values[key] = value
        else:
            unknown.append(key)
    if unknown:
        log.debug("judge %s ignores options it does not use: %s", model, ", ".join(sorted(unknown)))
    values["model"] = model
    settings = ApiJudgeSettings(**values)
    if settings.max_retries < 0 or settings.concurrency < 1 or settings.token_budget < 50:
        raise JudgeSpecError("max_retries must be >= 0, concurrency >= 1 and token_budget >= 50")
    return settings, options.get("api_key")


# ---------------------------------------------------------------------------------------------
# The judge


@dataclass(frozen=True)
class Reply:
    """One API reply, reduced to what the judge needs."""

    text: str | None                  # raw reply text (tool input as JSON for Anthropic)
    payload: dict[str, Any] | None    # structured output when the API delivers it parsed
    model: str
    tokens_in: int
    tokens_out: int
    refusal: str | None = None
    stop: str | None = None
    assistant_turn: Any = None        # what to append to the conversation for a repair


class JudgeCallError(RuntimeError):
    """An API call that failed for good (after retries); the message holds no secret."""


class ApiJudge(BaseJudge):
    """An LLM judge behind an HTTP API. Subclasses implement ``_send`` and the turn helpers."""

    kind: str = "api"
    provider: str = "api"
    sdk: Any = None
    optional_params: tuple[str, ...] = ("temperature", "seed")
    _param_flags = {"temperature": "temperature_not_applied", "seed": "seed_not_applied",
                    "response_format": "structured_output_not_applied"}

    def __init__(self, settings: ApiJudgeSettings, api_key: str | None, spec: str):
        self.settings = settings
        self.id = spec
        self.concurrency = settings.concurrency
        self._secrets = [api_key] if api_key and api_key != "not-needed" else []
        protect_secret(api_key)
        self.prompt = load_prompt(settings.prompt_path, default=DEFAULT_VERIFIER,
                                  required=("source", "statement"))
        self.batch_prompt = load_prompt(settings.batch_prompt_path, default=DEFAULT_BATCH_VERIFIER,
                                        required=("source", "statements"))
        self.prompt_version = self.batch_prompt.version if settings.batch else self.prompt.version
        self._rpm = RateLimiter(settings.rpm) if settings.rpm else None
        self._tpm = RateLimiter(settings.tpm) if settings.tpm else None
        self._inflight = asyncio.Semaphore(settings.concurrency)
        self._usage = _Usage()
        self._unsupported: set[str] = set()

    # -- backend hooks ---------------------------------------------------------------------

    async def _send(self, system: str, turns: list[Any], schema: Schema, max_tokens: int) -> Reply:
        raise NotImplementedError

    def _first_turns(self, user: str) -> list[Any]:
        return [{"role": "user", "content": user}]

    def _repair_turns(self, turns: list[Any], reply: Reply, problem: str, schema: Schema) -> list[Any]:
        raise NotImplementedError

    # -- public ------------------------------------------------------------------------------

    def usage(self) -> UsageReport:
        return self._usage.report()

    def _redact(self, text: str | None) -> str | None:
        return redact(text, self._secrets)

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

    def _source_flags(self, source: SourceText) -> list[str]:
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

    def _evidence(self, statements: Sequence[str], source: SourceText) -> tuple[str, list[str]]:
        s = self.settings
        if s.full_source:
            if approx_tokens(source.text) + 1500 <= s.context_tokens:
                return source.text, []
            flags = ["full_source_did_not_fit"]
        else:
            flags = []
        budget = s.token_budget if len(statements) == 1 else max(300, 2 * s.token_budget // len(statements))
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

    async def _judge(self, statements: list[str], source: SourceText, batch: bool) -> list[Verdict]:
        if not source.text.strip():
            return [self._error("the source has no text to judge") for _ in statements]
        flags = self._source_flags(source)
        evidence, evidence_flags = self._evidence(statements, source)
        flags += evidence_flags
        boundary = new_boundary()
        while boundary in evidence:  # astronomically unlikely, but the block must stay unambiguous
            boundary = new_boundary()
        block = delimit_source(evidence, boundary, source.title, source.url)
        prompt: Prompt = self.batch_prompt if batch else self.prompt
        schema = BATCH if batch else SINGLE
        if batch:
            listed = "\n".join(f"{i}. {s}" for i, s in enumerate(statements, start=1))
            system, user = prompt.render(statements=listed, source=block, boundary=boundary)
            max_tokens = min(8192, self.settings.max_output_tokens * len(statements))
        else:
            system, user = prompt.render(statement=statements[0], source=block, boundary=boundary)
            max_tokens = self.settings.max_output_tokens

        def parse(reply: Reply) -> list[ParsedVerdict]:
            if batch:
                return parse_batch(reply.text, len(statements), reply.payload)
            return [parse_verdict(reply.text, reply.payload)]

        turns = self._first_turns(user)
        tokens_in = tokens_out = 0

        def errors(message: str, raw: str | None, model: str = "") -> list[Verdict]:
            ins, outs = _split(tokens_in, len(statements)), _split(tokens_out, len(statements))
            return [self._error(message, raw=raw, model_version=model, tokens_in=ins[i] or None,
                                tokens_out=outs[i] or None, flags=tuple(flags),
                                prompt_version=prompt.version)
                    for i in range(len(statements))]

        raws: list[str] = []
        parsed: list[ParsedVerdict] | None = None
        reply: Reply | None = None
        for round_ in range(2):  # the reply, then at most one repair
            try:
                reply = await self._call(system, turns, schema, max_tokens)
            except JudgeCallError as exc:
                return errors(str(exc), "\n".join(raws) or None)
            tokens_in += reply.tokens_in
            tokens_out += reply.tokens_out
            if reply.refusal is not None:
                return errors(f"the model refused to judge: {reply.refusal}".strip(),
                              reply.refusal or reply.text, reply.model)
            raws.append(reply.text or "")
            try:
                parsed = parse(reply)
                if round_:
                    flags.append("repaired")
                break
            except ReplyError as exc:
                problem = reply_problem(exc, reply)
                if round_ == 0:
                    log.info("%s: unusable reply (%s); asking once for a repair", self.id, problem)
                    turns = self._repair_turns(turns, reply, problem, schema)
                    continue
                raw = "\n--- repair attempt ---\n".join(raws)
                return errors(f"unparsable reply after one repair attempt: {problem}", raw, reply.model)
        assert parsed is not None and reply is not None
        flags += sorted(self._param_flags[p] for p in self._unsupported if p in self._param_flags)
        share_in = _split(tokens_in, len(statements))
        share_out = _split(tokens_out, len(statements))
        verdicts = []
        for i, p in enumerate(parsed):
            quote_found = quote_in_source(p.quote, source.text) if p.quote else None
            own = list(flags)
            if p.label is Label.SUPPORTED and not p.quote:
                own.append("no_quote")
            rationale = self._redact(p.rationale) or ""
            if p.contradicted:
                own.append(CONTRADICTED)
                rationale = contradicted_rationale(rationale)
            verdicts.append(Verdict(
                label=p.label, score=1.0 if p.label is Label.SUPPORTED else 0.0,
                rationale=rationale, quote=self._redact(p.quote) or "",
                quote_found=quote_found, judge_id=self.id, prompt_version=prompt.version,
                model_version=reply.model, tokens_in=share_in[i], tokens_out=share_out[i],
                flags=tuple(dict.fromkeys(own))))
        return verdicts

    # -- one call, with retries and limits ------------------------------------------------------

    def _backoff(self, attempt: int) -> float:
        base = min(self.settings.max_backoff_s, self.settings.backoff_s * (2 ** attempt))
        return base / 2 + random.uniform(0, base / 2)

    async def _call(self, system: str, turns: list[Any], schema: Schema, max_tokens: int) -> Reply:
        estimate = approx_tokens(system) + sum(approx_tokens(json.dumps(t, default=str)) for t in turns) + 200
        attempt = 0
        dropped_here = 0
        while True:
            if self._rpm:
                await self._rpm.acquire(1)
            if self._tpm:
                await self._tpm.acquire(estimate)
            self._usage.attempts += 1
            try:
                async with self._inflight:
                    reply = await self._send(system, turns, schema, max_tokens)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                failure = classify_sdk_error(exc, self.sdk, self.optional_params)
                message = self._redact(failure.message) or ""
                # bounded: each optional field can be dropped once; a call already in flight when
                # another dropped the field is simply sent again without it
                if failure.kind == "unsupported_param" and dropped_here < len(self.optional_params):
                    dropped_here += 1
                    if failure.param not in self._unsupported:
                        self._unsupported.add(failure.param or "")
                        log.warning("%s: the API does not accept '%s'; sending requests without it",
                                    self.id, failure.param)
                    continue
                if not failure.retryable:
                    raise JudgeCallError(message) from None
                if attempt >= self.settings.max_retries:
                    raise JudgeCallError(f"{message}; gave up after {attempt + 1} attempt(s)") from None
                wait = failure.retry_after
                if wait is not None and wait > self.settings.max_retry_wait_s:
                    raise JudgeCallError(f"{message}; the server asks to wait {wait:.0f} s, more than "
                                         f"max_retry_wait_s={self.settings.max_retry_wait_s:.0f}") from None
                wait = self._backoff(attempt) if wait is None else wait * (1 + random.uniform(0, 0.1))
                log.warning("%s: %s; retry %d of %d in %.2f s", self.id, message, attempt + 1,
                            self.settings.max_retries, wait)
                self._usage.retries += 1
                attempt += 1
                await asyncio.sleep(wait)
                continue
            if self._tpm:
                self._tpm.adjust(reply.tokens_in + reply.tokens_out - estimate)
            self._usage.add(reply.model, reply.tokens_in, reply.tokens_out)
            return reply

    async def aclose(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            await client.close()


def _split(total: int, n: int) -> list[int]:
    """Share a call's tokens among the verdicts it produced; the shares add up to the total."""
    base, rest = divmod(total, n)
    return [base + (1 if i < rest else 0) for i in range(n)]


# ---------------------------------------------------------------------------------------------
# Other structured tasks on a judge's client (the LLM parser, SourceCleanup)


@dataclass(frozen=True)
class JsonAnswer:
    """A structured reply to a task that is not a verdict, with what it cost."""

    value: Any
    model: str
    tokens_in: int
    tokens_out: int
    repaired: bool = False


class TaskError(RuntimeError):
    """A task the model could not complete: the call failed, it refused, or the reply stayed unusable.

    The message holds no secret; ``raw`` keeps the model's replies (redacted) for the run log.
    """

    def __init__(self, message: str, raw: str | None = None):
        super().__init__(message)
        self.raw = raw


async def ask_json(judge: ApiJudge, system: str, user: str, schema: Schema,
                   parse: Callable[[Mapping[str, Any]], Any], max_tokens: int = 1500) -> JsonAnswer:
    """One structured request through ``judge``'s client: same retries, limits, usage and repair.

    ``parse`` turns the reply object into the task's value and raises :class:`ReplyError` when
    the object is not what was asked for; such a reply gets one repair attempt.
    """
    turns = judge._first_turns(user)
    raws: list[str] = []
    tokens_in = tokens_out = 0
    for round_ in range(2):
        try:
            reply = await judge._call(system, turns, schema, max_tokens)
        except JudgeCallError as exc:
            raise TaskError(str(exc), judge._redact("\n".join(raws)) or None) from None
        tokens_in += reply.tokens_in
        tokens_out += reply.tokens_out
        if reply.refusal is not None:
            raise TaskError(judge._redact(f"the model refused: {reply.refusal}") or "the model refused",
                            judge._redact(reply.text))
        raws.append(reply.text or "")
        try:
            obj = reply.payload if reply.payload is not None else extract_json_object(reply.text or "")
            value = parse(obj)
        except ReplyError as exc:
            problem = reply_problem(exc, reply)
            if round_ == 0:
                log.info("%s: unusable reply (%s); asking once for a repair", judge.id, problem)
                turns = judge._repair_turns(turns, reply, problem, schema)
                continue
            raw = judge._redact("\n--- repair attempt ---\n".join(raws))
            raise TaskError(judge._redact(f"unparsable reply after one repair attempt: {problem}") or "",
                            raw) from None
        return JsonAnswer(value, reply.model, tokens_in, tokens_out, repaired=bool(round_))
    raise AssertionError("unreachable")  # pragma: no cover
