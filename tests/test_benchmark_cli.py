"""`sourcecheckup questions`, `answer` and `benchmark` in a subprocess against local fake LLM servers."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tests.support.bench_llm import TOPICS, responder
from tests.support.fake_llm import FakeLLMServer

ROOT = Path(__file__).resolve().parent.parent
KEY = "sk-ant-cli-test-77c1"


def sc(*args: str, anthropic: FakeLLMServer | None = None, timeout: float = 60) -> subprocess.CompletedProcess:
    env = {**os.environ, "SOURCECHECKUP_PLUGINS": "tests.support.fake_judge", "PYTHONPATH": str(ROOT),
           "SOURCECHECKUP_BROWSER": "never", "SOURCECHECKUP_ARCHIVE": "off", "HF_HUB_OFFLINE": "1"}
    if anthropic is not None:   # the anthropic SDK reads both from the environment
        env.update(ANTHROPIC_BASE_URL=anthropic.base_url, ANTHROPIC_API_KEY=KEY)
    return subprocess.run([sys.executable, "-m", "sourcecheckup", *args], cwd=ROOT, env=env, text=True,
                          capture_output=True, timeout=timeout)


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
    assert row["wrong"].count("0.0% (0-0)") >= 2
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
