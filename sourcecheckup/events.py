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


class RunProgress:
    """How far a run is, counting the work left, and an estimate of the time left.

    A run's pair total grows as its answers are split (a pair is counted once its source is readable), so a bar
    over the pairs known so far reaches 100% early and stays there. Here every kind of work counts: the
    sources to fetch (known from the start), the verdicts (pairs x judges) with those of the answers not split
    yet estimated from the answers split so far, and each answer stored done. The share shown never moves back
    (the estimate grows as answers are split: the bar then waits for the work to catch up).
    """

    def __init__(self, started: float) -> None:
        self.started = started
        self.split = 0          # answers split into statements (one PARSED event each)
        self.shown = 0.0        # the largest share given so far

    def update(self, ev: ProgressEvent) -> None:
        if ev.kind is EventKind.PARSED:
            self.split += 1

    def fraction(self, ev: ProgressEvent) -> float:
        """The share of the run's work done, 0..1 (1 only once every answer is done)."""
        verdicts_total: float
        verdicts_total, verdicts_done = ((ev.verdicts_total, ev.verdicts_done) if ev.verdicts_total
                                         else (ev.pairs_total, ev.pairs_done))
        split = max(self.split, ev.responses_done)
        if ev.responses_total and split < ev.responses_total:
            # the answers not split yet: as many verdicts each as the answers split so far (at least one)
            per_answer = verdicts_total / split if split else 1.0
            verdicts_total += max(1.0, per_answer) * (ev.responses_total - split)
        total = ev.sources_total + verdicts_total + ev.responses_total
        if total <= 0:
            return 0.0
        done: float = ev.sources_done + verdicts_done + ev.responses_done
        if ev.responses_total and ev.responses_done < ev.responses_total:
            done = min(done, total - 1)    # never full while an answer is still under way
        self.shown = max(self.shown, min(1.0, done / total))
        return self.shown

    def seconds_left(self, ev: ProgressEvent, now: float) -> float | None:
        """Elapsed time over the share done, for the rest; None until there is enough to go on."""
        share, elapsed = self.fraction(ev), now - self.started
        if share < 0.02 or share >= 1.0 or elapsed < 1.0:
            return None
        return elapsed / share * (1.0 - share)


def time_left_text(seconds: float) -> str:
    """"about 40 s left", "about 3 min left", "about 1 h 20 min left"."""
    if seconds < 90:
        return f"about {max(1, round(seconds))} s left"
    minutes = round(seconds / 60)
    if minutes < 90:
        return f"about {minutes} min left"
    return f"about {minutes // 60} h {minutes % 60} min left"
