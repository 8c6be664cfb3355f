"""Model spec strings, parsed in one place: ``openai:MODEL``, ``anthropic:MODEL``,
``openai-compatible:BASE_URL#MODEL`` (and the ``kind:argument`` split every spec shares)."""
from __future__ import annotations

from dataclasses import dataclass

LLM_KINDS = ("openai", "openai-compatible", "anthropic")
COMPATIBLE_EXAMPLE = "openai-compatible:http://localhost:11434/v1#llama3.1"
CHECKER_EXAMPLE = "checker:http://127.0.0.1:11434/v1#bespoke-minicheck"
_EXAMPLE_MODEL = {"openai": "gpt-4o", "anthropic": "claude-sonnet-4-5"}


class SpecError(ValueError):
    """A spec string that names no known backend or is malformed; the message says how to write it."""


def split_spec(spec: str) -> tuple[str, str]:
    """``kind:argument`` -> (kind in lower case, argument); raises :class:`SpecError` when empty."""
    spec = spec.strip()
    if not spec:
        raise SpecError("empty judge spec; try 'builtin' or 'openai:gpt-4o'")
    kind, _, arg = spec.partition(":")
    return kind.strip().lower(), arg.strip()


@dataclass(frozen=True)
class ModelSpec:
    """One LLM behind an API: its kind, its model id and, for a compatible server, the base URL."""

    kind: str
    model: str
    base_url: str | None = None

    @property
    def provider(self) -> str | None:
        """Whose API key the model needs (None: a compatible server needs none)."""
        return None if self.kind == "openai-compatible" else self.kind

    def __str__(self) -> str:
        if self.kind == "openai-compatible":
            return f"{self.kind}:{self.base_url}#{self.model}"
        return f"{self.kind}:{self.model}"


def parse_model_spec(spec: str) -> ModelSpec:
    """The :class:`ModelSpec` a string names; raises :class:`SpecError` saying what to write instead."""
    kind, arg = split_spec(spec)
    if kind not in LLM_KINDS:
        raise SpecError(f"'{spec.strip()}' names no LLM behind an API: use "
                        + ", ".join(f"{k}:..." for k in LLM_KINDS))
    if kind == "openai-compatible":
        base_url, sep, model = arg.rpartition("#")
        if not sep or not base_url.strip() or not model.strip():
            raise SpecError(f"'{spec.strip()}' needs a base URL and a model: write {COMPATIBLE_EXAMPLE}")
        if not base_url.strip().startswith(("http://", "https://")):
            raise SpecError(f"the base URL '{base_url.strip()}' must start with http:// or https://")
        return ModelSpec(kind, model.strip(), base_url.strip())
    if not arg:
        raise SpecError(f"'{spec.strip()}' names no model: write e.g. {kind}:{_EXAMPLE_MODEL[kind]}")
    return ModelSpec(kind, arg)


def parse_checker_spec(spec: str) -> ModelSpec:
    """``checker:BASE_URL#MODEL``: a Yes/No fact-checking model (MiniCheck) on an OpenAI-compatible
    server, as the compatible :class:`ModelSpec` its client is built from."""
    kind, arg = split_spec(spec)
    if kind != "checker":
        raise SpecError(f"'{spec.strip()}' is not a checker spec: write {CHECKER_EXAMPLE}")
    try:
        return parse_model_spec(f"openai-compatible:{arg}")
    except SpecError:
        raise SpecError(f"'{spec.strip()}' needs a server's base URL and a model: write {CHECKER_EXAMPLE}") from None


def is_model_spec(spec: str) -> bool:
    """True when ``spec`` is of an LLM kind (whether or not it is well formed)."""
    try:
        return split_spec(spec)[0] in LLM_KINDS
    except SpecError:
        return False


def model_name(spec: str) -> str:
    """``openai:gpt-4o`` -> ``gpt-4o``; ``openai-compatible:URL#llama3.1`` -> ``llama3.1``."""
    _, _, rest = spec.partition(":")
    return rest.rpartition("#")[2] if "#" in rest else rest


def short_name(spec: str) -> str:
    """``openai-compatible:http://host:port/v1#model`` -> ``model @ host:port``; other specs as they are."""
    kind, _, arg = spec.partition(":")
    if kind == "openai-compatible" and "#" in arg:
        url, _, model = arg.rpartition("#")
        host = url.split("://", 1)[-1].split("/", 1)[0]
        return f"{model} @ {host}"
    return spec
