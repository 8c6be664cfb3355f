"""The standalone desktop app: PyInstaller builds build.spec; the built app opens its window offscreen, and
its command line's demo, run in a clean environment, gives this tree's verdicts (scripts/dist_check.py).

A bundle that cannot extract HTML (trafilatura's settings or justext's stoplists left out) reads the demo's
pages differently, and one without the embedding model judges lexical-only (another judge version, other
labels): either fails the comparison here."""
from __future__ import annotations

import os

from tests.support.paths import ROOT

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.build


def dist_check():
    spec = importlib.util.spec_from_file_location("dist_check", ROOT / "scripts" / "dist_check.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bundle(tmp_path_factory) -> Path:
    pyinstaller = shutil.which("pyinstaller", path=str(Path(sys.executable).parent)) or shutil.which("pyinstaller")
    if pyinstaller is None:
        pytest.skip("PyInstaller is not installed (pip install -e .[dev])")
    tmp = tmp_path_factory.mktemp("build")
    dist, work = tmp / "dist", tmp / "work"
    build = subprocess.run([pyinstaller, "--noconfirm", "--distpath", str(dist), "--workpath", str(work),
                            str(ROOT / "build.spec")], cwd=ROOT, capture_output=True, text=True, timeout=3600)   # a ceiling: 10 min on a quiet machine, 30+ with both cores busy
    assert build.returncode == 0, build.stderr[-3000:]
    return dist / "SourceCheckup"


def test_pyinstaller_build_starts_and_opens_the_main_window(bundle: Path, tmp_path: Path) -> None:
    exe = bundle / ("SourceCheckup.exe" if os.name == "nt" else "SourceCheckup")
    assert exe.is_file()
    bundled = next(bundle.rglob("resources/templates/report.html"), None)
    assert bundled is not None, "resources/ was not bundled"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring",
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    run = subprocess.run([str(exe), "--db", str(tmp_path / "app.db"), "--quit-after", "1"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "SourceCheckup window shown" in run.stdout
    assert (tmp_path / "app.db").is_file()    # the app opened (and created) its database


def test_the_bundles_demo_reads_every_page_and_gives_the_source_trees_verdicts(bundle: Path, tmp_path: Path,
                                                                               capsys) -> None:
    check = dist_check()
    code = check.check_installed(check.bundle_command(bundle), "frozen app", tmp_path)
    out = capsys.readouterr()
    assert code == 0, out.out + out.err[-6000:]
    from sourcecheckup.judges.builtin import MODEL_FULL

    assert MODEL_FULL in out.err       # the full judge ran ("builtin-4.1/all-MiniLM-L6-v2"), not its lexical fallback


def test_the_bundle_runs_each_local_checker_kind_as_the_source_tree_does(bundle: Path, tmp_path: Path,
                                                                         monkeypatch) -> None:
    # local: needs torch, transformers and (Flan-T5, by default) ONNX Runtime with torch.onnx's export inside
    # the bundle; build.spec lists fewer torch modules than pyinstaller-hooks-contrib would, so each checker
    # kind is run by the bundle's command line and compared with the source tree's verdicts
    import asyncio
    import json

    from sourcecheckup.evidence import SourceText
    from sourcecheckup.judges.local import from_spec
    from tests.support.minicheck_models import KINDS, build_minicheck_model

    page = (ROOT / "tests" / "fixtures" / "local_judge" / "hemochromatosis.txt").read_text()
    statements = ["Iron overload is common.", "Hereditary haemochromatosis is treated by removing blood."]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"id": f"p{i}", "statement": s, "source": page}) + "\n"
                             for i, s in enumerate(statements)))
    cli = bundle / ("sourcecheckup-cli.exe" if os.name == "nt" else "sourcecheckup-cli")
    monkeypatch.setenv("SOURCECHECKUP_CACHE_DIR", str(tmp_path / "cache-source"))
    runs, expected = {}, {}
    for kind in KINDS:      # the three bundle processes run at once; the source tree's verdicts meanwhile
        folder = build_minicheck_model(tmp_path / kind, kind)
        env = dict(os.environ, SOURCECHECKUP_CACHE_DIR=str(tmp_path / "cache-bundle" / kind),
                   PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring", HF_HUB_OFFLINE="1")
        with (tmp_path / f"{kind}.out").open("w") as out, (tmp_path / f"{kind}.err").open("w") as err:
            runs[kind] = subprocess.Popen([str(cli), "verify-pairs", str(pairs), "--db", str(tmp_path / f"{kind}.db"),
                                           "-q", "--judge", f"local:{folder}"], env=env, stdout=out, stderr=err)
        judge = from_spec(str(folder))
        expected[kind] = asyncio.run(judge.verify_many([(s, SourceText.from_text(page)) for s in statements]))
    for kind, run in runs.items():
        run.wait(timeout=600)
        assert run.returncode == 0, (kind, (tmp_path / f"{kind}.err").read_text()[-3000:])
        there = [json.loads(line) for line in (tmp_path / f"{kind}.out").read_text().splitlines() if line.strip()]
        assert [(v["label"], round(v["score"], 3), v["rationale"]) for v in there] == \
            [(v.label.value, round(v.score, 3), v.rationale) for v in expected[kind]], kind
