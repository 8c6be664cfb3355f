"""Several judges at once through the CLI: consensus rules, disagreements, cost, cleanup, and keys kept out
of every stored row, log record, report and terminal line. Real SDKs against the local fake servers."""
from __future__ import annotations

import json
import logging
from pathlib import Path

import pytest

from sourcecheckup.cli import main
from sourcecheckup.judges.base import BaseJudge, register
from sourcecheckup.judges.local import LocalModelError
from sourcecheckup.metrics import assess_run
from sourcecheckup.models import StatementStatus
from sourcecheckup.prompts import prompts_dir
from sourcecheckup.store import Store
from tests.support.fake_llm import FakeLLMServer, RecordedRequest, Scripted, verdict

OPENAI_KEY = "sk-multi-openai-5d0f4f9c2e7d1a8b6e3c"
ANTHROPIC_KEY = "sk-ant-multi-9c2e7d1a8b6e3c5d0f4f"
DEFINED = "Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher."
CURES = "Metformin cures hypertension within a week."
HYP_QUOTE = ("Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher under the American "
             "College of Cardiology and American Heart Association guideline, down from the older threshold "
             "of 140/90 mm Hg.")


def openai_says(request: RecordedRequest) -> Scripted:
    if "Rewrite the statement minimally" in request.user_text:
        return Scripted(json.dumps({"action": "delete", "statement": "", "quote": ""}))
    return verdict("not_supported", "", "The source does not say this.")


def anthropic_says(request: RecordedRequest) -> Scripted:
    if DEFINED in request.user_text and "/article/hypertension" in request.user_text:
        return verdict("supported", HYP_QUOTE, "The guideline threshold is stated.")
    return verdict("not_supported", "", "Not in the source.")


@pytest.fixture
def servers(monkeypatch):
    with FakeLLMServer("openai", api_key=OPENAI_KEY, responder=openai_says,
                       model_versions={"gpt-4o": "gpt-4o-2024-08-06"}) as oa, \
            FakeLLMServer("anthropic", api_key=ANTHROPIC_KEY, responder=anthropic_says) as an:
        monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
        monkeypatch.setenv("OPENAI_BASE_URL", oa.base_url)
        monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", an.base_url)
        monkeypatch.setenv("SOURCECHECKUP_PLUGINS", "tests.support.fake_judge")
        yield oa, an


def _answer(tmp_path: Path, site: str) -> Path:
    path = tmp_path / "answer.json"
    path.write_text(json.dumps({"response": f"{DEFINED} [1] {CURES} [2]",
                                "citations": [f"{site}/article/hypertension", f"{site}/article/metformin-lactic-acidosis"],
                                "question": "What is hypertension?", "model": "model-a"}))
    return path


def _run(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_three_judges_consensus_disagreements_cost_cleanup_and_no_key_anywhere(tmp_path, site, servers, capsys,
                                                                              caplog):
    caplog.set_level(logging.DEBUG)
    oa, an = servers
    db = str(tmp_path / "m.db")
    prompt = tmp_path / "my-verifier.txt"
    prompt.write_text((prompts_dir() / "verifier-v1.txt").read_text().replace(
        "You are a careful medical fact-checker.", "You are a careful medical fact-checker. CUSTOM-PROMPT-MARK"))
    report_json, report_html = tmp_path / "r.json", tmp_path / "r.html"
    code, out, err = _run(capsys, "audit", str(_answer(tmp_path, site)), "--db", db, "--allow-host", "127.0.0.1",
                          "--no-archive", "--browser", "never", "--judge", "openai:gpt-4o", "--judge", "keyword:0",
                          "--judge", "anthropic:claude-haiku-4-5", "--consensus", "majority",
                          "--prompt", str(prompt), "--token-budget", "300",
                          "--report", str(report_json), "--report", str(report_html))
    terminal = out + err
    assert code == 0, terminal
    store = Store(db)
    data = store.load_run(store.latest_run_id())
    assert data.run.config["consensus"] == "majority" and data.run.config["judge_options"]["token_budget"] == 300
    assert all("CUSTOM-PROMPT-MARK" in r.all_text for r in oa.requests + an.requests)

    def status(rule: str) -> dict[str, StatementStatus]:
        return {s.row.statement.text: s.status for r in assess_run(data, rule) for s in r.statements}

    # openai says no, keyword and anthropic say yes on the guideline page
    assert status("majority")[DEFINED] is StatementStatus.SUPPORTED
    assert status("any")[DEFINED] is StatementStatus.SUPPORTED
    assert status("first")[DEFINED] is StatementStatus.NOT_SUPPORTED
    assert status("all")[DEFINED] is StatementStatus.NOT_SUPPORTED
    assert status("majority")[CURES] is StatementStatus.NOT_SUPPORTED

    report = json.loads(report_json.read_text())
    assert [d["statement"] for d in report["disagreements"]] == [report["responses"][0]["statements"][0]["id"]]
    pair = report["disagreements"][0]
    assert pair["url"].endswith("/article/hypertension") and pair["consensus"] == "supported"
    assert pair["labels"] == {"openai:gpt-4o": "not_supported", "keyword:0": "supported",
                              "anthropic:claude-haiku-4-5": "supported"}
    usage = report["usage"]
    assert usage["openai:gpt-4o"]["calls"] == 4 and usage["openai:gpt-4o"]["tokens_in"] > 0
    assert usage["openai:gpt-4o"]["cost_usd"] > 0          # gpt-4o-2024-08-06 is priced as gpt-4o
    assert {k: v for k, v in usage["keyword:0"].items() if k != "model_versions"} == {
        "calls": 0, "tokens_in": 0, "tokens_out": 0, "cost_usd": 0.0}
    assert usage["openai:gpt-4o"]["model_versions"] == ["gpt-4o-2024-08-06"]   # what the verdicts recorded

    code, shown, _ = _run(capsys, "show", "--db", db)
    assert code == 0
    row = next(line for line in shown.splitlines() if DEFINED[:40] in line)
    assert "≠" in row and "openai:gpt-4o: 4 calls" in shown and "estimated $" in shown

    # SourceCleanup with the run's first LLM judge: both sources suggest deleting the unsupported claim
    code, cleaned, _ = _run(capsys, "cleanup", "--db", db)
    assert code == 0, cleaned
    assert "2 suggestion(s): 2 delete" in cleaned and CURES in cleaned
    rid = data.responses[0].response.id
    pks = [int(line.split()[0][1:]) for line in cleaned.splitlines() if line.startswith("#")]
    code, out2, _ = _run(capsys, "cleanup", "--db", db, "--accept", str(pks[0]), "--by", "dr.who")
    assert code == 0 and "delete, accepted" in out2
    code, revised, _ = _run(capsys, "revised", "--db", db, "--response", rid, "--json")
    assert code == 0
    assert json.loads(revised)["revised"] == f"{DEFINED} [1]"

    # the keys are nowhere: not in any stored row, log record, report or terminal line
    secrets = (OPENAI_KEY, ANTHROPIC_KEY)
    for table in store.db.table_names():
        for stored in store.db[table].rows:
            assert not any(k in repr(stored) for k in secrets), table
    for record in caplog.records:
        assert not any(k in record.getMessage() for k in secrets), record.name
    for text in (report_json.read_text(), report_html.read_text(), terminal, shown, cleaned, revised):
        assert not any(k in text for k in secrets)
    # the servers did receive the keys, so the checks above are not vacuous
    assert oa.requests[0].headers["authorization"] == f"Bearer {OPENAI_KEY}"


def test_missing_key_bad_local_model_and_bad_prompt_are_usage_errors(tmp_path, site, monkeypatch, capsys):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    answer = _answer(tmp_path, site)
    db = str(tmp_path / "e.db")
    code, _, err = _run(capsys, "audit", str(answer), "--db", db, "--judge", "openai:gpt-4o")
    assert code == 2 and "no API key for openai" in err and "Traceback" not in err
    code, _, err = _run(capsys, "audit", str(answer), "--db", db, "--judge", "local:" + str(tmp_path / "nothing"))
    assert code == 2 and "local" in err and "Traceback" not in err
    code, _, err = _run(capsys, "audit", str(answer), "--db", db, "--prompt", str(tmp_path / "missing.txt"))
    assert code == 2 and "prompt file not found" in err
    code, _, err = _run(capsys, "audit", str(answer), "--db", db, "--parser", "openai:gpt-4o")
    assert code == 2 and "no API key for openai" in err
    assert Store(db).list_runs() == []          # nothing was started
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text(json.dumps({"id": "p1", "statement": DEFINED, "source": HYP_QUOTE}) + "\n")
    code, _, err = _run(capsys, "verify-pairs", str(pairs), "--judge", "openai:gpt-4o")
    assert code == 2 and "no API key for openai" in err
    # a judge whose model cannot load fails when the run starts, before any fetch or pair
    code, _, err = _run(capsys, "audit", str(answer), "--db", db, "--judge", "brokenload")
    assert code == 2 and "weights are corrupt" in err and "Traceback" not in err
    failed = Store(db).list_runs()[0]
    assert failed.status == "failed" and "weights are corrupt" in failed.message
    assert Store(db).load_run(failed.id).sources == {}


class BrokenLoadJudge(BaseJudge):
    id = "brokenload"

    async def load(self) -> None:
        raise LocalModelError("could not load local model 'brokenload': the weights are corrupt")


register("brokenload", lambda arg, **options: BrokenLoadJudge())


class TrackedJudge(BaseJudge):
    """Records its lifecycle: the context manager must load it before use and close it after."""

    events: list[str] = []

    def __init__(self, arg: str) -> None:
        self.id = f"tracked:{arg}"

    async def load(self) -> None:
        TrackedJudge.events.append(f"load {self.id}")

    async def aclose(self) -> None:
        TrackedJudge.events.append(f"close {self.id}")


register("tracked", lambda arg, **options: TrackedJudge(arg))


def test_open_judges_loads_every_judge_and_closes_only_those_it_built():
    import asyncio

    from sourcecheckup.judges.base import open_judges

    async def go() -> None:
        async with open_judges(["tracked:a", "tracked:b"], {}) as judges:
            assert [j.id for j in judges] == ["tracked:a", "tracked:b"]
            assert TrackedJudge.events == ["load tracked:a", "load tracked:b"]
        assert TrackedJudge.events[2:] == ["close tracked:a", "close tracked:b"]
        TrackedJudge.events.clear()
        mine = TrackedJudge("mine")
        async with open_judges(["tracked:ignored"], given=[mine]) as judges:
            assert judges == [mine]
        assert TrackedJudge.events == ["load tracked:mine"]     # the caller's judge stays open
        TrackedJudge.events.clear()
        with pytest.raises(LocalModelError):
            async with open_judges(["tracked:c", "brokenload"]):
                pass
        assert TrackedJudge.events == ["load tracked:c", "close tracked:c"]   # a failed load closes the rest

    TrackedJudge.events.clear()
    asyncio.run(go())
