"""Reports of a run too large to load whole, read a page of responses at a time.

:func:`~.json_report.build_report` holds the whole run and its report in memory: gigabytes at
100,000 answers. Here one pass over the run (:meth:`Store.iter_run_page_rows`) assesses each page with
the same functions, adds its counts to tallies (:class:`~sourcecheckup.metrics.MetricsTally`, the
citation counts of :func:`~.analytics.analyse_citations`) and hands each response's record to a
writer as it is read; the figures equal build_report's, the memory does not grow with the run.
"""
from __future__ import annotations

import json
import shutil
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Iterator, Mapping, Sequence

from ..metrics import CI_METHODS, MetricsTally, ResponseAssessment, assess_run, judge_error_note, partial_run_note
from ..metrics.studies import study_figures
from ..models import utcnow
from ..references.metrics import retracted_only_statements
from ..references.model import ReferenceCheck
from ..store import RunData, Store
from ..store.export import PAGE_RESPONSES
from ..urls import domain_of
from .analytics import Citation, analyse_citations, citation_status
from .integrity import ListHasher, seal
from .json_report import (
    _extra_key,
    _response_dict,
    _suggestions,
    _unsupported,
    audit_trail,
    group_dict,
    grouping_columns,
    headline_notes,
    integrity_section,
    report_options,
    run_section,
)
from .references import ReferencesSection

LARGE_RUN_RESPONSES = 2000     # above this the HTML and PDF reports leave the support matrix to CSV/XLSX
UNSUPPORTED_SHOWN = 200        # unsupported statements a large run's HTML/PDF lists (then a count of the rest)
SOURCES_SHOWN = 500            # sources a large run's HTML/PDF audit trail lists
STREAMED = ("responses", "unsupported", "disagreements")


@dataclass
class Page:
    """One page of a run, assessed: ``assessed`` on the report's basis, ``other`` the other basis by statement pk."""

    data: RunData
    judges_assessed: list[ResponseAssessment]
    reviewed_assessed: list[ResponseAssessment]
    assessed: list[ResponseAssessment]
    other: dict[int, Any]

    def response_dicts(self, with_reviews: bool,
                       checks: Mapping[str, ReferenceCheck] | None = None) -> Iterator[dict[str, Any]]:
        by_pk = {r.pk: r for r in self.data.responses}
        retracted_only = retracted_only_statements(self.assessed, checks) if checks else frozenset()
        for r in self.assessed:
            yield _response_dict(self.data, r, by_pk, self.other, with_reviews, checks, retracted_only)


class StreamedReport:
    """One report of a stored run, computed in passes over pages of responses; the options are build_report's."""

    def __init__(self, store: Store, run_id: str, *, overrides: Any = None, with_reviews: bool | None = None,
                 group_by: Sequence[str] | None = None, whois: bool = False, whois_server: str | None = None,
                 page_size: int = PAGE_RESPONSES) -> None:
        from ..review.labels import overrides as review_overrides

        self.store = store
        self.run = store.get_run(run_id)
        self.page_size = page_size
        self.stored_reviews = review_overrides(store, self.run.id)
        self.with_reviews = overrides is not None if with_reviews is None else bool(with_reviews)
        self.custom = overrides is not None and dict(overrides) != dict(self.stored_reviews)
        self.reviewed = dict(overrides) if overrides is not None else dict(self.stored_reviews)
        self.group_by = list(group_by) if group_by is not None else None
        self.whois, self.whois_server = whois, whois_server
        self.seed = int(self.run.config.get("seed", 0))
        self.checks = store.reference_checks(self.run.id)     # one dict per run: the cited references' checks

    def run_pages(self) -> Iterator[RunData]:
        """The run's rows a page of responses at a time (``skipped`` is empty: the store lists the run's)."""
        for responses, statements, sources, verdicts in self.store.iter_run_page_rows(self.run.id, self.page_size):
            yield RunData(run=self.run, responses=responses, statements=statements, sources=sources,
                          verdicts=verdicts, skipped=[])

    def pages(self) -> Iterator[Page]:
        for data in self.run_pages():
            judges_assessed = assess_run(data)
            reviewed_assessed = assess_run(data, overrides=self.reviewed) if self.reviewed else judges_assessed
            assessed = reviewed_assessed if self.with_reviews else judges_assessed
            other = {s.row.pk: s for r in (judges_assessed if self.with_reviews else reviewed_assessed)
                     for s in r.statements}
            yield Page(data, judges_assessed, reviewed_assessed, assessed, other)

    def response_dicts(self) -> Iterator[dict[str, Any]]:
        """Each response's record, in order, as build_report's ``responses`` holds it."""
        for page in self.pages():
            yield from page.response_dicts(self.with_reviews, self.checks)

    def run_pass(self, on_response: Callable[[dict[str, Any]], None] | None = None,
                 on_unsupported: Callable[[dict[str, Any]], None] | None = None,
                 on_disagreement: Callable[[dict[str, Any]], None] | None = None,
                 on_page: Callable[[Page], None] | None = None) -> dict[str, Any]:
        """One pass: hands every response, unsupported statement and judges' disagreement to its callback and
        returns the report without them (their keys hold None, as does ``audit_trail.sources``)."""
        hashers = {key: ListHasher() for key in STREAMED}

        def both(key: str, call: Callable[[dict[str, Any]], None] | None) -> Callable[[dict[str, Any]], None]:
            def add(item: dict[str, Any]) -> None:
                hashers[key].add(item)
                if call is not None:
                    call(item)
            return add

        tallies = self._tally_pass(both("responses", on_response), both("unsupported", on_unsupported),
                                   both("disagreements", on_disagreement), on_page)
        head = self._head(*tallies)
        store, run_id = self.store, self.run.id
        # the report's own digests, as if the streamed lists and the audit trail's sources were in the dict
        return seal(head, streams={("audit_trail", "sources"): lambda: (
            _trail_source(r) for r in store.iter_run_source_summaries(run_id))},
            precomputed={key: h.hexdigest() for key, h in hashers.items()})

    def figures(self) -> tuple[Any, Any, dict[str, Any], dict[str, Any]]:
        """The judges-only metrics, the metrics with the reviews, the per-model figures and the references
        section's figures (``counts``, ``metrics``, ``by_model``): what ``verify-report`` recomputes, in one pass
        without the rest of the report."""
        metrics, reviewed_metrics, _, by_model, _, _, references, _ = self._tally_pass(columns=[])
        return (metrics, reviewed_metrics, {name: _group_dict(t, self.seed) for name, t in sorted(by_model.items())},
                references.metrics())

    def _tally_pass(self, on_response: Callable[[dict[str, Any]], None] | None = None,
                    on_unsupported: Callable[[dict[str, Any]], None] | None = None,
                    on_disagreement: Callable[[dict[str, Any]], None] | None = None,
                    on_page: Callable[[Page], None] | None = None,
                    columns: Sequence[str] | None = None) -> tuple[Any, ...]:
        from .judges import disagreements

        store, run = self.store, self.run
        if columns is None:
            columns = self.group_by if self.group_by is not None else grouping_columns(store.response_extras(run.id))
        judges_tally, reviewed_tally = MetricsTally(), MetricsTally()
        by_model: dict[str, MetricsTally] = {}
        by_model_reviewed: dict[str, MetricsTally] = {}
        by_group: dict[str, dict[str, MetricsTally]] = {c: {} for c in columns}
        cites: Counter[Citation] = Counter()
        references = ReferencesSection(self.checks)
        suggestions = _suggestions(store, run.id) if on_unsupported else {}
        for page in self.pages():
            data = page.data
            judges_tally.add(data, page.judges_assessed)
            if self.reviewed:
                reviewed_tally.add(data, page.reviewed_assessed)
            by_pk = {r.pk: r for r in data.responses}
            bases = [(by_model, lambda r: r.model, page.judges_assessed),
                     *((by_group[c], _extra_key(by_pk, c), page.judges_assessed) for c in columns)]
            if self.reviewed:
                bases.append((by_model_reviewed, lambda r: r.model, page.reviewed_assessed))
            for tallies, key, assessed in bases:
                members: dict[str, list[ResponseAssessment]] = {}
                for r in assessed:
                    members.setdefault(key(r) or "(none)", []).append(r)
                for name, group in members.items():
                    tallies.setdefault(name, MetricsTally()).add(data, group)
            for resp in data.responses:
                model = resp.response.model or "(none)"
                for url in resp.response.citations:
                    row = data.sources.get(url)
                    cites[Citation(model, url, domain_of(url), citation_status(url, row))] += 1
            # the reference checks: judges' figures, as by_model
            references.add(page.judges_assessed, {r.pk: r.response.id for r in data.responses})
            if on_page:
                on_page(page)
            if on_response:
                for d in page.response_dicts(self.with_reviews, self.checks):
                    on_response(d)
            if on_unsupported:
                for u in _unsupported(store, data, page.assessed, by_pk, suggestions):
                    on_unsupported(u)
            if on_disagreement:
                for d in disagreements(data, page.assessed):
                    on_disagreement(d)
        skipped = store.skipped(run.id)
        metrics = judges_tally.result(self.seed, skipped=len(skipped))
        reviewed_metrics = reviewed_tally.result(self.seed, skipped=len(skipped)) if self.reviewed else metrics
        return metrics, reviewed_metrics, skipped, by_model, by_group, cites, references, by_model_reviewed

    def _head(self, metrics: Any, reviewed_metrics: Any, skipped: Sequence[Any], by_model: Mapping[str, MetricsTally],
              by_group: Mapping[str, Mapping[str, MetricsTally]], cites: Mapping[Citation, int],
              references: ReferencesSection, by_model_reviewed: Mapping[str, MetricsTally]) -> dict[str, Any]:
        """The report's keys in build_report's order, computed from the tallies."""
        from ..review.agreement import agreement_report
        from .judges import run_usage

        store, run, reviewed = self.store, self.run, self.reviewed
        report: dict[str, Any] = {
            "run": run_section(store, run),
            "metrics": metrics.as_dict(),
            "counts": metrics.counts,
            "skipped": [{"origin": s.origin, "problem": s.problem} for s in skipped],
            "responses": None,
        }
        report["generated_at"] = utcnow()
        report["metrics_basis"] = "judges" if not self.custom else "custom_overrides"
        report["metrics_with_reviews"] = reviewed_metrics.as_dict()
        report["counts_with_reviews"] = reviewed_metrics.counts
        with_reviews = self.with_reviews
        report["reviewer_overrides"] = {
            "applied": bool(with_reviews), "overrides": len(reviewed), "source": "custom" if self.custom else "reviews",
            "headline": "metrics_with_reviews" if with_reviews else "metrics",
            "note": (f"Reviewer overrides are applied: the reviewers' decision replaces the judge's on {len(reviewed)} "
                     "pair(s) in the headline figures and statement statuses; the judges-only figures are shown beside "
                     "them." if with_reviews and reviewed else
                     "No reviewer has overridden a verdict of this run: the judges-only and with-reviews figures are "
                     "the same." if not reviewed else
                     f"Reviewer overrides are not applied: the headline figures and statement statuses are the judges' "
                     f"alone; figures with the {len(reviewed)} reviewer override(s) are shown beside them."),
        }
        report["partial_run"] = partial_run_note(metrics.counts)
        report["judge_error_warning"] = judge_error_note(metrics.counts)
        headline_notes(report)
        report["by_model"] = {name: _group_dict(t, self.seed) for name, t in sorted(by_model.items())}
        report["by_model_with_reviews"] = ({name: _group_dict(t, self.seed) for name, t in sorted(by_model_reviewed.items())}
                                           if reviewed else report["by_model"])
        report["references"] = references.result()
        from ..expert.metrics import expert_section
        report["expert"] = expert_section(store, run.id)
        report["studies"] = study_figures(store, run_id=run.id)
        from .repairs import repairs_section
        report["repairs"] = repairs_section(store, run.id)
        report["by_group"] = {col: {name: _group_dict(t, self.seed) for name, t in sorted(groups.items())}
                              for col, groups in by_group.items()}
        country_lookup = server = None
        if self.whois:
            from functools import partial

            from .whois import DEFAULT_SERVER, split_server, whois_countries

            server = self.whois_server or DEFAULT_SERVER
            split_server(server)
            country_lookup = partial(whois_countries, server=server)
        report["analytics"] = analyse_citations(cites, lambda urls: store.run_sources_for(run.id, urls), run.config,
                                                seed=self.seed + 100, country_lookup=country_lookup,
                                                whois_server=server)
        report["unsupported"] = None
        report["disagreements"] = None
        report["usage"] = run_usage(store, run.id)
        review = agreement_report(store, self._agreement_data(), seed=self.seed + 200)
        if review["reviews"]:
            review["overrides"] = len(self.stored_reviews)
            # the stored reviews' figures: already tallied unless custom overrides replaced them
            review["metrics_with_reviews"] = (self._stored_review_metrics().as_dict() if self.custom and
                                              self.stored_reviews else report["metrics" if not self.stored_reviews
                                                                              else "metrics_with_reviews"])
        report["review"] = review
        judges, first, last = store.verdict_provenance(run.id)
        report["audit_trail"] = audit_trail(store, run, judges, first, last, None)
        report["audit_trail"]["intervals"] = {
            key: {"method": m["ci_method"], "description": CI_METHODS.get(m["ci_method"], m["ci_method"])}
            for key, m in report["metrics"].items()}
        report["report_options"] = report_options(with_reviews, self.group_by, self.whois, self.whois_server,
                                                  self.custom)
        report["integrity"] = integrity_section(store, run)
        return report

    def _agreement_data(self) -> RunData:
        """The rows the agreement section reads: the reviewed statements and their verdicts; with several
        judges (judge-judge agreement is over every pair) every verdict, a page at a time."""
        responses, statements, _, verdicts = self.store.rows_for_statements(
            self.run.id, self.store.reviewed_statement_pks(self.run.id))
        data = RunData(run=self.run, responses=responses, statements=statements, sources={}, verdicts=verdicts)
        judges, _, _ = self.store.verdict_provenance(self.run.id)
        if len(set(judges) | set(self.run.judges)) > 1:
            for page in self.run_pages():
                data.verdicts.update(page.verdicts)
        return data

    def _stored_review_metrics(self) -> Any:
        tally = MetricsTally()
        for data in self.run_pages():
            tally.add(data, assess_run(data, overrides=self.stored_reviews))
        return tally.result(self.seed, skipped=len(self.store.skipped(self.run.id)))


def _group_dict(tally: MetricsTally, seed: int) -> dict[str, Any]:
    return group_dict(tally.result(seed))


# ------------------------------------------------------------------------- JSON

class _ListSpool:
    """A JSON list written item by item to a temporary file, copied into the report afterwards."""

    def __init__(self) -> None:
        self.file: IO[str] = tempfile.TemporaryFile("w+", encoding="utf-8")
        self.count = 0

    def add(self, item: Any) -> None:
        self.file.write(("\n    " if not self.count else ",\n    ") + json.dumps(item, ensure_ascii=False))
        self.count += 1

    def copy_to(self, out: IO[str]) -> None:
        if not self.count:
            out.write("[]")
            return
        out.write("[")
        self.file.seek(0)
        shutil.copyfileobj(self.file, out)
        out.write("\n  ]")

    def close(self) -> None:
        self.file.close()


def _value(value: Any, depth: int = 1) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False).replace("\n", "\n" + "  " * depth)


def write_json_stream(store: Store, run_id: str, path: str | Path, *, sign: str | Path | None = None,
                      **kw: Any) -> Path:
    """The JSON report of build_report, written a response at a time (one line each) with flat memory;
    ``sign``: an Ed25519 private key file to sign its digest with."""
    path = Path(path)
    report = StreamedReport(store, run_id, **kw)
    spools = {key: _ListSpool() for key in STREAMED}
    tmp = path.with_name(path.name + ".part")
    try:
        head = report.run_pass(spools["responses"].add, spools["unsupported"].add, spools["disagreements"].add)
        if sign:
            from .integrity import sign as sign_report

            sign_report(head, sign)
        with tmp.open("w", encoding="utf-8") as out:
            out.write("{")
            for i, (key, value) in enumerate(head.items()):
                out.write(("\n  " if i == 0 else ",\n  ") + json.dumps(key) + ": ")
                if key in spools:
                    spools[key].copy_to(out)
                elif key == "audit_trail":
                    _write_audit_trail(store, run_id, value, out)
                else:
                    out.write(_value(value))
            out.write("\n}")
        tmp.replace(path)
    finally:
        for spool in spools.values():
            spool.close()
        tmp.unlink(missing_ok=True)
    return path


def _write_audit_trail(store: Store, run_id: str, trail: Mapping[str, Any], out: IO[str]) -> None:
    out.write("{")
    for i, (key, value) in enumerate(trail.items()):
        out.write(("\n    " if i == 0 else ",\n    ") + json.dumps(key) + ": ")
        if key != "sources" or value is not None:
            out.write(_value(value, 2))
            continue
        n = 0
        for row in store.iter_run_source_summaries(run_id):
            out.write(("[\n      " if not n else ",\n      ") + json.dumps(_trail_source(row), ensure_ascii=False))
            n += 1
        out.write("\n    ]" if n else "[]")
    out.write("\n  }")


def _trail_source(row: Mapping[str, Any]) -> dict[str, Any]:
    return {"url": row["url"], "source_id": row["source_id"], "status": row["status"],
            "http_status": row["http_status"], "sha256": row["sha256"], "fetched_at": row["fetched_at"] or "",
            "origin": row["origin"] or "http", "final_url": row["final_url"], "text_chars": row["text_chars"] or 0}


def trail_sources(store: Store, run_id: str, limit: int | None = None) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for row in store.iter_run_source_summaries(run_id):
        if limit is not None and len(out) >= limit:
            break
        out.append(_trail_source(row))
    return out


# ------------------------------------------------------------------------- CSV

def write_csv_stream(store: Store, run_id: str, path: str | Path, **kw: Any) -> Path:
    """The CSV report (one row per verdict), written a page of responses at a time."""
    from .csv_report import CSV_COLUMNS, csv_rows
    from .csvsafe import SafeWriter

    path = Path(path)
    report = StreamedReport(store, run_id, **{k: v for k, v in kw.items() if k in ("overrides", "with_reviews")})
    tmp = path.with_name(path.name + ".part")
    try:
        with tmp.open("w", encoding="utf-8", newline="") as out:
            w = SafeWriter(out)   # answer and page text must not run as a spreadsheet formula
            w.writerow(CSV_COLUMNS)
            run = (report.run.id, report.run.name or "")
            for resp in report.response_dicts():
                w.writerows(csv_rows(resp, report.with_reviews, run))
            from ..expert.metrics import expert_section
            from .expert_report import expert_csv_rows
            w.writerows(expert_csv_rows(expert_section(store, report.run.id), run, len(CSV_COLUMNS)))
            from .studies_report import studies_csv_rows  # a large run's rows: the studies without the per-model tally
            w.writerows(studies_csv_rows({"studies": study_figures(store, run_id=report.run.id)}, run, len(CSV_COLUMNS)))
            from .repairs import repairs_csv_rows, repairs_section
            w.writerows(repairs_csv_rows({"repairs": repairs_section(store, report.run.id)}, run, len(CSV_COLUMNS)))
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)
    return path


# ------------------------------------------------------------------------- HTML / PDF of a large run

LARGE_RUN_NOTE = ("This run has {n:,} responses: this report holds the summary, the metrics, the per-model tables, the "
                  "sources and the first {shown:,} unsupported statements. The full support matrix (every statement "
                  "against every cited source, with quotes and rationales) is in the CSV/XLSX export: "
                  "sourcecheckup report {run} --output report.csv (or report.xlsx); the JSON report holds "
                  "everything.")


def large_run_report(store: Store, run_id: str, **kw: Any) -> dict[str, Any]:
    """The report of a large run as its HTML/PDF shows it: every figure, the first unsupported statements and
    sources (with how many there are), no per-response appendix."""
    report = StreamedReport(store, run_id, **kw)
    unsupported: list[dict[str, Any]] = []
    total = 0

    def keep(u: dict[str, Any]) -> None:
        nonlocal total
        total += 1
        if len(unsupported) < UNSUPPORTED_SHOWN:
            unsupported.append(u)

    head = report.run_pass(on_unsupported=keep)
    n = head["counts"]["responses"]
    head["responses"] = []
    head["unsupported"] = unsupported
    head["unsupported_total"] = total
    head["disagreements"] = []
    head["large_run"] = LARGE_RUN_NOTE.format(n=n, shown=min(total, UNSUPPORTED_SHOWN), run=report.run.id)
    head["audit_trail"]["sources"] = trail_sources(store, report.run.id, SOURCES_SHOWN)
    head["audit_trail"]["sources_total"] = sum(1 for _ in store.iter_run_source_summaries(report.run.id))
    return head


def is_large_run(store: Store, run_id: str, threshold: int | None = None) -> bool:
    """More responses than an HTML/PDF report lists one by one (``LARGE_RUN_RESPONSES``)."""
    limit = LARGE_RUN_RESPONSES if threshold is None else threshold
    return store.count_responses(store.get_run(run_id).id) > limit
