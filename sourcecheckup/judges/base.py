"""The one interface every judge backend implements, and the spec-string registry."""
from __future__ import annotations

import asyncio
import importlib
from typing import Any, Callable, Protocol, Sequence, runtime_checkable

from ..evidence import SourceText
from ..models import Verdict


@runtime_checkable
class Judge(Protocol):
    """``verify(statement, source) -> Verdict`` plus a batch form.

    ``id`` is stored with every verdict (e.g. ``builtin``, ``openai:gpt-4o``);
    ``prompt_version`` names the prompt or method version that produced it.
    Implementations never raise for a pair they cannot decide: they return
    ``Verdict.error(...)`` (label ``judge_error``).
    """

    id: str
    prompt_version: str

    async def verify(self, statement: str, source: SourceText) -> Verdict: ...

    async def verify_many(self, pairs: Sequence[tuple[str, SourceText]]) -> list[Verdict]: ...

    async def aclose(self) -> None: ...


class BaseJudge:
    """Convenience base: ``verify_many`` runs ``verify`` concurrently, errors become verdicts."""

    id: str = "judge"
    prompt_version: str = ""
    concurrency: int = 8

    async def verify(self, statement: str, source: SourceText) -> Verdict:  # pragma: no cover
        raise NotImplementedError

    async def safe_verify(self, statement: str, source: SourceText) -> Verdict:
        try:
            return await self.verify(statement, source)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a broken pair must not sink the run
            return Verdict.error(self.id, f"{type(exc).__name__}: {exc}", prompt_version=self.prompt_version)

    async def verify_many(self, pairs: Sequence[tuple[str, SourceText]]) -> list[Verdict]:
        sem = asyncio.Semaphore(max(1, self.concurrency))

        async def one(pair: tuple[str, SourceText]) -> Verdict:
            async with sem:
                return await self.safe_verify(*pair)

        return list(await asyncio.gather(*(one(p) for p in pairs)))

    async def aclose(self) -> None:
        return None


class JudgeSpecError(ValueError):
    """A judge spec string that names no known backend or is malformed."""


# kind -> (module path, factory attribute); modules are imported on first use so that
# `builtin` never pays for the API SDKs and vice versa.
_REGISTRY: dict[str, tuple[str, str] | Callable[..., Judge]] = {
    "builtin": ("sourcecheckup.judges.builtin", "from_spec"),
    "openai": ("sourcecheckup.judges.openai_api", "from_spec"),
    "openai-compatible": ("sourcecheckup.judges.openai_api", "from_compatible_spec"),
    "anthropic": ("sourcecheckup.judges.anthropic_api", "from_spec"),
    "local": ("sourcecheckup.judges.local", "from_spec"),
}


def register(kind: str, factory: Callable[..., Judge] | tuple[str, str]) -> None:
    """Register a backend: ``factory(argument: str, **options) -> Judge``."""
    _REGISTRY[kind] = factory


def registered_kinds() -> list[str]:
    return sorted(_REGISTRY)


def split_spec(spec: str) -> tuple[str, str]:
    spec = spec.strip()
    if not spec:
        raise JudgeSpecError("empty judge spec; try 'builtin' or 'openai:gpt-4o'")
    kind, _, arg = spec.partition(":")
    return kind.strip().lower(), arg.strip()


def make_judge(spec: str, **options: Any) -> Judge:
    """Build a judge from its spec string; options are backend settings (timeouts, keys...)."""
    kind, arg = split_spec(spec)
    entry = _REGISTRY.get(kind)
    if entry is None:
        raise JudgeSpecError(
            f"unknown judge '{spec}': known kinds are {', '.join(registered_kinds())}")
    if isinstance(entry, tuple):
        module = importlib.import_module(entry[0])
        entry = getattr(module, entry[1])
        _REGISTRY[kind] = entry
    return entry(arg, **options)


_KEY_PROVIDERS = {"openai": "openai", "anthropic": "anthropic"}


def validate_judge_spec(spec: str, env: Any = None) -> str | None:
    """What is wrong with a judge spec, in a sentence, or None when a run could use it.

    Checks the form of the spec and, for API judges, that an API key can be found (keyring or
    environment); it builds nothing that loads a model or opens a connection. The app calls it when
    Settings are saved and before a run starts, the CLI before ``audit`` starts (exit 2).
    """
    from ..keys import ENV_VARS, find_api_key

    try:
        kind, arg = split_spec(spec)
    except JudgeSpecError as exc:
        return str(exc)
    if kind not in _REGISTRY:
        hint = " (an OpenAI model is written openai:gpt-4o)" if kind.startswith("gpt") else ""
        return (f"unknown judge '{spec.strip()}'{hint}: known kinds are {', '.join(registered_kinds())}, "
                "e.g. builtin, openai:gpt-4o, anthropic:claude-sonnet-4-5, "
                "openai-compatible:http://localhost:11434/v1#llama3.1, local:/path/to/model")
    if kind == "builtin":
        if arg:
            try:
                value = float(arg)
            except ValueError:
                return f"builtin judge: '{arg}' is not a threshold; use e.g. 'builtin' or 'builtin:0.6'"
            if not 0.0 <= value <= 1.0:
                return f"builtin judge: threshold {arg} must lie between 0 and 1"
        return None
    if kind in _KEY_PROVIDERS:
        if not arg:
            return f"'{spec.strip()}' names no model: write e.g. {kind}:" + (
                "gpt-4o" if kind == "openai" else "claude-sonnet-4-5")
        provider = _KEY_PROVIDERS[kind]
        if find_api_key(provider, env) is None:
            return (f"no API key for {provider} (judge '{spec.strip()}'): store one in the keyring or set "
                    f"{ENV_VARS[provider]}")
        return None
    if kind == "openai-compatible":
        base_url, sep, model = arg.rpartition("#")
        if not sep or not base_url.strip() or not model.strip():
            return (f"'{spec.strip()}' needs a base URL and a model: "
                    "write openai-compatible:http://localhost:11434/v1#llama3.1")
        if not base_url.strip().startswith(("http://", "https://")):
            return f"the base URL '{base_url.strip()}' must start with http:// or https://"
        return None
    if kind == "local" and not arg:
        return "the local judge needs a model folder or id: local:/path/to/model"
    return None
