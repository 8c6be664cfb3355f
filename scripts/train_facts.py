"""Train the built-in judge's completeness gate (facts.py) and add it to resources/judges/builtin.json.

    .venv/bin/python scripts/train_facts.py [--data ../shared/data/claims] [--cache /tmp/facts-emb.npz]

Training data: WiCE dev (wice_dev.jsonl: real Wikipedia sentences and the whole web page each one
cites; "supported" only when the page supports the whole sentence). Each pair is analysed by the
built-in judge as it stands (the trained score and the exact checks of scripts/train_builtin.py), and
the completeness features of ``sourcecheckup.judges.builtin.facts`` are read off it, with the judge's
own score as the feature ``base``.

What is written, beside the existing models: ``models.facts`` (lexical + embedding features) and
``models.facts_lexical`` (lexical only, for a judge without the embedding model): logistic
regressions (scikit-learn, L2, C=2, class_weight="balanced", lbfgs), standardised, threshold 0.5; on a
whole page the gate decides the label (it reads the judge's own score as one feature) unless an exact
check failed. ``facts_training`` records the file, the counts and the 5-fold cross-validated balanced
accuracy of the gate's label, the honest figure for pages it was not trained on, beside the judge's
accuracy without it. Nothing else in the file changes.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "scripts"))

from sourcecheckup import embeddings  # noqa: E402
from sourcecheckup.evidence import SourceText  # noqa: E402
from sourcecheckup.judges.builtin import BuiltinJudge, facts, load_params  # noqa: E402
from sourcecheckup.models import Label  # noqa: E402
from train_builtin import SEED, EmbeddingCache, read_rows  # noqa: E402

TRAIN_FILE = "wice_dev.jsonl"
THRESHOLD = 0.5
C = 2.0


def gate_rows(judge: BuiltinJudge, rows: Sequence[dict[str, Any]]
              ) -> tuple[list[dict[str, float] | None], np.ndarray, np.ndarray]:
    """(each pair's completeness features, or None when the source is no page; the judge's own labels;
    whether an exact check or the negation veto rules support out whatever the gate says)."""
    found: list[dict[str, float] | None] = []
    said: list[bool] = []
    blocked: list[bool] = []
    for start in range(0, len(rows), 32):
        batch = rows[start:start + 32]
        pairs = [(r["claim"], SourceText.from_text(r["evidence"])) for r in batch]
        for (statement, source), a in zip(pairs, judge.analyse_pairs(pairs)):
            v = judge.verdict(statement, source, a)
            said.append(v.label is Label.SUPPORTED)
            blocked.append(not isinstance(a, str) and (bool(a.veto) or (a.checks is not None and a.checks.decisive is not None)))
            found.append(dict(a.facts.features) if not isinstance(a, str) and a.facts is not None else None)
        print(f"  {min(start + 32, len(rows))}/{len(rows)} pairs", file=sys.stderr, end="\r")
    return found, np.array(said), np.array(blocked)


def fit(x: np.ndarray, y: np.ndarray, said: np.ndarray, blocked: np.ndarray, names: Sequence[str]
        ) -> tuple[dict[str, Any], dict[str, float]]:
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import StratifiedKFold

    def train(xa: np.ndarray, ya: np.ndarray) -> tuple[np.ndarray, np.ndarray, Any]:
        mean, scale = xa.mean(axis=0), xa.std(axis=0)
        scale[scale == 0] = 1.0
        return mean, scale, LogisticRegression(C=C, class_weight="balanced", max_iter=3000).fit((xa - mean) / scale, ya)

    cv = np.zeros(len(y))
    for tr, te in StratifiedKFold(5, shuffle=True, random_state=SEED).split(x, y):
        mean, scale, model = train(x[tr], y[tr])
        cv[te] = model.predict_proba((x[te] - mean) / scale)[:, 1]

    def balanced(pred: np.ndarray) -> float:
        return float((np.mean(pred[y == 1]) + np.mean(~pred[y == 0])) / 2)

    with_gate = (cv >= THRESHOLD) & ~blocked
    figures = {"cv_balanced_accuracy": round(balanced(with_gate), 4),
               "judge_alone_balanced_accuracy": round(balanced(said), 4),
               "cv_not_supported_called_supported": round(float(np.mean(with_gate[y == 0])), 4)}
    mean, scale, model = train(x, y)
    return {"features": list(names), "mean": [round(float(v), 6) for v in mean],
            "scale": [round(float(v), 6) for v in scale], "coef": [round(float(v), 6) for v in model.coef_[0]],
            "intercept": round(float(model.intercept_[0]), 6), "threshold": THRESHOLD}, figures


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "claims")
    ap.add_argument("--params", type=Path, default=ROOT / "resources" / "judges" / "builtin.json")
    ap.add_argument("--cache", type=Path, default=None, help="an .npz that keeps embeddings between runs")
    args = ap.parse_args(argv)
    started = time.monotonic()
    rows = read_rows(args.data / TRAIN_FILE)
    data = json.loads(args.params.read_text(encoding="utf-8"))
    base = load_params(args.params)
    # the judge as it stands, without a gate: its score and its label are what the gate is trained on
    from dataclasses import replace
    params = replace(base, facts=None, facts_lexical=None)
    out: dict[str, Any] = {}
    cache = EmbeddingCache(args.cache)
    for key, use_embeddings, names in (("facts", True, facts.FEATURES_LEXICAL + facts.FEATURES_EMBEDDING),
                                       ("facts_lexical", False, facts.FEATURES_LEXICAL)):
        real = embeddings.embed
        embeddings.embed = cache.embed  # type: ignore[assignment]
        try:
            found, said, blocked = gate_rows(BuiltinJudge(params=params, use_embeddings=use_embeddings), rows)
        finally:
            embeddings.embed = real  # type: ignore[assignment]
            cache.save()
        keep = [i for i, f in enumerate(found) if f is not None]
        x = np.array([[found[i][n] for n in names] for i in keep], dtype=np.float64)  # type: ignore[index]
        y = np.array([rows[i]["binary_label"] == "supported" for i in keep], dtype=int)
        model, figures = fit(x, y, said[keep], blocked[keep], names)
        data["models"][key] = model
        out[key] = {"pairs": len(keep), "supported": int(y.sum()), **figures}
        print(f"{key}: {len(keep)} pages; 5-fold CV balanced accuracy with the gate {figures['cv_balanced_accuracy']:.3f} "
              f"(judge alone {figures['judge_alone_balanced_accuracy']:.3f}); not fully supported called supported "
              f"{figures['cv_not_supported_called_supported']:.3f}")
    data["facts_training"] = {"file": TRAIN_FILE, "seed": SEED, "C": C, "threshold": THRESHOLD,
                              "page_sentences": facts.PAGE_SENTENCES, **out}
    args.params.write_text(json.dumps(data, indent=1, sort_keys=False) + "\n", encoding="utf-8")
    print(f"trained in {time.monotonic() - started:.0f} s; wrote {args.params}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
