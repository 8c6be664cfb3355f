"""``sourcecheckup repair``: after the audit, a source that supports each unsupported statement (PubMed,
Europe PMC, Crossref) and, with ``--open-access``, the open-access copy of a cited paywalled paper."""
from __future__ import annotations

import argparse
import asyncio
import json
import os
from typing import Any

from .common import EXIT_FAIL, EXIT_OK, UsageError, err, open_store, pick_run, shown
from .references import plain

NCBI_KEY_ENV = "NCBI_API_KEY"


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("repair", parents=[common],
                       help="find a source that supports each unsupported statement (PubMed, Europe PMC, "
                            "Crossref), judged by the run's judge; --open-access: an open-access copy of a cited paper")
    p.add_argument("run", nargs="?", metavar="RUN", help="run id (default: the latest)")
    p.add_argument("--statement", type=int, metavar="ID", help="only this statement (its id, as `show` lists it)")
    p.add_argument("--open-access", action="store_true",
                   help="also look up open-access copies of the cited DOIs and PMIDs (Unpaywall, Europe PMC)")
    p.add_argument("--contact-email", metavar="ADDR",
                   help="your e-mail address: NCBI's and Crossref's polite identity; Unpaywall requires it")
    p.add_argument("--pubmed-endpoint", metavar="URL", help="E-utilities base URL")
    p.add_argument("--crossref-endpoint", metavar="URL", help="Crossref REST API base URL")
    p.add_argument("--europepmc-endpoint", metavar="URL",
                   help="Europe PMC REST base URL (default https://www.ebi.ac.uk/europepmc/webservices/rest)")
    p.add_argument("--unpaywall-endpoint", metavar="URL", help="Unpaywall base URL (default https://api.unpaywall.org/v2)")
    p.add_argument("--lookup-timeout", metavar="SECONDS", type=float, help="seconds each service is given (default 10)")
    p.add_argument("--lookup-rate", metavar="N", type=float, help="requests a second to each service (default 5, "
                                                                   "PubMed at most 3)")
    p.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                   help="a host the fetcher may reach though its address is private (tests: 127.0.0.1)")
    p.add_argument("--accept", type=int, metavar="ID",
                   help="accept the source offered for statement ID (with --open-access: its open-access copy); "
                        "`sourcecheckup revised --repairs` then cites it")
    p.add_argument("--json", action="store_true", help="print the repairs as JSON")
    p.set_defaults(func=cmd_repair)


def _ncbi_key() -> str:
    """The NCBI API key: the keyring's 'ncbi' entry, else $NCBI_API_KEY ('' when neither)."""
    from ..llm.secrets import find_api_key

    found = find_api_key("ncbi")
    return found[0] if found else os.environ.get(NCBI_KEY_ENV, "")


def cmd_repair(args: argparse.Namespace) -> int:
    from ..config import ConfigError, build_lookup_settings
    from ..fetching import make_fetcher
    from ..fetching.base import FetchOptions
    from ..references.repair import EUROPEPMC, UNPAYWALL, RepairClient, RepairError, run_repair

    store = open_store(args)
    run_id = pick_run(store, args.run)
    if args.accept is not None:
        from ..references.repair import accept_repair

        try:
            accept_repair(store, run_id, args.accept, "open_access" if args.open_access else "find")
        except RepairError as exc:
            raise UsageError(str(exc)) from exc
        print(f"run {run_id}: the repair of statement {args.accept} is accepted")
        return EXIT_OK
    try:
        settings = build_lookup_settings(crossref_endpoint=args.crossref_endpoint, pubmed_endpoint=args.pubmed_endpoint,
                                         contact_email=args.contact_email, lookup_timeout_s=args.lookup_timeout,
                                         lookup_requests_per_second=args.lookup_rate)
    except ConfigError as exc:
        raise UsageError(f"{exc.option}: {exc.problem}") from exc
    if not settings.enabled:
        err("repair needs the network, and lookups are off here (SOURCECHECKUP_REFERENCES=off)")
        return EXIT_FAIL

    async def go() -> list[Any]:
        fetcher = make_fetcher(FetchOptions(allow_hosts=tuple(args.allow_host), browser="never"))
        try:
            async with RepairClient(settings, store, europepmc_endpoint=args.europepmc_endpoint or EUROPEPMC,
                                    unpaywall_endpoint=args.unpaywall_endpoint or UNPAYWALL,
                                    ncbi_api_key=_ncbi_key()) as client:
                assert isinstance(client, RepairClient)
                return await run_repair(store, run_id, client, statement_pk=args.statement,
                                        open_access=args.open_access, fetcher=fetcher)
        finally:
            await fetcher.aclose()

    try:
        asyncio.run(go())
    except RepairError as exc:
        err(str(exc))
        return EXIT_FAIL
    return print_repairs(store, run_id, args)


def print_repairs(store: Any, run_id: str, args: argparse.Namespace) -> int:
    from ..references.repair import NO_SOURCE

    rows = [r for r in store.repairs(run_id) if args.statement is None or r["statement_pk"] == args.statement]
    if args.json:
        print(json.dumps({"run": run_id, "repairs": rows}, indent=2, ensure_ascii=False))
        return EXIT_OK if all(r["status"] != "incomplete" for r in rows) else EXIT_FAIL
    for r in rows:
        what = "open-access copy" if r["kind"] == "open_access" else "find a source"
        print(shown(f"statement {r['statement_pk']} ({what}): {plain(r['statement'], 120)}"))
        offered = next((c for c in r["candidates"] if c["key"] == r["offered_key"]), None)
        if offered:
            print(shown(f"  offered: {plain(offered['url'])}  {plain(offered['title'], 100)}"))
            print(shown(f"  verdict: {offered['label']}; quote (found in its {offered['text_kind'].replace('_', ' ')}): "
                        f"\"{plain(offered['quote'], 200)}\""))
            print(shown(f"  found by: {plain(offered['found_by'], 160)}"))
        else:
            label = NO_SOURCE if r["status"] == "none_found" else "not finished"
            print(f"  {label}; {len(r['candidates'])} candidate(s) tried")
            for c in r["candidates"]:
                print(shown(f"    tried {plain(c['url'])}: {c['label'] or c.get('note', 'not judged')}"))
        for e in r["errors"]:
            print(shown(f"  service failed: {plain(e, 200)} (kept what was found; run `repair` again to resume)"))
    incomplete = sum(1 for r in rows if r["status"] == "incomplete")
    offered_n = sum(1 for r in rows if r["status"] == "offered")
    print(f"run {run_id}: {len(rows)} repairs: {offered_n} offered, "
          f"{sum(1 for r in rows if r['status'] == 'none_found')} {NO_SOURCE}, {incomplete} not finished")
    return EXIT_FAIL if incomplete else EXIT_OK
