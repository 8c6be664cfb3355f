"""An LLM client: settings, one reply, and the loop every call goes through.

A provider module (:mod:`.openai`, :mod:`.anthropic`) only turns one request into one HTTP call
and one :class:`Reply`; everything around it lives here, so every caller gets the same rules:

- retries with exponential backoff, honouring ``Retry-After``; client-side rate limits;
- an optional request field a server rejects is dropped once and the call sent again;
- a refusal, a timeout or an exhausted retry budget ends in :class:`LLMCallError`;
- the API key never appears in a reply, a log record or an exception message.

Build one with :func:`sourcecheckup.llm.make_client` from a model spec (:mod:`.spec`).
"""
from __future__ import annotations

import asyncio
import json
import logging
import random
import re
import time
from dataclasses import asdict, dataclass, fields
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ..evidence import approx_tokens
from ..fetching.base import backoff_delay, parse_retry_after
from .gate import ContextGate
from .pricing import Usage, UsageReport
from .secrets import protect_secret, redact
from .server_limits import CONTEXT_HINT, ServerLimits

if TYPE_CHECKING:
    from .replies import Schema

log = logging.getLogger("sourcecheckup.llm")

NO_KEY = "not-needed"    # what a compatible server that wants no key is sent


# ---------------------------------------------------------------------------------------------
# Settings and one call's options


@dataclass(frozen=True)
class ClientSettings:
    """Everything that shapes a client's calls; stored with a run (the key is not in here)."""

    model: str
    base_url: str | None = None
    timeout_s: float = 60.0
    max_retries: int = 4
    concurrency: int = 8
    context_tokens: int = 128_000     # the model's window
    seed: int | None = 42             # the seed a caller that wants reproducible replies sends
    rpm: float | None = None          # client-side requests per minute
    tpm: float | None = None          # client-side tokens per minute
    backoff_s: float = 1.0            # first retry wait without Retry-After; doubles each time
    max_backoff_s: float = 30.0
    max_retry_wait_s: float = 120.0   # a Retry-After longer than this ends the retries

    def describe(self) -> dict[str, Any]:
        return asdict(self)


CLIENT_SETTING_NAMES = frozenset(f.name for f in fields(ClientSettings))


@dataclass(frozen=True)
class CallOptions:
    """One call's request: sampling settings (None leaves the provider's default) and output limit.

    ``structured``: send ``schema`` as the API's structured-output feature (a JSON schema response
    format, a forced tool call); without it the schema only names the reply.
    """

    temperature: float | None = None
    seed: int | None = None
    max_tokens: int = 1024
    structured: bool = True
    top_logprobs: int | None = None   # ask for the first tokens' alternatives (where the API gives them)


@dataclass(frozen=True)
class Reply:
    """One API reply, reduced to what callers need."""

    text: str | None                  # raw reply text (tool input as JSON for Anthropic)
    payload: dict[str, Any] | None    # structured output when the API delivers it parsed
    model: str
    tokens_in: int
    tokens_out: int
    refusal: str | None = None
    stop: str | None = None
    assistant_turn: Any = None        # what to append to the conversation for a repair
    first_token_logprobs: tuple[tuple[str, float], ...] | None = None   # (token, logprob) alternatives
    first_token: str | None = None    # the first token the model sampled, where the server sent logprobs


class LLMCallError(RuntimeError):
    """A call that failed for good (after retries: auth, 404, rate limit budget, timeout); no secret in it."""


# ---------------------------------------------------------------------------------------------
# Retries and rate limits


@dataclass(frozen=True)
class Failure:
    """How the retry loop should treat an exception from one API call."""

    kind: str                      # rate_limited | server_error | timeout | connection | unsupported_param |
                                   # context_exceeded | fatal
    message: str                   # redacted, for logs and error messages
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


# llama.cpp: 400 exceed_context_size_error (one request larger than a slot), 500 "Context size has been
# exceeded." (requests in flight overflowed the shared cache); vLLM and others: "maximum context length"
_CONTEXT_EXCEEDED = re.compile(r"exceed_context_size_error|exceeds the available context size|"
                               r"context size has been exceeded|maximum context length|context length exceeded|"
                               r"context_length_exceeded", re.I)

_PARAM_REJECTED = re.compile(r"unsupported|not supported|does not support|deprecated|unrecognized|"
                             r"unknown|not allowed|not permitted|invalid|extra inputs", re.I)


AUTH_HINT = "check the API key (keyring service 'sourcecheckup' or the environment variable)"


def classify_sdk_error(exc: BaseException, sdk: Any, optional_params: Sequence[str] = (),
                       auth_hint: str = AUTH_HINT) -> Failure:
    """Map an openai/anthropic SDK exception (they share their error classes) to a Failure."""
    message = f"{type(exc).__name__}: {exc}"
    if isinstance(exc, sdk.APITimeoutError):
        return Failure("timeout", "the request timed out")
    if isinstance(exc, sdk.APIStatusError):
        status = exc.status_code
        headers = getattr(exc.response, "headers", None)
        wait = retry_after_seconds(headers)
        if status in (400, 413, 500) and _CONTEXT_EXCEEDED.search(str(exc)):
            return Failure("context_exceeded", f"context exceeded (HTTP {status}): {exc}", status)
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
            return Failure("fatal", f"authentication failed (HTTP {status}): {auth_hint}", status)
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
# The client


class LLMClient:
    """One model behind an HTTP API. Providers implement ``_post`` and ``repair_turns``."""

    provider: str = "api"
    sdk: Any = None
    optional_params: tuple[str, ...] = ("temperature", "seed")
    structured_fallback = False   # a 400/500 on the first structured call, whatever it says, drops the schema

    def __init__(self, settings: ClientSettings, api_key: str | None, spec: str):
        self.settings = settings
        self.id = spec
        self._secrets = [api_key] if api_key and api_key != NO_KEY else []
        protect_secret(api_key)
        self._rpm = RateLimiter(settings.rpm) if settings.rpm else None
        self._tpm = RateLimiter(settings.tpm) if settings.tpm else None
        self.gate = ContextGate(settings.concurrency)
        self._usage = Usage()
        self._dropped: set[str] = set()
        self.limits: ServerLimits | None = None    # what the server reported (compatible servers)
        self._limits_lock: asyncio.Lock | None = None
        self._structured_ok = False                # a structured call has succeeded: the server takes them
        self._context_hinted = False
        self.auth_hint = AUTH_HINT

    # -- provider hooks ---------------------------------------------------------------------

    async def _post(self, system: str, turns: list[Any], schema: Schema | None,
                    options: CallOptions) -> Reply:
        """One HTTP request; raises the SDK's exceptions (the loop classifies them)."""
        raise NotImplementedError

    def first_turns(self, user: str) -> list[Any]:
        """The conversation of one user message."""
        return [{"role": "user", "content": user}]

    def repair_turns(self, turns: list[Any], reply: Reply, instruction: str, schema: Schema) -> list[Any]:
        """``turns`` followed by ``reply`` and a request to reply again following ``instruction``."""
        raise NotImplementedError

    async def _read_limits(self) -> ServerLimits:
        """What the server reports about its context and slots (a hosted API: nothing to ask)."""
        return ServerLimits()

    async def _count_tokens(self, texts: list[str]) -> list[int] | None:
        """Each text's tokens by the server's own tokenizer, or None where it cannot say (a hosted API)."""
        return None

    async def prompt_tokens(self, system: str, turns: list[Any], estimate: int) -> int:
        """The tokens a call's prompt takes on the server: counted by its tokenizer where it has one (a
        llama.cpp or vLLM server; the 4-characters-a-token estimate is 2.7 times too low for a table of
        lab values on llama's vocabulary), plus a chat template's few tokens a message; else ``estimate``."""
        if self.limits is None or not self.limits.tokenizer:
            return estimate
        texts = [system] + [str(t.get("content") or "") if isinstance(t, dict) else json.dumps(t, default=str)
                            for t in turns]
        try:
            counts = await self._count_tokens(texts)
        except Exception as exc:  # a count that fails leaves the estimate
            log.debug("%s: could not count the prompt's tokens (%s)", self.id, type(exc).__name__)
            counts = None
        if not counts:
            return estimate
        return max(estimate, sum(counts) + 8 * len(texts) + 16)

    # -- public ------------------------------------------------------------------------------

    async def server_limits(self) -> ServerLimits:
        """The server's limits, asked once; the gate narrows to its slots and shared context."""
        if self.limits is not None:
            return self.limits
        if self._limits_lock is None:
            self._limits_lock = asyncio.Lock()
        async with self._limits_lock:
            if self.limits is None:
                try:
                    limits = await self._read_limits()
                except Exception as exc:  # a server that cannot say keeps the defaults
                    log.debug("%s: could not read the server's limits (%s)", self.id, type(exc).__name__)
                    limits = ServerLimits()
                self.gate.limit(limits.slots, limits.shared_tokens)
                if limits.context_tokens:
                    log.info("%s: %s", self.id, limits.describe())
                self.limits = limits
        return self.limits

    @property
    def context_tokens(self) -> int:
        """The tokens one request may use: as the server reported, else the configured window."""
        if self.limits is not None and self.limits.context_tokens:
            return self.limits.context_tokens
        return self.settings.context_tokens

    def output_limit(self, prompt_tokens: int, wanted: int) -> int:
        """``wanted`` output tokens, fewer where the server's reported context leaves less after the prompt."""
        if self.limits is None or not self.limits.context_tokens:
            return wanted
        return min(wanted, max(16, self.limits.context_tokens - prompt_tokens - 32))

    @property
    def dropped_params(self) -> frozenset[str]:
        """Optional request fields the server rejected, so calls no longer send them."""
        return frozenset(self._dropped)

    def usage(self) -> UsageReport:
        return self._usage.report()

    def redact(self, text: str | None) -> str | None:
        """``text`` with this client's key removed."""
        return redact(text, self._secrets)

    async def complete(self, system: str, user: str, schema: Schema | None, options: CallOptions) -> Reply:
        """One user message, one reply (text and refusal redacted); raises :class:`LLMCallError`."""
        reply = await self.send(system, self.first_turns(user), schema, options)
        return Reply(text=self.redact(reply.text), payload=reply.payload, model=reply.model,
                     tokens_in=reply.tokens_in, tokens_out=reply.tokens_out,
                     refusal=self.redact(reply.refusal), stop=reply.stop, assistant_turn=reply.assistant_turn,
                     first_token_logprobs=reply.first_token_logprobs, first_token=reply.first_token)

    def _backoff(self, attempt: int) -> float:
        return backoff_delay(attempt, self.settings.backoff_s, self.settings.max_backoff_s)

    async def send(self, system: str, turns: list[Any], schema: Schema | None, options: CallOptions) -> Reply:
        """One call with retries, rate limits and usage accounting; raises :class:`LLMCallError`."""
        import dataclasses

        estimate = approx_tokens(system) + sum(approx_tokens(json.dumps(t, default=str)) for t in turns) + 200
        limits = await self.server_limits()
        if limits.context_tokens:
            # what the server will hold for this call: its own count of the prompt, where it counts
            estimate = await self.prompt_tokens(system, turns, estimate)
            options = dataclasses.replace(options, max_tokens=self.output_limit(estimate, options.max_tokens))
        attempt = 0
        overflows = 0      # a shared cache that overflowed fails every call in flight: retried apart
        dropped_here = 0
        dropped_structured = False
        epoch = self.gate.epoch
        while True:
            if self._rpm:
                await self._rpm.acquire(1)
            if self._tpm:
                await self._tpm.acquire(estimate)
            self._usage.attempts += 1
            structured = (schema is not None and options.structured and "response_format" not in self._dropped
                          and "response_format" in self.optional_params)
            try:
                async with self.gate.hold(estimate + options.max_tokens) as epoch:
                    reply = await self._post(system, turns, schema, options)
            except asyncio.CancelledError:
                raise
            except Exception as exc:
                failure = classify_sdk_error(exc, self.sdk, self.optional_params, self.auth_hint)
                message = self.redact(failure.message) or ""
                # bounded: each optional field can be dropped once; a call already in flight when
                # another dropped the field is simply sent again without it
                if failure.kind == "unsupported_param" and dropped_here < len(self.optional_params):
                    dropped_here += 1
                    if failure.param not in self._dropped:
                        self._dropped.add(failure.param or "")
                        log.warning("%s: the API does not accept '%s'; sending requests without it",
                                    self.id, failure.param)
                    continue
                # a server that fails the first structured call, whatever it says ("Failed to initialize
                # samplers"), is asked once without structured output; the verdict is then read from text
                if (structured and self.structured_fallback and not self._structured_ok
                        and failure.status in (400, 422, 500) and failure.kind != "context_exceeded"
                        and not dropped_structured):
                    dropped_structured = True
                    self._dropped.add("response_format")
                    log.warning("%s: the server failed a request with structured output (%s); sending "
                                "requests without it", self.id, message[:200])
                    continue
                if dropped_structured and not structured and "response_format" in self._dropped:
                    # it failed without structured output too: the server's trouble was not the schema
                    self._dropped.discard("response_format")
                    dropped_structured = False
                if failure.kind == "context_exceeded":
                    self._hint_context()
                    # 400: this request alone is larger than a slot, no retry helps; 500: the calls in
                    # flight together overflowed the shared cache (every one of them fails): narrow the
                    # gate once for them all and send each again, until it failed even alone
                    if failure.status == 400 or overflows >= self.settings.max_retries + 2:
                        raise LLMCallError(f"{message}; {CONTEXT_HINT}") from None
                    overflows += 1
                    if self.gate.narrow(epoch):
                        log.info("%s: the server's shared context overflowed; now at most %d call(s) at once, "
                                 "holding %s tokens together", self.id, self.gate.slots, self.gate.tokens)
                    self._usage.retries += 1
                    await asyncio.sleep(self._backoff(0))
                    continue
                elif not failure.retryable:
                    raise LLMCallError(message) from None
                if attempt >= self.settings.max_retries:
                    raise LLMCallError(f"{message}; gave up after {attempt + 1} attempt(s)") from None
                wait = failure.retry_after
                if wait is not None and wait > self.settings.max_retry_wait_s:
                    raise LLMCallError(f"{message}; the server asks to wait {wait:.0f} s, more than "
                                       f"max_retry_wait_s={self.settings.max_retry_wait_s:.0f}") from None
                wait = self._backoff(attempt) if wait is None else wait * (1 + random.uniform(0, 0.1))
                (log.info if failure.kind == "context_exceeded" else log.warning)(
                    "%s: %s; retry %d of %d in %.2f s", self.id, message, attempt + 1, self.settings.max_retries, wait)
                self._usage.retries += 1
                attempt += 1
                await asyncio.sleep(wait)
                continue
            if structured:
                self._structured_ok = True
            if self._tpm:
                self._tpm.adjust(reply.tokens_in + reply.tokens_out - estimate)
            self._usage.add(reply.model, reply.tokens_in, reply.tokens_out)
            return reply

    def _hint_context(self) -> None:
        """Say once, for this client, what to change when the server's context overflows."""
        if not self._context_hinted:
            self._context_hinted = True
            where = f" ({self.limits.describe()})" if self.limits and self.limits.context_tokens else ""
            log.warning("%s: %s%s; fewer calls are sent at once meanwhile", self.id, CONTEXT_HINT, where)

    async def aclose(self) -> None:
        client = getattr(self, "client", None)
        if client is not None:
            await client.close()
