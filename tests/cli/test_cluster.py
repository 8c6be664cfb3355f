"""`audit --cluster`: a real local Dask cluster (scheduler and two worker processes on loopback) audits
an input as shards, survives a worker killed mid-shard, and gives the run one process would have written."""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.store.test_merge import ROOT, _answers, _audit, _pairs, _report
from tests.support.cli import sc

distributed = pytest.importorskip("distributed")


@pytest.fixture(scope="module")
def cluster():
    env = {"SOURCECHECKUP_PLUGINS": "tests.support.fake_judge", "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1"}
    old = {k: os.environ.get(k) for k in env}
    os.environ.update(env)   # the worker processes inherit it
    try:
        with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                      dashboard_address=None, silence_logs=40) as c, distributed.Client(c) as client:
            yield c.scheduler_address, client
    finally:
        for k, v in old.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def _start_until_a_part(answers, db, address: str, shards: int) -> subprocess.Popen:
    """`audit --cluster` started in a process of its own, returned once a shard's part exists (or it ended)."""
    proc = subprocess.Popen([sys.executable, "-m", "sourcecheckup", "audit", str(answers), "--db", str(db),
                             "--allow-host", "127.0.0.1", "--no-archive", "-q", "--cluster", address,
                             "--cluster-shards", str(shards)], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                            text=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    parts = db.with_name(db.name + ".parts")
    deadline = time.monotonic() + 120
    while not (parts.is_dir() and any(parts.glob("*.db"))) and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    return proc


def test_a_cluster_audit_with_a_worker_killed_mid_shard_equals_the_single_machine_run(tmp_path, site, cluster):
    address, client = cluster
    answers = _answers(tmp_path, site, n=9)
    _audit(answers, tmp_path / "whole.db")
    db = tmp_path / "cluster.db"
    proc = _start_until_a_part(answers, db, address, shards=3)
    killed = False
    if proc.poll() is None:   # a shard is under way: its worker dies, the engine reruns the shard elsewhere
        pid = next(iter(client.run(os.getpid).values()))
        os.kill(pid, signal.SIGKILL)
        killed = True
    out, errs = proc.communicate(timeout=300)
    assert proc.returncode == 0, errs
    assert killed
    whole, merged = _report(tmp_path / "whole.db"), _report(db, out.strip())
    assert _pairs(merged) == _pairs(whole)
    assert merged["counts"] == whole["counts"]


def test_an_interrupted_cluster_audit_resumes_by_its_run_id_and_writes_its_report(tmp_path, site, cluster):
    address, _client = cluster
    answers = _answers(tmp_path, site, n=12)
    _audit(answers, tmp_path / "whole.db")
    db = tmp_path / "cluster.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = _start_until_a_part(answers, db, address, shards=4)
    parts = tmp_path / "cluster.db.parts"
    proc.send_signal(signal.SIGINT)   # Ctrl-C while the shards run: they are cancelled, their parts kept
    out, errs = proc.communicate(timeout=120)
    assert proc.returncode == 130, errs
    manifest = json.loads((parts / "cluster.json").read_text())
    run_id = manifest["run_id"]
    assert f"sourcecheckup audit --resume {run_id} --db {db}" in errs
    assert not db.exists() or run_id not in _runs(db)
    # a different audit into the same database is refused while these parts wait
    refused = sc("audit", str(answers), "--db", str(db), "--cluster", address, "--judge", "builtin:0.5")
    assert refused.returncode != 0 and f"--resume {run_id}" in refused.stderr
    # the run's id alone picks it up: the scheduler and the shards come from the parts' record
    html = tmp_path / "cluster.html"
    resumed = sc("audit", "--resume", run_id, "--db", str(db), "-q", "--report", str(html), env=env,
                 in_process=False, timeout=300)
    assert resumed.returncode == 0, resumed.stderr
    assert resumed.stdout.strip() == run_id
    assert html.is_file() and run_id in html.read_text(encoding="utf-8")
    assert not parts.exists()   # merged: the tasks' outputs are gone, the run holds every row
    whole, merged = _report(tmp_path / "whole.db"), _report(db, run_id)
    assert _pairs(merged) == _pairs(whole)
    assert merged["counts"] == whole["counts"]


def test_workers_without_the_drivers_files_get_the_input_with_the_task_and_send_their_parts_back(
        tmp_path, site, cluster):
    address, _client = cluster
    answers = _answers(tmp_path, site, n=8)
    _audit(answers, tmp_path / "whole.db")
    db = tmp_path / "sent.db"
    p = sc("audit", str(answers), "--db", str(db), "--allow-host", "127.0.0.1", "--no-archive", "--cluster", address,
           "--cluster-shards", "3", "--cluster-files", "sent", env={"PYTHONPATH": str(ROOT)}, timeout=300)
    assert p.returncode == 0, p.stderr
    whole, merged = _report(tmp_path / "whole.db"), _report(db)
    assert _pairs(merged) == _pairs(whole)
    assert merged["counts"] == whole["counts"]
    # the one progress line ends on every verdict of the three shards
    assert f"cluster: {whole['counts']['verdicts']:,} verdicts judged · 3 of 3 shards done" in p.stderr
    # the run names the driver's input, not the copies the shards read
    from sourcecheckup.store import Store

    with Store(db, read_only=True) as store:
        config = store.get_run(store.latest_run_id()).config
    assert [i["path"] for i in config["provenance"]["inputs"]] == [str(answers.resolve())]
    assert not (tmp_path / "sent.db.parts").exists()


def test_an_input_folder_travels_with_its_files_under_its_own_name(tmp_path):
    from sourcecheckup.cli.cluster import _unpack_inputs, pack_inputs

    (tmp_path / "batch" / "day2").mkdir(parents=True)
    (tmp_path / "batch" / "a.jsonl").write_text("A")
    (tmp_path / "batch" / "day2" / "b.jsonl").write_text("B")
    (tmp_path / "one.csv").write_text("C")
    inputs = [str(tmp_path / "batch"), str(tmp_path / "one.csv")]
    sent = pack_inputs(inputs)
    argv = [*inputs, "--judge", "builtin"]
    local = tmp_path / "worker"
    moved = _unpack_inputs(argv, sent, local)
    assert moved[2:] == ["--judge", "builtin"]
    assert Path(moved[0]).name == "batch" and Path(moved[1]).name == "one.csv"
    assert (Path(moved[0]) / "day2" / "b.jsonl").read_text() == "B"
    assert Path(moved[1]).read_text() == "C" and str(tmp_path / "batch") not in moved


def test_an_input_changed_since_the_parts_were_cut_is_refused(tmp_path, site):
    answers = _answers(tmp_path, site, n=2)
    from sourcecheckup.provenance import input_records

    parts = tmp_path / "x.db.parts"
    parts.mkdir()
    (parts / "cluster.json").write_text(json.dumps({
        "run_id": "20261129-abcdef", "argv": [str(answers.resolve())], "inputs": [str(answers)], "shards": 2,
        "scheduler": "tcp://127.0.0.1:9", "input_records": input_records([str(answers.resolve())])}))
    answers.write_text(answers.read_text() + "\n")
    p = sc("audit", "--resume", "20261129-abcdef", "--db", str(tmp_path / "x.db"))
    assert p.returncode != 0 and "changed since it started" in p.stderr


def _runs(db) -> list[str]:
    from sourcecheckup.store import Store

    with Store(db, read_only=True) as store:
        return [r.id for r in store.list_runs()]


def test_without_a_scheduler_the_flag_says_so(tmp_path, site):
    answers = _answers(tmp_path, site, n=2)
    p = subprocess.run([sys.executable, "-m", "sourcecheckup", "audit", str(answers), "--db", str(tmp_path / "x.db"),
                        "--cluster", "tcp://127.0.0.1:9"], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                       text=True, capture_output=True, timeout=120)
    assert p.returncode != 0
    assert "scheduler" in p.stderr


def test_shards_get_the_audit_arguments_without_the_drivers(tmp_path, monkeypatch):
    from sourcecheckup.cli.cluster import option_paths, shard_argv

    assert shard_argv(["audit", "in.jsonl", "--db", "x.db", "--cluster", "tcp://h:1", "-q", "--judge", "builtin",
                       "--report=r.html"]) == ["in.jsonl", "--judge", "builtin"]
    # a worker runs in a folder of its own: the files the options name are given whole
    monkeypatch.chdir(tmp_path)
    argv = shard_argv(["audit", "in.jsonl", "--sources", "pack", "--prompt=p.txt", "--retraction-data", "rw.csv"])
    assert argv == ["in.jsonl", "--sources", str(tmp_path / "pack"), "--prompt", str(tmp_path / "p.txt"),
                    "--retraction-data", str(tmp_path / "rw.csv")]
    assert option_paths(argv) == [str(tmp_path / "pack"), str(tmp_path / "p.txt"), str(tmp_path / "rw.csv")]


def test_without_the_extra_the_flag_says_how_to_install_it(tmp_path, site, monkeypatch, capsys):
    from sourcecheckup.cli import main

    monkeypatch.setitem(sys.modules, "distributed", None)   # as if not installed: its import fails
    answers = _answers(tmp_path, site, n=2)
    assert main(["audit", str(answers), "--db", str(tmp_path / "x.db"), "--cluster", "tcp://127.0.0.1:9"]) != 0
    assert "pip install 'sourcecheckup[cluster]'" in capsys.readouterr().err


def test_shards_of_a_waiting_cluster_audit_are_cut_as_before(tmp_path, site):
    """The same command again reuses the parts' record; another shard count would cut the input otherwise."""
    from sourcecheckup.cli import main

    answers = _answers(tmp_path, site, n=2)
    parts = tmp_path / "x.db.parts"
    parts.mkdir()
    argv = [str(answers.resolve())]
    (parts / "cluster.json").write_text(json.dumps({"run_id": "20261129-abcdef", "argv": argv, "inputs": [str(answers)],
                                                    "shards": 3, "scheduler": "tcp://127.0.0.1:9"}))
    p = sc("audit", str(answers), "--db", str(tmp_path / "x.db"), "--cluster", "tcp://127.0.0.1:9",
           "--cluster-shards", "5")
    assert p.returncode != 0 and "made with --cluster-shards 3" in p.stderr
    p = sc("audit", "--resume", "20261129-abcdef", "--db", str(tmp_path / "x.db"))
    assert p.returncode != 0 and "scheduler" in p.stderr   # resumed from the record: its scheduler is asked
    assert main(["audit", str(answers), "--db", str(tmp_path / "y.db"), "--cluster", "tcp://127.0.0.1:9",
                 "--cluster-shards", "1"]) != 0
