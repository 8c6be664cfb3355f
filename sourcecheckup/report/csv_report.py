"""The report as a flat CSV: one row per verdict; every cell is text a spreadsheet will not run."""
from __future__ import annotations

import io
from typing import Any, Iterator

from ..metrics import EXCLUSION_WORDS
from .csvsafe import SafeWriter
from .expert_report import expert_csv_rows
from .repairs import repairs_csv_rows
from .studies_report import studies_csv_rows

CSV_COLUMNS = ["response_id", "model", "question", "statement_id", "statement", "category", "status",
               "url", "source_status", "judge", "label", "score", "quote", "quote_found", "rationale", "flags",
               "reading", "status_judges", "status_with_reviews", "reviewer_overrides_applied",
               "reference_status", "reference_retracted", "run_id", "run_name", "statement_support_left_out",
               "judge_version"]
# columns are only ever added at the end: a script that reads them by position keeps working


def report_csv(report: dict[str, Any]) -> str:
    """One row per verdict; statements without verdicts get one row with their status."""
    buf = io.StringIO()
    w = SafeWriter(buf)   # answer and page text must not run as a spreadsheet formula
    w.writerow(CSV_COLUMNS)
    applied = (report.get("reviewer_overrides") or {}).get("applied", False)
    run = report["run"]
    for resp in report["responses"]:
        w.writerows(csv_rows(resp, applied, (run["id"], run.get("name") or "")))
    w.writerows(expert_csv_rows(report.get("expert"), (run["id"], run.get("name") or ""), len(CSV_COLUMNS)))
    w.writerows(studies_csv_rows(report, (run["id"], run.get("name") or ""), len(CSV_COLUMNS)))
    w.writerows(repairs_csv_rows(report, (run["id"], run.get("name") or ""), len(CSV_COLUMNS)))
    return buf.getvalue()


def csv_rows(resp: dict[str, Any], applied: bool, run: tuple[str, str]) -> Iterator[list[Any]]:
    """The rows of one response's record (a report's ``responses`` item); ``run``: its run's id and name,
    on every row, so rows of several runs' exports put together still say where each came from."""
    status_by_url = {s["url"]: s["status"] for s in resp["sources"]}
    # a citation's reference check: status and retracted, blank for a plain page (no check)
    reference_by_url = {s["url"]: _reference_cells(s.get("reference")) for s in resp["sources"]}
    for st in resp["statements"]:
        base = [resp["id"], resp["model"] or "", resp["question"] or "", st["id"], st["text"],
                st["category"], st["status"]]
        tail = [st.get("status_judges", st["status"]), st.get("status_with_reviews", st["status"]),
                "yes" if applied else "no"]
        left_out = [_left_out(st["status"])]   # why statement-level support leaves the claim out ("" if counted)
        if not st["verdicts"]:
            yield base + ["", "", "", "", "", "", "", "", "", ""] + tail + ["", ""] + list(run) + left_out + [""]
        for v in st["verdicts"]:
            yield (base + [v["url"], status_by_url.get(v["url"], ""), v["judge"], v["label"],
                           v["score"], v["quote"], "" if v["quote_found"] is None else v["quote_found"],
                           v["rationale"], ";".join(v["flags"]), v.get("reading", "")] + tail
                   + reference_by_url.get(v["url"], ["", ""]) + list(run) + left_out
                   + [v.get("model_version", "")])


def _left_out(status: str) -> str:
    if status == "not_a_claim":
        return "not a claim"
    return EXCLUSION_WORDS.get(status, "") if status in ("judge_error", "judges_disagree", "pending") else ""


def _reference_cells(reference: dict[str, Any] | None) -> list[str]:
    if not reference:
        return ["", ""]
    return [reference["status"], "yes" if reference.get("retracted") else "no"]
