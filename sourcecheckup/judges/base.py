"""The one interface every judge backend implements, and the spec-string registry."""
from __future__ import annotations

import asyncio
import contextlib
import threading
from dataclasses import dataclass
from typing import Any, AsyncIterator, Callable, Mapping, Protocol, Sequence, runtime_checkable

from ..evidence import SourceText
from ..llm.spec import COMPATIBLE_EXAMPLE, SpecError, parse_checker_spec, parse_model_spec, split_spec
from ..models import Verdict
from ..registry import Registry


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

    async def load(self) -> None:
        """Get ready to judge (a local model loads its weights); raises when the judge cannot work."""
        ...

    async def aclose(self) -> None: ...


# What a judge may say of itself beyond the protocol. The pipeline, the provenance record and the expert
# metrics read these only through :func:`judge_traits`, so a plugin that defines none of them gets the
# default in the right-hand column and a newcomer finds every optional member here.
@dataclass(frozen=True)
class JudgeTraits:
    """The optional members of a judge, as read from one judge."""

    # verify_many receives every statement cited to one source at once (one embedding call per page)
    per_source_batching: bool = False
    # the judge has a ``vector_cache`` attribute: the pipeline sets it to the run database's VectorCache
    takes_vector_cache: bool = False
    # whether verdicts flag a contradicted claim (``contradicted``); None: not declared
    reports_contradictions: bool | None = None
    # ``provenance() -> dict``: what the run's provenance records of the judge (a model's file and hash)
    provenance: Callable[[], Mapping[str, Any]] | None = None


def judge_traits(judge: Any) -> JudgeTraits:
    """The optional members ``judge`` defines, each with its default where it does not."""
    describe = getattr(judge, "provenance", None)
    declared = getattr(judge, "reports_contradictions", None)
    return JudgeTraits(per_source_batching=bool(getattr(judge, "per_source_batching", False)),
                       takes_vector_cache=hasattr(judge, "vector_cache"),
                       reports_contradictions=None if declared is None else bool(declared),
                       provenance=describe if callable(describe) else None)


class BaseJudge:
    """Convenience base: ``verify_many`` runs ``verify`` concurrently, errors become verdicts. Its class
    attributes are the defaults of :class:`JudgeTraits`."""

    id: str = "judge"
    prompt_version: str = ""
    concurrency: int = 8
    per_source_batching: bool = False

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

    async def load(self) -> None:
        return None

    async def aclose(self) -> None:
        return None


class JudgeStopped(Exception):
    """A judge's worker thread stopped at one of its checks: the task awaiting it was cancelled."""


async def in_stoppable_thread(fn: Callable[..., Any], *args: Any) -> Any:
    """``fn(*args, stop=event)`` in a worker thread. When the awaiting task is cancelled (Ctrl-C, the app's
    Cancel) the event is set, and ``fn`` stops at its next look at it (between pairs, between embedding
    batches) instead of finishing a batch nobody will store: an interrupted run exits at once, because
    asyncio waits for its worker threads before the process can end."""
    stop = threading.Event()
    try:
        return await asyncio.to_thread(fn, *args, stop=stop)
    except asyncio.CancelledError:
        stop.set()
        raise


# a judge spec that names no known backend or is malformed: the one spec error, raised by llm.spec too
JudgeSpecError = SpecError


# kind -> (module path, factory attribute); modules are imported on first use so that
# `builtin` never pays for the API SDKs and vice versa.
_REGISTRY: Registry[Callable[..., Judge]] = Registry("judge", {
    "builtin": ("sourcecheckup.judges.builtin", "from_spec"),
    "openai": ("sourcecheckup.judges.api", "from_openai_spec"),
    "openai-compatible": ("sourcecheckup.judges.api", "from_compatible_spec"),
    "anthropic": ("sourcecheckup.judges.api", "from_anthropic_spec"),
    "local": ("sourcecheckup.judges.local", "from_spec"),
    "checker": ("sourcecheckup.judges.checker", "from_spec"),
})


def register(kind: str, factory: Callable[..., Judge] | tuple[str, str],
             check: Callable[[str, str, Any], str | None] | None = None) -> None:
    """Register a backend: ``factory(argument: str, **options) -> Judge``, and optionally
    ``check(spec, argument, env) -> problem or None``, which :func:`validate_judge_spec` calls without
    building the judge (the app checks Settings with it, the CLI before ``audit``)."""
    _REGISTRY.register(kind, factory)
    if check is not None:
        _CHECKS.register(kind, check)


def registered_kinds() -> list[str]:
    return _REGISTRY.names()


def make_judge(spec: str, **options: Any) -> Judge:
    """Build a judge from its spec string; options are backend settings (timeouts, keys...)."""
    kind, arg = split_spec(spec)
    entry = _REGISTRY.get(kind)
    if entry is None:
        raise JudgeSpecError(
            f"unknown judge '{spec}': known kinds are {', '.join(registered_kinds())}")
    return entry(arg, **options)


@contextlib.asynccontextmanager
async def open_judges(specs: Sequence[str], options: Mapping[str, Any] | None = None, *,
                      given: Sequence[Judge] | None = None) -> AsyncIterator[list[Judge]]:
    """The judges of a run, built from ``specs`` (or the ``given`` ones), each loaded before any work,
    so a broken local model fails here; on the way out the judges built here are closed (``given``
    judges belong to the caller and stay open)."""
    own = given is None
    judges: list[Judge] = []
    try:
        if given is not None:
            judges = list(given)
        else:
            for spec in specs:
                judges.append(make_judge(spec, **dict(options or {})))
        for judge in judges:
            await judge.load()
        yield judges
    finally:
        if own:
            for judge in judges:
                await judge.aclose()


def validate_judge_spec(spec: str, env: Any = None) -> str | None:
    """What is wrong with a judge spec, in a sentence, or None when a run could use it.

    Checks the form of the spec and what its kind's check (registered beside its factory) asks: for API
    judges, that an API key can be found (keyring or environment). It builds nothing that loads a model or
    opens a connection. The app calls it when Settings are saved and before a run starts, the CLI before
    ``audit`` starts (exit 2).
    """
    try:
        kind, arg = split_spec(spec)
    except JudgeSpecError as exc:
        return str(exc)
    if kind not in _REGISTRY:
        hint = " (an OpenAI model is written openai:gpt-4o)" if kind.startswith("gpt") else ""
        return (f"unknown judge '{spec.strip()}'{hint}: known kinds are {', '.join(registered_kinds())}, "
                "e.g. builtin, openai:gpt-4o, anthropic:claude-sonnet-4-5, "
                f"{COMPATIBLE_EXAMPLE}, local:/path/to/model")
    check = _CHECKS.get(kind)
    return check(spec, arg, env) if check is not None else None


def _check_builtin(spec: str, arg: str, env: Any) -> str | None:
    if arg == "reader" or arg.startswith("reader:"):   # builtin:reader[:threshold], the learned reader
        arg = arg[len("reader"):].lstrip(":").strip()
    if arg:
        try:
            value = float(arg)
        except ValueError:
            return f"builtin judge: '{arg}' is not a threshold; use e.g. 'builtin' or 'builtin:0.6'"
        if not 0.0 <= value <= 1.0:
            return f"builtin judge: threshold {arg} must lie between 0 and 1"
    return None


def _check_api(spec: str, arg: str, env: Any) -> str | None:
    from ..llm.secrets import ENV_VARS, find_api_key

    try:
        model = parse_model_spec(spec)
    except SpecError as exc:
        return str(exc)
    if model.provider is not None and find_api_key(model.provider, env) is None:
        return (f"no API key for {model.provider} (judge '{spec.strip()}'): store one in the keyring or set "
                f"{ENV_VARS[model.provider]}")
    return None


def _check_checker(spec: str, arg: str, env: Any) -> str | None:
    try:
        parse_checker_spec(spec)
    except SpecError as exc:
        return str(exc)
    return None


def _check_local(spec: str, arg: str, env: Any) -> str | None:
    return None if arg else "the local judge needs a model folder or id: local:/path/to/model"


# kind -> check(spec, argument, env): what validate_judge_spec asks of a spec, beside the kind's factory
_CHECKS: Registry[Callable[[str, str, Any], str | None]] = Registry("judge spec check", {
    "builtin": _check_builtin, "openai": _check_api, "anthropic": _check_api, "openai-compatible": _check_api,
    "checker": _check_checker, "local": _check_local,
})
