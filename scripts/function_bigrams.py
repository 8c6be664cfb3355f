"""Write the pairs of function words that English text puts side by side (``resources/judges/function_bigrams.json``).

    .venv/bin/python scripts/function_bigrams.py [--data ../shared/data/claims]

The built-in judge's word-salad gate (``judges/builtin/support_gates.word_salad``) counts, in the sentences
closest to a statement, the pairs of adjacent function words that real text does not write ("the of", "with
in"). Real text here: the evidence of the training files (never WiCE dev, Check-COVID dev or HealthVer); a
pair is plausible when it occurs at least three times there.
"""
from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sourcecheckup.judges.builtin.support_gates import FUNCTION_WORDS, salad_tokens  # noqa: E402

FILES = ("snli_dev.jsonl", "vitaminc_real_test.jsonl", "fm2_dev.jsonl", "scifact_train.jsonl",
         "check_covid_train.jsonl", "wice_train_partial.jsonl")
MIN_COUNT = 3


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "claims")
    args = ap.parse_args(argv)
    counts: Counter[str] = Counter()
    for name in FILES:
        with (args.data / name).open(encoding="utf-8") as fh:
            for line in fh:
                t = salad_tokens(json.loads(line)["evidence"][:20000])
                counts.update(f"{a} {b}" for a, b in zip(t, t[1:]) if a in FUNCTION_WORDS and b in FUNCTION_WORDS)
    pairs = sorted(p for p, n in counts.items() if n >= MIN_COUNT)
    out = ROOT / "resources" / "judges" / "function_bigrams.json"
    out.write_text(json.dumps({"files": list(FILES), "min_count": MIN_COUNT, "pairs": pairs}, indent=0) + "\n",
                   encoding="utf-8")
    print(f"{len(pairs)} plausible pairs of function words -> {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
