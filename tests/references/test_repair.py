"""After the audit, the repair (issue 44): sources found for unsupported statements, open-access copies,
against fake PubMed / Europe PMC / Crossref / Unpaywall on 127.0.0.1."""
from __future__ import annotations

import asyncio
import json

import pytest

import tests.support.fake_judge  # noqa: F401  (registers the keyword judge)
from sourcecheckup.cli import main
from sourcecheckup.fetching import make_fetcher
from sourcecheckup.fetching.base import FetchOptions
from sourcecheckup.models import FetchStatus, Label, Response, Source, Statement, Verdict, sha256_bytes, utcnow
from sourcecheckup.references.model import LookupSettings
from sourcecheckup.references.repair import (
    NO_SOURCE,
    RepairClient,
    RepairError,
    efetch_articles,
    run_repair,
    statement_query,
)
from sourcecheckup.store import Store
from tests.support.fake_repair import ASPREE_BLEEDING, EMPA, VITAL, efetch_xml

S_EMPA = "Empagliflozin reduced cardiovascular death by 38% in type 2 diabetes."
S_VITAL = "Vitamin D supplementation did not reduce fractures in older adults."
S_NONE = "Daily flossing prevents heart attacks in smokers."
S_ASPREE = "Aspirin raised major hemorrhage risk in healthy elderly adults."
BLOG = "https://example.org/blog/health-tips"
PAYWALLED = f"https://doi.org/{ASPREE_BLEEDING['doi']}"


def seed(store: Store, config: dict | None = None) -> str:
    """One answer citing a blog and a paywalled DOI; four statements neither supports."""
    run_id = store.create_run(input="repair test", config={"consensus": "first", **(config or {})},
                              judges=["keyword:0"], parser="builtin", app_version="test")
    pages = {BLOG: "Tips for a healthy life: eat well.", PAYWALLED: "Subscribe to read the full article."}
    ids = {}
    for url, text in pages.items():
        sid = store.add_source(Source(url=url, status=FetchStatus.OK, reason="HTTP 200 OK", http_status=200,
                                      final_url=url, title="page", text=text, sha256=sha256_bytes(text.encode()),
                                      fetched_at=utcnow()))
        store.link_run_source(run_id, url, sid)
        ids[url] = sid
    statements = (S_EMPA, S_VITAL, S_NONE, S_ASPREE)
    store.add_responses(run_id, [Response(id="r1", text=" ".join(statements), citations=[BLOG, PAYWALLED],
                                          model="m", question="q")])
    row = store.responses(run_id)[0]
    for s in store.save_statements(run_id, row.pk, [Statement(index=i, text=t, cited=(1 if i == 3 else 0,))
                                                    for i, t in enumerate(statements)]):
        for url in pages:
            store.save_verdict(run_id, s.pk, url, ids[url], Verdict(label=Label.NOT_SUPPORTED, score=0.1,
                                                                    rationale="seeded", judge_id="keyword:0"))
    store.mark_response_done(row.pk)
    store.set_run_status(run_id, "completed")
    return run_id


def client(fake, email: str = "librarian@example.org", store: Store | None = None) -> RepairClient:
    settings = LookupSettings(crossref_endpoint=fake.crossref, pubmed_endpoint=fake.pubmed, contact_email=email,
                              timeout_s=5, requests_per_second=20)
    return RepairClient(settings, store, europepmc_endpoint=fake.europepmc, unpaywall_endpoint=fake.unpaywall)


async def repair(store: Store, run_id: str, fake, **kw):
    fetcher = make_fetcher(FetchOptions(allow_hosts=("127.0.0.1",), browser="never"))
    try:
        async with client(fake) as c:
            return await run_repair(store, run_id, c, fetcher=fetcher, **kw)
    finally:
        await fetcher.aclose()


def by_text(store: Store, run_id: str) -> dict[str, dict]:
    return {r["statement"] + "|" + r["kind"]: r for r in store.repairs(run_id)}


def test_query_keeps_named_bodies_numbers_and_key_terms():
    q = statement_query("The WHO says empagliflozin reduced cardiovascular death by 38% in type 2 diabetes.")
    assert "WHO" in q.split() and "38%" in q.split() and "empagliflozin" in q.split()
    assert "the" not in q.lower().split() and "by" not in q.split()


def test_efetch_xml_read_with_its_ids():
    [c] = efetch_articles(efetch_xml([VITAL]))
    assert (c.pmid, c.doi, c.pmcid) == (VITAL["pmid"], VITAL["doi"], VITAL["pmcid"])
    assert c.text == VITAL["abstract"] and c.text_kind == "abstract"


def test_repair_offers_the_right_paper_and_says_none_where_none_exists(repair_servers, tmp_path):
    store = Store(tmp_path / "r.db")
    run_id = seed(store)
    asyncio.run(repair(store, run_id, repair_servers))
    rows = by_text(store, run_id)
    empa = rows[S_EMPA + "|find"]
    offered = next(c for c in empa["candidates"] if c["key"] == empa["offered_key"])
    assert empa["status"] == "offered" and offered["doi"] == EMPA["doi"] and offered["label"] == "supported"
    assert offered["quote"] and offered["quote"] in EMPA["abstract"] and "PubMed search" in offered["found_by"]
    vital = rows[S_VITAL + "|find"]
    offered = next(c for c in vital["candidates"] if c["key"] == vital["offered_key"])
    # PubMed's abstract does not say it; Europe PMC's open-access full text does
    assert offered["pmcid"] == VITAL["pmcid"] and offered["text_kind"] == "full_text"
    assert any(c["label"] == "not_supported" and c["pmid"] == VITAL["pmid"] for c in vital["candidates"])
    none = rows[S_NONE + "|find"]
    assert none["status"] == "none_found" and none["offered_key"] == ""
    # nothing found with every term: asked again with the key few before saying so
    short = statement_query(S_NONE, 4)
    assert any(q.get("term") == [short] for _, _, q in repair_servers.requests_to("eutils"))
    # nothing offered without a supported verdict and a found quote
    for r in store.repairs(run_id):
        for c in r["candidates"]:
            if c["key"] == r["offered_key"]:
                assert c["supports"] and c["label"] == "supported" and c["quote"]
    # polite: NCBI's tool and email on every E-utilities request
    for _, _, q in repair_servers.requests_to("eutils"):
        assert q["tool"] == ["sourcecheckup"] and q["email"] == ["librarian@example.org"]


def test_resume_asks_nothing_again(repair_servers, tmp_path):
    store = Store(tmp_path / "r.db")
    run_id = seed(store)
    asyncio.run(repair(store, run_id, repair_servers))
    before = len(repair_servers.log)
    asyncio.run(repair(store, run_id, repair_servers))
    assert len(repair_servers.log) == before


def test_open_access_copy_of_a_paywalled_doi_is_judged(repair_servers, tmp_path):
    store = Store(tmp_path / "r.db")
    run_id = seed(store)
    statement = next(r.pk for r in store.statements_for(store.responses(run_id)[0].pk) if r.statement.index == 3)
    asyncio.run(repair(store, run_id, repair_servers, statement_pk=statement, open_access=True))
    oa = by_text(store, run_id)[S_ASPREE + "|open_access"]
    offered = next(c for c in oa["candidates"] if c["key"] == oa["offered_key"])
    assert oa["status"] == "offered" and offered["label"] == "supported"
    assert f"open-access copy of {PAYWALLED}" in offered["found_by"] and "Unpaywall" in offered["found_by"]
    assert "Aspirin raised major hemorrhage risk in healthy elderly adults" in offered["quote"]
    [(_, _, q)] = repair_servers.requests_to("unpaywall")
    assert q["email"] == ["librarian@example.org"]


def test_rate_limited_service_named_and_nothing_lost(repair_servers, tmp_path):
    store = Store(tmp_path / "r.db")
    run_id = seed(store)
    repair_servers.rate_limit = {"eutils"}
    statement = next(r.pk for r in store.statements_for(store.responses(run_id)[0].pk) if r.statement.index == 1)
    asyncio.run(repair(store, run_id, repair_servers, statement_pk=statement))
    vital = by_text(store, run_id)[S_VITAL + "|find"]
    assert vital["status"] == "offered"   # Europe PMC still answered: what it found is kept
    assert any("pubmed: rate limited (HTTP 429)" in e for e in vital["errors"])
    repair_servers.rate_limit = set()
    repair_servers.down = {"europepmc", "crossref"}
    s_none = next(r.pk for r in store.statements_for(store.responses(run_id)[0].pk) if r.statement.index == 2)
    asyncio.run(repair(store, run_id, repair_servers, statement_pk=s_none))
    none = by_text(store, run_id)[S_NONE + "|find"]
    assert none["status"] == "incomplete" and len(none["errors"]) == 2   # never "none found" when not asked
    repair_servers.down = set()
    asyncio.run(repair(store, run_id, repair_servers, statement_pk=s_none))
    assert by_text(store, run_id)[S_NONE + "|find"]["status"] == "none_found"


def test_offline_run_says_repair_needs_the_network(tmp_path):
    store = Store(tmp_path / "r.db")
    run_id = seed(store, {"fetch": {"sources_dir": str(tmp_path)}})
    settings = LookupSettings(crossref_endpoint="http://127.0.0.1:9", pubmed_endpoint="http://127.0.0.1:9")

    async def go():
        async with RepairClient(settings) as c:
            await run_repair(store, run_id, c)
    with pytest.raises(RepairError, match="repair needs the network"):
        asyncio.run(go())


def test_cli_repair(repair_servers, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("SOURCECHECKUP_REFERENCES", "on")   # tests keep lookups off unless they serve them
    db = tmp_path / "r.db"
    store = Store(db)
    run_id = seed(store)
    f = repair_servers
    rc = main(["repair", run_id, "--db", str(db), "--open-access", "--contact-email", "librarian@example.org",
               "--pubmed-endpoint", f.pubmed, "--crossref-endpoint", f.crossref, "--europepmc-endpoint",
               f.europepmc, "--unpaywall-endpoint", f.unpaywall, "--allow-host", "127.0.0.1", "--lookup-rate", "20"])
    cap = capsys.readouterr()
    out = cap.out
    assert rc == 0, out + cap.err
    assert f"https://doi.org/{EMPA['doi']}" in out and NO_SOURCE in out and "open-access copy of" in out
    rc = main(["repair", run_id, "--db", str(db), "--json"])
    data = json.loads(capsys.readouterr().out)
    assert rc == 0 and {r["status"] for r in data["repairs"]} >= {"offered", "none_found"}


def test_cli_repair_refuses_when_lookups_are_off(tmp_path, capsys):
    db = tmp_path / "r.db"
    run_id = seed(Store(db))
    assert main(["repair", run_id, "--db", str(db)]) == 1
    assert "repair needs the network" in capsys.readouterr().err


def test_report_shows_the_repairs_and_verify_report_checks_them(repair_servers, tmp_path, capsys):
    from sourcecheckup.report import write_report

    db = tmp_path / "r.db"
    store = Store(db)
    run_id = seed(store)
    asyncio.run(repair(store, run_id, repair_servers, open_access=True))
    path = tmp_path / "report.json"
    write_report(store, run_id, path, "json")
    report = json.loads(path.read_text())
    rows = {(r["text"], r["kind"]): r for r in report["repairs"]}
    empa = rows[(S_EMPA, "find")]
    assert empa["new"]["citation"] == f"https://doi.org/{EMPA['doi']}" and empa["new"]["verdict"] == "supported"
    assert empa["old"] and all(o["verdict"] == "not_supported" for o in empa["old"])
    assert rows[(S_NONE, "find")]["outcome"] == NO_SOURCE and rows[(S_NONE, "find")]["new"] is None
    assert "open-access copy of" in rows[(S_ASPREE, "open_access")]["new"]["found_by"]
    # both the cited URL and the copy judged are reported
    assert rows[(S_ASPREE, "open_access")]["new"]["citation"] == PAYWALLED
    assert rows[(S_ASPREE, "open_access")]["new"]["copy"] == f"{repair_servers.base}/papers/oa-copy"
    assert main(["verify-report", str(path), "--db", str(db)]) == 0, capsys.readouterr()
    capsys.readouterr()
    empa["new"]["quote"] = "Empagliflozin cured diabetes."   # a tampered quote is caught
    path.write_text(json.dumps(report))
    assert main(["verify-report", str(path), "--db", str(db)]) != 0
    assert "repairs[" in capsys.readouterr().out
    html_path = tmp_path / "report.html"
    write_report(store, run_id, html_path, "html")
    page = html_path.read_text()
    assert 'id="repairs"' in page and NO_SOURCE in page and EMPA["doi"] in page


def test_the_spreadsheet_reports_carry_the_repairs_and_verify_report_catches_an_edit(repair_servers, tmp_path,
                                                                                      capsys):
    import csv

    from openpyxl import load_workbook

    from sourcecheckup.report import write_report

    db = tmp_path / "r.db"
    store = Store(db)
    run_id = seed(store)
    asyncio.run(repair(store, run_id, repair_servers, open_access=True))
    xlsx, sheet = tmp_path / "report.xlsx", tmp_path / "report.csv"
    write_report(store, run_id, xlsx, "xlsx")
    write_report(store, run_id, sheet, "csv")
    rows = list(load_workbook(xlsx)["repairs"].iter_rows(values_only=True))
    assert rows[0][:5] == ("statement", "text", "repair", "old citations (verdicts)", "outcome")
    offered = [r for r in rows[1:] if r[1] == S_EMPA and r[2] == "find a source"]
    assert offered and offered[0][5] == f"https://doi.org/{EMPA['doi']}" and offered[0][7] == "supported"
    lines = list(csv.reader(sheet.open(encoding="utf-8", newline="")))
    repaired = [r for r in lines if r[3].startswith("repairs/") and r[4] == S_NONE]
    assert repaired and all(NO_SOURCE in r[6] for r in repaired)
    for path in (xlsx, sheet):
        assert main(["verify-report", str(path), "--db", str(db)]) == 0, capsys.readouterr()
    capsys.readouterr()
    for r in lines:   # an offered quote edited in the CSV
        if r[3].startswith("repairs/") and r[12]:
            r[12] = "Empagliflozin cured diabetes."
    csv.writer(sheet.open("w", encoding="utf-8", newline="")).writerows(lines)
    assert main(["verify-report", str(sheet), "--db", str(db)]) != 0
    assert "Empagliflozin cured diabetes." in capsys.readouterr().out


def test_revised_cites_the_accepted_repair(repair_servers, tmp_path, capsys):
    db = tmp_path / "r.db"
    store = Store(db)
    run_id = seed(store)
    row = store.responses(run_id)[0]
    text = row.response.text
    # the seeded statements have their spans in the answer, as a parser would give them
    with store.db.conn:
        for s in store.statements_for(row.pk):
            start = text.index(s.statement.text)
            store.db.execute("UPDATE statements SET start = ?, end = ? WHERE pk = ?",
                             [start, start + len(s.statement.text), s.pk])
    asyncio.run(repair(store, run_id, repair_servers))
    pks = {s.statement.text: s.pk for s in store.statements_for(row.pk)}
    assert main(["repair", run_id, "--db", str(db), "--accept", str(pks[S_NONE])]) != 0   # nothing offered
    assert main(["repair", run_id, "--db", str(db), "--accept", str(pks[S_EMPA])]) == 0
    capsys.readouterr()
    assert main(["revised", run_id, "--db", str(db), "--response", "r1", "--repairs", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert f"in type 2 diabetes (https://doi.org/{EMPA['doi']}). Vitamin D" in out["revised"]
    assert out["repaired"] == [pks[S_EMPA]] and out["revised"].count("https://") == 1


def test_apply_repairs_moves_past_applied_rewrites_and_skips_deletions():
    from sourcecheckup.references.repair import apply_repairs

    text = "Alpha is true [1]. Beta is true [1]. Gamma is true [1]. Delta is true [1]."
    spans = [(1, 0, 18), (2, 19, 36), (3, 37, 55), (4, 56, 74)]
    assert [text[a:b] for _, a, b in spans][2] == "Gamma is true [1]."
    # statement 1 was rewritten shorter, statement 2 deleted (with its space): 3's citation still lands after
    # its own sentence, not inside the next one
    applied = [(0, 18, "Alpha is true [1].", "Alpha [1]."), (19, 36, "Beta is true [1].", "")]
    revised = "Alpha [1]. Gamma is true [1]. Delta is true [1]."
    out, unplaced = apply_repairs(revised, spans, {1: "https://doi.org/10.1/a", 2: "https://doi.org/10.1/b",
                                                   3: "https://doi.org/10.1/c"}, applied, text)
    assert out == "Alpha [1] (https://doi.org/10.1/a). Gamma is true [1] (https://doi.org/10.1/c). Delta is true [1]."
    assert unplaced == [2]
