"""A run whose process is gone reads "interrupted", with the command that resumes it; one whose process
lives reads "running": in `runs`, in the app's runs list, in a database written before the owner
columns (migration 10), and told by the process's creation time, not its id alone.
"""
from __future__ import annotations

import json
import time

from tests.support.paths import ROOT


def test_after_sigkill_runs_says_interrupted_with_the_resume_command(tmp_path, site):
    import os
    import signal
    import sqlite3
    import subprocess
    import sys

    root = str(ROOT)
    answers = tmp_path / "slow.json"
    answers.write_text(json.dumps({"response": "Hypertension is a blood pressure of 130/80 mm Hg or higher [1].",
                                   "citations": [f"{site}/slow?s=30"]}))
    db = tmp_path / "a.db"
    env = {**os.environ, "PYTHONPATH": root}
    audit = subprocess.Popen([sys.executable, "-m", "sourcecheckup", "audit", str(answers), "--db", str(db),
                              "--allow-host", "127.0.0.1", "--no-archive", "--browser", "never", "--timeout", "60"],
                             cwd=root, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:   # until the run is stored and its fetch has started
            try:
                with sqlite3.connect(db) as conn:
                    if conn.execute("SELECT COUNT(*) FROM runs WHERE status = 'running'").fetchone()[0]:
                        break
            except sqlite3.Error:
                pass
            time.sleep(0.2)
        time.sleep(0.5)
    finally:
        audit.send_signal(signal.SIGKILL)
        audit.wait(10)
    with sqlite3.connect(db) as conn:
        (run_id,) = conn.execute("SELECT id FROM runs WHERE status = 'running'").fetchone()
    p = subprocess.run([sys.executable, "-m", "sourcecheckup", "runs", "--db", str(db)], cwd=root, env=env,
                       capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    row = next(line for line in p.stdout.splitlines() if line.startswith(run_id))
    assert "interrupted" in row and "running" not in row, row
    assert f"resume it with: sourcecheckup audit --resume {run_id} --db {db}" in p.stdout
    js = subprocess.run([sys.executable, "-m", "sourcecheckup", "runs", "--db", str(db), "--json"], cwd=root, env=env,
                        capture_output=True, text=True, timeout=120)
    assert json.loads(js.stdout)[0]["status"] == "interrupted"


def test_a_run_whose_process_is_alive_still_reads_running(tmp_path):
    from sourcecheckup.store import Store

    with Store(tmp_path / "a.db") as store:
        run_id = store.create_run(input="x", config={}, judges=["builtin"], parser="builtin", app_version="t")
        assert not store.run_interrupted(store.get_run(run_id))   # this process owns it


def test_the_app_runs_list_shows_a_run_whose_process_is_gone_as_interrupted_and_resumable(tmp_path):
    import subprocess
    import sys

    from sourcecheckup.store import Store
    from sourcecheckup.views.runs import run_summaries

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    with Store(tmp_path / "a.db") as store:
        run_id = store.create_run(input="x", config={}, judges=["builtin"], parser="builtin", app_version="t")
        (summary,) = run_summaries(store)
        assert summary.status == "running"            # this process owns it
        with store.db.conn:   # the run's owner is a process that has ended
            store.db.execute("UPDATE runs SET owner_pid = ?, owner_started = NULL WHERE id = ?", [gone.pid, run_id])
        (summary,) = run_summaries(store)
    assert summary.status == "interrupted" and summary.resumable


def test_a_database_written_before_the_owner_columns_still_knows_its_interrupted_run(tmp_path):
    """Migration 10 fills the run's owner columns from the newest owner line of its log (issue 39)."""
    import socket
    import sqlite3
    import subprocess
    import sys

    from sourcecheckup.store import MIGRATIONS, Store
    from sourcecheckup.views.runs import run_summaries

    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    db = tmp_path / "old.db"
    with Store(db) as store:
        dead = store.create_run(input="x", config={}, judges=["builtin"], parser="builtin", app_version="t")
        alive = store.create_run(input="y", config={}, judges=["builtin"], parser="builtin", app_version="t")
    conn = sqlite3.connect(db)
    with conn:   # the database as release 9 left it: no owner columns, the owner in log lines only
        for column in ("owner_pid", "owner_host", "owner_started"):
            conn.execute(f"ALTER TABLE runs DROP COLUMN {column}")
        conn.execute("DELETE FROM schema_version WHERE version >= 10")
        conn.execute("INSERT INTO run_log (run_id, at, level, message) VALUES (?, 'later', 'info', ?)",
                     [dead, f"running in process {gone.pid} on {socket.gethostname()} (started 1.0)"])
    conn.close()
    with Store(db) as store:
        assert store.schema_version == len(MIGRATIONS)
        owners = dict(store.db.execute("SELECT id, owner_pid FROM runs").fetchall())
        assert owners == {dead: gone.pid, alive: __import__("os").getpid()}   # the newest line of each
        status = {s.id: s.status for s in run_summaries(store)}
    assert status == {dead: "interrupted", alive: "running"}


def test_the_run_owner_is_told_by_process_creation_time_not_the_id_alone():
    """A run's owner line names its process and when it was created (psutil: Linux, macOS and Windows alike):
    the live process reads alive, a process id now held by another process reads dead."""
    import os
    import socket
    import subprocess
    import sys

    from sourcecheckup.run_owner import owner_alive, owner_note, parse_owner_line

    def alive(line: str) -> bool | None:
        return owner_alive(parse_owner_line(line))

    note = owner_note()
    assert f"process {os.getpid()} " in note and "(started " in note
    assert alive(note) is True
    recycled = note.rsplit("(started ", 1)[0] + "(started 12345.67)"    # same id, another creation time
    assert alive(recycled) is False
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    assert alive(f"running in process {gone.pid} on {socket.gethostname()} (started 1.0)") is False
    assert alive(f"running in process {os.getpid()} on another-host (started 1.0)") is None
    # the form written before (Linux clock ticks) is read as a plain process id
    assert alive(f"running in process {os.getpid()} on {socket.gethostname()} (process start 1)") is True
