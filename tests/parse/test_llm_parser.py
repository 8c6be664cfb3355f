"""The LLM statement parser, end to end: the real openai SDK against the local fake server."""
from __future__ import annotations

import json

from sourcecheckup.models import FetchStatus, Response, Source, StatementCategory
from sourcecheckup.parse import BuiltinParser, make_parser
from sourcecheckup.parse.llm import LLMParser, ParsedStatement, align
from sourcecheckup.pipeline import Audit, RunConfig
from sourcecheckup.store import Store
from tests.support.fake_judge import KeywordJudge
from tests.support.fake_llm import TEST_KEY, FakeLLMServer, Scripted, malformed

KEY = TEST_KEY   # what the fake server (the `server` fixture) wants
HFE_URL = "https://example.org/hfe"
VENESECTION_URL = "https://example.org/venesection"
ANSWER = ("Great question! 28.4% of male and 1.2% of female HFE C282Y homozygotes develop iron-overload "
          "disease [1]. It is treated with regular venesection [2]. Please consult your doctor.")


def _response() -> Response:
    return Response(id="hfe-1", text=ANSWER, citations=(HFE_URL, VENESECTION_URL), markers={"1": 0, "2": 1},
                    question="How common is iron overload in HFE C282Y homozygotes?")


def _statements(*items: tuple[str, ...]) -> Scripted:
    return Scripted(json.dumps({"statements": [
        {"text": i[0], "category": i[1], "sentence": i[2] if len(i) > 2 else i[0]} for i in items]}))


HFE_SENTENCE = "28.4% of male and 1.2% of female HFE C282Y homozygotes develop iron-overload disease."
GOOD_REPLY = _statements(
    ("Great question!", "acknowledgement"),
    ("28.4% of male HFE C282Y homozygotes develop iron-overload disease.", "informative", HFE_SENTENCE),
    ("1.2% of female HFE C282Y homozygotes develop iron-overload disease.", "informative", HFE_SENTENCE),
    ("Iron overload in HFE C282Y homozygotes is treated with regular venesection.", "informative",
     "It is treated with regular venesection."),
    ("Please consult your doctor.", "disclaimer"),
)


async def test_llm_statements_keep_their_sentence_span_and_cited_sources(server):
    server.script(GOOD_REPLY)
    parser = make_parser("openai:gpt-4o", api_key=KEY, base_url=server.base_url, backoff_s=0.01)
    try:
        statements = await parser.parse(_response())
    finally:
        await parser.aclose()
    assert isinstance(parser, LLMParser) and parser.take_warnings(_response()) == []
    texts = [s.text for s in statements]
    assert texts[1:3] == ["28.4% of male HFE C282Y homozygotes develop iron-overload disease.",
                          "1.2% of female HFE C282Y homozygotes develop iron-overload disease."]
    male, female, venesection = statements[1], statements[2], statements[3]
    # both facts of the split sentence point at that sentence and at its marker [1]
    assert male.cited == female.cited == (0,)
    assert ANSWER[male.start:male.end].startswith("28.4% of male") and ANSWER[male.start:male.end].endswith("[1].")
    assert (female.start, female.end) == (male.start, male.end)
    # the decontextualised "It is treated..." keeps its own sentence and its own source
    assert venesection.cited == (1,) and ANSWER[venesection.start:venesection.end].startswith("It is treated")
    assert [s.category for s in statements] == [
        StatementCategory.ACKNOWLEDGEMENT, StatementCategory.INFORMATIVE, StatementCategory.INFORMATIVE,
        StatementCategory.INFORMATIVE, StatementCategory.DISCLAIMER]
    assert [s.index for s in statements] == list(range(5))
    request = server.requests[0]
    assert request.body["temperature"] == 0
    assert request.body["response_format"]["json_schema"]["name"] == "statements"
    assert "atomic" in request.all_text and "BEGIN ANSWER" in request.user_text
    assert parser.version.startswith("parser-v1@")


def test_invented_statement_is_dropped_and_left_out_sentence_is_kept():
    sentences = BuiltinParser().parse_sync(_response())
    aligned = align([ParsedStatement("Great question!", StatementCategory.ACKNOWLEDGEMENT),
                     ParsedStatement("Ferritin above 1000 ug/L predicts cirrhosis.", StatementCategory.INFORMATIVE),
                     ParsedStatement("Please consult your doctor.", StatementCategory.DISCLAIMER)], sentences)
    texts = [s.text for s in aligned.statements]
    assert "Ferritin above 1000 ug/L predicts cirrhosis." not in texts
    # the model skipped two medical sentences: they stay, as the offline parser split them
    assert any(t.startswith("28.4% of male and 1.2% of female") for t in texts)
    assert any(t.startswith("It is treated with regular venesection") for t in texts)
    assert sum("left out" in n for n in aligned.notes) == 2 and sum("dropped" in n for n in aligned.notes) == 1


class StaticFetcher:
    """Every URL reads as the same page: the parser is under test here, not fetching."""

    async def fetch(self, url: str) -> Source:
        return Source(url=url, status=FetchStatus.OK, http_status=200, text="Venesection treats iron overload.",
                      fetched_at="2026-01-01T00:00:00+00:00")

    async def aclose(self) -> None:
        return None


async def test_malformed_llm_reply_falls_back_to_offline_parser_and_says_so(server, tmp_path):
    server.script(malformed(), malformed('{"statements": [{"text": 3}]}'))
    store = Store(tmp_path / "p.db")
    config = RunConfig(judges=["keyword:0"], parser="openai:gpt-4o",
                       judge_options={"api_key": KEY, "base_url": server.base_url, "backoff_s": 0.01})
    run_id = await Audit(store, config, judges=[KeywordJudge()], fetcher=StaticFetcher()).start(
        [_response()], input_label="test")
    data = store.load_run(run_id)
    assert data.run.status == "completed"
    stored = [s.statement for s in data.statements[data.responses[0].pk]]
    assert stored == BuiltinParser().parse_sync(_response())
    warnings = [r["message"] for r in store.run_log(run_id) if r["level"] == "warning"]
    assert len(warnings) == 1 and "used the offline parser" in warnings[0] and "hfe-1" in warnings[0]
    assert "unparsable reply after one repair attempt" in warnings[0]
    assert len(server.requests) == 2  # the reply and one repair, then the fallback
    assert KEY not in json.dumps(store.run_log(run_id))


async def test_parser_failure_from_refusal_falls_back(server):
    server.script(Scripted(refusal="I can't help with that."))
    parser = make_parser("openai:gpt-4o", api_key=KEY, base_url=server.base_url)
    try:
        response = _response()
        statements = await parser.parse(response)
        assert statements == BuiltinParser().parse_sync(response)
        assert "refused" in parser.take_warnings(response)[0]
    finally:
        await parser.aclose()


def test_without_a_sentence_copy_the_statement_words_place_it():
    response = Response(id="m", text="Metformin is the first-line drug for type 2 diabetes [1]. "
                                     "It lowers HbA1c by about 1% [2].",
                        citations=("https://a.example/1", "https://b.example/2"))
    aligned = align([ParsedStatement("Metformin is the first-line drug for type 2 diabetes.",
                                     StatementCategory.INFORMATIVE),
                     ParsedStatement("Metformin lowers HbA1c by about 1%.", StatementCategory.INFORMATIVE)],
                    BuiltinParser().parse_sync(response))
    assert [s.cited for s in aligned.statements] == [(0,), (1,)] and aligned.notes == []


async def test_anthropic_parser_reads_the_forced_tool_call():
    with FakeLLMServer("anthropic", api_key=KEY) as srv:
        srv.script(GOOD_REPLY)
        parser = make_parser("anthropic:claude-haiku-4-5", api_key=KEY, base_url=srv.base_url)
        try:
            statements = await parser.parse(_response())
        finally:
            await parser.aclose()
        assert len(statements) == 5 and statements[3].cited == (1,)
        assert srv.requests[0].body["tool_choice"] == {"type": "tool", "name": "record_statements"}
