"""``sourcecheckup judges ...``: finding and choosing a judge (``detect``: model servers on this
computer; ``guide``: the three ways to a strong judge)."""
from __future__ import annotations

import argparse
import json
from typing import Any

from ..judges.detect import DEFAULT_TIMEOUT_S, HOST, PORTS_ENV, LocalServer, find_local_servers, port_name, ports_to_ask
from ..judges.guide import guide_text
from ..llm.secrets import COMPATIBLE_KEY_HINT
from .common import EXIT_OK, UsageError


def format_servers(servers: list[LocalServer], asked: list[int]) -> str:
    """What ``judges detect`` prints: each server, its kind, its models and the spec that uses each."""
    lines: list[str] = []
    for server in servers:
        lines.append(f"{server.kind} on {HOST}:{server.port} ({server.base_url})")
        if server.needs_key:
            lines.append(f"  needs a key: it answered 401; {COMPATIBLE_KEY_HINT}")
        if not server.models and server.needs_key:
            pass
        elif not server.models:
            pull = "ollama pull bespoke-minicheck" if server.kind == "Ollama" else "load a model in the server"
            lines.append(f"  no models yet ({pull}, then run this again)")
        width = max((len(m) for m in server.models), default=0)
        for model in server.models:
            lines.append(f"  {model:<{width}}  --judge {server.spec(model)}")
        lines.append("")
    silent = [p for p in asked if p not in {s.port for s in servers}]
    if silent:
        lines.append("Nothing answered on " + ", ".join(f"{HOST}:{p} ({port_name(p)})" for p in silent) + ".")
    if not servers:
        lines.append("No model server is running on this computer. Start one (e.g. `ollama serve`, then "
                     "`ollama pull bespoke-minicheck`) or see `sourcecheckup judges guide` for the other ways.")
    else:
        lines.append("A judge on this computer needs no --allow-host (that option is for cited URLs).")
    return "\n".join(lines).rstrip()


def cmd_judges_detect(args: argparse.Namespace) -> int:
    try:
        asked = ports_to_ask(args.port)
    except ValueError as exc:
        raise UsageError(f"{exc}; give --port N (or ${PORTS_ENV}=N,M) with ports from 1 to 65535") from exc
    if args.timeout is not None and args.timeout <= 0:
        raise UsageError("--timeout must be a positive number of seconds")
    servers = find_local_servers(asked, args.timeout or DEFAULT_TIMEOUT_S)
    if args.json:
        print(json.dumps({"host": HOST, "ports": asked, "servers": [s.as_dict() for s in servers]}, indent=2))
    else:
        print(format_servers(servers, asked))
    return EXIT_OK


def cmd_judges_guide(args: argparse.Namespace) -> int:
    print(guide_text())
    return EXIT_OK


def add_commands(sub: Any, common: argparse.ArgumentParser) -> Any:
    """The ``judges`` group: detect, guide, compare; returns its subparsers."""
    from .judge_compare import add_compare_command

    judges = sub.add_parser("judges", parents=[common], help="find, choose and compare judges (detect, guide, compare)")
    group = judges.add_subparsers(dest="judges_command", metavar="SUBCOMMAND",
                                  help="detect: model servers on this computer; guide: the three ways to a judge; "
                                       "compare: which judge agrees best with your reviewers")
    group.required = True
    add_compare_command(group, common)

    p = group.add_parser("detect", parents=[common],
                         help="list the model servers running on this computer and the judge spec of each model",
                         description="Ask 127.0.0.1 (and nothing else) on the ports of Ollama (11434), LM Studio "
                                     "(1234), llama.cpp (8080) and vLLM (8000) which models they serve.")
    p.add_argument("--port", type=int, action="append", metavar="N",
                   help=f"ask this port instead of the known ones (repeatable; or ${PORTS_ENV}=N,M)")
    p.add_argument("--timeout", type=float, metavar="SECONDS",
                   help=f"seconds to wait for each server (default {DEFAULT_TIMEOUT_S:g})")
    p.add_argument("--json", action="store_true", help="print the servers and their models as JSON")
    p.set_defaults(func=cmd_judges_detect)

    p = group.add_parser("guide", parents=[common], help="the three ways to a strong judge: costs, needs, accuracy",
                         description="The three ways to a strong judge: what each costs, needs and how accurate "
                                     "its authors found it.")
    p.set_defaults(func=cmd_judges_guide)
    return group
