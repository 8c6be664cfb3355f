"""The model-benchmark workflow end to end: real SDKs against local fake LLM servers, pages of
the local fixture site as cited sources, a real SQLite file, the real audit pipeline."""
from __future__ import annotations

import asyncio
import dataclasses
import json
import re
from pathlib import Path

import pytest

from sourcecheckup.benchmark import (
    AccuracyLabel,
    AnswerStatus,
    Benchmark,
    BenchSettings,
    BenchStage,
    BenchStore,
    Prompts,
    answer_question,
    benchmark_results,
    read_bench_input,
    read_questions,
    write_questions,
)
from sourcecheckup.benchmark.records import Question
from sourcecheckup.fetching import FetchOptions
from sourcecheckup.llm import make_client
from sourcecheckup.llm.client import CallOptions
from sourcecheckup.metrics import assess_run
from sourcecheckup.models import StatementStatus
from sourcecheckup.store import Store
from tests.support.bench_llm import TOPICS, responder
from tests.support.fake_judge import KeywordJudge
from tests.support.fake_llm import FakeLLMServer, Scripted
from tests.support.paths import FIXTURES

PAGES = list(TOPICS)
KEY = "sk-ant-test-2b7e9f"


@pytest.fixture
def docs(tmp_path, site) -> Path:
    path = tmp_path / "documents.txt"
    path.write_text("# reference pages\n" + "\n".join(f"{site}/article/{p}" for p in PAGES) + "\n")
    return path


@pytest.fixture
def servers(site):
    behaviours = {"good": "good", "wrong": "unsupported", "flaky": "flaky", "prose": "text",
                  "nocite": "nocite", "silent": "empty", "alt": "alternate"}
    with FakeLLMServer("openai", responder=responder(site, behaviours)) as oa, \
            FakeLLMServer("anthropic", responder=responder(site, behaviours), api_key=KEY) as an:
        yield oa, an


def spec(server: FakeLLMServer, name: str) -> str:
    return f"openai-compatible:{server.base_url}#{name}"


def models_for(specs: list[str], anthropic: FakeLLMServer | None = None) -> dict:
    out = {s: make_client(s, backoff_s=0.01, timeout_s=5) for s in specs}
    if anthropic is not None:
        out["anthropic:claude-test"] = make_client("anthropic:claude-test", base_url=anthropic.base_url,
                                                  api_key=KEY, backoff_s=0.01, timeout_s=5)
    return out


def settings(models: dict, **kw) -> BenchSettings:
    kw.setdefault("judges", ["keyword:0"])
    return BenchSettings(models=list(models), question_model=list(models)[0],
                         fetch=FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=10), **kw)


def answer_requests(server: FakeLLMServer) -> int:
    return sum(1 for r in server.requests if "You are a medical expert answering" in r.all_text)


async def test_every_model_is_audited_in_one_run_with_the_studys_answer_quirks(tmp_path, docs, servers, site):
    oa, an = servers
    names = ["good", "wrong", "flaky", "prose", "nocite", "silent"]
    models = models_for([spec(oa, n) for n in names], an)
    store = Store(tmp_path / "bench.db")
    bench = Benchmark(store, settings(models, variants=["demographic"]), models=models, judges=[KeywordJudge()])
    bench_id = await bench.start(read_bench_input(docs))

    bs = BenchStore(store)
    row = bs.get(bench_id)
    assert row.status == "completed" and row.run_id
    assert [d.valid for d in bs.documents(bench_id)] == [True, True, True]
    questions = bs.questions(bench_id)
    assert len(questions) == 6                                  # 3 originals + 3 demographic variants
    assert {q.variant for q in questions} == {"original", "demographic"}
    assert all(re.fullmatch(r"questioner-v1@[0-9a-f]{8}", q.prompt_version) for q in questions
               if q.variant == "original")
    assert all(re.match(r"I am a \d+-year-old ", q.question) for q in questions if q.variant == "demographic")

    answers = {(a.model.rsplit("#", 1)[-1].split(":")[-1], a.qid): a for a in bs.answers(bench_id)}
    status = {m: {a.status for (n, _), a in answers.items() if n == m} for m in names + ["claude-test"]}
    assert status["good"] == {AnswerStatus.OK}
    assert status["flaky"] == {AnswerStatus.RECOVERED}          # malformed, retried once, recovered
    assert status["prose"] == {AnswerStatus.URLS_FROM_TEXT}     # never JSON: URLs taken from the text
    assert status["nocite"] == {AnswerStatus.OK}
    assert status["silent"] == {AnswerStatus.EMPTY}             # empty twice: not audited
    assert status["claude-test"] == {AnswerStatus.OK}
    flaky = next(a for (n, _), a in answers.items() if n == "flaky")
    assert flaky.attempts == 2 and "unterminated" not in (flaky.raw or "x") and flaky.raw
    good = next(a for (n, _), a in answers.items() if n == "good")
    assert good.tokens_in > 0 and good.tokens_out > 0 and good.model_version == "good"
    assert re.fullmatch(r"answerer-v1@[0-9a-f]{8}", good.prompt_version)
    prose = next(a for (n, _), a in answers.items() if n == "prose")
    assert prose.citations and prose.citations[0].startswith(site)

    data = store.load_run(row.run_id)
    assert len(data.responses) == 6 * 6                         # 7 models x 6 questions, minus the silent one
    assert {r.response.model for r in data.responses} == set(models) - {spec(oa, "silent")}
    assert all(r.response.extra["question_source"] == "generated" for r in data.responses)
    assert {r.response.extra["variant"] for r in data.responses} == {"original", "demographic"}
    assert len(data.skipped) == 6 and all("gave no answer" in s.problem for s in data.skipped)

    results = benchmark_results(store, bench_id)
    support = {m.rsplit("#", 1)[-1].split(":")[-1]: r.metrics.statement_support.value
               for m, r in results.models.items() if r.metrics}
    assert support == {"good": 1.0, "wrong": 0.0, "flaky": 1.0, "prose": 1.0, "nocite": 0.0, "claude-test": 1.0}
    nocite = [a for a in assess_run(data) if a.model == spec(oa, "nocite")]
    assert all(s.status is StatementStatus.NO_READABLE_SOURCE for a in nocite for s in a.statements)
    assert results.models[spec(oa, "silent")].metrics is None
    assert results.models[spec(oa, "silent")].answer_status == {"empty": 6}


async def test_anthropic_answers_use_a_forced_tool_with_the_chosen_temperature(servers):
    _, an = servers
    model = make_client("anthropic:claude-test", base_url=an.base_url, api_key=KEY)
    q = Question("q1", TOPICS["hypertension"][0], TOPICS["hypertension"][1])
    try:
        answer = await answer_question(model, Prompts.load(), q, draw=0,
                                       options=CallOptions(temperature=0.7, max_tokens=300))
    finally:
        await model.aclose()
    body = an.requests[-1].body
    assert body["temperature"] == 0.7 and body["max_tokens"] == 300
    assert body["tool_choice"] == {"type": "tool", "name": "record_answer"}
    assert answer.status is AnswerStatus.OK and answer.citations and KEY not in (answer.raw or "")


async def test_interrupted_benchmark_resumes_without_asking_any_model_twice(tmp_path, docs, servers):
    oa, _ = servers
    models = models_for([spec(oa, "good"), spec(oa, "wrong")])
    store = Store(tmp_path / "bench.db")
    cancel = asyncio.Event()

    def stop_after_two(ev):
        if ev.stage is BenchStage.ANSWERS and ev.done >= 2:
            cancel.set()

    first = Benchmark(store, settings(models, concurrency=1), models=models, judges=[KeywordJudge()],
                      progress=stop_after_two, cancel=cancel)
    bench_id = await first.start(read_bench_input(docs))
    bs = BenchStore(store)
    assert bs.get(bench_id).status == "cancelled"
    made = len(bs.answers(bench_id))
    assert 2 <= made < 6
    # answers are audited as they arrive: the run exists and holds the answers made so far
    run_id = bs.get(bench_id).run_id
    assert run_id is not None and 1 <= len(store.responses(run_id)) <= made
    asked_before = answer_requests(oa)

    await Benchmark(store, models=models, judges=[KeywordJudge()]).resume(bench_id)
    assert bs.get(bench_id).status == "completed"
    assert answer_requests(oa) - asked_before == 6 - made       # only the missing answers
    # each document's questions were asked for once, in the first run or (cancelled before it) on resume
    assert sum(1 for r in oa.requests if "You write examination questions" in r.all_text) == len(PAGES)
    assert bs.get(bench_id).run_id == run_id
    data = store.load_run(run_id)
    assert len(data.responses) == 6 and len({r.response.id for r in data.responses}) == 6

    # a third pass over a finished benchmark asks nothing and judges nothing again
    verdicts = store.db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0]
    asked = len(oa.requests)
    await Benchmark(store, models=models, judges=[KeywordJudge()]).resume(bench_id)
    assert len(oa.requests) == asked
    assert store.db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0] == verdicts


async def test_audit_interrupted_midway_resumes_the_same_run(tmp_path, docs, servers):
    oa, _ = servers
    models = models_for([spec(oa, "good"), spec(oa, "wrong")])
    store = Store(tmp_path / "bench.db")
    cancel = asyncio.Event()

    def stop_in_audit(ev):
        if ev.stage is BenchStage.AUDIT and ev.audit is not None and ev.audit.pairs_done >= 2:
            cancel.set()

    bench_id = await Benchmark(store, settings(models, judge_concurrency=1), models=models,
                               judges=[KeywordJudge(0.01)], progress=stop_in_audit, cancel=cancel
                               ).start(read_bench_input(docs))
    bs = BenchStore(store)
    run_id = bs.get(bench_id).run_id
    assert bs.get(bench_id).status == "cancelled" and run_id
    await Benchmark(store, models=models, judges=[KeywordJudge(0.01)]).resume(bench_id)
    assert bs.get(bench_id).run_id == run_id and bs.get(bench_id).status == "completed"
    rows = store.db.execute("SELECT statement_pk, url, COUNT(*) FROM verdicts WHERE run_id = ? "
                            "GROUP BY statement_pk, url", [run_id]).fetchall()
    assert rows and all(n == 1 for _, _, n in rows)
    assert len(store.load_run(run_id).responses) == 6


async def test_answers_are_audited_while_other_answers_are_still_being_written(tmp_path, docs, site):
    order: list[str] = []

    def track(ev):
        if ev.stage is BenchStage.ANSWERS and ev.total:
            order.append(f"answered {ev.done}/{ev.total}")
        elif ev.stage is BenchStage.AUDIT and ev.audit is not None and ev.audit.kind.value == "judged":
            order.append("judged")
        elif ev.stage is BenchStage.QUESTIONS and ev.total:
            order.append(f"question {ev.done}/{ev.total}")

    inner = responder(site, {"good": "good"})

    def slow_last_question(request):
        # the question about one page takes a second to write: the others are answered meanwhile
        reply = inner(request)
        if "You write examination questions" in request.all_text and "C282Y" in request.all_text:
            return dataclasses.replace(reply, delay_s=1.0)
        return reply

    # one call in flight per model and 50 ms a reply: three answers take a while to arrive
    with FakeLLMServer("openai", latency_s=0.05, responder=slow_last_question) as oa:
        models = models_for([spec(oa, "good")])
        store = Store(tmp_path / "overlap.db")
        bench_id = await Benchmark(store, settings(models, concurrency=1), models=models,
                                   judges=[KeywordJudge()], progress=track).start(read_bench_input(docs))
    assert BenchStore(store).get(bench_id).status == "completed"
    last_answer = max(i for i, e in enumerate(order) if e.startswith("answered"))
    assert "judged" in order[:last_answer], order     # judging began before the last answer came
    last_question = max(i for i, e in enumerate(order) if e.startswith("question"))
    assert any(e.startswith("answered") for e in order[:last_question]), order   # and answering before
    # the last question was written
    data = store.load_run(BenchStore(store).get(bench_id).run_id)
    assert len(data.responses) == 3 and all(r.done for r in store.responses(data.run.id))


async def test_best_of_k_keeps_the_best_supported_draw_and_reports_the_gain(tmp_path, docs, servers):
    oa, _ = servers
    models = models_for([spec(oa, "alt")])
    store = Store(tmp_path / "bench.db")
    # seed 10: draw 0 is sent seed 10 (even: unsupported), draw 1 seed 11 (odd: supported)
    bench_id = await Benchmark(store, settings(models, best_of=2, seed=10, temperature=0.8), models=models,
                               judges=[KeywordJudge()]).start(read_bench_input(docs))
    seeds = sorted(r.body.get("seed") for r in oa.requests if "You are a medical expert answering" in r.all_text)
    assert seeds == [10, 10, 10, 11, 11, 11]
    bs = BenchStore(store)
    selected = {k: v[1] for k, v in bs.answer_flags(bench_id).items()}
    assert {k[2] for k, sel in selected.items() if sel} == {1} and sum(selected.values()) == 3
    result = benchmark_results(store, bench_id).models[spec(oa, "alt")]
    assert result.best_of is not None and result.best_of.k == 2 and result.best_of.questions == 3
    assert result.best_of.first_draw_support == 0.0 and result.best_of.selected_support == 1.0
    assert result.best_of.gain == 1.0
    assert result.metrics.statement_support.value == 0.0      # the table reports a single draw


async def test_accuracy_is_graded_against_the_documents_answer_and_kept_apart(tmp_path, docs, servers):
    oa, _ = servers
    models = models_for([spec(oa, "good"), spec(oa, "wrong")])
    store = Store(tmp_path / "bench.db")
    bench_id = await Benchmark(store, settings(models, accuracy=True), models=models,
                               judges=[KeywordJudge()]).start(read_bench_input(docs))
    bs = BenchStore(store)
    grades = bs.grades(bench_id)
    assert len(grades) == 6 and all(re.fullmatch(r"accuracy-v1@[0-9a-f]{8}", g.prompt_version) for g in grades)
    by_model = {g.model: set() for g in grades}
    for g in grades:
        by_model[g.model].add(g.label)
    assert by_model == {spec(oa, "good"): {AccuracyLabel.EXACT_MATCH}, spec(oa, "wrong"): {AccuracyLabel.MISSING}}
    grader_prompt = next(r.user_text for r in oa.requests if "You grade an answer" in r.all_text)
    assert "Reference answer:" in grader_prompt and any(TOPICS[p][1] in grader_prompt for p in PAGES)
    results = benchmark_results(store, bench_id)
    assert results.models[spec(oa, "good")].accuracy.value == 1.0
    assert results.models[spec(oa, "wrong")].accuracy.value == 0.0
    # accuracy never leaks into citation support: no verdict rows for grades
    assert store.db.execute("SELECT COUNT(*) FROM verdicts WHERE judge_id LIKE 'accuracy%'").fetchone()[0] == 0
    assert json.dumps(results.as_dict())


async def test_reviewed_questions_file_edits_and_drops_before_answering(tmp_path, docs, servers):
    oa, _ = servers
    models = models_for([spec(oa, "good")])
    store = Store(tmp_path / "bench.db")
    first = Benchmark(store, settings(models, variants=["lay"]), models=models, judges=[KeywordJudge()])
    bench_id = await first.start(read_bench_input(docs), stop_after="questions")
    bs = BenchStore(store)
    assert bs.get(bench_id).status == "questions_ready" and answer_requests(oa) == 0
    lay = [q for q in bs.questions(bench_id) if q.variant == "lay"]
    assert len(lay) == 3 and all(q.question.startswith("[lay] ") and q.parent_qid for q in lay)
    assert all(re.fullmatch(r"perturber-v1@[0-9a-f]{8}", q.prompt_version) for q in lay)

    path = tmp_path / "questions.jsonl"
    write_questions(path, bs.questions(bench_id))
    lines = [json.loads(x) for x in path.read_text().splitlines()]
    lines[0]["question"] = "Below which eGFR must metformin never be started in adults?"
    lines[1]["drop"] = True
    del lines[2]
    path.write_text("".join(json.dumps(x) + "\n" for x in lines))
    counts = bs.apply_review(bench_id, read_questions(path))
    assert counts == {"edited": 1, "dropped": 2, "restored": 0, "added": 0}

    await Benchmark(store, models=models, judges=[KeywordJudge()]).resume(bench_id)
    asked = [r.user_text for r in oa.requests if "You are a medical expert answering" in r.all_text]
    assert len(asked) == 4
    assert "Below which eGFR must metformin never be started in adults?" in asked
    edited = next(q for q in bs.questions(bench_id) if q.qid == lines[0]["id"])
    assert edited.edited
    stored = store.db.execute("SELECT original_question FROM bench_questions WHERE qid = ?",
                              [lines[0]["id"]]).fetchone()[0]
    assert stored != edited.question                              # the generated text is kept


async def test_questions_csv_skips_generation_and_folder_documents_are_read_locally(tmp_path, servers, site):
    oa, _ = servers
    csv_path = tmp_path / "patients.csv"
    csv_path.write_text("id,question,answer,source\n"
                        f"p1,\"{TOPICS['hypertension'][0]}\",\"{TOPICS['hypertension'][1]}\",patients\n")
    got = read_bench_input(csv_path)
    assert not got.locations and got.questions[0].qid == "p1" and got.questions[0].question_source == "imported"
    models = models_for([spec(oa, "good")])
    store = Store(tmp_path / "bench.db")
    bench_id = await Benchmark(store, settings(models), models=models, judges=[KeywordJudge()]).start(got)
    assert not any("You write examination questions" in r.all_text for r in oa.requests)
    data = store.load_run(BenchStore(store).get(bench_id).run_id)
    assert [r.response.extra["question_source"] for r in data.responses] == ["imported"]

    folder = FIXTURES / "site" / "article"
    local = read_bench_input(folder)
    assert len(local.locations) == 3
    bench2 = await Benchmark(store, settings(models), models=models, judges=[KeywordJudge()]
                             ).start(local, stop_after="questions")
    docs = BenchStore(store).documents(bench2)
    assert all(d.valid and d.text for d in docs)
    assert store.get_source(docs[0].source_id).source.origin == "local_file"


def test_scripted_malformed_then_valid_reply_is_recovered_by_one_retry(servers):
    oa, _ = servers
    oa.script(Scripted("Sure! Here is my answer: {\"response\": "),
              Scripted(json.dumps({"response": TOPICS["hypertension"][2], "citations": ["https://example.org/x"]})))
    model = make_client(spec(oa, "scripted"))

    async def go():
        try:
            return await answer_question(model, Prompts.load(), Question("q", "What defines hypertension?"),
                                         draw=0, options=CallOptions())
        finally:
            await model.aclose()

    answer = asyncio.run(go())
    assert answer.status is AnswerStatus.RECOVERED and answer.attempts == 2
    assert answer.citations == ("https://example.org/x",)
    assert "Sure! Here is my answer" in (answer.raw or "")
