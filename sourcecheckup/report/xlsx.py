"""The report as an Excel workbook (openpyxl): summary, by model, statements, verdicts, sources, reviews.

Every cell from answers or pages is written as text, never as a formula (a statement that
starts with '=' stays a string), with characters Excel cannot hold removed.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Iterable, Iterator, Mapping, Sequence

from ..metrics import METRIC_NAMES
from ..store import Store
from .json_report import JUDGES_ONLY, WITH_REVIEWS, method_notes

EXCEL_CELL_LIMIT = 32_767
EXCEL_MAX_ROWS = 1_048_576     # rows in one Excel sheet; a longer table goes on to "verdicts (2)" and so on


def _cell(ws: Any, value: Any) -> Any:
    from openpyxl.cell import WriteOnlyCell
    from openpyxl.cell.cell import ILLEGAL_CHARACTERS_RE

    if isinstance(value, (list, tuple)):
        value = "; ".join(str(v) for v in value)
    elif isinstance(value, dict):
        value = ", ".join(f"{k}={v}" for k, v in value.items())
    if isinstance(value, str):
        value = ILLEGAL_CHARACTERS_RE.sub("", value)[:EXCEL_CELL_LIMIT]
        cell = WriteOnlyCell(ws, value=value)
        cell.data_type = "s"          # text, even when it starts with '=' (no formula injection)
        return cell
    return WriteOnlyCell(ws, value=value)


def _sheet(wb: Any, title: str, header: Sequence[str], rows: Iterable[Sequence[Any]] = ()) -> Any:
    ws = wb.create_sheet(title)
    _fill(ws, header, rows)
    return ws


def _append(ws: Any, rows: Iterable[Sequence[Any]]) -> None:
    for row in rows:
        ws.append([_cell(ws, v) for v in row])


class _LongSheet:
    """A sheet that continues on "title (2)", "title (3)"... (each with the header) when Excel's row limit is hit."""

    def __init__(self, wb: Any, title: str, header: Sequence[str], max_rows: int | None = None) -> None:
        self.wb, self.title, self.header = wb, title, header
        self.max_rows = max_rows or EXCEL_MAX_ROWS
        self.parts = 1
        self.ws = _sheet(wb, title, header)
        self.rows = 1

    def append(self, rows: Iterable[Sequence[Any]]) -> None:
        for row in rows:
            if self.rows >= self.max_rows:
                self.parts += 1
                self.ws = _sheet(self.wb, f"{self.title} ({self.parts})", self.header)
                self.rows = 1
            self.ws.append([_cell(self.ws, v) for v in row])
            self.rows += 1


def _metric_cells(m: Mapping[str, Any]) -> list[Any]:
    lo, hi = (m.get("ci95") or [None, None])[:2]
    return [m.get("value"), lo, hi, m.get("k"), m.get("n")]


STATEMENT_HEADER = ["response id", "model", "question", "statement id", "statement", "category", "status",
                    "supported", "supporting urls", "judges disagree", "status (judges only)",
                    "status (with reviews)", "contradicted", "review first", "supported only by retracted papers"]
VERDICT_HEADER = ["statement id", "statement", "url", "judge", "label", "score", "quote", "quote found",
                  "rationale", "flags", "reading"]
SOURCE_HEADER = ["url", "domain", "status", "http status", "title", "sha256", "fetched at", "origin", "flags",
                 "source id", "reference status", "retracted", "reference evidence", "citations"]
REVIEW_HEADER = ["statement id", "statement", "url", "reviewer", "label", "reason", "blind", "sample",
                 "created at", "judges"]


def _summary_rows(report: Mapping[str, Any]) -> list[list[Any]]:
    run = report["run"]
    ro = report.get("reviewer_overrides") or {}
    summary: list[list[Any]] = [["reviewer overrides", "applied" if ro.get("applied") else "not applied",
                                 ro.get("note", "")]]
    trail = report.get("audit_trail") or {}
    if trail.get("judge_warning"):
        summary.append(["warning", trail["judge_warning"]])
    if report.get("partial_run"):
        summary.append(["partial run", report["partial_run"]])
    if report.get("judge_error_warning"):
        summary.append(["judge errors", report["judge_error_warning"]])
    if report.get("large_run"):
        summary.append(["large run", report["large_run"]])
    summary += [["run id", run["id"]], ["run name", run.get("name") or ""], ["input", run.get("input") or ""],
                ["status", run["status"]], ["created", run["created_at"]],
                ["finished", run["finished_at"]], ["judges", run["judges"]],
                ["judge version", trail.get("judge_versions", "")], ["parser", run["parser"]],
                ["app version", run["app_version"]], ["database", run["database"]], []]
    summary.append(["metric", "judges only", "ci95 low", "ci95 high", "k", "n",
                    "with reviews", "ci95 low", "ci95 high", "k", "n", "interval method",
                    "left out (judges only)", "left out (with reviews)"])
    reviewed = report.get("metrics_with_reviews") or report["metrics"]
    left_out, left_out_reviewed = report.get("exclusions") or {}, report.get("exclusions_with_reviews") or {}
    for key, label in METRIC_NAMES.items():
        if key not in report["metrics"]:
            continue
        summary.append([label, *_metric_cells(report["metrics"][key]), *_metric_cells(reviewed[key]),
                        report["metrics"][key].get("ci_method", ""), left_out.get(key, ""),
                        left_out_reviewed.get(key, "")])
    summary.append([])
    for key, value in report["counts"].items():
        summary.append([key.replace("_", " "), value if not isinstance(value, dict) else
                        ", ".join(f"{k}={_flat(v)}" for k, v in value.items())])
    summary.append([])
    summary += [["method", sentence] for sentence in method_notes(report)]
    integrity = report.get("integrity") or {}
    if integrity.get("content_sha256"):   # match this workbook to a verified JSON report of the same run
        summary += [[], ["report content sha256", integrity["content_sha256"]],
                    ["evidence sha256", (integrity.get("evidence") or {}).get("sha256")],
                    ["report options", json.dumps(report.get("report_options"), sort_keys=True)]]
    return summary


def _flat(value: Any) -> Any:
    return value if not isinstance(value, dict) else "(" + ", ".join(f"{k}={v}" for k, v in value.items()) + ")"


def _group_header() -> list[str]:
    header = ["group", "value", "responses"]
    for label in METRIC_NAMES.values():
        header += [label, f"{label} ci95 low", f"{label} ci95 high", f"{label} k", f"{label} n"]
    return header + ["basis"]


def _group_rows(report: Mapping[str, Any]) -> list[list[Any]]:
    groups: list[list[Any]] = []
    tables = [("model", report.get("by_model", {}), JUDGES_ONLY),
              *((col, by, JUDGES_ONLY) for col, by in report.get("by_group", {}).items())]
    if (report.get("reviewer_overrides") or {}).get("overrides") and "by_model_with_reviews" in report:
        tables.append(("model", report["by_model_with_reviews"], WITH_REVIEWS))
    for col, by, basis in tables:
        for name, g in by.items():
            row = [col, name, g["counts"]["responses"]]
            for key in METRIC_NAMES:
                row += _metric_cells(g.get(key) or {})
            groups.append(row + [basis])
    return groups


def _statement_rows(resp: Mapping[str, Any]) -> Iterator[list[Any]]:
    for st in resp["statements"]:
        yield [resp["id"], resp["model"], resp["question"], st["id"], st["text"], st["category"], st["status"],
               st["supported"], st["supporting_urls"], st["judges_disagree"], st.get("status_judges"),
               st.get("status_with_reviews"), st.get("contradicted"), st.get("review_first"),
               st.get("supported_only_by_retracted")]


def _verdict_rows(resp: Mapping[str, Any]) -> Iterator[list[Any]]:
    for st in resp["statements"]:
        for v in st["verdicts"]:
            yield [st["id"], st["text"], v["url"], v["judge"], v["label"], v["score"], v["quote"], v["quote_found"],
                   v["rationale"], v["flags"], v.get("reading", "")]


def _count_sources(resp: Mapping[str, Any], seen: dict[str, list[Any]], source_ids: Mapping[str, Any]) -> None:
    for s in resp["sources"]:
        if s["url"] in seen:
            seen[s["url"]][-1] += 1
            continue
        ref = s.get("reference") or {}
        seen[s["url"]] = [s["url"], s.get("domain"), s["status"], s.get("http_status"), s.get("title"),
                          s.get("sha256"), s.get("fetched_at"), s.get("origin"), s.get("flags"),
                          source_ids.get(s["url"]), ref.get("status", ""),
                          ("yes" if ref.get("retracted") else "no") if ref else "", ref.get("evidence", ""), 1]


def _review_rows(store: Store, run_id: str, ids: Mapping[int, str], texts: Mapping[str, str],
                 judged: Mapping[tuple[str, str], list[str]]) -> list[list[Any]]:
    from ..review.labels import reviews

    rows = []
    for r in reviews(store, run_id, latest_only=False):
        sid = ids.get(r.statement_pk, str(r.statement_pk))
        rows.append([sid, texts.get(sid, ""), r.url, r.reviewer, r.label.value, r.reason, r.blind,
                     r.sample, r.created_at, judged.get((sid, r.url), [])])
    return rows


def _references_sheet(wb: Any, report: Mapping[str, Any]) -> None:
    refs = report.get("references")
    if refs:   # the reference-check metrics, overall and per model (per citation: see the sources sheet)
        groups = [("all", refs["metrics"])] + list(refs.get("by_model", {}).items())
        _sheet(wb, "references", ["group", "metric", "value", "ci95 low", "ci95 high", "k", "n"],
               ([name, label, *_metric_cells(g[key])] for name, g in groups for key, label in refs["names"].items()))


def _expert_sheet(wb: Any, report: Mapping[str, Any]) -> None:
    from .expert_report import EXPERT_SHEET_HEADER, expert_sheet_rows, has_expert

    if has_expert(report):   # OLAPH and EVAL figures, overall, per model, per answer, with each statement's verdicts
        _sheet(wb, "expert", EXPERT_SHEET_HEADER, expert_sheet_rows(report["expert"]))
    from .studies_report import SHEET_HEADER, has_studies, studies_sheet_rows

    if has_studies(report):  # refusal accuracy, context relevance (ASTRID), adversarial safety (Almanac)
        _sheet(wb, "studies", SHEET_HEADER, studies_sheet_rows(report))
    from .repairs import SHEET_HEADER as REPAIRS_HEADER
    from .repairs import repairs_sheet_rows

    if report.get("repairs"):   # a source found for each unsupported statement (issue 44)
        _sheet(wb, "repairs", REPAIRS_HEADER, repairs_sheet_rows(report))


def write_xlsx(report: Mapping[str, Any], store: Store | None, path: str | Path) -> Path:
    from openpyxl import Workbook

    path = Path(path)
    wb = Workbook(write_only=True)
    run = report["run"]
    _sheet(wb, "summary", ["item", "value", "", "", "", "", "", "", "", "", "", ""], _summary_rows(report))
    _sheet(wb, "by model", _group_header(), _group_rows(report))
    _sheet(wb, "statements", STATEMENT_HEADER, (row for resp in report["responses"] for row in _statement_rows(resp)))
    _sheet(wb, "verdicts", VERDICT_HEADER, (row for resp in report["responses"] for row in _verdict_rows(resp)))
    trail = {s["url"]: s.get("source_id") for s in report.get("audit_trail", {}).get("sources", [])}
    seen: dict[str, list[Any]] = {}
    for resp in report["responses"]:
        _count_sources(resp, seen, trail)
    _sheet(wb, "sources", SOURCE_HEADER, seen.values())

    review_rows: list[list[Any]] = []
    if store is not None:
        texts = {st["id"]: st["text"] for resp in report["responses"] for st in resp["statements"]}
        judged: dict[tuple[str, str], list[str]] = {}
        for resp in report["responses"]:
            for st in resp["statements"]:
                for v in st["verdicts"]:
                    judged.setdefault((st["id"], v["url"]), []).append(f"{v['judge']}: {v['label']}")
        review_rows = _review_rows(store, run["id"], store.statement_ids(run["id"]), texts, judged)
    _sheet(wb, "reviews", REVIEW_HEADER, review_rows)
    _references_sheet(wb, report)
    _expert_sheet(wb, report)
    path.parent.mkdir(parents=True, exist_ok=True)
    wb.save(str(path))
    return path


def write_xlsx_stream(store: Store, run_id: str, path: str | Path, *, max_rows: int | None = None, **kw: Any) -> Path:
    """The workbook of :func:`write_xlsx`, its rows streamed a page of responses at a time (openpyxl write-only).
    A run with more verdicts than a sheet holds (1,048,576 rows: about 87,000 answers of 12 pairs) continues
    them on "verdicts (2)"; ``max_rows`` lowers the limit (tests)."""
    from openpyxl import Workbook

    from .stream import StreamedReport

    path = Path(path)
    report = StreamedReport(store, run_id, **kw)
    reviewed_ids = set(store.reviewed_statement_pks(report.run.id))
    wb = Workbook(write_only=True)
    summary = wb.create_sheet("summary")
    groups = wb.create_sheet("by model")
    statements = _LongSheet(wb, "statements", STATEMENT_HEADER, max_rows)
    verdicts = _LongSheet(wb, "verdicts", VERDICT_HEADER, max_rows)
    source_ids = store.run_source_ids(report.run.id)
    seen: dict[str, list[Any]] = {}
    ids: dict[int, str] = {}                            # of reviewed statements only
    texts: dict[str, str] = {}
    judged: dict[tuple[str, str], list[str]] = {}

    def on_response(resp: dict[str, Any]) -> None:
        statements.append(_statement_rows(resp))
        verdicts.append(_verdict_rows(resp))
        _count_sources(resp, seen, source_ids)

    def on_page(page: Any) -> None:
        by_pk = {r.pk: r.response.id for r in page.data.responses}
        for rows in page.data.statements.values():
            for row in rows:
                if row.pk not in reviewed_ids:
                    continue
                sid = ids[row.pk] = f"{by_pk[row.response_pk]}/s{row.statement.index + 1}"
                texts[sid] = row.statement.text
                for v in page.data.verdicts.get(row.pk, []):
                    judged.setdefault((sid, v.url), []).append(f"{v.verdict.judge_id}: {v.verdict.label.value}")

    head = report.run_pass(on_response=on_response, on_page=on_page)
    _fill(summary, ["item", "value", "", "", "", "", "", "", "", "", "", ""], _summary_rows(head))
    _fill(groups, _group_header(), _group_rows(head))
    _sheet(wb, "sources", SOURCE_HEADER, seen.values())
    _sheet(wb, "reviews", REVIEW_HEADER, _review_rows(store, report.run.id, ids, texts, judged))
    _references_sheet(wb, head)
    _expert_sheet(wb, head)
    path.parent.mkdir(parents=True, exist_ok=True)
    wb.save(str(path))
    return path


def _fill(ws: Any, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    from openpyxl.styles import Font

    head = []
    for name in header:
        c = _cell(ws, name)
        c.font = Font(bold=True)
        head.append(c)
    ws.append(head)
    _append(ws, rows)
