"""The standalone desktop app: PyInstaller builds build.spec, and the built app opens its window offscreen."""
from __future__ import annotations

import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
pytestmark = pytest.mark.build


def test_pyinstaller_build_starts_and_opens_the_main_window(tmp_path: Path) -> None:
    pyinstaller = shutil.which("pyinstaller", path=str(Path(sys.executable).parent)) or shutil.which("pyinstaller")
    if pyinstaller is None:
        pytest.skip("PyInstaller is not installed (pip install -e .[dev])")
    dist, work = tmp_path / "dist", tmp_path / "work"
    build = subprocess.run([pyinstaller, "--noconfirm", "--distpath", str(dist), "--workpath", str(work),
                            str(ROOT / "build.spec")], cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert build.returncode == 0, build.stderr[-3000:]
    app_dir = dist / "SourceCheckup"
    exe = app_dir / ("SourceCheckup.exe" if os.name == "nt" else "SourceCheckup")
    assert exe.is_file()
    bundled = next(app_dir.rglob("resources/templates/report.html"), None)
    assert bundled is not None, "resources/ was not bundled"
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen", PYTHON_KEYRING_BACKEND="keyring.backends.null.Keyring",
               XDG_CONFIG_HOME=str(tmp_path / "config"))
    run = subprocess.run([str(exe), "--db", str(tmp_path / "app.db"), "--quit-after", "1"], env=env,
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr[-3000:]
    assert "SourceCheckup window shown" in run.stdout
    assert (tmp_path / "app.db").is_file()    # the app opened (and created) its database
