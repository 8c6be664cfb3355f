"""Best-of-K selection (EVAL's rejection sampling): of K answers to a question, the best-scored goes forward.

The score of an answer, by ``--select``:

- ``support``: the share of its decided claims that a cited source supports (the audit's verdicts);
- ``grader``: a trained grader's P(good) (:mod:`sourcecheckup.review.grader`, EVAL's reward model, small);
- ``both``: the mean of the two; an answer with no decided claim counts its grader score alone.

An answer with no score (not audited, no decided claim under ``support``) ranks below every scored one;
ties go to the earlier draw. Grader scores are stored in ``answer_scores`` under the grader's id, so the
selection traces to stored rows.
"""
from __future__ import annotations

from typing import Mapping, Sequence

from ..store import Store
from .records import Answer, Question

SELECT_MODES = ("support", "grader", "both")


def check_select(select: str, grader_file: str | None) -> None:
    if select not in SELECT_MODES:
        raise ValueError(f"select {select}: choose one of {', '.join(SELECT_MODES)}")
    if select != "support" and not grader_file:
        raise ValueError(f"--select {select} needs a grader file (--grader FILE, from `sourcecheckup grader train`)")


def grader_scores(store: Store, run_id: str, answers: Sequence[Answer], questions: Mapping[str, Question],
                  grader_file: str) -> tuple[str, dict[str, float]]:
    """The grader's id and its P(good) per answer id (``Answer.rid``) of the answers in the audit run;
    stored in ``answer_scores``."""
    from ..review.grader import load_grader

    grader = load_grader(grader_file)
    in_run = {r.response.id: r.pk for r in store.responses(run_id)}
    todo = [a for a in answers if a.rid in in_run and a.qid in questions]
    if not todo:
        return grader.id, {}
    scores = grader.score([questions[a.qid].question for a in todo], [a.text for a in todo])
    store.save_answer_scores(run_id, grader.id, [(in_run[a.rid], float(s)) for a, s in zip(todo, scores)])
    return grader.id, {a.rid: float(s) for a, s in zip(todo, scores)}


def combined_score(select: str, support: float | None, grader: float | None) -> float | None:
    """An answer's selection score under ``select`` (None: no score)."""
    if select == "support":
        return support
    if select == "grader":
        return grader
    if grader is None:
        return support
    return grader if support is None else (support + grader) / 2


def pick_best(answers: Sequence[Answer], scores: Mapping[str, float | None]) -> list[tuple[str, str, int]]:
    """(qid, model, draw) of the best-scored answer per question and model (unscored last, ties: earlier draw)."""
    best: dict[tuple[str, str], tuple[float, int]] = {}
    for a in answers:
        score = scores.get(a.rid)
        value = -1.0 if score is None else score
        key = (a.qid, a.model)
        if key not in best or value > best[key][0] or (value == best[key][0] and a.draw < best[key][1]):
            best[key] = (value, a.draw)
    return [(q, m, d) for (q, m), (_, d) in best.items()]
