"""The reference checks in a report: each citation's ``reference`` and the top-level ``references`` section.

Figures come from :mod:`sourcecheckup.references.metrics` over the stored checks
(``Store.reference_checks``); this module only shapes them for JSON (and so for every format).
"""
from __future__ import annotations

from typing import Any, Mapping, Sequence

from ..metrics import ResponseAssessment
from ..references.metrics import (REFERENCE_METRIC_DEFINITIONS, REFERENCE_METRIC_NAMES, REFERENCE_UNIT_NOTE,
                                  is_retracted, reference_metrics, reference_metrics_by_model,
                                  retracted_only_statements)
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


def _is_problem(check: ReferenceCheck) -> bool:
    return check.status is not ReferenceStatus.VERIFIED or bool(check.notices)


def references_section(assessed: Sequence[ResponseAssessment], checks: Mapping[str, ReferenceCheck],
                       response_ids: Mapping[int, str]) -> dict[str, Any]:
    """The report's ``references`` section: counts, metrics (overall and per model), every problem with
    its evidence (each reference once, with the responses that cite it), and the statements supported
    only by retracted papers."""
    overall = reference_metrics(assessed, checks)
    cited_in: dict[str, dict[str, None]] = {}      # url -> the responses citing it, in order, once each
    for r in assessed:
        for url in r.urls:
            if url in checks:
                cited_in.setdefault(url, {})[response_ids[r.response_pk]] = None
    problems = []
    for url, check in checks.items():
        if url not in cited_in or not _is_problem(check):
            continue
        problems.append({"url": url, **citation_reference(check),  # type: ignore[dict-item]
                         "cited_in": list(cited_in[url])})
    retracted_pks = retracted_only_statements(assessed, checks)
    retracted_only = []
    for r in assessed:
        for s in r.statements:
            if s.row.pk in retracted_pks:
                rid = response_ids[r.response_pk]
                retracted_only.append({"statement_id": f"{rid}/s{s.row.statement.index + 1}",
                                       "response_id": rid, "model": r.model,
                                       "statement": s.row.statement.text, "supporting_urls": list(s.supporting_urls)})
    return {
        "unit": "citation", "note": REFERENCE_UNIT_NOTE,
        "names": dict(REFERENCE_METRIC_NAMES), "definitions": dict(REFERENCE_METRIC_DEFINITIONS),
        "counts": overall.counts, "metrics": overall.as_dict(),
        "by_model": reference_by_model(assessed, checks),
        "problems": problems, "statements_supported_only_by_retracted": retracted_only,
    }


def reference_by_model(assessed: Sequence[ResponseAssessment],
                       checks: Mapping[str, ReferenceCheck]) -> dict[str, Any]:
    """Per model: the reference metrics and their counts (verify-report recomputes this)."""
    return {name: {**ms.as_dict(), "counts": ms.counts}
            for name, ms in reference_metrics_by_model(assessed, checks).items()}
