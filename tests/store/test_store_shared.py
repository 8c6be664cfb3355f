"""Issue 41 item 1: the app and the command line on one database, each in a process of its own.

SQLite deletes a WAL database's -wal and -shm files when the last connection closes, and a closing
connection knows it is the last by the locks of the others. A process that opens and closes the
database file once more drops its own locks (POSIX): a file dialog of the app does, Qt reading the
file's first bytes to name its type. Before the fix, every command-line run that followed deleted
the two files under the app, whose next label then went to a deleted file: "disk I/O error", or a
label no other process could see.
"""
from __future__ import annotations

import asyncio
import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sourcecheckup.cli import main
from sourcecheckup.review import add_review, reviews
from sourcecheckup.store import Store
from tests.support.paths import ROOT
from tests.support.report_runs import audit_site

ROUNDS = 20   # the "20 times in a row"


class App:
    """tests/support/db_holder.py in a process of its own: the app's long-lived Store."""

    def __init__(self, db: Path, run_id: str) -> None:
        env = {**os.environ, "PYTHONPATH": str(ROOT), "QT_QPA_PLATFORM": "offscreen"}
        self.proc = subprocess.Popen([sys.executable, "-m", "tests.support.db_holder", str(db), run_id], cwd=ROOT,
                                     env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
        assert self.ask(None) == "ok ready"

    def ask(self, command: str | None) -> str:
        if command is not None:
            self.proc.stdin.write(command + "\n")
            self.proc.stdin.flush()
        return self.proc.stdout.readline().strip()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.ask("quit")
        self.proc.wait(timeout=30)


@pytest.fixture()
def shared(site, tmp_path):
    db = tmp_path / "A.db"
    with Store(db) as store:
        run_id = asyncio.run(audit_site(store, site))
    app = App(db, run_id)
    yield db, run_id, app
    app.close()


def _wal_files(db: Path) -> list[str]:
    return sorted(p.name for p in db.parent.iterdir() if p.name.startswith(db.name + "-"))


def test_command_line_runs_beside_the_app_never_delete_its_wal_and_every_label_is_seen(shared, tmp_path, capsys):
    db, run_id, app = shared
    # this process plays the command line: each main() opens the database, reads or writes, and closes it
    assert main(["report", run_id, "--db", str(db), "-o", str(tmp_path / "r.json")]) == 0
    for i in range(ROUNDS):
        assert app.ask("sniff") == "ok application/vnd.sqlite3"    # the app's file dialog shows the folder
        for argv in (["runs"], ["show", run_id], ["verify-report", str(tmp_path / "r.json")]):
            main([*argv, "--db", str(db)])
        gc.collect()   # what a command left open is closed, as at a real run's exit
        assert _wal_files(db) == ["A.db-shm", "A.db-wal"], i
        answer = app.ask(f"label {i}")
        assert answer == "ok", (i, answer)
        with Store(db) as cli:   # the command line sees the app's label at once, and writes one of its own
            names = {r.reviewer for r in reviews(cli, run_id, latest_only=False)}
            assert f"app-{i}" in names, i
            pair = cli.load_run(run_id).verdicts
            spk, rows = next(iter(pair.items()))
            add_review(cli, run_id, spk, rows[0].url, f"cli-{i}", "not_supported")
        assert app.ask("count") == f"ok {2 * (i + 1)}", i
    capsys.readouterr()
    # and a third process, a real command-line run, sees every label of both
    out = subprocess.run([sys.executable, "-m", "sourcecheckup", "show", run_id, "--db", str(db)], cwd=ROOT,
                         env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    with Store(db) as third:
        assert len(reviews(third, run_id, latest_only=False)) == 2 * ROUNDS
    assert _wal_files(db) == ["A.db-shm", "A.db-wal"]
