"""The run view: a stored run assessed, and one summary line per response."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..metrics import MetricSet, Overrides, ResponseAssessment, assess_run, compute_metrics
from ..metrics.studies import study_figures
from ..models import FetchStatus, StatementStatus
from ..references.metrics import is_retracted, retracted_only_statements
from ..references.model import ReferenceCheck, ReferenceStatus
from ..references.step import unread_reference_outcome
from ..store import RunData, Store

# ----------------------------------------------------------------------------- run view


@dataclass(frozen=True)
class ResponseSummary:
    """One row of a run's responses table."""

    response_pk: int
    rid: str
    model: str
    question: str
    statements: int          # all sentences parsed
    claims: int              # informative statements
    supported_claims: int
    decided_claims: int
    sources: int
    valid_sources: int
    supported: bool | None   # every claim supported; None while undecided
    # (kind, count) of each problem, e.g. (("unsupported", 2), ("dead link", 1)); () when none
    problem_counts: tuple[tuple[str, int], ...]
    parsed: bool = True      # False: the answer is not read yet (a cancelled or running batch)
    sources_pending: int = 0  # cited URLs not fetched yet

    @property
    def problems(self) -> str:
        """The problems as the table shows them: "2 unsupported · 1 dead link", "" when none."""
        return problems_text(self.problem_counts)

    @property
    def problem_kinds(self) -> tuple[str, ...]:
        """What the problem facet filters on: ("unsupported", "dead link")."""
        return tuple(kind for kind, _ in self.problem_counts)

    @property
    def status_key(self) -> str:
        """supported / not_supported / undecided / no_claims / not_read: what the status facet filters on."""
        if not self.parsed:
            return "not_read"
        if self.supported is True:
            return "supported"
        if self.supported is False:
            return "not_supported"
        return "undecided" if self.claims else "no_claims"

    @property
    def claims_text(self) -> str:
        """The claims count, or "…" while the answer is not read (0 would say it has none)."""
        return str(self.claims) if self.parsed else "…"

    @property
    def sources_text(self) -> str:
        """"2/3 readable"; URLs not fetched yet are named, never counted as unreadable."""
        if self.sources_pending and self.sources_pending == self.sources:
            return "… not fetched yet"
        text = f"{self.valid_sources}/{self.sources} readable"
        return f"{text} · {self.sources_pending} not fetched yet" if self.sources_pending else text

    @property
    def support_text(self) -> str:
        if not self.decided_claims:
            return "–"
        return f"{self.supported_claims}/{self.decided_claims}"

    def matches(self, needle: str) -> bool:
        needle = needle.casefold().strip()
        return not needle or any(needle in v.casefold() for v in (self.rid, self.model, self.question,
                                                                    self.problems))


@dataclass
class RunView:
    """Everything a results screen shows for one run, computed off the GUI thread."""

    data: RunData
    assessed: list[ResponseAssessment]
    metrics: MetricSet
    summaries: list[ResponseSummary]
    overrides: Overrides
    with_overrides: bool
    references: dict[str, ReferenceCheck] = field(default_factory=dict)   # citation url -> its reference check
    retracted_only: frozenset[int] = frozenset()   # statements supported only by retracted papers
    # every pair a reviewer labelled -> the consensus label's value, "unsure" or "no_majority" (review.review_states)
    review_states: dict[tuple[int, str], str] = field(default_factory=dict)
    # refusal accuracy, context relevance, adversarial safety (metrics.studies), None for a run without them
    studies: dict[str, Any] | None = None
    _by_pk: dict[int, ResponseAssessment] = field(default_factory=dict, repr=False)

    def assessment(self, response_pk: int) -> ResponseAssessment | None:
        if not self._by_pk:
            self._by_pk = {a.response_pk: a for a in self.assessed}
        return self._by_pk.get(response_pk)


def load_run_view(store: Store, run_id: str, *, with_overrides: bool = True) -> RunView:
    """Load, assess and measure a run (with or without reviewer overrides) in one call."""
    from ..review.labels import overrides as review_overrides
    from ..review.labels import review_states

    data = store.load_run(run_id)
    found = review_overrides(store, data.run.id)
    used = found if with_overrides else None
    assessed = assess_run(data, overrides=used)
    metrics = compute_metrics(data, assessed, overrides=used)
    checks = store.reference_checks(data.run.id)
    return RunView(data, assessed, metrics, response_summaries(data, assessed, checks), found, with_overrides,
                   checks, frozenset(retracted_only_statements(assessed, checks)), review_states(store, data.run.id),
                   study_figures(store, data))


def response_summaries(data: RunData, assessed: Sequence[ResponseAssessment],
                       checks: Mapping[str, ReferenceCheck] | None = None) -> list[ResponseSummary]:
    """``checks``: the run's reference checks; a response's problems then name its retracted, not-found and
    mismatched references and its statements supported only by retracted papers."""
    by_pk = {r.pk: r for r in data.responses}
    checks = checks or {}
    retracted_only = retracted_only_statements(assessed, checks) if checks else set()
    out = []
    for a in assessed:
        resp = by_pk[a.response_pk].response
        claims = [s for s in a.statements if s.row.statement.informative]
        counts: dict[StatementStatus, int] = {}
        for s in claims:
            counts[s.status] = counts.get(s.status, 0) + 1
        problems: list[tuple[str, int]] = []
        for status, word in ((StatementStatus.NOT_SUPPORTED, "unsupported"),
                             (StatementStatus.NO_READABLE_SOURCE, "without a readable source"),
                             (StatementStatus.JUDGE_ERROR, "judge error"),
                             (StatementStatus.JUDGES_DISAGREE, "judges disagree"),
                             (StatementStatus.PENDING, "pending")):
            if counts.get(status):
                problems.append((word, counts[status]))
        outcomes: dict[str, int] = {}
        for url in a.urls:
            src = data.sources.get(url)
            if src is not None and not src.source.valid and src.source.origin == "reference":
                if url not in checks:     # else its reference problem names it ("1 reference not found")
                    word = unread_reference_outcome(src.source)
                    outcomes[word] = outcomes.get(word, 0) + 1
            elif src is not None and not src.source.valid:
                outcomes[src.source.status.plain] = outcomes.get(src.source.status.plain, 0) + 1
        problems.extend(sorted(outcomes.items()))
        problems.extend(reference_problems([checks[u] for u in a.urls if u in checks],
                                           sum(1 for s in claims if s.row.pk in retracted_only)))
        if not a.urls:
            problems.append(("no citations", 0))
        decided = [s for s in claims if s.status.supported is not None]
        out.append(ResponseSummary(
            response_pk=a.response_pk, rid=resp.id, model=resp.model or "", question=resp.question or "",
            statements=len(a.statements), claims=len(claims),
            supported_claims=sum(1 for s in decided if s.status.supported),
            decided_claims=len(decided), sources=len(a.urls), valid_sources=len(a.valid_urls),
            supported=a.supported, problem_counts=tuple(problems), parsed=by_pk[a.response_pk].parsed,
            sources_pending=sum(1 for u in a.urls if u not in data.sources)))
    return out


# a problem's words when it counts more than one (the facet reads both forms as one kind: problem_kind)
PROBLEM_PLURALS = {"judge error": "judge errors", "dead link": "dead links", "server error": "server errors",
                   "unsupported file type": "unsupported file types",
                   "retracted reference": "retracted references", "reference not found": "references not found",
                   "mismatched reference": "mismatched references",
                   "reference lookup failed": "reference lookups failed"}
_PROBLEM_SINGULARS = {plural: word for word, plural in PROBLEM_PLURALS.items()}


def problem_phrase(n: int, word: str) -> str:
    """"1 dead link", "2 dead links"; words without a plural ("unsupported", "timed out") stay as they are;
    a count of 0 is a problem without one ("no citations")."""
    if n == 0:
        return word
    return f"{n} {word if n == 1 else PROBLEM_PLURALS.get(word, word)}"


def problems_text(counts: Sequence[tuple[str, int]]) -> str:
    """(kind, count) pairs as one line: "2 unsupported · 1 dead link"."""
    return " · ".join(problem_phrase(n, kind) for kind, n in counts)


def problem_kind(phrase: str) -> str:
    """The kind a problem phrase names, its count left out: "2 dead links" -> "dead link"."""
    words = re.sub(r"^\d[\d,]*\s+", "", phrase.strip())
    return _PROBLEM_SINGULARS.get(words, words)


def reference_problems(checks: Sequence[ReferenceCheck], retracted_only: int = 0) -> list[tuple[str, int]]:
    """A response's reference problems as (kind, count), as the other problems ("reference not found", 2)."""
    counts = (("retracted reference", sum(1 for c in checks if is_retracted(c))),
              ("reference not found", sum(1 for c in checks if c.status is ReferenceStatus.NOT_FOUND)),
              ("mismatched reference", sum(1 for c in checks if c.status is ReferenceStatus.MISMATCH)),
              ("reference lookup failed", sum(1 for c in checks if c.status is ReferenceStatus.LOOKUP_FAILED)),
              ("supported only by retracted papers", retracted_only))
    return [(word, n) for word, n in counts if n]


def answer_notices(view: RunView, response_pk: int) -> list[str]:
    """What the Answer tab says above one answer, in words a reader cannot miss: an answer not read yet
    (a cancelled batch), and every cited address refused as unsafe, with how the figures count it."""
    row = next((r for r in view.data.responses if r.pk == response_pk), None)
    a = view.assessment(response_pk)
    if row is None or a is None:
        return []
    out = []
    if not row.parsed and view.data.run.status == "running":
        out.append("… Not read yet: the audit is still under way and has not split this answer into statements; "
                   "its claims and verdicts appear here when it has. Until then every figure leaves it out.")
    elif not row.parsed:
        out.append("… Not read yet: the audit stopped before this answer was split into statements, so it has "
                   "no claims or verdicts yet and every figure leaves it out. Resume the run to read it.")
    for number, url in enumerate(a.urls, 1):
        src = view.data.sources.get(url)
        if src is None or src.source.status is not FetchStatus.UNSAFE_URL:
            continue
        claims = [s for s in a.statements if s.row.statement.informative]
        alone = sum(1 for s in claims if s.status is StatementStatus.NO_READABLE_SOURCE)
        counted = (f"; {alone} claim{'' if alone == 1 else 's'} with no other readable source "
                   f"{'counts' if alone == 1 else 'count'} as not supported (no readable source) in statement "
                   "support, and so does the answer in response support" if alone else "")
        out.append(f"⊘ Source [{number}] was refused, not read: {src.source.reason or 'a private or local address'}. "
                   f"It counts as an invalid URL in URL validity{counted}.")
    return out
