"""REPORT: exports of a stored run (JSON, CSV, HTML, PDF, xlsx), their charts and source analytics.

:mod:`.json_report` builds the report dict every format is written from; :mod:`.csv_report`,
:mod:`.html_report`, :mod:`.pdf` and :mod:`.xlsx` write it; :mod:`.stream` computes the same report a
page of responses at a time for JSON, CSV and XLSX (and a large run's HTML/PDF); :mod:`.verify`
recomputes a saved report from the database. :func:`write_report` picks the writer from the format.
"""
from __future__ import annotations

import json
import os
import stat
from pathlib import Path
from typing import Any, Callable

from ..registry import Registry
from ..store import Store
from .csv_report import report_csv
from .html_report import report_html
from .json_report import build_report
from .stream import is_large_run, large_run_report, write_csv_stream, write_json_stream
from .verify import verify_report

__all__ = ["FORMATS", "ReportTargetError", "build_report", "check_report_target", "register_report_writer",
           "report_csv", "report_formats", "report_html", "verify_report", "write_report"]

FORMATS = ("json", "csv", "html", "pdf", "xlsx")
# report formats added by plugins: name -> write(report dict, path); the dict is build_report's, the
# same one every built-in writer reads
_WRITERS: Registry[Callable[[dict[str, Any], Path], None]] = Registry("report format")


def register_report_writer(fmt: str, write: Callable[[dict[str, Any], Path], None]) -> None:
    """Add a report format (a plugin's ``register_report_writers`` hook calls this)."""
    fmt = fmt.strip().lower()
    if not fmt or fmt in FORMATS:
        raise ValueError(f"report format '{fmt}' is built in or empty; give a plugin format its own name")
    _WRITERS.register(fmt, write)


def report_formats() -> tuple[str, ...]:
    """The built-in formats, then those plugins added."""
    return FORMATS + tuple(_WRITERS.names())


class ReportTargetError(ValueError):
    """A report's path names something a report must not be written over (a folder, a device, a FIFO)."""


def check_report_target(path: str | Path) -> None:
    """Raise ReportTargetError unless ``path`` is a regular file or names nothing yet. A report is written
    beside its path and renamed over it (whole or not at all), which would replace a device node
    (``/dev/null``, as root) or a FIFO with a plain file: special files are refused, not replaced."""
    try:
        st = os.stat(path)   # follows links: /proc/self/fd/1 is judged by what it points at
    except FileNotFoundError:
        return
    except OSError as exc:
        raise ReportTargetError(f"cannot write the report to {path}: {exc.strerror or exc}") from None
    if stat.S_ISDIR(st.st_mode):
        raise ReportTargetError(f"cannot write the report to {path}: it is a folder; "
                                f"name a file in it (e.g. {Path(path) / 'report.json'})")
    if not stat.S_ISREG(st.st_mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(st.st_mode) else "a socket" if stat.S_ISSOCK(st.st_mode)
                else "a device" if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode) else "not a regular file")
        raise ReportTargetError(f"cannot write the report to {path}: it is {kind}, not a regular file; "
                                "a report is written only to a file (it would replace this one)")


def write_report(store: Store, run_id: str, path: str | Path, fmt: str | None = None,
                 warnings: list[str] | None = None, **kw: Any) -> Path:
    """Write the run's report; what the user should be told about it (a PDF's characters that no
    installed font has) is appended to ``warnings``."""
    path = Path(path)
    fmt = (fmt or path.suffix.lstrip(".") or "json").lower()
    if fmt not in report_formats():
        raise ValueError(f"unknown report format '{fmt}': choose one of {', '.join(report_formats())}")
    if kw.get("sign") and fmt != "json":
        raise ValueError("only a JSON report is signed (the other formats carry its content digest): "
                         "write the report as .json to sign it")
    if not kw.get("sign"):
        kw.pop("sign", None)
    check_report_target(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    # JSON, CSV and XLSX are written a page of responses at a time (flat memory at 100,000 answers); HTML and
    # PDF of a large run hold the figures and leave the support matrix to CSV/XLSX
    if fmt == "json" and ("data" not in kw or kw.get("sign")):
        return write_json_stream(store, run_id, path, **{k: v for k, v in kw.items() if k != "data"})
    if fmt == "csv" and "data" not in kw:
        return write_csv_stream(store, run_id, path, **kw)
    if fmt == "xlsx" and "data" not in kw:
        from .xlsx import write_xlsx_stream

        return write_xlsx_stream(store, run_id, path, **kw)
    if fmt in ("html", "pdf") and "data" not in kw and is_large_run(store, run_id):
        report = large_run_report(store, run_id, **kw)
        html = report_html(report, include_responses=False)
    else:
        report = build_report(store, run_id, **kw)
        html = report_html(report) if fmt in ("html", "pdf") else ""
    if (plugin_writer := _WRITERS.get(fmt)) is not None:
        plugin_writer(report, path)
    elif fmt == "json":
        path.write_text(json.dumps(report, indent=2, ensure_ascii=False), encoding="utf-8")
    elif fmt == "csv":
        path.write_text(report_csv(report), encoding="utf-8", newline="")
    elif fmt == "html":
        path.write_text(html, encoding="utf-8")
    elif fmt == "pdf":
        from .pdf import html_to_pdf

        result = html_to_pdf(html, path)
        if warnings is not None:
            warnings.extend(result.warnings)
    else:
        from .xlsx import write_xlsx

        write_xlsx(report, store, path)
    return path
