"""The one LLM client layer: one spec parser, call options passed explicitly, one repair loop."""
from __future__ import annotations

import json

import pytest

from sourcecheckup.evidence import SourceText
from sourcecheckup.judges import JudgeSpecError, make_judge, validate_judge_spec
from sourcecheckup.llm import make_client
from sourcecheckup.llm.client import CallOptions
from sourcecheckup.llm.replies import ReplyError, Schema, TaskError, ask_json
from sourcecheckup.llm.spec import SpecError, model_name, parse_model_spec, short_name
from tests.support.fake_llm import FakeLLMServer, Scripted, refusal

KEY = "sk-test-client-0123456789"
NAMES = Schema("names", {"type": "object", "properties": {"names": {"type": "array", "items": {"type": "string"}}},
                         "required": ["names"]}, "Record the names.", example='{"names": ["..."]}')


def _names(obj):
    names = obj.get("names")
    if not isinstance(names, list) or not names:
        raise ReplyError('"names" must be a non-empty list')
    return names


@pytest.mark.parametrize("spec, problem", [
    ("openai-compatible:http://localhost:11434/v1", "needs a base URL and a model"),
    ("openai-compatible:localhost:11434/v1#llama3.1", "must start with http:// or https://"),
    ("openai:", "names no model"),
    ("anthropic:", "names no model"),
])
def test_a_malformed_model_spec_is_told_the_same_way_by_every_caller(spec, problem):
    with pytest.raises(SpecError) as parsed:
        parse_model_spec(spec)
    assert problem in str(parsed.value)
    # the judges' check, the judge factory and the client factory say the very same sentence
    assert validate_judge_spec(spec, env={"OPENAI_API_KEY": "x", "ANTHROPIC_API_KEY": "x"}) == str(parsed.value)
    with pytest.raises(JudgeSpecError) as judged:
        make_judge(spec, api_key=KEY)
    with pytest.raises(SpecError) as made:
        make_client(spec, api_key=KEY)
    assert str(judged.value) == str(made.value) == str(parsed.value)


def test_model_spec_names_its_model_host_and_key_provider():
    compatible = parse_model_spec(" openai-compatible:http://127.0.0.1:8000/v1#llama3.1 ")
    assert (compatible.base_url, compatible.model, compatible.provider) == \
        ("http://127.0.0.1:8000/v1", "llama3.1", None)
    assert str(compatible) == "openai-compatible:http://127.0.0.1:8000/v1#llama3.1"
    assert parse_model_spec("anthropic:claude-sonnet-4-5").provider == "anthropic"
    assert model_name(str(compatible)) == "llama3.1" and model_name("openai:gpt-4o") == "gpt-4o"
    assert short_name(str(compatible)) == "llama3.1 @ 127.0.0.1:8000"


async def test_call_options_reach_the_wire_as_given_and_the_judge_sends_its_own():
    with FakeLLMServer("openai", api_key=KEY) as server:
        client = make_client("openai:gpt-4o", api_key=KEY, base_url=server.base_url, seed=42)
        judge = make_judge("openai:gpt-4o", api_key=KEY, base_url=server.base_url, seed=42)
        try:
            server.script(Scripted("Ferritin."), Scripted(json.dumps({"names": ["ferritin"]})))
            free = await client.complete("Answer.", "What stores iron?", None,
                                         CallOptions(temperature=0.7, max_tokens=50))
            typed = await client.complete("Answer.", "Name it.", NAMES, CallOptions(seed=7, max_tokens=60))
            verdict = await judge.verify("Ferritin stores iron.", SourceText.from_text("Ferritin stores iron."))
        finally:
            await client.aclose()
            await judge.aclose()
    plain, structured, judged = (r.body for r in server.requests)
    assert free.text == "Ferritin." and typed.payload is None and json.loads(typed.text) == {"names": ["ferritin"]}
    # no hidden state: what one call asked for is not what the next one sends
    assert plain["temperature"] == 0.7 and "seed" not in plain and "response_format" not in plain
    assert plain["max_completion_tokens"] == 50
    assert "temperature" not in structured and structured["seed"] == 7
    assert structured["response_format"]["json_schema"]["name"] == "names"
    assert judged["temperature"] == 0 and judged["seed"] == 42
    assert judged["response_format"]["json_schema"]["name"] == "verdict"
    assert verdict.label.value == "supported"


async def test_one_repair_in_the_same_conversation_then_a_task_error_with_the_tokens_spent():
    with FakeLLMServer("openai", api_key=KEY) as server:
        client = make_client("openai:gpt-4o", api_key=KEY, base_url=server.base_url, backoff_s=0.01)
        try:
            server.script(Scripted('{"names": []}', usage=(10, 3)), Scripted('{"names": ["iron"]}', usage=(12, 4)))
            answer = await ask_json(client, "List.", "Names?", NAMES, _names, CallOptions(temperature=0))
            server.script(Scripted("no json", usage=(5, 1)), Scripted("still none", usage=(6, 1)))
            with pytest.raises(TaskError) as failed:
                await ask_json(client, "List.", "Names?", NAMES, _names, CallOptions(temperature=0))
            server.script(refusal("I can't."))
            with pytest.raises(TaskError) as refused:
                await ask_json(client, "List.", "Names?", NAMES, _names, CallOptions(temperature=0))
        finally:
            await client.aclose()
    assert answer.value == ["iron"] and answer.repaired and (answer.tokens_in, answer.tokens_out) == (22, 7)
    repair = server.requests[1].messages
    assert repair[-2] == {"role": "assistant", "content": '{"names": []}'}
    assert '"names" must be a non-empty list' in repair[-1]["content"] and '{"names": ["..."]}' in repair[-1]["content"]
    assert "unparsable reply after one repair attempt" in str(failed.value)
    assert (failed.value.tokens_in, failed.value.tokens_out) == (11, 2)
    assert failed.value.raw == "no json\n--- repair attempt ---\nstill none" and failed.value.refusal is None
    assert refused.value.refusal == "I can't." and "refused" in str(refused.value)
    assert len(server.requests) == 5    # a refusal is not repaired


def test_one_backoff_for_fetches_llm_calls_and_lookups_doubles_caps_and_jitters():
    import random

    from sourcecheckup.fetching.base import backoff_delay

    random.seed(3)
    waits = [backoff_delay(a, 1.0) for a in range(4)]
    for a, w in enumerate(waits):
        assert 2 ** a / 2 <= w <= 2 ** a       # half fixed, half random
    assert all(2.5 <= backoff_delay(6, 1.0, cap_s=5.0) <= 5.0 for _ in range(20))
    assert len({round(backoff_delay(2, 1.0), 6) for _ in range(20)}) > 1
