"""How fast the screen's exact checks read one statement against its sentences (moved from the unit suite:
performance targets live in benches).

    .venv/bin/python bench/checks_speed.py [--pairs 2000]

Prints the time a statement x sentence pair takes in each check (overclaims, polarity, quantities), and
each as a ratio to the 1 ms budget a check has per pair (target: well under 1).
"""
from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Callable, Sequence

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from sourcecheckup.checks import overclaims, polarity, quantities  # noqa: E402

BUDGET_MS = 1.0
SENTENCES = (
    "Topical NSAIDs such as ibuprofen gel are absorbed through the skin and may still interact with warfarin.",
    "Ask a pharmacist before using an ibuprofen gel if you take warfarin; bleeding is less likely than with tablets.",
    "Do not take more than 1,200mg (six 200mg tablets) of ibuprofen in 24 hours without a prescription.",
)
STATEMENT = "Topical NSAID gels {i} are completely safe with warfarin and up to 2,400 mg a day needs no precautions"


def per_pair_ms(check: Callable[[str, Sequence[str]], object], pairs: int) -> float:
    statements = [STATEMENT.format(i=i) for i in range(pairs)]
    check(statements[0], [SENTENCES[0]])      # warm the rule tables
    started = time.perf_counter()
    for i, s in enumerate(statements):
        check(s, [SENTENCES[i % len(SENTENCES)] + f" {i}"])
    return (time.perf_counter() - started) * 1000 / pairs


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--pairs", type=int, default=2000)
    args = ap.parse_args(argv)
    for name, check in (("overclaims", overclaims.compare_overclaim), ("polarity", polarity.compare_polarity),
                        ("quantities", quantities.compare_quantities)):
        ms = per_pair_ms(check, args.pairs)
        print(f"{name:<11} {ms:.3f} ms a pair; ratio to the {BUDGET_MS:.0f} ms budget {ms / BUDGET_MS:.2f}"
              f" ({'meets' if ms < BUDGET_MS else 'misses'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
