"""Review samples: stratified, seeded draws; the CSV round trip back into the reviews table."""
from __future__ import annotations

import csv
import os
import subprocess
import sys
from collections import Counter

import pytest

from sourcecheckup.review import reviews
from sourcecheckup.review.sample import SampleError, draw_sample, import_reviews_csv, write_sample_csv
from sourcecheckup.store import Store
from tests.support.paths import ROOT
from tests.support.synth_run import synthesize_run


@pytest.fixture()
def run(tmp_path):
    store = Store(tmp_path / "r.db")
    # 10 responses x 4 statements x 3 sources: each statement has 1 supported and 2 unsupported pairs
    return store, synthesize_run(store, responses=10, statements=4, sources=3)


def _keys(pairs):
    return [(p.statement_pk, p.url) for p in pairs]


def test_sample_is_stratified_by_the_judges_label(run):
    store, run_id = run
    prop = draw_sample(store, run_id, 30, stratify="label", seed=1)
    assert Counter(p.stratum for p in prop) == {"not_supported": 20, "supported": 10}
    assert all(p.stratum == p.judge_label for p in prop)
    equal = draw_sample(store, run_id, 30, stratify="label", seed=1, allocation="equal", name="eq")
    assert Counter(p.stratum for p in equal) == {"not_supported": 15, "supported": 15}
    assert len(set(_keys(equal))) == 30


def test_same_seed_draws_the_same_pairs_and_another_seed_does_not(run):
    store, run_id = run
    a = draw_sample(store, run_id, 12, seed=7, name="a")
    b = draw_sample(store, run_id, 12, seed=7, name="b")
    c = draw_sample(store, run_id, 12, seed=8, name="c")
    assert _keys(a) == _keys(b) and _keys(a) != _keys(c)
    assert _keys(draw_sample(store, run_id, 12, seed=7, name="a")) == _keys(a)   # a named sample is stable
    with pytest.raises(SampleError):
        draw_sample(store, run_id, 5, stratify="colour")


def test_review_csv_round_trip_through_the_cli_names_bad_rows(run, tmp_path):
    store, run_id = run
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    sheet = tmp_path / "sample.csv"
    p = subprocess.run([sys.executable, "-m", "sourcecheckup", "review-sample", run_id, "--n", "6", "--seed", "1",
                        "--blind", "--db", str(store.path), "-o", str(sheet)], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    rows = list(csv.DictReader(sheet.open(encoding="utf-8")))
    assert len(rows) == 6 and all(r["judge_label"] == "" for r in rows)       # blind: the judge is hidden
    assert all(r["statement"] and r["source_excerpt"] for r in rows)
    rows[0]["label"] = "supported"
    rows[1]["label"] = "Not supported"
    rows[2]["label"] = "unsure"
    rows[3]["label"] = "maybe"                                                 # bad label
    rows[4]["label"] = "supported"
    rows[4]["pair_id"] = "99999"                                               # no such pair
    with sheet.open("w", encoding="utf-8", newline="") as fh:                  # rows[5] stays unlabelled
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    p = subprocess.run([sys.executable, "-m", "sourcecheckup", "review-import", str(sheet), "--reviewer", "dr b",
                        "--db", str(store.path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    assert "imported 3 review(s)" in p.stdout and "1 row(s) without a label" in p.stdout
    assert "sample.csv row 5 (pair" in p.stderr and "'maybe'" in p.stderr
    assert "sample.csv row 6 (pair 99999)" in p.stderr
    got = sorted((r.label.value, r.blind, r.reviewer) for r in reviews(store, run_id))
    assert got == [("not_supported", True, "dr b"), ("supported", True, "dr b"), ("unsure", True, "dr b")]


def test_several_reviewers_can_label_the_same_pairs(run, tmp_path):
    store, run_id = run
    pairs = draw_sample(store, run_id, 4, seed=2)
    sheet = tmp_path / "s.csv"
    write_sample_csv(pairs, sheet)
    rows = list(csv.DictReader(sheet.open(encoding="utf-8")))
    assert rows[0]["judge_label"] in ("supported", "not_supported")         # not blind: the judge is shown
    for r in rows:
        r["label"] = r["judge_label"]
    with sheet.open("w", encoding="utf-8", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    for who in ("ana", "ben"):
        assert import_reviews_csv(store, sheet, who).imported == 4
    assert len(reviews(store, run_id)) == 8
    with pytest.raises(SampleError, match="reviewer"):
        import_reviews_csv(store, sheet, "  ")
