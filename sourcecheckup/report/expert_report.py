"""The report's ``expert`` section (OLAPH comprehensiveness and hallucination, EVAL similarity) in every format:
CSV rows after the verdict rows, an xlsx sheet, an HTML block. Each reads the section as
:func:`sourcecheckup.expert.metrics.expert_section` built it; nothing is computed here."""
from __future__ import annotations

from html import escape
from typing import Any, Iterator, Mapping

from ..expert.metrics import MEASURE_NAMES, MEASURES
from ..expert.model import SIMILARITY_METHODS
from ..metrics import percent

# the CSV's category column for an expert statement's row (its url column: "answer:<response id>")
EXPERT_CATEGORIES = {"must_have": "expert_must_have", "nice_to_have": "expert_nice_to_have"}


def has_expert(report: Mapping[str, Any]) -> bool:
    return bool((report.get("expert") or {}).get("answers_with_expert_material"))


def _reading(v: Mapping[str, Any]) -> str:
    if v["label"] == "supported":
        return "entailed"
    if v["label"] == "not_supported":
        return "contradicted" if v["contradicted"] else "not entailed"
    return "judge error (left out)"


def expert_csv_rows(expert: Mapping[str, Any] | None, run: tuple[str, str], width: int) -> Iterator[list[Any]]:
    """One CSV row per expert statement and judge, in the report's columns: statement_id ``RESPONSE/must_have1``,
    category ``expert_must_have`` / ``expert_nice_to_have``, url ``answer:RESPONSE``, the judge's label, and the
    reading (entailed / not entailed / contradicted / judge error) in ``reading``."""
    if not expert:
        return
    for a in expert.get("responses", []):
        for st in a["statements"]:
            sid = f"{a['id']}/{st['kind']}{st['ord'] + 1}"
            for judge, v in st["verdicts"].items():
                row = [a["id"], a["model"] or "", "", sid, st["statement"], EXPERT_CATEGORIES[st["kind"]], v["label"],
                       f"answer:{a['id']}", "", judge, v["label"], "", v["quote"], "", v["rationale"],
                       "contradicted" if v["contradicted"] else "", _reading(v), "", "", "", "", "", run[0], run[1],
                       "judge error" if v["label"] not in ("supported", "not_supported") else "", ""]
                yield (row + [""] * width)[:width]


def _cells(m: Mapping[str, Any] | None) -> list[Any]:
    if m is None:
        return ["n/a", "", "", "", ""]
    return [m["value"], m["ci95"][0], m["ci95"][1], m["k"], m["n"]]


def _sim_cells(s: Mapping[str, Any]) -> list[Any]:
    return [s["mean"], s["ci95"][0], s["ci95"][1], "", s["n"]]


def expert_sheet_rows(expert: Mapping[str, Any]) -> Iterator[list[Any]]:
    """The xlsx "expert" sheet: the figures overall and per model, then each answer's figures and verdicts."""
    groups = [("all", expert["overall"])] + list(expert["by_model"].items())
    for name, g in groups:
        for key in MEASURES:
            yield [name, MEASURE_NAMES[key], *_cells(g[key]), g["judge_errors"], ""]
        for key in SIMILARITY_METHODS:
            yield [name, MEASURE_NAMES[key], *_sim_cells(g[key]), "", ""]
    for method, order in expert["rankings"].items():
        yield ["ranking", MEASURE_NAMES[method], " > ".join(order), "", "", "", "", "", ""]
    for method, c in (expert.get("grade_correlation") or {}).items():
        yield ["similarity vs grades", f"Spearman rho, {MEASURE_NAMES[method]}", c["rho"], *c["ci95"], "", c["n"],
               "", ""]
    for a in expert["responses"]:
        for key in MEASURES:
            yield [a["id"], MEASURE_NAMES[key], *_cells(a[key]), a["judge_errors"], a["model"] or ""]
        for key in SIMILARITY_METHODS:
            yield [a["id"], MEASURE_NAMES[key], a["similarity"].get(key), "", "", "", "", "", a["model"] or ""]
        for st in a["statements"]:
            for judge, v in st["verdicts"].items():
                yield [a["id"], f"{st['kind']} {st['ord'] + 1}: {st['statement']}", _reading(v), judge,
                       v["rationale"], v["quote"], "", "", a["model"] or ""]


EXPERT_SHEET_HEADER = ["answer or group", "measure or statement", "value", "ci95 low / judge", "ci95 high / rationale",
                       "k / quote", "n", "judge errors", "model"]


def _figure(m: Mapping[str, Any] | None) -> str:
    if m is None:
        return "n/a"
    if m["value"] is None:
        return "–"
    lo, hi = m["ci95"]
    ci = f" ({percent(lo)}–{percent(hi)})" if lo is not None else ""
    return f"{percent(m['value'])}{ci}, {m['k']}/{m['n']}"


def _sim(s: Mapping[str, Any]) -> str:
    if s["mean"] is None:
        return "–"
    lo, hi = s["ci95"]
    return f"{s['mean']:.3f}" + (f" ({lo:.3f}–{hi:.3f})" if lo is not None else "") + f", n={s['n']}"


def _rho(c: Mapping[str, Any]) -> str:
    if c["rho"] is None:
        return f"too few graded answers to estimate (n={c['n']})"
    lo, hi = c["ci95"]
    return f"{c['rho']:.2f}" + (f" ({lo:.2f} to {hi:.2f})" if lo is not None else "") + f", n={c['n']}"


def expert_html(report: Mapping[str, Any]) -> str:
    """The HTML block: the figures per model (OLAPH, EVAL), the rankings, each answer's statements and readings."""
    if not has_expert(report):
        return ""
    e = report["expert"]
    heads = "".join(f"<th>{escape(MEASURE_NAMES[k])}</th>" for k in (*MEASURES, *SIMILARITY_METHODS))
    rows = []
    for name, g in [("All answers", e["overall"])] + list(e["by_model"].items()):
        cells = [_figure(g[k]) for k in MEASURES] + [_sim(g[k]) for k in SIMILARITY_METHODS]
        rows.append(f"<tr><td>{escape(name)}</td><td>{g['answers']}</td>"
                    + "".join(f"<td>{escape(c)}</td>" for c in cells) + f"<td>{g['judge_errors']}</td></tr>")
    ranks = "".join(f"<li>{escape(MEASURE_NAMES[m])}: {escape(' > '.join(order) or '–')}</li>"
                    for m, order in e["rankings"].items())
    corr = "".join(f"<li>{escape(MEASURE_NAMES[m])}: {escape(_rho(c))}</li>"
                   for m, c in (e.get("grade_correlation") or {}).items())
    if corr:
        ranks += f"</ul><p>Similarity against the graders' Good/Bad grades (Spearman's rho, 95% interval):</p><ul>{corr}"
    answers = []
    for a in e["responses"]:
        items = "".join(
            f"<li>{escape(st['kind'].replace('_', '-'))}: {escape(st['statement'])} — "
            + "; ".join(f"{escape(j)}: <b>{escape(_reading(v))}</b>" for j, v in st["verdicts"].items())
            + "</li>" for st in a["statements"])
        sims = ", ".join(f"{MEASURE_NAMES[k]} {a['similarity'][k]:.3f}" for k in SIMILARITY_METHODS
                         if a["similarity"].get(k) is not None)
        answers.append(f"<h4>{escape(a['id'])} ({escape(a['model'] or '')})</h4><p>"
                       + escape("; ".join(f"{MEASURE_NAMES[k]} {_figure(a[k])}" for k in MEASURES))
                       + (f"; {escape(sims)}" if sims else "") + f"; judge errors {a['judge_errors']}</p><ul>{items}</ul>")
    defs = "".join(f"<li><b>{escape(MEASURE_NAMES.get(k, k))}</b>: {escape(v)}</li>" for k, v in e["definitions"].items())
    return (f'<section id="expert"><h2>Answers against the expert material</h2>'
            f"<p>Judge: {escape(e['judge'] or '–')}. Shares with 95% intervals (Korn–Graubard over answers; "
            f"Clopper–Pearson per answer); similarity means with t intervals.</p>"
            f"<table><tr><th>Group</th><th>Answers</th>{heads}<th>Judge errors</th></tr>{''.join(rows)}</table>"
            f"<p>Model rankings by similarity to the reference answers:</p><ul>{ranks}</ul>"
            f"{''.join(answers)}<ul>{defs}</ul></section>")
