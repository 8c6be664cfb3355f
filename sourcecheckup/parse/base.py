"""What a parser is: the protocol every parser meets and the error for a bad parser spec."""
from __future__ import annotations

from typing import Protocol, runtime_checkable

from ..models import Response, Statement


@runtime_checkable
class Parser(Protocol):
    """Turns one response into its statements. ``id`` and ``version`` are stored with a run."""

    id: str
    version: str

    async def parse(self, response: Response) -> list[Statement]: ...


class ParserSpecError(ValueError):
    """A parser spec string that names no known parser or is malformed."""
