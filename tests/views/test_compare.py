"""Comparing two audits of the same answers: metric differences, changed statements and sources."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from sourcecheckup.compare import compare_runs, difference
from sourcecheckup.models import FetchStatus, Label, Source, sha256_bytes, utcnow
from sourcecheckup.store import Store
from tests.support.paths import ROOT
from tests.support.synth_run import synthesize_run


def test_difference_interval_brackets_the_difference_and_is_seeded():
    a, b = [True] * 50 + [False] * 50, [True] * 80 + [False] * 20
    d = difference(a, b, "x", seed=4)
    assert d.diff == pytest.approx(0.3) and d.ci95[0] < 0.3 < d.ci95[1] and d.ci95[0] > 0.1
    assert d == difference(a, b, "x", seed=4)
    assert difference([], b).diff is None


def test_compare_finds_a_changed_statement_and_a_changed_source(tmp_path):
    store = Store(tmp_path / "c.db")
    run_a = synthesize_run(store, responses=4, statements=2, sources=2)
    run_b = synthesize_run(store, responses=4, statements=2, sources=2)
    # in B, page 1 was rewritten and no longer supports r1's second statement
    url = "https://example.org/page/1"
    text = "A rewritten page."
    sid = store.add_source(Source(url=url, status=FetchStatus.OK, text=text, sha256=sha256_bytes(text.encode()),
                                  fetched_at=utcnow()))
    store.link_run_source(run_b, url, sid)
    spk = store.db.execute("SELECT st.pk FROM statements st JOIN responses r ON r.pk = st.response_pk "
                           "WHERE r.run_id = ? AND r.rid = 'r1' AND st.ord = 1", [run_b]).fetchone()[0]
    with store.db.conn:
        store.db.execute("UPDATE verdicts SET label = ? WHERE run_id = ? AND statement_pk = ? AND url = ?",
                         [Label.NOT_SUPPORTED.value, run_b, spk, url])
    result = compare_runs(store, run_a, run_b)
    assert result["statements_matched"] == 8
    changed = result["changed_statements"]
    assert [(c["response_id"], c["status_a"], c["status_b"]) for c in changed] == [("r1", "supported", "not_supported")]
    assert [s["url"] for s in result["changed_sources"]] == [url] and result["changed_sources"][0]["content_changed"]
    diff = {d["metric"]: d for d in result["differences"]}["statement_support"]
    assert diff["a"] == 1.0 and diff["b"] == pytest.approx(7 / 8) and diff["diff"] == pytest.approx(-1 / 8)
    p = subprocess.run([sys.executable, "-m", "sourcecheckup", "compare", run_a, run_b, "--db", str(store.path)],
                       cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert "supported -> not_supported" in p.stdout and url in p.stdout and "-12.5" in p.stdout


def test_a_refused_source_read_later_is_not_content_changed_and_not_a_support_change(tmp_path):
    """Issue 28 item 13: refused in A, fetched in B. The source's outcome moved (its content did not
    "change"); a claim that had no readable source in A and is not supported in B is named as that
    move, and only the claim B now supports counts as a change of support."""
    store = Store(tmp_path / "c.db")
    run_a = synthesize_run(store, responses=1, statements=2, sources=1, base_url="http://10.1.2.3/x")
    run_b = synthesize_run(store, responses=1, statements=2, sources=1, base_url="http://10.1.2.3/x")
    url = "http://10.1.2.3/x/0"
    sid = store.add_source(Source(url=url, status=FetchStatus.UNSAFE_URL, fetched_at=utcnow(),
                                  reason="10.1.2.3 is a private address; add --allow-host 10.1.2.3 to fetch it anyway"))
    store.link_run_source(run_a, url, sid)
    with store.db.conn:   # A never judged the refused page; in B the page does not support the second claim
        store.db.execute("DELETE FROM verdicts WHERE run_id = ?", [run_a])
        store.db.execute("UPDATE verdicts SET label = ? WHERE run_id = ? AND statement_pk IN (SELECT pk FROM "
                         "statements WHERE run_id = ? AND ord = 1)", [Label.NOT_SUPPORTED.value, run_b, run_b])
    result = compare_runs(store, run_a, run_b)
    [source] = result["changed_sources"]
    assert not source["content_changed"] and source["change"] == "refused (unsafe address) → full text"
    moves = {c["status_b"]: c["move"] for c in result["changed_statements"]}
    assert moves == {"supported": "support_changed", "not_supported": "source_now_read"}
    assert result["support_changed"] == 1
    p = subprocess.run([sys.executable, "-m", "sourcecheckup", "compare", run_a, run_b, "--db", str(store.path)],
                       cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True,
                       timeout=60)
    assert p.returncode == 0, p.stderr
    assert "support changed for 1; other status moves: 1 no readable source → judged" in p.stdout
    assert "content changed" not in p.stdout and "(refused (unsafe address) → full text)" in p.stdout
