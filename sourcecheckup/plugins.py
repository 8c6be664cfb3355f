"""Plugins: extra judges, parsers, report formats and PDF writers, loaded once by the CLI and the app.

A plugin is a module named in ``$SOURCECHECKUP_PLUGINS`` (comma-separated) or published as an entry
point of the group ``sourcecheckup`` (``[project.entry-points.sourcecheckup] name = "pkg.module"``).
It may register on import, or define any of these hooks, each called once with the engine's
registration function (as ``llm``'s ``register_models`` does):

    def register_judges(register): register("keyword", factory)        # factory(argument, **options) -> Judge
                                                                        # optional check=check(spec, arg, env)
    def register_parsers(register): register("sections", factory)      # factory(argument, **options) -> Parser
    def register_pdf_writers(register): register("weasy", write)       # write(html, path) -> None
    def register_report_writers(register): register("md", write)       # write(report dict, path) -> None

Fetchers have no plugin hook yet: a new fetcher is a module in ``sourcecheckup/fetching/`` and a branch
in ``make_fetcher`` (docs/architecture.md).
"""
from __future__ import annotations

import importlib
import os
from importlib.metadata import entry_points
from typing import Any, Callable

PLUGINS_ENV = "SOURCECHECKUP_PLUGINS"
ENTRY_POINT_GROUP = "sourcecheckup"

# plugin name -> the loaded module or object; a plugin is loaded (and its hooks called) once
_loaded: dict[str, Any] = {}


class PluginError(ImportError):
    """A named plugin cannot be imported or its hook failed; the message names the plugin."""


def _hooks() -> dict[str, Callable[..., Any]]:
    from .judges.base import register
    from .parse import register_parser
    from .report import register_report_writer
    from .report.pdf import register_pdf_writer

    return {"register_judges": register, "register_parsers": register_parser,
            "register_pdf_writers": register_pdf_writer, "register_report_writers": register_report_writer}


def _register(name: str, plugin: Any) -> None:
    for hook, registrar in _hooks().items():
        fn = getattr(plugin, hook, None)
        if callable(fn):
            try:
                fn(registrar)
            except Exception as exc:
                raise PluginError(f"plugin '{name}' failed in {hook}: {type(exc).__name__}: {exc}") from exc
    _loaded[name] = plugin


def env_plugin_names() -> list[str]:
    return [n for n in (n.strip() for n in os.environ.get(PLUGINS_ENV, "").split(",")) if n]


def load_plugins() -> list[str]:
    """Load the entry-point plugins and those named in ``$SOURCECHECKUP_PLUGINS`` not loaded yet;
    returns the names loaded by this call. Raises :class:`PluginError` naming the one that fails."""
    new: list[str] = []
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        name = f"entry point {ep.name} ({ep.value})"
        if name in _loaded:
            continue
        try:
            plugin = ep.load()
        except Exception as exc:
            raise PluginError(f"the plugin {name} cannot be loaded: {type(exc).__name__}: {exc}") from exc
        _register(name, plugin)
        new.append(name)
    for name in env_plugin_names():
        if name in _loaded:
            continue
        try:
            plugin = importlib.import_module(name)
        except ImportError as exc:
            raise PluginError(f"${PLUGINS_ENV} names '{name}', which cannot be imported: {exc}") from exc
        _register(name, plugin)
        new.append(name)
    return new


def loaded_plugins() -> list[str]:
    """The names of the plugins loaded so far, in load order."""
    return list(_loaded)
