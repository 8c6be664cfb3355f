"""The `sourcecheckup` command in a subprocess: exit codes, reports, kill (SIGKILL, Ctrl-C) and resume."""
from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.support import cli
from tests.support.cli import ROOT


def sc(*args: str, **kw) -> subprocess.CompletedProcess:
    """The command in this process (faster), unless a test passes what only a process takes (input=)."""
    return cli.sc(*args, in_process=not (kw.keys() - {"env", "timeout"}), **kw)

SUPPORTED = "Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher."


def _answers(tmp_path: Path, site: str, n: int = 3) -> Path:
    lines = []
    for i in range(n):
        lines.append(json.dumps({
            "id": f"a{i}", "question": "What counts as high blood pressure?", "model": "model-x",
            "response": f"{SUPPORTED} [1] Salt {i} has no effect on blood pressure in anyone. [1]",
            "citations": [f"{site}/article/hypertension"]}))
    lines.insert(1, "{not json")
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def test_audit_writes_the_stable_json_report_and_exits_zero(tmp_path, site):
    answers = _answers(tmp_path, site)
    out = tmp_path / "out.json"
    p = sc("audit", str(answers), "--judge", "keyword:0", "--db", str(tmp_path / "a.db"), "--report", str(out),
           "--allow-host", "127.0.0.1")
    assert p.returncode == 0, p.stderr
    assert "answers.jsonl:2" in p.stderr          # the bad line is named, the batch goes on
    assert "statement-level support" in p.stdout
    report = json.loads(out.read_text())
    assert set(report["run"]) >= {"id", "judge", "created_at"}
    assert set(report["metrics"]) == {"url_validity", "full_text_validity", "statement_support", "response_support",
                                      "unused_sources", "answer_citation_validity"}
    m = report["metrics"]["statement_support"]
    assert m["value"] == 0.5 and len(m["ci95"]) == 2 and m["n"] == 6
    resp = report["responses"][0]
    assert set(resp) >= {"id", "question", "model", "statements", "sources"}
    st = resp["statements"][0]
    assert set(st) >= {"id", "text", "category", "supported", "verdicts"}
    assert set(st["verdicts"][0]) >= {"url", "label", "score", "quote", "quote_found"}
    assert set(resp["sources"][0]) >= {"url", "status", "http_status", "title", "sha256", "text_chars", "flags"}
    assert report["run"]["n_skipped"] == 1 and "invalid JSON" in report["skipped"][0]["problem"]


def test_runs_and_show_read_back_the_stored_run(tmp_path, site):
    db = str(tmp_path / "a.db")
    assert sc("audit", str(_answers(tmp_path, site)), "--judge", "keyword:0", "--db", db, "--allow-host",
              "127.0.0.1", "-q").returncode == 0
    runs = sc("runs", "--db", db)
    assert runs.returncode == 0 and "completed" in runs.stdout and " 50.0%" in runs.stdout
    show = sc("show", "--db", db)
    assert show.returncode == 0
    assert "✓" in show.stdout and "✗" in show.stdout and "not_supported" in show.stdout


def test_runs_json_and_the_apps_runs_list_show_the_same_headline(tmp_path, site):
    from sourcecheckup.store import Store
    from sourcecheckup.views.runs import run_summaries

    db = str(tmp_path / "a.db")
    assert sc("audit", str(_answers(tmp_path, site)), "--judge", "keyword:0", "--db", db, "--allow-host",
              "127.0.0.1", "-q").returncode == 0
    runs = sc("runs", "--json", "--db", db)
    assert runs.returncode == 0, runs.stderr
    (cli_run,) = json.loads(runs.stdout)
    with Store(db) as store:
        (app_run,) = run_summaries(store)
    m = cli_run["metrics"]
    assert m["statement_support"]["value"] == 0.5 and m["statement_support"]["n"] == 6
    assert (app_run.statement_support, app_run.response_support, app_run.url_validity) == (
        m["statement_support"]["value"], m["response_support"]["value"], m["url_validity"]["value"])


def test_csv_and_html_reports_escape_and_carry_every_statement(tmp_path, site):
    db = str(tmp_path / "a.db")
    answers = tmp_path / "hostile.json"
    answers.write_text(json.dumps({"response": f"{SUPPORTED} <script>alert(1)</script> [1]",
                                   "citations": [f"{site}/article/hypertension"]}))
    p = sc("audit", str(answers), "--judge", "keyword:0", "--db", db, "--allow-host", "127.0.0.1",
           "--report", str(tmp_path / "r.html"), "--report", str(tmp_path / "r.csv"))
    assert p.returncode == 0, p.stderr
    html = (tmp_path / "r.html").read_text()
    assert "<script>alert" not in html and "&lt;script&gt;alert(1)&lt;/script&gt;" in html
    assert "alert(1)" in (tmp_path / "r.csv").read_text()


@pytest.mark.parametrize("args,needle", [
    (["audit", "missing.jsonl"], "no such file"),
    (["audit", "README.md", "--judge", "nosuch:model"], "unknown judge"),
    (["audit", "--resume", "nope"], "no run"),
    (["show", "nope"], "no run"),
    (["audit", "--frobnicate"], "unrecognized arguments"),
])
def test_bad_usage_exits_2_with_a_clear_message(tmp_path, args, needle):
    from sourcecheckup.store import Store

    Store(tmp_path / "a.db").close()      # an empty database: "no run", not "no such database"
    p = sc(*args, "--db", str(tmp_path / "a.db"))
    assert p.returncode == 2
    assert needle in p.stderr


def test_verify_pairs_keeps_order_and_reports_bad_lines(tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("\n".join([
        json.dumps({"id": "p1", "statement": "Aspirin thins the blood.", "source": "Aspirin thins the blood."}),
        "oops",
        json.dumps({"id": "p3", "claim": "Zinc cures colds.", "evidence": "Vitamin C was studied."}),
    ]))
    out = tmp_path / "v.jsonl"
    p = sc("verify-pairs", str(pairs), "--judge", "keyword:0", "-o", str(out))
    assert p.returncode == 0, p.stderr
    rows = [json.loads(l) for l in out.read_text().splitlines()]
    assert [r["id"] for r in rows] == ["p1", "line-2", "p3"]
    assert [r["label"] for r in rows] == ["supported", "judge_error", "not_supported"]
    assert rows[0]["quote_found"] is True
    assert "pairs.jsonl:2" in p.stderr


def _count(db: Path) -> int:
    try:
        with sqlite3.connect(db, timeout=5) as c:
            return c.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]
    except sqlite3.OperationalError:
        return 0


def test_sigkill_mid_run_then_resume_has_every_pair_once_and_the_same_metrics(tmp_path, site):
    answers = tmp_path / "many.jsonl"
    answers.write_text("\n".join(json.dumps({
        "id": f"k{i}", "response": f"{SUPPORTED} Blood pressure fact {i} stands alone here.",
        "citations": [f"{site}/article/hypertension", f"{site}/article/hfe-hemochromatosis"]})
        for i in range(40)))
    db = tmp_path / "k.db"
    args = ["audit", str(answers), "--judge", "keyword:0.05", "--concurrency", "2", "--db", str(db),
            "--allow-host", "127.0.0.1", "-q"]
    e = {**os.environ, "SOURCECHECKUP_PLUGINS": "tests.support.fake_judge", "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "sourcecheckup", *args], cwd=ROOT, env=e,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 60
    while _count(db) < 20 and time.monotonic() < deadline and proc.poll() is None:
        time.sleep(0.05)
    proc.send_signal(signal.SIGKILL)
    proc.wait(10)
    before = _count(db)
    assert 20 <= before < 160, "the run should have been killed part way"
    with sqlite3.connect(db) as c:
        run_id, status = c.execute("SELECT id, status FROM runs").fetchone()
    assert status == "running"
    p = sc("audit", "--resume", run_id, "--db", str(db), "--report", str(tmp_path / "resumed.json"))
    assert p.returncode == 0, p.stderr
    with sqlite3.connect(db) as c:
        assert c.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0] == 160
        assert c.execute("SELECT COUNT(DISTINCT statement_pk || url || judge_id) FROM verdicts").fetchone()[0] == 160
    straight = sc("audit", str(answers), "--judge", "keyword:0", "--db", str(tmp_path / "s.db"),
                  "--allow-host", "127.0.0.1", "--report", str(tmp_path / "straight.json"))
    assert straight.returncode == 0, straight.stderr
    resumed = json.loads((tmp_path / "resumed.json").read_text())["metrics"]
    assert resumed == json.loads((tmp_path / "straight.json").read_text())["metrics"]


def test_the_headline_of_a_large_run_is_summed_a_page_at_a_time(tmp_path, monkeypatch):
    """Above HEADLINE_STREAM_ABOVE responses the audit's headline comes from the streamed figures, which
    equal the built report's."""
    from sourcecheckup.cli import runs
    from sourcecheckup.report import build_report
    from sourcecheckup.store import Store
    from tests.support.synth_run import synthesize_run

    store = Store(tmp_path / "big.db")
    run_id = synthesize_run(store, responses=60)
    built = runs.headline_report(store, run_id)
    monkeypatch.setattr(runs, "HEADLINE_STREAM_ABOVE", 10)
    streamed = runs.headline_report(store, run_id)
    # the streamed headline carries only what the headline prints of the audit trail: the judge version
    assert set(streamed["audit_trail"]) == {"judge_versions", "judge_warning"} and len(built["audit_trail"]) > 2
    assert streamed["audit_trail"]["judge_versions"] == built["audit_trail"]["judge_versions"]
    assert streamed["metrics"] == build_report(store, run_id)["metrics"]
    assert streamed["counts"] == built["counts"]
    assert runs.unreadable_sources(streamed) == runs.unreadable_sources(built)


PAGES = ("hypertension", "metformin-lactic-acidosis", "hfe-hemochromatosis")


SENTENCES = ("Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher.",
             "Metformin is a biguanide used as first-line treatment for type 2 diabetes.",
             "Iron-overload-related disease was present in 28.4% of male C282Y homozygotes.",
             "The DASH diet alone can lower systolic blood pressure by about 11 mm Hg.")


WAIT_S = 120   # a generous ceiling for real work on a busy machine; never what a test measures


def _ctrl_c_heard() -> None:
    """In the audit's process before it starts: SIGINT back to its default. A shell starts background jobs
    with SIGINT ignored, and Python leaves an inherited "ignore" alone, so a suite run from a background job
    (`make test &`) would give the audit a Ctrl-C it cannot hear."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _verdicts(db: Path) -> list[tuple[int, str]]:
    try:
        with sqlite3.connect(db, timeout=5) as c:
            return c.execute("SELECT pk, created_at FROM verdicts ORDER BY pk").fetchall()
    except sqlite3.OperationalError:   # not created yet
        return []


def test_ctrl_c_stops_a_builtin_audit_keeping_its_verdicts_and_a_resume_judges_only_the_rest(tmp_path, site):
    answers = tmp_path / "batch.jsonl"
    # pages of sentences no other page has: each batch of pairs embeds new text, so the audit is still judging
    # when its first verdicts are stored, however fast or busy the machine (the same pages cited again would be
    # judged from cached vectors in a blink, and the run could end before the signal lands)
    answers.write_text("\n".join(json.dumps({
        "id": f"b{i}", "response": " ".join(f"{s} Case {i}." for s in SENTENCES),
        "citations": [f"{site}/generated?n={i * len(PAGES) + k}&sentences=30" for k in range(len(PAGES))]})
        for i in range(12)))
    db = tmp_path / "c.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "SOURCECHECKUP_ARCHIVE": "off"}
    proc = subprocess.Popen([sys.executable, "-m", "sourcecheckup", "audit", str(answers), "--db", str(db),
                             "--allow-host", "127.0.0.1", "--no-references", "--browser", "never"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_ctrl_c_heard)
    deadline = time.monotonic() + 5 * WAIT_S   # fetching 36 pages and embedding a third of them: a minute and
    while not _verdicts(db) and proc.poll() is None and time.monotonic() < deadline:   # more on a crowded machine
        time.sleep(0.05)
    assert proc.poll() is None, "the audit ended before its first verdicts: nothing to interrupt"
    assert _verdicts(db), f"no verdict stored within {5 * WAIT_S} s"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=WAIT_S)   # it exits (bench/interrupt.py measures how soon)
    assert proc.returncode == 130, err
    kept = _verdicts(db)
    with sqlite3.connect(db) as c:
        run_id, status = c.execute("SELECT id, status FROM runs").fetchone()
        pairs = c.execute("SELECT COUNT(*) FROM statements WHERE run_id = ?", [run_id]).fetchone()[0] * len(PAGES)
    assert status == "cancelled"
    assert f"resume with: sourcecheckup audit --resume {run_id}" in err
    assert 0 < len(kept) < pairs, "interrupted part way, its committed verdicts kept"

    resumed = subprocess.run([sys.executable, "-m", "sourcecheckup", "audit", "--resume", run_id, "--db", str(db),
                              "-q"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    after = _verdicts(db)
    with sqlite3.connect(db) as c:
        pairs = c.execute("SELECT COUNT(*) FROM statements WHERE run_id = ?", [run_id]).fetchone()[0] * len(PAGES)
        assert c.execute("SELECT status FROM runs").fetchone()[0] == "completed"
    assert len(after) == pairs   # every pair judged once: the kept ones were not judged again
    assert set(kept) <= set(after)
