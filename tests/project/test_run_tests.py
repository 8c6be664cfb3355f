"""scripts/run_tests.py, `make test`'s runner: which files the frozen-app build's process runs, and the
environment every test process gets."""
from __future__ import annotations

import importlib.util

from tests.support.paths import ROOT


def runner():
    spec = importlib.util.spec_from_file_location("run_tests", ROOT / "scripts" / "run_tests.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_build_process_runs_exactly_the_files_with_build_tests():
    files = runner().build_test_files()
    assert files == ["tests/project/test_ui_build.py"]
    # this file names the mark in strings only: not a build test
    assert "tests/project/test_run_tests.py" not in files


def test_test_processes_write_bytecode_even_where_the_shell_says_not_to(monkeypatch):
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.delenv("QT_QPA_PLATFORM", raising=False)
    env = runner().test_env()
    assert "PYTHONDONTWRITEBYTECODE" not in env
    assert env["QT_QPA_PLATFORM"] == "offscreen"
