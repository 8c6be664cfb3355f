"""The `sourcecheckup` command: every engine capability as a subcommand.

Exit codes: 0 success, 2 bad usage (unknown option, missing file, bad judge spec),
1 when a run could not complete (the reason on stderr).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from . import __version__
from .events import EventKind, ProgressEvent

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2


class UsageError(Exception):
    """Bad usage: reported with exit code 2."""


# ----------------------------------------------------------------------------- progress

class ProgressPrinter:
    """A one-line progress bar on stderr (a TTY), or a status line every few seconds (a log)."""

    def __init__(self, quiet: bool = False, stream: Any = None) -> None:
        self.quiet = quiet
        self.stream = stream or sys.stderr
        self.tty = hasattr(self.stream, "isatty") and self.stream.isatty()
        self._last = 0.0
        self._started = time.monotonic()

    def __call__(self, ev: ProgressEvent) -> None:
        if ev.kind in (EventKind.SKIPPED, EventKind.WARNING):   # quiet hides progress, never a warning
            self._clear()
            print(f"warning: {ev.message}", file=self.stream)
            return
        if self.quiet:
            return
        now = time.monotonic()
        final = ev.kind is EventKind.RUN_FINISHED
        if not final and now - self._last < (0.1 if self.tty else 5.0):
            return
        self._last = now
        total = max(ev.pairs_total, 1)
        frac = ev.pairs_done / total if ev.pairs_total else (ev.sources_done / max(ev.sources_total, 1))
        width = 24
        bar = "#" * int(width * min(frac, 1.0))
        line = (f"[{bar:<{width}}] responses {ev.responses_done}/{ev.responses_total} · "
                f"sources {ev.sources_done}/{ev.sources_total} · pairs {ev.pairs_done}/{ev.pairs_total} · "
                f"unreadable sources {ev.fetch_failures} · judge errors {ev.judge_errors} · "
                f"{now - self._started:.0f}s")
        if self.tty:
            self.stream.write("\r" + line[:200] + ("\n" if final else ""))
            self.stream.flush()
        else:
            print(line, file=self.stream)

    def _clear(self) -> None:
        if self.tty:
            self.stream.write("\r\033[K")


def _err(msg: str) -> None:
    print(f"sourcecheckup: error: {msg}", file=sys.stderr)


# ----------------------------------------------------------------------------- helpers

def _open_store(args: argparse.Namespace, create: bool = False):
    """The run database; only commands that write runs (``create``) may start a new one."""
    from .store import Store, StoreError, default_db_path

    path = Path(args.db) if args.db else default_db_path()
    if not create and not path.exists():
        raise UsageError(f"{path}: no such database (audit something first with `sourcecheckup audit`, "
                         "or name an existing one with --db PATH)")
    try:
        return Store(path)
    except StoreError as exc:
        raise UsageError(str(exc)) from exc


def _fetch_options(args: argparse.Namespace, batch: bool = False):
    from .fetching import FetchOptions

    kw: dict[str, Any] = {}
    if getattr(args, "allow_host", None):
        kw["allow_hosts"] = tuple(args.allow_host)
    if getattr(args, "sources", None):
        from .fetching.sourcepack import SourcePackError, load_pack

        src = Path(args.sources)
        if not (src / "sources.json").is_file():
            raise UsageError(f"--sources {src}: no sources.json in that folder (it maps each URL to a local file)")
        try:
            load_pack(src)
        except SourcePackError as exc:
            raise UsageError(f"--sources {src}: {exc}") from exc
        kw["sources_dir"] = src.resolve()
    if getattr(args, "timeout", None):
        kw["timeout_s"] = float(args.timeout)
    if getattr(args, "fetch_concurrency", None):
        kw["total_concurrency"] = int(args.fetch_concurrency)
    # defaults a user expects of a professional tool; environment variables let CI and tests opt out
    kw["browser"] = getattr(args, "browser", None) or os.environ.get("SOURCECHECKUP_BROWSER", "auto")
    archive_env = os.environ.get("SOURCECHECKUP_ARCHIVE", "on").lower() not in ("off", "0", "no")
    kw["archive_lookup"] = archive_env and not getattr(args, "no_archive", False)
    kw["use_archive"] = bool(getattr(args, "use_archive", False))
    if getattr(args, "archive_endpoint", None):
        kw["archive_endpoint"] = args.archive_endpoint
    if getattr(args, "doi_resolver", None):
        kw["doi_resolver"] = args.doi_resolver
    robots = getattr(args, "robots", None)
    kw["respect_robots"] = batch if robots is None else robots   # on by default for batch runs
    if kw["use_archive"] and not kw["archive_lookup"]:
        raise UsageError("--use-archive needs archive lookups; drop --no-archive")
    return FetchOptions(**kw)


def _run_config(args: argparse.Namespace, batch: bool = False):
    from .pipeline import RunConfig

    return RunConfig(judges=args.judge or ["builtin"], parser=args.parser, consensus=args.consensus,
                     judge_concurrency=args.concurrency, fetch=_fetch_options(args, batch),
                     refetch=args.refetch, seed=args.seed, judge_options=_judge_options(args))


def _judge_options(args: argparse.Namespace) -> dict[str, Any]:
    """Judge settings from --prompt, --full-source and --token-budget (checked here: exit 2 when bad)."""
    from .prompts import PromptError, load_prompt

    options: dict[str, Any] = {}
    if getattr(args, "prompt", None):
        try:
            prompt = load_prompt(Path(args.prompt), required=("source", "statement"))
        except PromptError as exc:
            raise UsageError(f"--prompt: {exc}") from exc
        options["prompt_path"] = str(prompt.path.resolve())
    if getattr(args, "full_source", False):
        options["full_source"] = True
    budget = getattr(args, "token_budget", None)
    if budget is not None:
        if budget < 50:
            raise UsageError("--token-budget must be at least 50 tokens")
        options["token_budget"] = budget
    return options


def _construction_errors() -> tuple[type[Exception], ...]:
    """Errors that mean a judge or parser cannot be built as named: bad usage (exit 2), not a crash."""
    from .judges.base import JudgeSpecError
    from .llm.secrets import MissingKeyError
    from .parse import ParserSpecError
    from .prompts import PromptError

    return (MissingKeyError, JudgeSpecError, ParserSpecError, PromptError)


def _check_buildable(config: Any) -> None:
    """Build the run's judges and parser once, so a missing key or a bad model fails before the run."""
    from .judges.base import make_judge
    from .parse import make_parser

    made: list[Any] = []

    async def close() -> None:
        for thing in made:
            if hasattr(thing, "aclose"):
                await thing.aclose()

    try:
        for spec in config.judges:
            made.append(make_judge(spec, **config.judge_options))
        if config.parser != "builtin":
            made.append(make_parser(config.parser, **config.judge_options))
    except _construction_errors() as exc:
        raise UsageError(str(exc)) from exc
    finally:
        asyncio.run(close())


def _check_judges(specs: Sequence[str], fix: str = "--judge") -> None:
    """Refuse a bad judge spec or a missing API key before anything starts (exit 2)."""
    from .judges import validate_judge_spec

    for spec in specs:
        problem = validate_judge_spec(spec)
        if problem:
            raise UsageError(f"{problem} (fix: {fix})")


def _load_inputs(args: argparse.Namespace):
    from .ingest import CsvMapping, IngestError, IngestResult, load_path, load_text

    mapping = CsvMapping(**{k: v for k, v in {
        "text_col": args.text_col, "citations_col": args.citations_col, "question_col": args.question_col,
        "model_col": args.model_col, "id_col": args.id_col}.items() if v})
    result = IngestResult(responses=[], skipped=[])
    for p in args.inputs:
        try:
            if p == "-":
                part = load_text(sys.stdin.read(), question=args.question, model=args.model, origin="stdin")
            else:
                part = load_path(p, mapping=mapping, question=args.question, model=args.model)
        except IngestError as exc:
            raise UsageError(str(exc)) from exc
        except FileNotFoundError as exc:
            raise UsageError(f"{p}: no such file or folder") from exc
        result.extend(part)
    return result


def _load_plugins() -> None:
    from .pipeline import load_plugins

    try:
        load_plugins()
    except ImportError as exc:
        raise UsageError(str(exc)) from exc


def _all_refused_hint(report: dict[str, Any]) -> str:
    """When every cited source was refused as unsafe (a private or local address): how to allow it."""
    statuses = [src["status"] for r in report["responses"] for src in r["sources"]]
    if not statuses or any(st != "unsafe_url" for st in statuses):
        return ""
    return ("every cited source was refused as unsafe (a private or local address); if you trust the host, "
            "audit again with --allow-host HOST (and --refetch)")


def _print_headline(report: dict[str, Any], out: Any = None) -> None:
    out = out or sys.stdout
    m = report["metrics"]

    def fmt(key: str) -> str:
        v = m[key]
        if v["value"] is None:
            return "n/a"
        lo, hi = v["ci95"]
        return f"{100 * v['value']:.1f}% (95% CI {100 * lo:.1f}–{100 * hi:.1f}; {v['k']}/{v['n']})"

    c = report["counts"]
    print(f"run {report['run']['id']} ({report['run']['status']}): {c['responses']} responses, "
          f"{c['informative_statements']} claims, {c['urls']} cited URLs", file=out)
    print(f"  source URL validity      {fmt('url_validity')}", file=out)
    print(f"  statement-level support  {fmt('statement_support')}", file=out)
    print(f"  response-level support   {fmt('response_support')}", file=out)
    print(f"  unused sources           {fmt('unused_sources')}", file=out)
    print(f"  unreadable sources {unreadable_sources(report)} · judge errors {c['judge_errors']} · "
          f"skipped records {c['skipped_records']}", file=out)
    from .metrics import partial_run_note

    note = partial_run_note(c)
    if note:
        print(f"  {note}", file=out)


def unreadable_sources(report: dict[str, Any]) -> int:
    """Distinct cited URLs without readable text: the unit the progress bar counts (a URL cited by
    two answers is one unreadable source, not two)."""
    from .models import FetchStatus

    def readable(src: dict[str, Any]) -> bool:
        try:
            return FetchStatus(src["status"]).readable and src.get("text_chars", 0) > 0
        except ValueError:          # not_fetched
            return False

    return len({src["url"] for resp in report["responses"] for src in resp["sources"] if not readable(src)})


# ----------------------------------------------------------------------------- commands

def cmd_audit(args: argparse.Namespace) -> int:
    from .pipeline import Audit, RunConfig
    from .report import build_report, write_report

    _load_plugins()
    if not args.inputs and not args.resume:
        raise UsageError("give an input file or folder, '-' for standard input, or --resume RUN")
    for rep in args.report or []:
        if Path(rep).suffix.lower() not in (".json", ".csv", ".html", ".pdf", ".xlsx"):
            raise UsageError(f"--report {rep}: use a .json, .csv, .html, .pdf or .xlsx file name")
    store = _open_store(args, create=not args.resume)
    progress = ProgressPrinter(args.quiet)
    if args.resume:
        try:
            run = store.get_run(args.resume)
        except Exception as exc:
            raise UsageError(str(exc)) from exc
        config = RunConfig.from_dict(run.config)
        corrected = bool(args.judge)
        if corrected:   # the run failed on its judge settings: resume with corrected ones
            config.judges = list(args.judge)
            _check_judges(config.judges)
        else:
            _check_judges(config.judges, fix=f"resume with corrected settings: audit --resume {run.id} --judge SPEC")
        _check_buildable(config)
        audit = Audit(store, config, progress=progress)
        coro = audit.resume(run.id, config if corrected else None)
    else:
        _check_judges(args.judge or ["builtin"])
        loaded = _load_inputs(args)
        if not loaded.responses and not loaded.skipped:
            raise UsageError("no answers found in the input")
        if not loaded.responses:   # every record skipped: an empty audit would look like a clean one
            for s in loaded.skipped:
                print(f"skipped {s.origin}: {s.problem}", file=sys.stderr)
            _err(f"nothing to audit: all {len(loaded.skipped)} record(s) of the input were skipped (reasons above)")
            return EXIT_FAIL
        config = _run_config(args, batch=len(loaded.responses) > 1)
        _check_buildable(config)
        audit = Audit(store, config, progress=progress)
        label = ", ".join(args.inputs)
        if not args.quiet:
            for note in loaded.notes:
                print(f"note: {note}", file=sys.stderr)
        coro = audit.start(loaded.responses, loaded.skipped, label, loaded.notes)
    if config.fetch.browser != "never":
        from .fetching.browser import browser_status

        ok, message = browser_status(config.fetch.browser_executable)
        if not ok:
            print(f"warning: {message}", file=sys.stderr)
    try:
        run_id = asyncio.run(coro)
    except KeyboardInterrupt:
        _err(f"interrupted; resume with: sourcecheckup audit --resume {audit.run_id} --db {store.path}")
        return 130
    except Exception as exc:
        if isinstance(exc, _construction_errors()):  # e.g. a local model that fails to load
            _err(str(exc))
            return EXIT_USAGE
        _err(f"the run could not complete: {type(exc).__name__}: {exc}")
        if audit.run_id:
            _err(f"resume with: sourcecheckup audit --resume {audit.run_id} --db {store.path}")
        return EXIT_FAIL
    report = build_report(store, run_id)
    for rep in args.report or []:
        path = write_report(store, run_id, rep)
        if not args.quiet:
            print(f"report written to {path}", file=sys.stderr)
    if not args.quiet:
        _print_headline(report)
    else:
        print(run_id)
    hint = _all_refused_hint(report)
    if hint:
        print(f"sourcecheckup: hint: {hint}", file=sys.stderr)
    return EXIT_OK


def cmd_runs(args: argparse.Namespace) -> int:
    from .metrics import headline

    store = _open_store(args)
    runs = store.list_runs()
    if args.json:
        out = []
        for run in runs:
            m = headline(store.load_run(run.id))
            out.append({"id": run.id, "created_at": run.created_at, "status": run.status,
                        "judges": run.judges, "input": run.input, "metrics": m.as_dict(), "counts": m.counts})
        print(json.dumps(out, indent=2))
        return EXIT_OK
    if not runs:
        print(f"no runs in {store.path}")
        return EXIT_OK

    def pct(metric: Any) -> str:
        return "   n/a" if metric.value is None else f"{100 * metric.value:5.1f}%"

    print(f"{'run':<18} {'created':<20} {'status':<10} {'resp':>5} {'URL ok':>7} {'stmt':>7} {'resp':>7} "
          f"{'unused':>7}  judge / input")
    for run in runs:
        m = headline(store.load_run(run.id))
        c = m.counts
        partial = f"  (partial: {c['pairs_judged']} of {c['pairs']} pairs judged)" if c.get("partial") else ""
        print(f"{run.id:<18} {run.created_at[:19]:<20} {run.status:<10} {c['responses']:>5} "
              f"{pct(m.url_validity):>7} {pct(m.statement_support):>7} {pct(m.response_support):>7} "
              f"{pct(m.unused_sources):>7}  {','.join(run.judges)} / {run.input[:40]}{partial}")
    return EXIT_OK


_MARK = {"supported": "✓", "not_supported": "✗", "judge_error": "!", None: "·"}


def cmd_show(args: argparse.Namespace) -> int:
    from .metrics import assess_run, compute_metrics
    from .store import StoreError

    store = _open_store(args)
    run_id = args.run or store.latest_run_id()
    if not run_id:
        raise UsageError(f"no runs in {store.path}")
    try:
        data = store.load_run(run_id)
    except StoreError as exc:
        raise UsageError(str(exc)) from exc
    assessed = assess_run(data)
    if args.response and not any(r.rid == args.response for r in assessed):
        known = [r.rid for r in assessed]
        raise UsageError(f"run {data.run.id} has no response '{args.response}' (its responses: "
                         + ", ".join(known[:10]) + (f" and {len(known) - 10} more" if len(known) > 10 else "")
                         + ")")
    from .report import build_report

    _print_headline(build_report(store, data.run.id, data=data))
    _print_usage(store, data.run.id)
    print("legend: ✓ supported  ✗ not supported  ✗c contradicted (the source says otherwise)  ! judge error  "
          "· not judged  ? review first  ≠ judges disagree  "
          "(source columns: S1, S2 ... as cited; ✗src = unreadable; …src = not fetched yet)")
    for r in assessed:
        if args.response and r.rid != args.response:
            continue
        resp = next(x for x in data.responses if x.pk == r.response_pk).response
        verdict_ok = {True: "fully supported", False: "NOT fully supported", None: "undecided"}[r.supported]
        print(f"\n== {r.rid}" + (f" [{r.model}]" if r.model else "") + f" — {verdict_ok}")
        if resp.question:
            print(f"   Q: {resp.question}")
        for i, url in enumerate(r.urls, 1):
            src = data.sources.get(url)
            outcome = src.source.status.plain if src else "not fetched"
            print(f"   S{i}: {url}  [{outcome}]" + (f" {','.join(src.source.flags)}" if src and src.source.flags else ""))
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
            print("   " + " ".join(cells) + f" {mark}{status:<19} {text}")
            for v in verdicts:   # say what the source says instead
                if v.verdict.contradicted and (args.full or len(r.urls) < 10):
                    print(f"        S{r.urls.index(v.url) + 1 if v.url in r.urls else '?'}: {v.verdict.rationale[:200]}")
    return EXIT_OK


def _print_usage(store: Any, run_id: str, out: Any = None) -> None:
    """Tokens and estimated cost per judge, when any judge used tokens."""
    from .judge_report import run_usage

    for judge_id, u in run_usage(store, run_id).items():
        if not (u["tokens_in"] or u["tokens_out"]):
            continue
        cost = ("cost unknown (model not in resources/prices.json)" if u["cost_usd"] is None
                else f"estimated ${u['cost_usd']:.4f}")
        print(f"  {judge_id}: {u['calls']} calls, {u['tokens_in']:,} tokens in, {u['tokens_out']:,} out, {cost}",
              file=out or sys.stdout)


def cmd_cleanup(args: argparse.Namespace) -> int:
    from .cleanup import CleanupError, run_cleanup, set_decision, suggestions

    _load_plugins()
    store = _open_store(args)
    run_id = _run_id(store, args.run)
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
            if isinstance(exc, _construction_errors()):
                raise UsageError(str(exc)) from exc
            _err(f"cleanup could not complete: {type(exc).__name__}: {exc}")
            return EXIT_FAIL
    labels = {r[0]: f"{r[1]}/s{r[2] + 1}" for r in store.db.execute(
        "SELECT s.pk, r.rid, s.ord FROM statements s JOIN responses r ON r.pk = s.response_pk "
        "WHERE s.run_id = ?", [run_id]).fetchall()}
    if not rows:
        print(f"run {run_id}: no unsupported statement with a readable source, so no suggestions")
        return EXIT_OK
    counts: dict[str, int] = {}
    for row in rows:
        counts[row.status.value] = counts.get(row.status.value, 0) + 1
    print(f"run {run_id}: {len(rows)} suggestion(s): " + ", ".join(f"{v} {k}" for k, v in sorted(counts.items())))
    for row in rows:
        print(f"\n#{row.pk} {labels.get(row.statement_pk, '?')} [{row.status.value}, {row.decision.value}] "
              f"against {row.url}")
        print(f"   - {row.original}")
        print(f"   + {row.suggested}" if row.suggested else "   + (delete the statement)")
        if row.quote:
            print(f"     quote: \"{row.quote}\"")
    print(f"\naccept or reject: sourcecheckup cleanup {run_id} --accept ID --reject ID; "
          f"then: sourcecheckup revised {run_id} --response RESPONSE")
    return EXIT_OK


def cmd_revised(args: argparse.Namespace) -> int:
    from .cleanup import CleanupError, revised_answer

    store = _open_store(args)
    run_id = _run_id(store, args.run)
    try:
        revised = revised_answer(store, run_id, args.response, accept_verified=args.accept_verified)
    except CleanupError as exc:
        raise UsageError(str(exc)) from exc
    if args.json:
        print(json.dumps({"response": revised.response_id, "original": revised.original,
                          "revised": revised.revised, "unplaced": revised.unplaced,
                          "applied": [{"suggestion": a.suggestion_pk, "kind": a.kind.value,
                                       "status": a.status.value, "start": a.start, "end": a.end,
                                       "before": a.before, "after": a.after} for a in revised.applied]},
                         indent=2, ensure_ascii=False))
        return EXIT_OK
    print(revised.revised)
    if not revised.applied:
        print(f"\n(no accepted suggestions for {revised.response_id}: accept some with "
              f"`sourcecheckup cleanup {run_id} --accept ID`, or add --accept-verified)", file=sys.stderr)
    else:
        print(f"\n{len(revised.applied)} change(s):", file=sys.stderr)
        for a in revised.applied:
            print(f"  #{a.suggestion_pk} [{a.status.value}] - {a.before}\n{'':>{len(str(a.suggestion_pk)) + 4}}"
                  f"[{a.kind.value}] + {a.after or '(removed)'}", file=sys.stderr)
    for pk in revised.unplaced:
        print(f"  #{pk} could not be placed: its statement has no position in the answer", file=sys.stderr)
    return EXIT_OK


def _run_id(store: Any, run: str | None) -> str:
    from .store import StoreError

    run_id = run or store.latest_run_id()
    if not run_id:
        raise UsageError(f"no runs in {store.path}")
    try:
        return store.get_run(run_id).id
    except StoreError as exc:
        raise UsageError(str(exc)) from exc


def report_format(output: str, given: str | None) -> str:
    """The report format: --format when given, else the file's extension (json without one);
    a --format that contradicts a known extension is bad usage, not a silently mislabelled file."""
    from .report import FORMATS

    ext = Path(output).suffix.lstrip(".").lower()
    ext = {"htm": "html"}.get(ext, ext)
    if given and ext in FORMATS and ext != given.lower():
        raise UsageError(f"-o {output} names a .{ext} file but --format is {given}: "
                         f"name the file .{given.lower()}, or drop --format")
    return (given or ext or "json").lower()


def cmd_report(args: argparse.Namespace) -> int:
    from .report.pdf import PdfError
    from .report import FORMATS, write_report

    fmt = report_format(args.output, args.format)   # bad usage is reported before any database is opened
    store = _open_store(args)
    run_id = _run_id(store, args.run)
    fmt = report_format(args.output, args.format)
    if fmt not in FORMATS:
        raise UsageError(f"cannot tell the report format from '{args.output}': give --format "
                         f"{'|'.join(FORMATS)} or a file name ending in one of them")
    if args.whois_server and not args.whois:
        raise UsageError("--whois-server is used only with --whois (whois lookups are off by default)")
    try:
        path = write_report(store, run_id, args.output, fmt, group_by=args.group_by,
                            whois=args.whois, whois_server=args.whois_server, with_reviews=args.with_reviews)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    except PdfError as exc:
        _err(str(exc))
        return EXIT_FAIL
    print(path)
    return EXIT_OK


def cmd_verify_report(args: argparse.Namespace) -> int:
    from .report import verify_report
    from .store import StoreError

    path = Path(args.report)
    try:
        report = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} is not a JSON report ({exc}); write one with `sourcecheckup report RUN "
                         "--format json -o REPORT.json`") from None
    if args.db is None and isinstance(report, dict) and isinstance(report.get("run"), dict):
        args.db = report["run"].get("database")
    store = _open_store(args)
    try:
        diffs = verify_report(report, store)
    except StoreError as exc:
        _err(f"{exc}")
        return EXIT_FAIL
    except ValueError as exc:
        raise UsageError(f"{path}: {exc}") from None
    run_id = report["run"]["id"]
    if diffs:
        print(f"MISMATCH: {len(diffs)} figure(s) in {path} differ from run {run_id} in {store.path}:")
        for d in diffs:
            print(f"  {d}")
        return EXIT_FAIL
    print(f"OK: every metric in {path} matches run {run_id} recomputed from {store.path}")
    return EXIT_OK


def cmd_review_sample(args: argparse.Namespace) -> int:
    from .review_sample import SampleError, draw_sample, strata_counts, write_sample_csv

    store = _open_store(args)
    run_id = _run_id(store, args.run)
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
    from .review_sample import SampleError, import_reviews_csv

    path = Path(args.file)
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    store = _open_store(args)
    try:
        result = import_reviews_csv(store, path, args.reviewer)
    except SampleError as exc:
        raise UsageError(str(exc)) from None
    for e in result.errors:
        print(f"skipped: {e}", file=sys.stderr)
    print(f"imported {result.imported} review(s) by {args.reviewer.strip()}; {result.unlabelled} row(s) without a "
          f"label; {len(result.errors)} row(s) skipped" + (f" (sample {', '.join(result.samples)})" if result.samples else ""))
    return EXIT_FAIL if result.errors and not result.imported else EXIT_OK


def cmd_compare(args: argparse.Namespace) -> int:
    from .compare import compare_runs, format_comparison
    from .store import StoreError

    store = _open_store(args)
    try:
        store_b = _open_store(argparse.Namespace(db=args.db_b)) if args.db_b else store
        result = compare_runs(store, args.run_a, args.run_b, store_b=store_b, seed=args.seed,
                              with_overrides=not args.judges_only)
    except StoreError as exc:
        raise UsageError(str(exc)) from exc
    if args.json:
        print(json.dumps(result, indent=2, ensure_ascii=False))
    else:
        print(format_comparison(result))
    return EXIT_OK


def cmd_verify_pairs(args: argparse.Namespace) -> int:
    from .evidence import SourceText
    from .judges.base import make_judge
    from .evidence import quote_in_source

    _load_plugins()
    _check_judges([args.judge])
    path = Path(args.pairs)
    if not path.is_file():
        raise UsageError(f"{path}: no such file")
    records: list[tuple[Any, str | None, str | None, str | None]] = []
    for n, line in enumerate(path.read_text(encoding="utf-8-sig").splitlines(), 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
            if not isinstance(obj, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            records.append((f"line-{n}", None, None, f"{path.name}:{n}: invalid JSON ({exc})"))
            continue
        statement = obj.get("statement", obj.get("claim"))
        source = obj.get("source", obj.get("evidence"))
        rid = obj.get("id", f"line-{n}")
        if not isinstance(statement, str) or not statement.strip():
            records.append((rid, None, None, f"{path.name}:{n}: missing 'statement' (or 'claim')"))
        elif not isinstance(source, str):
            records.append((rid, None, None, f"{path.name}:{n}: missing 'source' (or 'evidence') text"))
        else:
            records.append((rid, statement, source, None))
    for rid, _, _, problem in records:
        if problem:
            print(f"warning: {problem}", file=sys.stderr)
    try:
        judge = make_judge(args.judge, **_judge_options(args))
    except _construction_errors() as exc:
        raise UsageError(str(exc)) from exc
    good = [(i, r) for i, r in enumerate(records) if r[3] is None]
    progress = ProgressPrinter(args.quiet)

    async def go() -> list[Any]:
        out: list[Any] = []
        try:
            if asyncio.iscoroutinefunction(getattr(judge, "load", None)):
                await judge.load()  # a broken local model fails before any pair
            for start in range(0, len(good), 64):
                chunk = good[start:start + 64]
                out.extend(await judge.verify_many([(r[1], SourceText.from_text(r[2])) for _, r in chunk]))
                progress(ProgressEvent(EventKind.JUDGED, "verify-pairs", pairs_total=len(good),
                                       pairs_done=len(out)))
        finally:
            await judge.aclose()
        return out

    try:
        verdicts = asyncio.run(go())
    except Exception as exc:
        if isinstance(exc, _construction_errors()):
            raise UsageError(str(exc)) from exc
        _err(f"judging failed: {type(exc).__name__}: {exc}")
        return EXIT_FAIL
    by_index = {i: v for (i, _), v in zip(good, verdicts)}
    out_stream = open(args.output, "w", encoding="utf-8") if args.output and args.output != "-" else sys.stdout
    try:
        for i, (rid, _, source, problem) in enumerate(records):
            if problem:
                row = {"id": rid, "label": "judge_error", "score": None, "quote": "", "quote_found": None,
                       "error": problem}
            else:
                v = by_index[i]
                row = {"id": rid, "label": v.label.value, "score": round(v.score, 4), "quote": v.quote,
                       "quote_found": quote_in_source(v.quote, source or ""), "rationale": v.rationale}
            out_stream.write(json.dumps(row, ensure_ascii=False) + "\n")
    finally:
        if out_stream is not sys.stdout:
            out_stream.close()
    return EXIT_OK


def samples_dir() -> Path:
    from .resources import resources_dir

    return resources_dir() / "samples"


def cmd_demo(args: argparse.Namespace) -> int:
    samples = samples_dir()
    out = Path(args.output or "sourcecheckup-demo-report.html").resolve()
    if args.db is None:
        import platformdirs

        args.db = str(Path(platformdirs.user_data_dir("sourcecheckup", appauthor=False)) / "demo.db")
    ns = argparse.Namespace(**vars(args))
    ns.inputs = [str(samples / "answers")]
    ns.sources = str(samples / "sources")
    ns.report = [str(out), str(out.with_suffix(".json"))]
    ns.resume = None
    ns.refetch = False
    ns.no_archive = True          # the demo never leaves this machine
    ns.browser = "never"
    for attr, default in (("judge", ["builtin"]), ("parser", "builtin"), ("consensus", "first"),
                          ("concurrency", 8), ("seed", 0), ("question", None), ("model", None),
                          ("allow_host", None), ("timeout", None), ("fetch_concurrency", None),
                          ("text_col", None), ("citations_col", None), ("question_col", None),
                          ("model_col", None), ("id_col", None)):
        if getattr(ns, attr, None) is None:
            setattr(ns, attr, default)
    if not args.quiet:
        print(f"demo: auditing the bundled sample answers ({len(list((samples / 'answers').iterdir()))} files) offline "
              f"with the built-in screening judge; database {args.db}", file=sys.stderr)
    code = cmd_audit(ns)
    if code == EXIT_OK:
        print(f"demo report: {out}")
    return code


def cmd_gui(args: argparse.Namespace) -> int:
    try:
        from ui.app import main as gui_main  # type: ignore[import-not-found]
    except ImportError as exc:
        _err(f"the desktop app is not available in this install: {exc}")
        return EXIT_FAIL
    argv = []
    if args.db:
        argv += ["--db", str(args.db)]
    if args.run:
        argv += ["--run", args.run]
    return int(gui_main(argv) or 0)


# ----------------------------------------------------------------------------- parser

def _add_audit_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--judge", action="append", metavar="SPEC",
                   help="judge spec: builtin (default), openai:MODEL, anthropic:MODEL, "
                        "openai-compatible:URL#MODEL, local:PATH; repeat for several")
    p.add_argument("--parser", default="builtin", metavar="SPEC", help="statement parser (default builtin)")
    p.add_argument("--consensus", default="first", choices=["first", "any", "all", "majority"],
                   help="how several judges combine (default: the first judge decides)")
    _add_judge_settings(p)
    p.add_argument("--concurrency", type=int, default=8, help="judge calls at once (default 8)")
    p.add_argument("--fetch-concurrency", type=int, help="fetches at once (default 16)")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="seconds per source fetch (default 20)")
    p.add_argument("--sources", metavar="DIR", help="local source pack: DIR/sources.json maps URL -> file")
    p.add_argument("--allow-host", action="append", metavar="HOST",
                   help="permit a private/loopback host (repeatable)")
    p.add_argument("--browser", choices=["auto", "always", "never"],
                   help="headless Chromium: auto (when a page needs JavaScript; default), always, never")
    p.add_argument("--no-archive", action="store_true", help="do not look dead links up in a web archive")
    p.add_argument("--use-archive", action="store_true", help="read the archived copy of a dead link as its source")
    p.add_argument("--archive-endpoint", metavar="URL", help="Wayback-compatible availability API")
    p.add_argument("--doi-resolver", metavar="URL", help="resolve DOIs here instead of https://doi.org")
    p.add_argument("--robots", dest="robots", action="store_true", default=None,
                   help="respect robots.txt (default for batch runs)")
    p.add_argument("--no-robots", dest="robots", action="store_false", help="ignore robots.txt")
    p.add_argument("--refetch", action="store_true", help="fetch again even if cached")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--report", action="append", metavar="PATH", help="write a report (.json, .csv, .html, .pdf, .xlsx)")


def _add_judge_settings(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prompt", metavar="FILE",
                   help="your own verifier prompt (a [system] and a [user] section with {{statement}} and "
                        "{{source}}; see resources/prompts/verifier-v1.txt)")
    p.add_argument("--full-source", action="store_true",
                   help="send the whole source text to LLM judges when it fits the model's window "
                        "(default: the best passages up to --token-budget)")
    p.add_argument("--token-budget", type=int, metavar="N",
                   help="evidence tokens per statement for LLM judges (default 1000)")


def build_parser() -> argparse.ArgumentParser:
    from .store import DB_ENV, default_db_path

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--db", metavar="PATH",
                        help=f"SQLite database (default: {default_db_path()}; ${DB_ENV} sets another)")
    # -q only where there is progress to hide; warnings are printed all the same
    progress = argparse.ArgumentParser(add_help=False, parents=[common])
    progress.add_argument("-q", "--quiet", action="store_true", help="no progress output (warnings still shown)")

    parser = argparse.ArgumentParser(prog="sourcecheckup", description="Audit the citations in LLM answers.")
    parser.add_argument("--version", action="version", version=f"sourcecheckup {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True

    p = sub.add_parser("audit", parents=[progress], help="audit answers: fetch sources, judge every pair, store")
    p.add_argument("inputs", nargs="*", help="files or folders (JSON, JSONL, CSV/TSV, Markdown, text); '-' = stdin")
    p.add_argument("--question", metavar="TEXT", help="the question asked (for single answers without one)")
    p.add_argument("--model", metavar="NAME", help="the model that wrote the answers, when the input does not say")
    p.add_argument("--resume", metavar="RUN", help="continue an interrupted run: judge only missing pairs "
                   "(with --judge: replace the run's judges, e.g. after it failed on a bad spec or a missing key)")
    for col in ("text", "citations", "question", "model", "id"):
        p.add_argument(f"--{col}-col", metavar="NAME", help=f"CSV/TSV column holding the {col}")
    _add_audit_options(p)
    p.set_defaults(func=cmd_audit)

    p = sub.add_parser("runs", parents=[common], help="list past runs with their headline metrics")
    p.add_argument("--json", action="store_true", help="print the runs and their metrics as JSON")
    p.set_defaults(func=cmd_runs)

    p = sub.add_parser("show", parents=[common], help="the support matrix of a run, in the terminal")
    p.add_argument("run", nargs="?", help="run id (default: the latest)")
    p.add_argument("--response", metavar="ID", help="only this response")
    p.add_argument("--full", action="store_true", help="do not shorten long statements")
    p.set_defaults(func=cmd_show)

    p = sub.add_parser("report", parents=[common], help="export a run's report (HTML, PDF, JSON, CSV, xlsx)")
    p.add_argument("run", nargs="?", help="run id (default: the latest)")
    p.add_argument("-o", "--output", required=True, metavar="PATH",
                   help="the report file; its extension (.html, .pdf, .json, .csv, .xlsx) picks the format")
    p.add_argument("--format", choices=["html", "pdf", "json", "csv", "xlsx"],
                   help="the format when the file name does not say (it must agree with the extension)")
    p.add_argument("--group-by", action="append", metavar="COLUMN",
                   help="also break metrics down by this input column (default: columns with few values)")
    p.add_argument("--whois", action="store_true",
                   help="ask whois for each cited domain's registrant country (at most 200 domains, 5 s each; "
                        "off by default: country then comes from the top-level domain)")
    p.add_argument("--whois-server", metavar="HOST:PORT",
                   help="whois server to ask first (default whois.iana.org:43, which refers to the registry)")
    p.add_argument("--with-reviews", action="store_true",
                   help="lead with the figures and statuses that apply reviewer overrides (the judges-only figures "
                        "are shown beside them either way)")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("verify-report", parents=[common],
                       help="recompute a JSON report's metrics from the database and confirm they match")
    p.add_argument("report", help="a report written with --format json")
    p.set_defaults(func=cmd_verify_report)

    p = sub.add_parser("review-sample", parents=[common], help="draw statement/source pairs for human review")
    p.add_argument("run", nargs="?", help="run id (default: the latest)")
    p.add_argument("--n", type=int, default=200, help="pairs to draw (default 200)")
    p.add_argument("--stratify", default="label", choices=["label", "model", "none"],
                   help="strata: the judge's label (default), the model, or none")
    p.add_argument("--allocation", default="proportional", choices=["proportional", "equal"],
                   help="pairs per stratum: proportional to its size (default) or equal")
    p.add_argument("--seed", type=int, default=1, help="random seed (default 1)")
    p.add_argument("--name", metavar="NAME", help="sample name (default: from the options, e.g. label-n200-seed1)")
    p.add_argument("--blind", action="store_true", help="hide the judge's label from reviewers")
    p.add_argument("-o", "--output", metavar="FILE.csv", help="write the reviewer sheet ('-' = stdout)")
    p.set_defaults(func=cmd_review_sample)

    p = sub.add_parser("review-import", parents=[common], help="import a labelled review sheet (CSV)")
    p.add_argument("file", help="the CSV from review-sample with the 'label' column filled in")
    p.add_argument("--reviewer", required=True, metavar="NAME", help="who labelled the sheet")
    p.set_defaults(func=cmd_review_import)

    p = sub.add_parser("compare", parents=[common], help="compare two runs: metrics, statements, sources")
    p.add_argument("run_a", metavar="RUN_A", help="the run to compare from (the baseline)")
    p.add_argument("run_b", metavar="RUN_B", help="the run to compare with it")
    p.add_argument("--db-b", metavar="PATH", help="run B's database when it is another file")
    p.add_argument("--seed", type=int, default=0, help="bootstrap seed (default 0)")
    p.add_argument("--json", action="store_true", help="print the comparison as JSON")
    p.add_argument("--judges-only", action="store_true",
                   help="leave reviewer overrides out (default: count them, as the app's Results page does)")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("verify-pairs", parents=[progress], help="run a judge on statement/source pairs (JSONL)")
    p.add_argument("pairs", help='JSONL: {"id", "statement", "source"} or {"id", "claim", "evidence"}')
    p.add_argument("--judge", default="builtin", metavar="SPEC",
                   help="judge spec: builtin (default), openai:MODEL, anthropic:MODEL, "
                        "openai-compatible:URL#MODEL, local:PATH")
    p.add_argument("-o", "--output", metavar="PATH", help="output JSONL (default: stdout)")
    _add_judge_settings(p)
    p.set_defaults(func=cmd_verify_pairs)

    p = sub.add_parser("cleanup", parents=[progress],
                       help="SourceCleanup: suggest verified rewrites (or deletions) of unsupported statements")
    p.add_argument("run", nargs="?", help="run id (default: the latest)")
    p.add_argument("--model", metavar="SPEC",
                   help="the LLM that writes rewrites (default: the run's first LLM judge), e.g. openai:gpt-4o")
    p.add_argument("--accept", type=int, action="append", metavar="ID", help="accept suggestion ID (repeatable)")
    p.add_argument("--reject", type=int, action="append", metavar="ID", help="reject suggestion ID (repeatable)")
    p.add_argument("--by", metavar="NAME", help="who decides (default: your user name)")
    p.set_defaults(func=cmd_cleanup)

    p = sub.add_parser("revised", parents=[common], help="an answer with its accepted suggestions applied")
    p.add_argument("run", nargs="?", help="run id (default: the latest)")
    p.add_argument("--response", required=True, metavar="ID", help="the response id")
    p.add_argument("--accept-verified", action="store_true",
                   help="also apply every verified suggestion still pending (records no decision)")
    p.add_argument("--json", action="store_true", help="print original, revised text and changes as JSON")
    p.set_defaults(func=cmd_revised)

    p = sub.add_parser("demo", parents=[progress], help="audit the bundled sample offline and write a report")
    p.add_argument("-o", "--output", metavar="PATH", help="HTML report path (default ./sourcecheckup-demo-report.html)")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("gui", parents=[common], help="start the desktop app")
    p.add_argument("--run", metavar="RUN", help="open this run")
    p.set_defaults(func=cmd_gui)

    from .cli_benchmark import add_commands as add_benchmark_commands

    add_benchmark_commands(sub, progress)
    _finish_help(sub)
    return parser


def _finish_help(sub: Any) -> None:
    """Each command's help screen opens with its one-line description; numbers read N."""
    for choice in sub._choices_actions:
        p = sub.choices[choice.dest]
        if p.description is None:
            p.description = choice.help[0].upper() + choice.help[1:] + "."
        for action in p._actions:
            if action.type is int and action.metavar is None:
                action.metavar = "N"
        if not any("-q" in a.option_strings for a in p._actions):
            p.set_defaults(quiet=False)


def _reject_unknown(parser: argparse.ArgumentParser, extras: Sequence[str]) -> None:
    """Unknown arguments, reported with the command's own usage and the nearest option name."""
    import difflib

    options = [o for a in parser._actions for o in a.option_strings if o.startswith("--")]
    hints = []
    for arg in extras:
        if arg.startswith("--"):
            close = difflib.get_close_matches(arg.split("=", 1)[0], options, n=1, cutoff=0.75)
            if close:
                hints.append(f"{arg}: did you mean {close[0]}?")
    parser.error(f"unrecognized arguments: {' '.join(extras)}" + "".join(f"\n  {h}" for h in hints))


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    if extras:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        _reject_unknown(sub.choices[args.command], extras)
    try:
        return int(args.func(args))
    except UsageError as exc:
        _err(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:
        # the reader went away (`runs --json | head`): stop quietly, and keep Python's own flush
        # at exit from raising again on the closed stdout
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + 13   # what a shell reports for a command ended by SIGPIPE


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
