"""Verdict parity: the demo as people install it gives the same verdicts as the source tree.

    python scripts/dist_check.py bundle dist/SourceCheckup    # the frozen app (`make dist-check`)
    python scripts/dist_check.py command /tmp/venv/bin/sourcecheckup   # a pip-installed entry point
    python scripts/dist_check.py compare source.json other.json        # two demo JSON reports

Each check runs the demo twice, once from this source tree (the interpreter running this script,
``-m sourcecheckup`` with the tree on its path) and once with the installed command, the second in a
clean environment (``env -i``: only PATH=/usr/bin:/bin, a fresh HOME and cache, no venv) and, where
the system allows it, without a network (``unshare -n``: a download the app tries at run time fails
loudly instead of passing unnoticed). Then it compares every verdict (label, score and the judge
version that gave it), every source (status, hash and length of the text read) and every headline
figure; any difference fails the check. ``bundle`` and ``command`` also audit a pasted answer
(standard input) against a page served on 127.0.0.1 and compare that verdict the same way.
Exit status 0: equal; 1: a difference (each one printed); 2: a run failed.
"""
from __future__ import annotations

import argparse
import contextlib
import functools
import http.server
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from typing import Any, Iterator, Sequence

ROOT = Path(__file__).resolve().parents[1]
SAMPLE_PAGE = ROOT / "resources" / "samples" / "sources" / "pages" / "nhs-metformin.html"
PASTED_ANSWER = ("Metformin can cause lactic acidosis, a rare but serious side effect [1].\n\n"
                 "[1] {url}\n")
# what the demo must hold to count as "every page read": the outcome of each source as the source tree reads it
EXPECTED_JUDGE = "builtin"


class CheckFailed(Exception):
    """A run did not complete; the message says which and shows its output."""


# ----------------------------------------------------------------------------- reading a report


def verdicts(report: dict[str, Any]) -> dict[tuple[str, str, str], tuple[str, float, str]]:
    """(statement id, url, judge) -> (label, score, judge version) for every verdict of a JSON report."""
    out = {}
    for response in report["responses"]:
        for statement in response["statements"]:
            for v in statement["verdicts"]:
                out[(statement["id"], v["url"], v["judge"])] = (v["label"], v["score"], v.get("model_version", ""))
    return out


def sources(report: dict[str, Any]) -> dict[str, tuple[str, str | None, int]]:
    """url -> (status, sha256 of the bytes read, characters of text) for every cited source."""
    return {s["url"]: (s["status"], s["sha256"], s["text_chars"]) for s in report["audit_trail"]["sources"]}


def headline(report: dict[str, Any]) -> dict[str, tuple[int, int]]:
    return {name: (m["k"], m["n"]) for name, m in report["metrics"].items() if isinstance(m, dict) and "n" in m}


def judge_versions(report: dict[str, Any]) -> dict[str, list[str]]:
    return {j["id"]: j["model_versions"] for j in report["audit_trail"]["judges"]}


def compare(reference: dict[str, Any], other: dict[str, Any], what: str) -> list[str]:
    """Every difference between two reports of the same input, one line each (empty: equal)."""
    problems: list[str] = []
    ref_v, oth_v = verdicts(reference), verdicts(other)
    for key in sorted(set(ref_v) | set(oth_v)):
        a, b = ref_v.get(key), oth_v.get(key)
        if a != b:
            problems.append(f"{what}: verdict {key[0]} x {key[1]} ({key[2]}): source {a} but installed {b}")
    ref_s, oth_s = sources(reference), sources(other)
    for url in sorted(set(ref_s) | set(oth_s)):
        if ref_s.get(url) != oth_s.get(url):
            problems.append(f"{what}: source {url}: source tree read {ref_s.get(url)} but installed {oth_s.get(url)}")
    if headline(reference) != headline(other):
        problems.append(f"{what}: headline figures differ: source {headline(reference)} but installed {headline(other)}")
    if judge_versions(reference) != judge_versions(other):
        problems.append(f"{what}: judge versions differ: source {judge_versions(reference)} "
                        f"but installed {judge_versions(other)}")
    return problems


def summary(report: dict[str, Any]) -> str:
    m = report["metrics"]
    return (f"{len(verdicts(report))} verdicts, judge {judge_versions(report)}, "
            f"statement support {m['statement_support']['k']}/{m['statement_support']['n']}, "
            f"URL validity {m['url_validity']['k']}/{m['url_validity']['n']}")


# ----------------------------------------------------------------------------- running the demo


def source_command() -> list[str]:
    """This tree's CLI, run by the interpreter running this script."""
    return [sys.executable, "-m", "sourcecheckup"]


def clean_env(home: Path) -> dict[str, str]:
    """What a person's fresh account gives a program (``env -i``): a PATH without any venv, an empty home,
    cache and settings; on Windows the few variables the system itself needs."""
    home.mkdir(parents=True, exist_ok=True)
    env = {"HOME": str(home), "LANG": "C.UTF-8", "QT_QPA_PLATFORM": "offscreen",
           "PYTHON_KEYRING_BACKEND": "keyring.backends.null.Keyring"}
    if os.name == "nt":
        system = os.environ.get("SYSTEMROOT", r"C:\Windows")
        env.update(SYSTEMROOT=system, PATH=os.pathsep.join([os.path.join(system, "System32"), system]),
                   USERPROFILE=str(home), APPDATA=str(home / "AppData" / "Roaming"),
                   LOCALAPPDATA=str(home / "AppData" / "Local"), TEMP=str(home / "Temp"), TMP=str(home / "Temp"))
        (home / "Temp").mkdir(exist_ok=True)
        return env
    env.update(PATH="/usr/bin:/bin", XDG_CACHE_HOME=str(home / ".cache"),
               XDG_DATA_HOME=str(home / ".local" / "share"), XDG_CONFIG_HOME=str(home / ".config"))
    return env


def offline_prefix() -> list[str]:
    """``unshare -n`` (a process with no network at all) where this system lets us use it, else nothing."""
    unshare = shutil.which("unshare")
    if unshare is None or sys.platform != "linux":
        return []
    probe = subprocess.run([unshare, "-n", "true"], capture_output=True)
    return [unshare, "-n"] if probe.returncode == 0 else []


def run(cmd: Sequence[str], what: str, *, cwd: Path, env: dict[str, str] | None = None, stdin: str | None = None,
        timeout: float = 900) -> subprocess.CompletedProcess[str]:
    print(f"dist-check: {what}: {' '.join(cmd)}", file=sys.stderr)
    done = subprocess.run(list(cmd), cwd=cwd, env=env, input=stdin, capture_output=True, text=True,
                          timeout=timeout)
    if done.returncode != 0:
        raise CheckFailed(f"{what} exited {done.returncode}\n--- stdout\n{done.stdout[-3000:]}\n"
                          f"--- stderr\n{done.stderr[-6000:]}")
    return done


def demo(cmd: Sequence[str], work: Path, what: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    work.mkdir(parents=True, exist_ok=True)
    done = run([*cmd, "demo", "--db", str(work / "demo.db"), "-o", str(work / "demo.html"), "--quiet"],
               f"demo ({what})", cwd=work if env is not None else ROOT, env=env)
    # warnings (a judge running degraded, a missing browser) are part of what a person sees
    for line in done.stderr.splitlines():
        if line.strip():
            print(f"  [{what}] {line}", file=sys.stderr)
    return json.loads((work / "demo.json").read_text(encoding="utf-8"))


@contextlib.contextmanager
def local_page() -> Iterator[str]:
    """The sample NHS metformin page served on 127.0.0.1; yields its URL."""
    folder = SAMPLE_PAGE.parent
    handler = functools.partial(http.server.SimpleHTTPRequestHandler, directory=str(folder))
    http.server.SimpleHTTPRequestHandler.log_message = lambda *a, **k: None  # type: ignore[method-assign]
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/{SAMPLE_PAGE.name}"
    finally:
        server.shutdown()
        server.server_close()


def pasted_audit(cmd: Sequence[str], work: Path, url: str, what: str,
                 env: dict[str, str] | None = None) -> dict[str, Any]:
    """The answer a person pastes (standard input), its cited page on this machine, one report."""
    work.mkdir(parents=True, exist_ok=True)
    report = work / "pasted.json"
    run([*cmd, "audit", "-", "--db", str(work / "pasted.db"), "--allow-host", "127.0.0.1", "--browser", "never",
         "--no-archive", "--no-references", "--report", str(report), "--quiet"],
        f"pasted answer ({what})", cwd=work if env is not None else ROOT, env=env,
        stdin=PASTED_ANSWER.format(url=url))
    return json.loads(report.read_text(encoding="utf-8"))


def check_pages_read(report: dict[str, Any], reference: dict[str, Any], what: str) -> list[str]:
    """Every demo page read as the source tree reads it (no extraction error, nothing left unread)."""
    problems = []
    ref = sources(reference)
    for url, (status, sha, chars) in sources(report).items():
        if status != ref.get(url, (None,))[0]:
            problems.append(f"{what}: {url} ended {status} (source tree: {ref.get(url, (None,))[0]})")
    for response in report["responses"]:
        for src in response["sources"]:
            if "could not extract" in (src.get("reason") or ""):
                problems.append(f"{what}: {src['url']}: {src['reason']}")
    return problems


def check_installed(cmd: Sequence[str], what: str, work: Path) -> int:
    """The demo and one pasted answer, from this tree and from the installed command; every difference."""
    prefix = offline_prefix()
    reference = demo(source_command(), work / "source", "source tree")
    installed = demo([*prefix, *cmd], work / "installed", what, clean_env(work / "home"))
    problems = compare(reference, installed, "demo") + check_pages_read(installed, reference, "demo")
    with local_page() as url:
        ref_pasted = pasted_audit(source_command(), work / "source", url, "source tree")
        # a page on 127.0.0.1 needs the network stack, so this run keeps it (it stays on this machine)
        inst_pasted = pasted_audit(cmd, work / "installed", url, what, clean_env(work / "home"))
    problems += compare(ref_pasted, inst_pasted, "pasted answer")
    pasted_sources = sources(inst_pasted)
    if not pasted_sources or any(s[0] != "ok" for s in pasted_sources.values()):
        problems.append(f"pasted answer: the page on 127.0.0.1 was not read: {pasted_sources}")
    print(f"dist-check: source tree: {summary(reference)}", file=sys.stderr)
    print(f"dist-check: {what}: {summary(installed)}{' (run without a network)' if prefix else ''}",
          file=sys.stderr)
    print(f"dist-check: pasted answer: source {list(verdicts(ref_pasted).values())}, "
          f"{what} {list(verdicts(inst_pasted).values())}", file=sys.stderr)
    for p in problems:
        print(f"DIFFERENT {p}")
    if not problems:
        print(f"dist-check: OK: {what} gives the source tree's {len(verdicts(reference))} demo verdicts, "
              f"reads all {len(sources(reference))} demo sources alike and judges the pasted answer alike")
    return 1 if problems else 0


def bundle_command(dist: Path) -> list[str]:
    """The frozen app's command line: its console executable (``sourcecheckup-cli``)."""
    for name in ("sourcecheckup-cli", "sourcecheckup-cli.exe"):
        exe = dist / name
        if exe.is_file():
            return [str(exe)]
    mac = dist / "Contents" / "MacOS" / "sourcecheckup-cli"
    if mac.is_file():
        return [str(mac)]
    raise CheckFailed(f"{dist}: no sourcecheckup-cli executable in the bundle (build it with `make dist`)")


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="mode", required=True)
    b = sub.add_parser("bundle", help="the frozen app's folder (dist/SourceCheckup)")
    b.add_argument("dist", type=Path)
    c = sub.add_parser("command", help="an installed sourcecheckup command (a venv's bin/sourcecheckup)")
    c.add_argument("command")
    r = sub.add_parser("compare", help="two demo JSON reports")
    r.add_argument("reference", type=Path)
    r.add_argument("other", type=Path)
    ap.add_argument("--work", type=Path, help="keep the runs here (default: a temporary folder)")
    args = ap.parse_args(argv)
    if args.mode == "compare":
        problems = compare(json.loads(args.reference.read_text()), json.loads(args.other.read_text()), "demo")
        for p in problems:
            print(f"DIFFERENT {p}")
        return 1 if problems else 0
    with tempfile.TemporaryDirectory(prefix="dist-check-") as tmp:
        work = args.work or Path(tmp)
        try:
            if args.mode == "bundle":
                return check_installed(bundle_command(args.dist.resolve()), "frozen app", work)
            return check_installed([str(Path(args.command).resolve())], "installed command", work)
        except (CheckFailed, subprocess.TimeoutExpired) as exc:
            print(f"dist-check: FAILED: {exc}", file=sys.stderr)
            return 2


if __name__ == "__main__":
    sys.exit(main())
