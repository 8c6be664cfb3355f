"""PARSE: split an answer into statements, class each one (ASTRID), keep its intended sources.

Modules: :mod:`.segment` (sentences and list items), :mod:`.classify` (the sentence classes),
:mod:`.markers` (the citation-marker grammar, shared with ingest), :mod:`.markup` (markers, links
and URLs in text), :mod:`.builtin` (the offline parser). Other parsers (an LLM parser) plug in
through :func:`register_parser` and are built from a spec string by :func:`make_parser`, the
same way judges are.
"""
from __future__ import annotations

import asyncio
from typing import Any, Callable, Sequence

from ..models import Response, Statement
from ..registry import Registry
from .base import Parser, ParserSpecError
from .builtin import BuiltinParser

__all__ = ["BuiltinParser", "Parser", "ParserSpecError", "make_parser", "parse_many", "register_parser",
           "registered_parser_kinds"]


def _builtin(argument: str = "", **options: Any) -> Parser:
    if argument:
        raise ParserSpecError(f"the builtin parser takes no argument (got 'builtin:{argument}'); use 'builtin'")
    unknown = set(options) - {"lead_in_context"}
    if unknown:
        raise ParserSpecError(f"the builtin parser has no option(s) {', '.join(sorted(unknown))}; "
                              "it accepts lead_in_context")
    return BuiltinParser(**options)


# kind -> factory(argument, **options) or (module, attribute) imported on first use.
_REGISTRY: Registry[Callable[..., Parser]] = Registry("parser", {
    "builtin": _builtin,
    "openai": ("sourcecheckup.parse.llm", "from_openai_spec"),
    "anthropic": ("sourcecheckup.parse.llm", "from_anthropic_spec"),
    "openai-compatible": ("sourcecheckup.parse.llm", "from_compatible_spec"),
})


def register_parser(kind: str, factory: Callable[..., Parser] | tuple[str, str]) -> None:
    """Register a parser: ``factory(argument: str, **options) -> Parser`` for spec ``kind:argument``."""
    kind = kind.strip().lower()
    if not kind or ":" in kind:
        raise ParserSpecError(f"a parser kind is one word without ':' (got '{kind}')")
    _REGISTRY.register(kind, factory)


def registered_parser_kinds() -> list[str]:
    return _REGISTRY.names()


def make_parser(spec: str = "builtin", **options: Any) -> Parser:
    """Build a parser from a spec: ``builtin``, or e.g. ``openai:gpt-4o`` once registered."""
    spec = (spec or "").strip()
    if not spec:
        raise ParserSpecError("empty parser spec; try 'builtin'")
    kind, _, argument = spec.partition(":")
    kind, argument = kind.strip().lower(), argument.strip()
    entry = _REGISTRY.get(kind)
    if entry is None:
        raise ParserSpecError(
            f"unknown parser '{spec}': known kinds are {', '.join(registered_parser_kinds())}")
    return entry(argument, **options)


async def parse_many(parser: Parser, responses: Sequence[Response]) -> list[list[Statement]]:
    """Parse several responses concurrently (an LLM parser benefits; the builtin one is instant)."""
    return list(await asyncio.gather(*(parser.parse(r) for r in responses)))
