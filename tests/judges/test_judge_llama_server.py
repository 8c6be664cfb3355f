"""LLM judges against a server that answers as llama.cpp's ``llama-server`` does (tests/support/
fake_llama_server.py), through the real openai SDK: garbage never becomes a verdict, a small shared
context is judged without overflowing it, a keyed server works with its key, a server that fails
structured output is asked without it."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sourcecheckup.evidence import SourceText
from sourcecheckup.judges import make_judge
from sourcecheckup.judges.detect import detect_servers
from sourcecheckup.llm import secrets as keys
from sourcecheckup.models import Label
from tests.support.fake_llama_server import FakeLlamaServer
from tests.support.paths import FIXTURES as TEST_FIXTURES
from tests.support.paths import ROOT

FIXTURES = TEST_FIXTURES / "judges"
SAMPLES = ROOT / "resources" / "samples"
STATEMENT = "28.4% of male C282Y homozygotes develop iron-overload disease."


@pytest.fixture(autouse=True)
def no_keyring(monkeypatch):
    monkeypatch.setattr(keys, "_keyring_get", lambda provider: None)
    monkeypatch.delenv("SOURCECHECKUP_JUDGE_KEY", raising=False)


def page() -> SourceText:
    return SourceText.from_text((FIXTURES / "haemochromatosis.txt").read_text(), url="https://example.org/h")


def audit(tmp_path: Path, judge: str, *extra: str, env: dict | None = None,
          answers: Path = SAMPLES / "answers") -> subprocess.CompletedProcess:
    """The demo's audit (the bundled sample answers and their local sources) with ``judge``."""
    e = {k: v for k, v in os.environ.items() if k != "SOURCECHECKUP_JUDGE_KEY"}
    e.update({"PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", **(env or {})})
    return subprocess.run([sys.executable, "-m", "sourcecheckup", "audit", str(answers),
                           "--sources", str(SAMPLES / "sources"), "--db", str(tmp_path / "run.db"),
                           "--no-archive", "--no-references", "--browser", "never", "--judge", judge,
                           "--report", str(tmp_path / "report.json"), *extra],
                          cwd=ROOT, env=e, text=True, capture_output=True, timeout=300)


def labels(tmp_path: Path) -> list[dict]:
    report = json.loads((tmp_path / "report.json").read_text())
    return [v for r in report["responses"] for s in r["statements"] for v in s["verdicts"]]


async def test_a_garbage_model_under_a_schema_gives_judge_errors_never_verdicts():
    with FakeLlamaServer(model="garbage") as server:
        judge = make_judge(f"openai-compatible:{server.base_url}#tiny", backoff_s=0.01)
        verdicts = await judge.verify_many([(STATEMENT, page()), ("Iron overload harms the liver.", page())])
        await judge.aclose()
    assert [v.label for v in verdicts] == [Label.JUDGE_ERROR] * 2
    assert all("cut off at the" in v.rationale for v in verdicts)


async def test_a_random_model_never_gives_a_plain_supported_verdict():
    with FakeLlamaServer(model="random", seed=3) as server:
        judge = make_judge(f"openai-compatible:{server.base_url}#tiny", backoff_s=0.01, max_output_tokens=80)
        verdicts = await judge.verify_many([(f"{STATEMENT} ({i})", page()) for i in range(12)])
        await judge.aclose()
    supported = [v for v in verdicts if v.label is Label.SUPPORTED]
    assert all(v.review_first and v.quote_found is False for v in supported)
    assert any(v.label is Label.JUDGE_ERROR for v in verdicts)     # replies cut off at the limit


def test_an_audit_whose_every_pair_fails_says_so_and_exits_non_zero(tmp_path):
    with FakeLlamaServer(model="garbage") as server:
        p = audit(tmp_path, f"openai-compatible:{server.base_url}#tiny",
                  answers=SAMPLES / "answers" / "warfarin-nsaids.md")
    assert p.returncode == 1, p.stderr
    assert "every verdict is a judge error" in p.stderr
    assert {v["label"] for v in labels(tmp_path)} == {"judge_error"}
    report = json.loads((tmp_path / "report.json").read_text())
    assert report["judge_error_warning"].startswith("every verdict is a judge error")


@pytest.mark.parametrize("kind", ["openai-compatible", "checker"])
def test_a_four_slot_4096_token_server_judges_the_demo_without_context_errors(tmp_path, kind):
    model = "judge" if kind == "openai-compatible" else "checker"
    with FakeLlamaServer(model=model, n_ctx=4096, n_slots=4, latency_s=0.05) as server:
        p = audit(tmp_path, f"{kind}:{server.base_url}#tiny", "--concurrency", "8", "--full-source")
        assert p.returncode == 0, p.stderr
        assert server.context_errors == 0 and server.peak_in_flight <= 4
        sent = server.chat_requests
    verdicts = labels(tmp_path)
    assert len(verdicts) >= 20 and not [v for v in verdicts if v["label"] == "judge_error"]
    # output limits and evidence fit the 4,096 tokens the server reported (not the 8,192 assumed before)
    assert all(r.prompt_tokens + r.body["max_tokens"] <= 4096 for r in sent)


def test_slots_of_a_split_context_hold_each_request_within_a_slot(tmp_path):
    with FakeLlamaServer(model="judge", n_ctx=8192, n_slots=4, unified=False) as server:
        p = audit(tmp_path, f"openai-compatible:{server.base_url}#tiny", "--concurrency", "8")
        assert p.returncode == 0, p.stderr
        assert server.context_errors == 0
    assert not [v for v in labels(tmp_path) if v["label"] == "judge_error"]


async def test_an_overflowing_shared_context_is_backed_off_with_one_hint(caplog):
    # the server says 4 slots share 40,000 tokens, but its cache holds 1,800
    with FakeLlamaServer(model="judge", n_ctx=1800, n_slots=4, latency_s=0.05) as server:
        server.props_body = lambda: {"default_generation_settings": {"n_ctx": 4096}, "total_slots": 4}  # type: ignore
        server.models_body = lambda: {"object": "list", "data": [{"id": "tiny", "meta": {"n_ctx": 40000}}]}  # type: ignore
        judge = make_judge(f"openai-compatible:{server.base_url}#tiny", backoff_s=0.01, max_retries=6,
                           full_source=True)
        verdicts = await judge.verify_many([(f"{STATEMENT} ({i})", page()) for i in range(8)])
        await judge.aclose()
    assert server.context_errors > 0                      # it did overflow…
    assert all(v.label is Label.SUPPORTED for v in verdicts)   # …and every pair was judged after backing off
    hints = [r for r in caplog.records if "-np" in r.getMessage()]
    assert len(hints) == 1 and "-c" in hints[0].getMessage() and "--concurrency" in hints[0].getMessage()


async def test_a_request_larger_than_a_slot_fails_with_the_hint():
    with FakeLlamaServer(model="judge", n_ctx=2048, n_slots=4, unified=False) as server:
        server.props_body = lambda: {}  # type: ignore   # a server that does not say its context
        server.models_body = lambda: {"object": "list", "data": [{"id": "tiny"}]}  # type: ignore
        judge = make_judge(f"openai-compatible:{server.base_url}#tiny", backoff_s=0.01)
        verdict = await judge.verify(STATEMENT, page())
        await judge.aclose()
    assert verdict.label is Label.JUDGE_ERROR
    assert "exceeds the available context size" in verdict.rationale and "-np" in verdict.rationale


async def test_a_keyed_server_works_with_its_key_and_a_missing_key_says_where_to_put_it(monkeypatch):
    with FakeLlamaServer(model="judge", api_key="sk-local-123") as server:
        judge = make_judge(f"openai-compatible:{server.base_url}#tiny", backoff_s=0.01)
        refused = await judge.verify(STATEMENT, page())
        await judge.aclose()
        monkeypatch.setenv("SOURCECHECKUP_JUDGE_KEY", "sk-local-123")
        judge = make_judge(f"openai-compatible:{server.base_url}#tiny", backoff_s=0.01)
        accepted = await judge.verify(STATEMENT, page())
        await judge.aclose()
        monkeypatch.delenv("SOURCECHECKUP_JUDGE_KEY")
        monkeypatch.setenv("MY_LLAMA_KEY", "sk-local-123")
        checker = make_judge(f"checker:{server.base_url}#tiny", backoff_s=0.01, key_env="MY_LLAMA_KEY")
        checked = await checker.verify(STATEMENT, page())
        await checker.aclose()
        monkeypatch.setattr(keys, "_keyring_get", lambda provider: "sk-local-123" if provider == "openai-compatible" else None)
        judge = make_judge(f"openai-compatible:{server.base_url}#tiny", backoff_s=0.01)
        from_keyring = await judge.verify(STATEMENT, page())
        await judge.aclose()
    assert refused.label is Label.JUDGE_ERROR and "HTTP 401" in refused.rationale
    for where in ("keyring set sourcecheckup openai-compatible", "SOURCECHECKUP_JUDGE_KEY", "--judge-key-env"):
        assert where in refused.rationale
    assert accepted.label is Label.SUPPORTED and from_keyring.label is Label.SUPPORTED
    assert checked.label is not Label.JUDGE_ERROR or "401" not in checked.rationale
    assert "sk-local-123" not in refused.rationale


def test_the_cli_passes_a_key_named_by_judge_key_env(tmp_path):
    with FakeLlamaServer(model="judge", api_key="sk-cli-456") as server:
        p = audit(tmp_path, f"openai-compatible:{server.base_url}#tiny", "--judge-key-env", "LLAMA_KEY",
                  env={"LLAMA_KEY": "sk-cli-456"}, answers=SAMPLES / "answers" / "warfarin-nsaids.md")
    assert p.returncode == 0, p.stderr
    assert "sk-cli-456" not in (tmp_path / "report.json").read_text()


async def test_detect_reports_a_server_that_answers_401_as_needing_a_key():
    with FakeLlamaServer(model="judge", api_key="sk-x") as keyed, FakeLlamaServer(model="judge") as open_:
        servers = await detect_servers([keyed.port, open_.port], timeout_s=2)
    by_port = {s.port: s for s in servers}
    assert by_port[keyed.port].needs_key and not by_port[open_.port].needs_key
    assert by_port[keyed.port].kind == "llama.cpp server"
    from sourcecheckup.cli.judges import format_servers

    shown = format_servers(servers, [keyed.port, open_.port])
    assert shown.count("needs a key") == 1 and "SOURCECHECKUP_JUDGE_KEY" in shown


@pytest.mark.parametrize("status", [400, 500])
async def test_a_server_that_fails_structured_output_is_asked_once_without_it(status):
    with FakeLlamaServer(model="judge", reject_response_format=True, reject_status=status) as server:
        judge = make_judge(f"openai-compatible:{server.base_url}#tiny", backoff_s=0.01)
        verdicts = await judge.verify_many([(STATEMENT, page()), ("Iron overload harms the liver.", page())])
        await judge.aclose()
        sent = server.chat_requests
    assert all(v.label is Label.SUPPORTED for v in verdicts)
    assert "structured_output_not_applied" in verdicts[0].flags
    assert sum("response_format" in r.body for r in sent) <= 2     # the first call(s) in flight, then none
    assert "response_format" not in sent[-1].body


def test_verify_pairs_counts_judge_errors_and_fails_when_every_pair_failed(tmp_path):
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("\n".join(json.dumps({"id": f"p{i}", "statement": STATEMENT,
                                           "source": (FIXTURES / "haemochromatosis.txt").read_text()})
                               for i in range(3)) + "\n")
    e = {**os.environ, "PYTHONPATH": str(ROOT)}
    with FakeLlamaServer(model="garbage") as server:
        p = subprocess.run([sys.executable, "-m", "sourcecheckup", "verify-pairs", str(pairs), "--judge",
                            f"checker:{server.base_url}#tiny"], cwd=ROOT, env=e, text=True, capture_output=True,
                           timeout=120)
    assert p.returncode == 1, p.stderr
    assert "judge errors 3" in p.stderr and "every verdict is a judge error" in p.stderr
    assert [json.loads(line)["label"] for line in p.stdout.splitlines()] == ["judge_error"] * 3


def test_a_parser_warning_prints_once_and_help_names_the_checker(tmp_path):
    with FakeLlamaServer(model="garbage", n_ctx=1024, n_slots=1) as server:   # short garbage: quick to read
        p = audit(tmp_path, "builtin", "--parser", f"openai-compatible:{server.base_url}#tiny",
                  answers=SAMPLES / "answers" / "warfarin-nsaids.md")
    assert p.returncode == 0, p.stderr
    warnings = [line for line in p.stderr.splitlines() if "LLM parser" in line]
    assert warnings and len(warnings) == len(set(warnings))
    help_text = subprocess.run([sys.executable, "-m", "sourcecheckup", "audit", "--help"], cwd=ROOT, text=True,
                               capture_output=True, env={**os.environ, "PYTHONPATH": str(ROOT)}).stdout
    assert "checker:URL#MODEL" in help_text and "--judge-key-env" in help_text


# -- a shared cache as llama-server really runs it (checked against llama-server b11434) ----------

LAB_TABLE = ("Table 2. Serum ferritin 1,245 ug/L (IQR 890-2,310); transferrin saturation 78.4% (95% CI "
             "71.2-85.6); ALT 64 U/L; n=1,107; p<0.001. Dose 2.5 mg/kg/day for 14 days; 2019-03-21; 0.25 mL. ")


def lab_page(rows: int = 12) -> SourceText:
    """A page of lab values: llama's vocabulary spends a token on every digit (2.7 times the
    4-characters-a-token estimate on the real server)."""
    return SourceText.from_text("Iron overload in C282Y homozygotes.\n\n" + LAB_TABLE * rows,
                                url="https://example.org/labs")


def test_an_overflow_of_the_shared_cache_fails_every_request_in_flight():
    from concurrent.futures import ThreadPoolExecutor

    import httpx

    with FakeLlamaServer(model="judge", n_ctx=4096, n_slots=4, latency_s=0.3) as server:
        body = {"model": "m", "max_tokens": 1,
                "messages": [{"role": "user", "content": "renal dose " * 650}]}   # 1,300 tokens: one fits
        with ThreadPoolExecutor(4) as pool:
            answers = list(pool.map(lambda _: httpx.post(f"{server.base_url}/chat/completions", json=body,
                                                         timeout=30), range(4)))
        models = httpx.get(f"{server.base_url}/models").json()
    assert [a.status_code for a in answers] == [500] * 4        # not only the request that did not fit
    assert answers[0].json() == {"error": {"code": 500, "message": "Context size has been exceeded.",
                                           "type": "server_error"}}
    assert server.overflows == 1 and server.context_errors == 4
    assert models["data"][0]["meta"]["n_ctx"] == 4096           # one slot's context, which here is the cache


async def test_number_heavy_sources_share_the_cache_without_overflowing_it():
    # the gate reserves what the server itself counts (its /tokenize), not 4 characters a token
    with FakeLlamaServer(model="judge", n_ctx=4096, n_slots=4, latency_s=0.1) as server:
        judge = make_judge(f"openai-compatible:{server.base_url}#tiny", backoff_s=0.01, max_output_tokens=100,
                           full_source=True)
        pages = [lab_page(9) for _ in range(6)]
        verdicts = await judge.verify_many([(f"{STATEMENT} ({i})", p) for i, p in enumerate(pages)])
        await judge.aclose()
        sent = server.chat_requests
    assert server.overflows == 0 and server.context_errors == 0 and server.peak_tokens <= 4096
    assert all(v.label is Label.SUPPORTED for v in verdicts)
    assert server.peak_in_flight >= 2                           # what fits still runs side by side
    assert all(r.prompt_tokens + r.body["max_tokens"] <= 4096 for r in sent)


async def test_the_output_limit_is_sized_to_the_servers_own_count_of_the_prompt():
    with FakeLlamaServer(model="judge", n_ctx=2048, n_slots=1) as server:
        judge = make_judge(f"openai-compatible:{server.base_url}#tiny", backoff_s=0.01, full_source=True)
        verdict = await judge.verify(STATEMENT, lab_page(5))
        await judge.aclose()
        sent = server.chat_requests
    assert verdict.label is Label.SUPPORTED
    assert sent and all(r.prompt_tokens + r.body["max_tokens"] <= 2048 for r in sent)


async def test_one_overflow_narrows_the_judge_once_and_every_failed_pair_is_judged_again(caplog):
    # the server says 4 slots of 40,000 tokens; its cache holds about two of these requests
    with FakeLlamaServer(model="judge", n_ctx=2600, n_slots=4, latency_s=0.2) as server:
        server.props_body = lambda: {"default_generation_settings": {"n_ctx": 40000}, "total_slots": 4}  # type: ignore
        server.models_body = lambda: {"object": "list", "data": [{"id": "tiny", "meta": {"n_ctx": 40000}}]}  # type: ignore
        judge = make_judge(f"openai-compatible:{server.base_url}#tiny", backoff_s=0.01)
        verdicts = await judge.verify_many([(f"{STATEMENT} ({i})", page()) for i in range(12)])
        slots = judge.client.gate.slots
        await judge.aclose()
    assert server.overflows >= 1 and server.context_errors > server.overflows   # several failed at once…
    assert all(v.label is Label.SUPPORTED for v in verdicts)                     # …and were all judged again
    assert slots >= 2                          # one narrowing per overflow, not one per failed request
    hints = [r for r in caplog.records if "-np" in r.getMessage()]
    assert len(hints) == 1


async def test_a_number_heavy_page_fits_a_small_slot_by_the_servers_count():
    # `-c 8192 -np 4`: four slots of 2,048 tokens apart; the page's digits cost a token each, so the
    # whole page "fits" by 4 characters a token but prompt and reply do not fit the slot by the server's count
    with FakeLlamaServer(model="judge", n_ctx=8192, n_slots=4, unified=False) as server:
        judge = make_judge(f"openai-compatible:{server.base_url}#tiny", backoff_s=0.01, full_source=True)
        verdicts = await judge.verify_many([(f"{STATEMENT} ({i})", lab_page(10)) for i in range(3)])
        await judge.aclose()
        sent = server.chat_requests
    assert server.context_errors == 0
    assert all(v.label is Label.SUPPORTED for v in verdicts)      # not cut off at the slot's end
    assert all(r.prompt_tokens + r.body["max_tokens"] <= 2048 for r in sent)
