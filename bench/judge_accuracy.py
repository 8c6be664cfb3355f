"""How well the built-in judge screens labelled health claims.

    .venv/bin/python bench/judge_accuracy.py [--data DIR] [--judge builtin] [--long-sources]
                                             [--clinical PATH | --no-clinical]
                                             [--heldout PATH | --no-heldout] [--only-clinical]

First it judges the project's own clinical suite (bench/data/clinical_pairs.jsonl, see
bench/data/README.md): hand-written near-miss pairs on doses, maximum doses, frequencies,
durations, timing, thresholds, rates, unit conversions, instructions and overclaims. It prints
n, balanced accuracy, accuracy, the accuracy in each category, and every contradicted quantity
that the judge called supported (the error a screen must not make), beside the targets of
issue 11 (balanced >= 0.95, no contradicted quantity called supported).

Next it judges the held-out suite (bench/data/clinical_heldout.jsonl): pairs of the same ten
kinds, written separately with other medicines and conditions, that no one tunes a judge on, so
its figures say how the judge does on pairs it was never adjusted to. It prints the same
figures under the label "held-out (never tuned on)". The clinical part ends with one line per
suite for scripts, the held-out one last but one:
``heldout: balanced 0.xxx; false-supported quantities K`` and
``clinical: balanced 0.xxx; false-supported quantities K``. ``--only-clinical`` judges both
suites and not the claim files.

Then, for each file in DIR (default ../shared/data/claims, next to the repository) it judges every
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

from sourcecheckup.evidence import SourceText  # noqa: E402
from sourcecheckup.judges import make_judge  # noqa: E402
from sourcecheckup.judges.builtin.explanation import rationale_contradicts_label  # noqa: E402
from sourcecheckup.models import Label, Verdict  # noqa: E402

CLINICAL_FILE = ROOT / "bench" / "data" / "clinical_pairs.jsonl"
# written apart from the clinical suite and never used to adjust a judge (bench/data/README.md)
HELDOUT_FILE = ROOT / "bench" / "data" / "clinical_heldout.jsonl"
HELDOUT_TITLE = "held-out (never tuned on)"
# categories of the clinical suite whose claims state a quantity that can be compared exactly
QUANTITY_CATEGORIES = frozenset({"dose", "max_dose", "frequency", "duration", "timing",
                                 "threshold", "rate", "unit_conversion"})
CLINICAL_TARGET_BALANCED = 0.95
CLINICAL_TARGET_FALSE_SUPPORTED = 0

# WiCE first: real Wikipedia sentences and the whole web page each cites (the closest data to an answer and
# its cited page); the completeness gate was trained on it, so its cross-validated figure is printed beside
WICE_FILE = "wice_dev.jsonl"
DEV_FILES = (WICE_FILE, "check_covid_dev.jsonl", "healthver_dev.jsonl")
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
    tp = fn = tn = fp = errors = unflagged = conflicts = 0
    for r, v in zip(rows, verdicts):
        conflicts += rationale_contradicts_label(v.label, v.rationale)
        if v.label is Label.JUDGE_ERROR:
            errors += 1
        said = v.label is Label.SUPPORTED
        truth = r["binary_label"] == "supported"
        by_label[r.get("label") or r.get("wice_label", "?")].append(said == truth)
        tp += said and truth
        fn += (not said) and truth
        tn += (not said) and not truth
        fp += said and not truth
        unflagged += said and not truth and not v.review_first
    tpr = tp / (tp + fn) if tp + fn else 0.0
    tnr = tn / (tn + fp) if tn + fp else 0.0
    return {"n": len(rows), "balanced_accuracy": (tpr + tnr) / 2,
            "accuracy": (tp + tn) / max(1, len(rows)), "errors": errors,
            # not-supported pairs passed as supported, and those of them not marked "review first"
            "passed": fp / max(1, tn + fp), "passed_unflagged": unflagged / max(1, tn + fp),
            "conflicts": conflicts,   # verdicts whose rationale says the opposite of their label (target 0)
            "per_label": {k: (sum(v) / len(v), len(v)) for k, v in sorted(by_label.items())}}


def summarise_clinical(rows: Sequence[dict[str, Any]], verdicts: Sequence[Verdict]) -> dict[str, Any]:
    """The figures for the clinical suite: ``summarise`` plus each category and the false-supported
    quantities (not_supported rows of a quantity category that the judge labelled supported)."""
    s = summarise(rows, verdicts)
    by_category: dict[str, dict[str, list[int]]] = defaultdict(
        lambda: {"supported": [0, 0], "not_supported": [0, 0]})
    false_supported: list[str] = []
    for r, v in zip(rows, verdicts):
        said = v.label is Label.SUPPORTED
        truth = r["binary_label"]
        cell = by_category[r["category"]][truth]
        cell[0] += said == (truth == "supported")
        cell[1] += 1
        if said and truth == "not_supported" and r["category"] in QUANTITY_CATEGORIES:
            false_supported.append(r["id"])
    s["per_category"] = {k: by_category[k] for k in sorted(by_category)}
    s["false_supported_quantities"] = false_supported
    return s


def format_clinical(s: dict[str, Any], path: Path, title: str = "clinical suite",
                    key: str = "clinical") -> list[str]:
    """The suite's report lines; the last one is the line for scripts, ``{key}: balanced ...``."""
    def meets(ok: bool) -> str:
        return "meets" if ok else "misses"

    bal, fs = s["balanced_accuracy"], s["false_supported_quantities"]
    extra = f", judge errors {s['errors']} (counted as not supported)" if s["errors"] else ""
    extra += f", RATIONALE CONTRADICTS LABEL {s['conflicts']}" if s["conflicts"] else ""
    lines = [f"{title} {path}",
             f"  n {s['n']}  balanced accuracy {bal:.3f} (target >= {CLINICAL_TARGET_BALANCED:.2f}: "
             f"{meets(bal >= CLINICAL_TARGET_BALANCED)})  accuracy {s['accuracy']:.3f}{extra}",
             "  per category:"]
    for cat, cells in s["per_category"].items():
        (ok_s, n_s), (ok_n, n_n) = cells["supported"], cells["not_supported"]
        acc = (ok_s + ok_n) / max(1, n_s + n_n)
        lines.append(f"    {cat:<16} {acc:.3f} (n={n_s + n_n}; supported {ok_s}/{n_s}, "
                     f"not supported {ok_n}/{n_n})")
    lines.append(f"  contradicted quantity called supported: {len(fs)} "
                 f"(target {CLINICAL_TARGET_FALSE_SUPPORTED}: "
                 f"{meets(len(fs) <= CLINICAL_TARGET_FALSE_SUPPORTED)})"
                 + (f": {' '.join(fs)}" if fs else ""))
    lines.append(f"{key}: balanced {bal:.3f}; false-supported quantities {len(fs)}")
    return lines


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
    ap.add_argument("--clinical", type=Path, default=CLINICAL_FILE, metavar="PATH",
                    help="the clinical suite, judged first (default: %(default)s)")
    ap.add_argument("--no-clinical", action="store_true", help="skip the clinical suite")
    ap.add_argument("--heldout", type=Path, default=HELDOUT_FILE, metavar="PATH",
                    help="the held-out suite, never tuned on, judged next (default: %(default)s)")
    ap.add_argument("--no-heldout", action="store_true", help="skip the held-out suite")
    ap.add_argument("--only-clinical", action="store_true",
                    help="judge the clinical and held-out suites only, not the claim files")
    ap.add_argument("--vetoes", default=None, metavar="KIND,KIND",
                    help="built-in judge: only these exact checks and gates veto the reader ('' for none; "
                         "default: all of judges/builtin/judge.py's VETOES)")
    ap.add_argument("--files", default="", metavar="NAME,NAME",
                    help="judge only these claim files of DIR (e.g. wice_dev.jsonl)")
    args = ap.parse_args(argv)
    if args.no_clinical and args.only_clinical:
        ap.error("--no-clinical and --only-clinical exclude each other")

    run_files = not args.only_clinical
    suites = [(path, title, key) for path, title, key, skip in (
        (args.clinical, "clinical suite", "clinical", args.no_clinical),
        (args.heldout, HELDOUT_TITLE, "heldout", args.no_heldout)) if not skip]
    if run_files and not args.data.is_dir() and not suites:
        print(f"no data folder at {args.data}; pass --data DIR", file=sys.stderr)
        return 2
    if not args.no_clinical and not args.clinical.is_file():
        print(f"no clinical suite at {args.clinical}; pass --clinical PATH or --no-clinical",
              file=sys.stderr)
        return 2
    if not args.no_heldout and not args.heldout.is_file():
        print(f"no held-out suite at {args.heldout}; pass --heldout PATH or --no-heldout",
              file=sys.stderr)
        return 2
    options: dict[str, Any] = {"use_embeddings": False} if args.lexical else {}
    if args.vetoes is not None:
        options["vetoes"] = frozenset(v.strip() for v in args.vetoes.split(",") if v.strip())
    judge = make_judge(args.judge, **options)
    print(f"judge {judge.id} ({getattr(judge, 'model_version', '')}), "
          f"threshold {getattr(judge, 'threshold', 'n/a')}")
    script_lines: list[str] = []
    for path, title, key in suites:
        rows = read_rows(path)
        started = time.monotonic()
        s = summarise_clinical(rows, judge_rows(judge, rows, "evidence"))
        *lines, script_line = format_clinical(s, path, title, key)
        lines[0] += f"  [{time.monotonic() - started:.0f} s]"
        print("\n".join(lines), flush=True)
        script_lines.append(script_line)
    # the clinical suite's line stays the last one, where scripts already read it
    for line in sorted(script_lines, key=lambda line: line.startswith("clinical:")):
        print(line)
    if not run_files:
        return 0
    if not args.data.is_dir():
        print(f"no data folder at {args.data}; pass --data DIR", file=sys.stderr)
        return 2
    if suites:
        print()
    jobs: list[tuple[str, str, bool]] = [(f, "evidence", False) for f in DEV_FILES]
    if args.files:
        wanted = {f.strip() for f in args.files.split(",") if f.strip()}
        jobs = [(f, "evidence", f in TRAIN_FILES) for f in (*DEV_FILES, *TRAIN_FILES) if f in wanted]
        args.no_train = True
    if not args.no_train:
        jobs += [(f, "evidence", True) for f in TRAIN_FILES]
    if args.long_sources:
        jobs += [(f, "abstract", f in TRAIN_FILES) for f in ("check_covid_dev.jsonl", "check_covid_train.jsonl")]
    header = (f"{'file':<40} {'n':>5} {'bal.acc':>8} {'acc':>6} {'ns->sup':>8} {'no-flag':>8}  per original label"
              "  (ns->sup: not-supported pairs called supported; no-flag: of them without 'review first')")
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
        verdicts = judge_rows(judge, rows, field)
        s = summarise(rows, verdicts)
        label = name + (" (train)" if is_train else "") + (" [abstract]" if field == "abstract" else "")
        per = "  ".join(f"{k} {acc:.3f} (n={n})" for k, (acc, n) in s["per_label"].items())
        extra = f"  errors {s['errors']}" if s["errors"] else ""
        extra += f"  RATIONALE CONTRADICTS LABEL {s['conflicts']}" if s["conflicts"] else ""
        print(f"{label:<40} {s['n']:>5} {s['balanced_accuracy']:>8.3f} {s['accuracy']:>6.3f} "
              f"{s['passed']:>8.1%} {s['passed_unflagged']:>8.1%}  {per}{extra}"
              f"  [{time.monotonic() - started:.0f} s]", flush=True)
        if name == WICE_FILE:
            script_lines.append(_wice_line(judge, rows, verdicts, s))
    for line in script_lines[len(suites):]:
        print(line)
    return 0


def _wice_line(judge: Any, rows: Sequence[dict[str, Any]], verdicts: Sequence[Verdict], s: dict[str, Any]) -> str:
    """The WiCE line for scripts, with a cross-validated figure beside the in-sample one: for the screen,
    its completeness gate's (trained on WiCE dev); for ``builtin:reader`` with a page gate (trained on WiCE dev),
    the gate's out-of-fold figure from the reader's card (scripts/train_reader_gate.py); for a reader without
    one, each fifth of the pages judged with the threshold that is best on the other four."""
    if getattr(judge, "use_reader", False) and judge.reader.card.page_gate is not None:
        # the page gate decides on whole pages; it was trained on WiCE dev, so its figure is its out-of-fold one
        fitted = judge.reader.card.data["page_gate"]
        note = (f" (page gate trained on it; 5-fold CV by page {fitted['cv_balanced_accuracy']:.3f}, not supported "
                f"called supported without review first {fitted['cv_not_supported_called_supported_unflagged']:.1%}; "
                f"the reader's weights never trained on it)")
    elif getattr(judge, "use_reader", False):
        cv = cross_validated(rows, verdicts)["balanced_accuracy"]
        data = judge.reader.card.data
        card = data.get("wice_dev_cv_balanced_accuracy")
        trained = "wice_dev.jsonl" not in data.get("never_trained_on", [])
        if not trained:
            own = "; reader never trained on it"
        else:
            own = f"; reader trained on it, its own CV {card:.3f}" if card else ""
        note = f" (threshold by 5-fold CV by page {cv:.3f}{own})"
    else:
        trained = (getattr(getattr(judge, "params", None), "meta", {}) or {}).get("facts_training", {})
        key = "facts" if getattr(judge, "use_embeddings", True) else "facts_lexical"
        gate = trained.get(key, {}).get("cv_balanced_accuracy")
        note = f" (gate trained on it; 5-fold CV {gate:.3f})" if gate is not None else ""
    return (f"wice: balanced {s['balanced_accuracy']:.3f}{note}; not supported called supported "
            f"{s['passed']:.1%}, without review first {s['passed_unflagged']:.1%}")


def cross_validated(rows: Sequence[dict[str, Any]], verdicts: Sequence[Verdict], folds: int = 5,
                    seed: int = 0) -> dict[str, Any]:
    """Balanced accuracy with the threshold on the reader's score chosen on the other folds (split by page)."""
    import hashlib
    import random

    from sourcecheckup.models import decided_by

    pages = sorted({hashlib.sha1(r["evidence"].encode()).hexdigest() for r in rows})
    random.Random(seed).shuffle(pages)
    fold_of = {p: k % folds for k, p in enumerate(pages)}
    fold = [fold_of[hashlib.sha1(r["evidence"].encode()).hexdigest()] for r in rows]
    truth = [r["binary_label"] == "supported" for r in rows]
    by_reader = [decided_by(v.flags) in ("reader", "") and v.label is not Label.JUDGE_ERROR for v in verdicts]

    def predict(t: float, i: int) -> bool:
        return verdicts[i].score >= t if by_reader[i] else verdicts[i].label is Label.SUPPORTED

    def balanced(idx: list[int], t: float) -> float:
        pos = [i for i in idx if truth[i]]
        neg = [i for i in idx if not truth[i]]
        tpr = sum(predict(t, i) for i in pos) / max(1, len(pos))
        tnr = sum(not predict(t, i) for i in neg) / max(1, len(neg))
        return (tpr + tnr) / 2

    grid = [k / 100 for k in range(2, 99)]
    said: list[bool] = [False] * len(rows)
    for k in range(folds):
        train = [i for i in range(len(rows)) if fold[i] != k]
        t = max(grid, key=lambda g: (balanced(train, g), -abs(g - 0.5)))
        for i in range(len(rows)):
            if fold[i] == k:
                said[i] = predict(t, i)
    pos = [i for i in range(len(rows)) if truth[i]]
    neg = [i for i in range(len(rows)) if not truth[i]]
    bal = (sum(said[i] for i in pos) / max(1, len(pos)) + sum(not said[i] for i in neg) / max(1, len(neg))) / 2
    return {"balanced_accuracy": bal}


if __name__ == "__main__":
    raise SystemExit(main())
