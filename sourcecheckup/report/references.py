"""The reference checks in a report: each citation's ``reference`` and the top-level ``references`` section.

Figures come from :mod:`sourcecheckup.references.metrics` over the stored checks
(``Store.reference_checks``); this module only shapes them for JSON (and so for every format).
"""
from __future__ import annotations

import re
from typing import Any, Mapping, Sequence

from ..metrics import ResponseAssessment
from ..models import Source
from ..references.metrics import (
    REFERENCE_METRIC_DEFINITIONS,
    REFERENCE_METRIC_NAMES,
    REFERENCE_UNIT_NOTE,
    ReferenceMetricSet,
    ReferenceTally,
    is_retracted,
    reference_metrics_by_model,
    reference_tallies_by_model,
    retracted_only_statements,
)
from ..references.model import Record, ReferenceCheck, ReferenceStatus

MAX_CANDIDATES = 5        # candidates listed per problem (the check in the database keeps them all)


def matched_dict(record: Record | None) -> dict[str, Any] | None:
    """A record as a citation's ``matched``: title, authors, year, journal, doi, pmid (and where to see it)."""
    if record is None:
        return None
    return {"title": record.title, "authors": list(record.authors), "year": record.year, "journal": record.journal,
            "doi": record.doi, "pmid": record.pmid, "service": record.service, "url": record.url}


def citation_reference(check: ReferenceCheck | None) -> dict[str, Any] | None:
    """A citation's ``reference`` in the JSON report; None for a plain page (no check)."""
    if check is None:
        return None
    return {"status": check.status.value, "status_text": check.status.plain, "retracted": is_retracted(check),
            "matched": matched_dict(check.matched), "evidence": check.evidence,
            "notices": [n.to_dict() for n in check.notices],
            "comparisons": [c.to_dict() for c in check.comparisons],
            "cited": check.reference.to_dict(), "score": check.score, "services": list(check.services),
            "candidates": [matched_dict(c) for c in check.candidates[:MAX_CANDIDATES]],
            "checked_at": check.checked_at}


_SERVICES = {"crossref": "Crossref", "pubmed": "PubMed", "openalex": "OpenAlex"}
_UNREGISTERED = re.compile(r"the DOI (\S+) is not registered", re.I)


def reconcile_link(source: Source | None, check: ReferenceCheck | None) -> str | None:
    """One sentence reconciling a citation whose reference check found the paper while its link could not be
    read ("reference verified" beside "dead: the DOI is not registered"); None when the two do not conflict.

    The two answer different questions and both stand: the reference figures count the paper as existing
    (a metadata service holds its record); URL validity counts the link as cited, which could not be read.
    Where the record carries the very DOI the fetch called unregistered, the service's record wins on
    registration: the DOI is registered and did not resolve when fetched."""
    if source is None or check is None or source.valid or check.matched is None:
        return None
    if check.status not in (ReferenceStatus.VERIFIED, ReferenceStatus.MISMATCH):
        return None
    service = _SERVICES.get(check.matched.service, check.matched.service or "a metadata service")
    outcome = source.status.plain
    m = _UNREGISTERED.search(source.reason or "")
    if m and check.matched.doi and m.group(1).rstrip(".,;").lower() == check.matched.doi.lower():
        return (f"The DOI {check.matched.doi} is registered ({service} holds its record) but did not resolve when "
                f"fetched: the reference counts as existing; the link counts as {outcome} in URL validity.")
    return (f"The paper exists ({service} record matched) but the link as cited could not be read ({outcome}): "
            f"the reference counts as existing; the link counts as {outcome} in URL validity.")


def _is_problem(check: ReferenceCheck) -> bool:
    return check.status is not ReferenceStatus.VERIFIED or bool(check.notices)


class ReferencesSection:
    """The report's ``references`` section, fed a page of responses at a time: it keeps the tallies, the
    responses citing each problem reference and the statements supported only by retracted papers, never
    the responses themselves. :func:`references_section` is one page holding every response."""

    def __init__(self, checks: Mapping[str, ReferenceCheck]) -> None:
        self.checks = checks
        self.overall = ReferenceTally(checks)
        self.by_model: dict[str, ReferenceTally] = {}
        # url -> the responses citing it, in order, once each (problem references only: the rest is not listed)
        self.cited_in: dict[str, dict[str, None]] = {url: {} for url, c in checks.items() if _is_problem(c)}
        self.retracted_only: list[dict[str, Any]] = []

    def add(self, assessed: Sequence[ResponseAssessment], response_ids: Mapping[int, str]) -> "ReferencesSection":
        """Add responses (judges' assessment); ``response_ids`` maps their pks to response ids."""
        self.overall.add(assessed)
        reference_tallies_by_model(assessed, self.checks, self.by_model)
        for r in assessed:
            for url in r.urls:
                if url in self.cited_in:
                    self.cited_in[url][response_ids[r.response_pk]] = None
        retracted_pks = retracted_only_statements(assessed, self.checks)
        for r in assessed:
            for s in r.statements:
                if s.row.pk in retracted_pks:
                    rid = response_ids[r.response_pk]
                    self.retracted_only.append({"statement_id": f"{rid}/s{s.row.statement.index + 1}",
                                                "response_id": rid, "model": r.model,
                                                "statement": s.row.statement.text,
                                                "supporting_urls": list(s.supporting_urls)})
        return self

    def metrics(self) -> dict[str, Any]:
        """The section's figures (what verify-report recomputes): ``counts``, ``metrics``, ``by_model``."""
        overall = self.overall.result()
        return {"counts": overall.counts, "metrics": overall.as_dict(),
                "by_model": _model_dicts({name: t.result() for name, t in sorted(self.by_model.items())})}

    def result(self) -> dict[str, Any]:
        figures = self.metrics()
        problems = [{"url": url, **citation_reference(self.checks[url]),  # type: ignore[dict-item]
                     "cited_in": list(responses)}
                    for url, responses in self.cited_in.items() if responses]
        return {
            "unit": "citation", "note": REFERENCE_UNIT_NOTE,
            "names": dict(REFERENCE_METRIC_NAMES), "definitions": dict(REFERENCE_METRIC_DEFINITIONS),
            "counts": figures["counts"], "metrics": figures["metrics"], "by_model": figures["by_model"],
            "problems": problems, "statements_supported_only_by_retracted": self.retracted_only,
        }


def references_section(assessed: Sequence[ResponseAssessment], checks: Mapping[str, ReferenceCheck],
                       response_ids: Mapping[int, str]) -> dict[str, Any]:
    """The report's ``references`` section: counts, metrics (overall and per model), every problem with
    its evidence (each reference once, with the responses that cite it), and the statements supported
    only by retracted papers."""
    return ReferencesSection(checks).add(assessed, response_ids).result()


def reference_by_model(assessed: Sequence[ResponseAssessment],
                       checks: Mapping[str, ReferenceCheck]) -> dict[str, Any]:
    """Per model: the reference metrics and their counts (verify-report recomputes this)."""
    return _model_dicts(reference_metrics_by_model(assessed, checks))


def _model_dicts(by_model: Mapping[str, ReferenceMetricSet]) -> dict[str, Any]:
    return {name: {**ms.as_dict(), "counts": ms.counts} for name, ms in by_model.items()}
