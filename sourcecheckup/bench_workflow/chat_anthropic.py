"""``anthropic:`` models that write text (the Anthropic judge's client)."""
from __future__ import annotations

import json
from typing import Any

from ..judges.anthropic_api import AnthropicJudge, usage_tokens
from ..judges.llm import Reply, Schema
from .chat import _CALL, CallOptions, _Completing


class AnthropicChat(_Completing, AnthropicJudge):
    async def _send(self, system: str, turns: list[Any], schema: Schema | None, max_tokens: int) -> Reply:
        options = _CALL.get(CallOptions())
        kwargs: dict[str, Any] = {}
        name = self.tool_name(schema) if schema is not None else ""
        structured = schema is not None and options.structured
        if structured:
            assert schema is not None
            kwargs["tools"] = [{"name": name, "description": schema.description,
                                "input_schema": schema.json_schema}]
            kwargs["tool_choice"] = {"type": "tool", "name": name}
        if options.temperature is not None and "temperature" not in self._unsupported:
            # this SDK no longer names the field; models that still take it read it from the body
            kwargs["extra_body"] = {"temperature": options.temperature}
        response = await self.client.messages.create(model=self.settings.model, max_tokens=max_tokens,
                                                     system=system, messages=turns, **kwargs)
        tokens_in, tokens_out = usage_tokens(response.usage)
        texts = [b.text for b in response.content if getattr(b, "type", None) == "text"]
        model = response.model or self.settings.model
        if response.stop_reason == "refusal":
            return Reply(text="\n".join(texts) or None, payload=None, model=model, tokens_in=tokens_in,
                         tokens_out=tokens_out, refusal=" ".join(texts) or "stop_reason=refusal",
                         stop=response.stop_reason)
        tool = next((b for b in response.content
                     if structured and getattr(b, "type", None) == "tool_use" and b.name == name), None)
        if tool is not None and isinstance(tool.input, dict):
            return Reply(text=json.dumps(tool.input, ensure_ascii=False), payload=tool.input, model=model,
                         tokens_in=tokens_in, tokens_out=tokens_out, stop=response.stop_reason)
        return Reply(text="\n".join(texts) or None, payload=None, model=model, tokens_in=tokens_in,
                     tokens_out=tokens_out, stop=response.stop_reason)
