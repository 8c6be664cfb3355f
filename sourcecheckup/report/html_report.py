"""The report as one self-contained HTML page (Jinja2, autoescaped), also the source of the PDF.

Text from answers and pages is escaped and never emitted as markup; links are drawn only for
http(s) URLs; longer texts are cut (the JSON keeps them whole).
"""
from __future__ import annotations

import json
import re
from typing import Any, Mapping
from urllib.parse import urlsplit

from ..metrics import METRIC_NAMES, percent
from ..resources import resources_dir
from .expert_report import expert_html
from .repairs import repairs_html
from .studies_report import studies_html

HTML_TEXT_LIMIT = 4000         # longer texts are cut in HTML/PDF (the JSON keeps them whole)
MAX_REFERENCE_PROBLEMS = 500   # reference problems listed in HTML/PDF (the JSON lists them all)


def http_url(value: Any) -> str | None:
    """The URL if it is an http(s) URL safe to use as a link target, else None."""
    if not isinstance(value, str):
        return None
    url = value.strip()
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if parts.scheme.lower() not in ("http", "https") or not parts.netloc:
        return None
    if any(ord(c) < 32 or c in "<>\"'` " for c in url):
        return None
    return url


def _clip(value: Any, limit: int = HTML_TEXT_LIMIT) -> str:
    text = "" if value is None else str(value)
    return text if len(text) <= limit else text[:limit] + f"… [{len(text) - limit:,} more characters in the JSON report]"


def _pct(v: Any) -> str:
    return percent(v, missing="–")


def _ci(m: Mapping[str, Any] | None) -> str:
    if not m or m.get("ci95") is None or m["ci95"][0] is None:
        return ""
    lo, hi = m["ci95"]
    return f"{100 * lo:.1f}–{100 * hi:.1f}%"


def _num(v: Any, digits: int = 2) -> str:
    return "–" if v is None else f"{v:.{digits}f}"


# bidi controls reorder the text after them (U+202E turns "gpj.exe" into "exe.jpg", or a statement's
# wording around): shown as their code point, as the PDF shows a character no font has
_BIDI_CONTROLS = re.compile("[\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def neutral_bidi(value: Any) -> Any:
    """Every value the templates print, with its bidi controls written as ``[U+202E]`` (markup kept markup)."""
    if not isinstance(value, str) or not _BIDI_CONTROLS.search(value):
        return value
    out = _BIDI_CONTROLS.sub(lambda m: f"[U+{ord(m.group(0)):04X}]", value)
    return type(value)(out) if hasattr(value, "__html__") else out


def _host_note(value: Any) -> str:
    """A URL's or a host's punycode form and lookalike warning (urls.host_note), "" when it is ASCII."""
    from ..urls import host_note

    text = "" if value is None else str(value)
    try:
        host = (urlsplit(text.strip()).hostname or "") if "://" in text else text
    except ValueError:
        return ""
    return host_note(host)


def _environment():
    import jinja2

    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(resources_dir() / "templates")),
                             autoescape=True, undefined=jinja2.StrictUndefined, finalize=neutral_bidi)
    env.filters["pct"] = _pct
    env.filters["ci"] = _ci
    env.filters["num"] = _num
    env.filters["clip"] = _clip
    env.filters["httpurl"] = http_url
    env.filters["hostnote"] = _host_note
    env.filters["tojson_pretty"] = lambda v: json.dumps(v, indent=2, ensure_ascii=False, sort_keys=True, default=str)
    return env


def _charts(report: Mapping[str, Any]) -> dict[str, Any]:
    from markupsafe import Markup

    from .analytics import DOMAIN_TYPES
    from .charts import interval_bar_chart, share_bars

    metric_list = [(k, METRIC_NAMES[k]) for k in ("url_validity", "statement_support", "response_support")]
    out: dict[str, Any] = {"by_model": Markup(interval_bar_chart(metric_list, report["by_model"],
                                                                 title="Metrics by model with 95% intervals")),
                           "by_group": {}}
    for col, groups in report.get("by_group", {}).items():
        out["by_group"][col] = Markup(interval_bar_chart(metric_list, groups, title=f"Metrics by {col}"))
    an = report["analytics"]
    rows = {m: v["domain_types"] for m, v in an["by_model"].items()}
    if len(rows) > 1:
        rows["all models"] = an["domain_types"]
    out["domain_types"] = Markup(share_bars(rows, DOMAIN_TYPES, title="Domain types by model"))
    return out


def report_html(report: dict[str, Any], *, include_responses: bool = True) -> str:
    return _environment().get_template("report.html").render(
        r=report, charts=_charts(report), metric_names=METRIC_NAMES, include_responses=include_responses,
        html_limit=HTML_TEXT_LIMIT, max_reference_problems=MAX_REFERENCE_PROBLEMS,
        verification_code=verification_code(report), expert_block=expert_html(report),
        studies_block=studies_html(report), repairs_block=repairs_html(report))


CODE_PREFIX = "SCV1:"


def verification_code(report: Mapping[str, Any]) -> str:
    """What ``verify-report`` needs to rebuild an HTML/PDF report: the run, the options, the time and database
    the report names, and its digests, as ``SCV1:<base64url of compact JSON>.`` (the dot ends it)."""
    import base64

    run, at = report.get("run") or {}, report.get("audit_trail") or {}
    integrity = report.get("integrity") or {}
    payload = {"run_id": run.get("id"), "generated_at": report.get("generated_at"), "database": run.get("database"),
               "audit_database": at.get("database"), "verify_command": at.get("verify_command"),
               "options": report.get("report_options"), "content_sha256": integrity.get("content_sha256"),
               "evidence_sha256": (integrity.get("evidence") or {}).get("sha256"),
               "responses_listed": bool(report.get("responses")) or not report.get("large_run")}
    raw = json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    return CODE_PREFIX + base64.urlsafe_b64encode(raw).decode("ascii").rstrip("=") + "."


def read_verification_code(text: str) -> dict[str, Any] | None:
    """The payload of the verification code in an HTML report or a PDF's text (line breaks inside it allowed)."""
    import base64
    import re

    at = text.find(CODE_PREFIX)
    if at < 0:
        return None
    match = re.match(r"[A-Za-z0-9_\-\s]*", text[at + len(CODE_PREFIX):])
    body = re.sub(r"\s+", "", match.group(0) if match else "")
    try:
        return json.loads(base64.urlsafe_b64decode(body + "=" * (-len(body) % 4)))
    except ValueError:
        return None
