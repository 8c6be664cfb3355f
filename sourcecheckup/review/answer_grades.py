"""Answer-level grades: a reviewer's Good/Bad on a whole answer (EVAL's expert grades), kept apart
from the pair labels of :mod:`.review`.

Every grade is kept with who and when; the latest grade per (answer, reviewer) counts. The graders'
grade of an answer is the majority of those (a tie gives none). Agreement between graders is the
pair-label agreement of :mod:`.agreement` (percent agreement with its Wilson interval, Cohen's kappa
with its interval, n) over the answers both graded.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import Enum
from itertools import combinations
from typing import Any, Iterable, Mapping, Sequence

from ..store import Store, StoreError
from .agreement import MIN_KAPPA_PAIRS, compare_raters, kappa_words

GRADES = ("good", "bad")
OTHERS_MAJORITY = "other graders' majority"     # leave-one-out: the grader's own vote is not in it
_ALIASES = {"good": "good", "g": "good", "bad": "bad", "b": "bad"}


class AnswerGrade(str, Enum):
    GOOD = "good"
    BAD = "bad"


class GradeError(ValueError):
    """A grade that cannot be stored: no such answer, no reviewer, not good or bad."""


@dataclass(frozen=True)
class GradeRow:
    pk: int
    run_id: str
    response_pk: int
    response_id: str
    reviewer: str
    grade: AnswerGrade
    note: str
    sample: str | None
    created_at: str


def parse_grade(value: str) -> AnswerGrade | None:
    """'Good', 'g', 'BAD' ... -> the grade; anything else -> None."""
    got = _ALIASES.get(value.strip().lower())
    return AnswerGrade(got) if got else None


def response_pk_for(store: Store, run_id: str, response: int | str) -> int:
    """The stored key of a run's answer, from its pk (an int) or its id as the input gave it."""
    if isinstance(response, int):
        if not any(r.pk == response for r in store.responses_by_pk(run_id, [response])):
            raise GradeError(f"run {run_id} has no answer with key {response}")
        return response
    rows = store.responses_by_rid(run_id, response)
    if not rows:
        raise GradeError(f"run {run_id} has no answer '{response}' (see `sourcecheckup show {run_id}`)")
    if len(rows) > 1:
        raise GradeError(f"run {run_id} has {len(rows)} answers with the id '{response}'; grade one in the app")
    return rows[0].pk


def add_answer_grade(store: Store, run_id: str, response: int | str, reviewer: str, grade: AnswerGrade | str,
                     note: str = "", *, sample: str | None = None) -> int:
    """Store ``reviewer``'s grade of one answer of a run; returns the grade's pk."""
    reviewer = reviewer.strip()
    if not reviewer:
        raise GradeError("a grade needs the reviewer's name")
    parsed = grade if isinstance(grade, AnswerGrade) else parse_grade(str(grade))
    if parsed is None:
        raise GradeError(f"grade '{str(grade)[:40]}' is not good or bad")
    try:
        store.get_run(run_id)
    except StoreError as exc:
        raise GradeError(str(exc)) from None
    pk = response_pk_for(store, run_id, response)
    return store.add_answer_grade(run_id, pk, reviewer, parsed.value, note.strip(), sample=sample)


def answer_grades(store: Store, run_id: str, *, latest_only: bool = True,
                  response_pk: int | None = None) -> list[GradeRow]:
    """A run's answer grades, oldest first; with ``latest_only`` one per (answer, reviewer)."""
    rows = [GradeRow(r["pk"], r["run_id"], r["response_pk"], r["rid"], r["reviewer"], AnswerGrade(r["grade"]),
                     r["note"] or "", r["sample"], r["created_at"])
            for r in store.answer_grade_rows(run_id, response_pk)]
    if not latest_only:
        return rows
    latest: dict[tuple[int, str], GradeRow] = {}
    for r in rows:
        latest[(r.response_pk, r.reviewer)] = r
    return sorted(latest.values(), key=lambda r: r.pk)


def majority(grades: Iterable[AnswerGrade]) -> AnswerGrade | None:
    """The majority grade; a tie (or no grade) gives none."""
    counts = Counter(grades).most_common()
    if not counts or (len(counts) > 1 and counts[0][1] == counts[1][1]):
        return None
    return counts[0][0]


def graders_grade(rows: Sequence[GradeRow]) -> dict[int, AnswerGrade]:
    """response_pk -> the graders' majority grade (latest grade per reviewer; ties left out)."""
    by_answer: dict[int, dict[str, AnswerGrade]] = {}
    for r in rows:
        by_answer.setdefault(r.response_pk, {})[r.reviewer] = r.grade
    out: dict[int, AnswerGrade] = {}
    for pk, grades in by_answer.items():
        got = majority(grades.values())
        if got is not None:
            out[pk] = got
    return out


def compare_grades(a: Mapping[Any, str], b: Mapping[Any, str], name_a: str, name_b: str, kind: str,
                   seed: int = 0) -> dict[str, Any]:
    """Agreement of two graders over the answers both graded: n, percent agreement, Cohen's kappa."""
    common = sorted(set(a) & set(b), key=str)
    return compare_raters([a[k] for k in common], [b[k] for k in common], name_a, name_b, kind, seed=seed,
                          labels=GRADES).as_dict()


def grade_agreement(store: Store, run_ids: Sequence[str], *, seed: int = 0) -> dict[str, Any]:
    """Who graded what, and how far the graders agree: each pair of graders, and each grader against
    the majority of the others (leave-one-out), over the answers of ``run_ids``."""
    by_reviewer: dict[str, dict[tuple[str, int], str]] = {}
    by_answer: dict[tuple[str, int], dict[str, str]] = {}
    counts: Counter[str] = Counter()
    for run_id in run_ids:
        for r in answer_grades(store, run_id):
            key = (run_id, r.response_pk)
            by_reviewer.setdefault(r.reviewer, {})[key] = r.grade.value
            by_answer.setdefault(key, {})[r.reviewer] = r.grade.value
    consensus: dict[tuple[str, int], str] = {}
    for key, grades in by_answer.items():
        got = majority(AnswerGrade(g) for g in grades.values())
        if got is not None:
            consensus[key] = got.value
            counts[got.value] += 1
    comparisons = []
    s = seed
    for (ra, la), (rb, lb) in combinations(sorted(by_reviewer.items()), 2):
        comparisons.append(compare_grades(la, lb, ra, rb, "grader-grader", s))
        s += 1
    if len(by_reviewer) > 1:
        for reviewer, mine in sorted(by_reviewer.items()):
            others: dict[tuple[str, int], str] = {}
            for key in mine:
                got = majority(AnswerGrade(g) for r, g in by_answer[key].items() if r != reviewer)
                if got is not None:
                    others[key] = got.value
            comparisons.append(compare_grades(mine, others, reviewer, OTHERS_MAJORITY, "grader-majority", s))
            s += 1
    return {"runs": list(run_ids), "graders": sorted(by_reviewer), "answers_graded": len(by_answer),
            "with_majority": len(consensus), "without_majority": len(by_answer) - len(consensus),
            "majority": {g: counts.get(g, 0) for g in GRADES}, "comparisons": comparisons}


def format_comparison(c: Mapping[str, Any]) -> str:
    """One line: 'alice vs bob: n 24, agreement 87.5% (69.0-95.7), kappa 0.74 (0.45-1.00)'."""
    if not c["n"]:
        return f"{c['rater_a']} vs {c['rater_b']}: no answer graded by both"
    ag, ka = c["agreement"], c["kappa"]
    lo, hi = ag["ci95"]
    line = (f"{c['rater_a']} vs {c['rater_b']}: n {c['n']}, agreement {100 * ag['value']:.1f}% "
            f"({100 * (lo or 0):.1f}-{100 * (hi or 0):.1f})")
    if ka["value"] is None or c["n"] < MIN_KAPPA_PAIRS:
        return line + f", kappa {kappa_words(ka['value'], c['n'])}"
    klo, khi = ka["ci95"]
    return line + f", kappa {ka['value']:.2f} ({klo:.2f}-{khi:.2f})"


def grade_summary(rows: Sequence[GradeRow]) -> str:
    """One answer's grades in words, for the app: 'Answer grade: Good (dr a, dr b) · Bad (dr c): Good by majority'."""
    if not rows:
        return "Answer grade: not graded (G good · B bad in review mode)"
    by_grade: dict[AnswerGrade, list[str]] = {}
    for r in rows:
        by_grade.setdefault(r.grade, []).append(r.reviewer)
    parts = [f"{g.value.capitalize()} ({', '.join(names)})" for g, names in by_grade.items()]
    got = majority(r.grade for r in rows)
    verdict = f"{got.value.capitalize()} by majority" if got else "no majority"
    return "Answer grade: " + " · ".join(parts) + (f": {verdict}" if len(rows) > 1 else "")
