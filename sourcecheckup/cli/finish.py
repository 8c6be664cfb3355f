"""How an audit ends, on one machine or merged from a cluster's parts: its reports, its headline (or,
quiet, its id and notes) and the exit status."""
from __future__ import annotations

import argparse
import sys
from typing import Any

from ..metrics import judge_error_note
from .common import EXIT_FAIL, EXIT_OK, err, shown
from .runs import audit_notes, headline_report, print_headline


def all_refused_hint(report: dict[str, Any]) -> str:
    """When every cited source was refused as unsafe (a private or local address): how to allow it."""
    statuses = [src["status"] for r in report["responses"] for src in r["sources"]]
    if not statuses or any(st != "unsafe_url" for st in statuses):
        return ""
    return ("every cited source was refused as unsafe (a private or local address); if you trust the host, "
            "audit again with --allow-host HOST (and --refetch)")


def finish_audit(args: argparse.Namespace, store: Any, run_id: str) -> int:
    """After a run (on this machine or merged from a cluster's parts): its reports, its headline (or,
    quiet, its id and notes) and the exit status."""
    report = headline_report(store, run_id)
    unwritten = write_reports(args, store, run_id)
    if not args.quiet:
        print_headline(report)
    else:
        print(run_id)
        for note in audit_notes(report):   # the headline, which says them, was not printed
            print(f"sourcecheckup: note: {shown(note, lines=True)}", file=sys.stderr)
        warning = (report.get("audit_trail") or {}).get("judge_warning")
        if warning:
            print(f"warning: {shown(warning, lines=True)}", file=sys.stderr)
    hint = all_refused_hint(report)
    if hint:
        print(f"sourcecheckup: hint: {hint}", file=sys.stderr)
    counts = report["counts"]
    if args.quiet and judge_error_note(counts):   # the headline, which says it, was not printed
        print(f"sourcecheckup: warning: {judge_error_note(counts)}", file=sys.stderr)
    if counts.get("verdicts") and counts.get("judge_errors") == counts.get("verdicts"):
        return EXIT_FAIL      # a run whose every verdict failed is not a completed audit
    return EXIT_FAIL if unwritten else EXIT_OK


def write_reports(args: argparse.Namespace, store: Any, run_id: str) -> int:
    """Each --report of a finished run; one that cannot be written is said with how to write it again,
    for the audit's work is stored. Returns how many could not be written."""
    from ..report import write_report
    from ..report.pdf import PdfError

    unwritten = 0
    for rep in args.report or []:
        warnings: list[str] = []
        try:
            path = write_report(store, run_id, rep, warnings=warnings)
        except (ValueError, OSError, PdfError) as exc:
            unwritten += 1
            reason = str(exc) if isinstance(exc, ValueError) else f"cannot write the report to {rep}: {exc}"
            err(f"{reason}. The audit itself is stored as run {run_id} in "
                f"{store.path}; write the report with: sourcecheckup report {run_id} --db {store.path} -o FILE")
            continue
        for warning in warnings:
            print(f"warning: {warning}", file=sys.stderr)
        if not args.quiet:
            print(f"report written to {path}", file=sys.stderr)
    return unwritten
