"""How well the built-in judge screens labelled health claims.

    .venv/bin/python bench/judge_accuracy.py [--data DIR] [--judge builtin] [--long-sources]

For each file in DIR (default ../shared/data/claims, next to the repository) it judges every
claim against its evidence text and prints n, balanced accuracy (supported vs not), accuracy,
the accuracy on each original label (SUPPORT / REFUTE / NOTENOUGHINFO, Supports / Refutes /
Neutral ...) and the threshold. Training files are marked "(train)": figures on them are
optimistic. The data is only read here; nothing is copied into the project.

``--long-sources`` adds a line per Check-COVID file where the source is the paper's whole
abstract (title + abstract) instead of the 1-3 evidence sentences, to show how the judge
fares when it has to find the evidence in a longer text.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from sourcecheckup.judges import make_judge  # noqa: E402
from sourcecheckup.judges.base import SourceText  # noqa: E402
from sourcecheckup.models import Label, Verdict  # noqa: E402

DEV_FILES = ("check_covid_dev.jsonl", "healthver_dev.jsonl")
TRAIN_FILES = ("check_covid_train.jsonl", "scifact_train.jsonl")


def read_rows(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


def judge_rows(judge: Any, rows: Sequence[dict[str, Any]], source_field: str) -> list[Verdict]:
    pairs = [(r["claim"], SourceText.from_text(_source_text(r, source_field))) for r in rows]
    if hasattr(judge, "score_pairs"):
        return judge.score_pairs(pairs)
    import asyncio

    return asyncio.run(judge.verify_many(pairs))


def _source_text(row: dict[str, Any], field: str) -> str:
    if field == "abstract":
        title = row.get("source_title") or ""
        return f"{title}\n\n{row.get('source_abstract') or ''}".strip()
    return row["evidence"]


def summarise(rows: Sequence[dict[str, Any]], verdicts: Sequence[Verdict]) -> dict[str, Any]:
    by_label: dict[str, list[bool]] = defaultdict(list)
    tp = fn = tn = fp = errors = 0
    for r, v in zip(rows, verdicts):
        if v.label is Label.JUDGE_ERROR:
            errors += 1
        said = v.label is Label.SUPPORTED
        truth = r["binary_label"] == "supported"
        by_label[r["label"]].append(said == truth)
        tp += said and truth
        fn += (not said) and truth
        tn += (not said) and not truth
        fp += said and not truth
    tpr = tp / (tp + fn) if tp + fn else 0.0
    tnr = tn / (tn + fp) if tn + fp else 0.0
    return {"n": len(rows), "balanced_accuracy": (tpr + tnr) / 2,
            "accuracy": (tp + tn) / max(1, len(rows)), "errors": errors,
            "per_label": {k: (sum(v) / len(v), len(v)) for k, v in sorted(by_label.items())}}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "claims",
                    help="folder with the claims *.jsonl files (default: %(default)s)")
    ap.add_argument("--judge", default="builtin", help="judge spec (default: builtin)")
    ap.add_argument("--long-sources", action="store_true",
                    help="also judge Check-COVID claims against the whole abstract")
    ap.add_argument("--no-train", action="store_true", help="skip the training files")
    ap.add_argument("--lexical", action="store_true",
                    help="builtin judge without the embedding model (as when it is not installed)")
    args = ap.parse_args(argv)

    if not args.data.is_dir():
        print(f"no data folder at {args.data}; pass --data DIR", file=sys.stderr)
        return 2
    judge = make_judge(args.judge, use_embeddings=False) if args.lexical else make_judge(args.judge)
    print(f"judge {judge.id} ({getattr(judge, 'model_version', '')}), "
          f"threshold {getattr(judge, 'threshold', 'n/a')}")
    jobs: list[tuple[str, str, bool]] = [(f, "evidence", False) for f in DEV_FILES]
    if not args.no_train:
        jobs += [(f, "evidence", True) for f in TRAIN_FILES]
    if args.long_sources:
        jobs += [(f, "abstract", f in TRAIN_FILES) for f in ("check_covid_dev.jsonl", "check_covid_train.jsonl")]
    header = f"{'file':<40} {'n':>5} {'bal.acc':>8} {'acc':>6}  per original label"
    print(header)
    print("-" * len(header))
    for name, field, is_train in jobs:
        path = args.data / name
        if not path.exists():
            print(f"{name:<40} missing, skipped")
            continue
        rows = read_rows(path)
        if field == "abstract":
            rows = [r for r in rows if r.get("source_abstract")]
        started = time.monotonic()
        s = summarise(rows, judge_rows(judge, rows, field))
        label = name + (" (train)" if is_train else "") + (" [abstract]" if field == "abstract" else "")
        per = "  ".join(f"{k} {acc:.3f} (n={n})" for k, (acc, n) in s["per_label"].items())
        extra = f"  errors {s['errors']}" if s["errors"] else ""
        print(f"{label:<40} {s['n']:>5} {s['balanced_accuracy']:>8.3f} {s['accuracy']:>6.3f}  {per}{extra}"
              f"  [{time.monotonic() - started:.0f} s]", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
