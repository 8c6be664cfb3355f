"""What a model server on the user's side serves: its context window, its slots, its tokenizer.

Asked once per client, where the server says it (a server that says nothing keeps the defaults):

- llama.cpp ``llama-server``: ``GET /props`` (``default_generation_settings.n_ctx``: the tokens one
  request may use; ``total_slots``) and ``GET /v1/models`` (``data[].meta.n_ctx``: the same figure,
  one slot's context). Neither says whether the slots share one cache (``-c N`` with ``-np`` left at
  auto: 4 slots, each may use all N tokens, together no more than N; an overflow fails every request
  in flight) or split it (``-c N -np K``: N/K tokens a slot), so the slots together are held to one
  slot's context: safe for both, and only under-uses a split cache. ``POST /tokenize`` counts tokens
  with the model's own tokenizer;
- vLLM: ``GET /v1/models`` (``data[].max_model_len``); ``POST /tokenize`` (``count``);
- Ollama: ``POST /api/show`` (``num_ctx`` in ``parameters``, else the model's ``*.context_length``
  capped at Ollama's default window of 4,096 tokens, which its OpenAI endpoint cannot change).
"""
from __future__ import annotations

import asyncio
import logging
import re
from dataclasses import dataclass
from typing import Any

import httpx

log = logging.getLogger("sourcecheckup.llm")

OLLAMA_DEFAULT_CTX = 4096
CONTEXT_HINT = ("the server's context is full: start llama-server with a larger context (-c) or fewer "
                "parallel slots (-np), or lower --concurrency")


@dataclass(frozen=True)
class ServerLimits:
    """What a server said about itself; None where it said nothing."""

    context_tokens: int | None = None    # the most tokens (prompt + reply) one request may use
    shared_tokens: int | None = None     # the cache all requests in flight share
    slots: int | None = None             # requests the server runs at once
    tokenizer: str | None = None         # "llama.cpp" or "vllm": the server counts tokens at /tokenize
    source: str = ""                     # where the figures came from, for messages

    def describe(self) -> str:
        if self.context_tokens is None:
            return "the server did not report its context"
        slots = f", {self.slots} slot(s)" if self.slots else ""
        return f"{self.context_tokens:,}-token context{slots} ({self.source})"


def server_root(base_url: str) -> str:
    """``http://host:port/v1`` -> ``http://host:port``."""
    return re.sub(r"/v1/?$", "", base_url.rstrip("/"))


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


async def _get(client: httpx.AsyncClient, method: str, url: str, **kw: Any) -> Any | None:
    try:
        response = await client.request(method, url, **kw)
    except (httpx.HTTPError, OSError):
        return None
    if response.status_code != 200:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def _ollama_ctx(show: dict[str, Any]) -> int | None:
    params = show.get("parameters")
    if isinstance(params, str):
        found = re.search(r"^\s*num_ctx\s+(\d+)", params, re.M)
        if found:
            return int(found.group(1))
    info = show.get("model_info")
    if isinstance(info, dict):
        trained = next((_int(v) for k, v in info.items() if str(k).endswith(".context_length")), None)
        if trained:
            return min(trained, OLLAMA_DEFAULT_CTX)
    return None


async def read_server_limits(base_url: str, model: str, api_key: str | None = None,
                             timeout_s: float = 5.0) -> ServerLimits:
    """The limits the server at ``base_url`` reports for ``model`` (see the module's list)."""
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    root = server_root(base_url)
    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout_s), headers=headers, trust_env=False) as client:
        props, models, show = await asyncio.gather(
            _get(client, "GET", f"{root}/props"), _get(client, "GET", f"{base_url.rstrip('/')}/models"),
            _get(client, "POST", f"{root}/api/show", json={"model": model}))
    entries = models.get("data") if isinstance(models, dict) else None
    entry = None
    if isinstance(entries, list):
        dicts = [e for e in entries if isinstance(e, dict)]
        entry = next((e for e in dicts if e.get("id") == model), dicts[0] if dicts else None)
    if isinstance(props, dict) and isinstance(props.get("default_generation_settings"), dict):
        slot_ctx = _int(props["default_generation_settings"].get("n_ctx"))
        meta = entry.get("meta") if isinstance(entry, dict) else None
        reported = _int(meta.get("n_ctx")) if isinstance(meta, dict) else None
        slot_ctx = min(c for c in (slot_ctx, reported) if c) if (slot_ctx or reported) else None
        return ServerLimits(slot_ctx, slot_ctx, _int(props.get("total_slots")), "llama.cpp", "llama.cpp /props")
    if isinstance(entry, dict) and isinstance(entry.get("meta"), dict) and _int(entry["meta"].get("n_ctx")):
        n_ctx = _int(entry["meta"]["n_ctx"])
        return ServerLimits(n_ctx, n_ctx, None, "llama.cpp", "llama.cpp /v1/models meta.n_ctx")
    if isinstance(entry, dict) and _int(entry.get("max_model_len")):
        return ServerLimits(_int(entry["max_model_len"]), None, None, "vllm", "vLLM /v1/models max_model_len")
    if isinstance(show, dict):
        ctx = _ollama_ctx(show)
        if ctx:
            return ServerLimits(ctx, None, None, None, "Ollama /api/show")
    return ServerLimits()


async def count_tokens(base_url: str, model: str, texts: list[str], kind: str | None,
                       api_key: str | None = None, timeout_s: float = 30.0) -> list[int] | None:
    """Each text's tokens by the server's own tokenizer (no special tokens), or None when it cannot say."""
    if kind not in ("llama.cpp", "vllm") or not texts:
        return None
    headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
    root = server_root(base_url)
    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout_s), headers=headers, trust_env=False) as client:
        sem = asyncio.Semaphore(8)

        async def one(text: str) -> int | None:
            async with sem:
                if kind == "llama.cpp":
                    body = await _get(client, "POST", f"{root}/tokenize", json={"content": text, "add_special": False})
                else:
                    body = await _get(client, "POST", f"{root}/tokenize",
                                      json={"model": model, "prompt": text, "add_special_tokens": False})
            if not isinstance(body, dict):
                return None
            if _int(body.get("count")) is not None or body.get("count") == 0:
                return int(body["count"])
            return len(body["tokens"]) if isinstance(body.get("tokens"), list) else None

        counts = await asyncio.gather(*(one(t) for t in texts))
    if any(c is None for c in counts):
        return None
    return [int(c) for c in counts if c is not None]
