"""``sourcecheckup judges compare``: which of a run's judges agrees best with the reviewers."""
from __future__ import annotations

import argparse
import json
from typing import Any

from .common import EXIT_OK, UsageError, open_store, pick_run


def cmd_judges_compare(args: argparse.Namespace) -> int:
    from ..review.judge_compare import compare_judges, format_comparison
    from ..store import StoreError

    if args.min_pairs < 1:
        raise UsageError("--min-pairs must be at least 1")
    store = open_store(args)
    run_id = pick_run(store, args.run)
    try:
        result = compare_judges(store, run_id, min_pairs=args.min_pairs)
    except StoreError as exc:
        raise UsageError(str(exc)) from exc
    if args.json:
        print(json.dumps(result.as_dict(), indent=2, ensure_ascii=False))
    else:
        print(format_comparison(result))
    return EXIT_OK


def add_compare_command(judges_sub: Any, common: argparse.ArgumentParser) -> None:
    """``judges compare`` under the ``judges`` command group (which takes ``--db`` too)."""
    from ..review.judge_compare import MIN_PAIRS

    p = judges_sub.add_parser(
        "compare",
        help="each judge of a run against the reviewers' majority: agreement, kappa, balanced accuracy, "
             "the pairs they disagree on, and the judge to trust")
    # --db here too, defaulting to nothing, so `judges --db X compare` keeps the X the group read
    db = next(a for a in common._actions if "--db" in a.option_strings)
    p.add_argument("--db", metavar="PATH", default=argparse.SUPPRESS, help=db.help)
    p.add_argument("run", nargs="?", help="run id (default: the latest)")
    p.add_argument("--min-pairs", type=int, default=MIN_PAIRS,
                   help=f"reviewed pairs a judge needs before it can be recommended (default {MIN_PAIRS})")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.set_defaults(func=cmd_judges_compare)
