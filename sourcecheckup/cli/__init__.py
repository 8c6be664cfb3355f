"""The `sourcecheckup` command: every engine capability as a subcommand.

This package owns the command line: the parser and ``main`` here, one module per group of commands
(``audit``, ``runs``, ``review``, ``benchmark``) and what they share in ``common``.
Exit codes: 0 success, 2 bad usage (unknown option, missing file, bad judge spec),
1 when a run could not complete (the reason on stderr).
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Any, Sequence

from .. import __version__
from . import benchmark, grades, judges, merge, models, references, repair
from .audit import cmd_audit, cmd_demo, cmd_verify_pairs
from .common import (
    EXIT_FAIL,
    EXIT_INTERRUPTED,
    EXIT_USAGE,
    UsageError,
    close_opened,
    err,
    exit_interrupted,
    require_plugins,
)
from .review import cmd_cleanup, cmd_review_import, cmd_review_sample, cmd_revised
from .runs import cmd_compare, cmd_keygen, cmd_report, cmd_runs, cmd_show, cmd_verify_report


def cmd_gui(args: argparse.Namespace) -> int:
    try:
        from ui.app import main as gui_main  # type: ignore[import-not-found]
    except ImportError as exc:
        err(f"the desktop app is not available in this install: {exc}")
        return EXIT_FAIL
    argv = []
    if args.db:
        argv += ["--db", str(args.db)]
    if args.run:
        argv += ["--run", args.run]
    return int(gui_main(argv) or 0)


def _add_audit_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--judge", action="append", metavar="SPEC",
                   help="judge spec: builtin (default), openai:MODEL, anthropic:MODEL, "
                        "openai-compatible:URL#MODEL, checker:URL#MODEL (a Yes/No checker such as "
                        "Bespoke-MiniCheck), local:PATH; repeat for several")
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
    p.add_argument("--no-references", action="store_true",
                   help="do not check cited DOIs, PMIDs and written references in Crossref, PubMed and OpenAlex")
    references.add_reference_options(p)


def _add_judge_settings(p: argparse.ArgumentParser) -> None:
    p.add_argument("--prompt", metavar="FILE",
                   help="your own verifier prompt (a [system] and a [user] section with {{statement}} and "
                        "{{source}}; see resources/prompts/verifier-v1.txt)")
    p.add_argument("--full-source", action="store_true",
                   help="send the whole source text to LLM judges when it fits the model's window "
                        "(default: the best passages up to --token-budget)")
    p.add_argument("--token-budget", type=int, metavar="N",
                   help="evidence tokens per statement for LLM judges (default 1000)")
    p.add_argument("--judge-key-env", metavar="NAME",
                   help="the environment variable holding the API key of an openai-compatible: or checker: "
                        "server (default: the keyring entry 'openai-compatible', else SOURCECHECKUP_JUDGE_KEY)")


def build_parser() -> argparse.ArgumentParser:
    from ..store import DB_ENV, default_db_path

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
    p.add_argument("--input-split", metavar="N/K",
                   help="audit only part N of K of the answers (every answer i with i %% K == N-1), so K processes "
                        "share one input; join their databases with `sourcecheckup merge`")
    p.add_argument("--embeddings", metavar="URL#MODEL",
                   help="the built-in judge's sentence embeddings from a served model: an OpenAI-compatible "
                        "/v1/embeddings (vLLM, Ollama, llama.cpp --embeddings, TEI), e.g. "
                        "http://127.0.0.1:8080/v1#all-minilm; it must run all-MiniLM-L6-v2 for the same labels")
    p.add_argument("--reader", metavar="URL#MODEL|tei:URL",
                   help="the learned reader's probabilities (builtin on whole pages, builtin:reader everywhere) from "
                        "a rerank server: vLLM's /v1/rerank (e.g. "
                        "http://127.0.0.1:8000/v1#sourcecheckup-reader) or TEI's /rerank (tei:http://127.0.0.1:8080); "
                        "it must serve the bundled reader")
    p.add_argument("--cluster", metavar="tcp://HOST:PORT",
                   help="spread the audit over a Dask cluster (its scheduler's address): input-split shards as "
                        "tasks, retried when a worker dies, merged into --db; an interrupted one resumes with "
                        "--resume RUN or the same command again. Needs pip install 'sourcecheckup[cluster]'")
    p.add_argument("--cluster-shards", type=int, metavar="K", help="shards of a --cluster audit (default: twice "
                   "the workers, at least 2)")
    p.add_argument("--cluster-files", choices=("shared", "sent"), help="shared (default): the workers read the "
                   "input and write their parts at the driver's paths (one machine, or a shared filesystem); sent: "
                   "the input travels with each shard's task and its part comes back as the task's result "
                   "(workers on machines of their own)")
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

    p = sub.add_parser("report", parents=[progress], help="export a run's report (HTML, PDF, JSON, CSV, xlsx)")
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
    p.add_argument("--sign", metavar="KEYFILE",
                   help="sign the JSON report's digest with this Ed25519 private key (make one with "
                        "`sourcecheckup keygen KEYFILE`); verify-report --key KEYFILE.pub checks it")
    p.set_defaults(func=cmd_report)

    p = sub.add_parser("verify-report", parents=[common],
                       help="rebuild a report from the database and confirm every field matches (JSON; CSV, XLSX, "
                            "HTML cell by cell or line by line; PDF by the text of every page)")
    p.add_argument("report", help="a report file: .json (every field), .csv, .xlsx, .html or .pdf")
    p.add_argument("--key", metavar="PUBLIC_KEY",
                   help="check the JSON report's Ed25519 signature with this public key (PEM or OpenSSH)")
    p.set_defaults(func=cmd_verify_report)

    p = sub.add_parser("keygen", parents=[common], help="make an Ed25519 key pair for signing reports (report --sign)")
    p.add_argument("key", help="the private key file to write (PEM, mode 0600); the public key goes to KEY.pub")
    p.set_defaults(func=cmd_keygen)

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
    p.add_argument("--with-reviews", action="store_true",
                   help="apply reviewer overrides to both runs (default: judges only, as `show`, `runs`, `report` "
                        "and the app lead with)")
    p.add_argument("--judges-only", action="store_true",
                   help="leave reviewer overrides out (the default; kept for scripts that name it)")
    p.set_defaults(func=cmd_compare)

    p = sub.add_parser("verify-pairs", parents=[progress], help="run a judge on statement/source pairs (JSONL)")
    p.add_argument("pairs", help='JSONL: {"id", "statement", "source"} or {"id", "claim", "evidence"}')
    p.add_argument("--judge", default="builtin", metavar="SPEC",
                   help="judge spec: builtin (default), openai:MODEL, anthropic:MODEL, "
                        "openai-compatible:URL#MODEL, checker:URL#MODEL, local:PATH")
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
    p.add_argument("--repairs", action="store_true",
                   help="also cite the new source of each accepted repair (`sourcecheckup repair RUN --accept ID`)")
    p.add_argument("--json", action="store_true", help="print original, revised text and changes as JSON")
    p.set_defaults(func=cmd_revised)

    p = sub.add_parser("demo", parents=[progress], help="audit the bundled sample offline and write a report")
    p.add_argument("-o", "--output", metavar="PATH", help="HTML report path (default ./sourcecheckup-demo-report.html)")
    references.add_reference_options(p, demo=True)
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("gui", parents=[common], help="start the desktop app")
    p.add_argument("--run", metavar="RUN", help="open this run")
    p.set_defaults(func=cmd_gui)

    benchmark.add_commands(sub, progress)
    benchmark.add_study_commands(sub, common)
    references.add_commands(sub, common)
    repair.add_commands(sub, common)
    merge.add_command(sub, common)
    models.add_commands(sub, common)
    _finish_help(judges.add_commands(sub, common))
    _finish_help(grades.add_commands(sub, common))
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
    """The command line; ``argv`` None: this process's own arguments (the console script, ``python -m``),
    and then an interrupted command ends the process at once (exit_interrupted)."""
    code = _run(argv)
    if code == EXIT_INTERRUPTED and argv is None:
        exit_interrupted()
    return code


def _run(argv: Sequence[str] | None) -> int:
    parser = build_parser()
    args, extras = parser.parse_known_args(argv)
    args.argv = list(sys.argv[1:] if argv is None else argv)   # --cluster hands the audit's own to its shards
    if extras:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        _reject_unknown(sub.choices[args.command], extras)
    try:
        require_plugins()   # once, for every command: judges, parsers and PDF writers may come from plugins
        return int(args.func(args))
    except UsageError as exc:
        err(str(exc))
        return EXIT_USAGE
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # the reader went away (`runs --json | head`): stop quietly, and keep Python's own flush
        # at exit from raising again on the closed stdout
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return 128 + 13   # what a shell reports for a command ended by SIGPIPE
    finally:
        close_opened()   # the databases it opened, closed now (cli.common.opened)
