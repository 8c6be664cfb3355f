"""A grader of whole answers trained on reviewers' Good/Bad grades: EVAL's reward model, small and on CPU.

EVAL (expert-of-experts verification, "reward model" section) fine-tunes OPT-350M on answers that experts
graded Good or Bad and reports 87.9% agreement with the graders; the model's score then picks the best of
K = 5 answers to a question (rejection sampling). This grader deliberately differs in size: the question and
the answer are embedded with the bundled all-MiniLM-L6-v2 (:func:`sourcecheckup.embeddings.embed`), the
features are ``[a, q*a, |q-a|]`` (the answer, and how it relates to its question), standardised, and an
L2-regularised logistic regression with balanced class weights (fitted with scipy's L-BFGS) gives
P(Good). Its cross-validated accuracy and Cohen's kappa with the graders are measured with answers to one
question always in the same fold, so no question is seen in training and testing both.

The trained grader is a JSON file (numbers and names only, never pickled code).
"""
from __future__ import annotations

import hashlib
import json
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from ..models import utcnow
from ..store import Store
from .agreement import compare_raters
from .answer_grades import GRADES, AnswerGrade, answer_grades, graders_grade

FORMAT = "sourcecheckup-grader"
FORMAT_VERSION = 1
FEATURES = "minilm-qa-1: [a, q*a, |q-a|] of unit sentence embeddings, standardised"
MIN_GRADES = 20          # graded answers (with a majority grade) below which training is refused
MIN_PER_GRADE = 5        # ... and of each grade: a fold must see both
FOLDS = 5
C = 0.1                  # inverse L2 strength (sklearn's convention): strong, for a few dozen answers in 1152 dims
THRESHOLD = 0.5


class GraderError(ValueError):
    """A grader that cannot be trained, read or used; the message says what to do."""


@dataclass(frozen=True)
class Example:
    run_id: str
    response_pk: int
    response_id: str
    question: str
    answer: str
    grade: AnswerGrade


@dataclass
class Grader:
    """A trained grader: standardisation, weights and what it was trained on."""

    mean: np.ndarray
    scale: np.ndarray
    weights: np.ndarray
    bias: float
    embedding: str
    trained: dict[str, Any] = field(default_factory=dict)
    cross_validation: dict[str, Any] = field(default_factory=dict)
    c: float = C
    threshold: float = THRESHOLD

    @property
    def id(self) -> str:
        """'grader-' + the first 12 hex digits of the SHA-256 of its numbers: what stored scores name."""
        h = hashlib.sha256()
        for arr in (self.mean, self.scale, self.weights, np.array([self.bias])):
            h.update(np.ascontiguousarray(arr, dtype=np.float64).tobytes())
        return f"grader-{h.hexdigest()[:12]}"

    def score_features(self, x: np.ndarray) -> np.ndarray:
        return _sigmoid(((x - self.mean) / self.scale) @ self.weights + self.bias)

    def score(self, questions: Sequence[str], answers: Sequence[str]) -> np.ndarray:
        """P(Good) of each answer to its question."""
        return self.score_features(features(questions, answers))

    def to_dict(self) -> dict[str, Any]:
        return {"format": FORMAT, "version": FORMAT_VERSION, "id": self.id, "features": FEATURES,
                "embedding": self.embedding, "c": self.c, "threshold": self.threshold,
                "bias": float(self.bias), "weights": self.weights.tolist(), "mean": self.mean.tolist(),
                "scale": self.scale.tolist(), "trained": self.trained, "cross_validation": self.cross_validation}

    def save(self, path: str | Path) -> Path:
        """Write the grader as JSON; a path without a suffix gets ``.json``."""
        path = Path(path)
        if not path.suffix:
            path = path.with_suffix(".json")
        path.write_text(json.dumps(self.to_dict(), indent=1), encoding="utf-8")
        return path


def load_grader(path: str | Path) -> Grader:
    """Read a grader file written by :meth:`Grader.save` (``path`` or ``path.json``)."""
    path = Path(path)
    if not path.is_file() and not path.suffix and path.with_suffix(".json").is_file():
        path = path.with_suffix(".json")
    if not path.is_file():
        raise GraderError(f"{path}: no such grader file (train one with `sourcecheckup grader train RUN -o {path}`)")
    try:
        d = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise GraderError(f"{path} is not a grader file: {exc}") from None
    if not isinstance(d, dict) or d.get("format") != FORMAT:
        raise GraderError(f"{path} is not a grader file (written by `sourcecheckup grader train`)")
    if d.get("version") != FORMAT_VERSION or d.get("features") != FEATURES:
        raise GraderError(f"{path} was written by another version of the grader ({d.get('features')}); train it again")
    from ..embeddings import MODEL_NAME

    if d.get("embedding") != MODEL_NAME:
        raise GraderError(f"{path} needs the embedding model {d.get('embedding')}, this install has {MODEL_NAME}")
    try:
        g = Grader(mean=np.array(d["mean"], dtype=np.float64), scale=np.array(d["scale"], dtype=np.float64),
                   weights=np.array(d["weights"], dtype=np.float64), bias=float(d["bias"]),
                   embedding=d["embedding"], trained=d.get("trained") or {},
                   cross_validation=d.get("cross_validation") or {}, c=float(d.get("c", C)),
                   threshold=float(d.get("threshold", THRESHOLD)))
    except (KeyError, TypeError, ValueError) as exc:
        raise GraderError(f"{path}: a damaged grader file ({exc})") from None
    if not (g.mean.shape == g.scale.shape == g.weights.shape) or g.weights.ndim != 1:
        raise GraderError(f"{path}: a damaged grader file (its arrays differ in length)")
    return g


# ----------------------------------------------------------------------------- features and fitting

def features(questions: Sequence[str], answers: Sequence[str]) -> np.ndarray:
    """[a, q*a, |q-a|] of the unit MiniLM embeddings of each question and answer."""
    from ..embeddings import embed

    if len(questions) != len(answers):
        raise ValueError("one question per answer")
    if not answers:
        return np.zeros((0, 0))
    vectors = embed([*questions, *answers]).astype(np.float64)
    q, a = vectors[: len(questions)], vectors[len(questions):]
    return np.hstack([a, q * a, np.abs(q - a)])


def _sigmoid(z: np.ndarray) -> np.ndarray:
    return 1.0 / (1.0 + np.exp(-np.clip(z, -40, 40)))


def fit_logistic(x: np.ndarray, y: np.ndarray, c: float = C) -> tuple[np.ndarray, float]:
    """L2-regularised logistic regression with balanced class weights (sklearn's objective:
    sum of weighted log losses + ||w||^2 / (2C), the bias not penalised), by L-BFGS."""
    from scipy.optimize import minimize

    n, d = x.shape
    pos = float(y.sum())
    sample_w = np.where(y == 1, n / (2 * max(pos, 1.0)), n / (2 * max(n - pos, 1.0)))

    def loss(theta: np.ndarray) -> tuple[float, np.ndarray]:
        w, b = theta[:d], theta[d]
        z = x @ w + b
        # log(1 + e^z) - y z, stably
        value = float(np.sum(sample_w * (np.logaddexp(0.0, z) - y * z)) + 0.5 * (w @ w) / c)
        r = sample_w * (_sigmoid(z) - y)
        return value, np.concatenate([x.T @ r + w / c, [r.sum()]])

    res = minimize(loss, np.zeros(d + 1), jac=True, method="L-BFGS-B", options={"maxiter": 500})
    return res.x[:d], float(res.x[d])


def _standardise(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    mean = x.mean(axis=0)
    scale = x.std(axis=0)
    return mean, np.where(scale < 1e-9, 1.0, scale)


def train_on_features(x: np.ndarray, y: np.ndarray, c: float = C) -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    mean, scale = _standardise(x)
    w, b = fit_logistic((x - mean) / scale, y, c)
    return mean, scale, w, b


def folds_by_question(questions: Sequence[str], labels: Sequence[int], k: int = FOLDS,
                      seed: int = 0) -> list[int]:
    """A fold number per example: answers to one question share a fold; each fold gets about as many
    Good and Bad answers as the others (groups placed largest first, each in the fold that holds the
    fewest of its majority grade)."""
    groups: dict[str, list[int]] = {}
    for i, q in enumerate(questions):
        groups.setdefault(" ".join(q.lower().split()), []).append(i)
    order = list(groups.values())
    random.Random(seed).shuffle(order)
    order.sort(key=len, reverse=True)
    k = max(1, min(k, len(order)))
    held = [[0, 0] for _ in range(k)]          # per fold: bad, good
    fold = [0] * len(questions)
    for members in order:
        good = sum(labels[i] for i in members)
        major = 1 if 2 * good >= len(members) else 0
        f = min(range(k), key=lambda j: (held[j][major], sum(held[j]), j))
        for i in members:
            fold[i] = f
        held[f][1] += good
        held[f][0] += len(members) - good
    return fold


def cross_validate(x: np.ndarray, y: np.ndarray, questions: Sequence[str], *, k: int = FOLDS, seed: int = 0,
                   c: float = C) -> dict[str, Any]:
    """Out-of-fold P(Good) for every example (folds by question), and the grader's agreement with the
    graders' grades there: n, accuracy (Wilson 95% interval), Cohen's kappa (95% interval), and what
    always answering the commoner grade would score."""
    fold = np.array(folds_by_question(questions, [int(v) for v in y], k, seed))
    k = int(fold.max()) + 1
    oof = np.full(len(y), np.nan)
    for f in range(k):
        test = fold == f
        train = ~test
        if len(set(y[train].tolist())) < 2:
            continue                      # a fold whose training part has one grade only: left out, counted
        mean, scale, w, b = train_on_features(x[train], y[train], c)
        oof[test] = _sigmoid(((x[test] - mean) / scale) @ w + b)
    done = ~np.isnan(oof)
    truth = [GRADES[0] if v else GRADES[1] for v in y[done]]
    said = [GRADES[0] if p >= THRESHOLD else GRADES[1] for p in oof[done]]
    cmp = compare_raters(said, truth, "grader (cross-validated)", "graders' majority", "grader-majority",
                         seed=seed, labels=GRADES).as_dict()
    commoner = max(float(y.mean()), 1 - float(y.mean())) if len(y) else None
    return {"folds": k, "grouped_by": "question", "n": int(done.sum()), "left_out": int((~done).sum()),
            "accuracy": cmp["agreement"], "kappa": cmp["kappa"], "confusion": cmp["confusion"],
            "majority_baseline": commoner, "scores": [None if np.isnan(p) else float(p) for p in oof]}


# ----------------------------------------------------------------------------- from the database

def training_examples(store: Store, run_ids: Sequence[str]) -> tuple[list[Example], int]:
    """The graded answers of ``run_ids`` with their graders' majority grade; and how many graded answers
    had no majority (a tie), left out."""
    out: list[Example] = []
    ties = 0
    for run_id in run_ids:
        rows = answer_grades(store, run_id)
        majority = graders_grade(rows)
        ties += len({r.response_pk for r in rows}) - len(majority)
        if not majority:
            continue
        for r in store.responses_by_pk(run_id, sorted(majority)):
            out.append(Example(run_id, r.pk, r.response.id, r.response.question or "", r.response.text,
                               majority[r.pk]))
    return out, ties


def check_enough(examples: Sequence[Example], ties: int = 0) -> None:
    good = sum(1 for e in examples if e.grade is AnswerGrade.GOOD)
    bad = len(examples) - good
    if len(examples) >= MIN_GRADES and good >= MIN_PER_GRADE and bad >= MIN_PER_GRADE:
        return
    tie_note = f"; {ties} more with tied grades left out" if ties else ""
    raise GraderError(
        f"too few graded answers to train a grader: {len(examples)} ({good} good, {bad} bad){tie_note}; it needs "
        f"at least {MIN_GRADES}, with at least {MIN_PER_GRADE} good and {MIN_PER_GRADE} bad. Grade more answers "
        "(G / B in the app's review mode, `sourcecheckup grade`, or the answer_grade column of a review sheet)")


def train_grader(store: Store, run_ids: Sequence[str], *, seed: int = 0, c: float = C) -> Grader:
    """Train a grader on the graded answers of ``run_ids`` (refused under :data:`MIN_GRADES`), with its
    cross-validated agreement with the graders recorded in it."""
    from ..embeddings import MODEL_NAME

    examples, ties = training_examples(store, run_ids)
    check_enough(examples, ties)
    questions = [e.question for e in examples]
    x = features(questions, [e.answer for e in examples])
    y = np.array([1.0 if e.grade is AnswerGrade.GOOD else 0.0 for e in examples])
    cv = cross_validate(x, y, questions, seed=seed, c=c)
    cv.pop("scores")
    mean, scale, w, b = train_on_features(x, y, c)
    good = int(y.sum())
    trained = {"runs": list(run_ids), "database": str(store.path), "answers": len(examples), "good": good,
               "bad": len(examples) - good, "ties_left_out": ties, "created_at": utcnow(), "seed": seed}
    return Grader(mean=mean, scale=scale, weights=w, bias=b, embedding=MODEL_NAME, trained=trained,
                  cross_validation=cv, c=c)


@dataclass(frozen=True)
class ScoredAnswer:
    response_pk: int
    response_id: str
    model: str
    score: float
    grade: AnswerGrade | None      # the graders' majority grade, where graded


def score_run(store: Store, run_id: str, grader: Grader, *, save: bool = True) -> list[ScoredAnswer]:
    """Score every answer of a run with the grader (stored under the grader's id unless ``save`` is off)."""
    rows = store.responses(run_id)
    scores = grader.score([r.response.question or "" for r in rows], [r.response.text for r in rows]) \
        if rows else np.zeros(0)
    if save and rows:
        store.save_answer_scores(run_id, grader.id, [(r.pk, float(s)) for r, s in zip(rows, scores)])
    majority = graders_grade(answer_grades(store, run_id))
    return [ScoredAnswer(r.pk, r.response.id, r.response.model or "", float(s), majority.get(r.pk))
            for r, s in zip(rows, scores)]


def agreement_with_graders(scored: Sequence[ScoredAnswer], grader: Grader, *, seed: int = 0) -> dict[str, Any]:
    """The grader (at its threshold) against the graders' majority, over the scored answers that were graded."""
    graded = [s for s in scored if s.grade is not None]
    said = [GRADES[0] if s.score >= grader.threshold else GRADES[1] for s in graded]
    truth = [s.grade.value for s in graded]   # type: ignore[union-attr]
    return compare_raters(said, truth, grader.id, "graders' majority", "grader-majority", seed=seed,
                          labels=GRADES).as_dict()
