"""SourceCleanup: rewrite, verify again with the run's judge, store, decide, revise the answer."""
from __future__ import annotations

import json

import pytest

from sourcecheckup.cleanup import (
    CleanupError,
    Decision,
    SuggestionKind,
    SuggestionStatus,
    revised_answer,
    run_cleanup,
    set_decision,
    suggestions,
    with_citations,
)
from sourcecheckup.judges import make_judge
from sourcecheckup.models import FetchStatus, Label, Response, Source, Verdict, sha256_bytes
from sourcecheckup.parse import BuiltinParser
from sourcecheckup.store import Store
from tests.support.fake_llm import TEST_KEY, RecordedRequest, Scripted, verdict
from tests.support.paths import FIXTURES

KEY = TEST_KEY   # what the fake server (the `server` fixture) wants
PAGE = (FIXTURES / "judges" / "haemochromatosis.txt").read_text()
URL = "https://example.org/haemochromatosis"
WRONG_DOSE = "Venesection removes about 1,000 ml of blood each session"
WRONG_RATE = "Half of female C282Y homozygotes develop iron-overload disease"
RIGHT = "Drinking less alcohol protects the liver in haemochromatosis"
ANSWER = f"{WRONG_DOSE} [1]. {RIGHT}.[1] {WRONG_RATE} [1]. Please consult your doctor."
REWRITE_DOSE = "Venesection removes about 500 ml of blood each session."
QUOTE_DOSE = "The standard treatment is regular venesection, in which about 500 ml of blood is removed"


def rewrite(statement: str, quote: str = "") -> Scripted:
    return Scripted(json.dumps({"action": "rewrite", "statement": statement, "quote": quote}))


def delete() -> Scripted:
    return Scripted(json.dumps({"action": "delete", "statement": "", "quote": ""}))


def make_run(store: Store, judges: tuple[str, ...] = ("openai:gpt-4o",)) -> str:
    """A judged run: the dose and the rate statements are unsupported, the alcohol one supported."""
    run_id = store.create_run(input="test", config={"consensus": "first"}, judges=list(judges), parser="builtin",
                              app_version="test")
    sid = store.add_source(Source(url=URL, status=FetchStatus.OK, http_status=200, text=PAGE, title="Haemochromatosis",
                                  sha256=sha256_bytes(PAGE.encode()), fetched_at="2026-01-01T00:00:00+00:00"))
    store.link_run_source(run_id, URL, sid)
    store.add_responses(run_id, [Response(id="r1", text=ANSWER, citations=(URL,), markers={"1": 0})])
    row = store.responses(run_id)[0]
    saved = store.save_statements(run_id, row.pk, BuiltinParser().parse_sync(row.response))
    for s in saved:
        if not s.statement.informative:
            continue
        ok = s.statement.text.startswith("Drinking")
        for judge in judges:
            store.save_verdict(run_id, s.pk, URL, sid, Verdict(
                label=Label.SUPPORTED if ok else Label.NOT_SUPPORTED, judge_id=judge,
                rationale="" if ok else "The source gives another figure."))
    store.mark_response_done(row.pk)
    store.set_run_status(run_id, "completed")
    return run_id


def _is_rewrite_request(request: RecordedRequest) -> bool:
    return "Rewrite the statement minimally" in request.user_text


@pytest.fixture
async def judge(server):
    j = make_judge("openai:gpt-4o", api_key=KEY, base_url=server.base_url, backoff_s=0.01)
    yield j
    await j.aclose()


async def _cleanup(store, run_id, server, judge, **kw):
    return await run_cleanup(store, run_id, model_options={"api_key": KEY, "base_url": server.base_url},
                             judges=[judge], concurrency=1, **kw)


async def test_rewrite_is_verified_again_by_the_run_judge_and_stored(tmp_path, server, judge):
    store = Store(tmp_path / "c.db")
    run_id = make_run(store)
    server.script(rewrite(REWRITE_DOSE, QUOTE_DOSE), verdict("supported", QUOTE_DOSE),   # the dose statement
                  delete())                                                              # the rate statement
    rows = await _cleanup(store, run_id, server, judge)
    assert [r.status for r in rows] == [SuggestionStatus.VERIFIED, SuggestionStatus.DELETE]
    dose = rows[0]
    assert dose.kind is SuggestionKind.REWRITE and dose.suggested == REWRITE_DOSE
    assert dose.original.startswith(WRONG_DOSE) and dose.url == URL and dose.quote == QUOTE_DOSE
    assert dose.decision is Decision.PENDING and dose.judge_id == "openai:gpt-4o"
    assert dose.verification["verdicts"][0]["label"] == "supported" and dose.verification["quote_found"] is True
    # the verification call judged the rewrite, not the original
    verify_request = server.requests[1]
    assert not _is_rewrite_request(verify_request) and REWRITE_DOSE in verify_request.user_text
    assert "1,000 ml" in server.requests[0].user_text and "BEGIN SOURCE" in server.requests[0].user_text
    assert rows[1].suggested == "" and rows[1].kind is SuggestionKind.DELETE
    assert len(server.requests) == 3          # a deletion is not verified
    # a second cleanup adds nothing and calls no model
    again = await _cleanup(store, run_id, server, judge)
    assert [r.pk for r in again] == [r.pk for r in rows] and len(server.requests) == 3
    assert store.db.execute("SELECT COUNT(*) FROM suggestions").fetchone()[0] == 2


async def test_rewrite_the_judge_rejects_is_failed_verification(tmp_path, server, judge):
    store = Store(tmp_path / "c.db")
    run_id = make_run(store)
    server.script(rewrite("Venesection removes about 750 ml of blood each session."),
                  verdict("not_supported", "", "The source says about 500 ml."),
                  rewrite("Some female C282Y homozygotes develop iron-overload disease."),
                  Scripted(refusal="I can't judge this."))
    rows = await _cleanup(store, run_id, server, judge)
    assert [r.status for r in rows] == [SuggestionStatus.FAILED_VERIFICATION, SuggestionStatus.VERIFICATION_ERROR]
    assert rows[0].verification["verdicts"][0]["rationale"] == "The source says about 500 ml."
    # an undecided verification is never "verified" and never counted as failed either
    assert rows[1].verification["label"] == "judge_error"


async def test_revised_answer_applies_accepted_suggestions_and_keeps_citations(tmp_path, server, judge):
    store = Store(tmp_path / "c.db")
    run_id = make_run(store)

    def responder(request: RecordedRequest) -> Scripted:
        if _is_rewrite_request(request):
            return rewrite(REWRITE_DOSE, QUOTE_DOSE) if "1,000 ml" in request.user_text else delete()
        return verdict("supported", QUOTE_DOSE)

    server.responder = responder
    rows = await _cleanup(store, run_id, server, judge)
    dose, rate = rows
    # nothing accepted yet: the answer is unchanged
    assert revised_answer(store, run_id, "r1").revised == ANSWER
    only_verified = revised_answer(store, run_id, "r1", accept_verified=True)
    assert only_verified.revised == f"{REWRITE_DOSE[:-1]} [1]. {RIGHT}.[1] {WRONG_RATE} [1]. Please consult your doctor."
    set_decision(store, dose.pk, "accepted", "dr.jones")
    set_decision(store, rate.pk, Decision.ACCEPTED, "dr.jones")
    revised = revised_answer(store, run_id, "r1")
    assert revised.revised == f"{REWRITE_DOSE[:-1]} [1]. {RIGHT}.[1] Please consult your doctor."
    assert [a.kind for a in revised.applied] == [SuggestionKind.REWRITE, SuggestionKind.DELETE]
    assert revised.original == ANSWER and revised.unplaced == []
    stored = {r.pk: r for r in suggestions(store, run_id)}
    assert stored[dose.pk].decided_by == "dr.jones" and stored[dose.pk].decided_at
    set_decision(store, rate.pk, "rejected", "dr.jones")
    assert revised_answer(store, run_id, "r1").revised == only_verified.revised
    with pytest.raises(CleanupError):
        set_decision(store, dose.pk, "maybe", "dr.jones")
    with pytest.raises(CleanupError):
        set_decision(store, 9999, "accepted", "dr.jones")


async def test_cleanup_without_an_llm_says_it_needs_one(tmp_path):
    store = Store(tmp_path / "c.db")
    run_id = make_run(store, judges=("builtin",))
    with pytest.raises(CleanupError, match="cleanup needs an LLM.*--model"):
        await run_cleanup(store, run_id)
    with pytest.raises(CleanupError, match="not one"):
        await run_cleanup(store, run_id, model_spec="builtin")


def test_citations_stay_where_the_answer_put_them():
    assert with_citations("Venesection removes 500 ml.", "Venesection removes 1 l [1].") == "Venesection removes 500 ml [1]."
    assert with_citations("Venesection removes 500 ml.", "Venesection removes 1 l.[2][3]") == "Venesection removes 500 ml.[2][3]"
    assert with_citations("Iron builds up.", "Iron builds up fast, see https://nhs.uk/x.") == \
        "Iron builds up https://nhs.uk/x."
    assert with_citations("Iron builds up.", "Iron builds up fast.") == "Iron builds up."
