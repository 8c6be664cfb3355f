"""The report as a dict: the stable JSON interface other tools read (keys are only ever added).

Every figure is computed from the stored rows by :mod:`sourcecheckup.metrics` (and
:mod:`.analytics`, :mod:`sourcecheckup.review.agreement`); nothing here keeps numbers of its own.
"""
from __future__ import annotations

import datetime as _dt
from pathlib import Path
from typing import AbstractSet, Any, Callable, Iterable, Mapping, Sequence

from .. import __version__
from ..metrics import (  # noqa: F401  (the figures' two bases; xlsx reads them here)
    CI_METHODS,
    JUDGES_ONLY,
    WITH_REVIEWS,
    Consensus,
    ResponseAssessment,
    StatementAssessment,
    assess_run,
    compute_metrics,
    exclusion_notes,
    judge_error_note,
    metrics_by,
    partial_run_note,
)
from ..metrics.studies import study_figures
from ..models import Verdict, utcnow, verdict_readings
from ..provenance import software_environment
from ..references.metrics import retracted_only_statements
from ..references.model import ReferenceCheck
from ..store import RunData, RunRow, Store
from .references import citation_reference, reconcile_link, references_section

MAX_GROUP_VALUES = 12          # an extra column with more distinct values is not a grouping column
# the counts each per-model / per-group row carries (what its figures leave out among them)
GROUP_COUNT_KEYS = ("responses", "informative_statements", "urls", "judge_errors", "judges_disagree", "excluded")


def table_bases(with_reviews: bool) -> dict[str, str]:
    """The basis of each of the report's tables: the judges' verdicts alone, or with the reviewers' overrides."""
    lead = WITH_REVIEWS if with_reviews else JUDGES_ONLY
    return {"metrics": JUDGES_ONLY, "metrics_with_reviews": WITH_REVIEWS, "by_model": JUDGES_ONLY,
            "by_model_with_reviews": WITH_REVIEWS, "by_group": JUDGES_ONLY, "references": JUDGES_ONLY,
            "analytics": lead, "unsupported": lead, "responses": lead, "disagreements": lead,
            "summary": lead}


def method_notes(report: Mapping[str, Any]) -> list[str]:
    """The method in sentences, each saying what the code computes, with this run's figures (the XLSX notes;
    the HTML and PDF say the same in resources/templates/report.html)."""
    applied = bool((report.get("reviewer_overrides") or {}).get("applied"))
    c = report.get("counts_with_reviews" if applied else "counts") or report["counts"]
    status, outcomes = c.get("statement_status", {}), c.get("fetch_outcomes", {})
    run = report.get("run") or {}
    notes = [
        f"Basis of the summary figures: {WITH_REVIEWS if applied else JUDGES_ONLY}; the per-model and per-group "
        f"tables are {JUDGES_ONLY}, and per-model figures {WITH_REVIEWS} are listed apart.",
        "A claim is supported when at least one cited source supports it.",
        f"A claim none of whose cited sources could be read is counted unsupported, as the study defines it "
        f"(no readable source: {status.get('no_readable_source', 0)} claims).",
        f"A claim no source supports with a pair the judge could not decide is undecided and left out of the "
        f"statement-level denominator (judge error: {status.get('judge_error', 0)} claims), as is a claim on which "
        f"the judges split with no majority under --consensus majority (judges disagree: "
        f"{status.get('judges_disagree', 0)} claims); its response is left out of response-level support unless "
        f"another of its claims is unsupported.",
        f"Source URL validity = fetched cited URLs read with non-empty text / fetched cited URLs; paywall teasers and "
        f"abstract-only pages count as valid ({outcomes.get('paywalled', 0) + outcomes.get('abstract_only', 0)} "
        f"cited URLs). Full-text validity = fetched cited URLs read in full / fetched cited URLs "
        f"({c.get('full_text_urls', 0)} of {c.get('urls', 0)}).",
        f"Per-answer citation validity (Almanac: Zakka et al., NEJM AI 2024) = answers whose every cited URL is valid "
        f"/ answers citing a URL, every cited URL fetched ({c.get('answers_all_citations_valid', 0)} answers with every "
        f"citation valid); answers citing no URL are left out.",
        "Statement-level support = supported claims / decided claims; response-level support = responses whose every "
        "claim is supported / decided responses; unused sources = valid sources that support no claim / valid "
        "sources whose every pair is decided.",
        "Intervals (95%): Clopper-Pearson exact for URL validity, full-text validity, per-answer citation validity, "
        "response-level support and unused sources; Korn-Graubard (Clopper-Pearson on claims / design effect, "
        "t quantile on Satterthwaite's degrees of freedom, at most responses - 1) for statement-level support.",
    ]
    if len(run.get("judges") or []) > 1:
        notes.insert(1, f"Between judges the rule is {run.get('consensus')}.")
    studies = report.get("studies") or {}
    for key, text in (studies.get("definitions") or {}).items():
        if key in (studies.get("names") or {}):   # refusal accuracy, context relevance, adversarial safety
            notes.append(f"{studies['names'][key]} = {text}.")
    return notes


def headline_notes(report: dict[str, Any]) -> None:
    """Add what each headline figure leaves out (judges only and with reviews) and the tables' bases."""
    report["exclusions"] = exclusion_notes(report["counts"])
    report["exclusions_with_reviews"] = exclusion_notes(report["counts_with_reviews"])
    report["bases"] = table_bases(bool(report["reviewer_overrides"]["applied"]))


def run_section(store: Store, run: RunRow) -> dict[str, Any]:
    """The report's ``run`` section: what was run, on what, and where it is stored."""
    return {
        "id": run.id, "name": run.name, "note": run.note,
        "judge": run.judges[0] if run.judges else None, "judges": run.judges,
        "parser": run.parser, "consensus": run.config.get("consensus", Consensus.FIRST.value),
        "created_at": run.created_at, "finished_at": run.finished_at, "status": run.status,
        "input": run.input, "app_version": run.app_version, "report_version": __version__,
        "database": str(store.path), "n_records": run.n_records, "n_skipped": run.n_skipped,
        "config": run.config,
    }


def build_report(store: Store, run_id: str, *, data: RunData | None = None,
                 overrides: Any = None, with_reviews: bool | None = None, group_by: Sequence[str] | None = None,
                 whois: bool = False, whois_server: str | None = None) -> dict[str, Any]:
    """The report as a dict: the stable JSON interface other tools read (keys are only ever added).

    ``metrics`` are always the judges' figures; ``metrics_with_reviews`` the same with the reviewers'
    decisions in place of the judge's (side by side in every format). ``with_reviews`` says which of the
    two the report leads with and which statuses it lists (the app's "With reviewer overrides"); passing
    ``overrides`` (a mapping (statement_pk, url) -> Label) applies those instead of the stored reviews.
    ``whois``: ask whois (``whois_server``, default whois.iana.org:43) for each cited domain's registrant
    country; off by default, when country comes from the top-level domain alone and nothing is sent."""
    from ..review.agreement import agreement_report
    from ..review.labels import overrides as review_overrides
    from .analytics import analyse_sources

    data = data or store.load_run(run_id)
    run = data.run
    stored_reviews = review_overrides(store, run.id)
    if with_reviews is None:
        with_reviews = overrides is not None
    custom = overrides is not None and dict(overrides) != dict(stored_reviews)
    reviewed = dict(overrides) if overrides is not None else dict(stored_reviews)
    judges_assessed = assess_run(data)
    metrics = compute_metrics(data, judges_assessed)
    reviewed_assessed = assess_run(data, overrides=reviewed) if reviewed else judges_assessed
    reviewed_metrics = compute_metrics(data, reviewed_assessed, overrides=reviewed) if reviewed else metrics
    assessed = reviewed_assessed if with_reviews else judges_assessed
    seed = int(run.config.get("seed", 0))
    responses_by_pk = {r.pk: r for r in data.responses}
    checks = store.reference_checks(run.id)
    retracted_only = retracted_only_statements(assessed, checks)
    other = {s.row.pk: s for r in (judges_assessed if with_reviews else reviewed_assessed) for s in r.statements}
    report: dict[str, Any] = {
        "run": run_section(store, run),
        "metrics": metrics.as_dict(),
        "counts": metrics.counts,
        "skipped": [{"origin": s.origin, "problem": s.problem} for s in data.skipped],
        "responses": [_response_dict(data, r, responses_by_pk, other, with_reviews, checks, retracted_only)
                      for r in assessed],
    }
    report["generated_at"] = utcnow()
    report["metrics_basis"] = "judges" if not custom else "custom_overrides"
    report["metrics_with_reviews"] = reviewed_metrics.as_dict()
    report["counts_with_reviews"] = reviewed_metrics.counts
    report["reviewer_overrides"] = {
        "applied": bool(with_reviews), "overrides": len(reviewed), "source": "custom" if custom else "reviews",
        "headline": "metrics_with_reviews" if with_reviews else "metrics",
        "note": (f"Reviewer overrides are applied: the reviewers' decision replaces the judge's on {len(reviewed)} "
                 "pair(s) in the headline figures and statement statuses; the judges-only figures are shown beside them."
                 if with_reviews and reviewed else
                 "No reviewer has overridden a verdict of this run: the judges-only and with-reviews figures are "
                 "the same." if not reviewed else
                 f"Reviewer overrides are not applied: the headline figures and statement statuses are the judges' "
                 f"alone; figures with the {len(reviewed)} reviewer override(s) are shown beside them."),
    }
    report["partial_run"] = partial_run_note(metrics.counts)
    report["judge_error_warning"] = judge_error_note(metrics.counts)
    headline_notes(report)
    report["by_model"] = grouped(data, judges_assessed, lambda r: r.model)
    report["by_model_with_reviews"] = (grouped(data, reviewed_assessed, lambda r: r.model) if reviewed
                                       else report["by_model"])
    # the reference checks: judges' figures, as by_model (verify-report recomputes them)
    report["references"] = references_section(judges_assessed, checks,
                                               {r.pk: r.response.id for r in data.responses})
    from ..expert.metrics import expert_section
    report["expert"] = expert_section(store, run.id, data.responses)   # OLAPH and EVAL against the expert material
    # refusal accuracy, context relevance (ASTRID), adversarial safety (Almanac): None for a run without them
    report["studies"] = study_figures(store, data)
    from .repairs import repairs_section
    report["repairs"] = repairs_section(store, run.id)   # sources found for unsupported statements (issue 44)
    columns = list(group_by) if group_by is not None else _grouping_columns(data)
    report["by_group"] = {col: grouped(data, judges_assessed, _extra_key(responses_by_pk, col)) for col in columns}
    country_lookup = server = None
    if whois:
        from functools import partial

        from .whois import DEFAULT_SERVER, split_server, whois_countries

        server = whois_server or DEFAULT_SERVER
        split_server(server)  # ValueError for a malformed server, before any lookup
        country_lookup = partial(whois_countries, server=server)
    report["analytics"] = analyse_sources(data, assessed, seed=seed + 100, country_lookup=country_lookup,
                                          whois_server=server)
    report["unsupported"] = _unsupported(store, data, assessed, responses_by_pk)
    from .judges import disagreements, run_usage
    report["disagreements"] = disagreements(data, assessed)
    report["usage"] = run_usage(store, run.id)
    review = agreement_report(store, data, seed=seed + 200)
    if review["reviews"]:
        review["overrides"] = len(stored_reviews)
        review["metrics_with_reviews"] = compute_metrics(data, overrides=stored_reviews).as_dict()
    report["review"] = review
    report["audit_trail"] = _audit_trail(store, data)
    report["audit_trail"]["intervals"] = {
        key: {"method": m["ci_method"], "description": CI_METHODS.get(m["ci_method"], m["ci_method"])}
        for key, m in report["metrics"].items()}
    report["report_options"] = report_options(with_reviews, group_by, whois, whois_server, custom)
    report["integrity"] = integrity_section(store, run)
    from .integrity import seal

    return seal(report)


def report_options(with_reviews: Any, group_by: Sequence[str] | None, whois: bool, whois_server: str | None,
                   custom: bool) -> dict[str, Any]:
    """The options a report was built with: ``verify-report`` rebuilds the report with the same ones."""
    return {"with_reviews": bool(with_reviews), "group_by": list(group_by) if group_by is not None else None,
            "whois": bool(whois), "whois_server": whois_server if whois else None, "custom_overrides": bool(custom)}


def integrity_section(store: Store, run: RunRow) -> dict[str, Any]:
    """The evidence digests of the run and its input files' hashes (the report's own digests are added by seal)."""
    from .integrity import evidence_digest

    provenance = run.config.get("provenance") or {}
    return {"evidence": evidence_digest(store, run.id), "inputs": provenance.get("inputs", [])}


def grouped(data: RunData, assessed: Sequence[ResponseAssessment],
             key: Callable[[ResponseAssessment], str | None]) -> dict[str, Any]:
    out = {}
    for name, ms in metrics_by(data, key, assessed).items():
        out[name] = group_dict(ms)
    return out


def group_dict(ms: Any) -> dict[str, Any]:
    """One row of a per-model / per-group table: its figures and the counts behind them."""
    return {**ms.as_dict(), "counts": {k: ms.counts[k] for k in GROUP_COUNT_KEYS},
            "exclusions": exclusion_notes(ms.counts)}


def _grouping_columns(data: RunData) -> list[str]:
    """Extra input columns that group responses (question source, variant...): few distinct plain values."""
    return grouping_columns(dict(r.response.extra) for r in data.responses)


def grouping_columns(extras: Iterable[Mapping[str, Any]]) -> list[str]:
    """:func:`_grouping_columns` from each response's extra columns, in order."""
    values: dict[str, set[str]] = {}
    nested: set[str] = set()
    n = 0
    for extra in extras:
        n += 1
        for k, v in extra.items():
            if isinstance(v, (str, int, bool)):
                vs = values.setdefault(str(k), set())
                if len(vs) <= MAX_GROUP_VALUES:     # more than that is not a grouping column: stop counting
                    vs.add(str(v))
            else:
                nested.add(str(k))
    return sorted(k for k, vs in values.items()
                  if k not in nested and 2 <= len(vs) <= MAX_GROUP_VALUES and len(vs) < n)


def _extra_key(responses_by_pk: Mapping[int, Any], column: str) -> Callable[[ResponseAssessment], str | None]:
    def key(r: ResponseAssessment) -> str | None:
        v = dict(responses_by_pk[r.response_pk].response.extra).get(column)
        return None if v is None else str(v)
    return key


def _reading(verdict: Verdict) -> str:
    """What a verdict says beyond its label: "contradicted", "review first" (joined), or ""."""
    return ", ".join(verdict_readings(verdict.flags) if verdict.label.value != "judge_error" else ())


def _response_dict(data: RunData, r: ResponseAssessment, responses_by_pk: Mapping[int, Any],
                   other: Mapping[int, StatementAssessment] | None = None,
                   with_reviews: bool = False, checks: Mapping[str, ReferenceCheck] | None = None,
                   retracted_only: AbstractSet[int] = frozenset()) -> dict[str, Any]:
    resp = responses_by_pk[r.response_pk].response
    statements = []
    for s in r.statements:
        rows = data.verdicts.get(s.row.pk, [])
        verdicts = [{
            "url": v.url, "judge": v.verdict.judge_id, "model_version": v.verdict.model_version,
            "label": v.verdict.label.value, "score": round(v.verdict.score, 4), "quote": v.verdict.quote,
            "quote_found": v.verdict.quote_found, "rationale": v.verdict.rationale,
            "flags": list(v.verdict.flags), "contradicted": v.verdict.contradicted,
            "review_first": v.verdict.review_first, "reading": _reading(v.verdict),
        } for v in rows]
        alt = (other or {}).get(s.row.pk, s)
        judges_status = (alt if with_reviews else s).status.value
        reviewed_status = (s if with_reviews else alt).status.value
        # contradicted: a counted pair's verdict says the source states otherwise (and nothing supports it)
        contradicted = s.status.supported is False and any(v.verdict.contradicted for v in rows)
        statements.append({
            "id": f"{resp.id}/s{s.row.statement.index + 1}", "text": s.row.statement.text,
            "category": s.row.statement.category.value, "status": s.status.value,
            "supported": s.status.supported, "cited": [resp.citations[i] for i in s.row.statement.cited
                                                       if 0 <= i < len(resp.citations)],
            "supporting_urls": list(s.supporting_urls), "judges_disagree": s.disagreement,
            "verdicts": verdicts, "status_judges": judges_status, "status_with_reviews": reviewed_status,
            "contradicted": contradicted, "review_first": any(v.verdict.review_first for v in rows),
            "supported_only_by_retracted": s.row.pk in retracted_only,
        })
    sources: list[dict[str, Any]] = []
    for url in r.urls:
        row = data.sources.get(url)
        if row is None:
            sources.append({"url": url, "status": "not_fetched", "outcome": "not fetched yet",
                            "http_status": None, "title": None, "sha256": None, "text_chars": 0,
                            "flags": [], "reason": "", "reference": citation_reference((checks or {}).get(url)),
                            "reference_vs_link": None})
            continue
        src = row.source
        sources.append({
            "url": url, "status": src.status.value, "outcome": src.status.plain, "reason": src.reason,
            "http_status": src.http_status, "final_url": src.final_url, "title": src.title,
            "sha256": src.sha256, "text_chars": len(src.text), "fetched_at": src.fetched_at,
            "origin": src.origin, "domain": src.domain, "flags": list(src.flags),
            "used": url in r.valid_urls and url not in r.unused_urls and url not in r.undecided_urls,
            "reference": citation_reference((checks or {}).get(url)),
            "reference_vs_link": reconcile_link(src, (checks or {}).get(url)),
        })
    return {"id": resp.id, "question": resp.question, "model": resp.model, "origin": resp.origin,
            "text": resp.text, "supported": r.supported, "statements": statements, "sources": sources,
            "extra": dict(resp.extra)}

def _suggestions(store: Store, run_id: str) -> dict[int, list[dict[str, Any]]]:
    out: dict[int, list[dict[str, Any]]] = {}
    for row in store.suggestion_rows(run_id):
        out.setdefault(row["statement_pk"], []).append({
            k: row.get(k) for k in ("url", "kind", "original", "suggested", "quote", "status", "verification",
                                    "decision", "decided_by", "judge_id")})
    return out



def _unsupported(store: Store, data: RunData, assessed: Sequence[ResponseAssessment],
                 responses_by_pk: Mapping[int, Any],
                 suggestions: Mapping[int, list[dict[str, Any]]] | None = None) -> list[dict[str, Any]]:
    suggestions = _suggestions(store, data.run.id) if suggestions is None else suggestions
    out = []
    for r in assessed:
        resp = responses_by_pk[r.response_pk].response
        for s in r.statements:
            if s.status.supported is not False:
                continue
            by_url: dict[str, list[dict[str, Any]]] = {}
            for v in data.verdicts.get(s.row.pk, []):
                by_url.setdefault(v.url, []).append({"judge": v.verdict.judge_id, "label": v.verdict.label.value,
                                                     "rationale": v.verdict.rationale,
                                                     "reading": _reading(v.verdict)})
            tried = []
            for url in r.urls:
                src = data.sources.get(url)
                label = s.pair_labels.get(url)
                tried.append({"url": url, "status": src.source.status.value if src else "not_fetched",
                              "outcome": src.source.status.plain if src else "not fetched yet",
                              "title": src.source.title if src else None,
                              "label": label.value if label is not None else None,
                              "verdicts": by_url.get(url, [])})
            out.append({"response_id": resp.id, "model": resp.model, "question": resp.question,
                        "statement_id": f"{resp.id}/s{s.row.statement.index + 1}", "statement_pk": s.row.pk,
                        "statement": s.row.statement.text, "status": s.status.value, "sources": tried,
                        "contradicted": any(v.verdict.contradicted for v in data.verdicts.get(s.row.pk, [])),
                        "suggestions": suggestions.get(s.row.pk, [])})
    return out


def _duration_s(start: str | None, end: str | None) -> float | None:
    try:
        return (_dt.datetime.fromisoformat(end) - _dt.datetime.fromisoformat(start)).total_seconds()  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


def _prompt_record(version: str) -> dict[str, Any]:
    """The prompt text behind a stored prompt version ('name@sha8'), checked against its hash."""
    rec: dict[str, Any] = {"version": version, "name": None, "sha256": None, "system": None, "user": None,
                           "note": ""}
    if "@" not in version:
        rec["note"] = "not a prompt file: a method version of a non-LLM judge"
        return rec
    name, short = version.split("@", 1)
    rec["name"] = name
    try:
        from ..prompts import load_prompt

        prompt = load_prompt(name, required=())
    except Exception as exc:  # prompts are optional for reports: say why the text is missing
        rec["note"] = f"prompt text not available: {exc}"
        return rec
    if not prompt.sha256.startswith(short):
        rec["note"] = (f"the prompt file {prompt.path.name} on disk has changed since this run "
                       f"(now {prompt.sha256[:8]}); its text is not shown as the one used")
        return rec
    rec.update(sha256=prompt.sha256, system=prompt.system, user=prompt.user, note="text matches the stored hash")
    return rec


def _audit_trail(store: Store, data: RunData) -> dict[str, Any]:
    run = data.run
    judges: dict[str, dict[str, set[str]]] = {}
    first = last = None
    for rows in data.verdicts.values():
        for v in rows:
            j = judges.setdefault(v.verdict.judge_id, {"model_versions": set(), "prompt_versions": set()})
            if v.verdict.model_version:
                j["model_versions"].add(v.verdict.model_version)
            if v.verdict.prompt_version:
                j["prompt_versions"].add(v.verdict.prompt_version)
            first = v.created_at if first is None or v.created_at < first else first
            last = v.created_at if last is None or v.created_at > last else last
    sources = []
    for url, row in sorted(data.sources.items()):
        s = row.source
        sources.append({"url": url, "source_id": row.id, "status": s.status.value, "http_status": s.http_status,
                        "sha256": s.sha256, "fetched_at": s.fetched_at, "origin": s.origin,
                        "final_url": s.final_url, "text_chars": len(s.text)})
    return audit_trail(store, run, judges, first, last, sources)


def audit_trail(store: Store, run: Any, judges: Mapping[str, Mapping[str, set[str]]], first: str | None,
                last: str | None, sources: list[dict[str, Any]] | None) -> dict[str, Any]:
    """The audit trail from the judges' model and prompt versions, the first and last verdict times and
    the run's sources (None: a streamed report writes them from the database)."""
    from ..judges.versions import summary as judge_summary

    prompt_versions = sorted({p for j in judges.values() for p in j["prompt_versions"]})
    return {
        "app_version": run.app_version, "report_version": __version__, "run_id": run.id,
        "database": str(Path(store.path).resolve()) if str(store.path) != ":memory:" else ":memory:",
        "schema_version": store.schema_version, "input": run.input, "parser": run.parser,
        "config": run.config,
        "judges": [{"id": jid, "model_versions": sorted(j["model_versions"]),
                    "prompt_versions": sorted(j["prompt_versions"])} for jid, j in judges.items()],
        # the judge version that ran, in words, and a warning when it ran degraded (lexical-only)
        **judge_summary(judges),
        "prompts": [_prompt_record(v) for v in prompt_versions],
        "times": {"created_at": run.created_at, "finished_at": run.finished_at,
                  "duration_s": _duration_s(run.created_at, run.finished_at),
                  "first_verdict_at": first, "last_verdict_at": last},
        "run_log": store.run_log(run.id),
        "sources": sources,
        "verify_command": f"sourcecheckup verify-report REPORT.json --db {store.path}",
        # stored when the run ran: its inputs' hashes, software, judges' settings and hashes, reference data
        "provenance": run.config.get("provenance") or {
            "note": "this run was recorded before SourceCheckup stored what a run was made with"},
        "report_written_with": software_environment(),
    }
