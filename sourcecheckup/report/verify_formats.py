"""``verify-report`` for the formats other than JSON: each is rebuilt from the database and compared.

- CSV (one row per verdict): the rows are rebuilt with the options the file records (its run id and
  ``reviewer_overrides_applied`` columns) and compared cell by cell.
- XLSX: the workbook is rebuilt with the options its summary sheet records and every cell of every sheet is
  compared (the database path, which names where the file was, is left out).
- HTML: the verification code in its audit trail gives the run, the options, the time and database path the
  report names and its content digest; the report is rebuilt, rendered again and compared line by line.
- PDF: its text carries the same code; the rebuilt report's content and evidence digests are compared with it,
  and the text of every page with what the rebuilt HTML report shows (:mod:`.verify_pdf`): a figure or word
  that does not match is reported as not verified, with its page.
"""
from __future__ import annotations

import csv
import html as html_lib
import json
import re
import tempfile
from pathlib import Path
from typing import Any, Callable, Mapping

from ..store import Store
from .verify import Verification

MAX_LISTED = 50
_TAG = re.compile(r"<[^>]+>")


def run_of(path: Path) -> tuple[str | None, Mapping[str, Any]]:
    """The run id and the options a non-JSON report records (None when it records none)."""
    fmt = path.suffix.lower().lstrip(".")
    if fmt == "csv":
        with path.open(encoding="utf-8", newline="") as fh:
            row = next(csv.DictReader(fh), None)
        if not row:
            return None, {}
        return row.get("run_id"), {"with_reviews": row.get("reviewer_overrides_applied") == "yes"}
    if fmt == "xlsx":
        from openpyxl import load_workbook

        summary = {str(r[0]): r[1] for r in load_workbook(path, read_only=True)["summary"].iter_rows(values_only=True)
                   if r and r[0]}
        options = json.loads(summary["report options"]) if summary.get("report options") else {}
        return summary.get("run id"), options or {}
    code = _code(path)
    return (code or {}).get("run_id"), (code or {}).get("options") or {}


def _code(path: Path) -> dict[str, Any] | None:
    from .html_report import read_verification_code

    if path.suffix.lower() == ".pdf":
        from .verify_pdf import pdf_pages

        text = "\n".join(pdf_pages(path))
    else:
        text = html_lib.unescape(path.read_text(encoding="utf-8"))
    return read_verification_code(text)


def verify_other_format(path: Path, store: Store) -> Verification:
    """Rebuild a CSV, XLSX, HTML or PDF report from the database and compare (see the module docstring)."""
    fmt = path.suffix.lower().lstrip(".")
    checks: dict[str, Callable[[Path, Store], Verification]] = {
        "csv": _verify_csv, "xlsx": _verify_xlsx, "html": _verify_html, "htm": _verify_html, "pdf": _verify_pdf}
    if fmt not in checks:
        raise ValueError(f"cannot verify a .{fmt} file: give a .json, .csv, .xlsx, .html or .pdf report")
    return checks[fmt](path, store)


def _options(options: Mapping[str, Any]) -> dict[str, Any]:
    if options.get("whois"):
        raise ValueError("this report was built with whois lookups (network answers): its source analytics cannot "
                         "be rebuilt offline; verify the JSON report instead")
    return {"with_reviews": bool(options.get("with_reviews")), "group_by": options.get("group_by")}


def _rebuild(store: Store, run_id: str, fmt: str, **kw: Any) -> Path:
    from . import write_report

    folder = Path(tempfile.mkdtemp(prefix="sourcecheckup-verify-"))
    return write_report(store, run_id, folder / f"rebuilt.{fmt}", fmt, **kw)


def _verify_csv(path: Path, store: Store) -> Verification:
    run_id, options = run_of(path)
    if not run_id:
        raise ValueError("this CSV has no rows with a run_id column: not a SourceCheckup CSV report")
    rebuilt = _rebuild(store, run_id, "csv", with_reviews=bool(options.get("with_reviews")))
    result = Verification()
    with path.open(encoding="utf-8", newline="") as a, rebuilt.open(encoding="utf-8", newline="") as b:
        saved, now = list(csv.reader(a)), list(csv.reader(b))
    header = now[0] if now else []
    cells = 0
    for i, (x, y) in enumerate(zip(saved, now)):
        for j in range(max(len(x), len(y))):
            cells += 1
            xv, yv = (x[j] if j < len(x) else None), (y[j] if j < len(y) else None)
            if xv != yv and len(result.differences) < MAX_LISTED:
                name = header[j] if j < len(header) else f"column {j + 1}"
                where = f"row {i + 1}" + (f" ({y[3]} x {y[7]})" if i and len(y) > 7 else "")
                result.differences.append(f"{where}, {name}: file says {xv!r}, database gives {yv!r}")
    if len(saved) != len(now):
        result.differences.append(f"rows: the file has {len(saved)}, the database gives {len(now)}")
    result.checked["csv cells"] = cells
    return result


def _verify_xlsx(path: Path, store: Store) -> Verification:
    from openpyxl import load_workbook

    run_id, options = run_of(path)
    if not run_id:
        raise ValueError("this workbook's summary sheet names no run id: not a SourceCheckup XLSX report")
    rebuilt = _rebuild(store, run_id, "xlsx", **_options(options))
    result = Verification()
    saved, now = load_workbook(path, read_only=True), load_workbook(rebuilt, read_only=True)
    if saved.sheetnames != now.sheetnames:
        result.differences.append(f"sheets: the file has {saved.sheetnames}, the database gives {now.sheetnames}")
    for name in now.sheetnames:
        if name not in saved.sheetnames:
            continue
        a = list(saved[name].iter_rows(values_only=True))
        b = list(now[name].iter_rows(values_only=True))
        cells = 0
        for i, (x, y) in enumerate(zip(a, b)):
            if name == "summary" and y and y[0] == "database":   # where the database file was: not compared
                continue
            for j in range(max(len(x), len(y))):
                cells += 1
                xv, yv = (x[j] if j < len(x) else None), (y[j] if j < len(y) else None)
                if xv != yv and len(result.differences) < MAX_LISTED:
                    label = f" ({y[0]})" if name == "summary" and y and y[0] else ""
                    result.differences.append(f"sheet {name!r} row {i + 1}{label} column {j + 1}: "
                                              f"file says {xv!r}, database gives {yv!r}")
        if len(a) != len(b):
            result.differences.append(f"sheet {name!r}: the file has {len(a)} rows, the database gives {len(b)}")
        result.checked[f"xlsx {name}"] = cells
    return result


def _rebuilt_report(store: Store, code: Mapping[str, Any]) -> tuple[dict[str, Any], bool]:
    from .json_report import build_report
    from .stream import is_large_run, large_run_report

    run_id = str(code.get("run_id"))
    kw = _options(code.get("options") or {})
    large = not code.get("responses_listed", True) or is_large_run(store, run_id)
    report = large_run_report(store, run_id, **kw) if large else build_report(store, run_id, **kw)
    # the fields that name when and where the report was written: as the file gives them
    report["generated_at"] = code.get("generated_at")
    report["run"]["database"] = code.get("database")
    report["audit_trail"]["database"] = code.get("audit_database")
    report["audit_trail"]["verify_command"] = code.get("verify_command")
    return report, large


def _digest_checks(code: Mapping[str, Any], report: Mapping[str, Any], result: Verification) -> None:
    integrity = report.get("integrity") or {}
    evidence = (integrity.get("evidence") or {}).get("sha256")
    if code.get("evidence_sha256") != evidence:
        result.differences.append(f"evidence digest: the file carries {code.get('evidence_sha256')}, the stored "
                                  f"evidence gives {evidence} (the database changed since the report was written)")
    if code.get("content_sha256") != integrity.get("content_sha256"):
        result.differences.append(f"report content digest: the file carries {code.get('content_sha256')}, the "
                                  f"report rebuilt from the database gives {integrity.get('content_sha256')}")
    result.checked["digests"] = 2


def _verify_html(path: Path, store: Store) -> Verification:
    from .html_report import report_html

    code = _code(path)
    if not code or not code.get("run_id"):
        raise ValueError("this HTML file carries no SourceCheckup verification code (written by an older version?)")
    report, large = _rebuilt_report(store, code)
    result = Verification()
    _digest_checks(code, report, result)
    saved = path.read_text(encoding="utf-8").splitlines()
    now = report_html(report, include_responses=not large).splitlines()
    section = ""
    for i, (x, y) in enumerate(zip(saved, now)):
        if "<h2" in y:
            section = _TAG.sub("", y).strip()
        if x != y and len(result.differences) < MAX_LISTED:
            result.differences.append(f"line {i + 1} (section {section or 'heading'}): file shows "
                                      f"{_text(x)!r}, database gives {_text(y)!r}")
    if len(saved) != len(now):
        result.differences.append(f"lines: the file has {len(saved)}, the report rebuilt from the database {len(now)}")
    result.checked["html lines"] = len(now)
    return result


def _text(line: str) -> str:
    text = " ".join(html_lib.unescape(_TAG.sub(" ", line)).split())
    return text if len(text) <= 160 else text[:157] + "..."


def _verify_pdf(path: Path, store: Store) -> Verification:
    from .html_report import report_html
    from .pdf_fonts import mark_unrenderable
    from .verify_pdf import compare_pdf_text, pdf_pages, pdf_producer

    pages = pdf_pages(path)
    code = _code(path)
    if not code or not code.get("run_id"):
        raise ValueError("this PDF carries no SourceCheckup verification code (written by an older version?)")
    report, large = _rebuilt_report(store, code)
    result = Verification()
    _digest_checks(code, report, result)
    # the HTML the PDF was printed from, with the characters no font here has written as the PDF writer does
    html, _ = mark_unrenderable(report_html(report, include_responses=not large))
    differences, compared = compare_pdf_text(pages, html)
    result.differences += differences
    producer = pdf_producer(path)
    if differences and "skia" not in producer.lower():
        result.notes.append(f"PDF: written by {producer or 'an unnamed program'}, not printed by Chromium as "
                            "`report` writes it: what its pages show cannot be verified against the run (the app's "
                            "PDF writer without Chromium shows the contents list, for one); verify the HTML or "
                            "JSON report")
    result.checked["pdf text (figures, words and signs of every page)"] = compared
    return result
