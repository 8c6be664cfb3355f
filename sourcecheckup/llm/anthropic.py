"""Anthropic messages: the ``anthropic:MODEL`` client.

Structured output is a forced tool call whose ``input_schema`` is the reply's schema.
A temperature is sent where the model still accepts it (newer models reject the field; the
client then drops it). The API has no seed.
"""
from __future__ import annotations

import json
from typing import Any

import anthropic

from .client import CallOptions, ClientSettings, LLMClient, Reply
from .replies import Schema


def usage_tokens(usage: Any) -> tuple[int, int]:
    """(input, output) tokens of a messages reply; cached prompt tokens count as input."""
    if usage is None:
        return 0, 0
    tokens_in = ((usage.input_tokens or 0) + (getattr(usage, "cache_creation_input_tokens", 0) or 0)
                 + (getattr(usage, "cache_read_input_tokens", 0) or 0))
    return tokens_in, usage.output_tokens or 0


class AnthropicClient(LLMClient):
    provider = "anthropic"
    sdk = anthropic
    optional_params = ("temperature",)

    def __init__(self, settings: ClientSettings, api_key: str | None, spec: str):
        super().__init__(settings, api_key, spec)
        self.client = anthropic.AsyncAnthropic(api_key=api_key, base_url=settings.base_url,
                                               max_retries=0, timeout=settings.timeout_s)
        self.client.messages   # noqa: B018  (the SDK imports this on first use: now, not mid-run)

    @staticmethod
    def tool_name(schema: Schema) -> str:
        return f"record_{schema.name}"

    async def _post(self, system: str, turns: list[Any], schema: Schema | None, options: CallOptions) -> Reply:
        structured = schema is not None and options.structured
        name = self.tool_name(schema) if schema is not None else ""
        kwargs: dict[str, Any] = {}
        if structured:
            assert schema is not None
            kwargs["tools"] = [{"name": name, "description": schema.description,
                                "input_schema": schema.json_schema}]
            kwargs["tool_choice"] = {"type": "tool", "name": name}
        if options.temperature is not None and "temperature" not in self.dropped_params:
            # the SDK no longer names the field; models that still take it read it from the body
            kwargs["extra_body"] = {"temperature": options.temperature}
        response = await self.client.messages.create(model=self.settings.model, max_tokens=options.max_tokens,
                                                     system=system, messages=turns, **kwargs)
        tokens_in, tokens_out = usage_tokens(response.usage)
        texts = [b.text for b in response.content if getattr(b, "type", None) == "text"]
        tool = next((b for b in response.content
                     if structured and getattr(b, "type", None) == "tool_use" and b.name == name), None)
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

    def repair_turns(self, turns: list[Any], reply: Reply, instruction: str, schema: Schema) -> list[Any]:
        instruction = instruction + f" Call the {self.tool_name(schema)} tool."
        turn = reply.assistant_turn or {"role": "assistant", "content": reply.text or "(empty)"}
        tool_ids = [b.get("id") for b in turn["content"] if isinstance(turn["content"], list)
                    and isinstance(b, dict) and b.get("type") == "tool_use"]
        if tool_ids:
            answer = [{"type": "tool_result", "tool_use_id": tid, "is_error": True, "content": instruction}
                      for tid in tool_ids]
            return [*turns, turn, {"role": "user", "content": answer}]
        return [*turns, turn, {"role": "user", "content": instruction}]
