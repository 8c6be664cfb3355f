"""``openai:`` and ``openai-compatible:`` models that write text (the OpenAI judge's client)."""
from __future__ import annotations

from typing import Any

from ..judges.llm import Schema
from ..judges.openai_api import OpenAIJudge
from .chat import _CALL, CallOptions, _Completing


class OpenAIChat(_Completing, OpenAIJudge):
    def _params(self, system: str, turns: list[Any], schema: Schema | None, max_tokens: int) -> dict[str, Any]:
        options = _CALL.get(CallOptions())
        if schema is None:
            schema = Schema("reply", {"type": "object"}, "")
        params = super()._params(system, turns, schema, max_tokens)
        params.pop("seed", None)
        params.pop("temperature", None)
        if options.temperature is not None and "temperature" not in self._unsupported:
            params["temperature"] = options.temperature
        if options.seed is not None and "seed" not in self._unsupported:
            params["seed"] = options.seed
        if not options.structured or schema.name == "reply":
            params.pop("response_format", None)
        return params
