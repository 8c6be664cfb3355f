"""``audit``, ``verify-pairs`` and ``demo``: answers in, a stored run (or judged pairs) out."""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from ..events import EventKind, ProgressEvent
from ..metrics import judge_error_note
from .common import (
    EXIT_FAIL,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    ProgressPrinter,
    UsageError,
    check_judges,
    construction_errors,
    err,
    judge_options,
    open_store,
    run_config,
    shown,
)
from .finish import finish_audit


def _load_inputs(args: argparse.Namespace):
    from ..ingest import CsvMapping, IngestError, IngestResult, load_path, load_text

    mapping = CsvMapping(**{k: v for k, v in {
        "text_col": args.text_col, "citations_col": args.citations_col, "question_col": args.question_col,
        "model_col": args.model_col, "id_col": args.id_col}.items() if v})
    result = IngestResult(responses=[], skipped=[])
    args.stdin_text = None
    for p in args.inputs:
        try:
            if p == "-":
                args.stdin_text = sys.stdin.read()   # hashed with the input files (the run's provenance)
                part = load_text(args.stdin_text, question=args.question, model=args.model, origin="stdin")
            else:
                part = load_path(p, mapping=mapping, question=args.question, model=args.model)
        except IngestError as exc:
            raise UsageError(str(exc)) from exc
        except FileNotFoundError as exc:
            raise UsageError(f"{p}: no such file or folder") from exc
        result.extend(part)
    return result


def _input_split(value: str | None) -> tuple[int, int] | None:
    """--input-split N/K as (N, K), 1 <= N <= K."""
    if not value:
        return None
    part, _, of = value.partition("/")
    try:
        n, k = int(part), int(of)
    except ValueError:
        n = k = 0
    if not 1 <= n <= k:
        raise UsageError(f"--input-split {value}: give N/K with 1 <= N <= K, e.g. 1/4 for the first of four parts")
    return n, k


def _check_buildable(config: Any) -> None:
    """Build the run's judges and parser once, so a missing key or a bad model fails before the run."""
    from ..judges.base import make_judge
    from ..parse import make_parser

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
    except construction_errors() as exc:
        raise UsageError(str(exc)) from exc
    finally:
        asyncio.run(close())


async def _start_split(audit: Any, loaded: Any, label: str, split: tuple[int, int], in_input: int,
                       inputs: Any = ()) -> str:
    """Audit.start for one part of a split input, its part recorded in the run for `merge`."""
    from ..store.merge import mark_input_split

    part, of = split
    notes = [*loaded.notes, f"input split: part {part} of {of} ({len(loaded.responses)} of {in_input} answers)"]
    run_id = audit.create(loaded.responses, loaded.skipped, f"{label} (part {part} of {of})", notes, inputs)
    mark_input_split(audit.store, run_id, part, of, in_input)
    await audit.execute(run_id)
    return run_id


def cmd_audit(args: argparse.Namespace) -> int:
    from ..config import RunConfig
    from ..pipeline import Audit
    from ..report import ReportTargetError, check_report_target

    if not args.inputs and not args.resume:
        raise UsageError("give an input file or folder, '-' for standard input, or --resume RUN")
    for rep in args.report or []:
        if Path(rep).suffix.lower() not in (".json", ".csv", ".html", ".pdf", ".xlsx"):
            raise UsageError(f"--report {rep}: use a .json, .csv, .html, .pdf or .xlsx file name")
        try:
            check_report_target(rep)   # said before the audit, not after its work
        except ReportTargetError as exc:
            raise UsageError(f"--report: {exc}") from exc
    from .cluster import cmd_audit_cluster, is_cluster_resume

    if getattr(args, "cluster", None) or is_cluster_resume(args):
        return cmd_audit_cluster(args)
    progress = ProgressPrinter(args.quiet)
    if args.resume:
        store = open_store(args, create=False)
        try:
            run = store.get_run(args.resume)
        except Exception as exc:
            raise UsageError(str(exc)) from exc
        config = RunConfig.from_dict(run.config)
        corrected = bool(args.judge)
        if corrected:   # the run failed on its judge settings: resume with corrected ones
            config.judges = list(args.judge)
            check_judges(config.judges)
        else:
            check_judges(config.judges, fix=f"resume with corrected settings: audit --resume {run.id} --judge SPEC")
        _check_buildable(config)
        audit = Audit(store, config, progress=progress)
        coro = audit.resume(run.id, config if corrected else None)
    else:
        check_judges(args.judge or ["builtin"])
        split = _input_split(getattr(args, "input_split", None))
        loaded = _load_inputs(args)
        if not loaded.responses and not loaded.skipped:
            raise UsageError(f"no answers found in {', '.join(args.inputs)}")
        in_input = len(loaded.responses)
        if split:   # every process reads the whole input; part 1 alone keeps the skipped records
            part, of = split
            loaded.responses[:] = [r for i, r in enumerate(loaded.responses) if i % of == part - 1]
            if part != 1:
                loaded.skipped[:] = []
            if not loaded.responses:
                err(f"nothing to audit: part {part} of {of} holds none of the input's {in_input} "
                    f"answer{'' if in_input == 1 else 's'}")
                return EXIT_FAIL
        if not loaded.responses:   # every record skipped: an empty audit would look like a clean one
            for s in loaded.skipped:
                print(f"skipped {shown(s.origin)}: {shown(s.problem)}", file=sys.stderr)
            n = len(loaded.skipped)
            err("nothing to audit: " + (f"{loaded.skipped[0].origin} was skipped (reason above)" if n == 1 else
                                        f"all {n} records of the input were skipped (reasons above)"))
            return EXIT_FAIL
        config = run_config(args, batch=in_input > 1)   # every part of a split input is configured alike
        _check_buildable(config)
        # only now: a command refused for its input or settings leaves no empty database behind
        store = open_store(args, create=True)
        audit = Audit(store, config, progress=progress)
        label = ", ".join(args.inputs)
        if not args.quiet:
            for note in loaded.notes:
                print(f"note: {shown(note, lines=True)}", file=sys.stderr)
        from ..provenance import input_records

        inputs = input_records(args.inputs, args.stdin_text)   # each input file's SHA-256, as read
        if split:
            coro = _start_split(audit, loaded, label, split, in_input, inputs)
        else:
            coro = audit.start(loaded.responses, loaded.skipped, label, loaded.notes, inputs)
    from ..judges.versions import runtime_warning

    degraded = runtime_warning(config.judges)
    if degraded:   # said before the run and again under its figures (print_headline)
        print(f"warning: {degraded}", file=sys.stderr)
    if config.fetch.browser != "never":
        from ..fetching.browser import browser_status

        ok, message = browser_status(config.fetch.browser_executable)
        if not ok:
            print(f"warning: {message}", file=sys.stderr)
    try:
        run_id = asyncio.run(coro)
    except KeyboardInterrupt:
        err(f"interrupted; resume with: sourcecheckup audit --resume {audit.run_id} --db {store.path}")
        return EXIT_INTERRUPTED
    except Exception as exc:
        if isinstance(exc, construction_errors()):  # e.g. a local model that fails to load
            err(str(exc))
            return EXIT_USAGE
        err(f"the run could not complete: {type(exc).__name__}: {exc}")
        if audit.run_id:
            err(f"resume with: sourcecheckup audit --resume {audit.run_id} --db {store.path}")
        return EXIT_FAIL
    return finish_audit(args, store, run_id)


def cmd_verify_pairs(args: argparse.Namespace) -> int:
    from ..evidence import SourceText, quote_in_source
    from ..judges.base import make_judge
    from ..models import Label

    check_judges([args.judge])
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
    for _rid, _, _, problem in records:
        if problem:
            print(f"warning: {shown(problem, lines=True)}", file=sys.stderr)
    try:
        judge = make_judge(args.judge, **judge_options(args))
    except construction_errors() as exc:
        raise UsageError(str(exc)) from exc
    # (record index, statement, source) of each record without a problem: those have both texts
    good = [(i, statement, source) for i, (_, statement, source, problem) in enumerate(records)
            if problem is None and statement is not None and source is not None]
    progress = ProgressPrinter(args.quiet)

    async def go() -> list[Any]:
        out: list[Any] = []
        try:
            await judge.load()  # a broken local model fails before any pair
            for start in range(0, len(good), 64):
                chunk = good[start:start + 64]
                out.extend(await judge.verify_many([(statement, SourceText.from_text(source))
                                                    for _, statement, source in chunk]))
                progress(ProgressEvent(EventKind.JUDGED, "verify-pairs", pairs_total=len(good),
                                       pairs_done=len(out),
                                       judge_errors=sum(v.label is Label.JUDGE_ERROR for v in out)))
        finally:
            await judge.aclose()
        return out

    try:
        verdicts = asyncio.run(go())
    except Exception as exc:
        if isinstance(exc, construction_errors()):
            raise UsageError(str(exc)) from exc
        err(f"judging failed: {type(exc).__name__}: {exc}")
        return EXIT_FAIL
    by_index = {i: v for (i, _, _), v in zip(good, verdicts)}
    out_stream = open(args.output, "w", encoding="utf-8") if args.output and args.output != "-" else sys.stdout
    try:
        for i, (rid, _, source, problem) in enumerate(records):
            if problem:
                row = {"id": rid, "label": "judge_error", "score": None, "quote": "", "quote_found": None,
                       "review_first": False, "error": problem}
            else:
                v = by_index[i]
                # review_first: the screen is unsure of this pair, a person should read it first
                row = {"id": rid, "label": v.label.value, "score": round(v.score, 4), "quote": v.quote,
                       "quote_found": quote_in_source(v.quote, source or ""), "review_first": v.review_first,
                       "flags": list(v.flags), "rationale": v.rationale}
            out_stream.write(json.dumps(row, ensure_ascii=False) + "\n")
    finally:
        if out_stream is not sys.stdout:
            out_stream.close()
    counts = {"verdicts": len(verdicts), "judge_errors": sum(v.label is Label.JUDGE_ERROR for v in verdicts)}
    if judge_error_note(counts):
        print(f"sourcecheckup: warning: {judge_error_note(counts)}", file=sys.stderr)
    if verdicts and counts["judge_errors"] == len(verdicts):
        return EXIT_FAIL
    return EXIT_OK


def cmd_demo(args: argparse.Namespace) -> int:
    from .. import demo

    samples = demo.samples_dir()
    out = Path(args.output or "sourcecheckup-demo-report.html").resolve()
    if args.db is None:
        import platformdirs

        args.db = str(Path(platformdirs.user_data_dir("sourcecheckup", appauthor=False)) / "demo.db")
    ns = argparse.Namespace(**vars(args))
    ns.inputs = [str(demo.answers_dir())]
    ns.sources = str(demo.sources_dir())
    ns.report = [str(out), str(out.with_suffix(".json"))]
    ns.resume = None
    ns.refetch = False
    ns.no_archive = True          # the demo never leaves this machine
    # ...nor asks the public metadata services: reference checks only against endpoints given here
    given = {s: getattr(args, f"{s}_endpoint", None) for s in ("crossref", "pubmed", "openalex")}
    ns.no_references = not any(given.values())
    if not ns.no_references:
        # a service given no endpoint is pointed at the one given, never at its public address
        first = next(v for v in given.values() if v)
        for service, value in given.items():
            if not value:
                setattr(ns, f"{service}_endpoint", first)
    ns.browser = "never"
    for attr, default in (("judge", list(demo.DEMO_JUDGES)), ("parser", demo.DEMO_PARSER), ("consensus", "first"),
                          ("concurrency", 8), ("seed", 0), ("question", None), ("model", None),
                          ("allow_host", None), ("timeout", None), ("fetch_concurrency", None),
                          ("text_col", None), ("citations_col", None), ("question_col", None),
                          ("model_col", None), ("id_col", None)):
        if getattr(ns, attr, None) is None:
            setattr(ns, attr, default)
    if not args.quiet:
        print(f"demo: auditing the bundled sample answers ({len(list((samples / 'answers').iterdir()))} files) offline "
              f"with the built-in judge; database {args.db}", file=sys.stderr)
    code = cmd_audit(ns)
    if code == EXIT_OK:
        print(f"demo report: {out}")
    return code
