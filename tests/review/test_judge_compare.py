"""Which judge to trust: each judge of a run against the reviewers' majority, figures checked by hand."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from sourcecheckup.review.judge_compare import MIN_PAIRS, compare_judges, format_comparison
from sourcecheckup.store import Store
from tests.support.judge_reviews import (
    KEYWORD,
    SYNTH,
    N,
    S,
    pairs_by_label,
    review_pair,
    reviewed_two_judge_run,
    two_judge_run,
)
from tests.support.paths import ROOT
from tests.support.synth_run import synthesize_run


@pytest.fixture()
def reviewed(tmp_path):
    store = Store(tmp_path / "j.db")
    run_id, flipped = reviewed_two_judge_run(store)
    return store, run_id, flipped


def test_each_judge_is_scored_against_the_reviewers_majority_by_hand(reviewed):
    store, run_id, flipped = reviewed
    c = compare_judges(store, run_id)
    assert c.reviewers == ("ana", "ben", "cy")
    assert (c.pairs_reviewed, c.pairs_with_majority) == (26, 25)
    synth, keyword = c.score(SYNTH), c.score(KEYWORD)

    # synthetic: judge S -> reviewers S 7, N 1; judge N -> reviewers S 2, N 14
    assert synth.confusion == {S: {S: 7, N: 1}, N: {S: 2, N: 14}}
    assert (synth.pairs, synth.agree, synth.judge_errors) == (24, 21, 1)
    assert synth.agreement == pytest.approx(21 / 24)
    # Clopper–Pearson: the 2.5% quantile of Beta(21, 4) and the 97.5% quantile of Beta(22, 3)
    assert synth.agreement_ci95 == pytest.approx((0.6764, 0.9734), abs=2e-4)
    # po = 21/24, pe = (8·9 + 16·15) / 24² = 312/576: kappa = (504 - 312) / (576 - 312) = 8/11
    assert synth.kappa == pytest.approx(8 / 11)
    assert synth.recall_supported == pytest.approx(7 / 9) and synth.recall_not_supported == pytest.approx(14 / 15)
    assert synth.balanced_accuracy == pytest.approx((7 / 9 + 14 / 15) / 2)
    assert {(d.statement_pk, d.url) for d in synth.disagreements} == flipped
    d = next(d for d in synth.disagreements if d.judge_label == S)
    assert d.reviewers_label == N and d.reviews["ana"] == N and d.statement and d.source_title.startswith("Page")

    # keyword: every pair supported -> agrees on the 9 the reviewers call supported; kappa 0; BA 0.5
    assert keyword.confusion == {S: {S: 9, N: 15}, N: {S: 0, N: 0}}
    assert (keyword.pairs, keyword.agree, keyword.judge_errors) == (24, 9, 1)
    assert keyword.kappa == pytest.approx(0.0) and keyword.balanced_accuracy == pytest.approx(0.5)
    assert len(keyword.disagreements) == 15 and {d.judge_label for d in keyword.disagreements} == {S}

    assert c.recommended == SYNTH
    assert c.recommendation == f"Recommended: {SYNTH}, the highest balanced accuracy (85.6%) on 24 reviewed pairs."
    text = format_comparison(c)
    assert "87.5% (95% CI 67.6%–97.3%)" in text and "0.73" in text and "Where keyword:0 disagrees" in text


def test_too_few_reviewed_pairs_gives_no_recommendation(tmp_path):
    store = Store(tmp_path / "few.db")
    run_id = two_judge_run(store)
    for spk, url, label, _ in pairs_by_label(store, run_id)[:MIN_PAIRS - 1]:
        review_pair(store, run_id, spk, url, label)
    c = compare_judges(store, run_id)
    assert c.score(SYNTH).pairs == MIN_PAIRS - 1 and c.score(SYNTH).agreement == 1.0
    assert c.recommended is None
    assert c.recommendation.startswith("Too few reviewed pairs to recommend a judge") and "at least 20" in \
        c.recommendation
    # with no reviews at all the figures are empty, not zero
    empty = compare_judges(store, synthesize_run(store, responses=1, statements=1, sources=1))
    assert empty.score("builtin").agreement is None and empty.recommended is None


def test_balanced_accuracy_needs_both_labels_among_the_reviewers(tmp_path):
    store = Store(tmp_path / "one.db")
    run_id = two_judge_run(store)
    for spk, url, label, _ in [p for p in pairs_by_label(store, run_id) if p[2] == N][:MIN_PAIRS]:
        review_pair(store, run_id, spk, url, N)
    c = compare_judges(store, run_id)
    assert c.score(SYNTH).balanced_accuracy is None and c.score(SYNTH).recall_supported is None
    assert c.recommended is None and "both kinds" in c.recommendation


def test_cli_judges_compare_prints_the_table_and_json(reviewed):
    store, run_id, _ = reviewed
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    base = [sys.executable, "-m", "sourcecheckup", "judges", "compare", run_id, "--db", str(store.path)]
    p = subprocess.run(base, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    lines = p.stdout.splitlines()
    row = next(line for line in lines if line.startswith(SYNTH))
    assert row.split()[:2] == [SYNTH, "24"] and "87.5% (95% CI 67.6%–97.3%)" in row and "85.6%" in row
    assert f"Recommended: {SYNTH}" in p.stdout
    p = subprocess.run(base + ["--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    by = {j["judge"]: j for j in out["judges"]}
    assert out["recommended"] == SYNTH and out["min_pairs"] == 20
    assert by[KEYWORD]["agree"] == 9 and by[KEYWORD]["kappa"] == 0.0 and len(by[KEYWORD]["disagreements"]) == 15
    assert by[SYNTH]["agreement"]["ci95"] == pytest.approx([0.6764, 0.9734], abs=2e-4)
    p = subprocess.run(base + ["--min-pairs", "30"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "Too few reviewed pairs" in p.stdout
    p = subprocess.run(base[:-3] + ["nosuchrun", "--db", str(store.path)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "nosuchrun" in p.stderr


def test_db_may_be_named_before_or_after_the_action(tmp_path):
    from sourcecheckup.cli import build_parser

    parser = build_parser()
    assert parser.parse_args(["judges", "--db", "a.db", "compare", "R"]).db == "a.db"
    assert parser.parse_args(["judges", "compare", "R", "--db", "b.db"]).db == "b.db"
    assert parser.parse_args(["judges", "compare"]).db is None


def test_terminal_view_prints_a_hostile_statement_as_inert_text():
    from sourcecheckup.review.judge_compare import Disagreement, JudgeComparison, JudgeScore

    d = Disagreement(1, "https://example.org/x\x1b]8;;evil\x07", "r1\r", "Safe \x1b[2J\x1b[31mred\nline", "",
                     S, N, {"ana": N})
    score = JudgeScore("j\x1b[0m", 1, 0, 0.0, (0.0, 0.79), None, None, None, 0.0,
                       {S: {S: 0, N: 1}, N: {S: 0, N: 0}}, 0, (d,))
    c = JudgeComparison("run", ("ana",), 1, 1, 1, (score,), None, "Too few reviewed pairs.")
    text = format_comparison(c)
    assert "\x1b" not in text and "\r" not in text and "\x07" not in text
    assert "Safe  [2J [31mred line" in text
