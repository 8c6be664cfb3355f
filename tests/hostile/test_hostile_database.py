"""A database that cannot be written or is not ours: a read-only mount and a read-only open, a full disk,
a file that is not yet a SourceCheckup database, and a verdict row with a label no release wrote
(the real CLI on a real SQLite file).
"""
from __future__ import annotations

import json

import pytest

from tests.support.cli import sc_here as cli
from tests.support.paths import ROOT


def _can_mount_read_only() -> bool:
    import os
    import shutil
    import subprocess

    if os.geteuid() != 0 or shutil.which("unshare") is None or shutil.which("mount") is None:
        return False
    return subprocess.run(["unshare", "-m", "sh", "-c", "mount --bind / /mnt 2>/dev/null || exit 1; exit 0"],
                          capture_output=True, timeout=20).returncode == 0


READ_ONLY_COMMANDS = """
import json, subprocess, sys
db, out, answers = sys.argv[1], sys.argv[2], sys.argv[3]
def sc(*a):
    p = subprocess.run([sys.executable, "-m", "sourcecheckup", *a], capture_output=True, text=True, timeout=300)
    return {"rc": p.returncode, "out": p.stdout, "err": p.stderr}
got = {"runs": sc("runs", "--db", db), "show": sc("show", "--db", db),
       "report": sc("report", "--db", db, "-o", out + "/r.json"), "html": sc("report", "--db", db, "-o", out + "/r.html"),
       "review-sample": sc("review-sample", "--db", db, "--n", "2", "-o", "-")}
got["verify-report"] = sc("verify-report", out + "/r.json", "--db", db)
got["audit"] = sc("audit", answers, "--db", db, "--no-archive")
got["merge"] = sc("merge", db, out + "/x.db", out + "/y.db")
json.dump(got, open(out + "/results.json", "w"))
"""


@pytest.mark.skipif(not _can_mount_read_only(), reason="needs root and mount namespaces (unshare -m) for a read-only mount")
def test_a_database_on_a_read_only_mount_is_read_by_reading_commands_and_refused_in_plain_words_by_writing_ones(tmp_path):
    import os
    import shutil
    import subprocess
    import sys

    from sourcecheckup.store import Store
    from tests.support.synth_run import synthesize_run

    mounted, out = tmp_path / "readonly", tmp_path / "out"
    mounted.mkdir()
    out.mkdir()
    with Store(mounted / "audits.db") as store:
        run_id = synthesize_run(store, responses=3, statements=2, sources=2)
    for name in ("x.db", "y.db"):
        shutil.copy(mounted / "audits.db", out / name)
    # the -wal and -shm files a closed Store keeps beside its database (store/wal.py), the -wal one empty
    before = sorted(os.listdir(mounted))
    assert before in (["audits.db"], ["audits.db", "audits.db-shm", "audits.db-wal"]), before
    assert not (mounted / "audits.db-wal").exists() or (mounted / "audits.db-wal").stat().st_size == 0
    answers = out / "one.json"
    answers.write_text(json.dumps({"response": "Aspirin thins the blood [1].", "citations": ["https://example.org/a"]}))
    script = out / "commands.py"
    script.write_text(READ_ONLY_COMMANDS)
    root = str(ROOT)
    # a private mount namespace: the bind mount is read-only for this command only, gone when it ends
    shell = (f"mount --bind {mounted} {mounted} && mount -o remount,bind,ro {mounted} && "
             f"cd {root} && {sys.executable} {script} {mounted / 'audits.db'} {out} {answers}")
    p = subprocess.run(["unshare", "-m", "sh", "-c", shell], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": root})
    assert p.returncode == 0, p.stderr
    got = json.loads((out / "results.json").read_text())
    for command in ("runs", "show", "report", "html", "review-sample", "verify-report"):
        assert got[command]["rc"] == 0, (command, got[command]["err"])
        assert "opened read-only (it is on a read-only file system)" in got[command]["err"], command
        assert "not a usable SourceCheckup database" not in got[command]["err"]
    assert run_id in got["runs"]["out"] and "6 claims" in got["show"]["out"]
    assert "every metric" in got["verify-report"]["out"] and "pair_id" in got["review-sample"]["out"]
    assert json.loads((out / "r.json").read_text())["run"]["id"] == run_id
    for command in ("audit", "merge"):
        assert got[command]["rc"] == 2, (command, got[command])
        assert "the database is read-only (it is on a read-only file system)" in got[command]["err"], command
    assert sorted(os.listdir(mounted)) == before   # nothing was written beside it


def test_a_database_opened_read_only_refuses_writes_and_reads_every_run(tmp_path):
    import sqlite3

    from sourcecheckup.store import Store
    from tests.support.synth_run import synthesize_run

    with Store(tmp_path / "a.db") as store:
        run_id = synthesize_run(store, responses=2, statements=2, sources=1)
    with Store(tmp_path / "a.db", read_only=True) as store:
        assert store.read_only and store.get_run(run_id).status == "completed"
        with pytest.raises(sqlite3.OperationalError, match="readonly"):
            store.log(run_id, "a write")
        copy = store.in_memory_copy()
        copy.log(run_id, "a write in the copy")
        assert copy.run_log(run_id)[-1]["message"] == "a write in the copy"


@pytest.mark.skipif(not _can_mount_read_only(), reason="needs root and mount namespaces (unshare -m) for a small disk")
def test_a_full_disk_is_one_clear_error_without_task_tracebacks(tmp_path, site):
    import os
    import subprocess
    import sys

    root = str(ROOT)
    answers = tmp_path / "answers.jsonl"
    sentence = "Hypertension is a blood pressure of 130/80 mm Hg or higher in adult {i}, case {j} [1]."
    answers.write_text("\n".join(json.dumps({
        "id": f"a{i}", "response": " ".join(sentence.format(i=i, j=j) for j in range(30)),
        "citations": [f"{site}/article/hypertension", f"{site}/large?i={i}"]}) for i in range(60)))
    disk = tmp_path / "disk"
    disk.mkdir()
    # a 1 MB disk in a private mount namespace: the database fills it while several answers are in flight
    shell = (f"mount -t tmpfs -o size=1m tmpfs {disk} && cd {root} && {sys.executable} -m sourcecheckup audit "
             f"{answers} --db {disk / 'a.db'} --allow-host 127.0.0.1 --no-archive --browser never")
    p = subprocess.run(["unshare", "-m", "sh", "-c", shell], capture_output=True, text=True, timeout=600,
                       env={**os.environ, "PYTHONPATH": root})
    assert p.returncode == 1, p.stderr[-2000:]
    assert "database or disk is full" in p.stderr and "resume with: sourcecheckup audit --resume" in p.stderr
    assert "Task exception was never retrieved" not in p.stderr and "Traceback" not in p.stderr, p.stderr[-3000:]


@pytest.mark.parametrize("content", [b"", b"sqlite of another program"])
def test_a_reading_command_on_a_file_not_yet_a_database_says_so_and_leaves_it_untouched(tmp_path, content):
    import sqlite3

    path = tmp_path / "other.db"
    if content:
        with sqlite3.connect(path) as conn:   # someone else's SQLite database
            conn.execute("CREATE TABLE notes (text TEXT)")
        conn.close()
    else:
        path.write_bytes(b"")
    before = path.read_bytes()
    for args in (("runs",), ("show",), ("report", "-o", str(tmp_path / "r.json"))):
        p = cli(*args, "--db", str(path))
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        assert f"{path} is not a SourceCheckup database" in p.stderr and "left as it is" in p.stderr
    assert path.read_bytes() == before
    assert sorted(f.name for f in tmp_path.iterdir()) == ["other.db"]


def test_a_verdict_row_with_an_unknown_label_reads_as_unreadable_in_runs_and_show(tmp_path):
    import sqlite3

    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "a.txt").write_text("Aspirin thins the blood. It is an antiplatelet drug.")
    (pack / "sources.json").write_text(json.dumps({"https://a.example/x": "a.txt"}))
    answers = tmp_path / "a.jsonl"
    answers.write_text(json.dumps({"response": "Aspirin thins the blood [1].", "citations": ["https://a.example/x"],
                                   "id": "v1"}) + "\n")
    db = tmp_path / "a.db"
    p = cli("audit", str(answers), "--db", str(db), "--sources", str(pack), "--no-archive", "--browser", "never",
            "-q", "--no-references")
    assert p.returncode == 0, p.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("UPDATE verdicts SET label = 'bogus'").rowcount == 1
    for command in ("runs", "show"):
        p = cli(command, "--db", str(db))
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
        assert "1 verdict row(s) could not be read (unreadable verdict row: its label 'bogus'" in p.stderr
    assert "judge_error" in cli("show", "--db", str(db)).stdout
