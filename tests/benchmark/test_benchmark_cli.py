"""`sourcecheckup questions`, `answer` and `benchmark` in a subprocess against local fake LLM servers."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support import cli
from tests.support.bench_llm import TOPICS, responder
from tests.support.fake_llm import FakeLLMServer
from tests.support.paths import ROOT

KEY = "sk-ant-cli-test-77c1"


def sc(*args: str, anthropic: FakeLLMServer | None = None, timeout: float = 300) -> subprocess.CompletedProcess:
    env = {"SOURCECHECKUP_BROWSER": "never", "SOURCECHECKUP_ARCHIVE": "off"}
    if anthropic is not None:   # the anthropic SDK reads both from the environment
        env.update(ANTHROPIC_BASE_URL=anthropic.base_url, ANTHROPIC_API_KEY=KEY)
    return cli.sc(*args, env=env, timeout=timeout, in_process=True)


@pytest.fixture
def servers(site):
    with FakeLLMServer("openai", responder=responder(site, {"wrong": "unsupported"})) as oa, \
            FakeLLMServer("anthropic", responder=responder(site), api_key=KEY) as an:
        yield oa, an


@pytest.fixture
def docs(tmp_path, site) -> Path:
    path = tmp_path / "documents.txt"
    path.write_text("\n".join(f"{site}/article/{p}" for p in TOPICS) + "\n")
    return path


def test_questions_then_answer_then_audit_reads_the_answers_as_they_are(tmp_path, docs, servers):
    oa, an = servers
    good = f"openai-compatible:{oa.base_url}#good"
    qfile, afile = tmp_path / "questions.jsonl", tmp_path / "answers.jsonl"
    done = sc("questions", str(docs), "--model", good, "-o", str(qfile), "--variants", "terse",
              "--allow-host", "127.0.0.1", "--db", str(tmp_path / "b.db"))
    assert done.returncode == 0, done.stderr
    questions = [json.loads(x) for x in qfile.read_text().splitlines()]
    assert len(questions) == 6 and {q["variant"] for q in questions} == {"original", "terse"}
    assert all(q["reference_answer"] for q in questions)
    assert "sourcecheckup answer" in done.stderr

    questions[0]["drop"] = True                      # the reviewer drops one question
    qfile.write_text("".join(json.dumps(q) + "\n" for q in questions))
    done = sc("answer", str(qfile), "--model", good, "--model", "anthropic:claude-test", "-o", str(afile),
              "--temperature", "0.2", anthropic=an)
    assert done.returncode == 0, done.stderr
    answers = [json.loads(x) for x in afile.read_text().splitlines()]
    assert len(answers) == 10
    assert {a["model"] for a in answers} == {good, "anthropic:claude-test"}
    assert all(a["citations"] and a["response"] and a["question_source"] == "generated" for a in answers)
    assert KEY not in afile.read_text() and KEY not in done.stderr

    done = sc("audit", str(afile), "--judge", "keyword:0", "--allow-host", "127.0.0.1",
              "--db", str(tmp_path / "audit.db"))
    assert done.returncode == 0, done.stderr
    assert "10 responses" in done.stdout and "statement-level support  100.0%" in done.stdout


def test_benchmark_prints_the_per_model_table_and_resume_asks_nothing_again(tmp_path, docs, servers):
    oa, an = servers
    good, wrong = f"openai-compatible:{oa.base_url}#good", f"openai-compatible:{oa.base_url}#wrong"
    db = str(tmp_path / "bench.db")
    done = sc("benchmark", str(docs), "--models", f"{good},{wrong}", "--models", "anthropic:claude-test",
              "--judge", "keyword:0", "--accuracy", "--best-of", "2", "--allow-host", "127.0.0.1", "--db", db,
              "--json", str(tmp_path / "results.json"), anthropic=an)
    assert done.returncode == 0, done.stderr
    table = done.stdout
    assert "statement support" in table and "accuracy" in table and "best-of-K" in table
    row = {line.split()[0]: line for line in table.splitlines() if line.startswith(("good", "wrong", "anthropic"))}
    assert row["good"].count("100.0%") >= 3
    assert row["wrong"].count("0.0% (0-") >= 2 and "(0-0)" not in row["wrong"]   # never a zero-width interval
    results = json.loads((tmp_path / "results.json").read_text())
    assert results["models"][good]["metrics"]["statement_support"]["value"] == 1.0
    assert results["models"][wrong]["metrics"]["statement_support"]["value"] == 0.0
    assert results["models"][wrong]["accuracy_labels"] == {"missing": 3}
    assert results["models"]["anthropic:claude-test"]["best_of"]["k"] == 2
    bench_id = results["benchmark"]

    asked = len(oa.requests) + len(an.requests)
    again = sc("benchmark", "--resume", bench_id, "--db", db, "--allow-host", "127.0.0.1", anthropic=an)
    assert again.returncode == 0, again.stderr
    assert len(oa.requests) + len(an.requests) == asked
    assert again.stdout == table


def test_benchmark_with_a_judge_spec_as_model_exits_2_with_a_clear_message(tmp_path, docs):
    done = sc("benchmark", str(docs), "--models", "builtin", "--db", str(tmp_path / "x.db"))
    assert done.returncode == 2 and "not a model that can write answers" in done.stderr


def test_benchmark_killed_while_answering_and_auditing_resumes_to_the_same_results(tmp_path, site):
    import signal
    import sqlite3
    import time

    docs = tmp_path / "documents.txt"   # twelve documents, two models: 24 answers, each audited as it comes
    docs.write_text("\n".join(f"{site}/article/{p}?copy={i}" for i in range(4) for p in TOPICS) + "\n")
    with FakeLLMServer("openai", latency_s=0.05, responder=responder(site, {"wrong": "unsupported"})) as oa:
        models = f"openai-compatible:{oa.base_url}#good,openai-compatible:{oa.base_url}#wrong"
        args = ["benchmark", str(docs), "--models", models, "--judge", "keyword:0.05", "--model-concurrency", "1",
                "--concurrency", "2", "--allow-host", "127.0.0.1", "--quiet"]
        db = tmp_path / "killed.db"
        env = {**os.environ, "SOURCECHECKUP_PLUGINS": "tests.support.fake_judge", "PYTHONPATH": str(ROOT),
               "SOURCECHECKUP_BROWSER": "never", "SOURCECHECKUP_ARCHIVE": "off", "HF_HUB_OFFLINE": "1"}
        proc = subprocess.Popen([sys.executable, "-m", "sourcecheckup", *args, "--db", str(db)], cwd=ROOT, env=env,
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

        def count(sql: str) -> int:
            try:
                with sqlite3.connect(db) as c:
                    return c.execute(sql).fetchone()[0]
            except sqlite3.Error:   # not created yet
                return 0

        deadline = time.monotonic() + 60
        while count("SELECT COUNT(*) FROM verdicts") < 4 and time.monotonic() < deadline and proc.poll() is None:
            time.sleep(0.02)
        proc.send_signal(signal.SIGKILL)
        proc.wait(10)
        answers_before = count("SELECT COUNT(*) FROM bench_answers")
        assert 0 < answers_before < 24, "the benchmark should have been killed while still answering"
        with sqlite3.connect(db) as c:
            bench_id = c.execute("SELECT id FROM benchmarks").fetchone()[0]

        resumed = sc("benchmark", "--resume", bench_id, "--db", str(db), "--allow-host", "127.0.0.1",
                     "--json", str(tmp_path / "resumed.json"))
        assert resumed.returncode == 0, resumed.stderr
        answer_calls = sum(1 for r in oa.requests if "You are a medical expert answering" in r.all_text)
        straight = sc(*args, "--db", str(tmp_path / "straight.db"), "--json", str(tmp_path / "straight.json"))
        assert straight.returncode == 0, straight.stderr

    with sqlite3.connect(db) as c:
        assert c.execute("SELECT COUNT(*), COUNT(DISTINCT qid || model || draw) FROM bench_answers").fetchone() == (24, 24)
        run_id = c.execute("SELECT run_id FROM benchmarks").fetchone()[0]
        n, distinct = c.execute("SELECT COUNT(*), COUNT(DISTINCT rid) FROM responses WHERE run_id = ?", [run_id]).fetchone()
        assert n == distinct == 24          # every answer in the run exactly once
        n, distinct = c.execute("SELECT COUNT(*), COUNT(DISTINCT statement_pk || url || judge_id) FROM verdicts "
                                "WHERE run_id = ?", [run_id]).fetchone()
        assert n == distinct > 0            # every pair judged exactly once
    # across the killed run and the resume, a saved answer is never asked again: only the calls in
    # flight at the kill (one per model) are
    assert 24 <= answer_calls <= 24 + 2
    got = json.loads((tmp_path / "resumed.json").read_text())["models"]
    want = json.loads((tmp_path / "straight.json").read_text())["models"]
    assert {m: v["metrics"] for m, v in got.items()} == {m: v["metrics"] for m, v in want.items()}
