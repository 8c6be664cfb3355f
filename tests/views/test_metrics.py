"""The study's metrics from stored rows: consensus, honest handling of errors, bootstrap CIs."""
from __future__ import annotations

import pytest

from sourcecheckup.metrics import Consensus, assess_run, compute_metrics, metrics_by, pair_label, proportion
from sourcecheckup.models import (
    FetchStatus,
    Label,
    Response,
    Source,
    Statement,
    StatementCategory,
    StatementStatus,
    Verdict,
)
from sourcecheckup.store import Store

S, N, E = Label.SUPPORTED, Label.NOT_SUPPORTED, Label.JUDGE_ERROR


@pytest.mark.parametrize("labels,rule,expected", [
    ([S, N], Consensus.FIRST, S),
    ([N, S], Consensus.ANY, S),
    ([N, E], Consensus.ANY, E),
    ([N, N], Consensus.ANY, N),
    ([S, S], Consensus.ALL, S),
    ([S, E], Consensus.ALL, E),
    ([S, N, E], Consensus.ALL, N),
    ([S, S, N], Consensus.MAJORITY, S),
    ([S, N, E], Consensus.MAJORITY, Label.JUDGES_DISAGREE),   # a split with no majority is a disagreement
    ([S, N], Consensus.MAJORITY, Label.JUDGES_DISAGREE),
    ([S, E], Consensus.MAJORITY, E),                          # one judge failed: an error, not a split
    ([], Consensus.FIRST, None),
])
def test_consensus_rules_combine_judges_as_documented(labels, rule, expected):
    assert pair_label(labels, rule) is expected


def test_bootstrap_interval_is_seeded_and_brackets_the_value():
    outcomes = [True] * 30 + [False] * 70
    a, b = proportion(outcomes, seed=1), proportion(outcomes, seed=1)
    assert a == b and a.value == 0.3 and a.n == 100 and a.k == 30
    assert a.ci95[0] < 0.3 < a.ci95[1]
    assert 0.18 < a.ci95[0] and a.ci95[1] < 0.42
    assert proportion([]).value is None


def _build(tmp_path, judges=("j1",)):
    """Two responses: r1 fully supported by a live page, r2 with a dead link, a judge error and a disclaimer."""
    s = Store(tmp_path / "m.db")
    run = s.create_run(input="x", config={"consensus": "first"}, judges=list(judges), parser="builtin",
                       app_version="t")
    live, dead, other = "https://live.org/a", "https://dead.org/b", "https://other.org/c"
    s.add_responses(run, [
        Response(id="r1", text="...", citations=(live,), model="m1"),
        Response(id="r2", text="...", citations=(dead, other), model="m2"),
        Response(id="r3", text="...", citations=(dead,), model="m2"),
    ])
    rows = s.responses(run)
    ids = {}
    for url, status, text in ((live, FetchStatus.OK, "live text"), (dead, FetchStatus.DEAD, ""),
                              (other, FetchStatus.OK, "other text")):
        ids[url] = s.add_source(Source(url, status, text=text, sha256=url))
        s.link_run_source(run, url, ids[url])
    st1 = s.save_statements(run, rows[0].pk, [Statement(0, "a"), Statement(1, "b")])
    st2 = s.save_statements(run, rows[1].pk, [Statement(0, "c"), Statement(1, "d"),
                                              Statement(2, "see a doctor", StatementCategory.DISCLAIMER)])
    st3 = s.save_statements(run, rows[2].pk, [Statement(0, "e")])

    def v(spk, url, label, judge="j1"):
        s.save_verdict(run, spk, url, ids[url], Verdict(label, judge_id=judge))
    v(st1[0].pk, live, S)
    v(st1[1].pk, live, S)
    v(st2[0].pk, other, N)
    v(st2[1].pk, other, E)
    return s, run, st1, st2, st3


def test_judge_error_is_undecided_and_dead_links_are_no_readable_source(tmp_path):
    s, run, st1, st2, st3 = _build(tmp_path)
    data = s.load_run(run)
    assessed = assess_run(data)
    statuses = {a.row.pk: a.status for r in assessed for a in r.statements}
    assert statuses[st1[0].pk] is StatementStatus.SUPPORTED
    assert statuses[st2[0].pk] is StatementStatus.NOT_SUPPORTED
    assert statuses[st2[1].pk] is StatementStatus.JUDGE_ERROR      # never counted as not supported
    assert statuses[st2[2].pk] is StatementStatus.NOT_A_CLAIM
    assert statuses[st3[0].pk] is StatementStatus.NO_READABLE_SOURCE
    m = compute_metrics(data)
    # URLs: live ok, dead x2, other ok -> 2/4
    assert (m.url_validity.k, m.url_validity.n) == (2, 4)
    # statements decided: a, b supported; c not; e no readable source -> 2/4 (d undecided, disclaimer not a claim)
    assert (m.statement_support.k, m.statement_support.n) == (2, 4)
    # responses: r1 supported, r2 has an unsupported statement -> False, r3 False -> 1/3
    assert (m.response_support.k, m.response_support.n) == (1, 3)
    # valid sources: live used; other undecided (d is a judge error) -> unused 0/1
    assert (m.unused_sources.k, m.unused_sources.n) == (0, 1)
    assert m.counts["judge_errors"] == 1
    assert m.counts["fetch_outcomes"] == {"dead": 2, "ok": 2}
    assert m.counts["statement_status"]["no_readable_source"] == 1


def test_metrics_agree_with_independent_sql(tmp_path):
    s, run, *_ = _build(tmp_path)
    m = compute_metrics(s.load_run(run))
    valid_sql = s.db.execute("""
        SELECT SUM(src.status = 'ok' AND src.text != ''), COUNT(*)
        FROM responses r, json_each(r.citations) c
        JOIN run_sources rs ON rs.run_id = r.run_id AND rs.url = c.value
        JOIN sources src ON src.id = rs.source_id WHERE r.run_id = ?""", [run]).fetchone()
    assert (m.url_validity.k, m.url_validity.n) == tuple(valid_sql)


def test_pending_pairs_are_not_counted_until_every_judge_has_spoken(tmp_path):
    s, run, st1, *_ = _build(tmp_path, judges=("j1", "j2"))
    data = s.load_run(run)
    statuses = {a.row.pk: a.status for r in assess_run(data) for a in r.statements}
    assert statuses[st1[0].pk] is StatementStatus.PENDING
    s.save_verdict(run, st1[0].pk, "https://live.org/a", None, Verdict(N, judge_id="j2"))
    data = s.load_run(run)
    statuses = {a.row.pk: a for r in assess_run(data) for a in r.statements}
    assert statuses[st1[0].pk].status is StatementStatus.SUPPORTED   # first judge decides by default
    assert statuses[st1[0].pk].disagreement
    statuses = {a.row.pk: a for r in assess_run(data, Consensus.ALL) for a in r.statements}
    assert statuses[st1[0].pk].status is StatementStatus.NOT_SUPPORTED


def test_an_override_replaces_the_judges_on_that_pair(tmp_path):
    s, run, st1, st2, _ = _build(tmp_path)
    data = s.load_run(run)
    m = compute_metrics(data, overrides={(st2[0].pk, "https://other.org/c"): S,
                                         (st2[1].pk, "https://other.org/c"): S})
    assert (m.response_support.k, m.response_support.n) == (2, 3)


def test_metrics_by_model_split_the_same_rows(tmp_path):
    s, run, *_ = _build(tmp_path)
    by = metrics_by(s.load_run(run), lambda r: r.model)
    assert set(by) == {"m1", "m2"}
    assert (by["m1"].statement_support.k, by["m1"].statement_support.n) == (2, 2)
    assert (by["m2"].statement_support.k, by["m2"].statement_support.n) == (0, 2)


def test_percent_is_the_one_way_a_rate_is_written():
    from sourcecheckup.metrics import percent

    assert percent(0.825) == "82.5%" and percent(1 / 3, 0) == "33%"
    assert percent(None) == "n/a" and percent(None, missing="–") == "–"
    assert percent(0.04, signed=True) == "+4.0%" and percent(-0.125, signed=True) == "-12.5%"
