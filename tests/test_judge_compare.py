"""Which judge to trust: each judge of a run against the reviewers' majority, figures checked by hand."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from sourcecheckup.evidence import SourceText
from sourcecheckup.judge_compare import MIN_PAIRS, compare_judges, format_comparison
from sourcecheckup.models import Label
from sourcecheckup.review import add_review
from sourcecheckup.store import Store
from tests.support.fake_judge import KeywordJudge
from tests.support.synth_run import one_verdict, synthesize_run

ROOT = Path(__file__).resolve().parent.parent
S, N = "supported", "not_supported"
FLIP = {S: N, N: S}
SYNTH, KEYWORD = "synthetic", "keyword:0"


def _two_judge_run(store: Store) -> str:
    """10 responses x 4 statements x 3 sources; 'synthetic' supports 1 pair in 3, the real keyword judge
    (every statement word in the source) calls every pair supported, since each page holds every sentence."""
    run_id = synthesize_run(store, responses=10, statements=4, sources=3, judges=(SYNTH, KEYWORD))
    data = store.load_run(run_id)
    judge = KeywordJudge()
    rows = [(row, v) for rows in data.statements.values() for row in rows
            for v in data.verdicts[row.pk] if v.verdict.judge_id == KEYWORD]
    for row, v in rows:
        src = data.sources[v.url]
        verdict = asyncio.run(judge.verify(row.statement.text, SourceText.from_source(src.source)))
        store.save_verdict(run_id, row.pk, v.url, src.id, verdict)
    return run_id


def _pairs(store: Store, run_id: str) -> list[tuple[int, str, str, int]]:
    """(statement_pk, url, the synthetic judge's label, source id), sorted."""
    data = store.load_run(run_id)
    return sorted((spk, v.url, v.verdict.label.value, data.sources[v.url].id)
                  for spk, vs in data.verdicts.items() for v in vs if v.verdict.judge_id == SYNTH)


def _review(store: Store, run_id: str, spk: int, url: str, majority: str, third: str = "") -> None:
    """ana and ben give the majority; cy gives ``third`` (the other label, or unsure) when asked."""
    add_review(store, run_id, spk, url, "ana", majority)
    add_review(store, run_id, spk, url, "ben", majority)
    if third:
        add_review(store, run_id, spk, url, "cy", third)


@pytest.fixture()
def reviewed(tmp_path):
    """24 compared pairs: 8 the synthetic judge calls supported (the reviewers overturn 1), 16 it calls
    not supported (the reviewers overturn 2); one more pair both judges erred on; one pair with a tie."""
    store = Store(tmp_path / "j.db")
    run_id = _two_judge_run(store)
    pairs = _pairs(store, run_id)
    sup = [p for p in pairs if p[2] == S][:9]
    nos = [p for p in pairs if p[2] == N][:18]
    flipped = {sup[0][:2], nos[0][:2], nos[1][:2]}
    for i, (spk, url, label, _) in enumerate(sup[:8] + nos[:16]):
        majority = FLIP[label] if (spk, url) in flipped else label
        _review(store, run_id, spk, url, majority, third=("unsure" if i == 3 else FLIP[majority] if i % 5 == 0 else ""))
    spk, url, _, sid = nos[16]                                  # both judges erred: no label to compare
    for judge in (SYNTH, KEYWORD):
        store.save_verdict(run_id, spk, url, sid, _error(judge))
    _review(store, run_id, spk, url, N)
    spk, url, _, _ = nos[17]                                    # ana and ben disagree: no majority
    add_review(store, run_id, spk, url, "ana", S)
    add_review(store, run_id, spk, url, "ben", N)
    return store, run_id, flipped


def _error(judge: str):
    from sourcecheckup.models import Verdict

    return Verdict.error(judge, "scripted timeout")


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
    # Wilson: centre (p + z²/2n) / (1 + z²/n), half z·sqrt(p(1-p)/n + z²/4n²) / (1 + z²/n), z = 1.96
    assert synth.agreement_ci95 == pytest.approx((0.6900, 0.9566), abs=2e-4)
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
    assert "87.5% (95% CI 69.0%–95.7%)" in text and "0.73" in text and "Where keyword:0 disagrees" in text


def test_too_few_reviewed_pairs_gives_no_recommendation(tmp_path):
    store = Store(tmp_path / "few.db")
    run_id = _two_judge_run(store)
    for spk, url, label, _ in _pairs(store, run_id)[:MIN_PAIRS - 1]:
        _review(store, run_id, spk, url, label)
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
    run_id = _two_judge_run(store)
    for spk, url, label, _ in [p for p in _pairs(store, run_id) if p[2] == N][:MIN_PAIRS]:
        _review(store, run_id, spk, url, N)
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
    assert row.split()[:2] == [SYNTH, "24"] and "87.5% (95% CI 69.0%–95.7%)" in row and "85.6%" in row
    assert f"Recommended: {SYNTH}" in p.stdout
    p = subprocess.run(base + ["--json"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    by = {j["judge"]: j for j in out["judges"]}
    assert out["recommended"] == SYNTH and out["min_pairs"] == 20
    assert by[KEYWORD]["agree"] == 9 and by[KEYWORD]["kappa"] == 0.0 and len(by[KEYWORD]["disagreements"]) == 15
    assert by[SYNTH]["agreement"]["ci95"] == pytest.approx([0.6900, 0.9566], abs=2e-4)
    p = subprocess.run(base + ["--min-pairs", "30"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0 and "Too few reviewed pairs" in p.stdout
    p = subprocess.run(base[:-3] + ["nosuchrun", "--db", str(store.path)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 2 and "nosuchrun" in p.stderr
