"""What every command shares: exit codes, usage errors, the progress printer, opening the
database, picking a run, and turning flags into a run configuration."""
from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import time
from pathlib import Path
from typing import Any, Sequence

from ..events import EventKind, ProgressEvent

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
EXIT_INTERRUPTED = 130   # Ctrl-C, as a shell reports a command ended by SIGINT


def exit_interrupted() -> None:
    """End the process now, after Ctrl-C. What the command keeps is committed by then; the worker pool
    drops the calls it has not started and ends the ones it holds (its processes are let go of cleanly, so
    nothing of theirs is left over), and the interpreter's teardown, which keeps nothing (the embedding
    model's torch, every module's objects), is skipped: it took seconds on a busy machine."""
    import gc

    from ..workers import close_shared_pool

    close_shared_pool()
    gc.collect()   # the pool's queues go now, releasing their semaphores (os._exit runs no finalizer)
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(EXIT_INTERRUPTED)


class UsageError(Exception):
    """Bad usage: reported with exit code 2."""


# What a terminal acts on instead of showing: C0 and C1 controls (ESC starts ANSI and OSC sequences: a
# line erased, a fake "✓ supported" drawn, the clipboard written by OSC 52) and the bidi controls that
# reorder what follows them (U+202E makes "gpj.exe" read "exe.jpg").
_UNSHOWABLE = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
_UNSHOWABLE_KEEP_LINES = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def shown(text: Any, lines: bool = False) -> str:
    """Text from an answer, a page, a model or a file, made safe to print: every control character and
    bidi control written as its code point (``<U+001B>``, ``<U+202E>``). ``lines``: newlines are kept
    (a message of several lines); else a newline is shown too, so a one-line field draws no line of its own.
    Every place the command line prints such text goes through here."""
    pattern = _UNSHOWABLE_KEEP_LINES if lines else _UNSHOWABLE
    return pattern.sub(lambda m: f"<U+{ord(m.group(0)):04X}>", str(text))


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
            print(f"warning: {shown(ev.message, lines=True)}", file=self.stream)
            return
        if self.quiet:
            return
        now = time.monotonic()
        final = ev.kind is EventKind.RUN_FINISHED
        if not final and now - self._last < (0.1 if self.tty else 5.0):
            return
        self._last = now
        # the bar follows verdicts (one per pair and judge): with several judges pairs finish in steps
        total, done = (ev.verdicts_total, ev.verdicts_done) if ev.verdicts_total else (ev.pairs_total, ev.pairs_done)
        frac = done / total if total else (ev.sources_done / max(ev.sources_total, 1))
        width = 24
        bar = "#" * int(width * min(frac, 1.0))
        refs = f"references {ev.references_done}/{ev.references_total} · " if ev.references_total else ""
        verdicts = (f"verdicts {ev.verdicts_done}/{ev.verdicts_total} · "
                    if ev.verdicts_total and ev.verdicts_total != ev.pairs_total else "")
        line = (f"[{bar:<{width}}] responses {ev.responses_done}/{ev.responses_total} · "
                f"sources {ev.sources_done}/{ev.sources_total} · {refs}pairs {ev.pairs_done}/{ev.pairs_total} · "
                f"{verdicts}"
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


def err(msg: str) -> None:
    print(f"sourcecheckup: error: {shown(msg, lines=True)}", file=sys.stderr)


# the databases a command opened: closed when it ends (cli.main), so that their last changes are checkpointed
# into the file then, not whenever the garbage collector comes by (a caller that runs main() in-process)
_OPENED: list[Any] = []


def opened(store: Any) -> Any:
    """Close ``store`` when the command ends."""
    _OPENED.append(store)
    return store


def close_opened() -> None:
    while _OPENED:
        store = _OPENED.pop()
        try:
            store.close()
        except Exception:   # closing twice, or a connection already gone: nothing left to flush
            pass


def open_store(args: argparse.Namespace, create: bool = False, reading: bool = False):
    """The run database; only commands that write runs (``create``) may start a new one. A reading
    command opens a database it cannot write (a read-only mount) read-only; a writing one is told
    that the database is read-only."""
    from ..store import Store, StoreError, default_db_path, not_yet_a_database

    path = Path(args.db) if args.db else default_db_path()
    if not create and not path.exists():
        raise UsageError(f"{path}: no such database (audit something first with `sourcecheckup audit`, "
                         "or name an existing one with --db PATH)")
    if reading and path.is_file() and (why := not_yet_a_database(path)):
        raise UsageError(f"{path} is not a SourceCheckup database ({why}); it is left as it is: name a database "
                         "written by `sourcecheckup audit` with --db")
    try:
        store = Store(path, read_only=None if reading else False)
    except StoreError as exc:
        raise UsageError(str(exc)) from exc
    if store.read_only:
        print(f"sourcecheckup: note: {path} is opened read-only ({store.read_only_why})", file=sys.stderr)
    return opened(store)


def pick_run(store: Any, run: str | None) -> str:
    """The run a command names, else the latest; a missing one is bad usage."""
    from ..store import StoreError

    run_id = run or store.latest_run_id()
    if not run_id:
        raise UsageError(f"no runs in {store.path}")
    try:
        return store.get_run(run_id).id
    except StoreError as exc:
        raise UsageError(str(exc)) from exc


# the CLI's flag for each setting that build_run_config may refuse
_FLAGS = {"sources_dir": "--sources", "use_archive": "--use-archive", "browser": "--browser",
          "judge_concurrency": "--concurrency", "consensus": "--consensus",
          "crossref_endpoint": "--crossref-endpoint", "pubmed_endpoint": "--pubmed-endpoint",
          "openalex_endpoint": "--openalex-endpoint", "contact_email": "--contact-email",
          "retraction_data": "--retraction-data", "lookup_timeout_s": "--lookup-timeout",
          "match_threshold": "--match-threshold", "lookup_requests_per_second": "--lookup-rate",
          "embeddings": "--embeddings", "reader": "--reader"}


def _usage(exc: Any, args: argparse.Namespace) -> UsageError:
    """A refused choice (a ConfigError) in the CLI's words."""
    if exc.option == "sources_dir":
        return UsageError(f"--sources {Path(args.sources)}: {exc.problem}")
    if exc.option == "use_archive":
        return UsageError("--use-archive needs archive lookups; drop --no-archive")
    return UsageError(f"{_FLAGS.get(exc.option, exc.option)}: {exc.problem}")


def _fetch_choices(args: argparse.Namespace, batch: bool) -> dict[str, Any]:
    """build_fetch_options' keywords from the fetch flags a command has (the benchmark has fewer)."""
    return {"batch": batch, "browser": getattr(args, "browser", None),
            "archive_lookup": not getattr(args, "no_archive", False),
            "use_archive": bool(getattr(args, "use_archive", False)),
            "archive_endpoint": getattr(args, "archive_endpoint", None),
            "allow_hosts": getattr(args, "allow_host", None) or (), "sources_dir": getattr(args, "sources", None),
            "timeout_s": getattr(args, "timeout", None), "fetch_concurrency": getattr(args, "fetch_concurrency", None),
            "doi_resolver": getattr(args, "doi_resolver", None), "respect_robots": getattr(args, "robots", None)}


def _reference_choices(args: argparse.Namespace) -> dict[str, Any]:
    """build_run_config's reference-check keywords from the flags a command has (none: the defaults)."""
    return {"references": not getattr(args, "no_references", False),
            "crossref_endpoint": getattr(args, "crossref_endpoint", None),
            "pubmed_endpoint": getattr(args, "pubmed_endpoint", None),
            "openalex_endpoint": getattr(args, "openalex_endpoint", None),
            "contact_email": getattr(args, "contact_email", None),
            "lookup_timeout_s": getattr(args, "lookup_timeout", None),
            "match_threshold": getattr(args, "match_threshold", None),
            "lookup_requests_per_second": getattr(args, "lookup_rate", None),
            "retraction_data": getattr(args, "retraction_data", None)}


def fetch_options(args: argparse.Namespace, batch: bool = False):
    """The fetch options of a command's flags; robots.txt is respected by default for batch runs."""
    from ..config import ConfigError, build_fetch_options

    try:
        return build_fetch_options(**_fetch_choices(args, batch))
    except ConfigError as exc:
        raise _usage(exc, args) from exc


def run_config(args: argparse.Namespace, batch: bool = False):
    """The audit's RunConfig, built and checked by the same function as the app's Settings."""
    from ..config import ConfigError, build_run_config

    options = judge_options(args)
    try:
        return build_run_config(judges=args.judge, parser=args.parser, consensus=args.consensus,
                                judge_concurrency=args.concurrency, judge_options=options,
                                refetch=args.refetch, seed=args.seed, embeddings=getattr(args, "embeddings", None),
                                reader=getattr(args, "reader", None),
                                **_reference_choices(args),
                                **_fetch_choices(args, batch))
    except ConfigError as exc:
        raise _usage(exc, args) from exc


def judge_options(args: argparse.Namespace) -> dict[str, Any]:
    """Judge settings from --prompt, --full-source and --token-budget (checked here: exit 2 when bad)."""
    from ..prompts import PromptError, load_prompt

    options: dict[str, Any] = {}
    if getattr(args, "prompt", None):
        try:
            prompt = load_prompt(Path(args.prompt), required=("source", "statement"))
        except PromptError as exc:
            raise UsageError(f"--prompt: {exc}") from exc
        options["prompt_path"] = str(prompt.path.resolve())
    if getattr(args, "full_source", False):
        options["full_source"] = True
    if getattr(args, "judge_key_env", None):
        options["key_env"] = args.judge_key_env
    budget = getattr(args, "token_budget", None)
    if budget is not None:
        if budget < 50:
            raise UsageError("--token-budget must be at least 50 tokens")
        options["token_budget"] = budget
    return options


def construction_errors() -> tuple[type[Exception], ...]:
    """Errors that mean a judge or parser cannot be built as named: bad usage (exit 2), not a crash."""
    from ..judges.base import JudgeSpecError
    from ..llm.secrets import MissingKeyError
    from ..parse import ParserSpecError
    from ..prompts import PromptError

    return (MissingKeyError, JudgeSpecError, ParserSpecError, PromptError)


def check_judges(specs: Sequence[str], fix: str = "--judge") -> None:
    """Refuse a bad judge spec or a missing API key before anything starts (exit 2)."""
    from ..judges import validate_judge_spec

    for spec in specs:
        problem = validate_judge_spec(spec)
        if problem:
            raise UsageError(f"{problem} (fix: {fix})")


def require_plugins() -> None:
    """Load the plugins (once); one that cannot be imported is bad usage (exit 2)."""
    from ..plugins import load_plugins

    try:
        load_plugins()
    except ImportError as exc:
        raise UsageError(str(exc)) from exc
