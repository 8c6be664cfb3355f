"""The screening judge and the quantity checker stay split by concept (issue 13's 700-line rule),
and the split keeps every name their callers import."""
from __future__ import annotations

import importlib.util
from pathlib import Path

from tests.support.paths import ROOT

SPLIT = ("sourcecheckup.checks.quantities", "sourcecheckup.judges.builtin")


def _layout():
    spec = importlib.util.spec_from_file_location("check_layout", ROOT / "scripts" / "check_layout.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _split_modules(layout) -> dict[str, Path]:
    return {name: path for name, path in layout.modules().items()
            if any(name == p or name.startswith(p + ".") for p in SPLIT)}


def test_quantity_checker_and_builtin_judge_modules_stay_under_700_lines():
    layout = _layout()
    mods = _split_modules(layout)
    # both are packages now, each with several modules
    assert sum(n.startswith(SPLIT[0] + ".") for n in mods) >= 3
    assert sum(n.startswith(SPLIT[1] + ".") for n in mods) >= 3
    too_long = {str(p.relative_to(ROOT)): len(p.read_text(encoding="utf-8").splitlines())
                for p in mods.values()}
    assert {k: v for k, v in too_long.items() if v > 700} == {}
    # the submodules import one another one way only
    cycles = [c for c in layout.cycles(layout.import_graph(layout.modules())) if set(c) & set(mods)]
    assert cycles == []


def test_split_packages_keep_the_names_their_callers_import():
    from sourcecheckup.checks.quantities import (
        Quantity,
        QuantityFinding,
        compare_quantities,
        describe,
        extract_quantities,
    )
    from sourcecheckup.judges import builtin, make_judge

    findings = compare_quantities("Adults can take up to 2,400 mg of ibuprofen a day.",
                                  ["Do not take more than 1,200 mg in 24 hours."])
    assert [f.status for f in findings] == ["contradicted"]
    assert isinstance(findings[0], QuantityFinding) and isinstance(findings[0].claim, Quantity)
    assert describe(extract_quantities("Take 2.4 g a day.")[0]) == "2.4 g/day"
    for name in ("BuiltinJudge", "from_spec", "load_params", "params_path", "analyse_pair", "run_checks",
                 "Checks", "CheckOutcome", "REVIEW_BAND", "PROMPT_VERSION", "LogisticModel", "BuiltinParams",
                 "LEXICAL_FEATURES", "EMBEDDING_FEATURES", "words", "stem", "_Idf"):
        assert hasattr(builtin, name), name
    # the judge registry still finds the built-in judge by its spec
    judge = make_judge("builtin:0.6", use_embeddings=False)
    assert isinstance(judge, builtin.BuiltinJudge) and judge.threshold == 0.6
