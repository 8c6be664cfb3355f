"""Would an int8 first pass make the built-in judge cheaper on distinct pages without changing a label?

The idea measured (issue 27): embed every sentence of a page with a cheap int8 copy of MiniLM (ONNX
Runtime dynamic quantisation, weights per channel), then embed in float32 only the sentences whose cheap
similarity could put them among the ones the judge reads, so the float32 similarities it reads are the
ones it reads now. The judge reads (sourcecheckup/judges/builtin/judge.py, facts.py):

  * the CHECK_SENTENCES (6) sentences closest to the statement (the best one gives the quote and
    ``cos_sentence``; the six are the sentences the exact checks read),
  * the best passage by (cosine of the summed sentence vectors + 0.15 x BM25 share): all its sentences,
  * on a whole page, for each fact of the statement its closest sentence (``f_min_emb``, ``f_mean_emb``).

With a margin d (|cheap cosine - float32 cosine| <= d for every sentence), a sentence can be skipped only
when its cheap cosine lies more than 2d below the cheap cosine of the k-th best (k = 6 for the statement,
1 for each fact), and a passage only when its cheap score lies more than 2d below the best one's. This
script measures, on WiCE dev pages: the CPU of the two models on the same sentences, the int8 error
(vector distance, cosine against the claims, passage cosine), and the share of sentences that would still
need float32 for several margins; the cascade's CPU is then about int8 + that share x float32.

    .venv/bin/python bench/embedding_cascade.py [--pages 60] [--margins 0.02,0.03,0.052,0.08]

The last line: ``cascade: int8/fp32 CPU R; max cosine error E; CPU at the measured margin C of float32``.
"""
from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CHECK_K = 6   # judge.CHECK_SENTENCES
BM25_WEIGHT = 0.15   # judge.analyse_pair's passage_score


def int8_model(folder: Path, fp32: Any, out: Path, threads: int) -> Any:
    """The cached float32 graph quantised (dynamic, int8 weights per channel), run like OnnxMiniLM."""
    import onnxruntime as ort
    from onnxruntime.quantization import QuantType, quantize_dynamic

    from sourcecheckup.embeddings.encoder_onnx import OnnxMiniLM, onnx_file

    quantize_dynamic(str(onnx_file(folder)), str(out), per_channel=True, weight_type=QuantType.QInt8)
    options = ort.SessionOptions()
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    session = ort.InferenceSession(str(out), options, providers=["CPUExecutionProvider"])
    return OnnxMiniLM(folder, fp32.tokenizer, fp32.hidden, session)


def refined_share(pages: Sequence[tuple[Any, Any, np.ndarray, np.ndarray, np.ndarray, np.ndarray]],
                  margin: float) -> float:
    """The share of sentences a cascade with this margin still embeds in float32."""
    need_total = total = 0
    for prep, bm25, cheap, queries, passage_cheap, _ in pages:
        n = len(prep.sentences)
        sims = cheap @ queries.T                       # sentences x (statement, facts...)
        need = np.zeros(n, dtype=bool)
        kth = np.sort(sims[:, 0])[-min(CHECK_K, n)]
        need |= sims[:, 0] >= kth - 2 * margin
        for j in range(1, queries.shape[0]):
            need |= sims[:, j] >= sims[:, j].max() - 2 * margin
        score = passage_cheap + BM25_WEIGHT * bm25
        for p, members in enumerate(prep.passage_sentences):
            if members and score[p] >= score.max() - 2 * margin:
                need[members] = True
        need_total += int(need.sum())
        total += n
    return need_total / max(1, total)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "claims")
    ap.add_argument("--pages", type=int, default=60)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--margins", default="0.02,0.03,0.052,0.08")
    args = ap.parse_args(argv)

    from sourcecheckup import embeddings
    from sourcecheckup.embeddings.encoder_onnx import OnnxMiniLM
    from sourcecheckup.evidence import SourceText, rank_passages
    from sourcecheckup.judges.builtin.facts import PAGE_SENTENCES, split_facts
    from sourcecheckup.judges.builtin.screen import _prepare_source

    rows = [json.loads(line) for line in (args.data / "wice_dev.jsonl").open(encoding="utf-8") if line.strip()]
    rows = rows[:args.pages]
    folder = embeddings.model_path()
    fp32 = OnnxMiniLM.open(folder, threads=args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        int8 = int8_model(folder, fp32, Path(tmp) / "model-int8.onnx", args.threads)
        sources = [SourceText.from_text(r["evidence"]) for r in rows]
        preps = [_prepare_source(s) for s in sources]
        sentences = list(dict.fromkeys(t for p in preps for t in p.sentences))
        cpu: dict[str, list[float]] = {"fp32": [], "int8": []}
        vectors: dict[str, np.ndarray] = {}
        for _ in range(2):   # interleaved, the smaller of two: the machine is shared
            for name, model in (("fp32", fp32), ("int8", int8)):
                start = time.process_time()
                vectors[name] = model.encode(sentences, batch_size=embeddings.BATCH_SIZE)
                cpu[name].append(time.process_time() - start)
    row_of = {t: i for i, t in enumerate(sentences)}
    v32, v8 = vectors["fp32"], vectors["int8"]
    distance = np.linalg.norm(v32 - v8, axis=1)
    claims = fp32.encode([r["claim"] for r in rows], batch_size=embeddings.BATCH_SIZE)
    cos_error = np.abs(claims @ v32.T - claims @ v8.T)
    pages, passage_error = [], []
    for r, source, prep, claim in zip(rows, sources, preps, claims):
        ids = [row_of[t] for t in prep.sentences]
        texts = [r["claim"]] + (split_facts(r["claim"]) if len(ids) >= PAGE_SENTENCES else [])
        queries = fp32.encode(texts, batch_size=embeddings.BATCH_SIZE)
        bm = dict(rank_passages(r["claim"], source, k=len(source.passages)))
        top = max(bm.values(), default=0.0) or 1.0
        bm25 = np.array([bm.get(p, 0.0) / top for p in range(len(prep.passage_sentences))])
        exact, cheap = [], []
        for members in prep.passage_sentences:
            if not members:
                exact.append(-9.0)
                cheap.append(-9.0)
                continue
            u32, u8 = v32[[ids[m] for m in members]].sum(0), v8[[ids[m] for m in members]].sum(0)
            exact.append(float(u32 @ claim / np.linalg.norm(u32)))
            cheap.append(float(u8 @ claim / np.linalg.norm(u8)))
            passage_error.append(abs(exact[-1] - cheap[-1]))
        pages.append((prep, bm25, v8[ids], queries, np.array(cheap), np.array(exact)))
    ratio = min(cpu["int8"]) / min(cpu["fp32"])
    print(f"embedding cascade on {len(rows)} WiCE pages, {len(sentences)} distinct sentences, {args.threads} threads")
    print(f"  CPU              float32 {min(cpu['fp32']):.2f} s ({1000 * min(cpu['fp32']) / len(sentences):.1f} ms a "
          f"sentence), int8 {min(cpu['int8']):.2f} s: int8/fp32 {ratio:.2f}")
    print(f"  int8 error       vector distance max {distance.max():.3f} (mean {distance.mean():.3f}); cosine to the "
          f"claims max {cos_error.max():.4f}, 99.9th percentile {np.quantile(cos_error, 0.999):.4f} "
          f"({cos_error.size} pairs); passage cosine max {max(passage_error):.4f}")
    measured = float(cos_error.max())
    margins = sorted({float(m) for m in args.margins.split(",") if m.strip()} | {round(measured, 4)})
    at_measured = 0.0
    for margin in margins:
        share = refined_share(pages, margin)
        cost = ratio + share
        if margin == round(measured, 4):
            at_measured = cost
        print(f"  margin {margin:.4f}    {share:5.1%} of sentences still in float32: CPU about {cost:.2f} of "
              f"float32 alone (int8 {ratio:.2f} + {share:.2f})")
    print(f"cascade: int8/fp32 CPU {ratio:.2f}; max cosine error {measured:.4f}; "
          f"CPU at the measured margin {at_measured:.2f} of float32")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
