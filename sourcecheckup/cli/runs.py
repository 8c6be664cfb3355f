"""Commands over stored runs: ``runs``, ``show``, ``report``, ``verify-report`` and ``compare``."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .common import EXIT_FAIL, EXIT_OK, UsageError, err, open_store, pick_run, shown


def print_headline(report: dict[str, Any], out: Any = None) -> None:
    out = out or sys.stdout
    m = report["metrics"]

    def fmt(key: str) -> str:
        v = m[key]
        if v["value"] is None:
            return "n/a"
        lo, hi = v["ci95"]
        return f"{100 * v['value']:.1f}% (95% CI {100 * lo:.1f}–{100 * hi:.1f}; {v['k']}/{v['n']})"

    from ..metrics import exclusion_notes, judge_error_note, partial_run_note

    c = report["counts"]
    left_out = exclusion_notes(c)

    def many(n: int, word: str) -> str:
        return f"{n} {word}{'' if n == 1 else 's'}"

    print(f"run {report['run']['id']} ({report['run']['status']}): {many(c['responses'], 'response')}, "
          f"{many(c['informative_statements'], 'claim')}, {many(c['urls'], 'cited URL')} (judges only)", file=out)
    for key, label in (("url_validity", "source URL validity"), ("full_text_validity", "full-text validity"),
                       ("statement_support", "statement-level support"),
                       ("response_support", "response-level support"), ("unused_sources", "unused sources")):
        if key not in m:
            continue
        note = left_out.get(key, "")
        said = f" · {note}" if note and (note != "leaves out nothing" or key in ("statement_support",
                                                                                   "response_support")) else ""
        print(f"  {label:<24} {fmt(key)}{said}", file=out)
    pending = pending_sources(report)
    waiting = f" · not fetched yet {pending}" if pending else ""
    print(f"  unreadable sources {unreadable_sources(report)}{waiting} · judge errors {c['judge_errors']} (verdicts) · "
          f"judges disagree {c.get('judges_disagree', 0)} (claims) · skipped records {c['skipped_records']}",
          file=out)
    expert = report.get("expert") or {}
    if expert.get("answers_with_expert_material"):   # OLAPH and EVAL, all answers (per model: the report)
        from ..views.expert import expert_headline

        print(f"  against expert material  {expert_headline(expert)}", file=out)
    trail = report.get("audit_trail") or {}
    if trail.get("judge_versions"):
        print(f"  judge version            {trail['judge_versions']}", file=out)
    if trail.get("judge_warning"):
        print(f"  WARNING: {shown(trail['judge_warning'], lines=True)}", file=out)
    note = partial_run_note(c)
    if note:
        print(f"  {note}", file=out)
    loud = judge_error_note(c)
    if loud:
        print(f"sourcecheckup: warning: {loud}", file=sys.stderr)
    for note in audit_notes(report):
        print(f"sourcecheckup: note: {shown(note, lines=True)}", file=sys.stderr)


def audit_notes(report: dict[str, Any]) -> list[str]:
    """What a figure alone would hide: answers that cite nothing, reference lookups that could not be made."""
    notes: list[str] = []
    answers = [r for r in report.get("responses", []) if "id" in r]
    uncited = [r["id"] for r in answers if not r.get("sources")]
    if uncited:
        named = ", ".join(uncited[:3]) + (f" and {len(uncited) - 3} more" if len(uncited) > 3 else "")
        notes.append(f"{len(uncited)} of {len(answers)} answers cite no source ({named}): no link, DOI or "
                     "PMID was found in them, so their claims count as unsupported (no readable source)")
    failed = ((report.get("references") or {}).get("counts") or {}).get("lookup_failed", 0)
    if failed:
        notes.append(f"{failed} reference lookup{'s' if failed != 1 else ''} could not be made (a lookup service "
                     "could not be reached; `sourcecheckup references RUN` lists them); they are counted apart, "
                     "never as not found. Offline, run with --no-references to skip the lookups")
    return notes


# above this many responses the headline is summed a page at a time (the whole report is not built)
HEADLINE_STREAM_ABOVE = 2000


def headline_report(store: Any, run_id: str) -> dict[str, Any]:
    """What :func:`print_headline` and the audit's hints read. A run of up to ``HEADLINE_STREAM_ABOVE``
    responses builds its report; a larger one is summed a page at a time with flat memory (its sources
    are those the run fetched, so it is used only for runs that large)."""
    import json

    from ..report import build_report

    if store.count_responses(run_id) <= HEADLINE_STREAM_ABOVE:
        return build_report(store, run_id)
    from ..report.stream import StreamedReport

    run = store.get_run(run_id)
    metrics = StreamedReport(store, run_id).figures()[0]
    sources = [{"url": s["url"], "status": s["status"], "text_chars": s["text_chars"] or 0}
               for s in store.iter_run_source_summaries(run_id)]
    from ..judges.versions import summary as judge_summary

    return {"run": {"id": run.id, "status": run.status}, "metrics": metrics.as_dict(),
            "counts": json.loads(json.dumps(metrics.counts)), "responses": [{"sources": sources}],
            "audit_trail": judge_summary(store.verdict_provenance(run_id)[0])}


def unreadable_sources(report: dict[str, Any]) -> int:
    """Distinct cited URLs without readable text: the unit the progress bar counts (a URL cited by
    two answers is one unreadable source, not two)."""
    from ..models import FetchStatus

    def readable(src: dict[str, Any]) -> bool:
        try:
            return FetchStatus(src["status"]).readable and src.get("text_chars", 0) > 0
        except ValueError:
            return False

    # a URL a cancelled run never fetched is not unreadable: it is counted apart (pending_sources)
    return len({src["url"] for resp in report["responses"] for src in resp["sources"]
                if src["status"] != "not_fetched" and not readable(src)})


def pending_sources(report: dict[str, Any]) -> int:
    """Distinct cited URLs not fetched yet (a cancelled or running audit)."""
    return len({src["url"] for resp in report["responses"] for src in resp["sources"] if src["status"] == "not_fetched"})


def print_usage(store: Any, run_id: str, out: Any = None) -> None:
    """Tokens and estimated cost per judge, when any judge used tokens."""
    from ..report.judges import run_usage

    for judge_id, u in run_usage(store, run_id).items():
        if not (u["tokens_in"] or u["tokens_out"]):
            continue
        cost = ("cost unknown (model not in resources/prices.json)" if u["cost_usd"] is None
                else f"estimated ${u['cost_usd']:.4f}")
        print(f"  {shown(judge_id)}: {u['calls']} calls, {u['tokens_in']:,} tokens in, {u['tokens_out']:,} out, {cost}",
              file=out or sys.stdout)


def unreadable_rows_warning(data: Any) -> None:
    """Say on stderr when a run's verdict rows hold a label SourceCheckup never writes (read as judge errors)."""
    from ..store.columns import UNREADABLE_ROW

    rows = [v for vs in data.verdicts.values() for v in vs if UNREADABLE_ROW in v.verdict.flags]
    if rows:
        print(f"sourcecheckup: warning: run {data.run.id}: {len(rows)} verdict row(s) could not be read "
              f"({shown(rows[0].verdict.rationale)}); the database was damaged or edited", file=sys.stderr)


def cmd_runs(args: argparse.Namespace) -> int:
    from ..metrics import headline

    store = open_store(args, reading=True)
    runs = store.list_runs()
    interrupted = {run.id for run in runs if store.run_interrupted(run)}

    def status(run: Any) -> str:
        return "interrupted" if run.id in interrupted else run.status

    if args.json:
        out = []
        for run in runs:
            data = store.load_run(run.id)
            unreadable_rows_warning(data)
            m = headline(data)
            out.append({"id": run.id, "created_at": run.created_at, "status": status(run),
                        **({"resume": resume_command(store, run.id)} if run.id in interrupted else {}),
                        "judges": run.judges, "input": run.input, "metrics": m.as_dict(), "counts": m.counts})
        print(json.dumps(out, indent=2))
        return EXIT_OK
    if not runs:
        print(f"no runs in {store.path}")
        return EXIT_OK

    def pct(metric: Any) -> str:
        return "   n/a" if metric.value is None else f"{100 * metric.value:5.1f}%"

    print(f"{'run':<18} {'created':<20} {'status':<11} {'resp':>5} {'URL ok':>7} {'stmt':>7} {'resp':>7} "
          f"{'unused':>7}  judge / input")
    for run in runs:
        data = store.load_run(run.id)
        unreadable_rows_warning(data)
        m = headline(data)
        c = m.counts
        partial = f"  (partial: {c['pairs_judged']} of {c['pairs']} pairs judged)" if c.get("partial") else ""
        ex = c.get("excluded") or {}
        claims_out = sum((ex.get("statement_support") or {}).values())
        responses_out = sum((ex.get("response_support") or {}).values())
        if claims_out or responses_out:
            why = ", ".join(f"{n} {w}" for w, n in (("judges disagree", c.get("judges_disagree", 0)),
                                                     ("judge error", c["statement_status"].get("judge_error", 0)))
                            if n)
            partial += (f"  (left out: {claims_out} claims{f' ({why})' if why else ''}, "
                        f"{responses_out} responses)")
        print(f"{run.id:<18} {run.created_at[:19]:<20} {status(run):<11} {c['responses']:>5} "
              f"{pct(m.url_validity):>7} {pct(m.statement_support):>7} {pct(m.response_support):>7} "
              f"{pct(m.unused_sources):>7}  {shown(','.join(run.judges))} / {shown(run.input[:40])}{partial}")
    print("(figures: judges only, reviewer overrides not applied, as `show` and the app lead with; "
          "`report RUN --with-reviews` leads with them applied)")
    for run_id in sorted(interrupted):
        print(f"run {run_id} was interrupted (its process ended before it finished); resume it with: "
              f"{resume_command(store, run_id)}")
    return EXIT_OK


def resume_command(store: Any, run_id: str) -> str:
    return f"sourcecheckup audit --resume {run_id} --db {store.path}"


_MARK = {"supported": "✓", "not_supported": "✗", "judge_error": "!", "judges_disagree": "≠", None: "·"}


def cmd_show(args: argparse.Namespace) -> int:
    from ..metrics import assess_run
    from ..store import StoreError

    store = open_store(args, reading=True)
    run_id = args.run or store.latest_run_id()
    if not run_id:
        raise UsageError(f"no runs in {store.path}")
    try:
        data = store.load_run(run_id)
    except StoreError as exc:
        raise UsageError(str(exc)) from exc
    unreadable_rows_warning(data)
    assessed = assess_run(data)
    if args.response and not any(r.rid == args.response for r in assessed):
        known = [r.rid for r in assessed]
        raise UsageError(f"run {data.run.id} has no response '{args.response}' (its responses: "
                         + ", ".join(known[:10]) + (f" and {len(known) - 10} more" if len(known) > 10 else "")
                         + ")")
    from ..report import build_report
    from ..urls import url_with_host_note

    print_headline(build_report(store, data.run.id, data=data))
    print_usage(store, data.run.id)
    print("legend: ✓ supported  ✗ not supported  ✗c contradicted (the source says otherwise)  ! judge error  "
          "· not judged  ? review first  ≠ judges disagree  "
          "(source columns: S1, S2 ... as cited; ✗src = unreadable; …src = not fetched yet)")
    for r in assessed:
        if args.response and r.rid != args.response:
            continue
        resp = next(x for x in data.responses if x.pk == r.response_pk).response
        verdict_ok = {True: "fully supported", False: "NOT fully supported", None: "undecided"}[r.supported]
        print(f"\n== {shown(r.rid)}" + (f" [{shown(r.model)}]" if r.model else "") + f" — {verdict_ok}")
        if resp.question:
            print(f"   Q: {shown(resp.question)}")
        for i, url in enumerate(r.urls, 1):
            src = data.sources.get(url)
            outcome = src.source.status.plain if src else "not fetched"
            print(f"   S{i}: {shown(url_with_host_note(url))}  [{outcome}]"
                  + (f" {shown(','.join(src.source.flags))}" if src and src.source.flags else ""))
        header = "   " + " ".join(f"S{i:<3}" for i in range(1, len(r.urls) + 1))
        print(header + "  status              statement")
        for s in r.statements:
            cells = []
            verdicts = data.verdicts.get(s.row.pk, [])
            for url in r.urls:
                if url not in data.sources:
                    cells.append("…src" if s.row.statement.informative else "    ")
                elif url not in r.valid_urls:
                    cells.append("✗src" if s.row.statement.informative else "    ")
                else:
                    lab = s.pair_labels.get(url)
                    mark = _MARK[lab.value if lab else None]
                    pair = [v.verdict for v in verdicts if v.url == url]
                    if lab is not None and lab.value == "not_supported" and any(v.contradicted for v in pair):
                        mark += "c"
                    if any(v.review_first for v in pair):
                        mark += "?"
                    cells.append(f"{mark:<4}")
            text = s.row.statement.text
            if len(text) > 90 and not args.full:
                text = text[:87] + "..."
            mark = "≠" if s.disagreement else " "
            status = s.status.value
            if s.status.supported is False and any(v.verdict.contradicted for v in verdicts):
                status = "contradicted"
            if any(v.verdict.review_first for v in verdicts):
                status += " (review first)"
            print("   " + " ".join(cells) + f" {mark}{status:<19} {shown(text)}")
            for v in verdicts:   # say what the source says instead
                if v.verdict.contradicted and (args.full or len(r.urls) < 10):
                    where = r.urls.index(v.url) + 1 if v.url in r.urls else "?"
                    print(f"        S{where}: {shown(v.verdict.rationale[:200])}")
    return EXIT_OK


def report_format(output: str, given: str | None) -> str:
    """The report format: --format when given, else the file's extension (json without one);
    a --format that contradicts a known extension is bad usage, not a silently mislabelled file."""
    from ..report import report_formats

    ext = Path(output).suffix.lstrip(".").lower()
    ext = {"htm": "html"}.get(ext, ext)
    if given and ext in report_formats() and ext != given.lower():
        raise UsageError(f"-o {output} names a .{ext} file but --format is {given}: "
                         f"name the file .{given.lower()}, or drop --format")
    return (given or ext or "json").lower()


def cmd_report(args: argparse.Namespace) -> int:
    from ..report import report_formats, write_report
    from ..report.pdf import PdfError

    fmt = report_format(args.output, args.format)   # bad usage is reported before any database is opened
    store = open_store(args, reading=True)
    run_id = pick_run(store, args.run)
    fmt = report_format(args.output, args.format)
    if fmt not in report_formats():
        raise UsageError(f"cannot tell the report format from '{args.output}': give --format "
                         f"{'|'.join(report_formats())} or a file name ending in one of them")
    if args.whois_server and not args.whois:
        raise UsageError("--whois-server is used only with --whois (whois lookups are off by default)")
    warnings: list[str] = []
    try:
        path = write_report(store, run_id, args.output, fmt, warnings, group_by=args.group_by,
                            whois=args.whois, whois_server=args.whois_server, with_reviews=args.with_reviews,
                            sign=getattr(args, "sign", None))
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    except PdfError as exc:
        err(str(exc))
        return EXIT_FAIL
    except OSError as exc:   # the file, or the one written beside it and renamed over it, cannot be made
        where = exc.filename or args.output
        err(f"cannot write the report to {args.output}: {exc.strerror or exc} ({where})")
        return EXIT_FAIL
    for warning in warnings:
        print(f"warning: {warning}", file=sys.stderr)
    # as the demo and audit --report say it; -q leaves the bare path, for scripts
    print(path if args.quiet else f"report written to {path}")
    return EXIT_OK


def cmd_verify_report(args: argparse.Namespace) -> int:
    from ..report.verify import NOT_COMPARED, verify_report_full
    from ..report.verify_formats import run_of, verify_other_format
    from ..store import StoreError

    path = Path(args.report)
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    fmt = path.suffix.lower().lstrip(".") or "json"
    report: Any = None
    try:
        if fmt == "json":
            report = json.loads(path.read_text(encoding="utf-8"))
            database = report.get("run", {}).get("database") if isinstance(report, dict) and isinstance(
                report.get("run"), dict) else None
        else:
            database = None
            run_of(path)   # a file that is not a report of this format fails here, before the database opens
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (ValueError, UnicodeDecodeError, KeyError, StopIteration) as exc:
        raise UsageError(f"{path} is not a SourceCheckup {fmt.upper()} report ({exc}); write one with "
                         f"`sourcecheckup report RUN -o REPORT.{fmt}`") from None
    except Exception as exc:   # openpyxl / pypdf refuse a damaged file in their own words
        raise UsageError(f"{path} cannot be read as a {fmt.upper()} report: {exc}") from None
    if args.db is None and database:
        args.db = database
    if args.key and fmt != "json":
        raise UsageError("--key checks a signed JSON report; the other formats carry its content digest")
    store = open_store(args, reading=True)
    try:
        if fmt == "json":
            result = verify_report_full(report, store, key=args.key)
            run_id = report["run"]["id"]
        else:
            result = verify_other_format(path, store)
            run_id = run_of(path)[0]
    except StoreError as exc:
        err(f"{exc}")
        return EXIT_FAIL
    except (ValueError, OSError) as exc:
        raise UsageError(f"{path}: {exc}") from None
    # the differences quote the report under test: escaped like every other text from a file (issue 42)
    if result.differences:
        print(shown(f"MISMATCH: {len(result.differences)} difference(s) between {path} and run {run_id} "
                    f"rebuilt from {store.path}:"))
        for d in result.differences:
            print(f"  {shown(d)}")
    else:
        what = "every metric and every other field" if fmt == "json" else "every figure it shows"
        print(shown(f"OK: {what} in {path} matches run {run_id} rebuilt from {store.path}"))
    print("checked (values compared, by section): " +
          ", ".join(f"{k} {v:,}" for k, v in result.checked.items()))
    if fmt == "json":
        print("not compared (they differ between two builds): " + ", ".join(NOT_COMPARED))
    for note in result.notes:
        print(f"note: {shown(note)}")
    return EXIT_FAIL if result.differences else EXIT_OK


def cmd_keygen(args: argparse.Namespace) -> int:
    from ..report.integrity import generate_key_pair

    try:
        private, public, fp = generate_key_pair(args.key)
    except FileExistsError as exc:
        raise UsageError(str(exc)) from None
    print(f"private key: {private} (keep it secret)\npublic key:  {public}\nfingerprint: {fp}")
    return EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from ..compare import compare_runs, format_comparison
    from ..store import StoreError

    store = open_store(args, reading=True)
    try:
        store_b = open_store(argparse.Namespace(db=args.db_b), reading=True) if args.db_b else store
        result = compare_runs(store, args.run_a, args.run_b, store_b=store_b, seed=args.seed,
                              with_overrides=bool(args.with_reviews))
    except StoreError as exc:
        raise UsageError(str(exc)) from exc
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        print(format_comparison(result))
    return EXIT_OK
