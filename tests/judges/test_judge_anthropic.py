"""The Anthropic judge, end to end: the real anthropic SDK against a local fake messages API."""
from __future__ import annotations

import json
import logging
import re

import pytest

from sourcecheckup.evidence import SourceText
from sourcecheckup.judges import make_judge
from sourcecheckup.judges.api import VERDICT_SCHEMA
from sourcecheckup.models import Label
from tests.support.fake_llm import (
    FakeLLMServer,
    Scripted,
    bad_request,
    malformed,
    rate_limited,
    refusal,
    server_error,
    slow,
    verdict,
)
from tests.support.paths import FIXTURES as TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "judges"
KEY = "sk-ant-test-7e1d9c3b5a2f4e6d8c0b"
MODEL = "claude-opus-4-5"
STATEMENT = "The standard treatment is weekly venesection until ferritin is below 50 micrograms per litre."
QUOTE = ("The standard treatment is regular venesection, in which about 500 ml of blood is removed, "
         "usually once a week until ferritin falls below 50 micrograms per litre.")


@pytest.fixture
def page() -> SourceText:
    return SourceText.from_text((FIXTURES / "haemochromatosis.txt").read_text(),
                                url="https://example.org/haemochromatosis")


@pytest.fixture
def server():
    with FakeLLMServer("anthropic", api_key=KEY, model_versions={MODEL: "claude-opus-4-5-20251101"}) as srv:
        yield srv


@pytest.fixture
async def judge_for(server):
    made = []

    def make(api_key: str = KEY, **options):
        options.setdefault("backoff_s", 0.01)
        options.setdefault("timeout_s", 5)
        judge = make_judge(f"anthropic:{MODEL}", api_key=api_key, base_url=server.base_url, **options)
        made.append(judge)
        return judge

    yield make
    for judge in made:
        await judge.aclose()


async def test_structured_verdict_arrives_through_a_forced_tool_call(server, judge_for, page):
    server.script(verdict("supported", QUOTE, "The page states the schedule."))
    v = await judge_for().verify(STATEMENT, page)
    assert v.label is Label.SUPPORTED and v.quote == QUOTE and v.quote_found is True
    assert v.judge_id == f"anthropic:{MODEL}"
    assert v.model_version == "claude-opus-4-5-20251101"
    body = server.requests[0].body
    assert body["tools"][0]["input_schema"] == VERDICT_SCHEMA
    assert body["tool_choice"] == {"type": "tool", "name": body["tools"][0]["name"]}
    assert body["temperature"] == 0 and "seed" not in body
    assert "Never follow" in body["system"]
    assert re.search(r"^BEGIN SOURCE ([0-9A-F]{16})\n.*venesection.*\nEND SOURCE \1$",
                     body["messages"][0]["content"], re.S | re.M)
    assert v.tokens_in == pytest.approx(len(server.requests[0].all_text) / 4, abs=2)


async def test_not_supported_is_parsed(server, judge_for, page):
    server.script(verdict("not_supported", "", "The page gives no cure rate."))
    v = await judge_for().verify("Venesection cures 90% of patients.", page)
    assert v.label is Label.NOT_SUPPORTED and v.rationale == "The page gives no cure rate."


async def test_rate_limit_and_overload_are_retried_honouring_retry_after(server, judge_for, page):
    server.script(rate_limited(0.2), server_error(529), verdict("supported", QUOTE))
    judge = judge_for(backoff_s=0.01)
    v = await judge.verify(STATEMENT, page)
    assert v.label is Label.SUPPORTED
    assert server.requests[1].at - server.requests[0].at >= 0.2
    assert judge.usage().retries == 2


async def test_text_instead_of_tool_call_is_repaired_once(server, judge_for, page):
    server.script(malformed("Yes, the source supports it."), verdict("supported", QUOTE))
    v = await judge_for().verify(STATEMENT, page)
    assert v.label is Label.SUPPORTED and "repaired" in v.flags
    messages = server.requests[1].body["messages"]
    assert messages[1]["role"] == "assistant" and messages[1]["content"][0]["text"] == "Yes, the source supports it."
    assert "record_verdict" in messages[2]["content"]


async def test_invalid_tool_input_is_repaired_through_an_error_tool_result(server, judge_for, page):
    server.script(Scripted(json.dumps({"label": "unclear", "quote": "", "rationale": "Half of it."})),
                  verdict("not_supported", "", "The source gives no such figure."))
    v = await judge_for().verify(STATEMENT, page)
    assert v.label is Label.NOT_SUPPORTED
    messages = server.requests[1].body["messages"]
    tool_use = messages[1]["content"][0]
    result = messages[2]["content"][0]
    assert tool_use["type"] == "tool_use"
    assert result["type"] == "tool_result" and result["tool_use_id"] == tool_use["id"] and result["is_error"]
    assert "'unclear'" in result["content"]


async def test_unparsable_twice_is_judge_error_with_raw_kept(server, judge_for, page):
    server.script(malformed("Let me weigh this, I think."), malformed("Still prose."))
    v = await judge_for().verify(STATEMENT, page)
    assert v.label is Label.JUDGE_ERROR
    assert "Let me weigh this, I think." in v.raw and "Still prose." in v.raw
    assert len(server.requests) == 2


async def test_refusal_stop_reason_is_judge_error(server, judge_for, page):
    server.script(refusal("I can't assess this content."))
    v = await judge_for().verify(STATEMENT, page)
    assert v.label is Label.JUDGE_ERROR and "refused" in v.rationale
    assert len(server.requests) == 1


async def test_deprecated_temperature_is_dropped_and_flagged(server, judge_for, page):
    server.script(bad_request("`temperature` is deprecated for this model."), verdict("supported", QUOTE))
    v = await judge_for().verify(STATEMENT, page)
    assert v.label is Label.SUPPORTED and "temperature_not_applied" in v.flags
    assert "temperature" not in server.requests[1].body


async def test_timeout_becomes_judge_error_after_bounded_retries(server, judge_for, page):
    server.script(slow(3), slow(3))
    v = await judge_for(timeout_s=0.3, max_retries=1).verify(STATEMENT, page)
    assert v.label is Label.JUDGE_ERROR and "timed out" in v.rationale
    assert len(server.requests) == 2   # one retry, then the error (the 3 s replies were not waited for)


async def test_injected_source_is_flagged(server, judge_for):
    source = SourceText.from_text((FIXTURES / "injected.txt").read_text())
    v = await judge_for().verify(STATEMENT, source)
    assert "possible_injection" in v.flags


async def test_api_key_never_appears_in_verdict_or_logs(server, judge_for, page, caplog):
    caplog.set_level(logging.DEBUG)
    wrong = "sk-ant-wrong-0a9b8c7d6e5f4a3b"
    bad = await judge_for(api_key=wrong).verify(STATEMENT, page)    # the fake echoes the key it got
    good = await judge_for().verify(STATEMENT, page)
    assert bad.label is Label.JUDGE_ERROR and good.label is Label.SUPPORTED
    for secret in (wrong, KEY):
        assert secret not in repr(bad) and secret not in repr(good)
        assert not [r for r in caplog.records if secret in r.getMessage()]


async def test_missing_key_error_says_where_to_put_one(monkeypatch):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    with pytest.raises(Exception, match="ANTHROPIC_API_KEY"):
        make_judge(f"anthropic:{MODEL}")
