"""Looking references up: Crossref, PubMed and OpenAlex (fake servers on 127.0.0.1) and the Retraction Watch CSV.

Each outcome a librarian needs (verified, mismatch, not found, ambiguous, lookup failed) with its
evidence; notices from every source; rate limits, timeouts, the cache and the polite identity.
"""
from __future__ import annotations

import asyncio
import json
import os
import time

import pytest

from sourcecheckup.references.lookup import LookupFailed, MetadataClient
from sourcecheckup.references.model import LookupSettings, NoticeKind, Record, Reference, ReferenceStatus
from sourcecheckup.references.resolve import ReferenceResolver, journal_matches, normalise_text, title_similarity
from sourcecheckup.references.retractions import (
    RETRACTIONS_ENV,
    RetractionDataError,
    RetractionIndex,
    download,
    load_retraction_index,
)
from sourcecheckup.store import Store
from tests.support.fake_model_servers import closed_port
from tests.support.fake_scholarly import CITED, RETRACTION_CSV, FakeScholarly

EMAIL = "librarian@hospital.example"

ZINMAN = Reference(raw=CITED["verified"], authors=("Zinman", "Wanner", "Lachin"), year=2015,
                   title="Empagliflozin, cardiovascular outcomes, and mortality in type 2 diabetes",
                   journal="N Engl J Med", volume="373", issue="22", pages="2117-2128", doi="10.1056/nejmoa1504720",
                   style="ama")
ZINMAN_TEXT = Reference(raw="Zinman B, Wanner C, Lachin JM, et al. Empagliflozin, cardiovascular outcomes, and "
                            "mortality in type 2 diabetes. N Engl J Med. 2015;373(22):2117-2128.",
                        authors=("Zinman", "Wanner", "Lachin"), year=2015, journal="N Engl J Med",
                        title="Empagliflozin, cardiovascular outcomes, and mortality in type 2 diabetes", style="ama")
MISMATCH = Reference(raw=CITED["mismatch"], authors=("Smith", "Brown"), year=2019,
                     title="Metformin and colorectal cancer risk in type 2 diabetes", journal="JAMA", volume="321",
                     issue="5", pages="456-463", doi="10.1056/nejmoa1603827", style="ama")
UNKNOWN_DOI = Reference(raw=CITED["unknown_doi"], authors=("Lee", "Park"), year=2019,
                        title="Intermittent fasting and HbA1c in adults with prediabetes", journal="JAMA",
                        doi="10.1001/jama.2019.99999", style="ama")
FABRICATED = Reference(raw=CITED["fabricated"], authors=("Johnson", "Patel"), year=2021,
                       title="Vitamin D supplementation eliminates migraine recurrence: a randomized trial",
                       journal="J Neurol Sci", volume="412", pages="118-125", style="vancouver")
RETRACTED = Reference(raw=CITED["retracted"], authors=("Mehra", "Desai", "Ruschitzka", "Patel"), year=2020,
                      title="Hydroxychloroquine or chloroquine with or without a macrolide for treatment of COVID-19: "
                            "a multinational registry analysis", journal="Lancet",
                      doi="10.1016/s0140-6736(20)31180-6", style="vancouver")
AMBIGUOUS = Reference(raw=CITED["ambiguous"], authors=("Whelton", "Carey", "Aronow"), year=2018,
                      title="2017 ACC/AHA/AAPA/ABC/ACPM/AGS/APhA/ASH/ASPC/NMA/PCNA guideline for the prevention, "
                            "detection, evaluation, and management of high blood pressure in adults",
                      style="vancouver")


def settings(fake: FakeScholarly, **kw) -> LookupSettings:
    base = dict(crossref_endpoint=fake.crossref, pubmed_endpoint=fake.pubmed, openalex_endpoint=fake.openalex,
                contact_email=EMAIL, timeout_s=0.5, requests_per_second=50.0)
    base.update(kw)
    return LookupSettings(**base)


async def check(fake: FakeScholarly, ref: Reference, *, retractions: RetractionIndex | None = None,
                cache=None, **kw):
    async with ReferenceResolver(settings(fake, **kw), cache=cache, retractions=retractions) as resolver:
        return await resolver.check(ref)


# --- the five outcomes --------------------------------------------------------------------------------

async def test_doi_with_matching_metadata_is_verified(scholarly):
    result = await check(scholarly, ZINMAN)
    assert result.status is ReferenceStatus.VERIFIED
    assert result.matched is not None and result.matched.doi == "10.1056/nejmoa1504720"
    assert {c.field for c in result.comparisons} == {"title", "authors", "year", "journal"}
    assert all(c.agrees for c in result.comparisons)
    journal = next(c for c in result.comparisons if c.field == "journal")
    assert journal.cited == "N Engl J Med" and "New England Journal of Medicine" in journal.found
    assert "Crossref has DOI 10.1056/nejmoa1504720 as 'Empagliflozin" in result.evidence
    assert result.services == ("crossref",) and not result.retracted
    assert [r.path for r in scholarly.log] == ["/works/10.1056/nejmoa1504720"]


async def test_doi_naming_another_paper_is_a_mismatch_shown_side_by_side(scholarly):
    result = await check(scholarly, MISMATCH)
    assert result.status is ReferenceStatus.MISMATCH
    sides = {c.field: (c.cited, c.found, c.agrees) for c in result.comparisons}
    assert sides["title"] == ("Metformin and colorectal cancer risk in type 2 diabetes",
                              "Liraglutide and Cardiovascular Outcomes in Type 2 Diabetes", False)
    assert sides["authors"][0] == "Smith, Brown" and sides["authors"][1].startswith("Marso, Daniels")
    assert sides["year"] == ("2019", "2016", False)
    assert sides["journal"][2] is False
    assert result.evidence == (
        "Crossref has DOI 10.1056/nejmoa1603827 as 'Liraglutide and Cardiovascular Outcomes in Type 2 Diabetes' "
        "(Marso, 2016, N Engl J Med); the reference names 'Metformin and colorectal cancer risk in type 2 diabetes' "
        "(Smith, 2019, JAMA) (differs in title, authors, year, journal).")


async def test_unknown_doi_is_not_found_after_crossref_and_openalex_say_so(scholarly):
    result = await check(scholarly, UNKNOWN_DOI)
    assert result.status is ReferenceStatus.NOT_FOUND
    assert result.evidence == ("Crossref and OpenAlex have no record of DOI 10.1001/jama.2019.99999: "
                               "likely fabricated.")
    assert [(r.service, r.path, r.status) for r in scholarly.log[:2]] == [
        ("crossref", "/works/10.1001/jama.2019.99999", 404), ("openalex", "/works/doi:10.1001/jama.2019.99999", 404)]
    # then the written title is searched, in case the paper exists under another identifier: it does not
    assert {r.path for r in scholarly.log[2:]} >= {"/works", "/esearch.fcgi"}


async def test_invented_doi_on_a_real_paper_is_not_found_and_names_the_paper(scholarly):
    invented = Reference(raw=ZINMAN.raw.replace("NEJMoa1504720", "NEJMoa1504799"), authors=ZINMAN.authors,
                         year=2015, title=ZINMAN.title, journal=ZINMAN.journal, doi="10.1056/nejmoa1504799")
    result = await check(scholarly, invented)
    assert result.status is ReferenceStatus.NOT_FOUND and result.matched is None
    assert result.candidates[0].doi == "10.1056/nejmoa1504720"
    assert result.evidence.startswith("Crossref and OpenAlex have no record of DOI 10.1056/nejmoa1504799, so the "
                                      "identifier is likely fabricated, though the paper the reference names exists "
                                      "as 'Empagliflozin, Cardiovascular Outcomes, and Mortality in Type 2 Diabetes'")
    assert [r.service for r in scholarly.log] == ["crossref", "openalex", "crossref"]


async def test_a_retraction_notice_in_search_results_is_not_a_candidate(scholarly):
    free = Reference(raw="Mehra MR et al. Hydroxychloroquine or chloroquine with or without a macrolide for "
                         "treatment of COVID-19: a multinational registry analysis.", title=RETRACTED.title,
                     authors=("Mehra",))
    result = await check(scholarly, free)     # Crossref's search offers the notice beside the paper
    assert result.status is ReferenceStatus.VERIFIED, result.evidence
    assert result.matched.doi == "10.1016/s0140-6736(20)31180-6" and result.retracted


async def test_fabricated_reference_is_not_found_naming_the_best_weak_candidate(scholarly):
    result = await check(scholarly, FABRICATED)
    assert result.status is ReferenceStatus.NOT_FOUND
    assert result.services == ("crossref", "pubmed", "openalex")
    assert result.score is not None and result.score < 0.75
    assert result.candidates and result.candidates[0].title.startswith("Vitamin D3 might improve headache")
    assert "likely fabricated" in result.evidence and "threshold 0.75" in result.evidence
    assert f"with score {result.score:.2f}" in result.evidence
    assert "'Vitamin D3 might improve headache characteristics" in result.evidence


async def test_one_guideline_in_two_journals_is_ambiguous(scholarly):
    result = await check(scholarly, AMBIGUOUS)
    assert result.status is ReferenceStatus.AMBIGUOUS
    assert {c.doi for c in result.candidates} == {"10.1161/hyp.0000000000000065", "10.1016/j.jacc.2017.11.006"}
    assert result.matched is None
    assert "2 Crossref records fit the reference" in result.evidence
    assert "Hypertension" in result.evidence and "Journal of the American College of Cardiology" in result.evidence


async def test_free_text_reference_is_verified_by_bibliographic_search(scholarly):
    result = await check(scholarly, ZINMAN_TEXT)
    assert result.status is ReferenceStatus.VERIFIED
    assert result.matched.doi == "10.1056/nejmoa1504720" and result.score >= 0.95
    assert scholarly.log[0].query["query.bibliographic"] == [ZINMAN_TEXT.raw]


async def test_a_real_title_under_another_journal_and_year_is_a_mismatch(scholarly):
    moved = Reference(raw="Zinman B, Wanner C. Empagliflozin, cardiovascular outcomes, and mortality in type 2 "
                          "diabetes. Lancet. 2019;393:1021-30.", authors=("Zinman", "Wanner"), year=2019,
                      title=ZINMAN.title, journal="Lancet", style="vancouver")
    result = await check(scholarly, moved)
    assert result.status is ReferenceStatus.MISMATCH and result.matched.doi == "10.1056/nejmoa1504720"
    assert [c.field for c in result.comparisons if not c.agrees] == ["year", "journal"]
    assert result.evidence.startswith("The closest Crossref record, 'Empagliflozin, Cardiovascular Outcomes, and "
                                      "Mortality in Type 2 Diabetes' (Zinman, 2015, N Engl J Med, "
                                      "10.1056/nejmoa1504720), matches the reference")
    assert result.evidence.endswith("but differs in year, journal.")


async def test_a_year_off_by_one_still_agrees_but_two_years_is_a_mismatch(scholarly):
    near = Reference(raw="x", authors=("Zinman",), year=2016, title=ZINMAN.title, doi=ZINMAN.doi)
    far = Reference(raw="x", authors=("Zinman",), year=2017, title=ZINMAN.title, doi=ZINMAN.doi)
    assert (await check(scholarly, near)).status is ReferenceStatus.VERIFIED
    result = await check(scholarly, far)
    assert result.status is ReferenceStatus.MISMATCH and "(differs in year)" in result.evidence


async def test_bare_doi_and_pmid_can_only_be_verified_or_not_found(scholarly):
    bare = await check(scholarly, Reference(raw="https://doi.org/10.1056/NEJMoa1603827", doi="10.1056/nejmoa1603827",
                                            style="doi"))
    assert bare.status is ReferenceStatus.VERIFIED and bare.comparisons == ()
    assert bare.evidence.startswith("Crossref has a record of DOI 10.1056/nejmoa1603827: 'Liraglutide")
    missing = await check(scholarly, Reference(raw="PMID: 99999999", pmid="99999999", style="pmid"))
    assert missing.status is ReferenceStatus.NOT_FOUND
    assert missing.evidence == "PubMed and OpenAlex have no record of PMID 99999999: likely fabricated."


async def test_pmid_is_looked_up_in_pubmed(scholarly):
    result = await check(scholarly, Reference(raw="PMID 26378978", pmid="26378978", authors=("Zinman",), year=2015,
                                              journal="NEJM", style="pmid"))
    assert result.status is ReferenceStatus.VERIFIED
    assert result.matched.service == "pubmed" and result.matched.doi == "10.1056/nejmoa1504720"
    assert result.matched.journal_abbrev == "N Engl J Med"
    assert [r.path for r in scholarly.log] == ["/esummary.fcgi"]


# --- notices: retracted, flagged, corrected -----------------------------------------------------------

async def test_retracted_paper_carries_the_crossref_notice_and_the_retraction_watch_row(scholarly):
    index = RetractionIndex.from_csv(RETRACTION_CSV)
    result = await check(scholarly, RETRACTED, retractions=index)
    assert result.status is ReferenceStatus.VERIFIED and result.retracted
    kinds = {(n.source, n.kind) for n in result.notices}
    assert kinds == {("crossref", NoticeKind.RETRACTION), ("retraction_watch", NoticeKind.RETRACTION),
                     ("retraction_watch", NoticeKind.EXPRESSION_OF_CONCERN)}
    crossref = next(n for n in result.notices if n.source == "crossref")
    assert crossref.notice_doi == "10.1016/s0140-6736(20)31324-6" and crossref.date == "2020-06-05"
    assert "retraction recorded by Crossref (10.1016/s0140-6736(20)31324-6, 2020-06-05) and Retraction Watch" \
        in result.evidence
    assert f"data of {index.date}" in result.evidence


async def test_pubmed_retracted_publication_type_is_a_retraction(scholarly):
    result = await check(scholarly, Reference(raw="PMID: 32450107", pmid="32450107", style="pmid"))
    assert result.retracted
    assert [(n.source, n.kind) for n in result.notices] == [("pubmed", NoticeKind.RETRACTION)]
    assert "retraction recorded by PubMed" in result.evidence


async def test_openalex_is_retracted_counts_when_crossref_is_down(scholarly):
    scholarly.down = {"crossref"}
    result = await check(scholarly, RETRACTED)
    assert result.status is ReferenceStatus.VERIFIED and result.services == ("crossref", "openalex")
    assert result.matched.service == "openalex" and result.retracted
    assert result.evidence.startswith("OpenAlex has DOI 10.1016/s0140-6736(20)31180-6 as 'Hydroxychloroquine")


async def test_a_correction_is_shown_but_is_not_a_retraction():
    index = RetractionIndex.from_csv(RETRACTION_CSV)
    notices = index.notices_for(doi="10.5555/JHR.2015.0112")
    assert [n.kind for n in notices] == [NoticeKind.CORRECTION] and not notices[0].kind.serious


# --- failures are not verdicts ------------------------------------------------------------------------

async def test_timeout_is_lookup_failed_never_not_found(scholarly):
    scholarly.slow = True
    result = await check(scholarly, UNKNOWN_DOI)
    assert result.status is ReferenceStatus.LOOKUP_FAILED
    assert result.evidence == ("Crossref and OpenAlex could not be asked (Crossref: no answer within 0.5 s; "
                               "OpenAlex: no answer within 0.5 s), so the reference is unchecked, not counted as "
                               "not found.")
    # one try each: a timeout is not retried
    assert len(scholarly.requests_to("crossref")) == 1 and len(scholarly.requests_to("openalex")) == 1


async def test_free_text_with_every_service_down_is_lookup_failed(scholarly):
    scholarly.down = {"crossref", "pubmed", "openalex"}
    result = await check(scholarly, FABRICATED)
    assert result.status is ReferenceStatus.LOOKUP_FAILED
    assert result.services == ("crossref", "pubmed", "openalex") and "HTTP 500" in result.evidence


async def test_a_garbled_answer_is_a_failure_not_an_answer(scholarly):
    scholarly.garbled = {"crossref", "openalex"}
    result = await check(scholarly, ZINMAN)
    assert result.status is ReferenceStatus.LOOKUP_FAILED and "the answer is not JSON" in result.evidence


async def test_a_404_from_a_wrong_endpoint_is_not_a_missing_paper(scholarly):
    # the endpoints point at a server path that is no metadata service: its 404 is an HTML page
    result = await check(scholarly, UNKNOWN_DOI, crossref_endpoint=scholarly.pubmed,
                         openalex_endpoint=scholarly.pubmed)
    assert result.status is ReferenceStatus.LOOKUP_FAILED
    assert "HTTP 404" in result.evidence and "check the endpoint" in result.evidence


async def test_an_unreachable_service_is_lookup_failed(scholarly):
    nowhere = f"http://127.0.0.1:{closed_port()}"
    result = await check(scholarly, Reference(raw="PMID 26378978", pmid="26378978", style="pmid"),
                         pubmed_endpoint=nowhere, openalex_endpoint=nowhere + "/openalex")
    assert result.status is ReferenceStatus.LOOKUP_FAILED
    assert "PubMed: could not reach 127.0.0.1" in result.evidence and "ConnectError" in result.evidence


async def test_crossref_down_falls_back_to_pubmed_for_free_text(scholarly):
    scholarly.down = {"crossref"}
    result = await check(scholarly, ZINMAN_TEXT)
    assert result.status is ReferenceStatus.VERIFIED and result.matched.service == "pubmed"
    assert result.services == ("crossref", "pubmed")


# --- politeness: rate limits, pacing, identity, cache -------------------------------------------------

async def test_rate_limit_is_honoured_and_the_request_retried_after_the_wait(scholarly):
    scholarly.rate_limit_next = 1
    result = await check(scholarly, ZINMAN)
    assert result.status is ReferenceStatus.VERIFIED
    first, second = scholarly.requests_to("crossref")
    assert (first.status, second.status) == (429, 200)
    assert first.path == second.path
    assert second.at - first.at >= 0.95          # Retry-After: 1


async def test_a_rate_limit_that_does_not_end_fails_the_lookup(scholarly):
    scholarly.rate_limit_next = 3
    async with MetadataClient(settings(scholarly)) as client:
        with pytest.raises(LookupFailed) as failed:
            await client.crossref_work("10.1056/nejmoa1504720")
    assert failed.value.service == "crossref" and "rate limited (HTTP 429) after 3 tries" in failed.value.reason
    assert [r.status for r in scholarly.log] == [429, 429, 429]


async def test_requests_to_one_service_keep_the_minimum_interval(scholarly):
    async with MetadataClient(settings(scholarly, requests_per_second=4.0)) as client:
        await asyncio.gather(*(client.crossref_work(doi) for doi in
                               ("10.1056/nejmoa1504720", "10.1056/nejmoa1603827", "10.1016/j.jacc.2017.11.006")))
    times = [r.at for r in scholarly.requests_to("crossref")]
    gaps = [round(b - a, 3) for a, b in zip(times, times[1:])]
    # sent 0.25 s apart; arrival times carry the first connection's set-up and the server threads' jitter
    assert len(times) == 3 and min(gaps) >= 0.12 and times[-1] - times[0] >= 0.4, gaps


async def test_polite_identity_goes_with_every_request(scholarly):
    await check(scholarly, FABRICATED)          # asks all three services
    assert {r.service for r in scholarly.log} == {"crossref", "pubmed", "openalex"}
    for r in scholarly.log:
        assert r.headers["user-agent"].startswith("SourceCheckup/") and EMAIL in r.headers["user-agent"]
        if r.service in ("crossref", "openalex"):
            assert r.query["mailto"] == [EMAIL]
        else:
            assert r.query["tool"] == ["sourcecheckup"] and r.query["email"] == [EMAIL]


async def test_the_cache_answers_the_second_time_with_no_request(scholarly, tmp_path):
    store = Store(tmp_path / "audit.db")
    first = [await check(scholarly, ref, cache=store) for ref in (ZINMAN, UNKNOWN_DOI, FABRICATED)]
    asked = len(scholarly.log)
    assert asked >= 1 + 2 + 4
    reopened = Store(tmp_path / "audit.db")
    again = [await check(scholarly, ref, cache=reopened) for ref in (ZINMAN, UNKNOWN_DOI, FABRICATED)]
    assert len(scholarly.log) == asked
    assert [(c.status, c.evidence) for c in again] == [(c.status, c.evidence) for c in first]
    assert reopened.lookup_cache_get("crossref", "work:10.1001/jama.2019.99999")["record"] is None


async def test_a_month_old_cache_entry_is_asked_again(scholarly, tmp_path):
    store = Store(tmp_path / "audit.db")
    old = {"record": {"service": "crossref", "title": "Stale title", "doi": ZINMAN.doi},
           "at": time.time() - 31 * 24 * 3600}
    store.lookup_cache_put("crossref", f"work:{ZINMAN.doi}", old)
    result = await check(scholarly, ZINMAN, cache=store)
    assert result.status is ReferenceStatus.VERIFIED and len(scholarly.log) == 1
    assert store.lookup_cache_get("crossref", f"work:{ZINMAN.doi}")["record"]["title"].startswith("Empagliflozin")


async def test_a_timeout_is_not_cached(scholarly, tmp_path):
    store = Store(tmp_path / "audit.db")
    scholarly.slow = {"crossref", "openalex"}
    assert (await check(scholarly, ZINMAN, cache=store)).status is ReferenceStatus.LOOKUP_FAILED
    assert store.lookup_cache_get("crossref", "work:10.1056/nejmoa1504720") is None
    scholarly.slow = False
    assert (await check(scholarly, ZINMAN, cache=store)).status is ReferenceStatus.VERIFIED
    assert scholarly.log[-1].status == 200


# --- matching rules -----------------------------------------------------------------------------------

@pytest.mark.parametrize("cited, full, abbrev, same", [
    ("N Engl J Med", "The New England Journal of Medicine", "", True),
    ("NEJM", "New England Journal of Medicine", "", True),
    ("JAMA", "Journal of the American Medical Association", "", True),
    ("Lancet", "The Lancet", "", True),
    ("J Am Coll Cardiol", "Journal of the American College of Cardiology", "", True),
    ("Lancet", "Lancet (London, England)", "", True),
    ("N Engl J Med", "Some other name", "N Engl J Med", True),
    ("JAMA", "New England Journal of Medicine", "N Engl J Med", False),
    ("J Neurol Sci", "Neurological Sciences", "Neurol Sci", False),
    ("BMJ", "The Lancet", "", False),
])
def test_journal_names_match_through_abbreviations(cited, full, abbrev, same):
    assert journal_matches(cited, Record(service="crossref", journal=full, journal_abbrev=abbrev)) is same


def test_names_compare_without_accents_or_case():
    assert normalise_text("SØRENSEN") == normalise_text("Sørensen") == "sorensen"
    assert normalise_text("Müller-Lüdenscheidt") == "muller ludenscheidt"


def test_title_similarity_forgives_case_punctuation_and_a_dropped_subtitle():
    assert title_similarity("Empagliflozin, cardiovascular outcomes and mortality in type 2 diabetes",
                            "Empagliflozin, Cardiovascular Outcomes, and Mortality in Type 2 Diabetes") > 0.95
    assert title_similarity("Hydroxychloroquine or chloroquine with or without a macrolide for treatment of COVID-19",
                            RETRACTED.title) == 1.0
    assert title_similarity("Metformin and colorectal cancer risk in type 2 diabetes",
                            "Liraglutide and Cardiovascular Outcomes in Type 2 Diabetes") < 0.7


# --- the Retraction Watch file ------------------------------------------------------------------------

def test_retraction_watch_csv_import(tmp_path):
    copy = tmp_path / "retraction_watch.csv"
    copy.write_bytes(RETRACTION_CSV.read_bytes())
    os.utime(copy, (1_700_000_000, 1_700_000_000))          # 2023-11-14
    index = RetractionIndex.from_csv(copy)
    assert index.date == "2023-11-14"
    assert len(index.rows) == 5          # 7 rows: a reinstatement is no notice and lifts the concern before it
    by_doi = index.notices_for(doi="https://doi.org/10.1016/S0140-6736(20)31180-6")
    assert [(n.kind, n.date) for n in by_doi] == [(NoticeKind.EXPRESSION_OF_CONCERN, "2020-06-03"),
                                                 (NoticeKind.RETRACTION, "2020-06-05")]
    assert by_doi[1].notice_doi == "10.1016/s0140-6736(20)31324-6"
    assert by_doi[1].detail.startswith("Retraction Watch record 28371: Concerns/Issues About Data; ")
    assert index.notices_for(pmid="32450107") == by_doi
    assert index.notices_for(doi="10.5555/jhr.2019.0001") == ()       # reinstated
    assert index.notices_for(pmid="0") == () and index.notices_for() == ()


def test_a_wrong_csv_names_the_file_and_the_missing_column(tmp_path):
    wrong = tmp_path / "retractions.csv"
    wrong.write_text("Record ID,Title,DOI,Nature\n1,A paper,10.1/x,Retraction\n", encoding="utf-8")
    with pytest.raises(RetractionDataError) as failed:
        RetractionIndex.from_csv(wrong)
    message = str(failed.value)
    assert str(wrong) in message and "'OriginalPaperDOI' is missing" in message
    with pytest.raises(RetractionDataError, match="cannot read"):
        RetractionIndex.from_csv(tmp_path / "absent.csv")


def test_download_keeps_the_old_file_when_the_new_one_is_not_the_dataset(scholarly, tmp_path):
    dest = tmp_path / "data" / "retraction_watch.csv"
    index = download(scholarly.retraction_csv_url, dest, contact_email=EMAIL)
    assert len(index.rows) == 5 and dest.read_bytes() == RETRACTION_CSV.read_bytes()
    assert json.loads((dest.parent / "retraction_watch.csv.json").read_text())["url"] == scholarly.retraction_csv_url
    assert index.date == time.strftime("%Y-%m-%d", time.gmtime())
    assert EMAIL in scholarly.log[-1].headers["user-agent"]
    with pytest.raises(RetractionDataError, match="HTTP 404"):
        download(f"{scholarly.base}/retraction-watch/missing.csv", dest)
    with pytest.raises(RetractionDataError, match="OriginalPaperDOI"):        # a JSON page is not the CSV
        download(f"{scholarly.crossref}/works/10.1056/nejmoa1504720", dest)
    assert dest.read_bytes() == RETRACTION_CSV.read_bytes()
    assert not list(dest.parent.glob("*.part"))


def test_the_default_retraction_file_is_used_only_when_present(tmp_path, monkeypatch):
    monkeypatch.setenv(RETRACTIONS_ENV, str(tmp_path / "rw.csv"))
    assert load_retraction_index() is None
    (tmp_path / "rw.csv").write_bytes(RETRACTION_CSV.read_bytes())
    assert len(load_retraction_index().rows) == 5
    with pytest.raises(RetractionDataError, match="missing.csv"):
        load_retraction_index(tmp_path / "missing.csv")
