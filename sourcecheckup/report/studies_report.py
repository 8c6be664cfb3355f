"""The report's ``studies`` section (refusal accuracy and context relevance: ASTRID; adversarial safety: Almanac)
in every format: an HTML block (and so the PDF), an xlsx sheet, CSV rows after the verdict rows. Each reads the
section as :func:`sourcecheckup.metrics.studies.study_figures` built it; nothing is computed here."""
from __future__ import annotations

from html import escape
from typing import Any, Iterator, Mapping

from ..metrics import METRIC_NAMES, percent
from ..metrics.studies import STUDY_NAMES

FIGURES = ("refusal_accuracy", "context_relevance", "adversarial_safety")
SHEET_HEADER = ["group", "figure", "value", "ci95 low", "ci95 high", "k", "n", "counts"]


def has_studies(report: Mapping[str, Any]) -> bool:
    return bool(report.get("studies"))


def figure_text(m: Mapping[str, Any] | None) -> str:
    """"66.7% (41.0%–86.7%), 12/18": a figure with its interval and counts, "–" when nothing was decided."""
    if not m or m.get("value") is None:
        return "–"
    lo, hi = m["ci95"]
    ci = f" ({percent(lo)}–{percent(hi)})" if lo is not None else ""
    return f"{percent(m['value'])}{ci}, {m['k']}/{m['n']}"


def _groups(report: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any], Mapping[str, Any] | None]]:
    """(name, the studies' figures, per-answer citation validity) overall and per model."""
    s = report["studies"]
    by_model = report.get("by_model") or {}
    out = [("All answers", s["overall"], (report.get("metrics") or {}).get("answer_citation_validity"))]
    for name, fig in s["by_model"].items():
        out.append((name, fig, (by_model.get(name) or {}).get("answer_citation_validity")))
    return out


def _counts(fig: Mapping[str, Any], key: str) -> str:
    if key == "refusal_accuracy":
        return "; ".join(f"expected {k}: " + ", ".join(f"{b} {n}" for b, n in v.items())
                         for k, v in fig["confusion"].items())
    if key == "adversarial_safety":
        return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in fig["adversarial_counts"].items())
    return ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in fig["relevance_counts"].items())


def studies_html(report: Mapping[str, Any]) -> str:
    """The HTML block: each figure per model with its interval, counts, definition and source."""
    if not has_studies(report):
        return ""
    s = report["studies"]
    heads = "".join(f"<th>{escape(STUDY_NAMES[k])}</th>" for k in FIGURES)
    rows = []
    for name, fig, acv in _groups(report):
        rows.append(f"<tr><td>{escape(name)}</td>" + "".join(
            f'<td data-study="{k}">{escape(figure_text(fig[k]))}</td>' for k in FIGURES)
            + f"<td>{escape(figure_text(acv))}</td></tr>")
    details = "".join(f"<li>{escape(name)}: " + escape(" · ".join(
        f"{STUDY_NAMES[k]}: {_counts(fig, k) or '–'}" for k in FIGURES)) + "</li>" for name, fig, _ in _groups(report))
    defs = "".join(f"<li><b>{escape(STUDY_NAMES.get(k) or METRIC_NAMES.get(k, k))}</b> = {escape(v)}</li>"
                   for k, v in s["definitions"].items())
    judge = s.get("relevance_judge") or "none"
    versions = ", ".join(s.get("relevance_versions") or []) or "–"
    return (f'<section id="studies"><h2>Benchmarks of the other studies</h2>'
            f"<p>Benchmark {escape(s.get('benchmark') or '–')}; context relevance judged by {escape(judge)} "
            f"({escape(versions)}). The three studies' figures count first draws; per-answer citation validity "
            f"counts every answer of this run (every draw and variant), as section 2 does. 95% intervals: "
            f"Clopper–Pearson over answers, Korn–Graubard over cited sources clustered by answer.</p>"
            f"<table><tr><th>Group</th>{heads}<th>{escape(METRIC_NAMES['answer_citation_validity'])}</th></tr>"
            f"{''.join(rows)}</table><ul>{details}</ul><ul>{defs}</ul></section>")


def studies_sheet_rows(report: Mapping[str, Any]) -> Iterator[list[Any]]:
    """The xlsx "studies" sheet: each figure per group with its interval, k, n and counts; then the definitions."""
    for name, fig, acv in _groups(report):
        for key in FIGURES:
            m = fig[key]
            yield [name, STUDY_NAMES[key], m["value"], m["ci95"][0], m["ci95"][1], m["k"], m["n"], _counts(fig, key)]
        if acv is not None:
            yield [name, METRIC_NAMES["answer_citation_validity"], acv["value"], acv["ci95"][0], acv["ci95"][1],
                   acv["k"], acv["n"], ""]
    for key, text in report["studies"]["definitions"].items():
        yield ["definition", STUDY_NAMES.get(key) or METRIC_NAMES.get(key, key), text, "", "", "", "", ""]


def studies_csv_rows(report: Mapping[str, Any], run: tuple[str, str], width: int) -> Iterator[list[Any]]:
    """One CSV row per figure and group after the verdict rows: statement_id ``studies/<figure>``, category
    ``benchmark_study``, the figure with its interval and counts in ``status``, its definition in ``rationale``."""
    if not has_studies(report):
        return
    defs = report["studies"]["definitions"]
    for name, fig, acv in _groups(report):
        figures = [(k, fig[k]) for k in FIGURES] + ([("answer_citation_validity", acv)] if acv is not None else [])
        for key, m in figures:
            row = ["", "" if name == "All answers" else name, "", f"studies/{key}",
                   STUDY_NAMES.get(key) or METRIC_NAMES[key], "benchmark_study", figure_text(m), "", "", "", "", "",
                   "", "", defs.get(key, ""), "", "", "", "", "", "", "", run[0], run[1], "", ""]
            yield (row + [""] * width)[:width]


__all__ = ["SHEET_HEADER", "figure_text", "has_studies", "studies_csv_rows", "studies_html", "studies_sheet_rows"]
