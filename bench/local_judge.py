"""How fast `local:` runs the MiniCheck checkers on a laptop CPU, before and after the speed-ups.

    nice -n 10 .venv/bin/python bench/local_judge.py [--quick] [--kinds roberta,deberta,t5]
                                                     [--sources 1] [--statements 5] [--threads 2]
                                                     [--models DIR]   # keep the built models

No real checker can be downloaded here, so each kind is a model of the real one's architecture and
size built from a config with random weights (RoBERTa-large, DeBERTa-v3-large, Flan-T5-large:
tests/support/minicheck_models.py); a forward pass costs the same whatever the weights' values.
Sources are synthetic medical pages of 5-10 KB (``--page-kb``), 5 statements a source, cut and
read as the MiniCheck authors do (sourcecheckup/judges/local/kinds.py). Printed for each kind:

- before: the plain float32 procedure as the authors run it (their Inferencer): each pair alone, its
  source cut again, its chunks in batches of 16 padded to the longest, transformers' own forward;
- after: every chunk of a source across all its statements, tokenised once and batched by length
  (padding within 10%), DeBERTa's attention without its copies and Flan-T5's one decoder step
  read from the encoder states (sourcecheckup/judges/local/fast.py), threads set to ``--threads``:
  float32 on PyTorch (labels identical); DeBERTa-v3 and Flan-T5 float32 on ONNX Runtime
  (sourcecheckup/judges/local/onnx_runtime.py, the export written once into the cache, its time printed
  apart); int8 weights (``#quantize=int8``, what runtime=auto runs: PyTorch for RoBERTa, ONNX
  Runtime's per-channel int8 for DeBERTa-v3 and Flan-T5) timed without the float32 re-check of
  texts near the threshold, whose share is printed and whose cost is one float32 text each;
- ideal: the plain forward passes alone that the authors' procedure needs, pre-tokenised, longest
  first in full batches of 16 (a ratio below 1 is work the plain model does that the fast one skips);
- pairs/s, the ratio to the ideal, and the minutes a 10-answer audit takes (50 statements, 20
  sources of 5-10 KB, 5 statements a source: 100 pairs), from the wall time and, for a machine
  shared with other work, from the process's CPU time over the threads (what 2 free cores take);
- a summary line per kind: before, the fastest "after" and ideal in pairs/s and minutes an audit
  (CPU time over the threads), and whether it is at least 2x faster than before.
Set SOURCECHECKUP_CACHE_DIR to keep the ONNX exports between runs (a few minutes per large model).
``--quick`` reads one 5 KB source with 2 statements (a few minutes for all three kinds on 2 cores).
"""
from __future__ import annotations

import argparse
import asyncio
import gc
import random
import sys
import tempfile
import time
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sourcecheckup.evidence import SourceText  # noqa: E402
from sourcecheckup.judges.local import kinds as local_kinds  # noqa: E402
from sourcecheckup.judges.local import from_spec  # noqa: E402
from tests.support.minicheck_models import build_minicheck_model  # noqa: E402
from tests.support.tiny_model import BASE_WORDS  # noqa: E402

FIXTURE = ROOT / "tests" / "fixtures" / "local_judge" / "hemochromatosis.txt"
AUDIT_PAIRS = 100    # 10 answers x 5 statements x 2 sources each = 20 sources x 5 statements
NAMES = {"roberta": "RoBERTa-large", "deberta": "DeBERTa-v3-large", "t5": "Flan-T5-large"}


def synthetic_page(rng: random.Random, kb: float) -> str:
    """Real sentences from the test page mixed with word-salad sentences, in paragraphs."""
    real = [s.strip() + "." for s in FIXTURE.read_text().replace("\n", " ").split(". ") if s.strip()]
    paragraphs: list[str] = []
    while sum(len(p) + 2 for p in paragraphs) < kb * 1000:
        sentences = [rng.choice(real) if rng.random() < 0.3 else
                     " ".join(rng.choices(BASE_WORDS, k=rng.randint(10, 24))).capitalize() + "."
                     for _ in range(rng.randint(2, 5))]
        paragraphs.append(" ".join(sentences))
    return "\n\n".join(paragraphs)


def statements(rng: random.Random, n: int) -> list[str]:
    return [" ".join(rng.choices(BASE_WORDS, k=rng.randint(8, 16))).capitalize() + "." for _ in range(n)]


@contextmanager
def plain_kernels(model):
    """The model's own attention (transformers'), not judges/local/fast.py's, while the authors' procedure runs."""
    patched = [(mod, mod.__dict__["forward"]) for mod in model.modules() if "_plain_forward" in mod.__dict__]
    for mod, _ in patched:
        mod.forward = mod._plain_forward
    try:
        yield
    finally:
        for mod, forward in patched:
            mod.forward = forward


def plain_forward(m, enc):
    """The authors' forward pass and P(supported) (Inferencer.inference), on the plain model."""
    import torch

    if m.kind == "seq2seq":
        zero = torch.zeros((enc["input_ids"].shape[0], 1), dtype=torch.long)
        logits = m.model(input_ids=enc["input_ids"], attention_mask=enc["attention_mask"],
                         decoder_input_ids=zero).logits[:, 0, list(m.answer_ids)]
        return logits.softmax(dim=-1)[:, 1].tolist()
    return m.model(**enc).logits.softmax(dim=-1)[:, m.supported_index].tolist()


def authors_procedure(judge, pages: list[str], claims: list[list[str]]) -> tuple[Timing, list[float]]:
    """The plain float32 procedure as the authors run it: each pair alone, its source cut again, its
    chunks in batches of 16 padded to the longest, transformers' own forward pass, torch.no_grad."""
    import torch

    m = judge._loaded.minicheck
    prefix = local_kinds.MINICHECK_SEQ2SEQ_PREFIX if m.kind == "seq2seq" else ""
    scores: list[float] = []
    t0, c0 = time.perf_counter(), time.process_time()
    with plain_kernels(m.model), torch.no_grad():
        for page, mine in zip(pages, claims):
            for claim in mine:
                chunks = local_kinds.cached_chunks(SourceText.from_text(page), m)
                texts = [local_kinds.minicheck_text(c, claim, judge._loaded.eos, prefix) for c in chunks]
                probs: list[float] = []
                for i in range(0, len(texts), 16):
                    enc = m.tokenizer(texts[i:i + 16], max_length=m.max_length, truncation=True, padding=True,
                                      return_tensors="pt")
                    probs += plain_forward(m, enc)
                scores.append(max(probs))
    return Timing(time.perf_counter() - t0, time.process_time() - c0), scores


def ideal_seconds(judge, pages: list[str], claims: list[list[str]]) -> tuple[Timing, int]:
    """Time of the plain forward passes alone over every text the procedure reads, pre-tokenised,
    longest first in batches of 16 (the authors' batch size, full)."""
    import torch

    m = judge._loaded.minicheck
    prefix = local_kinds.MINICHECK_SEQ2SEQ_PREFIX if m.kind == "seq2seq" else ""
    texts = [local_kinds.minicheck_text(c, s, judge._loaded.eos, prefix)
             for page, mine in zip(pages, claims) for c in local_kinds.cached_chunks(SourceText.from_text(page), m)
             for s in mine]
    texts.sort(key=len, reverse=True)
    batches = [m.tokenizer(texts[i:i + 16], max_length=m.max_length, truncation=True, padding=True,
                           return_tensors="pt") for i in range(0, len(texts), 16)]
    t0, c0 = time.perf_counter(), time.process_time()
    with plain_kernels(m.model), torch.inference_mode():
        for enc in batches:
            plain_forward(m, enc)
    return Timing(time.perf_counter() - t0, time.process_time() - c0), len(texts)


@dataclass(frozen=True)
class Timing:
    wall: float
    cpu: float     # all threads of this process


async def timed(judge, pages: list[str], claims: list[list[str]], one_by_one: bool) -> tuple[Timing, list]:
    verdicts: list = []
    t0, c0 = time.perf_counter(), time.process_time()
    for page, mine in zip(pages, claims):
        if one_by_one:    # the authors' order: each pair alone, its source cut again
            for claim in mine:
                verdicts += await judge.verify_many([(claim, SourceText.from_text(page))])
        else:
            source = SourceText.from_text(page)
            verdicts += await judge.verify_many([(claim, source) for claim in mine])
    return Timing(time.perf_counter() - t0, time.process_time() - c0), verdicts


THREADS = 2


def line(name: str, t: Timing, pairs: int, ideal: Timing) -> str:
    free = t.cpu / THREADS     # the wall time on free cores, if the threads kept them busy
    return (f"  {name:36} wall {t.wall:6.1f} s {pairs / t.wall:6.3f} pairs/s x{t.wall / ideal.wall:4.2f} "
            f"audit {AUDIT_PAIRS * t.wall / pairs / 60:5.1f} min | CPU/{THREADS} {free:6.1f} s "
            f"{pairs / free:6.3f} pairs/s x{t.cpu / ideal.cpu:4.2f} audit {AUDIT_PAIRS * free / pairs / 60:5.1f} min")


async def loaded(folder: Path, threads: int, **options) -> tuple:
    """A judge, loaded (an ONNX export is written on first use: its seconds are printed, not timed)."""
    t0 = time.perf_counter()
    judge = from_spec(str(folder), device="cpu", threads=threads, **options)
    await judge.load()
    return judge, time.perf_counter() - t0


async def measure(kind: str, folder: Path, pages: list[str], claims: list[list[str]], threads: int,
                  size: str) -> None:
    t0 = time.perf_counter()
    if not (folder / "config.json").is_file():
        build_minicheck_model(folder, kind, size=size)
        print(f"{NAMES[kind]}: built and saved in {time.perf_counter() - t0:.0f} s", flush=True)
    pairs = sum(len(c) for c in claims)
    judge, _ = await loaded(folder, threads, runtime="torch")
    await timed(judge, pages[:1], [claims[0][:1]], one_by_one=False)       # warm-up
    before, plain = authors_procedure(judge, pages, claims)
    after, batched = await timed(judge, pages, claims, one_by_one=False)
    ideal, texts = ideal_seconds(judge, pages, claims)
    labels = [s > 0.5 for s in plain]

    def same(verdicts) -> str:
        equal = labels == [v.label.value == "supported" for v in verdicts]
        return (f"labels {'unchanged' if equal else 'CHANGED'}, scores within "
                f"{max(abs(a - b.score) for a, b in zip(plain, verdicts)):.1e}")

    print(f"{NAMES[kind]}: {pairs} pairs, {texts} chunk texts ({texts / pairs:.1f} a pair), max length "
          f"{judge._loaded.max_length}, {threads} threads")
    print(line("before: authors' float32, a pair at a time", before, pairs, ideal))
    print(line("ideal: plain forward passes, batches of 16", ideal, pairs, ideal))
    print(line("after: float32 PyTorch, batched by length", after, pairs, ideal)
          + f"  {before.wall / after.wall:4.2f}x (CPU {before.cpu / after.cpu:4.2f}x) faster; {same(batched)}",
          flush=True)
    rows = [("float32 PyTorch", after)]
    del judge
    gc.collect()
    if kind in ("t5", "deberta"):
        onnx, took = await loaded(folder, threads, runtime="onnx")
        await timed(onnx, pages[:1], [claims[0][:1]], one_by_one=False)
        fp32, scored = await timed(onnx, pages, claims, one_by_one=False)
        print(line("after: float32 ONNX Runtime", fp32, pairs, ideal)
              + f"  {before.wall / fp32.wall:4.2f}x (CPU {before.cpu / fp32.cpu:4.2f}x) faster; {same(scored)}; "
                f"loaded in {took:.0f} s", flush=True)
        rows.append(("float32 ONNX Runtime", fp32))
        del onnx
        gc.collect()
    fast, took = await loaded(folder, threads, quantize="int8")     # runtime=auto: what `quantize=int8` runs
    m = fast._loaded.minicheck
    fast._loaded.minicheck = replace(m, exact_model=None)        # time the int8 passes alone
    await timed(fast, pages[:1], [claims[0][:1]], one_by_one=False)
    int8, quantized = await timed(fast, pages, claims, one_by_one=False)
    near = sum(abs(v.score - 0.5) < local_kinds.INT8_RECHECK_BAND for v in quantized)
    where = "ONNX Runtime" if m.runtime == "onnx" else "PyTorch"
    print(line(f"after: int8 {where}", int8, pairs, ideal)
          + f"  {before.wall / int8.wall:4.2f}x (CPU {before.cpu / int8.cpu:4.2f}x) faster; {same(quantized)} "
            f"before the float32 re-check of {near}/{pairs} pairs near 0.5 here (random weights score near "
            f"0.5; each such chunk text costs one float32 text, {after.cpu / THREADS / texts:.1f} s); "
            f"loaded in {took:.0f} s", flush=True)
    rows.append((f"int8 {where}", int8))
    name, best = min(rows, key=lambda r: r[1].cpu)
    ratio = before.cpu / best.cpu
    print(f"  = {NAMES[kind]}, CPU/{THREADS}: before {pairs * THREADS / before.cpu:.3f} pairs/s, "
          f"{AUDIT_PAIRS * before.cpu / THREADS / pairs / 60:.1f} min an audit; after ({name}) "
          f"{pairs * THREADS / best.cpu:.3f} pairs/s, {AUDIT_PAIRS * best.cpu / THREADS / pairs / 60:.1f} min; "
          f"ideal {pairs * THREADS / ideal.cpu:.3f} pairs/s, {AUDIT_PAIRS * ideal.cpu / THREADS / pairs / 60:.1f} min; "
          f"{ratio:.2f}x faster: target 2x {'met' if ratio >= 2 else 'NOT met'}", flush=True)
    del fast
    gc.collect()


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--kinds", default="roberta,deberta,t5")
    parser.add_argument("--quick", action="store_true", help="one 5 KB source, 2 statements")
    parser.add_argument("--sources", type=int, default=1)
    parser.add_argument("--statements", type=int, default=5)
    parser.add_argument("--page-kb", type=float, default=7.5)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--size", default="large", choices=("large", "tiny"), help="tiny: a smoke test")
    parser.add_argument("--models", default="", help="a folder to keep the built models in (built once)")
    args = parser.parse_args()
    if args.quick:
        args.sources, args.statements, args.page_kb = 1, 2, 5.0
    import torch

    global THREADS
    THREADS = args.threads
    torch.set_num_threads(args.threads)
    rng = random.Random(7)
    pages = [synthetic_page(rng, args.page_kb + (i % 3) * 1.25) for i in range(args.sources)]
    claims = [statements(rng, args.statements) for _ in pages]
    print(f"MiniCheck-sized checkers on CPU, {args.threads} threads, {args.sources} source(s) of "
          f"{', '.join(f'{len(p) / 1000:.1f}' for p in pages)} KB, {args.statements} statements a source")
    with tempfile.TemporaryDirectory() as tmp:
        for kind in [k.strip() for k in args.kinds.split(",") if k.strip()]:
            where = Path(args.models or tmp) / f"minicheck-{kind}-{args.size}"
            await measure(kind, where, pages, claims, args.threads, args.size)


if __name__ == "__main__":
    asyncio.run(main())
