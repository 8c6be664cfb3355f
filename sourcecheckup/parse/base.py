"""What a parser is: the protocol every parser meets and the error for a bad parser spec."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol, runtime_checkable

from ..models import Response, Statement


@runtime_checkable
class Parser(Protocol):
    """Turns one response into its statements. ``id`` and ``version`` are stored with a run."""

    id: str
    version: str

    async def parse(self, response: Response) -> list[Statement]: ...


@dataclass(frozen=True)
class ParserTraits:
    """The optional members of a parser, read only through :func:`parser_traits` (defaults on the right)."""

    # ``parse_sync(response)`` is pure CPU and the parser pickles: a run's worker pool may run it
    parse_in_worker: bool = False
    # ``take_warnings(response) -> list[str]``: what the parser noticed (an LLM parser that fell back)
    take_warnings: Callable[[Any], list[str]] | None = None
    # ``async aclose()``: what the parser holds (an LLM client) is released at the end of a run
    aclose: Callable[[], Any] | None = None


def parser_traits(parser: Any) -> ParserTraits:
    take, close = getattr(parser, "take_warnings", None), getattr(parser, "aclose", None)
    return ParserTraits(parse_in_worker=bool(getattr(parser, "parse_in_worker", False)),
                        take_warnings=take if callable(take) else None, aclose=close if callable(close) else None)


class ParserSpecError(ValueError):
    """A parser spec string that names no known parser or is malformed."""
