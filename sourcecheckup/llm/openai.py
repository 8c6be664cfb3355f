"""OpenAI chat completions: ``openai:MODEL`` and ``openai-compatible:BASE_URL#MODEL`` clients.

The compatible kind talks to Ollama, vLLM, LM Studio and llama.cpp servers, which speak the
same wire format; it needs no key. Structured output is a ``json_schema`` response format;
a server that rejects it (or the seed, or temperature) is asked again without it.
"""
from __future__ import annotations

from typing import Any

import openai
from openai.types.chat import ChatCompletion

from .client import NO_KEY, CallOptions, ClientSettings, LLMClient, Reply
from .replies import Schema
from .secrets import COMPATIBLE_KEY_HINT
from .server_limits import ServerLimits, count_tokens, read_server_limits


class OpenAIClient(LLMClient):
    provider = "openai"
    sdk = openai
    optional_params = ("temperature", "seed", "response_format", "logprobs")

    def __init__(self, settings: ClientSettings, api_key: str | None, spec: str, *,
                 compatible: bool = False):
        super().__init__(settings, api_key, spec)
        self.compatible = compatible
        self.structured_fallback = compatible
        self._api_key = api_key if api_key and api_key != NO_KEY else None
        if compatible:
            self.auth_hint = f"the server at {settings.base_url} wants an API key: {COMPATIBLE_KEY_HINT}"
        # max_retries=0: our own loop retries, so Retry-After is honoured and attempts are counted
        self.client = openai.AsyncOpenAI(api_key=api_key or NO_KEY, base_url=settings.base_url,
                                         max_retries=0, timeout=settings.timeout_s)

    async def _read_limits(self) -> ServerLimits:
        if not self.compatible or not self.settings.base_url:
            return ServerLimits()
        return await read_server_limits(self.settings.base_url, self.settings.model, self._api_key)

    async def _count_tokens(self, texts: list[str]) -> list[int] | None:
        if not self.compatible or not self.settings.base_url or self.limits is None:
            return None
        return await count_tokens(self.settings.base_url, self.settings.model, texts, self.limits.tokenizer,
                                  self._api_key)

    def params(self, system: str, turns: list[Any], schema: Schema | None, options: CallOptions) -> dict[str, Any]:
        """The request body, without the fields the server has rejected."""
        params: dict[str, Any] = {"model": self.settings.model,
                                  "messages": [{"role": "system", "content": system}, *turns]}
        if options.temperature is not None:
            params["temperature"] = options.temperature
        if schema is not None and options.structured:
            params["response_format"] = {"type": "json_schema",
                                         "json_schema": {"name": schema.name, "schema": schema.json_schema,
                                                         "strict": True}}
        if options.seed is not None:
            params["seed"] = options.seed
        # local servers know max_tokens; OpenAI's newer models only max_completion_tokens
        params["max_tokens" if self.compatible else "max_completion_tokens"] = options.max_tokens
        if options.top_logprobs:
            params["logprobs"] = True
            params["top_logprobs"] = options.top_logprobs
        for name in self.dropped_params:
            params.pop(name, None)
            if name == "logprobs":
                params.pop("top_logprobs", None)
        return params

    async def _post(self, system: str, turns: list[Any], schema: Schema | None, options: CallOptions) -> Reply:
        # the SDK's generic POST with the typed result: chat.completions.create() would first walk
        # these params (plain JSON already) through its type-driven transform, about a millisecond
        # of CPU a call, which a fast local server at high concurrency turns into most of the run
        response = await self.client.post("/chat/completions", cast_to=ChatCompletion,
                                          body=self.params(system, turns, schema, options))
        usage = response.usage
        tokens_in = (usage.prompt_tokens or 0) if usage else 0
        tokens_out = (usage.completion_tokens or 0) if usage else 0
        model = response.model or self.settings.model
        if not response.choices:
            return Reply(None, None, model, tokens_in, tokens_out)
        choice = response.choices[0]
        message = choice.message
        refusal = getattr(message, "refusal", None)
        if not refusal and choice.finish_reason == "content_filter":
            refusal = "the reply was withheld by the provider's content filter"
        first, alternatives = _first_token_logprobs(choice)
        return Reply(text=message.content, payload=None, model=model, tokens_in=tokens_in,
                     tokens_out=tokens_out, refusal=refusal or None, stop=choice.finish_reason,
                     assistant_turn={"role": "assistant", "content": message.content or ""},
                     first_token_logprobs=alternatives, first_token=first)

    def repair_turns(self, turns: list[Any], reply: Reply, instruction: str, schema: Schema) -> list[Any]:
        return [*turns, reply.assistant_turn or {"role": "assistant", "content": reply.text or ""},
                {"role": "user", "content": instruction}]


def _first_token_logprobs(choice: Any) -> tuple[str | None, tuple[tuple[str, float], ...] | None]:
    """(the first generated token, its alternatives as (token, logprob)), or (None, None) when the
    server sent no logprobs."""
    content = getattr(getattr(choice, "logprobs", None), "content", None)
    if not content:
        return None, None
    first = content[0]
    alternatives = [(t.token, float(t.logprob)) for t in (first.top_logprobs or [])]
    if not any(token == first.token for token, _ in alternatives):
        alternatives.insert(0, (first.token, float(first.logprob)))
    return first.token, tuple(alternatives)
