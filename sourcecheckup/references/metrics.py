"""Reference-check metrics of a run, per run and per model, from the stored checks, with Clopper-Pearson 95% intervals.

The unit is the citation (one cited reference in one response), as the source analytics count URLs:
a reference cited by three answers weighs three times. Only citations that had a reference check
count (DOIs, PMIDs, written references); a plain web page has none and is in no figure.

- resolved references = checked citations whose lookup got an answer (every status but lookup_failed);
  a lookup that failed is counted in its own column and is in no denominator, never "not found"
- reference existence = verified + mismatch + ambiguous / resolved: a record exists for what was cited
  (a mismatch's identifier exists though it names another paper; an ambiguous text fits several records)
- mismatch rate = mismatch / resolved
- not-found rate ("likely fabricated") = not_found / resolved (= 1 - existence)
- retraction rate = retracted or withdrawn / matched references (verified + mismatch: a record was matched)
- supported only by retracted papers = supported statements every one of whose supporting sources is a
  retracted reference / supported statements
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

from ..metrics import Metric, ResponseAssessment, proportion_of
from ..models import StatementStatus
from .model import NoticeKind, ReferenceCheck, ReferenceStatus

# each reference metric's name as a report shows it (the run's headline metrics are metrics.METRIC_NAMES)
REFERENCE_METRIC_NAMES = {
    "existence": "Reference existence",
    "mismatch": "Reference mismatch",
    "not_found": "Reference not found (likely fabricated)",
    "retraction": "Retracted references",
    "retracted_only": "Statements supported only by retracted papers",
}
REFERENCE_METRIC_DEFINITIONS = {
    "existence": "verified + mismatch + ambiguous / resolved references (a record exists for what was cited)",
    "mismatch": "mismatch / resolved references (the identifier names another paper)",
    "not_found": "not found / resolved references (no record, or no candidate above the match threshold)",
    "retraction": "retracted or withdrawn / matched references (verified + mismatch)",
    "retracted_only": "supported statements whose every supporting source is a retracted reference / "
                      "supported statements",
}
REFERENCE_UNIT_NOTE = ("Counted per citation (one cited reference in one response). Only DOIs, PMIDs and written "
                       "references are checked; plain web pages are not. A lookup that failed (service "
                       "unreachable) is counted apart and is in no denominator: it is never 'not found'.")
_EXISTS = (ReferenceStatus.VERIFIED, ReferenceStatus.MISMATCH, ReferenceStatus.AMBIGUOUS)
_MATCHED = (ReferenceStatus.VERIFIED, ReferenceStatus.MISMATCH)


def is_retracted(check: ReferenceCheck | None) -> bool:
    """A matched reference (verified or mismatch) whose record carries a retraction or withdrawal."""
    return check is not None and check.status in _MATCHED and check.retracted


def retracted_only_statements(assessed: Sequence[ResponseAssessment],
                              checks: Mapping[str, ReferenceCheck]) -> set[int]:
    """Statement pks that are supported, and only by retracted references."""
    out: set[int] = set()
    for r in assessed:
        for s in r.statements:
            if (s.status is StatementStatus.SUPPORTED and s.supporting_urls
                    and all(is_retracted(checks.get(u)) for u in s.supporting_urls)):
                out.add(s.row.pk)
    return out


@dataclass
class ReferenceMetricSet:
    existence: Metric
    mismatch: Metric
    not_found: Metric
    retraction: Metric
    retracted_only: Metric
    counts: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {k: getattr(self, k).as_dict() for k in REFERENCE_METRIC_NAMES}


class ReferenceTally:
    """The counts behind the reference metrics, added a page of responses at a time (a large run is never
    loaded whole); :func:`reference_metrics` is one tally over all the responses given."""

    def __init__(self, checks: Mapping[str, ReferenceCheck]) -> None:
        self.checks = checks
        self.status: Counter[str] = Counter()
        self.notices: Counter[str] = Counter()
        self.checked_urls: set[str] = set()      # bounded by the run's checks, which are held anyway
        self.citations = self.unchecked = self.resolved = self.exists = self.mismatch = self.not_found = 0
        self.matched = self.retracted = self.supported = self.retracted_only = 0

    def add(self, assessed: Sequence[ResponseAssessment]) -> "ReferenceTally":
        checks = self.checks
        for r in assessed:
            self.citations += len(r.urls)
            for url in r.urls:
                check = checks.get(url)
                if check is None:
                    self.unchecked += 1
                    continue
                self.checked_urls.add(url)
                self.status[check.status.value] += 1
                if check.status is not ReferenceStatus.LOOKUP_FAILED:
                    self.resolved += 1
                    self.exists += check.status in _EXISTS
                    self.mismatch += check.status is ReferenceStatus.MISMATCH
                    self.not_found += check.status is ReferenceStatus.NOT_FOUND
                if check.status in _MATCHED:
                    self.matched += 1
                    self.retracted += bool(check.retracted)
                    for kind in {n.kind for n in check.notices}:
                        self.notices[kind.value] += 1
        self.supported += sum(1 for r in assessed for s in r.statements if s.status is StatementStatus.SUPPORTED)
        self.retracted_only += len(retracted_only_statements(assessed, checks))
        return self

    def result(self) -> ReferenceMetricSet:
        counts: dict[str, Any] = {
            "citations": self.citations,
            "checked": sum(self.status.values()),
            "unique_references": len(self.checked_urls),
            "not_checked": self.unchecked,
            "status": {s.value: self.status.get(s.value, 0) for s in ReferenceStatus},
            "resolved": self.resolved,
            "matched": self.matched,
            "lookup_failed": self.status.get(ReferenceStatus.LOOKUP_FAILED.value, 0),
            "retracted": self.retracted,
            "notices": {k.value: self.notices.get(k.value, 0) for k in NoticeKind},
            "supported_statements": self.supported,
            "statements_supported_only_by_retracted": self.retracted_only,
        }
        return ReferenceMetricSet(
            existence=proportion_of(self.exists, self.resolved),
            mismatch=proportion_of(self.mismatch, self.resolved),
            not_found=proportion_of(self.not_found, self.resolved),
            retraction=proportion_of(self.retracted, self.matched),
            retracted_only=proportion_of(self.retracted_only, self.supported),
            counts=counts)


def reference_metrics(assessed: Sequence[ResponseAssessment],
                      checks: Mapping[str, ReferenceCheck]) -> ReferenceMetricSet:
    """The reference metrics and the counts behind them over these responses' citations."""
    return ReferenceTally(checks).add(assessed).result()


def reference_tallies_by_model(assessed: Sequence[ResponseAssessment], checks: Mapping[str, ReferenceCheck],
                               tallies: dict[str, ReferenceTally] | None = None) -> dict[str, ReferenceTally]:
    """Add these responses to per-model tallies (responses without a model under "(none)", as metrics_by
    names them); ``tallies`` carries them from page to page."""
    tallies = {} if tallies is None else tallies
    groups: dict[str, list[ResponseAssessment]] = {}
    for r in assessed:
        groups.setdefault(r.model or "(none)", []).append(r)
    for name, members in groups.items():
        tallies.setdefault(name, ReferenceTally(checks)).add(members)
    return tallies


def reference_metrics_by_model(assessed: Sequence[ResponseAssessment],
                               checks: Mapping[str, ReferenceCheck]) -> dict[str, ReferenceMetricSet]:
    """The reference metrics per model (responses without a model under "(none)", as metrics_by names them)."""
    tallies = reference_tallies_by_model(assessed, checks)
    return {name: t.result() for name, t in sorted(tallies.items())}
