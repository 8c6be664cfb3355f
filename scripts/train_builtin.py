"""Train the built-in judge and write resources/judges/builtin.json.

    .venv/bin/python scripts/train_builtin.py [--data ../shared/data/claims] [--cache /tmp/emb.npz]

Training data: check_covid_train.jsonl + scifact_train.jsonl (claim = statement,
evidence = source text, binary_label = target). Nothing from the dev files is used.

What is written:
- an IDF table over stems of the training claims, evidence and abstracts (stems seen in at
  least 2 documents; unseen stems get the maximum weight: rare words are the key terms);
- two logistic regressions (scikit-learn, L2, C=0.5, class_weight="balanced", lbfgs; the
  solver is deterministic, the fold split uses SEED): "full" over lexical + embedding
  features and "lexical" over the lexical features alone (used when the embedding model
  is not installed). Features are standardised; means and scales are stored;
- each model's threshold: the one that maximises balanced accuracy of 5-fold
  cross-validated probabilities on the training pairs (stratified, shuffled with SEED).
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Any, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sourcecheckup import embeddings  # noqa: E402
from sourcecheckup.judges import builtin  # noqa: E402
from sourcecheckup.evidence import SourceText  # noqa: E402

SEED = 20260511
TRAIN_FILES = ("check_covid_train.jsonl", "scifact_train.jsonl")
C = 0.5
MIN_DF = 2
KEY_DF_SHARE = 0.005   # stems in at most 0.5% of documents count as key terms


def read_rows(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def build_idf(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    docs: dict[str, set[str]] = {}
    for r in rows:
        for text in (r["claim"], r["evidence"], r.get("source_abstract") or ""):
            if text and text not in docs:
                docs[text] = {builtin.stem(w) for w in builtin.words(text)}
    n = len(docs)
    df = Counter(s for stems in docs.values() for s in stems)

    def idf(count: int) -> float:
        return math.log((n + 1) / (count + 1)) + 1.0

    table = {s: round(idf(c), 4) for s, c in sorted(df.items()) if c >= MIN_DF}
    return {"documents": n, "default": round(idf(1), 4),
            "key": round(idf(max(MIN_DF, int(KEY_DF_SHARE * n))), 4), "table": table}


class EmbeddingCache:
    """Keeps vectors by text in an .npz so repeated experiments skip the model."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        self.vectors: dict[str, np.ndarray] = {}
        if path and path.exists():
            data = np.load(path, allow_pickle=False)
            self.vectors = dict(zip(data["texts"].tolist(), data["vectors"]))
        self._embed = embeddings.embed

    def embed(self, texts: Sequence[str], **kwargs: Any) -> np.ndarray:
        missing = [t for t in dict.fromkeys(texts) if t not in self.vectors]
        if missing:
            for t, v in zip(missing, self._embed(missing, **kwargs)):
                self.vectors[t] = v
        if not texts:
            return np.zeros((0, embeddings.DIMENSIONS), dtype=np.float32)
        return np.stack([self.vectors[t] for t in texts])

    def save(self) -> None:
        if self.path and self.vectors:
            texts = list(self.vectors)
            np.savez(self.path, texts=np.array(texts), vectors=np.stack([self.vectors[t] for t in texts]))


def feature_matrix(judge: builtin.BuiltinJudge, rows: Sequence[dict[str, Any]],
                   names: Sequence[str]) -> np.ndarray:
    pairs = [(r["claim"], SourceText.from_text(r["evidence"])) for r in rows]
    analyses = []
    for start in range(0, len(pairs), 256):
        analyses.extend(judge.analyse_pairs(pairs[start:start + 256]))
    for r, a in zip(rows, analyses):
        if isinstance(a, str):
            raise ValueError(f"row {r['id']} cannot be judged: {a}")
    return np.array([[a.features[n] for n in names] for a in analyses], dtype=np.float64)  # type: ignore[union-attr]


def balanced_accuracy(y: np.ndarray, pred: np.ndarray) -> float:
    tpr = float(np.mean(pred[y == 1])) if np.any(y == 1) else 0.0
    tnr = float(np.mean(~pred[y == 0])) if np.any(y == 0) else 0.0
    return (tpr + tnr) / 2


def best_threshold(y: np.ndarray, prob: np.ndarray) -> tuple[float, float]:
    grid = np.round(np.arange(0.05, 0.951, 0.01), 2)
    scores = [balanced_accuracy(y, prob >= t) for t in grid]
    i = int(np.argmax(scores))
    return float(grid[i]), float(scores[i])


def fit(x: np.ndarray, y: np.ndarray, names: Sequence[str]) -> tuple[dict[str, Any], float, float]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    def train(xa: np.ndarray, ya: np.ndarray) -> tuple[np.ndarray, np.ndarray, Any]:
        mean = xa.mean(axis=0)
        scale = xa.std(axis=0)
        scale[scale == 0] = 1.0
        model = LogisticRegression(C=C, class_weight="balanced", max_iter=2000)
        model.fit((xa - mean) / scale, ya)
        return mean, scale, model

    cv_prob = np.zeros(len(y))
    for tr, te in StratifiedKFold(5, shuffle=True, random_state=SEED).split(x, y):
        mean, scale, model = train(x[tr], y[tr])
        cv_prob[te] = model.predict_proba((x[te] - mean) / scale)[:, 1]
    threshold, cv_bacc = best_threshold(y, cv_prob)
    # the share of pairs the judge's review band would mark, out of fold
    near = float(np.mean(np.abs(cv_prob - threshold) < builtin.REVIEW_BAND))
    mean, scale, model = train(x, y)
    return {
        "features": list(names),
        "mean": [round(float(v), 6) for v in mean],
        "scale": [round(float(v), 6) for v in scale],
        "coef": [round(float(v), 6) for v in model.coef_[0]],
        "intercept": round(float(model.intercept_[0]), 6),
        "threshold": threshold,
    }, cv_bacc, near


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "claims")
    ap.add_argument("--out", type=Path, default=ROOT / "resources" / "judges" / "builtin.json")
    ap.add_argument("--cache", type=Path, default=None,
                    help="an .npz file that keeps embeddings between runs (e.g. /tmp/builtin-emb.npz)")
    args = ap.parse_args(argv)

    started = time.monotonic()
    rows = [r for name in TRAIN_FILES for r in read_rows(args.data / name)]
    y = np.array([r["binary_label"] == "supported" for r in rows], dtype=int)
    idf = build_idf(rows)
    # a provisional parameter set carries the IDF table into feature extraction
    zero = {"features": [], "mean": [], "scale": [], "coef": [], "intercept": 0.0, "threshold": 0.5}
    provisional = builtin.BuiltinParams(
        full=builtin.LogisticModel.from_json(zero), lexical=builtin.LogisticModel.from_json(zero),
        idf=builtin._Idf(idf["table"], idf["default"], idf["key"]), meta={})

    cache = EmbeddingCache(args.cache)
    embeddings_embed = embeddings.embed
    embeddings.embed = cache.embed  # type: ignore[assignment]
    try:
        full_names = builtin.LEXICAL_FEATURES + builtin.EMBEDDING_FEATURES
        x_full = feature_matrix(builtin.BuiltinJudge(params=provisional, use_embeddings=True), rows, full_names)
    finally:
        embeddings.embed = embeddings_embed  # type: ignore[assignment]
        cache.save()
    x_lex = feature_matrix(builtin.BuiltinJudge(params=provisional, use_embeddings=False), rows,
                           builtin.LEXICAL_FEATURES)

    full, cv_full, near = fit(x_full, y, full_names)
    lexical, cv_lex, _ = fit(x_lex, y, builtin.LEXICAL_FEATURES)
    out = {
        "version": builtin.PROMPT_VERSION,
        "embedding_model": embeddings.MODEL_NAME,
        "training": {"files": list(TRAIN_FILES), "pairs": int(len(y)), "supported": int(y.sum()),
                     "seed": SEED, "C": C, "cv_balanced_accuracy": {"full": round(cv_full, 4),
                                                                   "lexical": round(cv_lex, 4)}},
        "models": {"full": full, "lexical": lexical},
        "idf": idf,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(out, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"trained on {len(y)} pairs in {time.monotonic() - started:.0f} s; "
          f"5-fold CV balanced accuracy: full {cv_full:.3f} (threshold {full['threshold']}), "
          f"lexical {cv_lex:.3f} (threshold {lexical['threshold']}); review band {builtin.REVIEW_BAND} marks "
          f"{near:.1%} of the pairs out of fold; wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
