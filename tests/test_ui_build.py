"""The standalone desktop app: PyInstaller builds build.spec; the built app opens its window offscreen, and
its command line's demo, run in a clean environment, gives this tree's verdicts (scripts/dist_check.py).

A bundle that cannot extract HTML (trafilatura's settings or justext's stoplists left out) reads the demo's
pages differently, and one without the embedding model judges lexical-only (another judge version, other
labels): either fails the comparison here."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import importlib.util
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
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

    assert MODEL_FULL in out.err       # the full judge ran ("builtin-4/all-MiniLM-L6-v2"), not its lexical fallback
