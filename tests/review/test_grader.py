"""Answer-level Good/Bad grades (EVAL's expert grades), kept apart from pair labels, and the grader
trained on them (EVAL's reward model, small): a real SQLite file, the CLI through its main function,
the bundled MiniLM embeddings, the app's review keys offscreen."""
from __future__ import annotations

import csv
import json
import os

import pytest

from tests.support.paths import FIXTURES

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
pytest.importorskip("pytestqt")

from sourcecheckup.cli import main
from sourcecheckup.models import Response
from sourcecheckup.review import reviews
from sourcecheckup.review.answer_grades import (
    AnswerGrade,
    GradeError,
    add_answer_grade,
    answer_grades,
    grade_agreement,
    graders_grade,
)
from sourcecheckup.review.grader import MIN_GRADES, GraderError, load_grader, train_grader
from sourcecheckup.review.sample import draw_sample, import_reviews_csv, write_sample_csv
from sourcecheckup.store import Store
from tests.support.synth_run import synthesize_run

FIXTURE = FIXTURES / "grades" / "graded_answers.jsonl"
GRADED = [json.loads(line) for line in FIXTURE.read_text(encoding="utf-8").splitlines() if line.strip()]


def graded_run(store: Store, items: list[dict], *, model: str = "model-a") -> str:
    """A run of these answers (no sources: grades are of whole answers)."""
    run_id = store.create_run(input="graded answers", config={"consensus": "first"}, judges=["builtin"],
                              parser="builtin", app_version="test")
    store.add_responses(run_id, [Response(id=it["id"], text=it["response"], citations=(), question=it["question"],
                                          model=model, origin="fixture") for it in items])
    return run_id


def grade_all(store: Store, run_id: str, items: list[dict], reviewer: str = "dr a") -> None:
    for it in items:
        add_answer_grade(store, run_id, it["id"], reviewer, it["grade"])


@pytest.fixture()
def store(tmp_path) -> Store:
    return Store(tmp_path / "g.db")


# ----------------------------------------------------------------------------- grades

def test_grades_are_kept_apart_from_pair_labels_and_the_latest_per_reviewer_counts(store):
    run_id = synthesize_run(store, responses=3, statements=2, sources=2)
    add_answer_grade(store, run_id, "r1", "dr a", "bad")
    add_answer_grade(store, run_id, "r1", "dr a", "Good", "changed my mind")
    add_answer_grade(store, run_id, "r1", "dr b", "g")
    add_answer_grade(store, run_id, "r2", "dr a", "good")
    add_answer_grade(store, run_id, "r2", "dr b", "bad")
    assert reviews(store, run_id) == []                              # no pair label was written
    latest = answer_grades(store, run_id)
    assert [(g.response_id, g.reviewer, g.grade.value) for g in latest] == [
        ("r1", "dr a", "good"), ("r1", "dr b", "good"), ("r2", "dr a", "good"), ("r2", "dr b", "bad")]
    assert len(answer_grades(store, run_id, latest_only=False)) == 5
    pk = {r.response.id: r.pk for r in store.responses(run_id)}
    assert graders_grade(latest) == {pk["r1"]: AnswerGrade.GOOD}      # r2 is a tie: no majority
    with pytest.raises(GradeError, match="no answer 'r9'"):
        add_answer_grade(store, run_id, "r9", "dr a", "good")
    with pytest.raises(GradeError, match="not good or bad"):
        add_answer_grade(store, run_id, "r1", "dr a", "fine")
    with pytest.raises(GradeError, match="reviewer"):
        add_answer_grade(store, run_id, "r1", " ", "good")


def test_agreement_between_graders_gives_percent_kappa_and_n(store):
    run_id = graded_run(store, GRADED[:20])
    grade_all(store, run_id, GRADED[:20], "dr a")
    for i, it in enumerate(GRADED[:20]):      # dr b disagrees on 4 of 20 answers
        flipped = {"good": "bad", "bad": "good"}[it["grade"]] if i in (0, 3, 8, 13) else it["grade"]
        add_answer_grade(store, run_id, it["id"], "dr b", flipped)
    report = grade_agreement(store, [run_id])
    pair = next(c for c in report["comparisons"] if c["kind"] == "grader-grader")
    assert (pair["rater_a"], pair["rater_b"], pair["n"]) == ("dr a", "dr b", 20)
    assert pair["agreement"]["value"] == pytest.approx(0.8)
    # both graders say good 10 times of 20: chance agreement 0.5, kappa (0.8 - 0.5) / 0.5
    assert pair["kappa"]["value"] == pytest.approx(0.6)
    lo, hi = pair["agreement"]["ci95"]
    assert lo < 0.8 < hi
    assert report["answers_graded"] == 20 and report["without_majority"] == 4


def test_the_cli_grades_an_answer_and_reports_agreement(store, capsys):
    run_id = synthesize_run(store, responses=4, statements=1, sources=1)
    db = str(store.path)
    for rid, a, b in (("r1", "good", "good"), ("r2", "bad", "bad"), ("r3", "good", "bad"), ("r4", "good", "good")):
        assert main(["grade", run_id, rid, a, "--reviewer", "dr a", "--db", db]) == 0
        assert main(["grade", run_id, rid, b, "--reviewer", "dr b", "--note", "checked", "--db", db]) == 0
    assert f"graded answer r4 of run {run_id} good as dr b" in capsys.readouterr().out
    assert main(["grade", run_id, "r1", "great", "--reviewer", "dr a", "--db", db]) == 2
    assert "not good or bad" in capsys.readouterr().err
    assert main(["grades", run_id, "--db", db]) == 0
    out = capsys.readouterr().out
    assert "4 answer(s) graded by 2 grader(s) (dr a, dr b)" in out
    assert "dr a vs dr b: n 4, agreement 75.0%" in out and "kappa too few pairs to estimate (4 < 10)" in out
    assert main(["grades", run_id, "--db", db, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert len(data["grades"]) == 8 and {g["note"] for g in data["grades"]} == {"", "checked"}


def test_the_review_sheet_carries_an_answer_grade_that_review_import_stores(store, tmp_path, capsys):
    run_id = synthesize_run(store, responses=6, statements=2, sources=2)
    pairs = draw_sample(store, run_id, 12, seed=3)
    sheet = tmp_path / "sheet.csv"
    write_sample_csv(pairs, sheet)
    rows = list(csv.DictReader(sheet.open(encoding="utf-8")))
    assert "answer_grade" in rows[0] and all(r["answer"] for r in rows)
    by_response: dict[str, list[dict]] = {}
    for r in rows:
        by_response.setdefault(r["response_id"], []).append(r)
    r1, r2, r3 = sorted(by_response)[:3]
    for r in by_response[r1]:
        r["answer_grade"] = "Good"                       # every row of r1 agrees
    by_response[r2][0]["answer_grade"] = "bad"          # one row of r2 carries its grade, no pair label
    by_response[r3][0]["answer_grade"] = "good"         # r3's rows disagree: not stored, named
    by_response[r3][1]["answer_grade"] = "bad"
    by_response[r1][0]["label"] = "supported"
    with sheet.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    assert main(["review-import", str(sheet), "--reviewer", "dr c", "--db", str(store.path)]) == 0
    captured = capsys.readouterr()
    assert "imported 1 review(s) and 2 answer grade(s) by dr c" in captured.out
    assert "different grades" in captured.err
    got = {(g.response_id, g.grade.value, g.sample) for g in answer_grades(store, run_id)}
    assert got == {(r1, "good", pairs[0].sample), (r2, "bad", pairs[0].sample)}
    assert len(reviews(store, run_id)) == 1


def test_a_sheet_without_the_answer_grade_column_still_imports(store, tmp_path):
    run_id = synthesize_run(store, responses=3, statements=1, sources=1)
    pairs = draw_sample(store, run_id, 3, seed=1)
    sheet = tmp_path / "old.csv"
    sheet.write_text("pair_id,label\n" + "".join(f"{p.pair_id},supported\n" for p in pairs), encoding="utf-8")
    result = import_reviews_csv(store, sheet, "dr d")
    assert (result.imported, result.grades, result.errors) == (3, 0, ())


# ----------------------------------------------------------------------------- the grader

def test_training_is_refused_under_the_minimum_with_a_clear_message(store, tmp_path, capsys):
    few = GRADED[: MIN_GRADES - 2]
    run_id = graded_run(store, few)
    grade_all(store, run_id, few)
    with pytest.raises(GraderError, match=rf"too few graded answers .*{len(few)} \(9 good, 9 bad\).*at least {MIN_GRADES}"):
        train_grader(store, [run_id])
    one_sided = [it for it in GRADED if it["grade"] == "good"][:MIN_GRADES + 2]
    other = graded_run(store, one_sided)
    grade_all(store, other, one_sided)
    assert main(["grader", "train", other, "-o", str(tmp_path / "g"), "--db", str(store.path)]) == 2
    assert "0 bad" in capsys.readouterr().err and not (tmp_path / "g.json").exists()


def test_a_grader_learns_fixture_grades_and_scores_new_answers_above_chance(store, tmp_path, capsys):
    train, held_out = GRADED[:40], GRADED[40:]          # 20 questions to learn from, 10 others to score
    run_id = graded_run(store, train)
    grade_all(store, run_id, train)
    out = tmp_path / "grader"
    assert main(["grader", "train", run_id, "-o", str(out), "--db", str(store.path)]) == 0
    printed = capsys.readouterr().out
    assert "trained on 40 graded answers (20 good, 20 bad)" in printed
    assert "cross-validated over 5 folds" in printed and "kappa" in printed
    saved = json.loads((tmp_path / "grader.json").read_text())
    assert saved["format"] == "sourcecheckup-grader" and saved["cross_validation"]["n"] == 40
    assert saved["cross_validation"]["accuracy"]["value"] > 0.75
    grader = load_grader(out)                            # the .json suffix is found
    assert grader.id == saved["id"]

    new_run = graded_run(store, held_out, model="model-b")
    grade_all(store, new_run, held_out, "dr b")
    assert main(["grader", "score", new_run, "-g", str(out), "--db", str(store.path), "--json"]) == 0
    scored = json.loads(capsys.readouterr().out)
    assert scored["stored"] and not scored["trained_on_this_run"] and len(scored["answers"]) == 20
    right = sum((a["score"] >= 0.5) == (a["grade"] == "good") for a in scored["answers"])
    assert right >= 16                                   # chance is 10 of 20
    assert scored["agreement"]["n"] == 20 and scored["agreement"]["kappa"]["value"] > 0.5
    stored = store.answer_scores(new_run, grader.id)
    assert sorted(stored) == sorted(a["response_pk"] for a in scored["answers"])
    assert main(["grader", "score", new_run, "-g", str(out), "--db", str(store.path)]) == 0
    assert "against the graders: n 20" in capsys.readouterr().out


def test_a_file_that_is_not_a_grader_is_refused(tmp_path, capsys):
    bad = tmp_path / "model.json"
    bad.write_text(json.dumps({"weights": [1, 2]}))
    with pytest.raises(GraderError, match="not a grader file"):
        load_grader(bad)
    assert main(["grader", "score", "-g", str(tmp_path / "missing.json"), "--db", str(tmp_path / "x.db")]) == 2
    assert "no such grader file" in capsys.readouterr().err


# ----------------------------------------------------------------------------- the app's review keys

def test_review_mode_g_and_b_grade_the_answer_and_the_answer_tab_shows_it(qtbot, window):
    from PySide6.QtCore import Qt

    w = window
    with Store(w.db_path) as st:
        run_id = synthesize_run(st, responses=2, statements=2, sources=1)
    with qtbot.waitSignal(w.results.run_shown, timeout=120_000):
        w.results.open_run(run_id)
    w.activateWindow()
    w.review_mode_action.trigger()
    first = w.results.response_pk
    assert first is not None
    w.results.detail_tabs.setCurrentIndex(0)
    qtbot.keyClick(w.results.matrix_tab.matrix_table, Qt.Key.Key_G)
    label = w.results.answer_tab.grade_label
    qtbot.waitUntil(lambda: "Good (Dr Tester)" in label.text(), timeout=120_000)
    qtbot.keyClick(w.results.matrix_tab.matrix_table, Qt.Key.Key_B)      # changed my mind: the latest counts
    qtbot.waitUntil(lambda: "Bad (Dr Tester)" in label.text(), timeout=120_000)
    with Store(w.db_path) as st:
        grades = answer_grades(st, run_id)
        assert [(g.response_pk, g.reviewer, g.grade.value) for g in grades] == [(first, "Dr Tester", "bad")]
        assert reviews(st, run_id) == []                              # a grade is no pair label
    with qtbot.waitSignal(w.results.run_shown, timeout=120_000):
        qtbot.keyClick(w.results.matrix_tab.matrix_table, Qt.Key.Key_S)   # S still labels the pair
    with Store(w.db_path) as st:
        assert len(reviews(st, run_id)) == 1 and len(answer_grades(st, run_id)) == 1


# ----------------------------------------------------------------------------- best-of-K by the grader

async def test_best_of_k_selected_by_the_grader_keeps_the_answer_graders_call_good(tmp_path, site, capsys):
    from sourcecheckup.benchmark import (
        Benchmark,
        BenchSettings,
        BenchStore,
        WithWithout,
        benchmark_results,
        format_results,
        read_bench_input,
    )
    from sourcecheckup.fetching import FetchOptions
    from sourcecheckup.llm import make_client
    from tests.support.bench_llm import TOPICS, responder
    from tests.support.fake_judge import KeywordJudge
    from tests.support.fake_llm import FakeLLMServer

    store = Store(tmp_path / "bench.db")
    train_run = graded_run(store, GRADED)
    grade_all(store, train_run, GRADED)
    grader = train_grader(store, [train_run])
    path = grader.save(tmp_path / "grader.json")
    docs = tmp_path / "documents.txt"
    docs.write_text("\n".join(f"{site}/article/{p}" for p in TOPICS) + "\n")
    with FakeLLMServer("openai", responder=responder(site, {"varied": "varied"})) as oa:
        spec = f"openai-compatible:{oa.base_url}#varied"
        assert main(["benchmark", str(docs), "--models", spec, "--best-of", "3", "--select", "grader",
                     "--db", str(store.path)]) == 2
        assert "needs a grader file" in capsys.readouterr().err
        models = {spec: make_client(spec, backoff_s=0.01, timeout_s=5)}
        # seed 10: draw 0 (seed 10) an unsupported claim, draw 1 (seed 11) the supported answer, draw 2 a refusal
        settings = BenchSettings(models=[spec], question_model=spec, judges=["keyword:0"], best_of=3, seed=10,
                                 temperature=1.4, select="grader", grader_file=str(path),
                                 fetch=FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=10))
        bench_id = await Benchmark(store, settings, models=models, judges=[KeywordJudge()]).start(
            read_bench_input(docs))
    bs = BenchStore(store)
    assert {k[2] for k, (_, sel) in bs.answer_flags(bench_id).items() if sel} == {1}
    run_id = bs.get(bench_id).run_id
    assert len(store.answer_scores(run_id, grader.id)) == 9          # every draw's score is stored
    supported = {t[2] for t in TOPICS.values()}
    for r in store.responses(run_id):                                # a reviewer grades every draw
        add_answer_grade(store, run_id, r.pk, "dr a", "good" if r.response.text in supported else "bad")
    best = benchmark_results(store, bench_id).models[spec].best_of
    assert best is not None and best.select == "grader" and best.k == 3
    assert best.good == WithWithout(3, 0.0, 1.0)                      # graded Good: 0% without, 100% with
    assert (best.first_draw_support, best.selected_support) == (0.0, 1.0)
    table = format_results(benchmark_results(store, bench_id))
    assert "selected by grader" in table and "graded Good on 3 graded questions: 0.0% -> 100.0%" in table


def test_on_the_review_sample_page_g_grades_the_current_pairs_answer_within_the_sample(qtbot, window):
    from PySide6.QtCore import Qt

    w = window
    with Store(w.db_path) as st:
        run_id = synthesize_run(st, responses=3, statements=2, sources=2)
    with qtbot.waitSignal(w.results.run_shown, timeout=120_000):
        w.results.open_run(run_id)
    page = w.sample_page
    w.pages.setCurrentWidget(page)
    page.n_spin.setValue(4)
    with qtbot.waitSignal(page.sample_shown, timeout=120_000) as shown:
        assert page.draw()
    pair = page.current_pair()
    w.activateWindow()
    w.review_mode_action.trigger()
    qtbot.keyClick(page.pairs_table, Qt.Key.Key_G)
    assert page.current_pair() == pair                       # a grade does not move on: the pair is still to label
    with Store(w.db_path) as st:
        got = [(g.response_id, g.grade.value, g.sample) for g in answer_grades(st, run_id)]
        assert reviews(st, run_id) == []
    assert got == [(pair.response_id, "good", shown.args[0])]


def test_the_logistic_regression_is_sklearns_balanced_l2_objective():
    """fit_logistic claims scikit-learn's objective (balanced class weights, L2 on the weights only):
    the same data gives the same coefficients there."""
    sklearn_linear = pytest.importorskip("sklearn.linear_model")
    import numpy as np

    from sourcecheckup.review.grader import fit_logistic

    rng = np.random.default_rng(3)
    x = rng.normal(size=(60, 8))
    y = (x[:, 0] - 0.5 * x[:, 1] + rng.normal(scale=0.8, size=60) > 0.6).astype(float)   # unbalanced classes
    w, b = fit_logistic(x, y, c=0.5)
    ref = sklearn_linear.LogisticRegression(C=0.5, class_weight="balanced", tol=1e-10, max_iter=10_000).fit(x, y)
    assert np.allclose(w, ref.coef_[0], atol=1e-4) and b == pytest.approx(ref.intercept_[0], abs=1e-4)
