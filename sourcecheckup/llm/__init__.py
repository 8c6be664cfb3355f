"""The one LLM client layer: model specs, API keys, the retry/rate-limit loop, structured replies, prices.

Judges, the LLM parser, SourceCleanup and the benchmark's answerers *use* a client from
:func:`make_client`; nothing else talks to an LLM API.
"""
from __future__ import annotations

import logging
from typing import Any, Mapping

from .client import CLIENT_SETTING_NAMES, NO_KEY, ClientSettings, LLMClient
from .secrets import compatible_key, get_api_key
from .spec import SpecError, parse_model_spec

log = logging.getLogger("sourcecheckup.llm")


def split_options(options: Mapping[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """(the client's settings and ``api_key``, everything else) from a mixed options mapping."""
    mine = {k: v for k, v in options.items() if k in CLIENT_SETTING_NAMES or k in ("api_key", "key_env")}
    rest = {k: v for k, v in options.items() if k not in mine}
    return mine, rest


def make_client(spec: str, **options: Any) -> LLMClient:
    """A client for ``openai:MODEL``, ``anthropic:MODEL`` or ``openai-compatible:BASE_URL#MODEL``.

    ``options`` are :class:`ClientSettings` fields and ``api_key`` (else the keyring or the
    environment; a compatible server needs none, or takes one from ``key_env``, the keyring entry
    ``openai-compatible`` or ``SOURCECHECKUP_JUDGE_KEY``); other options are ignored. Raises
    :class:`~.spec.SpecError` for a malformed spec or setting, ``MissingKeyError`` without a key.
    """
    parsed = parse_model_spec(spec)
    values: dict[str, Any] = {}
    if parsed.kind == "anthropic":
        values["context_tokens"] = 200_000
    elif parsed.kind == "openai-compatible":
        values.update(timeout_s=120.0, context_tokens=8192, concurrency=4, base_url=parsed.base_url)
    unknown = []
    for key, value in options.items():
        if key in ("api_key", "key_env") or (key == "base_url" and parsed.base_url):
            continue
        if key in CLIENT_SETTING_NAMES:
            if value is not None:
                values[key] = value
        else:
            unknown.append(key)
    if unknown:
        log.debug("client %s ignores options it does not use: %s", spec, ", ".join(sorted(unknown)))
    settings = ClientSettings(model=parsed.model, **values)
    if settings.max_retries < 0 or settings.concurrency < 1:
        raise SpecError("max_retries must be >= 0 and concurrency >= 1")
    api_key = options.get("api_key")
    # each SDK takes seconds to import: only the one a spec names is loaded
    if parsed.kind == "anthropic":
        from .anthropic import AnthropicClient

        return AnthropicClient(settings, api_key or get_api_key("anthropic"), str(parsed))
    from .openai import OpenAIClient

    if parsed.kind == "openai":
        return OpenAIClient(settings, api_key or get_api_key("openai"), str(parsed))
    server_key = api_key or compatible_key(options.get("key_env"))
    return OpenAIClient(settings, server_key or NO_KEY, str(parsed), compatible=True)
