"""The report as an Excel workbook (openpyxl): summary, by model, statements, verdicts, sources, reviews.

Every cell from answers or pages is written as text, never as a formula (a statement that
starts with '=' stays a string), with characters Excel cannot hold removed.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from ..metrics import METRIC_NAMES
from ..store import Store

EXCEL_CELL_LIMIT = 32_767


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


def _sheet(wb: Any, title: str, header: Sequence[str], rows: Iterable[Sequence[Any]]) -> None:
    from openpyxl.styles import Font

    ws = wb.create_sheet(title)
    head = []
    for name in header:
        c = _cell(ws, name)
        c.font = Font(bold=True)
        head.append(c)
    ws.append(head)
    for row in rows:
        ws.append([_cell(ws, v) for v in row])


def _metric_cells(m: Mapping[str, Any]) -> list[Any]:
    lo, hi = (m.get("ci95") or [None, None])[:2]
    return [m.get("value"), lo, hi, m.get("k"), m.get("n")]


def write_xlsx(report: Mapping[str, Any], store: Store | None, path: str | Path) -> Path:
    from openpyxl import Workbook

    path = Path(path)
    wb = Workbook(write_only=True)
    run = report["run"]
    ro = report.get("reviewer_overrides") or {}
    summary: list[list[Any]] = [["reviewer overrides", "applied" if ro.get("applied") else "not applied",
                                 ro.get("note", "")]]
    if report.get("partial_run"):
        summary.append(["partial run", report["partial_run"]])
    summary += [["run id", run["id"]], ["status", run["status"]], ["created", run["created_at"]],
                ["finished", run["finished_at"]], ["judges", run["judges"]], ["parser", run["parser"]],
                ["app version", run["app_version"]], ["database", run["database"]], []]
    summary.append(["metric", "judges only", "ci95 low", "ci95 high", "k", "n",
                    "with reviews", "ci95 low", "ci95 high", "k", "n", "interval method"])
    reviewed = report.get("metrics_with_reviews") or report["metrics"]
    for key, label in METRIC_NAMES.items():
        summary.append([label, *_metric_cells(report["metrics"][key]), *_metric_cells(reviewed[key]),
                        report["metrics"][key].get("ci_method", "")])
    summary.append([])
    for key, value in report["counts"].items():
        summary.append([key.replace("_", " "), value if not isinstance(value, dict) else
                        ", ".join(f"{k}={v}" for k, v in value.items())])
    _sheet(wb, "summary", ["item", "value", "", "", "", "", "", "", "", "", "", ""], summary)

    header = ["group", "value", "responses"]
    for label in METRIC_NAMES.values():
        header += [label, f"{label} ci95 low", f"{label} ci95 high", f"{label} k", f"{label} n"]
    groups: list[list[Any]] = []
    for col, by in [("model", report.get("by_model", {})), *report.get("by_group", {}).items()]:
        for name, g in by.items():
            row = [col, name, g["counts"]["responses"]]
            for key in METRIC_NAMES:
                row += _metric_cells(g[key])
            groups.append(row)
    _sheet(wb, "by model", header, groups)

    _sheet(wb, "statements", ["response id", "model", "question", "statement id", "statement", "category", "status",
                              "supported", "supporting urls", "judges disagree", "status (judges only)",
                              "status (with reviews)", "contradicted", "review first",
                              "supported only by retracted papers"],
           ([resp["id"], resp["model"], resp["question"], st["id"], st["text"], st["category"], st["status"],
             st["supported"], st["supporting_urls"], st["judges_disagree"], st.get("status_judges"),
             st.get("status_with_reviews"), st.get("contradicted"), st.get("review_first"),
             st.get("supported_only_by_retracted")]
            for resp in report["responses"] for st in resp["statements"]))
    _sheet(wb, "verdicts", ["statement id", "statement", "url", "judge", "label", "score", "quote", "quote found",
                            "rationale", "flags", "reading"],
           ([st["id"], st["text"], v["url"], v["judge"], v["label"], v["score"], v["quote"], v["quote_found"],
             v["rationale"], v["flags"], v.get("reading", "")]
            for resp in report["responses"] for st in resp["statements"] for v in st["verdicts"]))
    trail = {s["url"]: s for s in report.get("audit_trail", {}).get("sources", [])}
    seen: dict[str, list[Any]] = {}
    for resp in report["responses"]:
        for s in resp["sources"]:
            if s["url"] in seen:
                seen[s["url"]][-1] += 1
                continue
            ref = s.get("reference") or {}
            seen[s["url"]] = [s["url"], s.get("domain"), s["status"], s.get("http_status"), s.get("title"),
                              s.get("sha256"), s.get("fetched_at"), s.get("origin"), s.get("flags"),
                              trail.get(s["url"], {}).get("source_id"), ref.get("status", ""),
                              ("yes" if ref.get("retracted") else "no") if ref else "", ref.get("evidence", ""), 1]
    _sheet(wb, "sources", ["url", "domain", "status", "http status", "title", "sha256", "fetched at", "origin", "flags",
                           "source id", "reference status", "retracted", "reference evidence", "citations"],
           seen.values())

    review_rows: list[list[Any]] = []
    if store is not None:
        from ..review import reviews

        texts = {st["id"]: st["text"] for resp in report["responses"] for st in resp["statements"]}
        judged = {}
        for resp in report["responses"]:
            for st in resp["statements"]:
                for v in st["verdicts"]:
                    judged.setdefault((st["id"], v["url"]), []).append(f"{v['judge']}: {v['label']}")
        ids = store.statement_ids(run["id"])
        for r in reviews(store, run["id"], latest_only=False):
            sid = ids.get(r.statement_pk, str(r.statement_pk))
            review_rows.append([sid, texts.get(sid, ""), r.url, r.reviewer, r.label.value, r.reason, r.blind,
                                r.sample, r.created_at, judged.get((sid, r.url), [])])
    _sheet(wb, "reviews", ["statement id", "statement", "url", "reviewer", "label", "reason", "blind", "sample",
                           "created at", "judges"], review_rows)
    refs = report.get("references")
    if refs:   # the reference-check metrics, overall and per model (per citation: see the sources sheet)
        groups_ = [("all", refs["metrics"])] + list(refs.get("by_model", {}).items())
        _sheet(wb, "references", ["group", "metric", "value", "ci95 low", "ci95 high", "k", "n"],
               ([name, label, *_metric_cells(g[key])] for name, g in groups_ for key, label in refs["names"].items()))
    path.parent.mkdir(parents=True, exist_ok=True)
    wb.save(str(path))
    return path
