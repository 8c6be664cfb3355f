"""What a process's first audit pays once, paid ahead: a front end that opens long before its first
audit (the desktop app) calls these off its main thread; the CLI does not, and loads everything lazily.

Each step is the engine's own first call, made on a tiny input: nothing is stored, no label changes.
"""
from __future__ import annotations

from typing import Sequence

# a statement and a page that exercise the built-in judge's checks (a dose, an instruction) once
_STATEMENT = "Adults can take one or two 500mg tablets up to 4 times in 24 hours."
_PAGE = ("Paracetamol for adults. The usual dose for adults is one or two 500mg tablets up to 4 times in 24 hours. "
         "Always leave at least 4 hours between doses. Do not take more than 8 tablets in 24 hours.")


def warm_up_judges(judges: Sequence[str]) -> None:
    """The built-in judge's first call (its modules, trained parameters, the model's first pass) and the
    run's audit trail (the environment and the judge files' hashes, kept per process), for the judge specs
    that include the built-in judge."""
    if not any(j.split(":", 1)[0].strip() == "builtin" for j in judges):
        return
    from .evidence import SourceText
    from .judges import make_judge
    from .provenance import record_execution

    judge = make_judge("builtin")
    record_execution(None, [judge], None)
    judge.score_pairs([(_STATEMENT, SourceText.from_text(_PAGE))])  # type: ignore[attr-defined]


def warm_up_reading() -> None:
    """The page reader's imports (the text extractor and the page detectors)."""
    from .fetching.documents import warm_up_reading as warm

    warm()
