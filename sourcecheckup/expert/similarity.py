"""EVAL's unsupervised similarity of an answer to the expert's reference answer, and its rank correlation
with graders' grades.

- Late interaction (ColBERT's MaxSim; Khattab & Zaharia 2020, section 3.3; as EVAL uses it to rank model
  configurations): for each token of the reference answer, the largest cosine with any token of the answer,
  averaged over the reference's tokens. Token vectors are the last hidden states of the bundled
  all-MiniLM-L6-v2 (its own weights, run by the process's embedding runtime: ONNX Runtime,
  :mod:`sourcecheckup.embeddings.encoder_onnx`, else torch, :mod:`sourcecheckup.embeddings.encoder`),
  L2-normalised, [CLS] and [SEP] left out (as BERTScore does; ColBERT's own [Q]/[D] marker tokens do not
  exist in this model).
- Sentence cosine: the cosine of the two texts' sentence embeddings (:func:`sourcecheckup.embeddings.embed`).
- :func:`spearman` / :func:`similarity_grade_correlation`: Spearman's rank correlation with its 95% interval
  (Fisher z, Bonett–Wright standard error; :func:`sourcecheckup.metrics.intervals.spearman_interval`).
"""
from __future__ import annotations

import math
import threading
from typing import Any, Mapping, Sequence

import numpy as np

from ..metrics.intervals import spearman_interval

TOKEN_MODEL = "all-MiniLM-L6-v2 (token vectors)"
_lock = threading.Lock()
_encoder: Any = None


def _token_encoder() -> Any:
    """The embedding model the process already runs when it is ONNX Runtime's (no torch import, one model in
    memory), else the torch encoder of the same weights."""
    global _encoder
    with _lock:
        if _encoder is None:
            from .. import embeddings

            model = embeddings._load()
            if hasattr(model, "token_states"):
                _encoder = model
            else:
                from ..embeddings.encoder import MiniLMEncoder

                _encoder = MiniLMEncoder.open(embeddings.model_path())
    return _encoder


def hidden_states(encoder: Any, text: str) -> np.ndarray:
    """The last hidden state of every token of ``text`` (BERT's layers as :meth:`MiniLMEncoder._forward` runs
    them, before its mean pooling): shape (tokens, hidden), [CLS] and [SEP] included."""
    if hasattr(encoder, "token_states"):   # ONNX Runtime: the graph's second output
        return np.asarray(encoder.token_states(text), dtype=np.float32)
    import torch
    import torch.nn.functional as F

    ids_list = encoder.tokenizer.encode(str(text).strip()).ids
    w, H, eps, heads = encoder.w, encoder.hidden, encoder.eps, encoder.heads
    d = H // heads
    with torch.inference_mode():
        ids = torch.tensor([ids_list], dtype=torch.int64)
        L = ids.shape[1]
        x = (F.embedding(ids, w["embeddings.word_embeddings.weight"]) + w["embeddings.position_embeddings.weight"][:L]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = F.layer_norm(x, (H,), w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        for n in range(encoder.layers):
            p = f"encoder.layer.{n}."

            def lin(name: str, t: Any) -> Any:
                # called only within this layer's iteration, so the loop's p is the right one
                return F.linear(t, w[p + name + ".weight"], w[p + name + ".bias"])  # noqa: B023

            q, k, v = (lin(f"attention.self.{m}", x).view(1, L, heads, d).transpose(1, 2)
                       for m in ("query", "key", "value"))
            a = F.scaled_dot_product_attention(q, k, v).transpose(1, 2).reshape(1, L, H)
            x = F.layer_norm(lin("attention.output.dense", a) + x, (H,), w[p + "attention.output.LayerNorm.weight"],
                             w[p + "attention.output.LayerNorm.bias"], eps)
            x = F.layer_norm(lin("output.dense", F.gelu(lin("intermediate.dense", x))) + x, (H,),
                             w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
        return x[0].numpy().astype(np.float32)


def token_vectors(text: str, encoder: Any = None) -> np.ndarray:
    """Unit-length contextual vectors of the text's word pieces, [CLS] and [SEP] left out."""
    states = hidden_states(encoder or _token_encoder(), text)[1:-1]
    if not len(states):
        return np.zeros((0, states.shape[1] if states.ndim == 2 else 384), dtype=np.float32)
    return states / np.maximum(np.linalg.norm(states, axis=1, keepdims=True), 1e-12)


def maxsim(reference: np.ndarray, answer: np.ndarray) -> float | None:
    """ColBERT's MaxSim, averaged: mean over reference tokens of the max cosine over answer tokens (unit rows)."""
    if not len(reference) or not len(answer):
        return None
    return float(np.mean(np.max(reference @ answer.T, axis=1)))


def late_interaction(reference: str, answer: str, encoder: Any = None) -> float | None:
    """The answer's late-interaction similarity to the reference answer, in [-1, 1] (None for an empty text)."""
    return maxsim(token_vectors(reference, encoder), token_vectors(answer, encoder))


def sentence_cosine(reference: str, answer: str) -> float:
    """The cosine of the two texts' sentence embeddings (unit vectors: their dot product)."""
    from ..embeddings import embed

    vectors = embed([reference, answer])
    return float(np.dot(vectors[0], vectors[1]))


def spearman(x: Sequence[float], y: Sequence[float]) -> dict[str, Any]:
    """Spearman's rank correlation of paired values (ties get their mean rank) with its 95% interval."""
    n = len(x)
    if n != len(y):
        raise ValueError("spearman needs paired values")
    rho: float | None = None
    if n >= 3 and len(set(x)) > 1 and len(set(y)) > 1:
        from scipy.stats import rankdata

        rx, ry = rankdata(x), rankdata(y)
        rho = float(np.corrcoef(rx, ry)[0, 1])
    lo, hi = spearman_interval(rho, n) if rho is not None else (None, None)
    return {"rho": None if rho is None else round(rho, 6), "ci95": [None if lo is None else round(lo, 6),
                                                                   None if hi is None else round(hi, 6)],
            "n": n, "ci_method": "fisher_z_bonett_wright"}


GOOD_GRADES = {"good": 1.0, "bad": 0.0}


def similarity_grade_correlation(similarities: Mapping[Any, float | None],
                                 grades: Mapping[Any, Any]) -> dict[str, Any]:
    """EVAL's validation of the similarity: Spearman's rho between each answer's similarity and its grade
    (``"good"``/``"bad"``, True/False or a number), over the answers that have both; ``n_without`` counts those
    left out (no similarity, or no usable grade)."""
    xs: list[float] = []
    ys: list[float] = []
    for key, value in similarities.items():
        grade = grades.get(key)
        score = (GOOD_GRADES.get(grade.strip().lower()) if isinstance(grade, str)
                 else float(grade) if isinstance(grade, (bool, int, float)) else None)
        if value is None or score is None or not math.isfinite(float(value)):
            continue
        xs.append(float(value))
        ys.append(score)
    out = spearman(xs, ys)
    out["n_without"] = len(set(similarities) | set(grades)) - len(xs)
    return out


def _unit(rows: np.ndarray) -> np.ndarray:
    return rows / np.maximum(np.linalg.norm(rows, axis=-1, keepdims=True), 1e-12)


def answer_similarities(pairs: Sequence[tuple[str, str]]) -> list[tuple[float | None, float]]:
    """(late interaction, sentence cosine) for each (reference answer, answer) pair. One forward pass a text
    gives both: the token vectors, and their mean, normalised, which is the model's sentence embedding
    (sentence-transformers' mean pooling over every token; tests/expert/test_expert_metrics.py checks the equality)."""
    encoder = _token_encoder()
    out: list[tuple[float | None, float]] = []
    for ref, ans in pairs:
        r, a = hidden_states(encoder, ref), hidden_states(encoder, ans)
        cosine = float(np.dot(_unit(r.mean(axis=0)), _unit(a.mean(axis=0))))
        out.append((maxsim(_unit(r[1:-1]), _unit(a[1:-1])), cosine))
    return out
