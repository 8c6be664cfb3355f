"""Models that write questions and answers: one prompt in, one reply out, through the judges' clients.

A :class:`ChatModel` is an API judge whose request carries the caller's temperature, seed and
output limit instead of the judge's fixed ones, so it inherits everything the judges already
do right: keys from the keyring or the environment (never logged), retries with Retry-After,
client-side rate limits, optional fields a server rejects dropped once, token accounting and
cost estimates. Specs are the judges': ``openai:MODEL``, ``anthropic:MODEL``,
``openai-compatible:BASE_URL#MODEL``.
"""
from __future__ import annotations

import contextvars
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from ..judges.base import JudgeSpecError, split_spec
from ..judges.llm import (ApiJudge, ApiJudgeSettings, JudgeCallError, Reply, Schema, UsageReport,
                          settings_from_options)
from ..keys import get_api_key

MODEL_KINDS = ("openai", "openai-compatible", "anthropic")


@dataclass(frozen=True)
class CallOptions:
    """Per-call sampling settings; None leaves the provider's default."""

    temperature: float | None = None
    seed: int | None = None
    max_tokens: int = 1024
    structured: bool = True


@dataclass(frozen=True)
class Completion:
    """One reply: the text (or the structured payload), the model that wrote it and its tokens."""

    text: str | None
    payload: dict[str, Any] | None
    model_version: str
    tokens_in: int
    tokens_out: int
    refusal: str | None = None
    stop: str | None = None


class ModelCallError(RuntimeError):
    """A call that failed for good after retries (auth, 404, rate limit budget, timeout)."""


@runtime_checkable
class ChatModel(Protocol):
    id: str

    async def complete(self, system: str, user: str, schema: Schema | None,
                       options: CallOptions) -> Completion: ...

    def usage(self) -> UsageReport: ...

    async def aclose(self) -> None: ...


# The retry loop of ApiJudge calls _send(system, turns, schema, max_tokens) and knows nothing of
# sampling settings; concurrent calls each run in their own task, so a context variable carries them.
_CALL: contextvars.ContextVar[CallOptions] = contextvars.ContextVar("sourcecheckup_call_options")


class _Completing:
    """The ``complete`` method shared by both providers (mixed into an ApiJudge subclass)."""

    async def complete(self: Any, system: str, user: str, schema: Schema | None,
                       options: CallOptions) -> Completion:
        token = _CALL.set(options)
        try:
            reply: Reply = await self._call(system, [{"role": "user", "content": user}], schema,
                                            options.max_tokens)
        except JudgeCallError as exc:
            raise ModelCallError(str(exc)) from None
        finally:
            _CALL.reset(token)
        return Completion(text=self._redact(reply.text), payload=reply.payload, model_version=reply.model,
                          tokens_in=reply.tokens_in, tokens_out=reply.tokens_out,
                          refusal=self._redact(reply.refusal), stop=reply.stop)


def make_model(spec: str, **options: Any) -> ApiJudge:
    """A model that writes text, from a spec string; ``options`` are the API judges' settings
    (``api_key``, ``base_url``, ``timeout_s``, ``max_retries``, ``concurrency``, ``rpm``, ...)."""
    kind, arg = split_spec(spec)
    # each SDK takes seconds to import: only the one a spec names is loaded
    if kind == "anthropic":
        from .chat_anthropic import AnthropicChat
    elif kind in ("openai", "openai-compatible"):
        from ..judges.openai_api import NO_KEY
        from .chat_openai import OpenAIChat
    if kind == "openai":
        settings, api_key = settings_from_options(arg, options)
        return OpenAIChat(settings, api_key or get_api_key("openai"), f"openai:{settings.model}")
    if kind == "anthropic":
        settings, api_key = settings_from_options(arg, options, context_tokens=200_000)
        return AnthropicChat(settings, api_key or get_api_key("anthropic"), f"anthropic:{settings.model}")
    if kind == "openai-compatible":
        base_url, sep, model = arg.rpartition("#")
        if not sep or not base_url.strip() or not model.strip() or \
                not base_url.strip().startswith(("http://", "https://")):
            raise JudgeSpecError(f"'{spec}' needs a base URL and a model: write "
                                 "openai-compatible:http://localhost:11434/v1#llama3.1")
        options = {**options, "base_url": base_url.strip()}
        settings, api_key = settings_from_options(model.strip(), options, timeout_s=120.0, concurrency=4)
        return OpenAIChat(settings, api_key or NO_KEY,
                          f"openai-compatible:{base_url.strip()}#{settings.model}", compatible=True)
    raise JudgeSpecError(f"'{spec}' names no model that can write answers: use "
                         + ", ".join(f"{k}:..." for k in MODEL_KINDS))


def is_model_spec(spec: str) -> bool:
    try:
        return split_spec(spec)[0] in MODEL_KINDS
    except JudgeSpecError:
        return False


__all__ = ["ApiJudgeSettings", "CallOptions", "ChatModel", "Completion", "MODEL_KINDS",
           "ModelCallError", "is_model_spec", "make_model"]
