"""Named entries the engine ships and plugins add to: judges, parsers, report formats, PDF writers.

One class for the four registries (``judges.base``, ``parse``, ``report``, ``report.pdf``); ``plugins`` loads
the modules that add to them. It imports nothing of the engine, so any layer may hold one.
"""
from __future__ import annotations

import importlib
from typing import Generic, Iterator, TypeVar

T = TypeVar("T")


class Registry(Generic[T]):
    """Named entries the engine ships and plugins add to (judges, parsers, report formats, PDF writers).

    An entry is the object itself or ``(module, attribute)``, imported on first use, so that the built-in
    judge never pays for the API SDKs. Names keep the order they were registered in (PDF writers are
    tried in that order)."""

    def __init__(self, what: str, entries: dict[str, T | tuple[str, str]] | None = None) -> None:
        self.what = what
        self._entries: dict[str, T | tuple[str, str]] = dict(entries or {})

    def register(self, name: str, entry: T | tuple[str, str]) -> None:
        self._entries[name] = entry

    def names(self) -> list[str]:
        return sorted(self._entries)

    def __contains__(self, name: object) -> bool:
        return name in self._entries

    def __iter__(self) -> Iterator[str]:
        return iter(list(self._entries))

    def get(self, name: str) -> T | None:
        """The entry named ``name`` (imported now if it was lazy), or None."""
        entry = self._entries.get(name)
        if isinstance(entry, tuple):
            entry = getattr(importlib.import_module(entry[0]), entry[1])
            self._entries[name] = entry
        return entry  # type: ignore[return-value]
