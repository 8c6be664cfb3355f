"""Issue 18 end to end: one answer citing a real, a mismatched, a fabricated and a retracted reference
gets four different, correct outcomes through the real CLI, against fake Crossref, PubMed and OpenAlex
servers and the fixture site as the DOI resolver; the verified paper's abstract is read and judged."""
from __future__ import annotations

import json
from pathlib import Path

from sourcecheckup.models import FetchStatus
from sourcecheckup.references import ReferenceStatus
from sourcecheckup.store import Store
from tests.cli.test_cli import sc
from tests.support.fake_scholarly import FOUR_REFERENCES_ANSWER as ANSWER
from tests.support.fake_scholarly import RETRACTION_CSV


def _audit(tmp_path: Path, site: str, scholarly, *extra: str):
    answer = tmp_path / "answer.md"
    answer.write_text(ANSWER)
    db = tmp_path / "refs.db"
    run = sc("audit", str(answer), "--db", str(db), "--judge", "builtin", "--doi-resolver", f"{site}/doi/",
             "--allow-host", "127.0.0.1", "--browser", "never", "--no-archive", "-q",
             "--crossref-endpoint", scholarly.crossref, "--pubmed-endpoint", scholarly.pubmed,
             "--openalex-endpoint", scholarly.openalex, "--retraction-data", str(RETRACTION_CSV),
             "--contact-email", "librarian@example.org", *extra,
             env={"SOURCECHECKUP_REFERENCES": "on"}, timeout=240)
    assert run.returncode in (0, 1), run.stderr      # 1: some statements are unsupported
    return db


def test_four_references_get_four_outcomes_with_their_evidence(tmp_path, site, scholarly):
    db = _audit(tmp_path, site, scholarly)
    store = Store(db)
    run_id = store.latest_run_id()
    checks = {c.reference.raw.split(".")[0]: c for c in store.reference_checks(run_id).values()}
    by_author = {k.split(",")[0].split()[0]: v for k, v in checks.items()}
    assert set(by_author) == {"Zinman", "Smith", "Johnson", "Mehra"}, list(checks)

    real, wrong, made_up, retracted = (by_author[k] for k in ("Zinman", "Smith", "Johnson", "Mehra"))
    assert real.status is ReferenceStatus.VERIFIED and not real.retracted
    assert wrong.status is ReferenceStatus.MISMATCH
    assert "LEADER" in wrong.matched.title or "Liraglutide" in wrong.matched.title
    assert any(c.field == "title" and not c.agrees for c in wrong.comparisons)
    assert made_up.status is ReferenceStatus.NOT_FOUND and "fabricated" in made_up.evidence
    assert retracted.status is ReferenceStatus.VERIFIED and retracted.retracted
    assert {n.source for n in retracted.notices} >= {"retraction_watch"}

    # the verified paper's abstract was read through its DOI and judged as the source
    data = store.load_run(run_id)
    sources = {url: row.source for url, row in data.sources.items()}
    empa = next(s for url, s in sources.items() if "1504720" in url.lower())
    assert empa.status is FetchStatus.ABSTRACT_ONLY and "7020 patients" in empa.text
    labels = {(st.statement.text.split()[0], v.url): v.verdict.label.value
              for st in (s for rows in data.statements.values() for s in rows)
              for v in data.verdicts.get(st.pk, [])}
    empa_url = next(u for u in sources if "1504720" in u.lower())
    assert labels[("Empagliflozin", empa_url)] == "supported", labels
    # a fabricated reference is a failed source with its evidence, never a verdict
    fake_url = next(u for u in sources if u.startswith("ref:Johnson"))
    assert sources[fake_url].status is FetchStatus.DEAD and "fabricated" in sources[fake_url].reason
    assert not any(url == fake_url for (_, url) in labels)

    # the CLI lists each outcome with its evidence; --json carries the matched record
    listing = sc("references", run_id, "--db", str(db))
    assert listing.returncode == 0, listing.stderr
    for word in ("verified", "mismatch", "not_found", "retract"):
        assert word in listing.stdout.lower(), listing.stdout
    as_json = sc("references", run_id, "--db", str(db), "--json")
    rows = json.loads(as_json.stdout)
    assert sorted(r["status"] for r in (rows if isinstance(rows, list) else rows["references"])) == \
        ["mismatch", "not_found", "verified", "verified"]

    # the JSON report (written a page at a time) carries each cited reference's check and the references figures,
    # and verify-report recomputes them from the database without a difference
    report_path = tmp_path / "report.json"
    written = sc("report", run_id, "--db", str(db), "--format", "json", "-o", str(report_path))
    assert written.returncode == 0, written.stderr
    report = json.loads(report_path.read_text(encoding="utf-8"))
    cited = {s["url"]: s["reference"] for r in report["responses"] for s in r["sources"]}
    by_check = {url: (check.reference.raw.split(",")[0].split()[0]) for url, check in
                store.reference_checks(run_id).items()}
    assert set(by_check) <= set(cited)
    assert {by_check[u]: (cited[u]["status"], cited[u]["retracted"]) for u in by_check} == {
        "Zinman": ("verified", False), "Smith": ("mismatch", False), "Johnson": ("not_found", False),
        "Mehra": ("verified", True)}
    counts = report["references"]["counts"]
    assert (counts["checked"], counts["status"]["mismatch"], counts["status"]["not_found"], counts["retracted"]) \
        == (4, 1, 1, 1), counts
    assert list(report).index("references") == list(report).index("by_model_with_reviews") + 1 == list(report).index("by_model") + 2
    verified = sc("verify-report", str(report_path), "--db", str(db))
    assert verified.returncode == 0, verified.stdout + verified.stderr
    assert verified.stdout.startswith("OK: every metric") and "MISMATCH" not in verified.stdout, verified.stdout


def test_metadata_services_that_fail_are_lookup_failed_never_not_found(tmp_path, site, scholarly):
    scholarly.down = {"crossref", "pubmed", "openalex"}
    try:
        db = _audit(tmp_path, site, scholarly)
    finally:
        scholarly.down = set()
    store = Store(db)
    statuses = {c.status for c in store.reference_checks(store.latest_run_id()).values()}
    assert ReferenceStatus.NOT_FOUND not in statuses
    assert statuses == {ReferenceStatus.LOOKUP_FAILED}
