"""``merge``: the runs of several databases (one batch split between audit processes) as one run."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .common import EXIT_OK, UsageError, opened, shown
from .runs import headline_report, print_headline


def add_command(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("merge", parents=[common],
                       help="merge the runs of several databases (a batch split between processes) into one run")
    p.add_argument("databases", nargs="+", metavar="DB",
                   help="OUT.db IN1.db IN2.db ...: the database that receives the merged run (created if missing), "
                        "then the databases to merge in input order; with --db, every DB given is an input. Each "
                        "input gives its latest run, or IN.db@RUN names one")
    p.add_argument("--run-name", default="", metavar="NAME", help="a name for the merged run")
    p.add_argument("--force", action="store_true",
                   help="merge runs whose judges, prompt versions, parser or consensus differ, or merge again runs already "
                        "merged into OUT.db (both recorded in the run)")
    p.set_defaults(func=cmd_merge)


def _input(spec: str) -> Any:
    """IN.db, or IN.db@RUN when IN.db@RUN is not itself a file."""
    from ..store.merge import MergeInput

    path, at, run = spec.rpartition("@")
    if at and path and not Path(spec).exists():
        return MergeInput(Path(path), run)
    return MergeInput(Path(spec))


def cmd_merge(args: argparse.Namespace) -> int:
    from .. import __version__
    from ..store import Store, StoreError
    from ..store.merge import AlreadyMerged, MergeError, merge_runs

    output, inputs = (Path(args.db), args.databases) if args.db else (Path(args.databases[0]), args.databases[1:])
    specs = [_input(s) for s in inputs]
    if len(specs) < 2:
        raise UsageError("give at least two databases to merge: sourcecheckup merge OUT.db IN1.db IN2.db ... "
                         "(or --db OUT.db IN1.db IN2.db ...)")
    for spec in specs:   # before the output is created: a typo must not leave an empty database behind
        if not spec.path.is_file():
            raise UsageError(f"{spec.path}: no such database")
    try:
        store = opened(Store(output))
    except StoreError as exc:
        raise UsageError(str(exc)) from exc
    try:
        result = merge_runs(store, specs, run_name=args.run_name, force=args.force, app_version=__version__)
    except AlreadyMerged as exc:   # a rerun (say after a kill past the commit) writes nothing twice
        print(str(exc))
        print_headline(headline_report(store, exc.run_id))
        return EXIT_OK
    except MergeError as exc:
        raise UsageError(str(exc)) from exc
    print(f"merged {len(specs)} runs into run {result.run_id} in {output} ({result.order} order): "
          f"{result.responses} responses, {result.statements} statements, {result.verdicts} verdicts, "
          f"{result.sources_copied} sources copied, {result.sources_shared} identical ones stored once")
    for line in result.differences:
        print(f"warning: merged despite: {shown(line, lines=True)}", file=sys.stderr)
    for line in result.source_conflicts:
        print(f"warning: {shown(line, lines=True)}", file=sys.stderr)
    print_headline(headline_report(store, result.run_id))
    return EXIT_OK
