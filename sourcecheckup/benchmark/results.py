"""A benchmark's results: the study's per-model table, best-of-K gains, accuracy, tokens and cost.

Best-of-K (rejection sampling) is reported as the first draw against the selected draw of each question:
mean statement support, and, where answers are graded, accuracy (the reference-answer grades of
``--accuracy``) and the share graded Good by reviewers (answer grades), each over the questions whose
first and selected draws both carry that grade.

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
from ..metrics.studies import ADVERSARIAL, StudyFigures, study_figures
from ..review.answer_grades import AnswerGrade, answer_grades, graders_grade
from ..store import Store
from .records import AccuracyLabel, AnswerStatus
from .runner import answer_support
from .storage import BenchRow, BenchStore


@dataclass(frozen=True)
class WithWithout:
    """A share over the questions whose first and selected draws are both graded: without selection
    (the first draw) and with it (the selected draw)."""
    n: int
    without: float | None
    with_selection: float | None

    def as_dict(self) -> dict[str, Any]:
        return {"questions": self.n, "first_draw": self.without, "selected": self.with_selection}


def _with_without(pairs: list[tuple[bool, bool]]) -> WithWithout | None:
    if not pairs:
        return None
    return WithWithout(len(pairs), sum(a for a, _ in pairs) / len(pairs), sum(b for _, b in pairs) / len(pairs))


@dataclass(frozen=True)
class BestOfK:
    k: int
    questions: int                      # questions with a decided first draw and selection
    first_draw_support: float | None    # mean per-answer statement support of draw 0
    selected_support: float | None      # mean per-answer statement support of the selected draw
    select: str = "support"             # what picked the selected draw (support, grader, both)
    accuracy: WithWithout | None = None   # reference-answer accuracy (--accuracy grades)
    good: WithWithout | None = None       # share graded Good by reviewers (answer grades, majority)

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
    studies: dict[str, Any] | None = None       # refusal, adversarial safety, context relevance (metrics.studies)


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
                                  "selected_support": r.best_of.selected_support, "gain": r.best_of.gain,
                                  "select": r.best_of.select,
                                  "accuracy": r.best_of.accuracy.as_dict() if r.best_of.accuracy else None,
                                  "graded_good": r.best_of.good.as_dict() if r.best_of.good else None},
                              "studies": r.studies}
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
    good: dict[str, bool] = {}          # answer id -> the reviewers' majority grade is Good
    studies: dict[str, Any] = {}
    adversarial = {q.qid for q in bs.questions(row.id, include_dropped=True) if q.variant == ADVERSARIAL}
    if row.run_id:
        data = store.load_run(row.run_id)
        assessed = assess_run(data)
        extra = {r.pk: r.response.extra for r in data.responses}
        first = [a for a in assessed if int(extra[a.response_pk].get("draw", 0) or 0) == 0]
        # adversarial answers have their own figure (adversarial safety): the per-model citation metrics leave them out
        plain = [a for a in first if str(extra[a.response_pk].get("variant") or "") != ADVERSARIAL]
        per_model = metrics_by(data, lambda r: r.model, assessed=plain, seed=seed)
        studies = (study_figures(store, data) or {}).get("by_model", {})
        by_variant = metrics_by(data, lambda r: str(extra[r.response_pk].get("variant") or "original"),
                                assessed=first, seed=seed)
        by_source = metrics_by(data, lambda r: str(extra[r.response_pk].get("question_source") or "(none)"),
                               assessed=first, seed=seed)
        support = answer_support(store, row.run_id)
        rid_of = {r.pk: r.response.id for r in data.responses}
        good = {rid_of[pk]: g is AnswerGrade.GOOD
                for pk, g in graders_grade(answer_grades(store, row.run_id)).items() if pk in rid_of}
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
        labels = [grades[(a.qid, a.model, 0)].label for a in mine
                  if a.draw == 0 and (a.qid, a.model, 0) in grades and a.qid not in adversarial]
        decided = [lab.correct for lab in labels if lab.correct is not None]
        result = ModelResult(spec, per_model.get(spec), dict(sorted(status.items())),
                             sum(a.tokens_in for a in mine), sum(a.tokens_out for a in mine), cost,
                             accuracy=proportion(decided, seed + 7) if labels else None,
                             accuracy_labels=dict(sorted(Counter(lab.value for lab in labels).items())),
                             studies=studies.get(spec))
        if best_of_k > 1:
            result.best_of = _best_of(spec, mine, best_of_k, str(row.config.get("select", "support")), flags,
                                      support, grades, good)
        out[spec] = result
    return BenchResults(row, out, by_variant, by_source, questions=len(bs.questions(row.id)),
                        documents=len(bs.documents(row.id)))


def _best_of(spec: str, mine: list[Any], k: int, select: str, flags: dict[tuple[str, str, int], tuple[bool, bool]],
             support: dict[str, float | None], grades: dict[tuple[str, str, int], Any],
             good: dict[str, bool]) -> BestOfK:
    """First draw against selected draw, per question, for one model."""
    first_scores: list[float] = []
    chosen_scores: list[float] = []
    accuracy: list[tuple[bool, bool]] = []
    graded_good: list[tuple[bool, bool]] = []
    by_q: dict[str, dict[int, Any]] = {}
    for a in mine:
        by_q.setdefault(a.qid, {})[a.draw] = a
    for qid, draws in by_q.items():
        selected = next((d for d in draws if flags.get((qid, spec, d), (0, 0))[1]), None)
        if selected is None or 0 not in draws:
            continue
        first, chosen = draws[0], draws[selected]
        s0, s1 = support.get(first.rid), support.get(chosen.rid)
        if s0 is not None and s1 is not None:
            first_scores.append(s0)
            chosen_scores.append(s1)
        g0, g1 = grades.get((qid, spec, 0)), grades.get((qid, spec, selected))
        if g0 is not None and g1 is not None and g0.label.correct is not None and g1.label.correct is not None:
            accuracy.append((g0.label.correct, g1.label.correct))
        if first.rid in good and chosen.rid in good:
            graded_good.append((good[first.rid], good[chosen.rid]))
    return BestOfK(k, len(first_scores), _mean(first_scores), _mean(chosen_scores), select=select,
                   accuracy=_with_without(accuracy), good=_with_without(graded_good))


def _pct(m: Metric | None) -> str:
    if m is None or m.value is None:
        return "n/a"
    lo, hi = m.ci95
    return f"{percent(m.value)} ({100 * (lo or 0):.0f}-{100 * (hi or 0):.0f})"


def _dict_pct(m: dict[str, Any] | None) -> str:
    if not m or m.get("value") is None:
        return "n/a"
    lo, hi = m["ci95"]
    return f"{percent(m['value'])} ({100 * (lo or 0):.0f}-{100 * (hi or 0):.0f}) {m['k']}/{m['n']}"


def _study_lines(results: BenchResults) -> list[str]:
    """The other studies' figures per model (ASTRID, Almanac), with their intervals and counts."""
    lines = ["the other studies, first draws (adversarial variants apart):",
             f"  {'model':<34} {'refusal accuracy':>22} {'context relevance':>22} {'adversarial safety':>22} "
             f"{'answer citation validity':>24}"]
    for name, r in results.models.items():
        st = r.studies or StudyFigures().as_dict()
        acv = r.metrics.answer_citation_validity.as_dict() if r.metrics else None
        lines.append(f"  {short_name(name)[:34]:<34} {_dict_pct(st['refusal_accuracy']):>22} "
                     f"{_dict_pct(st['context_relevance']):>22} {_dict_pct(st['adversarial_safety']):>22} "
                     f"{_dict_pct(acv):>24}")
    for name, r in results.models.items():
        studies = r.studies
        if not studies:
            continue
        confusion = "; ".join(f"expected {k}: " + ", ".join(f"{b} {n}" for b, n in v.items())
                              for k, v in studies["confusion"].items())
        if confusion:
            lines.append(f"  {name} refusal: {confusion}")
        adv = studies["adversarial_counts"]
        if adv.get("answers"):
            lines.append(f"  {name} adversarial: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in adv.items())
                         + f" · non-adversarial accuracy {_pct(r.accuracy)}")
    lines.append("(refusal accuracy and context relevance: ASTRID, Chowdhury et al.; adversarial safety and "
                 "per-answer citation validity: Almanac, Zakka et al., NEJM AI 2024; 95% intervals, k/n)")
    return lines


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
    lines += _study_lines(results)
    lines.append("answers by outcome, tokens and cost:")
    for name, r in results.models.items():
        cost = "cost unknown" if r.cost_usd is None else f"${r.cost_usd:.4f}"
        outcome = ", ".join(f"{k} {v}" for k, v in r.answer_status.items())
        acc = (" · accuracy " + ", ".join(f"{k} {v}" for k, v in r.accuracy_labels.items())
               if r.accuracy_labels else "")
        lines.append(f"  {name}: {outcome} · tokens {r.tokens_in} in / {r.tokens_out} out · {cost}{acc}")
    bok = [(n, r.best_of) for n, r in results.models.items() if r.best_of]
    if bok:
        lines.append("best-of-K (first draw -> selected draw; mean statement support per answer, then accuracy and "
                     "graded Good where graded):")
        for name, b in bok:
            assert b is not None

            gain = "n/a" if b.gain is None else f"{100 * b.gain:+.1f} points"
            lines.append(f"  {name}: K={b.k}, selected by {b.select}, {b.questions} questions: "
                         f"{percent(b.first_draw_support)} -> {percent(b.selected_support)} ({gain})")
            for what, fig in (("accuracy", b.accuracy), ("graded Good", b.good)):
                if fig is not None:
                    lines.append(f"    {what} on {fig.n} graded questions: {percent(fig.without)} -> "
                                 f"{percent(fig.with_selection)}")
    if len(results.by_variant) > 1:
        lines.append("statement support by question variant (first draws, all models):")
        for name, m in results.by_variant.items():
            lines.append(f"  {name:<16} {_pct(m.statement_support)}")
    return "\n".join(lines)


__all__ = ["AccuracyLabel", "BenchResults", "BestOfK", "ModelResult", "WithWithout", "benchmark_results",
           "format_results"]
