"""The checker protocol (``checker:BASE_URL#MODEL``, MiniCheck's Yes/No format) end to end: the real
openai SDK through ``llm/`` against the fake OpenAI-compatible server, with and without logprobs."""
from __future__ import annotations

import math
from pathlib import Path

import pytest

from sourcecheckup.evidence import SourceText
from sourcecheckup.judges import make_judge
from sourcecheckup.judges.base import validate_judge_spec
from sourcecheckup.judges.checker import SYSTEM_PROMPT, chunk_sentences, yes_probability
from sourcecheckup.models import Label
from tests.support.fake_llm import FakeLLMServer, RecordedRequest, Scripted, bad_request

FIXTURES = Path(__file__).parent / "fixtures" / "judges"
CLAIM = "28.4% of male C282Y homozygotes develop iron-overload disease."
KEY_SENTENCE = "In a large cohort study, 28.4% of male and 1.2% of female C282Y homozygotes developed iron-overload disease."
TOPICS = ["liver", "heart", "pancreas", "joints", "skin", "thyroid", "pituitary", "bone", "kidney", "blood"]


def long_source() -> str:
    """About 1,600 words of distinct sentences with the one supporting sentence in the middle."""
    sentences = [f"Paragraph {i} notes that the {TOPICS[i % 10]} of patients in clinic group {i} was examined "
                 f"with routine imaging and ordinary laboratory tests during visit number {i}." for i in range(80)]
    sentences.insert(40, KEY_SENTENCE)
    return " ".join(sentences)


def minicheck(with_logprobs: bool):
    """A fake Bespoke-MiniCheck: Yes when the document holds the cohort figure, No otherwise."""

    def respond(request: RecordedRequest) -> Scripted:
        document = request.user_text.split("\nClaim: ", 1)[0]
        if "28.4% of male" in document:
            return Scripted("Yes", top_logprobs=[("Yes", math.log(0.93)), ("No", math.log(0.06)),
                                                 (" Yes", math.log(0.005))] if with_logprobs else None)
        if "UNREADABLE" in document:
            return Scripted("I cannot tell from this document.")
        return Scripted("No", top_logprobs=[("No", math.log(0.88)), ("Yes", math.log(0.11))]
                        if with_logprobs else None)

    return respond


async def judge_with(server: FakeLLMServer, source: str, claim: str = CLAIM, **options):
    judge = make_judge(f"checker:{server.base_url}#bespoke-minicheck", backoff_s=0.01, timeout_s=5, **options)
    try:
        return await judge.verify(claim, SourceText.from_text(source, url="https://example.org/long")), judge.id
    finally:
        await judge.aclose()


def test_source_is_cut_into_whole_sentences_of_about_400_words():
    chunks = chunk_sentences(long_source())
    assert len(chunks) >= 4
    assert all(len(" ".join(c).split()) <= 400 for c in chunks)
    assert [s for c in chunks for s in c] == [s for c in chunk_sentences(long_source(), 10_000) for s in c]
    assert sum(KEY_SENTENCE in c for c in chunks) == 1


async def test_long_source_with_logprobs_only_one_chunk_supports():
    with FakeLLMServer("ollama", responder=minicheck(True)) as server:
        verdict, judge_id = await judge_with(server, long_source())
    chunks = chunk_sentences(long_source())
    assert len(server.requests) == len(chunks) >= 4             # every chunk is checked
    for request in server.requests:
        assert [m["role"] for m in request.messages] == ["system", "user"]   # MiniCheck's trained format
        assert request.messages[0]["content"] == SYSTEM_PROMPT and 'either "Yes" or "No"' in SYSTEM_PROMPT
        assert request.user_text.startswith("Document: ") and request.user_text.endswith(f"\nClaim: {CLAIM}")
        assert request.body["logprobs"] is True and request.body["top_logprobs"] == 5
        assert request.body["model"] == "bespoke-minicheck" and request.body["temperature"] == 0
    documents = {r.user_text.split("\nClaim: ")[0].removeprefix("Document: ") for r in server.requests}
    assert documents == {" ".join(c) for c in chunks}            # chunks of whole sentences
    assert judge_id == f"checker:{server.base_url}#bespoke-minicheck" == verdict.judge_id
    assert verdict.label is Label.SUPPORTED
    assert verdict.score == pytest.approx(0.93 / (0.93 + 0.06), abs=0.01)   # Yes/No mass, " Yes" counted as Yes
    assert verdict.quote == KEY_SENTENCE and verdict.quote_found is True
    assert verdict.prompt_version == "minicheck-v1" and verdict.tokens_in and verdict.tokens_out


async def test_without_logprobs_the_answer_text_decides():
    with FakeLLMServer("ollama", responder=minicheck(False)) as server:
        verdict, _ = await judge_with(server, long_source())
    assert verdict.label is Label.SUPPORTED and verdict.score == 1.0
    assert "no logprobs" in verdict.rationale and verdict.quote == KEY_SENTENCE


async def test_no_chunk_supports_is_not_supported_with_the_highest_probability():
    page = (FIXTURES / "haemochromatosis.txt").read_text().replace("28.4% of male", "many men")
    with FakeLLMServer("ollama", responder=minicheck(True)) as server:
        verdict, _ = await judge_with(server, page + " " + long_source().replace(KEY_SENTENCE, ""))
    assert verdict.label is Label.NOT_SUPPORTED
    assert verdict.score == pytest.approx(0.11 / 0.99, abs=0.01) and verdict.quote == ""
    assert "No chunk of the source supports the claim" in verdict.rationale


async def test_a_chunk_without_yes_or_no_is_judge_error_never_not_supported():
    source = long_source().replace(KEY_SENTENCE, "UNREADABLE table of figures.")
    with FakeLLMServer("ollama", responder=minicheck(True)) as server:
        verdict, _ = await judge_with(server, source)
    assert verdict.label is Label.JUDGE_ERROR
    assert "no Yes/No answer" in verdict.rationale and "I cannot tell" in (verdict.raw or "")


async def test_a_broken_chunk_does_not_hide_support_found_in_another():
    source = long_source().replace("Paragraph 3 notes", "UNREADABLE. Paragraph 3 notes")
    with FakeLLMServer("ollama", responder=minicheck(True)) as server:
        verdict, _ = await judge_with(server, source)
    assert verdict.label is Label.SUPPORTED and verdict.quote == KEY_SENTENCE


async def test_server_that_rejects_logprobs_is_asked_again_without_them():
    with FakeLLMServer("ollama", responder=minicheck(True)) as server:
        server.script(bad_request("Unrecognized request argument supplied: logprobs"))
        verdict, _ = await judge_with(server, KEY_SENTENCE)
    assert [("logprobs" in r.body) for r in server.requests] == [True, False]
    assert verdict.label is Label.SUPPORTED and verdict.score == 1.0


def test_yes_probability_reads_spellings_and_refuses_no_answer():
    assert yes_probability("yes.", None) == (1.0, False)
    assert yes_probability("**No**", None) == (0.0, False)
    assert yes_probability("<think>hmm</think>\nYes", None) == (1.0, False)
    p, from_logprobs = yes_probability("Yes", [("yes", math.log(0.3)), ("NO", math.log(0.1)), ("Maybe", 0.0)])
    assert from_logprobs and p == pytest.approx(0.75)
    with pytest.raises(ValueError):
        yes_probability("The document mentions iron.", [("The", 0.0)])


def test_checker_spec_is_validated_with_a_message_that_says_how_to_write_it():
    assert validate_judge_spec("checker:http://127.0.0.1:11434/v1#bespoke-minicheck") is None
    assert "checker:http://127.0.0.1:11434/v1#bespoke-minicheck" in validate_judge_spec("checker:bespoke-minicheck")
    assert "http://" in (validate_judge_spec("checker:localhost:11434#bespoke-minicheck") or "")
