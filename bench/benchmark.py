"""Benchmark-workflow throughput: 100 questions x 3 models, every step, at a fixed fake latency.

100 reference pages of the local fixture site are fetched; a fake OpenAI-compatible server
(every reply after LATENCY) writes one question per page and three models answer each one
with two claims citing two pages; the keyword judge takes LATENCY per pair. The ideal wall
time for the configured concurrency is

    question calls x LATENCY / C  +  answer calls per model x LATENCY / C  (models run in parallel)
    +  judged pairs x LATENCY / J

with C calls in flight per model and J judge calls in flight (the target's ideal, from when
the steps ran one after another). It also prints a tighter bound for overlapped steps:
max(judging + 2 x LATENCY, questions + answers + LATENCY). The steps overlap: a question is
answered as soon as it is written and an answer audited as soon as it arrives. Prints the wall
time, when each step finished, the ratio to the ideal (target <= 1.25) and the process's CPU
time against the ideal.

The latency is 250 ms by default: still ten times faster than a real model API, and slow
enough that the figure measures the workflow (how well the steps overlap and keep the calls
in flight busy) rather than the CPU. At 50 ms (--latency 0.05) with 16 calls in flight per
model the ideal leaves about 1 ms of CPU per answer call and 3 ms per judged pair, less than
the OpenAI SDK alone takes on a 2-core machine: the run is then CPU-bound, and the CPU line
says by how much.

    .venv/bin/python bench/benchmark.py [--questions 100] [--models 3] [--latency 0.25]
                                        [--concurrency 16] [--judge-concurrency 16]

Rejection sampling (EVAL: of K = 5 answers the best-scored goes forward), on fixture data:

    .venv/bin/python bench/benchmark.py --rejection [--questions 60] [--best-of 5]

A grader is trained on the graded fixture answers (tests/fixtures/grades, other questions than the
benchmark's); a fake model answers each question K times at temperature 1.4, each draw by chance the
supported answer (about 45%), an unsupported on-topic claim or a refusal; a fixture reviewer grades every
draw Good only when it is the supported answer. Prints the share graded Good and the reference-answer
accuracy of the first draw (no selection) and of the draw each --select picks, each as a ratio to the
oracle (the share of questions with at least one Good draw among the K, the most any selection can reach).
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from sourcecheckup.benchmark import (Benchmark, BenchSettings, BenchStage, BenchStore,  # noqa: E402
                                          benchmark_results, format_results, read_bench_input)
from sourcecheckup.fetching import FetchOptions  # noqa: E402
from sourcecheckup.llm import make_client  # noqa: E402
from sourcecheckup.store import Store  # noqa: E402
from tests.support.bench_llm import TOPICS, responder  # noqa: E402
from tests.support.fake_judge import KeywordJudge  # noqa: E402
from tests.support.fake_llm import FakeLLMServer, RecordedRequest, Scripted  # noqa: E402

PAGES = list(TOPICS)


def two_claim_responder(base: str):
    """The workflow responder, except that answers make two claims citing two pages."""
    inner = responder(base)

    def respond(request: RecordedRequest) -> Scripted:
        if "You are a medical expert answering" not in request.all_text:
            return inner(request)
        first = PAGES[len(request.user_text) % 3]
        second = PAGES[(len(request.user_text) + 1) % 3]
        return Scripted(json.dumps({"response": f"{TOPICS[first][2]} {TOPICS[second][2]}",
                                    "citations": [f"{base}/article/{first}", f"{base}/article/{second}"]}))

    return respond


def serve(latency: float) -> None:
    """The fixture site and the fake LLM server, in a process of their own (--serve): their request
    handling must not share this process's interpreter lock with the engine being measured.
    Prints both base URLs, serves until stdin closes, then prints how many LLM calls it answered."""
    from tests.support.site import start_site

    base, stop_site = start_site()
    with FakeLLMServer("openai", latency_s=latency, responder=two_claim_responder(base)) as llm:
        print(base, flush=True)
        print(llm.base_url, flush=True)
        sys.stdin.read()
        print(len(llm.requests), flush=True)
    stop_site()


def rejection(n_questions: int, k: int) -> None:
    """Rejection sampling measured: first draw against the draw picked by support, grader and both."""
    import dataclasses

    from sourcecheckup.review.answer_grades import add_answer_grade
    from sourcecheckup.review.grader import train_grader
    from sourcecheckup.models import Response
    from tests.support.bench_llm import REFUSAL
    from tests.support.site import start_site

    fixture = ROOT / "tests" / "fixtures" / "grades" / "graded_answers.jsonl"
    graded = [json.loads(line) for line in fixture.read_text(encoding="utf-8").splitlines() if line.strip()]
    base, stop_site = start_site()
    try:
        with tempfile.TemporaryDirectory() as tmp, FakeLLMServer("openai", responder=responder(
                base, {"varied": "varied-random"})) as llm:
            store = Store(Path(tmp) / "rejection.db")
            train_run = store.create_run(input="graded fixture answers", config={}, judges=["builtin"],
                                         parser="builtin", app_version="bench")
            store.add_responses(train_run, [Response(id=g["id"], text=g["response"], question=g["question"],
                                                     citations=(), origin="fixture") for g in graded])
            for g in graded:
                add_answer_grade(store, train_run, g["id"], "fixture reviewer", g["grade"])
            t0 = time.perf_counter()
            grader = train_grader(store, [train_run])
            train_s = time.perf_counter() - t0
            grader_file = grader.save(Path(tmp) / "grader.json")
            questions = Path(tmp) / "questions.jsonl"
            with questions.open("w", encoding="utf-8") as fh:
                for i in range(n_questions):
                    q, a, _, _ = TOPICS[PAGES[i % len(PAGES)]]
                    fh.write(json.dumps({"id": f"case{i + 1}", "question": f"Case {i + 1}: {q}",
                                         "reference_answer": a}) + "\n")
            spec = f"openai-compatible:{llm.base_url}#varied"
            models = {spec: make_client(spec, concurrency=16, timeout_s=30)}
            settings = BenchSettings(models=[spec], question_model=spec, judges=["keyword:0"], best_of=k, seed=100,
                                     temperature=1.4, accuracy=True, concurrency=16,
                                     fetch=FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=30, per_host=16))
            bench_id = asyncio.run(Benchmark(store, settings, models=models, judges=[KeywordJudge()]).start(
                read_bench_input(questions)))
            bs = BenchStore(store)
            run_id = bs.get(bench_id).run_id
            supported = {t[2] for t in TOPICS.values()}
            good_draws: dict[str, bool] = {}
            for r in store.responses(run_id):
                good = r.response.text in supported
                add_answer_grade(store, run_id, r.pk, "fixture reviewer", "good" if good else "bad")
                qid = r.response.id.split("|", 1)[0]
                good_draws[qid] = good_draws.get(qid, False) or good
            oracle = sum(good_draws.values()) / len(good_draws)
            kinds = {"supported": 0, "unsupported claim": 0, "refusal": 0}
            for a in bs.answers(bench_id):
                kinds["supported" if a.text in supported else "refusal" if a.text == REFUSAL
                      else "unsupported claim"] += 1
            rows = []
            for select in ("support", "grader", "both"):
                chosen = dataclasses.replace(settings, select=select, grader_file=str(grader_file))
                config = chosen.to_dict()
                config["locations"] = []
                bs.set_config(bench_id, config)
                asyncio.run(Benchmark(store, chosen, models=models, judges=[KeywordJudge()]).resume(bench_id))
                rows.append((select, benchmark_results(store, bench_id).models[spec].best_of))
    finally:
        stop_site()
    cv = grader.cross_validation
    print(f"grader {grader.id}: trained on {grader.trained['answers']} graded fixture answers in {train_s:.1f} s; "
          f"cross-validated accuracy {100 * cv['accuracy']['value']:.1f}%, kappa {cv['kappa']['value']:.2f} "
          f"(n {cv['n']}, folds by question)")
    print(f"rejection sampling: {n_questions} questions x K={k} draws at temperature 1.4 "
          f"({', '.join(f'{v} {kind}' for kind, v in kinds.items())}); every draw graded by the fixture reviewer")
    print(f"  oracle (a Good draw among the K): {100 * oracle:.1f}% of questions")
    for select, b in rows:
        assert b is not None and b.good is not None and b.accuracy is not None
        print(f"  --select {select:<7}  graded Good {100 * b.good.without:5.1f}% -> {100 * b.good.with_selection:5.1f}%"
              f" (ratio to oracle {b.good.with_selection / oracle:.3f}, n {b.good.n}) · accuracy "
              f"{100 * b.accuracy.without:5.1f}% -> {100 * b.accuracy.with_selection:5.1f}% (n {b.accuracy.n})")


def main() -> None:
    if len(sys.argv) == 3 and sys.argv[1] == "--serve":
        serve(float(sys.argv[2]))
        return
    if "--rejection" in sys.argv:
        ap = argparse.ArgumentParser()
        ap.add_argument("--rejection", action="store_true")
        ap.add_argument("--questions", type=int, default=60)
        ap.add_argument("--best-of", type=int, default=5)
        a = ap.parse_args()
        rejection(a.questions, a.best_of)
        return
    ap = argparse.ArgumentParser()
    ap.add_argument("--questions", type=int, default=100)
    ap.add_argument("--models", type=int, default=3)
    ap.add_argument("--latency", type=float, default=0.25, help="seconds per LLM call and per judged pair")
    ap.add_argument("--concurrency", type=int, default=16, help="LLM calls in flight per model")
    ap.add_argument("--judge-concurrency", type=int, default=16)
    a = ap.parse_args()

    servers = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve", str(a.latency)],
                               cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert servers.stdin is not None and servers.stdout is not None
    base, llm_url = servers.stdout.readline().strip(), servers.stdout.readline().strip()
    stage_end: dict[str, float] = {}

    def progress(ev) -> None:
        stage_end[ev.stage.value] = time.perf_counter()

    try:
        with tempfile.TemporaryDirectory() as tmp:
            docs = Path(tmp) / "documents.txt"
            docs.write_text("\n".join(f"{base}/article/{PAGES[i % 3]}?copy={i}" for i in range(a.questions)))
            specs = [f"openai-compatible:{llm_url}#model-{i + 1}" for i in range(a.models)]
            models = {s: make_client(s, concurrency=a.concurrency, timeout_s=30) for s in specs}
            settings = BenchSettings(models=specs, judges=[f"keyword:{a.latency:g}"], question_model=specs[0],
                                     concurrency=a.concurrency, judge_concurrency=a.judge_concurrency,
                                     fetch=FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=30,
                                                        per_host=16))  # one local host stands in for many sites
            store = Store(Path(tmp) / "bench.db")
            bench = Benchmark(store, settings, models=models, judges=[KeywordJudge(a.latency)], progress=progress)
            t0 = time.perf_counter()
            cpu0 = time.process_time()
            bench_id = asyncio.run(bench.start(read_bench_input(docs)))
            wall = time.perf_counter() - t0
            cpu = time.process_time() - cpu0
            bs = BenchStore(store)
            run_id = bs.get(bench_id).run_id
            pairs = store.db.execute("SELECT COUNT(*) FROM verdicts WHERE run_id = ?", [run_id]).fetchone()[0]
            n_questions = len(bs.questions(bench_id))
            n_answers = len(bs.answers(bench_id))
            table = format_results(benchmark_results(store, bench_id))
    finally:
        servers.stdin.close()
        calls = int(servers.stdout.readline().strip() or 0)
        servers.wait(timeout=10)

    question_calls = calls - n_answers
    per_model = n_answers / a.models
    ideal_q = question_calls * a.latency / a.concurrency
    ideal_a = per_model * a.latency / a.concurrency
    ideal_j = pairs * a.latency / a.judge_concurrency
    ideal = ideal_q + ideal_a + ideal_j
    # with the steps overlapped nothing waits for a whole step: judging can start after one question
    # and one answer, and must end one pair after the last answer; a tighter bound than the sum
    overlapped = max(ideal_j + 2 * a.latency, ideal_q + ideal_a + a.latency)
    print(table)
    print()
    print(f"benchmark: {n_questions} questions x {a.models} models = {n_answers} answers; {calls} LLM calls "
          f"({question_calls} question, {n_answers} answer), {pairs} judged pairs")
    print(f"  latency {a.latency * 1000:.0f} ms per LLM call and per pair; {a.concurrency} calls in flight per "
          f"model, judge concurrency {a.judge_concurrency}")
    marks = [("documents", BenchStage.DOCUMENTS), ("questions", BenchStage.QUESTIONS),
             ("answers", BenchStage.ANSWERS), ("audit", BenchStage.AUDIT)]
    for label, stage in marks:   # the steps overlap: each line is when the last of its kind ended
        end = stage_end.get(stage.value)
        if end is not None:
            print(f"  {label:<10} done at {end - t0:6.2f} s")
    print(f"  wall time        {wall:8.2f} s  (CPU {cpu:.2f} s in this process, on {os.cpu_count()} cores)")
    print(f"  ideal            {ideal:8.2f} s  (questions {ideal_q:.2f} + answers {ideal_a:.2f} "
          f"+ judging {ideal_j:.2f})")
    print(f"  ratio to ideal   {wall / ideal:8.3f}  (target <= 1.25)")
    print(f"  overlapped ideal {overlapped:8.2f} s  (judging after one question and one answer): "
          f"ratio {wall / overlapped:.3f}")
    # not a target: the steps overlap (questions are answered as they are written, answers audited
    # as they arrive), so what keeps a run above the latency ideal is CPU; this says how much
    print(f"  CPU in this process {cpu / ideal:8.3f} x ideal (one interpreter lock: above about 1, "
          f"the run is CPU-bound at this latency)")

if __name__ == "__main__":
    main()
