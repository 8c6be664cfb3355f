"""Model servers running on the user's own machine, found for them: Ollama, LM Studio, llama.cpp, vLLM.

Only 127.0.0.1 is asked, on a few well-known ports, all at once with a short timeout; nothing
else on the network is ever contacted. Each model a server lists becomes a judge spec
(``openai-compatible:http://127.0.0.1:11434/v1#llama3.1``). A judge on the user's own machine
needs no ``--allow-host``: that guard keeps *cited URLs* off private addresses, and a judge
endpoint is a choice the user made, not a URL taken from an answer.
"""
from __future__ import annotations

import asyncio
import os
from dataclasses import dataclass
from typing import Any, Sequence

import httpx

HOST = "127.0.0.1"   # the one host ever asked
PORTS_ENV = "SOURCECHECKUP_DETECT_PORTS"   # e.g. "11434,1234": the ports to ask instead of the known ones
DEFAULT_TIMEOUT_S = 0.5

# the ports these servers listen on out of the box, and the name a user knows them by
KNOWN_PORTS: tuple[tuple[int, str], ...] = (
    (11434, "Ollama"), (1234, "LM Studio"), (8080, "llama.cpp server"), (8000, "vLLM"))
# what /v1/models says in `owned_by`, where a server says who it is
_OWNERS = {"vllm": "vLLM", "llamacpp": "llama.cpp server", "organization_owner": "LM Studio", "library": "Ollama"}


@dataclass(frozen=True)
class LocalServer:
    """One server that answered on 127.0.0.1, with the models it offers."""

    port: int
    kind: str                 # "Ollama", "LM Studio", "llama.cpp server", "vLLM" or "OpenAI-compatible server"
    models: tuple[str, ...]
    needs_key: bool = False   # it answered 401/403: it was started with an API key

    @property
    def base_url(self) -> str:
        return f"http://{HOST}:{self.port}/v1"

    def spec(self, model: str) -> str:
        """The judge spec that uses ``model`` on this server: a MiniCheck model answers Yes/No, so it is
        a ``checker:``; any other model is asked for the verifier's JSON (``openai-compatible:``)."""
        kind = "checker" if "minicheck" in model.lower() else "openai-compatible"
        return f"{kind}:{self.base_url}#{model}"

    @property
    def specs(self) -> tuple[str, ...]:
        return tuple(self.spec(m) for m in self.models)

    def as_dict(self) -> dict[str, Any]:
        return {"port": self.port, "kind": self.kind, "base_url": self.base_url, "needs_key": self.needs_key,
                "models": [{"model": m, "spec": self.spec(m)} for m in self.models]}


def ports_to_ask(ports: Sequence[int] | None = None, env: dict[str, str] | None = None) -> list[int]:
    """The ports given, else those in ``$SOURCECHECKUP_DETECT_PORTS``, else the known ones.
    Raises ValueError for a port that is not a number from 1 to 65535."""
    if not ports:
        raw = (os.environ if env is None else env).get(PORTS_ENV, "").replace(";", ",")
        ports = [int(p) for p in raw.split(",") if p.strip()] if raw.strip() else [p for p, _ in KNOWN_PORTS]
    out: list[int] = []
    for port in ports:
        port = int(port)
        if not 0 < port < 65536:
            raise ValueError(f"port {port} is not a port number (1-65535)")
        if port not in out:
            out.append(port)
    return out


def port_name(port: int) -> str:
    """What usually listens on ``port`` ("Ollama" on 11434), or "port N"."""
    return dict(KNOWN_PORTS).get(port, f"port {port}")


NEEDS_KEY = "needs a key"   # what _get_json gives for a 401/403: a server that wants an API key


async def _get_json(client: httpx.AsyncClient, url: str) -> Any | None:
    try:
        response = await client.get(url)
    except (httpx.HTTPError, OSError):
        return None
    if response.status_code in (401, 403):
        return NEEDS_KEY
    if response.status_code != 200:
        return None
    try:
        return response.json()
    except ValueError:
        return None


def _names(items: Any, key: str) -> list[str]:
    if not isinstance(items, list):
        return []
    names = [str(item[key]).strip() for item in items if isinstance(item, dict) and item.get(key)]
    return [n for n in names if n]


async def probe(client: httpx.AsyncClient, port: int) -> LocalServer | None:
    """The server on 127.0.0.1:``port`` and its models, or None when nothing usable answers."""
    base = f"http://{HOST}:{port}"
    tags, models = await asyncio.gather(_get_json(client, f"{base}/api/tags"), _get_json(client, f"{base}/v1/models"))
    listed = _names(models.get("data"), "id") if isinstance(models, dict) else []
    if isinstance(tags, dict) and isinstance(tags.get("models"), list):
        # Ollama: /api/tags lists every pulled model (its /v1/models lists the same, when it has one)
        names = _names(tags["models"], "name") or _names(tags["models"], "model")
        return LocalServer(port, "Ollama", tuple(dict.fromkeys(names + listed)))
    refused = NEEDS_KEY in (models, tags)
    if not isinstance(models, dict) or not isinstance(models.get("data"), list):
        if refused:   # it answered, and wants a key before it says more
            # llama-server keeps only /health open ({"status": "ok"}); vLLM's /health has an empty body
            health = await _get_json(client, f"{base}/health")
            kind = ("llama.cpp server" if isinstance(health, dict) and health.get("status") == "ok" else
                    port_name(port) if port in dict(KNOWN_PORTS) else "OpenAI-compatible server")
            return LocalServer(port, kind, (), needs_key=True)
        return None
    owners = {str(item.get("owned_by", "")).lower() for item in models["data"] if isinstance(item, dict)}
    owned = next((_OWNERS[o] for o in owners if o in _OWNERS), None)
    kind = (owned if owned is not None else
            port_name(port) if port in dict(KNOWN_PORTS) else "OpenAI-compatible server")
    # a keyed llama-server answers 401 on /v1/models (above); an older one listed its models to anyone and wanted
    # its key everywhere else
    needs_key = refused or (kind == "llama.cpp server" and await _get_json(client, f"{base}/props") == NEEDS_KEY)
    return LocalServer(port, kind, tuple(dict.fromkeys(listed)), needs_key=needs_key)


async def detect_servers(ports: Sequence[int] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> list[LocalServer]:
    """Every server that answers on 127.0.0.1 at ``ports`` (default: :func:`ports_to_ask`), asked at once."""
    wanted = ports_to_ask(ports)
    # trust_env=False: a proxy from the environment must never carry these requests off the machine
    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout_s), trust_env=False,
                                 follow_redirects=False) as client:
        found = await asyncio.gather(*(probe(client, port) for port in wanted))
    return [server for server in found if server is not None]


def find_local_servers(ports: Sequence[int] | None = None, timeout_s: float = DEFAULT_TIMEOUT_S) -> list[LocalServer]:
    """:func:`detect_servers` for callers without an event loop (the CLI, a worker thread)."""
    return asyncio.run(detect_servers(ports, timeout_s))


__all__ = ["HOST", "KNOWN_PORTS", "PORTS_ENV", "LocalServer", "detect_servers", "find_local_servers",
           "port_name", "ports_to_ask", "probe"]
