"""`sourcecheckup demo`: the bundled sample, fully offline, ends with a report."""
from __future__ import annotations

import json

from tests.test_cli import sc


def test_demo_audits_the_bundled_sample_offline_and_prints_the_report_path(tmp_path):
    out = tmp_path / "demo.html"
    p = sc("demo", "--db", str(tmp_path / "demo.db"), "-o", str(out), timeout=600,
           env={"SOURCECHECKUP_PLUGINS": ""})
    assert p.returncode == 0, p.stderr
    assert f"demo report: {out}" in p.stdout
    assert "screening" in out.read_text()            # the built-in judge says what it is
    report = json.loads(out.with_suffix(".json").read_text())
    assert report["run"]["judges"] == ["builtin"]
    assert len(report["responses"]) == 10 and report["run"]["n_skipped"] == 0
    sources = {s["url"]: s for r in report["responses"] for s in r["sources"]}
    outcomes = {s["status"] for s in sources.values()}
    assert {"ok", "paywalled", "dead"} <= outcomes        # teaser page and soft 404 are told apart
    assert any("possible_injection" in s["flags"] for s in sources.values())
    assert all(s["status"] != "not_fetched" for s in sources.values())
    categories = {st["category"] for r in report["responses"] for st in r["statements"]}
    assert {"informative", "acknowledgement", "disclaimer"} <= categories
    # every verdict's quote was checked against the source text
    assert all(v["quote_found"] in (True, False, None)
               for r in report["responses"] for st in r["statements"] for v in st["verdicts"])
    m = report["metrics"]
    assert m["url_validity"]["n"] == 18 and m["url_validity"]["k"] == 17
