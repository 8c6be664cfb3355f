"""A stored run whose citations carry every reference-check outcome, for report and app tests.

Nothing is looked up: the checks are written with ``Store.save_reference_check`` as the engine
would write them. Response r1 (model-a) cites eight sources, one per outcome plus a plain web page;
r2 (model-b) cites three of them. Statement i of a response is supported by its i-th citation only.
"""
from __future__ import annotations

from sourcecheckup.models import FetchStatus, Label, Response, Source, Statement, Verdict, sha256_bytes, utcnow
from sourcecheckup.references.model import (
    FieldComparison,
    Notice,
    NoticeKind,
    Record,
    Reference,
    ReferenceCheck,
    ReferenceStatus,
    reference_key,
)
from sourcecheckup.store import Store

HOSTILE = '<script>alert("ref")</script><img src=x onerror=alert(1)>'

VERIFIED = "https://doi.org/10.1056/nejmoa1816604"
MISMATCH = "https://doi.org/10.1001/jama.2019.0002"
NOT_FOUND = reference_key("Smith J, Doe A. Imaginary statin trial in centenarians. JAMA. 2019;321:456-62.")
AMBIGUOUS = reference_key("Lee K et al. Statins and memory. 2018.")
LOOKUP_FAILED = "https://pubmed.ncbi.nlm.nih.gov/31234567/"
RETRACTED = "https://doi.org/10.1016/s0140-6736(97)11096-0"
CORRECTED = "https://doi.org/10.1136/bmj.l1234"
PLAIN = "https://www.cdc.gov/bloodpressure/facts.htm"
R1_URLS = (VERIFIED, MISMATCH, NOT_FOUND, AMBIGUOUS, LOOKUP_FAILED, RETRACTED, CORRECTED, PLAIN)
R2_URLS = (VERIFIED, NOT_FOUND, RETRACTED)
STATEMENTS = ("Statins lower LDL cholesterol.", "Aspirin prevents a first stroke in the elderly.",
              "Statins prevent falls in centenarians.", "Statins impair memory.",
              "Metformin lowers HbA1c by about 1%.", "The MMR vaccine causes autism.",
              "Blood pressure targets below 130/80 reduce strokes.", "Hypertension affects nearly half of adults.")


def _record(service: str, title: str, authors: tuple[str, ...], year: int, journal: str, doi: str = "",
            pmid: str = "", notices: tuple[Notice, ...] = ()) -> Record:
    return Record(service=service, title=title, authors=authors, year=year, journal=journal, doi=doi, pmid=pmid,
                  url=f"https://doi.org/{doi}" if doi else "", notices=notices)


RETRACTION_CROSSREF = Notice(NoticeKind.RETRACTION, "crossref", "2010-02-02", "10.1016/s0140-6736(10)60175-4",
                             "Retraction—Ileal-lymphoid-nodular hyperplasia")
RETRACTION_WATCH = Notice(NoticeKind.RETRACTION, "retraction_watch", "2010-02-02", "",
                          "Falsification/Fabrication of Data; Misconduct by Author")
CORRECTION = Notice(NoticeKind.CORRECTION, "crossref", "2019-05-01", "10.1136/bmj.l2000", "Correction")


def reference_checks() -> dict[str, ReferenceCheck]:
    """The check stored for each checked citation (the plain page has none)."""
    ref = Reference
    return {
        VERIFIED: ReferenceCheck(
            ref(VERIFIED, doi="10.1056/nejmoa1816604", style="doi"), ReferenceStatus.VERIFIED,
            "Crossref holds 10.1056/nejmoa1816604: Aspirin in the primary prevention (McNeil, 2018).",
            matched=_record("crossref", "Effect of Aspirin on Cardiovascular Events and Bleeding in the Healthy "
                            "Elderly", ("McNeil",), 2018, "New England Journal of Medicine", "10.1056/nejmoa1816604",
                            "30221597"), services=("crossref",)),
        MISMATCH: ReferenceCheck(
            ref("Brown P. Aspirin for stroke. JAMA 2019. doi:10.1001/jama.2019.0002", authors=("Brown",),
                year=2019, title="Aspirin for stroke", journal="JAMA", doi="10.1001/jama.2019.0002", style="vancouver"),
            ReferenceStatus.MISMATCH,
            "The DOI exists but names another paper: title and authors differ.",
            matched=_record("crossref", f"Salt intake and kidney stones {HOSTILE}", ("Garcia",), 2019, "JAMA",
                            "10.1001/jama.2019.0002"),
            comparisons=(FieldComparison("title", "Aspirin for stroke", f"Salt intake and kidney stones {HOSTILE}",
                                         False),
                         FieldComparison("authors", "Brown", "Garcia", False),
                         FieldComparison("year", "2019", "2019", True)),
            score=0.22, services=("crossref",)),
        NOT_FOUND: ReferenceCheck(
            ref(NOT_FOUND[4:], authors=("Smith", "Doe"), year=2019, title="Imaginary statin trial in centenarians",
                journal="JAMA", volume="321", pages="456-62", style="vancouver"),
            ReferenceStatus.NOT_FOUND,
            f"No candidate above the match threshold 0.75 (best 0.41) {HOSTILE}",
            candidates=(_record("crossref", "Statin use in nonagenarians", ("Smithers",), 2017,
                                "J Am Geriatr Soc", "10.1111/jgs.99999"),),
            score=0.41, services=("crossref", "pubmed", "openalex")),
        AMBIGUOUS: ReferenceCheck(
            ref(AMBIGUOUS[4:], authors=("Lee",), year=2018, title="Statins and memory", style="loose"),
            ReferenceStatus.AMBIGUOUS, "Two candidates fit equally well (0.81 and 0.80).",
            candidates=(_record("crossref", "Statins and memory loss", ("Lee",), 2018, "Neurology", "10.1212/a.1"),
                        _record("openalex", "Statins and memory in older adults", ("Lee",), 2018, "Age Ageing",
                                "10.1093/b.2")),
            score=0.81, services=("crossref", "openalex")),
        LOOKUP_FAILED: ReferenceCheck(
            ref(LOOKUP_FAILED, pmid="31234567", style="pmid"), ReferenceStatus.LOOKUP_FAILED,
            "PubMed did not answer within 10 s (timeout); not counted as not found.", services=("pubmed",)),
        RETRACTED: ReferenceCheck(
            ref(RETRACTED, doi="10.1016/s0140-6736(97)11096-0", style="doi"), ReferenceStatus.VERIFIED,
            "Crossref holds the DOI; it was retracted in 2010.",
            matched=_record("crossref", "Ileal-lymphoid-nodular hyperplasia, non-specific colitis, and pervasive "
                            "developmental disorder in children", ("Wakefield",), 1998, "The Lancet",
                            "10.1016/s0140-6736(97)11096-0", "9500320",
                            notices=(RETRACTION_CROSSREF, RETRACTION_WATCH)), services=("crossref",)),
        CORRECTED: ReferenceCheck(
            ref(CORRECTED, doi="10.1136/bmj.l1234", style="doi"), ReferenceStatus.VERIFIED,
            "Crossref holds the DOI; a correction was published.",
            matched=_record("crossref", "Blood pressure targets", ("Jones",), 2019, "BMJ", "10.1136/bmj.l1234",
                            notices=(CORRECTION,)), services=("crossref",)),
    }


def seed_reference_run(store: Store) -> str:
    """A completed run with the checks above stored; returns its id."""
    run_id = store.create_run(input="reference test", config={"consensus": "first"}, judges=["builtin"],
                              parser="builtin", app_version="test")
    ids = {}
    for i, url in enumerate(R1_URLS):
        text = f"{STATEMENTS[i]} Source page {i}."
        sid = store.add_source(Source(url=url, status=FetchStatus.OK, reason="HTTP 200 OK", http_status=200,
                                      final_url=url, title=f"Page {i}", text=text,
                                      sha256=sha256_bytes(text.encode()), fetched_at=utcnow()))
        store.link_run_source(run_id, url, sid)
        ids[url] = sid
    plan = (("r1", "model-a", R1_URLS), ("r2", "model-b", R2_URLS))
    store.add_responses(run_id, [Response(id=rid, text=" ".join(STATEMENTS[R1_URLS.index(u)] for u in urls),
                                          citations=urls, model=model, question="Do statins help?",
                                          references={2: NOT_FOUND[4:]} if rid == "r1" else {})
                                 for rid, model, urls in plan])
    for row, (_, _, urls) in zip(store.responses(run_id), plan):
        statements = [Statement(index=i, text=STATEMENTS[R1_URLS.index(u)]) for i, u in enumerate(urls)]
        for s in store.save_statements(run_id, row.pk, statements):
            for k, url in enumerate(urls):
                ok = k == s.statement.index
                store.save_verdict(run_id, s.pk, url, ids[url], Verdict(
                    label=Label.SUPPORTED if ok else Label.NOT_SUPPORTED, score=0.9 if ok else 0.1,
                    rationale="seeded", quote=s.statement.text if ok else "", judge_id="builtin"))
        store.mark_response_done(row.pk)
    for url, check in reference_checks().items():
        store.save_reference_check(run_id, url, check)
    store.set_run_status(run_id, "completed")
    return run_id
