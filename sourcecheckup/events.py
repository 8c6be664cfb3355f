"""Progress events the engine emits; the CLI draws a bar from them, the app a progress view."""
from __future__ import annotations

from dataclasses import dataclass
from enum import Enum
from typing import Callable


class EventKind(str, Enum):
    RUN_STARTED = "run_started"
    INGESTED = "ingested"          # records read (responses_total set), skipped counted
    SKIPPED = "skipped"            # one bad input record: message names it
    PARSED = "parsed"              # one response split into statements
    FETCHED = "fetched"            # one source retrieved (sources_done advances)
    JUDGED = "judged"              # verdicts committed (verdicts_done, and pairs_done once every judge spoke)
    REFERENCE_CHECKED = "reference_checked"  # one citation's reference checked (references_done advances)
    RESPONSE_DONE = "response_done"  # one response's verdicts committed and it is stored done
    WARNING = "warning"
    RUN_FINISHED = "run_finished"  # message: completed | cancelled | failed: reason


@dataclass(frozen=True)
class ProgressEvent:
    kind: EventKind
    run_id: str
    responses_total: int = 0
    responses_done: int = 0
    sources_total: int = 0
    sources_done: int = 0
    pairs_total: int = 0           # statement x source pairs
    pairs_done: int = 0            # pairs every judge has judged
    fetch_failures: int = 0
    judge_errors: int = 0
    message: str = ""
    references_total: int = 0      # citations that get a reference check (DOI, PMID, written reference)
    references_done: int = 0
    verdicts_total: int = 0        # pairs x judges: one verdict per pair and judge
    verdicts_done: int = 0


ProgressCallback = Callable[[ProgressEvent], None]


def ignore(_: ProgressEvent) -> None:
    return None
