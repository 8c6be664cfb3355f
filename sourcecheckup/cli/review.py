"""The reviewer's commands: ``review-sample``, ``review-import``, ``cleanup`` and ``revised``."""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
from pathlib import Path
from typing import Any

from .common import (
    EXIT_FAIL,
    EXIT_OK,
    ProgressPrinter,
    UsageError,
    construction_errors,
    err,
    open_store,
    pick_run,
    shown,
)


def cmd_review_sample(args: argparse.Namespace) -> int:
    from ..review.sample import SampleError, draw_sample, strata_counts, write_sample_csv

    store = open_store(args, reading=True)
    run_id = pick_run(store, args.run)
    if store.read_only:   # drawn in a copy: the same --seed and --n draw the same sample again
        print(f"sourcecheckup: note: the sample is not saved in {store.path} (the database is read-only)",
              file=sys.stderr)
        store = store.in_memory_copy()
    try:
        pairs = draw_sample(store, run_id, args.n, stratify=args.stratify, seed=args.seed, name=args.name,
                            blind=args.blind, allocation=args.allocation)
    except SampleError as exc:
        raise UsageError(str(exc)) from None
    if args.output == "-":
        write_sample_csv(pairs, sys.stdout, blind=args.blind or None)
    elif args.output:
        write_sample_csv(pairs, args.output, blind=args.blind or None)
    strata = ", ".join(f"{k} {v}" for k, v in strata_counts(pairs).items())
    print(f"sample '{pairs[0].sample}' of run {run_id}: {len(pairs)} pairs ({strata})"
          + (f"; written to {args.output}" if args.output and args.output != "-" else ""), file=sys.stderr)
    return EXIT_OK


def cmd_review_import(args: argparse.Namespace) -> int:
    from ..review.sample import SampleError, import_reviews_csv

    path = Path(args.file)
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    store = open_store(args)
    try:
        result = import_reviews_csv(store, path, args.reviewer)
    except SampleError as exc:
        raise UsageError(str(exc)) from None
    for e in result.errors:
        print(f"skipped: {shown(e, lines=True)}", file=sys.stderr)
    grades = f" and {result.grades} answer grade(s)" if result.grades else ""
    print(f"imported {result.imported} review(s){grades} by {args.reviewer.strip()}; {result.unlabelled} row(s) "
          f"without a label; {len(result.errors)} row(s) skipped"
          + (f" (sample {', '.join(result.samples)})" if result.samples else ""))
    return EXIT_FAIL if result.errors and not (result.imported or result.grades) else EXIT_OK


def cmd_cleanup(args: argparse.Namespace) -> int:
    from ..cleanup import CleanupError, run_cleanup, set_decision, suggestions

    store = open_store(args)
    run_id = pick_run(store, args.run)
    if args.accept or args.reject:
        who = args.by or os.environ.get("USER") or os.environ.get("USERNAME") or "cli"
        try:
            for pk in args.accept or []:
                set_decision(store, pk, "accepted", who)
            for pk in args.reject or []:
                set_decision(store, pk, "rejected", who)
        except CleanupError as exc:
            raise UsageError(str(exc)) from exc
        rows = suggestions(store, run_id)
    else:
        try:
            rows = asyncio.run(run_cleanup(store, run_id, model_spec=args.model,
                                           progress=ProgressPrinter(args.quiet)))
        except CleanupError as exc:
            raise UsageError(str(exc)) from exc
        except Exception as exc:
            if isinstance(exc, construction_errors()):
                raise UsageError(str(exc)) from exc
            err(f"cleanup could not complete: {type(exc).__name__}: {exc}")
            return EXIT_FAIL
    labels = store.statement_labels(run_id)
    if not rows:
        print(f"run {run_id}: no unsupported statement with a readable source, so no suggestions")
        return EXIT_OK
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status.value] = counts.get(row.status.value, 0) + 1
    print(f"run {run_id}: {len(rows)} suggestion(s): " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    for row in rows:
        print(f"\n#{row.pk} {labels.get(row.statement_pk, '?')} [{row.status.value}, {row.decision.value}] "
              f"against {shown(row.url)}")
        print(f"   - {shown(row.original)}")
        print(f"   + {shown(row.suggested)}" if row.suggested else "   + (delete the statement)")
        if row.quote:
            print(f"     quote: \"{shown(row.quote)}\"")
    print(f"\naccept or reject: sourcecheckup cleanup {run_id} --accept ID --reject ID; "
          f"then: sourcecheckup revised {run_id} --response RESPONSE")
    return EXIT_OK


def cmd_revised(args: argparse.Namespace) -> int:
    from ..cleanup import CleanupError, revised_answer

    store = open_store(args)
    run_id = pick_run(store, args.run)
    try:
        revised = revised_answer(store, run_id, args.response, accept_verified=args.accept_verified)
    except CleanupError as exc:
        raise UsageError(str(exc)) from exc
    repaired: list[int] = []
    if getattr(args, "repairs", False):
        revised, repaired = _with_repairs(store, run_id, revised)
    if args.json:
        print(json.dumps({"response": revised.response_id, "original": revised.original,
                          "revised": revised.revised, "unplaced": revised.unplaced, "repaired": repaired,
                          "applied": [{"suggestion": a.suggestion_pk, "kind": a.kind.value,
                                       "status": a.status.value, "start": a.start, "end": a.end,
                                       "before": a.before, "after": a.after} for a in revised.applied]},
                         indent=2, ensure_ascii=False))
        return EXIT_OK
    print(shown(revised.revised, lines=True))
    if repaired:
        print(f"\n{len(repaired)} accepted repair(s) cite their new source", file=sys.stderr)
    if not revised.applied and not repaired:
        print(f"\n(no accepted suggestions for {revised.response_id}: accept some with "
              f"`sourcecheckup cleanup {run_id} --accept ID`, or add --accept-verified)", file=sys.stderr)
    else:
        print(f"\n{len(revised.applied)} change(s):", file=sys.stderr)
        for a in revised.applied:
            print(f"  #{a.suggestion_pk} [{a.status.value}] - {shown(a.before)}\n{'':>{len(str(a.suggestion_pk)) + 4}}"
                  f"[{a.kind.value}] + {shown(a.after or '(removed)')}", file=sys.stderr)
    for pk in revised.unplaced:
        print(f"  #{pk} could not be placed: its statement has no position in the answer", file=sys.stderr)
    return EXIT_OK


def _with_repairs(store: Any, run_id: str, revised: Any) -> tuple[Any, list[int]]:
    """The revised answer with each accepted repair's new citation after its statement."""
    import dataclasses

    from ..references.repair import accepted_citations, apply_repairs

    row = store.responses_by_rid(run_id, revised.response_id)[0]
    citations = accepted_citations(store, run_id, row.pk)
    if not citations:
        return revised, []
    spans = [(s.pk, s.statement.start, s.statement.end) for s in store.statements_for(row.pk)]
    applied = [(a.start, a.end, a.before, a.after) for a in revised.applied]
    text, unplaced = apply_repairs(revised.revised, spans, citations, applied, revised.original)
    for pk in unplaced:
        print(f"  the repair of statement {pk} could not be placed: it has no position in the answer", file=sys.stderr)
    return dataclasses.replace(revised, revised=text), [pk for pk in citations if pk not in unplaced]
