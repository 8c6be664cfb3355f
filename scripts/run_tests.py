"""`make test`: the test suite, with the frozen-app build (tests marked ``build``) beside the rest.

Building the PyInstaller bundle and checking its demo is mostly one core for several minutes (module
analysis, copying torch's libraries, two demo runs); the rest of the suite is about 24 CPU minutes, much of
its wall time waiting on local servers, subprocesses and Qt events. So the rest runs in ``WORKERS`` pytest-xdist
worker processes (default: twice the cores, at least 2, at most 4; ``SOURCECHECKUP_TEST_WORKERS=1`` runs it in
one process) while the build runs in a pytest process of its own. Each process keeps its own isolation
(temporary folders, servers on ports the OS picks), so nothing is shared between them but the CPUs.

Usage: ``python scripts/run_tests.py [PYTEST ARGS...]``. With arguments (a file, ``-k``, ``-x``...)
it runs plain pytest with them in this process, as ``python -m pytest`` would. The exit status is
non-zero when either part failed; the build's output is printed after the suite's.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# a module marked whole (``pytestmark = pytest.mark.build``) or a test decorated with the mark
BUILD_MARK = re.compile(r"^(pytestmark\s*=.*pytest\.mark\.build\b|\s*@pytest\.mark\.build\b)", re.MULTILINE)
NO_TESTS = 5   # pytest's exit status when a selection is empty (PyInstaller missing -> the build part is skipped)


def workers() -> int:
    wanted = os.environ.get("SOURCECHECKUP_TEST_WORKERS", "").strip()
    if wanted:
        return max(1, int(wanted))
    return max(2, min(4, 2 * (os.cpu_count() or 1)))


def parallel_args() -> list[str]:
    """pytest-xdist's options for the suite, or none when it is not installed or one worker is asked for."""
    n = workers()
    try:
        import xdist  # noqa: F401
    except ImportError:
        return []
    return ["-n", str(n)] if n > 1 else []


def build_test_files() -> list[str]:
    """The test files that hold tests marked ``build`` (read as text: importing them all costs the seconds of
    collecting the whole suite, which the build's process would spend on its critical path)."""
    return sorted(str(p.relative_to(ROOT)) for p in (ROOT / "tests").rglob("test_*.py")
                  if BUILD_MARK.search(p.read_text(encoding="utf-8")))


def test_env() -> dict[str, str]:
    """The environment of the test processes. Bytecode is written (``__pycache__`` is git-ignored) even where
    PYTHONDONTWRITEBYTECODE is set: the suite starts hundreds of Python processes (the CLI, the app, servers),
    and each would otherwise compile the project's modules again, and pytest rewrite every test module again in
    each worker (measured: tests/cli/test_cli.py 15% less CPU)."""
    env = dict(os.environ)
    env.setdefault("QT_QPA_PLATFORM", "offscreen")
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    return env


def main(argv: list[str]) -> int:
    env = test_env()
    pytest = [sys.executable, "-m", "pytest", "-q"]
    if argv:
        return subprocess.call(pytest + argv, cwd=ROOT, env=env)
    started = time.monotonic()
    parallel = parallel_args()
    # compiled once here rather than by the first processes of the suite at once
    subprocess.call([sys.executable, "-m", "compileall", "-q", "sourcecheckup", "ui", "tests"], cwd=ROOT, env=env,
                    stdout=subprocess.DEVNULL)
    with tempfile.TemporaryFile(mode="w+", encoding="utf-8", errors="replace") as build_log:
        print(f"tests: the frozen-app build (tests/project/test_ui_build.py) runs beside the rest of the suite "
              f"({' '.join(parallel) or 'one process'}); its output follows the suite's", flush=True)
        build = subprocess.Popen(pytest + ["-m", "build", *build_test_files()], cwd=ROOT, env=env, stdout=build_log,
                                 stderr=subprocess.STDOUT)
        try:
            rest = subprocess.call(pytest + parallel + ["-m", "not build"], cwd=ROOT, env=env)
            build_code = build.wait()
        except KeyboardInterrupt:
            build.terminate()
            build.wait()
            raise
        build_log.seek(0)
        print("\n--- the frozen-app build (pytest -m build) ---", flush=True)
        sys.stdout.write(build_log.read())
    if build_code == NO_TESTS:
        build_code = 0
    minutes = (time.monotonic() - started) / 60
    verdict = "passed" if rest == 0 and build_code == 0 else "FAILED"
    print(f"\ntests {verdict} in {minutes:.1f} min (suite exit {rest}, frozen-app build exit {build_code})",
          flush=True)
    return rest or build_code


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
