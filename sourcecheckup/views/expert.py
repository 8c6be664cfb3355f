"""What the app's Expert panel shows: one answer's OLAPH and EVAL figures, its expert statements with each
judge's reading, and the per-model figures, as plain text and frozen rows (the section is
:func:`sourcecheckup.expert.metrics.expert_section`'s, computed in the engine; nothing is computed here)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..expert.metrics import MEASURE_NAMES, MEASURES
from ..expert.model import SIMILARITY_METHODS
from ..metrics import percent


@dataclass(frozen=True)
class ExpertStatementRow:
    kind: str          # "must-have" / "nice-to-have"
    statement: str
    reading: str       # the first judge's: entailed / not entailed / contradicted / judge error (left out)
    judge: str
    rationale: str


def _share(m: Mapping[str, Any] | None) -> str:
    if m is None:
        return "n/a (the judge gives no contradiction reading)"
    if m["value"] is None:
        return "– (nothing decided)"
    lo, hi = m["ci95"]
    return f"{percent(m['value'])} ({m['k']}/{m['n']}; 95% CI {percent(lo)}–{percent(hi)})"


def _mean(s: Mapping[str, Any]) -> str:
    if s["mean"] is None:
        return "–"
    lo, hi = s["ci95"]
    interval = f" (95% CI {lo:.3f}–{hi:.3f})" if lo is not None else ""
    return f"{s['mean']:.3f}{interval}, {s['n']} answer{'' if s['n'] == 1 else 's'}"


def reading(v: Mapping[str, Any]) -> str:
    if v["label"] == "supported":
        return "entailed"
    if v["label"] == "not_supported":
        return "contradicted" if v["contradicted"] else "not entailed"
    return "judge error (left out)"


def answer_lines(section: Mapping[str, Any], response_id: str) -> list[str]:
    """The answer's figures, one per line; [] when the answer has no expert material."""
    a = next((x for x in section.get("responses", []) if x["id"] == response_id), None)
    if a is None:
        return []
    lines = [f"{MEASURE_NAMES[m]}: {_share(a[m])}" for m in MEASURES if a["statements"]]
    lines += [f"{MEASURE_NAMES[m]}: {a['similarity'][m]:.3f}" for m in SIMILARITY_METHODS
              if a["similarity"].get(m) is not None]
    if a["judge_errors"]:
        lines.append(f"Judge errors (left out of every share): {a['judge_errors']}")
    if a["pending"]:
        lines.append(f"Not judged yet: {a['pending']}")
    return lines


def model_lines(section: Mapping[str, Any]) -> list[str]:
    """Per model (then all answers): the three shares and the two similarity means, with intervals."""
    lines = []
    for name, g in [*section.get("by_model", {}).items(), ("All answers", section.get("overall"))]:
        if not g or not g["answers"] and g[SIMILARITY_METHODS[0]]["n"] == 0:
            continue
        parts = [f"{MEASURE_NAMES[m]} {_share(g[m])}" for m in MEASURES] + \
                [f"{MEASURE_NAMES[m]} {_mean(g[m])}" for m in SIMILARITY_METHODS]
        lines.append(f"{name}: " + "; ".join(parts))
    for method, order in section.get("rankings", {}).items():
        if order:
            lines.append(f"Ranked by {MEASURE_NAMES[method].lower()}: {' > '.join(order)}")
    return lines


def statement_rows(section: Mapping[str, Any], response_id: str) -> list[ExpertStatementRow]:
    a = next((x for x in section.get("responses", []) if x["id"] == response_id), None)
    judge = section.get("judge")
    rows = []
    for st in (a or {}).get("statements", []):
        v = st["verdicts"].get(judge) if judge else None
        rows.append(ExpertStatementRow(st["kind"].replace("_", "-"), st["statement"],
                                       reading(v) if v else "not judged yet", judge or "", (v or {}).get("rationale", "")))
    return rows


def expert_headline(section: Mapping[str, Any]) -> str:
    """All answers' figures on one line (the CLI's summary): shares with k/n, similarity means."""
    g = section["overall"]
    parts = []
    for m in MEASURES:
        share = g[m]
        parts.append(f"{MEASURE_NAMES[m].lower()} " + ("n/a" if share is None else
                     f"{percent(share['value'])} ({share['k']}/{share['n']})"))
    parts += [f"{MEASURE_NAMES[m].lower()} {g[m]['mean']:.3f}" for m in SIMILARITY_METHODS if g[m]["mean"] is not None]
    n = section['answers_with_expert_material']
    return f"{n} answer{'' if n == 1 else 's'}: " + " · ".join(parts) + \
        (f" · judge errors {g['judge_errors']}" if g["judge_errors"] else "")
