"""Answers measured against the expert's material: OLAPH's comprehensiveness and hallucination over the must-have
/ nice-to-have statements (judged by the run's judges, the answer as the source), EVAL's similarity to the
reference answer, in the database, every report, verify-report, compare and the app's Expert tab."""
from __future__ import annotations

import asyncio
import csv
import json
import math
import os
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pytest

from sourcecheckup.cli import main
from sourcecheckup.expert.metrics import expert_section
from sourcecheckup.expert.step import expert_step
from sourcecheckup.ingest import load_path
from sourcecheckup.models import Label
from sourcecheckup.store import Store
from tests.support.fake_judge import KeywordJudge
from tests.support.paths import FIXTURES as TEST_FIXTURES

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

FIXTURES = TEST_FIXTURES / "expert"
ANSWERS = FIXTURES / "answers.jsonl"
MUST = "Metformin is contraindicated in patients with an eGFR below 30 mL/min/1.73 m2."


def audit(tmp_path: Path, capsys, *extra: str, reports: tuple[str, ...] = ("json",)) -> tuple[int, list[Path]]:
    paths = [tmp_path / f"r.{ext}" for ext in reports]
    code = main(["audit", str(ANSWERS), "--db", str(tmp_path / "a.db"), "--browser", "never", "--no-archive",
                 "--no-references", *extra, *[a for p in paths for a in ("--report", str(p))]])
    audit.out = capsys.readouterr().out   # type: ignore[attr-defined]
    return code, paths


# ------------------------------------------------------------------------------------------ input

def test_expert_material_is_read_from_json_lines_and_csv_columns_and_not_kept_as_grouping_columns():
    jsonl = load_path(str(ANSWERS))
    by_id = {r.id: r for r in jsonl.responses}
    assert by_id["ckd-1"].expert.must_have == (MUST,)
    assert by_id["ckd-1"].expert.nice_to_have[0].startswith("Metformin can be restarted 48 hours")
    assert by_id["ckd-2"].expert.nice_to_have == () and by_id["no-reference"].expert is None
    assert not {"must_have", "nice_to_have", "reference_answer"} & set(by_id["ckd-1"].extra)
    table = load_path(str(FIXTURES / "answers.csv"))
    rows = {r.id: r for r in table.responses}
    # " | " separates statements in a cell; a cell may also hold a JSON array
    assert rows["csv-1"].expert.must_have == ("Metformin is contraindicated below an eGFR of 30", "Lactic acidosis is rare")
    assert rows["csv-1"].expert.nice_to_have == ("Kidney function is checked yearly",)
    assert rows["csv-1"].expert.reference_answer == "Contraindicated below an eGFR of 30."
    assert rows["csv-1"].extra == {"cohort": "north"} and rows["csv-2"].expert is None


def test_a_must_have_that_is_not_a_list_of_statements_skips_that_record_and_says_why(tmp_path):
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps({"id": "x", "response": "Metformin is fine.", "must_have": [3]}) + "\n"
                    + json.dumps({"id": "y", "response": "Metformin is fine.", "must_have": "one | two"}) + "\n")
    result = load_path(str(path))
    assert [r.id for r in result.responses] == ["y"] and result.responses[0].expert.must_have == ("one", "two")
    assert "'must_have' holds a number, expected statements as text" in result.skipped[0].problem


# ------------------------------------------------------------------------------------------ the audit

def test_the_audit_judges_every_expert_statement_against_the_answer_and_every_report_shows_the_figures(tmp_path, capsys):
    code, (js, csv_path, html, xlsx) = audit(tmp_path, capsys, reports=("json", "csv", "html", "xlsx"))
    assert code == 0
    e = json.loads(js.read_text())["expert"]
    assert e["judge"] == "builtin" and e["answers_with_expert_material"] == 2
    assert "against expert material  2 answers: comprehensiveness (must-have) 50.0% (1/2)" in audit.out
    a1, a2 = e["responses"]
    # ckd-1 states the must-have; ckd-2 gives another threshold (45): contradicted, so a hallucination
    assert a1["statements"][0]["verdicts"]["builtin"]["label"] == "supported"
    assert a2["statements"][0]["verdicts"]["builtin"] == {**a2["statements"][0]["verdicts"]["builtin"],
                                                           "label": "not_supported", "contradicted": True}
    assert (a1["comprehensiveness_must_have"]["k"], a1["comprehensiveness_must_have"]["n"]) == (1, 1)
    assert (a2["comprehensiveness_must_have"]["k"], a2["hallucination"]["k"], a2["hallucination"]["n"]) == (0, 1, 1)
    # the nice-to-have (restarting after contrast) is not in ckd-1's answer
    assert a1["statements"][1]["verdicts"]["builtin"]["label"] == "not_supported"
    assert (a1["comprehensiveness_all"]["k"], a1["comprehensiveness_all"]["n"]) == (1, 2)
    overall = e["overall"]
    assert (overall["comprehensiveness_must_have"]["k"], overall["comprehensiveness_must_have"]["n"]) == (1, 2)
    assert overall["comprehensiveness_must_have"]["ci_method"] == "korn_graubard"
    assert (e["by_model"]["model-b"]["hallucination"]["k"], e["by_model"]["model-b"]["hallucination"]["n"]) == (1, 1)
    # EVAL: both answers with a reference answer have both similarities; the one without has none
    for a in (a1, a2):
        assert set(a["similarity"]) == {"late_interaction", "sentence_cosine"}
        assert all(-1 <= v <= 1 for v in a["similarity"].values())
    assert set(e["rankings"]["late_interaction"]) == {"model-a", "model-b"}
    # the pair-level verdicts are stored rows
    with Store(tmp_path / "a.db") as st:
        run_id = st.latest_run_id()
        stored = st.expert_verdicts(run_id)
        assert len(stored) == 3 and {v.verdict.judge_id for v in stored} == {"builtin"}
        assert st.similarities(run_id).keys() == {r.pk for r in st.responses(run_id) if r.response.id != "no-reference"}
    rows = [r for r in csv.DictReader(csv_path.open(encoding="utf-8")) if r["category"].startswith("expert_")]
    assert [(r["statement_id"], r["reading"]) for r in rows] == [
        ("ckd-1/must_have1", "entailed"), ("ckd-1/nice_to_have1", "not entailed"), ("ckd-2/must_have1", "contradicted")]
    page = html.read_text(encoding="utf-8")
    assert 'id="expert"' in page and "Comprehensiveness (must-have)" in page and "contradicted" in page
    from openpyxl import load_workbook

    sheet = load_workbook(xlsx, read_only=True)["expert"]
    cells = [row for row in sheet.iter_rows(values_only=True)]
    assert ("all", "Comprehensiveness (must-have)", 0.5) == cells[1][:3]
    for path in (js, csv_path, html, xlsx):
        assert main(["verify-report", str(path), "--db", str(tmp_path / "a.db")]) == 0, path
    capsys.readouterr()


def test_verify_report_finds_an_expert_figure_changed_in_the_file(tmp_path, capsys):
    code, (js,) = audit(tmp_path, capsys)
    assert code == 0
    report = json.loads(js.read_text())
    report["expert"]["by_model"]["model-b"]["hallucination"]["k"] = 0
    js.write_text(json.dumps(report))
    assert main(["verify-report", str(js), "--db", str(tmp_path / "a.db")]) != 0
    assert "expert.by_model.model-b.hallucination.k" in capsys.readouterr().out


def _run_with(tmp_path: Path, judge) -> tuple[Store, str]:
    from sourcecheckup.config import build_run_config
    from sourcecheckup.pipeline import Audit, run_sync

    st = Store(tmp_path / "k.db")
    config = build_run_config(judges=[judge.id], parser="builtin", references=False, batch=True, browser="never",
                              archive_lookup=False)
    run_id = run_sync(lambda: Audit(st, config, judges=[judge]).start(load_path(str(ANSWERS)).responses))
    return st, run_id


def test_a_judge_error_is_left_out_and_counted_never_not_entailed_and_no_contradiction_reading_is_no_figure(tmp_path):
    judge = KeywordJudge(fail_on="restarted")        # the nice-to-have of ckd-1 fails
    st, run_id = _run_with(tmp_path, judge)
    e = expert_section(st, run_id)
    a1 = e["responses"][0]
    assert a1["statements"][1]["verdicts"][judge.id]["label"] == Label.JUDGE_ERROR.value
    assert a1["judge_errors"] == 1 and a1["comprehensiveness_all"]["n"] == 1     # 1 of 2 decided
    assert e["overall"]["judge_errors"] == 1
    # a judge with no contradiction reading (an entailment score only): hallucination is absent, not 0%
    assert a1["hallucination"] is None and e["overall"]["hallucination"] is None
    st.close()


def test_a_resumed_run_does_not_judge_its_expert_statements_again(tmp_path):
    judge = KeywordJudge()
    st, run_id = _run_with(tmp_path, judge)
    calls = judge.calls
    asyncio.run(expert_step(st, run_id, [judge], asyncio.Semaphore(2), asyncio.Event()))
    assert judge.calls == calls and len(st.expert_verdicts(run_id)) == 3
    st.close()


# ------------------------------------------------------------------------------------------ EVAL

def test_late_interaction_is_colbert_maxsim_over_the_bundled_models_token_vectors():
    from sourcecheckup.expert import similarity

    encoder = similarity._token_encoder()
    reference, answer = "Metformin is contraindicated below an eGFR of 30.", "Avoid metformin when eGFR is under 30."
    # the token vectors are the model's own: mean-pooled and normalised they are its sentence vector
    states = similarity.hidden_states(encoder, answer)
    pooled = states.mean(axis=0) / np.linalg.norm(states.mean(axis=0))
    assert float(pooled @ encoder.encode([answer])[0]) == pytest.approx(1.0, abs=1e-5)
    # MaxSim written out (Khattab & Zaharia 2020, eq. 3): each reference token's best cosine, averaged
    ref, ans = similarity.hidden_states(encoder, reference)[1:-1], states[1:-1]

    def cos(u, v):
        return float(np.dot(u, v) / math.sqrt(float(np.dot(u, u)) * float(np.dot(v, v))))

    by_hand = sum(max(cos(r, a) for a in ans) for r in ref) / len(ref)
    assert similarity.late_interaction(reference, answer, encoder) == pytest.approx(by_hand, abs=1e-5)
    unrelated = similarity.late_interaction(reference, "Hypertension is 130/80 mm Hg or higher.", encoder)
    assert unrelated < by_hand
    # one forward pass a text gives both figures; the cosine is the sentence embeddings' cosine
    ((late, cosine),) = similarity.answer_similarities([(reference, answer)])
    assert late == pytest.approx(by_hand, abs=1e-5)
    assert cosine == pytest.approx(similarity.sentence_cosine(reference, answer), abs=1e-5)


def test_token_vectors_are_the_same_on_onnx_runtime_and_torch():
    """The benchmark and expert steps read token vectors from the process's ONNX model (no torch import); they
    are the torch encoder's hidden states within float rounding."""
    from sourcecheckup import embeddings
    from sourcecheckup.embeddings.encoder import MiniLMEncoder
    from sourcecheckup.embeddings.encoder_onnx import OnnxMiniLM
    from sourcecheckup.expert import similarity

    onnx = OnnxMiniLM.open(embeddings.model_path())
    torch_encoder = MiniLMEncoder.open(embeddings.model_path())
    for text in ("Metformin is contraindicated below an eGFR of 30.", "Hypertension is 130/80 mm Hg or higher. " * 5):
        a, b = similarity.hidden_states(onnx, text), similarity.hidden_states(torch_encoder, text)
        assert a.shape == b.shape and np.max(np.abs(a - b)) < 1e-4


def test_spearman_agrees_with_scipy_and_the_grade_correlation_uses_answers_with_both():
    from scipy.stats import spearmanr

    from sourcecheckup.expert.similarity import similarity_grade_correlation, spearman

    data = json.loads((FIXTURES / "grades.json").read_text())
    out = similarity_grade_correlation(data["similarities"], data["grades"])
    both = [k for k, v in data["similarities"].items() if v is not None and k in data["grades"]]
    expected = spearmanr([data["similarities"][k] for k in both],
                         [1.0 if data["grades"][k] == "good" else 0.0 for k in both]).statistic
    assert out["n"] == 7 and out["n_without"] == 2                  # a8 has no similarity, a9 no similarity row
    assert out["rho"] == pytest.approx(expected, abs=1e-6)
    assert out["ci95"][0] < out["rho"] < out["ci95"][1] <= 1
    assert spearman([1, 2, 3, 4, 5], [2, 4, 6, 8, 10])["rho"] == pytest.approx(1.0)
    assert spearman([1, 2], [2, 1])["rho"] is None                   # too few pairs: no figure


# ------------------------------------------------------------------------------------------ compare, app

def test_compare_gives_the_difference_in_every_expert_figure(tmp_path, capsys):
    from sourcecheckup.compare import compare_runs

    assert audit(tmp_path, capsys)[0] == 0
    assert audit(tmp_path, capsys)[0] == 0
    with Store(tmp_path / "a.db") as st:
        first, second = [r.id for r in st.list_runs()][::-1]
        c = compare_runs(st, first, second)
    by = {d["metric"]: d for d in c["expert_differences"]}
    assert by["comprehensiveness_must_have"]["a"] == by["comprehensiveness_must_have"]["b"] == 0.5
    assert by["hallucination"]["diff"] == 0.0 and by["late_interaction"]["n_a"] == 2
    assert main(["compare", first, second, "--db", str(tmp_path / "a.db")]) == 0
    assert "Comprehensiveness (must-have)" in capsys.readouterr().out


def test_the_expert_tab_shows_the_answer_figures_its_statements_and_the_models(tmp_path, capsys, qtbot=None):
    from PySide6.QtWidgets import QApplication

    from ui.results.expert_tab import NO_MATERIAL, ExpertTab

    app = QApplication.instance() or QApplication([])
    assert audit(tmp_path, capsys)[0] == 0
    with Store(tmp_path / "a.db") as st:
        run_id = st.latest_run_id()
        section = expert_section(st, run_id)

    def read(_key, work, done, _error=None, **_kw):
        with Store(tmp_path / "a.db") as own:
            done(work(own))

    page = SimpleNamespace(run_id=run_id, view=object(), host=SimpleNamespace(db=SimpleNamespace(read=read)))
    tab = ExpertTab(page)
    tab.show_answer(run_id, "ckd-2")
    assert "Hallucination: 100.0% (1/1" in tab.answer_label.text()
    assert [(r.kind, r.reading) for r in tab.statements_model.rows] == [("must-have", "contradicted")]
    assert "model-a:" in tab.models_label.text() and "Ranked by similarity (late interaction)" in tab.models_label.text()
    tab.show_answer(run_id, "no-reference")
    assert tab.answer_label.text() == NO_MATERIAL and tab.section == section
    app.processEvents()


# ------------------------------------------------------------------------------------------ questions

def test_questions_with_expert_statements_carry_them_through_answers_into_the_audit(tmp_path, site, capsys):
    from tests.support.bench_llm import TOPICS, responder
    from tests.support.fake_llm import FakeLLMServer

    docs = tmp_path / "documents.txt"
    docs.write_text(f"{site}/article/metformin-lactic-acidosis\n")
    qfile, afile = tmp_path / "questions.jsonl", tmp_path / "answers.jsonl"
    with FakeLLMServer("openai", responder=responder(site)) as oa:
        model = f"openai-compatible:{oa.base_url}#good"
        assert main(["questions", str(docs), "--model", model, "-o", str(qfile), "--expert-statements",
                     "--allow-host", "127.0.0.1", "--db", str(tmp_path / "b.db")]) == 0
        (question,) = [json.loads(x) for x in qfile.read_text().splitlines()]
        _, short, sentence, _ = TOPICS["metformin-lactic-acidosis"]
        assert question["must_have"] == [sentence] and question["nice_to_have"] == [short]
        assert main(["answer", str(qfile), "--model", model, "-o", str(afile)]) == 0
    (answer,) = [json.loads(x) for x in afile.read_text().splitlines()]
    assert answer["must_have"] == [sentence] and answer["reference_answer"] == short
    assert main(["audit", str(afile), "--db", str(tmp_path / "a.db"), "--browser", "never", "--no-archive",
                 "--no-references", "--allow-host", "127.0.0.1", "--report", str(tmp_path / "r.json")]) == 0
    capsys.readouterr()
    e = json.loads((tmp_path / "r.json").read_text())["expert"]
    # the fake model answers with the page's own sentence: the must-have is entailed
    assert e["responses"][0]["comprehensiveness_must_have"]["k"] == 1


def test_a_local_nli_model_judges_the_expert_statements_through_the_judge_interface(tmp_path):
    """A `local:` NLI model (a tiny BERT whose entailment logit reads the word "starting", which only ckd-1's
    answer holds) scores comprehensiveness; it gives no contradiction reading, so hallucination is n/a."""
    from sourcecheckup.judges.local import from_spec
    from tests.support.tiny_model import build_oracle_model

    folder = build_oracle_model(tmp_path / "oracle-nli", evidence_words={"starting": 12.0})
    st, run_id = _run_with(tmp_path, from_spec(str(folder), max_windows=4))
    e = expert_section(st, run_id)
    st.close()
    a1, a2 = e["responses"]
    assert (a1["comprehensiveness_all"]["k"], a1["comprehensiveness_all"]["n"]) == (2, 2)
    assert (a2["comprehensiveness_must_have"]["k"], a2["comprehensiveness_must_have"]["n"]) == (0, 1)
    assert a1["hallucination"] is None and e["by_model"]["model-b"]["hallucination"] is None
    assert e["judge"].startswith("local:")


def test_a_reviewed_questions_file_changes_the_stored_expert_statements(tmp_path):
    from sourcecheckup.benchmark import BenchStore
    from sourcecheckup.benchmark.records import Question, read_questions, write_questions

    with Store(tmp_path / "b.db") as st:
        bench = BenchStore(st)
        bench_id = bench.create(input="docs.txt", config={})
        bench.add_questions(bench_id, [Question(qid="q1", question="Metformin in CKD?", must_have=("A.",))])
        path = tmp_path / "questions.jsonl"
        write_questions(path, bench.questions(bench_id))
        edited = [json.loads(line) for line in path.read_text().splitlines()]
        edited[0]["must_have"] = ["Metformin is contraindicated below an eGFR of 30."]
        edited[0]["nice_to_have"] = "Kidney function is checked yearly | Lactic acidosis is rare"
        path.write_text("".join(json.dumps(q) + "\n" for q in edited))
        assert bench.apply_review(bench_id, read_questions(path))["edited"] == 1
        (q,) = bench.questions(bench_id)
        assert q.must_have == ("Metformin is contraindicated below an eGFR of 30.",)
        assert q.nice_to_have == ("Kidney function is checked yearly", "Lactic acidosis is rare")


def test_graded_answers_give_the_similaritys_rank_correlation_with_the_grades_in_the_report(tmp_path, capsys):
    """EVAL's validation: once answers are graded Good/Bad, the report gives Spearman's rho between each
    answer's similarity and its grade, computed from the stored grades (verify-report rebuilds it)."""
    from sourcecheckup.expert.similarity import similarity_grade_correlation
    from sourcecheckup.review.answer_grades import add_answer_grade

    code, (js,) = audit(tmp_path, capsys)
    assert code == 0
    assert json.loads(js.read_text())["expert"]["grade_correlation"] == {}    # nothing graded yet
    with Store(tmp_path / "a.db") as st:
        run_id = st.latest_run_id()
        sims = st.similarities(run_id)
        pks = sorted(sims)
        best = max(pks, key=lambda pk: sims[pk]["sentence_cosine"][1])
        for pk in pks:
            add_answer_grade(st, run_id, pk, "dr-a", "good" if pk == best else "bad")
    out = tmp_path / "graded.json"
    assert main(["report", run_id, "--db", str(tmp_path / "a.db"), "-o", str(out), "-q"]) == 0
    corr = json.loads(out.read_text())["expert"]["grade_correlation"]
    assert set(corr) == {"late_interaction", "sentence_cosine"}
    expected = similarity_grade_correlation({pk: sims[pk]["sentence_cosine"][1] for pk in pks},
                                            {pk: "good" if pk == best else "bad" for pk in pks})
    assert corr["sentence_cosine"] == expected and corr["sentence_cosine"]["n"] == len(pks)
    assert main(["verify-report", str(out), "--db", str(tmp_path / "a.db")]) == 0
    page = tmp_path / "graded.html"
    assert main(["report", run_id, "--db", str(tmp_path / "a.db"), "-o", str(page), "-q"]) == 0
    assert "Similarity against the graders' Good/Bad grades" in page.read_text(encoding="utf-8")
    capsys.readouterr()
