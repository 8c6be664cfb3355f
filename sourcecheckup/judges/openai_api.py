"""OpenAI chat-completions judges: ``openai:MODEL`` and ``openai-compatible:BASE_URL#MODEL``.

The compatible kind talks to Ollama, vLLM, LM Studio and llama.cpp servers, which speak the
same wire format; it needs no key. Structured output is a ``json_schema`` response format;
a server that rejects it (or the seed, or temperature) is asked again without it, and every
verdict says so in its flags.
"""
from __future__ import annotations

from typing import Any

import openai
from openai.types.chat import ChatCompletion

from ..keys import get_api_key
from .base import JudgeSpecError
from .llm import ApiJudge, ApiJudgeSettings, Reply, Schema, repair_instruction, settings_from_options

NO_KEY = "not-needed"


class OpenAIJudge(ApiJudge):
    provider = "openai"
    sdk = openai
    optional_params = ("temperature", "seed", "response_format")

    def __init__(self, settings: ApiJudgeSettings, api_key: str | None, spec: str, *,
                 compatible: bool = False):
        super().__init__(settings, api_key, spec)
        self.compatible = compatible
        # max_retries=0: our own loop retries, so Retry-After is honoured and attempts are counted
        self.client = openai.AsyncOpenAI(api_key=api_key or NO_KEY, base_url=settings.base_url,
                                         max_retries=0, timeout=settings.timeout_s)

    def _params(self, system: str, turns: list[Any], schema: Schema, max_tokens: int) -> dict[str, Any]:
        params: dict[str, Any] = {
            "model": self.settings.model,
            "messages": [{"role": "system", "content": system}, *turns],
            "temperature": 0,
            "response_format": {"type": "json_schema",
                                "json_schema": {"name": schema.name, "schema": schema.json_schema,
                                                "strict": True}},
        }
        if self.settings.seed is not None:
            params["seed"] = self.settings.seed
        # local servers know max_tokens; OpenAI's newer models only max_completion_tokens
        params["max_tokens" if self.compatible else "max_completion_tokens"] = max_tokens
        for name in self._unsupported:
            params.pop(name, None)
        return params

    async def _send(self, system: str, turns: list[Any], schema: Schema, max_tokens: int) -> Reply:
        # the SDK's generic POST with the typed result: chat.completions.create() would first walk
        # these params (plain JSON already) through its type-driven transform, about a millisecond
        # of CPU a call, which a fast local server at high concurrency turns into most of the run
        response = await self.client.post("/chat/completions", cast_to=ChatCompletion,
                                          body=self._params(system, turns, schema, max_tokens))
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
        return Reply(text=message.content, payload=None, model=model, tokens_in=tokens_in,
                     tokens_out=tokens_out, refusal=refusal or None, stop=choice.finish_reason,
                     assistant_turn={"role": "assistant", "content": message.content or ""})

    def _repair_turns(self, turns: list[Any], reply: Reply, problem: str, schema: Schema) -> list[Any]:
        return [*turns, reply.assistant_turn or {"role": "assistant", "content": reply.text or ""},
                {"role": "user", "content": repair_instruction(problem, schema)}]


def from_spec(arg: str, **options: Any) -> OpenAIJudge:
    """``openai:MODEL``; the key comes from ``api_key=``, the keyring or OPENAI_API_KEY."""
    settings, api_key = settings_from_options(arg, options)
    api_key = api_key or get_api_key("openai")
    return OpenAIJudge(settings, api_key, f"openai:{settings.model}")


def from_compatible_spec(arg: str, **options: Any) -> OpenAIJudge:
    """``openai-compatible:BASE_URL#MODEL``, e.g. ``http://localhost:11434/v1#llama3.1``."""
    base_url, sep, model = arg.rpartition("#")
    if not sep or not base_url.strip() or not model.strip():
        raise JudgeSpecError(f"'openai-compatible:{arg}' needs a base URL and a model: "
                             "write openai-compatible:http://localhost:11434/v1#llama3.1")
    if not base_url.startswith(("http://", "https://")):
        raise JudgeSpecError(f"the base URL '{base_url}' must start with http:// or https://")
    options = {**options, "base_url": base_url.strip()}
    settings, api_key = settings_from_options(model.strip(), options, timeout_s=120.0,
                                              context_tokens=8192, concurrency=4)
    return OpenAIJudge(settings, api_key or NO_KEY, f"openai-compatible:{base_url.strip()}#{settings.model}",
                       compatible=True)
