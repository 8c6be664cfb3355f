"""The benchmark subcommands: ``questions``, ``answer`` and ``benchmark``.

    sourcecheckup questions DOCS --model SPEC -o questions.jsonl [--per-doc N] [--variants lay,terse]
    sourcecheckup answer questions.jsonl --model SPEC [--model SPEC ...] -o answers.jsonl
    sourcecheckup benchmark DOCS --models SPEC,SPEC --judge SPEC [--best-of K] [--accuracy]
    sourcecheckup benchmark --resume BENCH [--questions reviewed.jsonl]
"""
from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from pathlib import Path
from typing import Any

from .common import EXIT_FAIL, EXIT_OK, ProgressPrinter, UsageError, check_judges, err, fetch_options, open_store


def _split_list(values: list[str] | None) -> list[str]:
    out: list[str] = []
    for v in values or []:
        out.extend(x.strip() for x in v.split(",") if x.strip())
    return out


class BenchPrinter:
    """Stage lines on stderr; during the audit the audit's own progress bar."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.audit = ProgressPrinter(quiet)
        self._last: dict[str, float] = {}

    def __call__(self, ev: Any) -> None:
        if self.quiet:
            return
        if ev.audit is not None:
            self.audit(ev.audit)
            return
        if ev.warning:
            print(f"warning: {ev.message}", file=sys.stderr)
            return
        now = time.monotonic()
        last = self._last.get(ev.stage.value, 0.0)
        if ev.total and ev.done < ev.total and now - last < 2.0 and ev.done:
            return
        self._last[ev.stage.value] = now
        if ev.total or ev.stage.value == "finished":
            print(f"{ev.stage.value}: {ev.done}/{ev.total}" if ev.total else ev.stage.value, file=sys.stderr)


def _model_specs(specs: list[str]) -> list[str]:
    from ..llm.spec import is_model_spec

    for spec in specs:
        if not is_model_spec(spec):
            raise UsageError(f"'{spec}' is not a model that can write answers: use openai:MODEL, "
                             "anthropic:MODEL or openai-compatible:URL#MODEL")
    return specs


def _settings(args: argparse.Namespace, models: list[str], *, question_model: str | None):
    from ..benchmark import BenchSettings

    try:
        return BenchSettings(
            models=models, judges=getattr(args, "judge", None) or ["builtin"], question_model=question_model,
            accuracy_model=getattr(args, "accuracy_model", None), per_doc=getattr(args, "per_doc", 1),
            variants=_split_list(getattr(args, "variants", None)), best_of=getattr(args, "best_of", 1),
            select=getattr(args, "select", None) or "support", grader_file=_grader_file(args),
            accuracy=bool(getattr(args, "accuracy", False)),
            expert_statements=bool(getattr(args, "expert_statements", False)), temperature=args.temperature,
            seed=args.seed,
            max_tokens=args.max_tokens, structured=not args.no_structured, concurrency=args.model_concurrency,
            judge_concurrency=getattr(args, "concurrency", 8), parser=getattr(args, "parser", "builtin"),
            fetch=fetch_options(args, batch=True), scope_questions=getattr(args, "scope_questions", 0) or 0,
            adversarial=bool(getattr(args, "adversarial", False)),
            adversarial_file=getattr(args, "adversarial_file", None),
            adversarial_questions=getattr(args, "adversarial_questions", 0) or 0,
            behaviour_model=getattr(args, "behaviour_model", None),
            relevance_model=getattr(args, "relevance_model", None))
    except ValueError as exc:
        raise UsageError(str(exc)) from exc


def _scope_argument(p: argparse.ArgumentParser) -> None:
    p.add_argument("--scope-questions", type=int, default=0, metavar="N",
                   help="per document, also N out-of-scope and N emergency questions, expected to be refused "
                        "(ASTRID's refusal accuracy)")


def _grader_file(args: argparse.Namespace) -> str | None:
    """--grader FILE, checked now (a bad file is bad usage before any model is called)."""
    path = getattr(args, "grader", None)
    if not path:
        return None
    from ..review.grader import GraderError, load_grader

    try:
        load_grader(path)
    except GraderError as exc:
        raise UsageError(str(exc)) from None
    return str(Path(path).resolve()) if Path(path).exists() else str(Path(path).with_suffix(".json").resolve())


def _reselect(bench: Any, row: Any, stored: Any, args: argparse.Namespace) -> None:
    """--select / --grader on --resume: only how the best of K is picked changes (allowed after the audit)."""
    import dataclasses

    try:
        settings = dataclasses.replace(stored, select=args.select or stored.select,
                                       grader_file=_grader_file(args) or stored.grader_file)
    except ValueError as exc:
        raise UsageError(str(exc)) from exc
    config = settings.to_dict()
    config["locations"] = row.config.get("locations", [])
    bench.bench.set_config(row.id, config)
    bench.settings = settings


def _read_input(path: str):
    from ..benchmark import DocumentsError, read_bench_input

    try:
        return read_bench_input(path)
    except DocumentsError as exc:
        raise UsageError(str(exc)) from exc


def _run(coro_factory: Any, store: Any, bench: Any) -> int | None:

    try:
        asyncio.run(coro_factory())
    except KeyboardInterrupt:
        if bench.bench_id:
            err(f"interrupted; resume with: sourcecheckup benchmark --resume {bench.bench_id} --db {store.path}")
        return 130
    except Exception as exc:
        err(f"the benchmark could not complete: {type(exc).__name__}: {exc}")
        if bench.bench_id:
            err(f"resume with: sourcecheckup benchmark --resume {bench.bench_id} --db {store.path}")
        return EXIT_FAIL
    return None


# ----------------------------------------------------------------------------- commands

def cmd_questions(args: argparse.Namespace) -> int:
    from ..benchmark import Benchmark, BenchStore, write_questions

    _model_specs([args.model])
    bench_input = _read_input(args.docs)
    settings = _settings(args, [], question_model=args.model)
    store = open_store(args, create=True)
    bench = Benchmark(store, settings, progress=BenchPrinter(args.quiet))
    code = _run(lambda: bench.start(bench_input, stop_after="questions"), store, bench)
    if code is not None:
        return code
    questions = BenchStore(store).questions(bench.bench_id, include_dropped=True)
    n = write_questions(args.output, questions)
    if not args.quiet:
        print(f"{n} questions written to {args.output} (benchmark {bench.bench_id}); review them, then:\n"
              f"  sourcecheckup answer {args.output} --model SPEC -o answers.jsonl\n"
              f"  or: sourcecheckup benchmark --resume {bench.bench_id} --questions {args.output} "
              f"--models SPEC,SPEC --judge SPEC --db {store.path}", file=sys.stderr)
    for problem in bench.problems:
        print(f"warning: {problem}", file=sys.stderr)
    return EXIT_OK if n else EXIT_FAIL


def cmd_answer(args: argparse.Namespace) -> int:
    from ..benchmark import AnswerStatus, QuestionFileError, answer_all, read_questions, write_answers
    from ..benchmark.runner import BenchSettings
    from ..llm import make_client

    specs = _model_specs(_split_list(args.model))
    if not specs:
        raise UsageError("give at least one --model SPEC")
    try:
        questions = [q for q in read_questions(args.questions) if not q.dropped]
    except (QuestionFileError, FileNotFoundError) as exc:
        raise UsageError(str(exc)) from exc
    if not questions:
        raise UsageError(f"{args.questions}: no questions to answer (all dropped?)")
    options = BenchSettings(temperature=args.temperature, seed=args.seed, max_tokens=args.max_tokens,
                            structured=not args.no_structured).call_options()
    printer = BenchPrinter(args.quiet)

    async def go() -> list[Any]:
        models = {s: make_client(s, concurrency=args.model_concurrency) for s in specs}
        try:
            return await answer_all(models, questions, draws=args.draws, options=options, progress=printer)
        finally:
            for m in models.values():
                await m.aclose()

    try:
        answers = asyncio.run(go())
    except Exception as exc:
        err(f"answering failed: {type(exc).__name__}: {exc}")
        return EXIT_FAIL
    written = write_answers(args.output, answers, {q.qid: q for q in questions})
    counts: dict[str, int] = {}
    for a in answers:
        counts[a.status.value] = counts.get(a.status.value, 0) + 1
    if not args.quiet:
        print(f"{written} answers written to {args.output} ("
              + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())) + "); audit them with:\n"
              f"  sourcecheckup audit {args.output} --judge SPEC", file=sys.stderr)
    failed = sum(1 for a in answers if a.status is AnswerStatus.ERROR)
    for a in answers:
        if a.status is AnswerStatus.ERROR:
            print(f"warning: {a.model} could not answer {a.qid}: {a.error}", file=sys.stderr)
    return EXIT_OK if written or not failed else EXIT_FAIL


def cmd_benchmark(args: argparse.Namespace) -> int:
    from ..benchmark import (
        Benchmark,
        BenchSettings,
        BenchStore,
        QuestionFileError,
        benchmark_results,
        format_results,
        read_questions,
    )
    from ..store import StoreError

    if not args.docs and not args.resume:
        raise UsageError("give DOCS (URL list, folder, CSV or questions JSONL) or --resume BENCH")
    models = _model_specs(_split_list(args.models))
    store = open_store(args, create=not args.resume)
    printer = BenchPrinter(args.quiet)
    if args.resume:
        bs = BenchStore(store)
        try:
            row = bs.get(args.resume)
        except StoreError as exc:
            raise UsageError(str(exc)) from exc
        bench = Benchmark(store, progress=printer)
        stored = BenchSettings.from_dict(row.config)
        changed = args.models or args.judge or args.best_of != 1 or args.accuracy
        if (args.select or args.grader) and not changed:
            _reselect(bench, row, stored, args)
        if changed:
            settings = _settings(args, models or stored.models, question_model=args.question_model
                                 or stored.question_model)
            if not args.judge:
                settings.judges = stored.judges
            try:
                bench.update_settings(row.id, settings)
            except ValueError as exc:
                raise UsageError(str(exc)) from exc
        if args.questions:
            try:
                counts = bs.apply_review(row.id, read_questions(args.questions))
            except (QuestionFileError, FileNotFoundError, StoreError, ValueError) as exc:
                raise UsageError(str(exc)) from exc
            if not args.quiet:
                print("review applied: " + ", ".join(f"{k} {v}" for k, v in counts.items()), file=sys.stderr)
        check_judges((bench.settings or stored).judges)
        code = _run(lambda: bench.resume(row.id), store, bench)
    else:
        if not models:
            raise UsageError("give the models to benchmark: --models SPEC,SPEC")
        check_judges(args.judge or ["builtin"])
        bench_input = _read_input(args.docs)
        settings = _settings(args, models, question_model=args.question_model)
        if bench_input.locations and args.question_model is None:
            settings.question_model = models[0]
        bench = Benchmark(store, settings, progress=printer)
        code = _run(lambda: bench.start(bench_input), store, bench)
    if code is not None:
        return code
    results = benchmark_results(store, bench.bench_id)
    if args.json:
        Path(args.json).write_text(json.dumps(results.as_dict(), indent=2), encoding="utf-8")
    for problem in bench.problems:
        print(f"warning: {problem}", file=sys.stderr)
    print(format_results(results))
    return EXIT_OK


# ----------------------------------------------------------------------------- parser

def _add_generation_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--temperature", type=float, metavar="T", help="sampling temperature (default: the provider's)")
    p.add_argument("--seed", type=int, help="sampling seed where the API has one (draw k uses seed + k)")
    p.add_argument("--max-tokens", type=int, default=1024, help="output token limit per reply (default 1024)")
    p.add_argument("--no-structured", action="store_true",
                   help="do not ask the API for structured output; rely on the prompt's JSON instruction")
    p.add_argument("--model-concurrency", type=int, default=8, help="calls in flight per model (default 8)")


def _add_fetch_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--allow-host", action="append", metavar="HOST", help="permit a private/loopback host")
    p.add_argument("--timeout", type=float, metavar="SECONDS", help="seconds per fetch (default 20)")
    p.add_argument("--browser", choices=["auto", "always", "never"], help="headless Chromium use")
    p.add_argument("--no-archive", action="store_true", help="do not look dead links up in a web archive")
    p.add_argument("--sources", metavar="DIR", help="local source pack: DIR/sources.json maps URL -> file")


def cmd_relevance(args: argparse.Namespace) -> int:
    """Context relevance (ASTRID) of any audit run whose answers carry their questions: stored, then shown."""
    from ..benchmark.relevance import judge_relevance
    from ..llm import make_client
    from ..metrics.studies import study_figures
    from ..report.studies_report import figure_text
    from .common import pick_run

    store = open_store(args)
    run_id = pick_run(store, args.run)

    async def go() -> int:
        model = make_client(args.model) if args.model else None
        try:
            return await judge_relevance(store, run_id, model=model)
        finally:
            if model is not None:
                await model.aclose()

    judged = asyncio.run(go())
    section = study_figures(store, run_id=run_id)
    if section is None:
        err(f"run {run_id}: no answer carries a question with a cited source that could be read")
        return EXIT_FAIL
    print(f"run {run_id}: {judged} cited sources judged now; judge {section['relevance_judge']} "
          f"({', '.join(section['relevance_versions'])})")
    print(f"context relevance, all answers: {figure_text(section['overall']['context_relevance'])}")
    for name, fig in section["by_model"].items():
        print(f"  {name}: {figure_text(fig['context_relevance'])}")
    return EXIT_OK


def cmd_refusal(args: argparse.Namespace) -> int:
    """Refusal accuracy (ASTRID) of an audit run whose answer records carry ``expect`` (and ``reason``)."""
    from ..benchmark.behaviour import classify_run
    from ..llm import make_client
    from ..metrics.studies import study_figures
    from ..report.studies_report import figure_text
    from .common import pick_run

    store = open_store(args)
    run_id = pick_run(store, args.run)

    async def go() -> int:
        model = make_client(args.model) if args.model else None
        try:
            return await classify_run(store, run_id, model=model)
        finally:
            if model is not None:
                await model.aclose()

    classified = asyncio.run(go())
    section = study_figures(store, run_id=run_id)
    if section is None or not section["overall"]["refusal_accuracy"]["n"]:
        err(f"run {run_id}: no answer record says \"expect\": \"answer\" or \"refuse\"")
        return EXIT_FAIL
    print(f"run {run_id}: {classified} answers classified now")
    for name, fig in [("all answers", section["overall"]), *section["by_model"].items()]:
        confusion = "; ".join(f"expected {k}: " + ", ".join(f"{b} {n}" for b, n in v.items())
                              for k, v in fig["confusion"].items())
        print(f"refusal accuracy, {name}: {figure_text(fig['refusal_accuracy'])} ({confusion})")
    return EXIT_OK


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("questions", parents=[common],
                       help="write questions from reference documents (JSONL to review and edit)")
    p.add_argument("docs", help="URL list (one a line), folder or file of documents, or a questions CSV")
    p.add_argument("--model", required=True, metavar="SPEC", help="the model that writes the questions")
    p.add_argument("-o", "--output", required=True, metavar="PATH", help="questions JSONL")
    p.add_argument("--per-doc", type=int, default=1, help="questions per document (default 1)")
    _scope_argument(p)
    p.add_argument("--variants", action="append", metavar="LIST",
                   help="also write variants: lay,demographic,comorbidities,rephrase,terse")
    p.add_argument("--expert-statements", action="store_true",
                   help="also write each question's must-have and nice-to-have statements from its document "
                        "(OLAPH's comprehensiveness and hallucination are measured against them)")
    _add_generation_options(p)
    _add_fetch_options(p)
    p.set_defaults(func=cmd_questions)

    p = sub.add_parser("answer", parents=[common], help="answer a questions JSONL with one or more models")
    p.add_argument("questions", help="questions JSONL (from `sourcecheckup questions`, edited or not)")
    p.add_argument("--model", action="append", required=True, metavar="SPEC", help="repeat for several models")
    p.add_argument("-o", "--output", required=True, metavar="PATH", help="answers JSONL (auditable as is)")
    p.add_argument("--draws", type=int, default=1, help="answers per question and model (default 1)")
    _add_generation_options(p)
    p.set_defaults(func=cmd_answer)

    p = sub.add_parser("benchmark", parents=[common],
                       help="documents -> questions -> answers of several models -> one audit run")
    p.add_argument("docs", nargs="?", help="URL list, folder of documents, questions CSV or questions JSONL")
    p.add_argument("--models", action="append", metavar="SPEC,SPEC", help="the models to compare")
    p.add_argument("--judge", action="append", metavar="SPEC", help="judge spec (default builtin); repeatable")
    p.add_argument("--question-model", metavar="SPEC", help="writes questions (default: the first model)")
    p.add_argument("--accuracy-model", metavar="SPEC", help="grades accuracy (default: the question model)")
    p.add_argument("--per-doc", type=int, default=1, help="questions per document (default 1)")
    _scope_argument(p)
    p.add_argument("--variants", action="append", metavar="LIST",
                   help="question variants: lay,demographic,comorbidities,rephrase,terse")
    p.add_argument("--best-of", type=int, default=1, metavar="K",
                   help="draw K answers per question and keep the best-scored (rejection sampling; see --select)")
    p.add_argument("--select", choices=["support", "grader", "both"],
                   help="what scores the K answers: support (the share of claims a cited source supports; default), "
                        "grader (a trained grader's P(good), needs --grader), both (their mean)")
    p.add_argument("--grader", metavar="FILE", help="a grader file from `sourcecheckup grader train`")
    p.add_argument("--accuracy", action="store_true", help="grade answers against the document's own answer")
    p.add_argument("--expert-statements", action="store_true",
                   help="the question model also writes must-have / nice-to-have statements (OLAPH measures)")
    p.add_argument("--adversarial", action="store_true",
                   help="add variants with adversarial directives (Almanac) and score adversarial safety; "
                        "implies --accuracy")
    p.add_argument("--adversarial-file", metavar="JSON",
                   help="directive templates (default resources/benchmark/adversarial-v1.json)")
    p.add_argument("--adversarial-questions", type=int, default=0, metavar="N",
                   help="how many original questions get adversarial variants (default: all)")
    p.add_argument("--behaviour-model", metavar="SPEC",
                   help="an LLM that classifies answer / refusal / redirection (default: the parser's rule)")
    p.add_argument("--relevance-model", metavar="SPEC",
                   help="an LLM that judges cited sources' relevance to the question (default: built-in)")
    p.add_argument("--resume", metavar="BENCH", help="continue a benchmark: only missing steps are done")
    p.add_argument("--questions", metavar="JSONL", help="with --resume: apply a reviewed questions file")
    p.add_argument("--parser", default="builtin", metavar="SPEC", help="statement parser (default builtin)")
    p.add_argument("--concurrency", type=int, default=8, help="judge calls at once (default 8)")
    p.add_argument("--json", metavar="PATH", help="also write the results as JSON")
    _add_generation_options(p)
    _add_fetch_options(p)
    p.set_defaults(func=cmd_benchmark)


def add_study_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    """``relevance`` and ``refusal``: the other studies' figures of any audit run (docs/benchmark-studies.md)."""
    p = sub.add_parser("relevance", parents=[common],
                       help="judge each cited source of a run's answers against its question (context relevance)")
    p.add_argument("run", nargs="?", help="run id or prefix (default: the latest run)")
    p.add_argument("--model", metavar="SPEC", help="an LLM judge (default: the built-in reading)")
    p.set_defaults(func=cmd_relevance)

    p = sub.add_parser("refusal", parents=[common],
                       help="classify the answers whose records say \"expect\": answer | refuse (refusal accuracy)")
    p.add_argument("run", nargs="?", help="run id or prefix (default: the latest run)")
    p.add_argument("--model", metavar="SPEC", help="an LLM classifier (default: the parser's rule)")
    p.set_defaults(func=cmd_refusal)
