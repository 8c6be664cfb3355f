"""Exports of a stored run: the stable JSON interface, a flat CSV, and an HTML summary.

Every figure is computed from the stored rows by :mod:`sourcecheckup.metrics`; nothing
here keeps numbers of its own. Text from answers and pages is escaped in HTML
(Jinja2 autoescape) and never emitted as markup.
"""
from __future__ import annotations

import csv
import io
import json
from pathlib import Path
from typing import Any

from . import __version__
from .metrics import Consensus, ResponseAssessment, assess_run, compute_metrics
from .store import RunData, Store

RESOURCES = Path(__file__).resolve().parent.parent / "resources"
FORMATS = ("json", "csv", "html")


def resources_dir() -> Path:
    """resources/ beside the package (source checkout) or inside it (installed/frozen)."""
    inside = Path(__file__).resolve().parent / "resources"
    return inside if inside.is_dir() else RESOURCES


def build_report(store: Store, run_id: str, *, data: RunData | None = None,
                 overrides: Any = None) -> dict[str, Any]:
    """The report as a dict: the stable JSON interface other tools read."""
    data = data or store.load_run(run_id)
    assessed = assess_run(data, overrides=overrides)
    metrics = compute_metrics(data, assessed, overrides=overrides)
    run = data.run
    return {
        "run": {
            "id": run.id, "judge": run.judges[0] if run.judges else None, "judges": run.judges,
            "parser": run.parser, "consensus": run.config.get("consensus", Consensus.FIRST.value),
            "created_at": run.created_at, "finished_at": run.finished_at, "status": run.status,
            "input": run.input, "app_version": run.app_version, "report_version": __version__,
            "database": str(store.path), "n_records": run.n_records, "n_skipped": run.n_skipped,
            "config": run.config,
        },
        "metrics": metrics.as_dict(),
        "counts": metrics.counts,
        "skipped": [{"origin": s.origin, "problem": s.problem} for s in data.skipped],
        "responses": [_response_dict(data, r) for r in assessed],
    }


def _response_dict(data: RunData, r: ResponseAssessment) -> dict[str, Any]:
    resp = next(x for x in data.responses if x.pk == r.response_pk).response
    statements = []
    for s in r.statements:
        verdicts = [{
            "url": v.url, "judge": v.verdict.judge_id, "label": v.verdict.label.value,
            "score": round(v.verdict.score, 4), "quote": v.verdict.quote,
            "quote_found": v.verdict.quote_found, "rationale": v.verdict.rationale,
            "flags": list(v.verdict.flags),
        } for v in data.verdicts.get(s.row.pk, [])]
        statements.append({
            "id": f"{resp.id}/s{s.row.statement.index + 1}", "text": s.row.statement.text,
            "category": s.row.statement.category.value, "status": s.status.value,
            "supported": s.status.supported, "cited": [resp.citations[i] for i in s.row.statement.cited
                                                       if 0 <= i < len(resp.citations)],
            "supporting_urls": list(s.supporting_urls), "judges_disagree": s.disagreement,
            "verdicts": verdicts,
        })
    sources = []
    for url in r.urls:
        row = data.sources.get(url)
        if row is None:
            sources.append({"url": url, "status": "not_fetched", "outcome": "not fetched yet",
                            "http_status": None, "title": None, "sha256": None, "text_chars": 0,
                            "flags": [], "reason": ""})
            continue
        src = row.source
        sources.append({
            "url": url, "status": src.status.value, "outcome": src.status.plain, "reason": src.reason,
            "http_status": src.http_status, "final_url": src.final_url, "title": src.title,
            "sha256": src.sha256, "text_chars": len(src.text), "fetched_at": src.fetched_at,
            "origin": src.origin, "domain": src.domain, "flags": list(src.flags),
            "used": url in r.valid_urls and url not in r.unused_urls and url not in r.undecided_urls,
        })
    return {"id": resp.id, "question": resp.question, "model": resp.model, "origin": resp.origin,
            "text": resp.text, "supported": r.supported, "statements": statements, "sources": sources,
            "extra": dict(resp.extra)}


CSV_COLUMNS = ["response_id", "model", "question", "statement_id", "statement", "category", "status",
               "url", "source_status", "judge", "label", "score", "quote", "quote_found", "rationale", "flags"]


def report_csv(report: dict[str, Any]) -> str:
    """One row per verdict; statements without verdicts get one row with their status."""
    buf = io.StringIO()
    w = csv.writer(buf)
    w.writerow(CSV_COLUMNS)
    for resp in report["responses"]:
        status_by_url = {s["url"]: s["status"] for s in resp["sources"]}
        for st in resp["statements"]:
            base = [resp["id"], resp["model"] or "", resp["question"] or "", st["id"], st["text"],
                    st["category"], st["status"]]
            if not st["verdicts"]:
                w.writerow(base + ["", "", "", "", "", "", "", "", ""])
            for v in st["verdicts"]:
                w.writerow(base + [v["url"], status_by_url.get(v["url"], ""), v["judge"], v["label"],
                                   v["score"], v["quote"], "" if v["quote_found"] is None else v["quote_found"],
                                   v["rationale"], ";".join(v["flags"])])
    return buf.getvalue()


def report_html(report: dict[str, Any]) -> str:
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(resources_dir() / "templates")),
                             autoescape=True, undefined=jinja2.StrictUndefined)
    env.filters["pct"] = lambda v: "–" if v is None else f"{100 * v:.1f}%"
    return env.get_template("report.html").render(r=report)


def write_report(store: Store, run_id: str, path: str | Path, fmt: str | None = None,
                 **kw: Any) -> Path:
    path = Path(path)
    fmt = (fmt or path.suffix.lstrip(".") or "json").lower()
    if fmt not in FORMATS:
        raise ValueError(f"unknown report format '{fmt}': choose one of {', '.join(FORMATS)}")
    report = build_report(store, run_id, **kw)
    path.parent.mkdir(parents=True, exist_ok=True)
    if fmt == "json":
        path.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    elif fmt == "csv":
        path.write_text(report_csv(report), encoding="utf-8", newline="")
    else:
        path.write_text(report_html(report), encoding="utf-8")
    return path
