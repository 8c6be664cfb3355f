"""The demo: the bundled sample answers audited offline against the bundled source pack.

One definition for every front end: ``sourcecheckup demo`` (cli/audit.py) and the app's
Audit → Demo both audit :func:`answers_dir` with the source pack :func:`sources_dir` (every cited
URL maps to a local file, so nothing is fetched from the network), the built-in judge and parser,
no browser, no web archive and no reference lookups.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from .resources import resources_dir

DEMO_JUDGES = ("builtin",)
DEMO_PARSER = "builtin"
RUN_NAME = "Demo: the bundled sample answers"


def samples_dir() -> Path:
    return resources_dir() / "samples"


def answers_dir() -> Path:
    return samples_dir() / "answers"


def sources_dir() -> Path:
    return samples_dir() / "sources"


def load_answers() -> Any:
    """The sample answers as an IngestResult (responses, skipped records, notes)."""
    from .ingest import load_path

    return load_path(str(answers_dir()))


def run_config() -> Any:
    """The demo's RunConfig: the CLI's defaults with the offline choices above."""
    from .config import build_run_config

    return build_run_config(judges=list(DEMO_JUDGES), parser=DEMO_PARSER, references=False, batch=True,
                            sources_dir=sources_dir(), browser="never", archive_lookup=False)
