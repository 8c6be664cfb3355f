"""The engine is importable and usable without Qt: only ui/ may import PySide6."""
from __future__ import annotations

import re

from tests.support.paths import ROOT

ENGINE = ROOT / "sourcecheckup"


def test_no_module_of_the_engine_imports_qt():
    offenders = [str(p.relative_to(ENGINE)) for p in ENGINE.rglob("*.py")
                 if re.search(r"^\s*(from|import)\s+(PySide6|PyQt\d|shiboken6)", p.read_text(), re.M)]
    assert offenders == []


def test_layout_rules_hold_no_cycles_no_long_modules_no_sql_outside_the_store(capsys):
    """scripts/check_layout.py: the rules docs/architecture.md states, over sourcecheckup/ and ui/."""
    import runpy

    check = runpy.run_path(str(ENGINE.parent / "scripts" / "check_layout.py"))
    code = check["main"]([])
    assert code == 0, capsys.readouterr().out


def test_the_layout_check_would_catch_a_cycle_and_sql():
    import runpy

    check = runpy.run_path(str(ENGINE.parent / "scripts" / "check_layout.py"))
    assert check["cycles"]({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert check["SQL"].match("SELECT * FROM runs WHERE id = ?")
    assert not check["SQL"].match("Select the run you want to open from the list.")


def test_importing_a_submodule_from_its_package_depends_on_the_submodule_not_the_package(tmp_path):
    """``from . import kinds`` in pkg/judge.py, with pkg/__init__.py re-exporting judge: judge depends on
    pkg.kinds only, so that is no cycle; a name that is no module still points at the package."""
    import runpy

    check = runpy.run_path(str(ENGINE.parent / "scripts" / "check_layout.py"))
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    (pkg / "__init__.py").write_text("from .judge import Judge\n")
    (pkg / "kinds.py").write_text("KIND = 1\n")
    (pkg / "judge.py").write_text("from . import kinds\n\nclass Judge: ...\n")
    (pkg / "late.py").write_text("from . import Judge\n")
    mods = {"pkg": pkg / "__init__.py", "pkg.kinds": pkg / "kinds.py", "pkg.judge": pkg / "judge.py",
            "pkg.late": pkg / "late.py"}
    graph = check["import_graph"](mods)
    assert graph["pkg.judge"] == {"pkg.kinds"}
    assert graph["pkg.late"] == {"pkg"}
    assert check["cycles"](graph) == []


def test_the_layout_check_would_catch_a_loose_top_level_module(tmp_path):
    """Rule 4: a module directly in sourcecheckup/ that is not on the documented list fails the check."""
    import runpy

    check = runpy.run_path(str(ENGINE.parent / "scripts" / "check_layout.py"))
    package = tmp_path / "sourcecheckup"
    package.mkdir()
    for name in ("__init__.py", "models.py", "stray.py"):
        (package / name).write_text("")
    (package / "judges").mkdir()
    (package / "judges" / "new_judge.py").write_text("")     # inside a package: not a loose module
    problems = check["loose_modules"](package)
    assert len(problems) == 1 and problems[0].startswith("sourcecheckup/stray.py: a loose top-level module")
    assert check["loose_modules"](package, {**check["TOP_LEVEL"], "stray": "a test"}) == []


def test_the_top_level_list_is_the_one_docs_architecture_draws():
    """The script's TOP_LEVEL and the table under "The top level" in docs/architecture.md name the same
    modules with the same roles, and every module on the list exists."""
    import runpy

    check = runpy.run_path(str(ENGINE.parent / "scripts" / "check_layout.py"))
    doc = (ENGINE.parent / "docs" / "architecture.md").read_text(encoding="utf-8")
    section = doc.split("\n## The top level\n", 1)[1].split("\n## ", 1)[0]
    rows = dict(re.findall(r"^\| `([\w]+)\.py` \| (.+?) \|$", section, re.M))
    assert rows == check["TOP_LEVEL"]
    assert sorted(p.stem for p in ENGINE.glob("*.py")) == sorted(check["TOP_LEVEL"])
