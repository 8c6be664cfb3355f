"""Anthropic messages judge: ``anthropic:MODEL``.

Structured output is a forced tool call whose ``input_schema`` is the verdict schema.
Temperature 0 is sent where the model still accepts it (newer models reject the field;
the judge then drops it and flags its verdicts ``temperature_not_applied``). The API has
no seed.
"""
from __future__ import annotations

import json
from typing import Any

import anthropic

from ..keys import get_api_key
from .llm import ApiJudge, ApiJudgeSettings, Reply, Schema, repair_instruction, settings_from_options


def usage_tokens(usage: Any) -> tuple[int, int]:
    """(input, output) tokens of a messages reply; cached prompt tokens count as input."""
    if usage is None:
        return 0, 0
    tokens_in = ((usage.input_tokens or 0) + (getattr(usage, "cache_creation_input_tokens", 0) or 0)
                 + (getattr(usage, "cache_read_input_tokens", 0) or 0))
    return tokens_in, usage.output_tokens or 0


class AnthropicJudge(ApiJudge):
    provider = "anthropic"
    sdk = anthropic
    optional_params = ("temperature",)

    def __init__(self, settings: ApiJudgeSettings, api_key: str | None, spec: str):
        super().__init__(settings, api_key, spec)
        self.client = anthropic.AsyncAnthropic(api_key=api_key, base_url=settings.base_url,
                                               max_retries=0, timeout=settings.timeout_s)
        self.client.messages   # the SDK imports this on first use: now, not mid-run

    @staticmethod
    def tool_name(schema: Schema) -> str:
        return f"record_{schema.name}"

    async def _send(self, system: str, turns: list[Any], schema: Schema, max_tokens: int) -> Reply:
        name = self.tool_name(schema)
        extra: dict[str, Any] = {}
        if "temperature" not in self._unsupported:
            extra["temperature"] = 0  # the SDK no longer names the field; older models still honour it
        response = await self.client.messages.create(
            model=self.settings.model, max_tokens=max_tokens, system=system, messages=turns,
            tools=[{"name": name, "description": schema.description, "input_schema": schema.json_schema}],
            tool_choice={"type": "tool", "name": name}, extra_body=extra or None)
        tokens_in, tokens_out = usage_tokens(response.usage)
        texts = [b.text for b in response.content if getattr(b, "type", None) == "text"]
        tool = next((b for b in response.content
                     if getattr(b, "type", None) == "tool_use" and b.name == name), None)
        model = response.model or self.settings.model
        blocks = [b.model_dump(exclude_none=True) for b in response.content]
        turn = {"role": "assistant", "content": blocks or [{"type": "text", "text": "(empty)"}]}
        if response.stop_reason == "refusal":
            return Reply(text="\n".join(texts) or None, payload=None, model=model, tokens_in=tokens_in,
                         tokens_out=tokens_out, refusal=" ".join(texts) or "stop_reason=refusal",
                         stop=response.stop_reason, assistant_turn=turn)
        if tool is not None:
            payload = tool.input if isinstance(tool.input, dict) else None
            return Reply(text=json.dumps(tool.input, ensure_ascii=False), payload=payload, model=model,
                         tokens_in=tokens_in, tokens_out=tokens_out, stop=response.stop_reason,
                         assistant_turn=turn)
        return Reply(text="\n".join(texts) or None, payload=None, model=model, tokens_in=tokens_in,
                     tokens_out=tokens_out, stop=response.stop_reason, assistant_turn=turn)

    def _repair_turns(self, turns: list[Any], reply: Reply, problem: str, schema: Schema) -> list[Any]:
        instruction = repair_instruction(problem, schema) + f" Call the {self.tool_name(schema)} tool."
        turn = reply.assistant_turn or {"role": "assistant", "content": reply.text or "(empty)"}
        tool_ids = [b.get("id") for b in turn["content"] if isinstance(turn["content"], list)
                    and isinstance(b, dict) and b.get("type") == "tool_use"]
        if tool_ids:
            answer = [{"type": "tool_result", "tool_use_id": tid, "is_error": True, "content": instruction}
                      for tid in tool_ids]
            return [*turns, turn, {"role": "user", "content": answer}]
        return [*turns, turn, {"role": "user", "content": instruction}]


def from_spec(arg: str, **options: Any) -> AnthropicJudge:
    """``anthropic:MODEL``; the key comes from ``api_key=``, the keyring or ANTHROPIC_API_KEY."""
    settings, api_key = settings_from_options(arg, options, context_tokens=200_000)
    api_key = api_key or get_api_key("anthropic")
    return AnthropicJudge(settings, api_key, f"anthropic:{settings.model}")
