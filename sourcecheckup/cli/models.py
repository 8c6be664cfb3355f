"""``sourcecheckup models list | pull NAME | remove NAME | import DIR --name NAME``: downloaded checkers."""
from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from typing import Any

from ..judges import models_hub
from .common import EXIT_FAIL, EXIT_OK, EXIT_USAGE, err


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("models", parents=[common],
                       help="recommended fact-checking models: list, pull, import, remove")
    msub = p.add_subparsers(dest="models_command", metavar="ACTION",
                            help="list | pull NAME | remove NAME | import DIR --name NAME")
    msub.required = True
    q = msub.add_parser("list", help="the catalogue and the models installed")
    q.add_argument("--json", action="store_true", help="print the catalogue and installed models as JSON")
    q.set_defaults(func=cmd_models_list)
    q = msub.add_parser("pull", help="download a catalogue model or a hub repository (org/name); "
                                     "$HF_ENDPOINT picks a mirror")
    q.add_argument("-q", "--quiet", action="store_true", help="no progress bar")
    q.add_argument("name", help="a name from `models list`, or org/name on the hub")
    q.add_argument("--revision", metavar="REV", help="branch, tag or commit (default main)")
    q.set_defaults(func=cmd_models_pull)
    q = msub.add_parser("remove", help="delete an installed model")
    q.add_argument("name")
    q.set_defaults(func=cmd_models_remove)
    q = msub.add_parser("import", help="install a model folder copied from another machine (no internet needed)")
    q.add_argument("folder", help="a folder with config.json, tokenizer files and weights")
    q.add_argument("--name", required=True, help="the name to judge with: local:NAME")
    q.set_defaults(func=cmd_models_import)


def cmd_models_list(args: argparse.Namespace) -> int:
    entries = models_hub.catalogue()
    have = {m.name: m for m in models_hub.installed()}
    if args.json:
        import json
        from dataclasses import asdict

        print(json.dumps({
            "catalogue": [asdict(e) | {"installed": e.name in have} for e in entries],
            "installed": [asdict(m) | {"path": str(m.path), "judge": m.judge_spec} for m in have.values()],
            "models_dir": str(models_hub.models_dir())}, indent=2))
        return EXIT_OK
    print("Recommended checkers (accuracy as published by their authors):")
    for e in entries:
        mark = ("installed" if e.name in have else f"via Ollama: ollama pull {e.ollama_model}" if e.via == "ollama"
                else f"get it: sourcecheckup models pull {e.name}")
        print(f"\n  {e.name}  [{mark}]")
        print(f"    {e.repo} · {e.kind} · {e.parameters} · {e.size}")
        licence = e.licence + {True: "", False: " — NON-COMMERCIAL use only",
                               None: " — commercial use unclear"}[e.commercial_use]
        print(f"    licence: {licence}")
        print(f"    hardware: {e.hardware}")
        print(f"    accuracy: {e.accuracy}")
        print(f"    source: {e.citation}")
        print(f"    judge: {e.judge}")
    others = [m for m in have.values() if models_hub.catalogue_entry(m.name) is None]
    if others:
        print("\nAlso installed:")
        for m in others:
            print(f"  {m.name}  ({m.source}{': ' + m.repo if m.repo else ''}) · judge: {m.judge_spec}")
    print(f"\nModels folder: {models_hub.models_dir()}")
    return EXIT_OK


class _Bar:
    """Pull progress on stderr: a redrawn line on a terminal, a line every few seconds in a log."""

    def __init__(self, quiet: bool) -> None:
        self.quiet = quiet
        self.tty = sys.stderr.isatty()
        self._last = 0.0

    def __call__(self, p: models_hub.PullProgress) -> None:
        now = time.monotonic()
        if self.quiet or now - self._last < (0.1 if self.tty else 3.0):
            return
        self._last = now
        frac = p.done_bytes / p.total_bytes if p.total_bytes else 1.0
        bar = "#" * int(24 * min(frac, 1.0))
        line = (f"[{bar:<24}] {frac:5.1%} · {p.done_bytes / 1e6:.1f}/{p.total_bytes / 1e6:.1f} MB · "
                f"file {p.files_done + 1}/{p.files_total} {p.file}")
        print(("\r" + line[:160]) if self.tty else line, end="" if self.tty else "\n", file=sys.stderr, flush=True)

    def done(self) -> None:
        if self.tty and not self.quiet:
            print(file=sys.stderr)


def cmd_models_pull(args: argparse.Namespace) -> int:
    entry = models_hub.catalogue_entry(args.name)
    if entry is not None and entry.licence_warning:
        print(f"Licence: {entry.licence_warning}", file=sys.stderr)
    cancel = threading.Event()
    bar = _Bar(args.quiet)
    result: dict[str, Any] = {}

    def work() -> None:
        try:
            result["model"] = models_hub.pull(args.name, progress=bar, cancel=cancel, revision=args.revision)
        except BaseException as exc:   # reported below, on the main thread
            result["error"] = exc

    # the download runs in a thread so that Ctrl-C cancels it cleanly (the bytes so far are kept)
    worker = threading.Thread(target=work, daemon=True)
    worker.start()
    try:
        while worker.is_alive():
            worker.join(0.2)
    except KeyboardInterrupt:
        cancel.set()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        worker.join()
    bar.done()
    error = result.get("error")
    if isinstance(error, models_hub.PullCancelled):
        err(f"{error}")
        return 130
    if isinstance(error, models_hub.ModelHubError):
        err(str(error))
        return EXIT_FAIL
    if error is not None:
        raise error
    model = result["model"]
    print(f"{model.name}: installed in {model.path}")
    print(f"judge with: --judge {model.judge_spec}  (works offline)")
    return EXIT_OK


def cmd_models_remove(args: argparse.Namespace) -> int:
    try:
        folder = models_hub.remove(args.name)
    except models_hub.ModelHubError as exc:
        err(str(exc))
        return EXIT_USAGE
    print(f"removed {folder}")
    return EXIT_OK


def cmd_models_import(args: argparse.Namespace) -> int:
    try:
        model = models_hub.import_folder(args.folder, args.name)
    except models_hub.ModelHubError as exc:
        err(str(exc))
        return EXIT_USAGE
    print(f"{model.name}: imported into {model.path}")
    print(f"judge with: --judge {model.judge_spec}")
    return EXIT_OK
