"""Judge/reviewer agreement: kappa by hand, bootstrap intervals, majority, overturned verdicts."""
from __future__ import annotations

import pytest

from sourcecheckup.report import build_report, report_html
from sourcecheckup.review import add_review
from sourcecheckup.review.agreement import MAJORITY, agreement_report, cohen_kappa, compare_raters, percent_agreement
from sourcecheckup.store import Store
from tests.support.synth_run import synthesize_run

S, N = "supported", "not_supported"


def test_kappa_matches_a_hand_computed_example():
    # 4 S/S, 2 S/N, 1 N/S, 3 N/N: po = 0.7; pe = 0.6*0.5 + 0.4*0.5 = 0.5; kappa = (0.7 - 0.5) / 0.5 = 0.4
    a = [S] * 6 + [N] * 4
    b = [S] * 4 + [N] * 2 + [S] + [N] * 3
    assert percent_agreement(a, b) == pytest.approx(0.7)
    assert cohen_kappa(a, b) == pytest.approx(0.4)
    res = compare_raters(a, b, "judge", "dr a", "judge-reviewer", seed=3)
    assert res.confusion == {S: {S: 4, N: 2}, N: {S: 1, N: 3}}
    assert res.agreement.ci95[0] <= 0.7 <= res.agreement.ci95[1]
    assert res.kappa.ci95[0] <= 0.4 <= res.kappa.ci95[1]
    assert res == compare_raters(a, b, "judge", "dr a", "judge-reviewer", seed=3)   # seeded


def test_kappa_is_undefined_when_both_raters_use_one_label_only():
    assert cohen_kappa([S, S], [S, S]) is None
    assert cohen_kappa([S, N, S], [S, N, S]) == pytest.approx(1.0)
    assert compare_raters([], [], "a", "b", "x").n == 0


def test_agreement_report_compares_judges_reviewers_and_majority(tmp_path):
    store = Store(tmp_path / "a.db")
    run_id = synthesize_run(store, responses=2, statements=2, sources=2, judges=("j1", "j2"))
    data = store.load_run(run_id)
    pairs = sorted((spk, v.url, v.verdict.label.value) for spk, vs in data.verdicts.items() for v in vs
                   if v.verdict.judge_id == "j1")
    assert len(pairs) == 8
    flipped = {S: N, N: S}
    for i, (spk, url, label) in enumerate(pairs):
        add_review(store, run_id, spk, url, "ana", label)                       # always agrees with the judge
        add_review(store, run_id, spk, url, "ben", flipped[label] if i < 2 else label)
        add_review(store, run_id, spk, url, "cy", flipped[label] if i < 2 else ("unsure" if i == 2 else label))
    rep = agreement_report(store, store.load_run(run_id))
    assert rep["pairs_reviewed"] == 8 and rep["unsure"] == 1 and rep["reviewers"] == ["ana", "ben", "cy"]
    by = {(c["rater_a"], c["rater_b"]): c for c in rep["comparisons"]}
    assert by[("j1", "ana")]["agreement"]["value"] == 1.0
    assert by[("j1", "ben")]["agreement"]["value"] == pytest.approx(6 / 8)
    assert by[("j1", "cy")]["n"] == 7                                          # 'unsure' is not a label
    assert by[("j1", MAJORITY)]["agreement"]["value"] == pytest.approx(6 / 8)  # ben + cy outvote ana twice
    assert by[("j1", "j2")]["kind"] == "judge-judge" and by[("j1", "j2")]["agreement"]["value"] == 1.0
    # 8 pairs: fewer than kappa's stated minimum, so no kappa and no interval for it
    assert by[("j1", "j2")]["kappa"] == {"value": None, "ci95": [None, None], "ci_method": "bootstrap_exact_hull",
                                         "min_pairs": 10}
    assert len(rep["overturned"]) == 4                                         # 2 pairs x 2 judges
    assert {(o["statement_pk"], o["url"]) for o in rep["overturned"]} == {(p[0], p[1]) for p in pairs[:2]}
    report = build_report(store, run_id)
    assert report["review"]["overrides"] == 8
    html = report_html(report)
    assert "Verdicts overturned by reviewers (4)" in html and "Cohen" in html


def test_agreement_on_a_few_pairs_that_all_agree_has_an_honest_interval():
    from sourcecheckup.review.agreement import compare_raters

    r = compare_raters(["supported"] * 4, ["supported"] * 4, "judge", "Dr A", "judge-reviewer")
    lo, hi = r.agreement.ci95
    assert r.agreement.value == 1.0 and hi == 1.0 and lo < 0.6     # Wilson: about 51-100%, never 100-100%
