"""A benchmark's results: the study's per-model table, best-of-K gains, accuracy, tokens and cost.

Citation metrics come from the audit run (``metrics_by`` model over the first draw of every
question, so K draws never inflate a model's numbers); accuracy is kept in its own columns.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from ..llm.pricing import estimate_cost
from ..llm.spec import model_name, short_name
from ..metrics import Metric, MetricSet, assess_run, metrics_by, percent, proportion
from ..store import Store
from .records import AccuracyLabel, AnswerStatus
from .runner import answer_support
from .storage import BenchRow, BenchStore


@dataclass(frozen=True)
class BestOfK:
    k: int
    questions: int                      # questions with a decided first draw and selection
    first_draw_support: float | None    # mean per-answer statement support of draw 0
    selected_support: float | None      # mean per-answer statement support of the selected draw

    @property
    def gain(self) -> float | None:
        if self.first_draw_support is None or self.selected_support is None:
            return None
        return self.selected_support - self.first_draw_support


@dataclass
class ModelResult:
    model: str
    metrics: MetricSet | None
    answer_status: dict[str, int]
    tokens_in: int
    tokens_out: int
    cost_usd: float | None
    accuracy: Metric | None = None              # (exact_match + superset) / graded, first draws
    accuracy_labels: dict[str, int] = field(default_factory=dict)
    best_of: BestOfK | None = None


@dataclass
class BenchResults:
    bench: BenchRow
    models: dict[str, ModelResult]
    by_variant: dict[str, MetricSet]
    by_question_source: dict[str, MetricSet]
    questions: int
    documents: int

    def as_dict(self) -> dict[str, Any]:
        def ms(m: MetricSet | None) -> Any:
            return None if m is None else {**m.as_dict(), "counts": m.counts}

        return {
            "benchmark": self.bench.id, "run_id": self.bench.run_id, "status": self.bench.status,
            "documents": self.documents, "questions": self.questions,
            "models": {name: {"metrics": ms(r.metrics), "answer_status": r.answer_status,
                              "tokens_in": r.tokens_in, "tokens_out": r.tokens_out, "cost_usd": r.cost_usd,
                              "accuracy": r.accuracy.as_dict() if r.accuracy else None,
                              "accuracy_labels": r.accuracy_labels,
                              "best_of": None if r.best_of is None else {
                                  "k": r.best_of.k, "questions": r.best_of.questions,
                                  "first_draw_support": r.best_of.first_draw_support,
                                  "selected_support": r.best_of.selected_support, "gain": r.best_of.gain}}
                       for name, r in self.models.items()},
            "by_variant": {k: ms(v) for k, v in self.by_variant.items()},
            "by_question_source": {k: ms(v) for k, v in self.by_question_source.items()},
        }


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def benchmark_results(store: Store, bench_id: str) -> BenchResults:
    bs = BenchStore(store)
    row = bs.get(bench_id)
    models = list(row.config.get("models", []))
    best_of_k = int(row.config.get("best_of", 1))
    answers = bs.answers(row.id)
    flags = bs.answer_flags(row.id)
    seed = int(row.config.get("metrics_seed", 0))
    per_model: dict[str, MetricSet] = {}
    by_variant: dict[str, MetricSet] = {}
    by_source: dict[str, MetricSet] = {}
    support: dict[str, float | None] = {}
    if row.run_id:
        data = store.load_run(row.run_id)
        assessed = assess_run(data)
        extra = {r.pk: r.response.extra for r in data.responses}
        first = [a for a in assessed if int(extra[a.response_pk].get("draw", 0) or 0) == 0]
        per_model = metrics_by(data, lambda r: r.model, assessed=first, seed=seed)
        by_variant = metrics_by(data, lambda r: str(extra[r.response_pk].get("variant") or "original"),
                                assessed=first, seed=seed)
        by_source = metrics_by(data, lambda r: str(extra[r.response_pk].get("question_source") or "(none)"),
                               assessed=first, seed=seed)
        support = answer_support(store, row.run_id)
    grades = {(g.qid, g.model, g.draw): g for g in bs.grades(row.id)}
    out: dict[str, ModelResult] = {}
    for spec in models + sorted({a.model for a in answers} - set(models)):
        mine = [a for a in answers if a.model == spec]
        status = Counter(a.status.value for a in mine)
        by_version: dict[str, list[int]] = {}
        for a in mine:
            acc = by_version.setdefault(a.model_version or model_name(spec), [0, 0])
            acc[0] += a.tokens_in
            acc[1] += a.tokens_out
        costs = [estimate_cost(m, t[0], t[1]) for m, t in by_version.items()]
        cost = None if not costs or any(c is None for c in costs) else sum(c for c in costs if c is not None)
        labels = [grades[(a.qid, a.model, 0)].label for a in mine if a.draw == 0 and (a.qid, a.model, 0) in grades]
        decided = [lab.correct for lab in labels if lab.correct is not None]
        result = ModelResult(spec, per_model.get(spec), dict(sorted(status.items())),
                             sum(a.tokens_in for a in mine), sum(a.tokens_out for a in mine), cost,
                             accuracy=proportion(decided, seed + 7) if labels else None,
                             accuracy_labels=dict(sorted(Counter(lab.value for lab in labels).items())))
        if best_of_k > 1:
            first_scores: list[float] = []
            chosen_scores: list[float] = []
            by_q: dict[str, dict[int, float | None]] = {}
            for a in mine:
                by_q.setdefault(a.qid, {})[a.draw] = support.get(a.rid)
            for qid, draws in by_q.items():
                selected = next((a.draw for a in mine if a.qid == qid and flags.get((qid, spec, a.draw), (0, 0))[1]),
                                None)
                if selected is None or draws.get(0) is None or draws.get(selected) is None:
                    continue
                first_scores.append(draws[0])          # type: ignore[arg-type]
                chosen_scores.append(draws[selected])  # type: ignore[arg-type]
            result.best_of = BestOfK(best_of_k, len(first_scores), _mean(first_scores), _mean(chosen_scores))
        out[spec] = result
    return BenchResults(row, out, by_variant, by_source, questions=len(bs.questions(row.id)),
                        documents=len(bs.documents(row.id)))


def _pct(m: Metric | None) -> str:
    if m is None or m.value is None:
        return "n/a"
    lo, hi = m.ci95
    return f"{percent(m.value)} ({100 * (lo or 0):.0f}-{100 * (hi or 0):.0f})"


def format_results(results: BenchResults) -> str:
    """The per-model table as the CLI prints it."""
    lines = [f"benchmark {results.bench.id} ({results.bench.status}): {results.documents} documents, "
             f"{results.questions} questions, audit run {results.bench.run_id or '-'}"]
    head = (f"{'model':<36} {'answers':>7} {'URL validity':>17} {'statement support':>17} "
            f"{'response support':>17} {'accuracy':>17}")
    lines.append(head)
    for name, r in results.models.items():
        m = r.metrics
        answered = sum(v for k, v in r.answer_status.items() if AnswerStatus(k).audited)
        lines.append(f"{short_name(name)[:36]:<36} {answered:>7} {_pct(m.url_validity if m else None):>17} "
                     f"{_pct(m.statement_support if m else None):>17} {_pct(m.response_support if m else None):>17} "
                     f"{_pct(r.accuracy):>17}")
    lines.append("answers by outcome, tokens and cost:")
    for name, r in results.models.items():
        cost = "cost unknown" if r.cost_usd is None else f"${r.cost_usd:.4f}"
        outcome = ", ".join(f"{k} {v}" for k, v in r.answer_status.items())
        acc = (" · accuracy " + ", ".join(f"{k} {v}" for k, v in r.accuracy_labels.items())
               if r.accuracy_labels else "")
        lines.append(f"  {name}: {outcome} · tokens {r.tokens_in} in / {r.tokens_out} out · {cost}{acc}")
    bok = [(n, r.best_of) for n, r in results.models.items() if r.best_of]
    if bok:
        lines.append("best-of-K (mean statement support per answer: first draw -> selected):")
        for name, b in bok:
            assert b is not None

            gain = "n/a" if b.gain is None else f"{100 * b.gain:+.1f} points"
            lines.append(f"  {name}: K={b.k}, {b.questions} questions: {percent(b.first_draw_support)} -> "
                         f"{percent(b.selected_support)} ({gain})")
    if len(results.by_variant) > 1:
        lines.append("statement support by question variant (first draws, all models):")
        for name, m in results.by_variant.items():
            lines.append(f"  {name:<16} {_pct(m.statement_support)}")
    return "\n".join(lines)


__all__ = ["AccuracyLabel", "BenchResults", "BestOfK", "ModelResult", "benchmark_results", "format_results"]
