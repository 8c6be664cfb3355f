"""How fast the local-model judge runs on CPU, with models built from a config.

    .venv/bin/python bench/local_judge.py [--sizes tiny,small,base] [--pairs 16] [--max-windows 8]

No real NLI model can be downloaded here, so each size is a randomly initialised BERT
classifier with the shape of a real one (weights do not change the cost):
  tiny   1 layer,   32 hidden   (the oracle used in tests)
  small  6 layers, 384 hidden   (MiniLM-sized NLI cross-encoders)
  base  12 layers, 768 hidden   (DeBERTa-v3-base / RoBERTa-base / MiniCheck-RoBERTa-large is ~3x this)
Sources are synthetic medical pages of about 7,000 tokens (the paper's mean source was
6,905), so every pair is pre-ranked by BM25 and scored over ``--max-windows`` passages.
Prints, per size: pairs, windows scored, median wall time of ``--repeats`` rounds after a
warm-up round, pairs/s and windows/s (model load time apart).
"""
from __future__ import annotations

import argparse
import asyncio
import random
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sourcecheckup.evidence import approx_tokens  # noqa: E402
from sourcecheckup.evidence import SourceText  # noqa: E402
from sourcecheckup.judges.local import from_spec  # noqa: E402
from tests.support.tiny_model import BASE_WORDS, build_random_model  # noqa: E402

SIZES = {
    "tiny": dict(hidden_size=32, layers=1, heads=1, intermediate=32),
    "small": dict(hidden_size=384, layers=6, heads=12, intermediate=1536),
    "base": dict(hidden_size=768, layers=12, heads=12, intermediate=3072),
}
FIXTURE = ROOT / "tests" / "fixtures" / "local_judge" / "hemochromatosis.txt"


def synthetic_page(rng: random.Random, target_tokens: int = 7000) -> str:
    """Real sentences from the test page mixed with word-salad sentences, in paragraphs."""
    real = [s.strip() + "." for s in FIXTURE.read_text().replace("\n", " ").split(". ") if s.strip()]
    paragraphs, text_len = [], 0
    while text_len < target_tokens * 4:
        sentences = []
        for _ in range(rng.randint(2, 5)):
            if rng.random() < 0.3:
                sentences.append(rng.choice(real))
            else:
                words = rng.choices(BASE_WORDS, k=rng.randint(10, 24))
                sentences.append(" ".join(words).capitalize() + ".")
        paragraph = " ".join(sentences)
        paragraphs.append(paragraph)
        text_len += len(paragraph) + 2
    return "\n\n".join(paragraphs)


def statements(rng: random.Random, n: int) -> list[str]:
    return [" ".join(rng.choices(BASE_WORDS, k=rng.randint(8, 16))).capitalize() + "." for _ in range(n)]


async def measure(size: str, pairs_n: int, max_windows: int, batch_size: int, folder: Path,
                  repeats: int) -> str:
    build_random_model(folder, max_length=512, **SIZES[size])
    judge = from_spec(str(folder), max_windows=max_windows, batch_size=batch_size, device="cpu")
    t0 = time.perf_counter()
    await judge.load()
    load_s = time.perf_counter() - t0
    rng = random.Random(7)
    texts = [synthetic_page(rng) for _ in range(4)]
    claims = statements(rng, pairs_n)
    walls = []
    for _ in range(repeats + 1):   # the first round warms torch up and is not counted
        # fresh sources each round: cutting passages and the BM25 index count as work
        pages = [SourceText.from_text(t) for t in texts]
        pairs = [(c, pages[i % len(pages)]) for i, c in enumerate(claims)]
        t0 = time.perf_counter()
        verdicts = await judge.verify_many(pairs)
        walls.append(time.perf_counter() - t0)
    wall = statistics.median(walls[1:])
    windows = sum(int(v.rationale.split("best of ")[1].split()[0]) for v in verdicts if "best of " in v.rationale)
    errors = sum(v.label.value == "judge_error" for v in verdicts)
    page_tokens = sum(approx_tokens(p.text) for p in pages) // len(pages)
    return (f"{size:6} {pairs_n:6d} {windows:8d} {page_tokens:7d} {load_s:7.2f} {wall:8.2f} "
            f"{pairs_n / wall:8.2f} {windows / wall:9.1f} {errors:6d}")


async def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="tiny,small,base")
    parser.add_argument("--pairs", type=int, default=16)
    parser.add_argument("--max-windows", type=int, default=8)
    parser.add_argument("--batch-size", type=int, default=16)
    parser.add_argument("--repeats", type=int, default=3, help="timed rounds; the median is printed")
    args = parser.parse_args()
    import torch

    print(f"local judge on CPU ({torch.get_num_threads()} threads), max_windows={args.max_windows}, "
          f"batch_size={args.batch_size}")
    print(f"{'size':6} {'pairs':>6} {'windows':>8} {'page_tok':>7} {'load_s':>7} {'wall_s':>8} "
          f"{'pairs/s':>8} {'windows/s':>9} {'errors':>6}")
    with tempfile.TemporaryDirectory() as tmp:
        for size in [s.strip() for s in args.sizes.split(",") if s.strip()]:
            print(await measure(size, args.pairs, args.max_windows, args.batch_size, Path(tmp) / size,
                                  args.repeats), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
