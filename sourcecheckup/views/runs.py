"""The runs list and the comparison of two runs."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..compare import MOVES, statement_moves_text
from ..metrics import METRIC_NAMES, headline
from ..metrics.studies import STUDY_NAMES
from ..models import FetchStatus, StatementStatus
from ..store import Store
from .browse import FULL_LOAD_MAX, run_totals
from .text import STATUS_WORDS, day_of, pct_ci

# ----------------------------------------------------------------------------- runs list


@dataclass(frozen=True)
class RunSummary:
    id: str
    created_at: str
    status: str
    input: str
    judges: tuple[str, ...]
    responses: int
    statement_support: float | None
    response_support: float | None
    url_validity: float | None
    message: str
    name: str = ""
    note: str = ""
    first_words: str = ""     # the start of its first answer

    @property
    def title(self) -> str:
        """The run's name, else its id."""
        return self.name or self.id

    @property
    def label(self) -> str:
        """What tells this run apart in a list: its name, else the start of its one answer ("“The usual adult
        dose is one or…”") or its input file and answer count; then its start time."""
        return f"{self.what} · {self.created_at[:16].replace('T', ' ')}"

    @property
    def what(self) -> str:
        if self.name:
            return self.name
        if self.responses == 1 and self.first_words:
            return f"“{short_words(self.first_words)}”"
        noun = "answer" if self.responses == 1 else "answers"
        return f"{self.input or 'run'} ({self.responses:,} {noun})" if self.input else f"{self.responses:,} {noun}"

    @property
    def resumable(self) -> bool:
        return self.status in ("cancelled", "failed", "running", "interrupted")


def short_words(text: str, limit: int = 32) -> str:
    """The first words of ``text`` that fit ``limit`` characters, with "…" when cut."""
    words = " ".join(text.split())
    if len(words) <= limit:
        return words
    cut = words[:limit].rsplit(" ", 1)[0] if " " in words[:limit] else words[:limit]
    return cut.rstrip(" ,;:.") + "…"


def run_summaries(store: Store, limit: int = 200, *, large_metrics: bool = True) -> list[RunSummary]:
    """Past runs, newest first, with their headline metrics (point estimates, no bootstrap). A run of
    more than FULL_LOAD_MAX responses is summed chunk by chunk, or, without ``large_metrics`` (the app's
    list, which must come back at once), listed with its count and no metrics."""
    out = []
    for run in store.list_runs()[:limit]:
        n = store.response_count(run.id)
        if n > FULL_LOAD_MAX:
            m = run_totals(store, run.id, with_overrides=False).metrics if large_metrics else None
            values = (None, None, None) if m is None else \
                (m.statement_support.value, m.response_support.value, m.url_validity.value)
        else:
            m = headline(store.load_run(run.id), intervals=False)
            values = (m.statement_support.value, m.response_support.value, m.url_validity.value)
        status = "interrupted" if store.run_interrupted(run) else run.status   # its process is gone
        first = store.first_answer_start(run.id) if n == 1 and not run.name else ""
        out.append(RunSummary(run.id, run.created_at, status, run.input, tuple(run.judges), n, *values,
                              run.message, run.name, run.note, first))
    return out


# ----------------------------------------------------------------------------- run comparison

@dataclass(frozen=True)
class MetricDifference:
    metric: str
    a: str
    b: str
    diff: str            # "+4.0 points (95% CI ...)" or "n/a"
    diff_value: float | None


@dataclass(frozen=True)
class ChangedStatement:
    response_id: str
    statement: str
    status_a: str
    status_b: str
    supported_a: bool | None
    supported_b: bool | None
    move: str = "support changed"    # compare.MOVES in words: a change of support, or another status move


@dataclass(frozen=True)
class ChangedSource:
    url: str
    change: str          # "content changed", "dead link → full text"
    fetched_a: str
    fetched_b: str


@dataclass(frozen=True)
class ComparisonView:
    run_a: str
    run_b: str
    summary: str
    differences: list[MetricDifference]
    statements: list[ChangedStatement]
    sources: list[ChangedSource]


def _status_words(value: str) -> str:
    try:
        return STATUS_WORDS[StatementStatus(value)]
    except ValueError:
        return value.replace("_", " ")


def _outcome_words(value: str) -> str:
    try:
        return FetchStatus(value).plain
    except ValueError:
        return value.replace("_", " ")


def comparison_view(c: dict[str, Any]) -> ComparisonView:
    """The dict of :func:`sourcecheckup.compare.compare_runs` shaped for a comparison screen."""
    diffs: list[MetricDifference] = []
    # the other studies' figures (refusal accuracy, context relevance, adversarial safety) follow the run's own
    for d in [*c["differences"], *c.get("study_differences", [])]:
        a = "n/a" if d["a"] is None else f"{100 * d['a']:.1f}% (n={d['n_a']})"
        b = "n/a" if d["b"] is None else f"{100 * d['b']:.1f}% (n={d['n_b']})"
        name = METRIC_NAMES.get(d["metric"]) or STUDY_NAMES.get(d["metric"], d["metric"])
        diffs.append(MetricDifference(name, a, b, pct_ci(d["diff"], d["ci95"], signed=True), d["diff"]))
    statements = [ChangedStatement(s["response_id"], s["statement"], _status_words(s["status_a"]),
                                   _status_words(s["status_b"]), s["supported_a"], s["supported_b"],
                                   MOVES.get(s.get("move", "support_changed"), "").split(":")[0])
                  for s in c["changed_statements"]]
    sources = [ChangedSource(s["url"], s.get("change") or (
                             "content changed" if s["content_changed"] else
                             f"{_outcome_words(s['status_a'])} → {_outcome_words(s['status_b'])}"),
                             day_of(s["fetched_at_a"]), day_of(s["fetched_at_b"]))
               for s in c["changed_sources"]]
    ra, rb = c["run_a"], c["run_b"]
    warnings = " ".join(f"⚠ {w}" for w in c.get("warnings", []))
    summary = (f"{warnings + chr(10) if warnings else ''}"
               f"A = run {ra['id']} ({str(ra['created_at'])[:16].replace('T', ' ')}), "
               f"B = run {rb['id']} ({str(rb['created_at'])[:16].replace('T', ' ')}). "
               f"{c['statements_matched']} statements matched (only in A {c['statements_only_a']}, only in B "
               f"{c['statements_only_b']}); {statement_moves_text(c)}. {c['sources_matched']} sources "
               f"matched; {len(sources)} changed."
               + ("" if "with_overrides" not in c else " Reviewer overrides counted." if c["with_overrides"]
                  else " Judges only (reviewer overrides not counted)."))
    return ComparisonView(str(ra["id"]), str(rb["id"]), summary, diffs, statements, sources)
