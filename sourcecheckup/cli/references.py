"""``sourcecheckup references``: the reference checks of a run (``references RUN``) and the Retraction Watch
data they read (``references update``); also the audit's reference-check flags."""
from __future__ import annotations

import argparse
import csv
import json
import os
import re
import shutil
import sys
import tempfile
from datetime import date, datetime, timezone
from pathlib import Path
from typing import Any

from .common import EXIT_FAIL, EXIT_OK, UsageError, err, open_store, pick_run, shown

# the Retraction Watch data as Crossref publishes it (openly, updated daily)
RETRACTION_WATCH_URL = "https://gitlab.com/crossref/retraction-watch-data/-/raw/main/retraction_watch.csv"
UPDATE = "update"
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u202a-\u202e\u2066-\u2069]")


def add_reference_options(p: argparse.ArgumentParser, demo: bool = False) -> None:
    """The audit's metadata-service flags (each takes the API's base URL)."""
    note = " (the demo checks references only when an endpoint is given)" if demo else ""
    p.add_argument("--crossref-endpoint", metavar="URL",
                   help="Crossref REST API base URL (default https://api.crossref.org)" + note)
    p.add_argument("--pubmed-endpoint", metavar="URL",
                   help="PubMed E-utilities base URL (default https://eutils.ncbi.nlm.nih.gov/entrez/eutils)")
    p.add_argument("--openalex-endpoint", metavar="URL", help="OpenAlex API base URL (default https://api.openalex.org)")
    p.add_argument("--retraction-data", metavar="FILE",
                   help="the Retraction Watch CSV (default: the one `sourcecheckup references update` saved)")
    p.add_argument("--contact-email", metavar="ADDR",
                   help="your e-mail address, sent to Crossref and PubMed as their polite-use identity")
    p.add_argument("--lookup-timeout", metavar="SECONDS", type=float,
                   help="seconds a metadata service is given to answer (default 10; 1 to 120)")
    p.add_argument("--match-threshold", metavar="X", type=float,
                   help="the title match a written reference needs to count as found (default 0.75; 0.5 to 1)")
    p.add_argument("--lookup-rate", metavar="N", type=float,
                   help="requests a second to each metadata service (default 5, PubMed at most 3; 0.2 to 20)")


def add_commands(sub: Any, common: argparse.ArgumentParser) -> None:
    p = sub.add_parser("references", parents=[common],
                       help="the reference checks of a run (does each cited paper exist, is it the one named, "
                            "was it retracted); `references update` fetches the retraction data")
    p.add_argument("run", nargs="?", metavar="RUN",
                   help="run id (default: the latest), or `update` to download or import the Retraction Watch data")
    p.add_argument("--json", action="store_true", help="print the checks as JSON")
    p.add_argument("--problems", action="store_true",
                   help="only references that are not verified, or are retracted or withdrawn")
    p.add_argument("--full", action="store_true", help="do not shorten citations and evidence")
    p.add_argument("--url", metavar="URL", help=f"update: download from here (default {RETRACTION_WATCH_URL})")
    p.add_argument("--from", dest="from_file", metavar="FILE",
                   help="update: import this Retraction Watch CSV instead of downloading (offline machines)")
    p.set_defaults(func=cmd_references)


def plain(text: Any, limit: int | None = None) -> str:
    """Text from a service or an answer, safe for a terminal: no control characters, one line, shortened."""
    s = " ".join(_CONTROL.sub("", str(text or "")).split())
    if limit and len(s) > limit:
        s = s[:limit - 1] + "…"
    return s


_NOTICE_WORDS = {"retraction": "RETRACTED", "withdrawal": "WITHDRAWN", "expression_of_concern": "concern",
                 "correction": "corrected"}


def notices_text(check: Any) -> str:
    """The notices on the matched paper in a word each ('RETRACTED 2024-02-01', 'corrected'), or '-'."""
    words = [" ".join(w for w in (_NOTICE_WORDS.get(n.kind.value, n.kind.value), plain(n.date)) if w)
             for n in check.notices]
    return ", ".join(dict.fromkeys(words)) or "-"


def is_problem(check: Any) -> bool:
    from ..references.model import ReferenceStatus

    return check.status is not ReferenceStatus.VERIFIED or check.retracted


def cmd_references(args: argparse.Namespace) -> int:
    if args.run == UPDATE:
        return cmd_references_update(args)
    if args.url or args.from_file:
        raise UsageError("--url and --from belong to `sourcecheckup references update`")
    store = open_store(args)
    run_id = pick_run(store, args.run)
    checks = store.reference_checks(run_id)
    listed = {url: c for url, c in checks.items() if not args.problems or is_problem(c)}
    if args.json:
        print(json.dumps({"run": run_id, "references": [{"citation": url, **c.to_dict()} for url, c in listed.items()]},
                         indent=2, ensure_ascii=False))
        return EXIT_OK
    if not checks:
        print(f"run {run_id}: no reference checks (reference checks were off, or it cites no DOI, PMID or "
              "written reference)")
        return EXIT_OK
    rows = [(c.status.value, notices_text(c), plain(url, None if args.full else 60),
             plain(c.evidence, None if args.full else 200)) for url, c in listed.items()]
    header = ("STATUS", "NOTICES", "CITATION", "EVIDENCE")
    widths = [max(len(r[i]) for r in [header, *rows]) for i in range(3)]
    for row in [header, *rows]:   # one row per checked citation
        print(shown("  ".join(f"{cell:<{w}}" for cell, w in zip(row, widths)) + "  " + row[3]))
    counts: dict[str, int] = {}
    for c in checks.values():
        counts[c.status.value] = counts.get(c.status.value, 0) + 1
    retracted = sum(1 for c in checks.values() if c.retracted)
    summary = ", ".join(f"{n} {status}" for status, n in counts.items())
    print(f"run {run_id}: {len(checks)} references checked: {summary}; {retracted} retracted or withdrawn"
          + (f" ({len(listed)} shown)" if args.problems else ""))
    return EXIT_OK


def summarise_retraction_data(path: Path) -> tuple[int, str]:
    """Rows of a Retraction Watch CSV and the date of its latest notice ('' when none is dated)."""
    rows, latest = 0, None
    with path.open("r", encoding="utf-8-sig", errors="replace", newline="") as fh:
        for row in csv.DictReader(fh):
            rows += 1
            when = _date(row.get("RetractionDate") or "")
            if when and (latest is None or when > latest):
                latest = when
    return rows, latest.isoformat() if latest else ""


def _date(text: str) -> date | None:
    text = text.strip().split(" ")[0]
    for fmt in ("%m/%d/%Y", "%Y-%m-%d", "%d/%m/%Y"):
        try:
            return datetime.strptime(text, fmt).date()
        except ValueError:
            continue
    return None


def cmd_references_update(args: argparse.Namespace) -> int:
    from ..config import ConfigError, check_retraction_data

    try:
        from ..references import retractions
    except ImportError as exc:
        err(f"the retraction data reader is not available in this install: {exc}")
        return EXIT_FAIL
    dest = Path(retractions.default_retraction_path())
    dest.parent.mkdir(parents=True, exist_ok=True)
    if args.from_file:
        if args.url:
            raise UsageError("give --url or --from, not both")
        try:
            source = Path(check_retraction_data(args.from_file))
        except ConfigError as exc:
            raise UsageError(f"--from: {exc.problem}") from exc
        fd, tmp = tempfile.mkstemp(prefix=".retraction-", suffix=".csv", dir=dest.parent)
        os.close(fd)
        shutil.copyfile(source, tmp)
        os.replace(tmp, dest)   # whole or not at all: a run never reads half a file
        what = f"imported {source}"
    else:
        url = args.url or RETRACTION_WATCH_URL
        try:
            retractions.download(url, dest)
        except Exception as exc:
            err(f"the retraction data could not be downloaded from {url}: {type(exc).__name__}: {exc} "
                "(on a machine without internet, import a copy with `sourcecheckup references update --from FILE`)")
            return EXIT_FAIL
        what = f"downloaded {url}"
    try:
        check_retraction_data(dest)
    except ConfigError as exc:
        err(f"{what}, but {exc.problem}")
        return EXIT_FAIL
    rows, latest = summarise_retraction_data(dest)
    saved = datetime.fromtimestamp(dest.stat().st_mtime, tz=timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    print(f"{what}", file=sys.stderr)
    print(f"retraction data: {dest}: {rows:,} notices, latest dated {latest or 'unknown'}, saved {saved}")
    return EXIT_OK
