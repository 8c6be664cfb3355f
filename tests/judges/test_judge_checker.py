"""The checker protocol (``checker:BASE_URL#MODEL``, MiniCheck's Yes/No format) end to end: the real
openai SDK through ``llm/`` against the fake OpenAI-compatible server, with and without logprobs."""
from __future__ import annotations

import math

import httpx
import openai
import pytest

from sourcecheckup.evidence import SourceText, source_sentences
from sourcecheckup.judges import make_judge
from sourcecheckup.judges.base import validate_judge_spec
from sourcecheckup.judges.checker import SYSTEM_PROMPT, ChunkError, support_probability
from sourcecheckup.models import Label
from tests.support.fake_llama_server import FakeLlamaServer
from tests.support.fake_llm import FakeLLMServer, RecordedRequest, Scripted, bad_request
from tests.support.paths import FIXTURES as TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "judges"
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


async def test_a_page_that_fits_the_context_is_read_whole_in_the_trained_format():
    with FakeLLMServer("ollama", responder=minicheck(True)) as server:
        verdict, judge_id = await judge_with(server, long_source())
    assert len(server.requests) == 1                    # 1,600 words fit the assumed 8,192-token context
    request = server.requests[0]
    assert [m["role"] for m in request.messages] == ["system", "user"]   # MiniCheck's trained format
    assert request.messages[0]["content"] == SYSTEM_PROMPT and 'either "Yes" or "No"' in SYSTEM_PROMPT
    assert request.user_text == f"Document: {long_source()}\nClaim: {CLAIM}"
    assert request.body["logprobs"] is True and request.body["top_logprobs"] == 5
    assert request.body["max_tokens"] == 1 and request.body["temperature"] == 0
    assert judge_id == f"checker:{server.base_url}#bespoke-minicheck" == verdict.judge_id
    assert verdict.label is Label.SUPPORTED
    assert verdict.score == pytest.approx(0.93)          # the authors' P(support): " Yes" is not "yes"
    assert "read whole" in verdict.rationale and "did not report" in verdict.rationale
    assert verdict.quote == KEY_SENTENCE and verdict.quote_found is True
    assert verdict.prompt_version == "minicheck-v2" and verdict.tokens_in and verdict.tokens_out


async def test_without_logprobs_the_answer_text_decides():
    with FakeLLMServer("ollama", responder=minicheck(False)) as server:
        verdict, _ = await judge_with(server, long_source())
    assert verdict.label is Label.SUPPORTED and verdict.score == 1.0
    assert "no usable logprobs" in verdict.rationale and verdict.quote == KEY_SENTENCE


async def test_no_support_is_not_supported_with_the_authors_probability():
    page = (FIXTURES / "haemochromatosis.txt").read_text().replace("28.4% of male", "many men")
    with FakeLLMServer("ollama", responder=minicheck(True)) as server:
        verdict, _ = await judge_with(server, page)
    assert verdict.label is Label.NOT_SUPPORTED
    assert verdict.score == pytest.approx(0.11) and verdict.quote == ""
    assert "No chunk supports the claim" in verdict.rationale


async def test_a_reply_without_yes_or_no_is_judge_error_never_not_supported():
    with FakeLLMServer("ollama", responder=minicheck(True)) as server:
        verdict, _ = await judge_with(server, "UNREADABLE table of figures.")
    assert verdict.label is Label.JUDGE_ERROR
    assert "no usable Yes/No answer" in verdict.rationale and "I cannot tell" in (verdict.raw or "")


async def test_server_that_rejects_logprobs_is_asked_again_without_them():
    with FakeLLMServer("ollama", responder=minicheck(True)) as server:
        server.script(bad_request("Unrecognized request argument supplied: logprobs"))
        verdict, _ = await judge_with(server, KEY_SENTENCE)
    assert [("logprobs" in r.body) for r in server.requests] == [True, False]
    assert verdict.label is Label.SUPPORTED and verdict.score == 1.0


def test_logprobs_count_only_when_the_model_answered_yes_or_no():
    # the authors' sum: every top token whose text is "yes" in any case, and nothing else
    p, from_logprobs = support_probability("Yes", [("Yes", math.log(0.6)), ("YES", math.log(0.1)),
                                                   (" Yes", math.log(0.05)), ("No", math.log(0.2))], "Yes")
    assert from_logprobs and p == pytest.approx(0.7)
    # " The The The…" with Yes/No at 4.5 % among the top 5: garbage, not a 2.5 % "no"
    garbage = [(" The", math.log(0.8)), (" the", math.log(0.06)), (",", math.log(0.035)),
               ("Yes", math.log(0.025)), ("No", math.log(0.02))]
    with pytest.raises(ChunkError):
        support_probability(" The The The", garbage, " The")
    # a sampled non-answer token still counts when Yes and No hold most of the probability
    p, from_logprobs = support_probability("<", [("<", math.log(0.3)), ("yes", math.log(0.5)),
                                                 ("No", math.log(0.2))], "<")
    assert from_logprobs and p == pytest.approx(0.5)
    assert support_probability("yes.", None) == (1.0, False)
    assert support_probability("**No**", None) == (0.0, False)
    assert support_probability("<think>hmm</think>\nYes", None) == (1.0, False)


async def test_a_garbage_model_gives_judge_errors_never_verdicts():
    pairs = [(CLAIM, (FIXTURES / "haemochromatosis.txt").read_text()), (CLAIM, long_source()),
             ("Iron overload damages the liver.", KEY_SENTENCE)]
    with FakeLlamaServer(model="garbage") as server:
        judge = make_judge(f"checker:{server.base_url}#bespoke-minicheck", backoff_s=0.01)
        await judge.load()
        verdicts = await judge.verify_many([(c, SourceText.from_text(s)) for c, s in pairs])
        await judge.aclose()
    assert [v.label for v in verdicts] == [Label.JUDGE_ERROR] * 3
    assert all("neither Yes nor No" in v.rationale for v in verdicts)


async def test_a_chunk_the_server_cut_silently_decides_nothing():
    with FakeLlamaServer(model="checker", silent_truncation=200) as server:
        judge = make_judge(f"checker:{server.base_url}#bespoke-minicheck", backoff_s=0.01)
        verdict = await judge.verify(CLAIM, SourceText.from_text(long_source()))
        await judge.aclose()
    assert verdict.label is Label.JUDGE_ERROR and "cut the chunk" in verdict.rationale


# -- parity with the authors' procedure ----------------------------------------------------------


def authors_score(base_url: str, document: str, claim: str, max_model_len: int) -> float:
    """MiniCheck's LLMCheck.score for one (document, claim), written from its description (minicheck/
    inference.py): chunk_size = max_model_len - 300; the document split into sentences line by line
    with "\n" between lines; sentences gathered while the running count of their tokens (the model's
    tokenizer, no special tokens) stays within chunk_size; chunks joined with spaces, " \n " mended to
    "\n", stripped, empty ones dropped; each (chunk, claim sentence) asked with the system prompt and
    "Document: ...\nClaim: ...", temperature 0, one token, 5 logprobs; P = the sum of exp(logprob) of
    the top tokens whose text lower-cased is "yes"; score = min over claim sentences of the max over
    chunks. Sentences are split by the project's splitter (the authors use NLTK's punkt)."""
    root = base_url.removesuffix("/v1")
    with httpx.Client(timeout=10) as http:
        def n_tokens(text: str) -> int:
            return len(http.post(f"{root}/tokenize", json={"content": text, "add_special": False}).json()["tokens"])

        sentences: list[str] = []
        for block in document.split("\n"):
            sentences += source_sentences(block)
            sentences.append("\n")
        sentences = sentences[:-1] or [""]
        chunk_size = max_model_len - 300
        raw_chunks, current, count = [], [], 0
        for sentence in sentences:
            n = n_tokens(sentence)
            if count + n > chunk_size:
                raw_chunks.append(" ".join(current))
                current, count = [sentence], n
            else:
                current.append(sentence)
                count += n
        if current:
            raw_chunks.append(" ".join(current))
        chunks = [c.replace(" \n ", "\n").strip() for c in raw_chunks]
        chunks = [c for c in chunks if c] or [""]
        client = openai.OpenAI(base_url=base_url, api_key="unused", http_client=http)
        matrix = []
        for chunk in chunks:
            row = []
            for sentence in source_sentences(claim):
                reply = client.chat.completions.create(
                    model="bespoke-minicheck", temperature=0, max_tokens=1, logprobs=True, top_logprobs=5,
                    messages=[{"role": "system", "content": SYSTEM_PROMPT},
                              {"role": "user", "content": f"Document: {chunk}\nClaim: {sentence}"}])
                top = reply.choices[0].logprobs.content[0].top_logprobs
                row.append(sum(math.exp(t.logprob) for t in top if t.token.lower() == "yes"))
            matrix.append(row)
    return min(max(row[s] for row in matrix) for s in range(len(matrix[0])))


PARITY_CLAIMS = [CLAIM, "Iron overload disease develops in C282Y homozygotes. It is rare in women.",
                 "Paragraph 12 notes that the bone of patients in clinic group 12 was examined.",
                 "The moon is made of cheese."]


@pytest.mark.parametrize("n_ctx", [32768, 700], ids=["fits-one-chunk", "several-chunks"])
async def test_checker_scores_equal_the_authors_procedure(n_ctx):
    page = (FIXTURES / "haemochromatosis.txt").read_text() + "\n\n" + long_source()
    with FakeLlamaServer(model="checker", n_ctx=n_ctx, n_slots=1) as server:
        judge = make_judge(f"checker:{server.base_url}#bespoke-minicheck", backoff_s=0.01)
        await judge.load()
        source = SourceText.from_text(page)
        chunks = await judge.chunks(page)
        assert (len(chunks.texts) == 1) if n_ctx == 32768 else (len(chunks.texts) >= 4)
        for claim in PARITY_CLAIMS:
            verdict = await judge.verify(claim, source)
            expected = authors_score(server.base_url, page, claim, n_ctx)
            assert verdict.score == pytest.approx(expected, abs=1e-4), claim
            assert (verdict.label is Label.SUPPORTED) == (expected > 0.5)
            assert f"{len(chunks.texts)} chunks" in verdict.rationale or "read whole" in verdict.rationale
        await judge.aclose()
        assert server.context_errors == 0


def test_checker_spec_is_validated_with_a_message_that_says_how_to_write_it():
    assert validate_judge_spec("checker:http://127.0.0.1:11434/v1#bespoke-minicheck") is None
    assert "checker:http://127.0.0.1:11434/v1#bespoke-minicheck" in validate_judge_spec("checker:bespoke-minicheck")
    assert "http://" in (validate_judge_spec("checker:localhost:11434#bespoke-minicheck") or "")
