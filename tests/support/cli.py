"""One way for tests to run the ``sourcecheckup`` command (issue 39, item 5).

``sc(*args)`` runs it as a user does, in a new process (``python -m sourcecheckup``), with the fake judges
registered and the model hub offline (conftest turns the web archive and reference services off); ``env``
adds to that.
``sc(*args, in_process=True)`` calls ``cli.main(args)`` here instead, with the same environment and the
output captured: a second or two faster a call, for commands that need no kill, no signal and no stdin.
Both return a ``subprocess.CompletedProcess``.
"""
from __future__ import annotations

import contextlib
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any, Mapping

ROOT = Path(__file__).resolve().parents[2]
BASE_ENV = {"SOURCECHECKUP_PLUGINS": "tests.support.fake_judge", "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}


def cli_env(env: Mapping[str, str] | None = None) -> dict[str, str]:
    """This process's environment with the test defaults, then ``env`` on top."""
    return {**os.environ, **BASE_ENV, **(env or {})}


def sc(*args: str, env: Mapping[str, str] | None = None, timeout: float = 120, in_process: bool = False,
       **kw: Any) -> subprocess.CompletedProcess:
    """Run ``sourcecheckup ARGS``; ``kw`` goes to subprocess.run (``input=``, ``cwd=``)."""
    if not in_process:
        kw.setdefault("cwd", ROOT)
        return subprocess.run([sys.executable, "-m", "sourcecheckup", *args], env=cli_env(env), text=True,
                              capture_output=True, timeout=timeout, **kw)
    if kw:
        raise TypeError(f"in_process runs take no {', '.join(kw)}: run those in a process of their own")
    return _in_process(list(args), cli_env(env))


def sc_here(*args: str, timeout: float = 120, **kw: Any) -> subprocess.CompletedProcess:
    """``sc`` in this process, unless a test passes what only a process takes (``input=``, ``env=``, ``cwd=``)."""
    return sc(*args, timeout=timeout, in_process=not kw, **kw)


@contextlib.contextmanager
def _environment(env: Mapping[str, str]):
    saved = dict(os.environ)
    os.environ.clear()
    os.environ.update(env)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def _in_process(args: list[str], env: Mapping[str, str]) -> subprocess.CompletedProcess:
    from sourcecheckup.cli import main

    out, err = io.StringIO(), io.StringIO()
    with _environment(env), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            code = main(args)
        except SystemExit as exc:   # argparse's --help and usage errors
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    return subprocess.CompletedProcess(["sourcecheckup", *args], code, out.getvalue(), err.getvalue())
