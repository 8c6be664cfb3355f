"""Check the layout rules of docs/architecture.md; CI runs it (tests/project/test_layout.py).

    python scripts/check_layout.py [--max-lines N] [--quiet]

1. No import cycles among the modules of ``sourcecheckup/`` and ``ui/`` (imports inside functions
   count too; only those under ``if TYPE_CHECKING:`` do not).
2. No module over ``--max-lines`` lines (default 700).
3. No SQL outside ``sourcecheckup/store/`` (a string that starts like a SQL statement).
4. No loose module directly in ``sourcecheckup/`` that is not on the short list ``TOP_LEVEL`` below, where
   each has its one role (docs/architecture.md, "The top level", lists the same modules and roles). A new
   module goes into the package of its concept; one that truly belongs to none is added to both lists.
Prints each violation and exits 1 when there is one; prints a one-line summary either way.
"""
from __future__ import annotations

import argparse
import ast
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("sourcecheckup", "ui")
SQL = re.compile(r"^\s*(SELECT|INSERT|UPDATE|DELETE|CREATE|DROP|ALTER|PRAGMA|WITH|REPLACE|BEGIN|COMMIT)\b"
                 r"[\s\S]*\b(FROM|INTO|SET|TABLE|INDEX|VIEW|TRIGGER|\w+\s*=|EXCLUSIVE|IMMEDIATE|TRANSACTION|\()",
                 )
SQL_HOME = ("sourcecheckup", "store")
# the loose modules of sourcecheckup/, each with its one role (as docs/architecture.md lists them)
TOP_LEVEL = {
    "__init__": "the package and its version",
    "__main__": "`python -m sourcecheckup` runs the command line",
    "cleanup": "SourceCleanup: verified rewrites of unsupported statements",
    "compare": "two runs side by side, with intervals on the differences",
    "config": "RunConfig and build_run_config, the one place choices become a checked run configuration",
    "demo": "the demo's sample answers, source pack and offline configuration, for every front end",
    "events": "the progress events the engine emits",
    "evidence": "a source cut into passages, BM25 ranking and the one quote matcher",
    "injection": "text in a source that addresses the judge, flagged on the verdicts that read it",
    "models": "the records that cross module boundaries (responses, statements, sources, verdicts)",
    "plugins": "loading plugins (entry points and $SOURCECHECKUP_PLUGINS)",
    "prompts": "versioned prompt files: load, check, fill",
    "provenance": "what a run was made with: input hashes, software, judges, retraction data",
    "registry": "Registry: the named judges, parsers, report formats and PDF writers plugins add to",
    "resources": "where resources/ lives, in the source tree and in an installed copy",
    "run_owner": "which process runs a run, so an interrupted run reads as interrupted",
    "urls": "cited URLs found in text and brought to one canonical form",
    "warmup": "what a process's first audit pays once, paid ahead by the app",
    "workers": "worker processes for a run's CPU work (reading documents, splitting answers)",
}


def modules() -> dict[str, Path]:
    """Dotted module name -> file, for every module of the checked packages."""
    found: dict[str, Path] = {}
    for pkg in PACKAGES:
        for path in sorted((ROOT / pkg).rglob("*.py")):
            parts = list(path.relative_to(ROOT).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join(parts)] = path
    return found


def _is_type_checking(node: ast.If) -> bool:
    test = node.test
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def _imports(tree: ast.Module) -> list[ast.Import | ast.ImportFrom]:
    """Every import of a module, also inside functions (a deferred import that dodges a cycle is
    still a cycle of concepts); only those under ``if TYPE_CHECKING:`` are left out."""
    skipped = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and _is_type_checking(node)
               for stmt in node.body for n in ast.walk(stmt)}
    return [n for n in ast.walk(tree) if isinstance(n, (ast.Import, ast.ImportFrom)) and id(n) not in skipped]


def import_graph(mods: dict[str, Path]) -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {m: set() for m in mods}
    for name, path in mods.items():
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        is_pkg = path.name == "__init__.py"
        base = name.split(".") if is_pkg else name.split(".")[:-1]
        for node in _imports(tree):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                if node.level:
                    anchor = base[: len(base) - (node.level - 1)]
                    prefix = ".".join(anchor + ([node.module] if node.module else []))
                else:
                    prefix = node.module or ""
                # ``from pkg import sub`` depends on the submodule, as ``from pkg.sub import x`` does; a
                # name that is no module (a function, a class, ``*``) is the module it comes from
                targets = [f"{prefix}.{a.name}" for a in node.names]
            for t in targets:
                # the deepest known module the import names (a package's __init__ counts too)
                while t and t not in mods:
                    t = t.rpartition(".")[0]
                if t and t != name:
                    graph[name].add(t)
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []
    counter = [0]
    sys.setrecursionlimit(10000)

    def visit(v: str) -> None:
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def sql_outside_store(mods: dict[str, Path]) -> list[str]:
    found = []
    for name, path in mods.items():
        if tuple(name.split(".")[:2]) == SQL_HOME:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"), str(path))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and SQL.match(node.value):
                found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {node.value.strip()[:60]!r}")
    return found


def loose_modules(package: Path, allowed: dict[str, str] | None = None) -> list[str]:
    """The modules directly in ``package`` that are not on the list (``TOP_LEVEL`` by default)."""
    allowed = TOP_LEVEL if allowed is None else allowed
    return [f"{path.relative_to(package.parent)}: a loose top-level module not on the list (TOP_LEVEL in "
            "scripts/check_layout.py, docs/architecture.md): move it into the package of its concept"
            for path in sorted(package.glob("*.py")) if path.stem not in allowed]


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--max-lines", type=int, default=700, metavar="N", help="longest module allowed (default 700)")
    ap.add_argument("--quiet", action="store_true", help="print only the summary line")
    args = ap.parse_args(argv)
    mods = modules()
    problems: list[str] = []
    for comp in cycles(import_graph(mods)):
        problems.append("import cycle: " + " <-> ".join(comp))
    for name, path in mods.items():
        n = len(path.read_text(encoding="utf-8").splitlines())
        if n > args.max_lines:
            problems.append(f"{path.relative_to(ROOT)}: {n} lines (more than {args.max_lines})")
    problems += [f"SQL outside sourcecheckup/store/: {s}" for s in sql_outside_store(mods)]
    problems += loose_modules(ROOT / "sourcecheckup")
    if not args.quiet:
        for p in problems:
            print(p)
    print(f"layout: {len(mods)} modules; {len(problems)} problem{'s' if len(problems) != 1 else ''}")
    return 1 if problems else 0


if __name__ == "__main__":
    raise SystemExit(main())
