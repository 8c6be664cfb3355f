"""OLAPH's measures of an answer against the expert's statements, and EVAL's similarity, from stored rows.

OLAPH (Jeong et al. 2024, arXiv:2405.12701, its factuality measures "Comprehensiveness" and
"Hallucination" over MedLFQA's statements):
- comprehensiveness (must-have) = must-have statements the answer entails / must-have statements decided
- comprehensiveness (all) = must-have + nice-to-have statements entailed / those decided
- hallucination = expert statements (must-have + nice-to-have) the answer contradicts / those decided
Entailed: the judge's verdict is ``supported``; contradicted: ``not_supported`` flagged ``contradicted``.
Decided: supported or not supported; a ``judge_error`` is left out and counted (never "not entailed").
Hallucination is not available (None) from a judge that gives no contradiction reading (a ``local:`` NLI
model scored for entailment only; its rows carry ``no_contradiction_reading``).

Per answer: the share with its Clopper–Pearson interval; per model and overall: statements clustered by answer,
Korn–Graubard interval (:mod:`sourcecheckup.metrics.intervals`). The headline figures are the run's first judge's (the
judge order of the run); every judge's verdict on every statement is listed.
EVAL (similarity to the expert answer): per model, the mean late-interaction and sentence-cosine similarity
with a t interval; the models ranked by each.
"""
from __future__ import annotations

from collections import defaultdict
from typing import Any, Iterable, Mapping, Sequence

from ..metrics import clustered_counts, proportion_of
from ..metrics.intervals import mean_interval
from ..models import Label
from ..review.answer_grades import answer_grades, graders_grade
from ..store import ResponseRow, Store
from .model import SIMILARITY_METHODS, ExpertKind, ExpertVerdict
from .similarity import similarity_grade_correlation

NO_CONTRADICTION_READING = "no_contradiction_reading"
MEASURES = ("comprehensiveness_must_have", "comprehensiveness_all", "hallucination")
MEASURE_NAMES = {"comprehensiveness_must_have": "Comprehensiveness (must-have)",
                 "comprehensiveness_all": "Comprehensiveness (must-have + nice-to-have)",
                 "hallucination": "Hallucination",
                 "late_interaction": "Similarity (late interaction)",
                 "sentence_cosine": "Similarity (sentence cosine)"}
DEFINITIONS = {
    "comprehensiveness_must_have": "must-have statements the answer entails / must-have statements decided "
                                   "(OLAPH, Jeong et al. 2024)",
    "comprehensiveness_all": "must-have and nice-to-have statements the answer entails / those decided (OLAPH)",
    "hallucination": "must-have and nice-to-have statements the answer contradicts / those decided (OLAPH); "
                     "not available from a judge that gives no contradiction reading",
    "late_interaction": "mean over the reference answer's tokens of the largest cosine with any answer token "
                        "(ColBERT MaxSim, as EVAL ranks answers), all-MiniLM-L6-v2 token vectors",
    "sentence_cosine": "cosine of the reference answer's and the answer's sentence embeddings (all-MiniLM-L6-v2)",
    "judge_errors": "statements the judge could not decide: left out of every share and counted here",
}


def _tally(verdicts: Iterable[ExpertVerdict]) -> dict[str, list[int]]:
    """(k, n) per measure and the judge errors, from one judge's verdicts on one answer."""
    t = {m: [0, 0] for m in MEASURES}
    t["judge_errors"] = [0, 0]
    readable = True
    for e in verdicts:
        label = e.verdict.label
        if label not in (Label.SUPPORTED, Label.NOT_SUPPORTED):
            t["judge_errors"][0] += 1
            continue
        readable = readable and NO_CONTRADICTION_READING not in e.verdict.flags
        entailed = label is Label.SUPPORTED
        if e.kind is ExpertKind.MUST_HAVE:
            t["comprehensiveness_must_have"][0] += entailed
            t["comprehensiveness_must_have"][1] += 1
        t["comprehensiveness_all"][0] += entailed
        t["comprehensiveness_all"][1] += 1
        t["hallucination"][0] += e.verdict.contradicted
        t["hallucination"][1] += 1
    if not readable:
        t["hallucination"] = [0, 0]
        t["no_contradiction_reading"] = [1, 1]
    return t


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 6)


def _similarity_summary(values: Sequence[float]) -> dict[str, Any]:
    lo, hi = mean_interval(values)   # a similarity is a cosine: the interval stays within [-1, 1]
    lo, hi = (None if lo is None else max(-1.0, lo)), (None if hi is None else min(1.0, hi))
    return {"mean": _round(sum(values) / len(values)) if values else None, "ci95": [_round(lo), _round(hi)],
            "n": len(values), "ci_method": "t_interval"}


def _group(tallies: Sequence[Mapping[str, list[int]]], sims: Mapping[str, list[float]]) -> dict[str, Any]:
    out: dict[str, Any] = {"answers": len(tallies)}
    for m in MEASURES:
        groups = [t[m] for t in tallies if t[m][1]]
        unreadable = m == "hallucination" and any("no_contradiction_reading" in t for t in tallies)
        out[m] = None if unreadable else clustered_counts([g[0] for g in groups], [g[1] for g in groups]).as_dict()
    out["judge_errors"] = sum(t["judge_errors"][0] for t in tallies)
    for method in SIMILARITY_METHODS:
        out[method] = _similarity_summary(sims.get(method, []))
    return out


def expert_section(store: Store, run_id: str, responses: Sequence[ResponseRow] | None = None,
                   judges: Sequence[str] | None = None) -> dict[str, Any]:
    """The report's ``expert`` section, recomputed from the stored rows alone (``verify-report`` rebuilds it)."""
    run = store.get_run(run_id)
    rows = [r for r in (responses if responses is not None else store.responses_with_expert(run.id)) if r.response.expert]
    verdicts = store.expert_verdicts(run.id)
    sims = store.similarities(run.id)
    seen = list(dict.fromkeys(e.verdict.judge_id for e in verdicts))
    order = [j for j in (judges if judges is not None else run.judges) if j in seen] + \
        [j for j in seen if j not in (judges if judges is not None else run.judges)]
    lead = order[0] if order else None
    by_response: dict[int, list[ExpertVerdict]] = defaultdict(list)
    for e in verdicts:
        by_response[e.response_pk].append(e)
    answers: list[dict[str, Any]] = []
    per_model: dict[str, list[dict[str, list[int]]]] = defaultdict(list)
    per_model_sims: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    all_tallies: list[dict[str, list[int]]] = []
    all_sims: dict[str, list[float]] = defaultdict(list)
    for row in rows:
        expert = row.response.expert
        assert expert is not None
        mine = by_response.get(row.pk, [])
        tally = _tally(e for e in mine if e.verdict.judge_id == lead)
        model = row.response.model or "(no model)"
        statements = []
        for kind, items in ((ExpertKind.MUST_HAVE, expert.must_have), (ExpertKind.NICE_TO_HAVE, expert.nice_to_have)):
            for i, text in enumerate(items):
                judged = {e.verdict.judge_id: {"label": e.verdict.label.value, "contradicted": e.verdict.contradicted,
                                               "rationale": e.verdict.rationale, "quote": e.verdict.quote}
                          for e in mine if e.kind is kind and e.ord == i}
                statements.append({"kind": kind.value, "ord": i, "statement": text,
                                   "verdicts": {j: judged[j] for j in order if j in judged}})
        similarity = {m: _round(v) for m, (_, v) in sims.get(row.pk, {}).items()}
        answer: dict[str, Any] = {"id": row.response.id, "model": row.response.model,
                                  "reference_answer": expert.reference_answer}
        for m in MEASURES:
            k, n = tally[m]
            answer[m] = None if (m == "hallucination" and "no_contradiction_reading" in tally) else \
                proportion_of(k, n).as_dict()
        answer["judge_errors"] = tally["judge_errors"][0]
        answer["pending"] = len(statements) * len(order) - len(mine) if order else len(statements)
        answer["similarity"] = similarity
        answer["statements"] = statements
        answers.append(answer)
        if statements:
            per_model[model].append(tally)
            all_tallies.append(tally)
        for m, v in similarity.items():
            if v is not None:
                per_model_sims[model][m].append(v)
                all_sims[m].append(v)
    by_model = {m: _group(per_model.get(m, []), per_model_sims.get(m, {}))
                for m in sorted(set(per_model) | set(per_model_sims))}
    rankings = {method: [m for m, _ in sorted(((m, g[method]["mean"]) for m, g in by_model.items()
                                               if g[method]["mean"] is not None), key=lambda x: (-x[1], x[0]))]
                for method in SIMILARITY_METHODS}
    return {"judge": lead, "judges": order, "answers_with_expert_material": len(rows),
            "overall": _group(all_tallies, all_sims), "by_model": by_model, "rankings": rankings,
            "grade_correlation": _grade_correlation(store, run.id, rows, sims),
            "responses": answers, "definitions": DEFINITIONS}


def _grade_correlation(store: Store, run_id: str, rows: Sequence[ResponseRow],
                       sims: Mapping[int, Mapping[str, Any]]) -> dict[str, Any]:
    """EVAL's check of a similarity against people: Spearman's rho between each answer's similarity and its
    graders' majority Good/Bad grade (``sourcecheckup grade``, review mode's G / B), per method; empty when no
    answer with expert material is graded."""
    if not rows:
        return {}   # no answer with expert material: no grade to read
    grades = graders_grade(answer_grades(store, run_id))
    graded = [r.pk for r in rows if r.pk in grades]
    if not graded:
        return {}
    return {method: similarity_grade_correlation({pk: (sims.get(pk, {}).get(method) or (None, None))[1]
                                                  for pk in graded},
                                                 {pk: grades[pk].value for pk in graded})
            for method in SIMILARITY_METHODS}


def expert_outcomes(section: Mapping[str, Any]) -> dict[str, list[float]]:
    """The units behind each expert figure of a built section, for a comparison of two runs: per decided expert
    statement 1/0 (entailed; contradicted) by the section's judge, and each answer's similarities."""
    out: dict[str, list[float]] = {m: [] for m in (*MEASURES, *SIMILARITY_METHODS)}
    judge = section.get("judge")
    for a in section.get("responses", []):
        for st in a["statements"]:
            v = st["verdicts"].get(judge) if judge else None
            if v is None or v["label"] not in ("supported", "not_supported"):
                continue
            entailed = float(v["label"] == "supported")
            if st["kind"] == ExpertKind.MUST_HAVE.value:
                out["comprehensiveness_must_have"].append(entailed)
            out["comprehensiveness_all"].append(entailed)
            if a["hallucination"] is not None:
                out["hallucination"].append(float(v["contradicted"]))
        for m in SIMILARITY_METHODS:
            if a["similarity"].get(m) is not None:
                out[m].append(float(a["similarity"][m]))
    return out
