"""Verifier replies as current open and API models actually write them, read by the real parser.

Each shape is what a model of that family sends back for the verdict prompt (reasoning blocks,
fences, chatter, label spellings, broken JSON, a bare label). A reply that carries a decision is
read; one that carries none is a judge error (ReplyError here; judge_error end to end), never
"not supported". A few shapes go end to end through the fake server, the real openai SDK and the
judge.
"""
from __future__ import annotations

import pytest

from sourcecheckup.evidence import SourceText
from sourcecheckup.judges import make_judge
from sourcecheckup.judges.api import parse_verdict
from sourcecheckup.llm.replies import ReplyError
from sourcecheckup.models import CONTRADICTED, Label
from tests.support.fake_llm import FakeLLMServer, Scripted
from tests.support.paths import FIXTURES as TEST_FIXTURES

Q = "In a large cohort study, 28.4% of male and 1.2% of female C282Y homozygotes developed iron-overload disease."
SUP, NOT, ERR = "supported", "not_supported", "judge_error"

SHAPES: list[tuple[str, str, str]] = [
    # -- OpenAI / API models with JSON mode ---------------------------------------------------
    ("gpt-4o plain JSON", f'{{"label": "supported", "quote": "{Q}", "rationale": "The cohort figure matches."}}', SUP),
    ("gpt-4o-mini fenced json", f'```json\n{{"label": "supported", "quote": "{Q}", "rationale": "Matches."}}\n```', SUP),
    ("gpt-4.1 bare fence", '```\n{"label": "not_supported", "quote": "", "rationale": "No figure for women over 60."}\n```',
     NOT),
    ("gpt fence then a note", '```json\n{"label": "not_supported", "quote": "", "rationale": "Not stated."}\n```\n\n'
     "Note: the source does not give this figure.", NOT),
    ("gpt-oss harmony channels", "<|channel|>analysis<|message|>The user wants a verdict. The source says 28.4%. "
     'So supported.<|end|><|start|>assistant<|channel|>final<|message|>{"label": "supported", '
     f'"quote": "{Q}", "rationale": "Same figure."}}<|return|>', SUP),
    # -- Qwen / DeepSeek / QwQ reasoning ------------------------------------------------------
    ("qwen3 think block", "<think>\nThe statement says 28.4% of males. Is it supported? The source says 28.4% of "
     "male... yes. Not supported would be wrong.\n</think>\n\n"
     f'{{"label": "supported", "quote": "{Q}", "rationale": "Exact figure."}}', SUP),
    ("deepseek-r1 opened by the template", "Okay, let me check the source. It says {not this} and the figure "
     'is absent, so not supported.\n</think>\n{"label": "not_supported", "quote": "", "rationale": "Absent."}', NOT),
    ("qwq think then fenced", "<think>Label must be one of supported / not_supported. "
     "The claim is about women over 60.</think>\n```json\n{\n  \"label\": \"not_supported\",\n  \"quote\": \"\",\n"
     '  "rationale": "No age group is given."\n}\n```', NOT),
    ("reasoning cut off inside think", "<think>The source mentions 28.4% of male homozygotes, which looks "
     "supported, but let me check the female figure", ERR),
    ("magistral thinking tag", "<thinking>Verdict: not supported? no, the figure is there.</thinking>\n"
     f'{{"label": "Supported", "quote": "{Q}", "rationale": "Figure present."}}', SUP),
    # -- Llama / Mistral / Gemma chatter ------------------------------------------------------
    ("llama3.1 chatter before", "Here is the verdict in JSON format:\n\n"
     '{"label": "not_supported", "quote": "", "rationale": "The source gives no such percentage."}', NOT),
    ("llama3.2 chatter both sides", "Based on the source, here is my assessment:\n"
     f'{{"label": "supported", "quote": "{Q}", "rationale": "Stated."}}\n'
     "Let me know if you need anything else!", SUP),
    ("mistral single quotes", f"{{'label': 'supported', 'quote': '{Q}', 'rationale': 'Stated in the cohort.'}}",
     SUP),
    ("gemma trailing comma", '{"label": "not_supported", "quote": "", "rationale": "Not in the source.",}', NOT),
    ("phi unquoted keys", '{label: "not_supported", quote: "", rationale: "Missing."}', NOT),
    ("small model cut off after the label", '{"label": "supported", "quote": "In a large cohort study, 28.4% of', SUP),
    # the last object is the model's final answer: an earlier one may be quoted from the source (issue 42)
    ("two objects, the last is the answer", '{"label": "not_supported", "quote": "", "rationale": "a"}\n'
     '{"label": "supported", "quote": "", "rationale": "b"}', SUP),
    # -- label spellings ----------------------------------------------------------------------
    ("label Supported", '{"label": "Supported", "quote": "", "rationale": "x"}', SUP),
    ("label SUPPORTED", '{"label": "SUPPORTED", "quote": "", "rationale": "x"}', SUP),
    ("label NOT SUPPORTED", '{"label": "NOT SUPPORTED", "quote": "", "rationale": "x"}', NOT),
    ("label not supported", '{"label": "not supported", "quote": "", "rationale": "x"}', NOT),
    ("label Not_Supported", '{"label": "Not_Supported", "quote": "", "rationale": "x"}', NOT),
    ("label not-supported", '{"label": "not-supported", "quote": "", "rationale": "x"}', NOT),
    ("label partially supported", '{"label": "partially supported", "quote": "", "rationale": "Half of it."}', NOT),
    ("label Unsupported", '{"label": "Unsupported", "quote": "", "rationale": "x"}', NOT),
    ("key Verdict instead of label", '{"Verdict": "Supported", "Quote": "", "Reason": "x"}', SUP),
    ("boolean supported field", '{"supported": false, "rationale": "No such figure."}', NOT),
    ("label maybe", '{"label": "maybe", "quote": "", "rationale": "Unclear."}', ERR),
    ("label missing", '{"quote": "", "rationale": "The figure is there."}', ERR),
    # -- Claude / prose without JSON ----------------------------------------------------------
    ("claude prose with verdict line", "Looking at the source, it reports 28.4% for men and 1.2% for women in a "
     "large cohort.\n\n**Verdict: Supported**", SUP),
    ("claude prose not supported", "The source discusses venesection but says nothing about an age limit. "
     "The statement is not supported by the source.", NOT),
    ("bare label", "Not supported", NOT),
    ("bare label with period", "SUPPORTED.", SUP),
    ("bare label markdown", "**not_supported**", NOT),
    ("restated question then answer", "Is the statement supported by the source? The statement is not "
     "supported.", NOT),
    ("does not support", "The source does not support this claim; it gives no figure.", NOT),
    ("not fully supported prose", "The claim is not fully supported: the source gives the male figure only.", NOT),
    ("prose naming both labels", "Parts of it are supported and parts are not supported.", ERR),
    ("prose without a decision", "I would need to read the full article before deciding.", ERR),
    ("empty reply", "", ERR),
    ("only a think block", "<think>Supported, probably.</think>", ERR),
    # -- contradiction ------------------------------------------------------------------------
    ("label contradicted", '{"label": "contradicted", "quote": "28.4% of male", "rationale": "Source says 28.4%."}',
     NOT),
    ("contradicted as a string flag", '{"label": "not_supported", "contradicted": "true", "quote": "", '
     '"rationale": "Different figure."}', NOT),
]


def read(text: str) -> str:
    try:
        return parse_verdict(text).label.value
    except ReplyError:
        return ERR


def test_there_are_at_least_thirty_shapes():
    assert len(SHAPES) >= 30 and len({name for name, _, _ in SHAPES}) == len(SHAPES)


@pytest.mark.parametrize("name,reply,expected", SHAPES, ids=[s[0] for s in SHAPES])
def test_reply_shape_is_read_as_the_model_meant(name, reply, expected):
    assert read(reply) == expected


def test_a_decision_read_from_a_mended_reply_keeps_its_quote_and_contradiction():
    p = parse_verdict("{'label': 'Supported', 'quote': 'Most cases are caused by two copies', }")
    assert p.label is Label.SUPPORTED and p.quote == "Most cases are caused by two copies"
    assert parse_verdict('{"label": "refuted", "quote": "", "rationale": "1.2%"}').contradicted
    assert parse_verdict("Verdict: contradicted. The source says 1.2%.").contradicted


# ---------------------------------------------------------------------------------------------
# End to end: the fake OpenAI-compatible server, the real openai SDK, the judge


FIXTURES = TEST_FIXTURES / "judges"


@pytest.fixture
def page() -> SourceText:
    return SourceText.from_text((FIXTURES / "haemochromatosis.txt").read_text(), url="https://example.org/hh")


async def _judge_once(page: SourceText, *replies: str):
    with FakeLLMServer("ollama") as server:
        server.script(*(Scripted(r) for r in replies))
        judge = make_judge(f"openai-compatible:{server.base_url}#qwen3:8b", backoff_s=0.01, timeout_s=5)
        try:
            verdict = await judge.verify("28.4% of male C282Y homozygotes develop iron-overload disease.", page)
        finally:
            await judge.aclose()
        return verdict, server.requests


async def test_think_block_and_fence_end_to_end_give_a_verified_quote(page):
    reply = next(r for n, r, _ in SHAPES if n == "qwen3 think block")
    v, requests = await _judge_once(page, reply)
    assert v.label is Label.SUPPORTED and v.quote == Q and v.quote_found is True
    assert "repaired" not in v.flags and len(requests) == 1


async def test_bare_prose_label_end_to_end_is_read_without_a_repair(page):
    v, requests = await _judge_once(page, "The source discusses treatment only. The statement is not supported.")
    assert v.label is Label.NOT_SUPPORTED and len(requests) == 1
    assert "not supported" in v.rationale


async def test_mended_single_quotes_end_to_end(page):
    v, _ = await _judge_once(page, "Sure! {'label': 'NOT SUPPORTED', 'quote': '', 'rationale': 'Different figure',}")
    assert v.label is Label.NOT_SUPPORTED


async def test_contradicted_end_to_end_is_flagged(page):
    v, _ = await _judge_once(page, '{"label": "Contradicted", "quote": "", "rationale": "The source says 1.2%."}')
    assert v.label is Label.NOT_SUPPORTED and CONTRADICTED in v.flags


async def test_replies_without_a_decision_end_to_end_are_judge_error_never_not_supported(page):
    v, requests = await _judge_once(page, "<think>Let me check the figure carefully",
                                    "I would need the full article before deciding.")
    assert v.label is Label.JUDGE_ERROR and len(requests) == 2
    assert "I would need the full article" in (v.raw or "")
