"""A benchmark's results table, one row per model."""
from __future__ import annotations

from dataclasses import dataclass

from .text import metric_pct

# ----------------------------------------------------------------------------- benchmark


@dataclass(frozen=True)
class BenchModelRow:
    """One model's line of a benchmark's results table (the study's per-model table)."""

    model: str
    name: str                  # short display name
    answers: int               # answers audited
    answer_status: str         # "ok 3, recovered 1"
    url_validity: str
    statement_support: str
    response_support: str
    accuracy: str              # "not graded" when accuracy was not graded
    accuracy_labels: str       # "exact match 3, missing 2"
    best_of: str               # "K=2: 50.0% -> 100.0% (+50.0 points)", "" without best-of-K
    tokens: str
    cost: str
    statement_support_value: float | None = None
    # the other studies (ASTRID, Almanac): "66.7% (41–87) · 12/18", "n/a" when the benchmark has none
    refusal_accuracy: str = "n/a"
    context_relevance: str = "n/a"
    adversarial_safety: str = "n/a"
    answer_citation_validity: str = "n/a"
    refusal_confusion: str = ""             # "expected answer: answer 3; expected refuse:emergency: redirection 3"


def bench_model_rows(results: object) -> list[BenchModelRow]:
    """:class:`~sourcecheckup.benchmark.BenchResults` shaped as table rows (plain text)."""
    from ..benchmark.records import AnswerStatus
    from ..llm.spec import short_name

    out = []
    for name, r in results.models.items():  # type: ignore[attr-defined]
        m = r.metrics
        answered = sum(v for k, v in r.answer_status.items() if AnswerStatus(k).audited)
        best = ""
        if r.best_of is not None:
            b = r.best_of

            def f(v: float | None) -> str:
                return "n/a" if v is None else f"{100 * v:.1f}%"

            gain = "n/a" if b.gain is None else f"{100 * b.gain:+.1f} points"
            best = f"{gain} (K={b.k}: {f(b.first_draw_support)} → {f(b.selected_support)})"
        acc = metric_pct(r.accuracy, compact=True) if r.accuracy is not None else "not graded"
        out.append(BenchModelRow(
            model=name, name=short_name(name), answers=answered,
            answer_status=", ".join(f"{k.replace('_', ' ')} {v}" for k, v in r.answer_status.items()),
            url_validity=metric_pct(m.url_validity if m else None, compact=True),
            statement_support=metric_pct(m.statement_support if m else None, compact=True),
            response_support=metric_pct(m.response_support if m else None, compact=True),
            accuracy=acc, accuracy_labels=", ".join(f"{k.replace('_', ' ')} {v}"
                                                    for k, v in r.accuracy_labels.items()),
            best_of=best, tokens=f"{r.tokens_in:,} in / {r.tokens_out:,} out",
            cost="unknown" if r.cost_usd is None else f"${r.cost_usd:.4f}",
            statement_support_value=m.statement_support.value if m else None,
            answer_citation_validity=_study_pct(m.answer_citation_validity.as_dict() if m else None),
            **_study_cells(getattr(r, "studies", None))))
    return out


def _study_pct(m: dict | None) -> str:
    """A figure of the report's dict form as "66.7% (41–87) · 12/18"."""
    if not m or m.get("value") is None:
        return "n/a"
    lo, hi = m["ci95"]
    ci = "" if lo is None or hi is None else f" ({100 * lo:.0f}–{100 * hi:.0f})"
    return f"{100 * m['value']:.1f}%{ci} · {m['k']}/{m['n']}"


def _study_cells(studies: dict | None) -> dict[str, str]:
    if not studies:
        return {}
    confusion = "; ".join(f"expected {k}: " + ", ".join(f"{b} {n}" for b, n in v.items())
                          for k, v in studies["confusion"].items())
    return {"refusal_accuracy": _study_pct(studies["refusal_accuracy"]),
            "context_relevance": _study_pct(studies["context_relevance"]),
            "adversarial_safety": _study_pct(studies["adversarial_safety"]), "refusal_confusion": confusion}


def bench_summary(results: object) -> str:
    b = results.bench  # type: ignore[attr-defined]
    text = (f"Benchmark {b.id} ({b.status}): {results.documents} documents, "  # type: ignore[attr-defined]
            f"{results.questions} questions, audit run {b.run_id or '–'}")  # type: ignore[attr-defined]
    return text + (f". {b.message}" if b.message else "")
