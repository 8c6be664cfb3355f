"""Fake PubMed E-utilities, Europe PMC, Crossref and Unpaywall on one 127.0.0.1 server, for repair tests.

The answers take the services' documented shapes: E-utilities esearch JSON (``esearchresult.idlist``) and
efetch XML (``PubmedArticleSet``), with NCBI's 429 ``{"error": "API rate limit exceeded"}``; Europe PMC's
REST search JSON (``resultList.result`` with ``resultType=core`` fields ``abstractText``, ``pmcid``,
``isOpenAccess``) and ``/{PMCID}/fullTextXML`` (JATS, 404 when there is none); Crossref's works search
(``message.items`` with JATS ``abstract``); Unpaywall's ``/v2/{doi}?email=`` record (``is_oa``,
``best_oa_location``), its 404 for an unknown DOI and its 422 without an e-mail. ``/papers/...`` serves the
publisher's paywalled page and the repository's open-access copy (HTML) for the fetcher.

Where the shapes come from (public documentation and client code, read for this fake): NCBI's 429 body
as quoted in biocommons/bioutils#16 and ropensci/rentrez#132, and its ``api_key`` rule (E-utilities' own
notice); Europe PMC's ``/search?query=&format=json&resultType=core`` with ``resultList.result`` (ropensci/
europepmc, its REST reference) and ``/{pmcid}/fullTextXML`` (JATS); Unpaywall's ``/v2/{doi}?email=``, its
``best_oa_location`` fields, 404 for an unknown DOI and 422 for a missing e-mail (roadoi, the Unpaywall
data format); Crossref's ``work-list`` message as tests/support/fake_scholarly.py already serves it.

Base URLs: ``.pubmed``, ``.europepmc``, ``.crossref``, ``.unpaywall``. Switches: ``rate_limit`` (a set of
services answered 429 with ``Retry-After: 1``, every time), ``down`` (a set answered 500), ``slow`` (a set
answered after SLOW_S). Each request is
logged as (service, path, query).
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler
from typing import Any, Callable, Iterator
from urllib.parse import parse_qs, unquote, urlsplit
from xml.sax.saxutils import escape

import pytest

from .fake_scholarly import reply, serve

SLOW_S = 1.5

EMPA = {"pmid": "26378978", "doi": "10.1056/nejmoa1504720",
        "title": "Empagliflozin, Cardiovascular Outcomes, and Mortality in Type 2 Diabetes",
        "abstract": ("Patients with type 2 diabetes at high cardiovascular risk received empagliflozin or placebo. "
                     "Empagliflozin reduced cardiovascular death by 38% in type 2 diabetes compared with placebo.")}
VITAL = {"pmid": "35294814", "doi": "10.1056/nejmoa2202106", "pmcid": "PMC9002216",
         "title": "Supplemental Vitamin D and Incident Fractures in Midlife and Older Adults",
         "abstract": "We tested whether vitamin D3 supplements reduce fractures.",
         "body": ("In this ancillary study of VITAL, vitamin D supplementation did not reduce fractures in "
                  "older adults who were not selected for vitamin D deficiency.")}
CROSSREF_ONLY = {"doi": "10.1093/ije/dyz123",
                 "title": "Handwashing with soap and diarrhoea in children: a cluster trial",
                 "abstract": ("<jats:p>Handwashing with soap halved diarrhoea episodes in children under five "
                              "years.</jats:p>")}
ASPREE_BLEEDING = {"doi": "10.1056/nejmoa1800722", "pmid": "30221595",
                   "title": "Effect of Aspirin on Cardiovascular Events and Bleeding in the Healthy Elderly",
                   "body": ("Aspirin raised major hemorrhage risk in healthy elderly adults: major hemorrhage "
                            "occurred in 3.8% with aspirin and 2.8% with placebo.")}
PUBMED = (EMPA, VITAL)             # efetch of VITAL returns only its short abstract
EUROPEPMC = (VITAL,)               # open access, with full text
CROSSREF = (CROSSREF_ONLY, EMPA)


def _words(text: str) -> set[str]:
    return {w.strip(".,;:%()").lower() for w in text.split() if w.strip(".,;:%()")}


def _matches(query: str, paper: dict[str, str]) -> bool:
    """A paper matches when most of the query's terms occur in its title, abstract or body."""
    terms = _words(query.replace(" AND ", " "))
    have = _words(" ".join(paper.get(k, "") for k in ("title", "abstract", "body")).replace("<jats:p>", " "))
    return bool(terms) and len(terms & have) / len(terms) >= 0.7


def efetch_xml(papers: list[dict[str, str]]) -> str:
    arts = []
    for p in papers:
        ids = f'<ArticleId IdType="pubmed">{p["pmid"]}</ArticleId><ArticleId IdType="doi">{p["doi"]}</ArticleId>'
        if p.get("pmcid"):
            ids += f'<ArticleId IdType="pmc">{p["pmcid"]}</ArticleId>'
        arts.append(
            f'<PubmedArticle><MedlineCitation Status="MEDLINE" Owner="NLM"><PMID Version="1">{p["pmid"]}</PMID>'
            f'<Article PubModel="Print-Electronic"><Journal><Title>The New England journal of medicine</Title>'
            f'</Journal><ArticleTitle>{escape(p["title"])}</ArticleTitle><Abstract>'
            f'<AbstractText Label="RESULTS" NlmCategory="RESULTS">{escape(p["abstract"])}</AbstractText>'
            f'</Abstract></Article></MedlineCitation><PubmedData><ArticleIdList>{ids}</ArticleIdList>'
            f'</PubmedData></PubmedArticle>')
    return ('<?xml version="1.0" ?>\n<!DOCTYPE PubmedArticleSet PUBLIC "-//NLM//DTD PubMedArticle, 1st January '
            '2024//EN" "https://dtd.nlm.nih.gov/ncbi/pubmed/out/pubmed_240101.dtd">\n'
            f'<PubmedArticleSet>{"".join(arts)}</PubmedArticleSet>')


def jats(p: dict[str, str]) -> str:
    return (f'<?xml version="1.0" encoding="UTF-8"?><article article-type="research-article"><front><article-meta>'
            f'<title-group><article-title>{escape(p["title"])}</article-title></title-group>'
            f'<abstract><p>{escape(p["abstract"])}</p></abstract></article-meta></front>'
            f'<body><sec><title>Results</title><p>{escape(p["body"])}</p></sec></body></article>')


def epmc_result(p: dict[str, str]) -> dict[str, Any]:
    return {"id": p["pmid"], "source": "MED", "pmid": p["pmid"], "pmcid": p.get("pmcid", ""), "doi": p["doi"],
            "title": p["title"], "abstractText": p["abstract"], "isOpenAccess": "Y" if p.get("pmcid") else "N",
            "inEPMC": "Y" if p.get("pmcid") else "N", "hasPDF": "Y", "pubYear": "2022"}


@dataclass
class FakeRepair:
    base: str = ""
    rate_limit: set[str] = field(default_factory=set)
    down: set[str] = field(default_factory=set)
    slow: set[str] = field(default_factory=set)   # answered after SLOW_S (a cancel lands first)
    log: list[tuple[str, str, dict[str, list[str]]]] = field(default_factory=list)

    pubmed = property(lambda self: f"{self.base}/eutils")
    europepmc = property(lambda self: f"{self.base}/europepmc/webservices/rest")
    crossref = property(lambda self: f"{self.base}/crossref")
    unpaywall = property(lambda self: f"{self.base}/unpaywall/v2")
    paywalled_url = property(lambda self: f"https://doi.org/{ASPREE_BLEEDING['doi']}")

    def requests_to(self, service: str) -> list[tuple[str, str, dict[str, list[str]]]]:
        return [r for r in self.log if r[0] == service]

    def answer(self, service: str, path: str, q: dict[str, str]) -> tuple[int, Any, str]:
        if service == "eutils":
            if path == "/esearch.fcgi":
                ids = [p["pmid"] for p in PUBMED if _matches(q.get("term", ""), p)]
                return 200, {"header": {"type": "esearch", "version": "0.3"},
                             "esearchresult": {"count": str(len(ids)), "retmax": str(len(ids)), "retstart": "0",
                                               "idlist": ids, "translationset": [],
                                               "querytranslation": q.get("term", "")}}, "application/json"
            if path == "/efetch.fcgi":
                want = q.get("id", "").split(",")
                return 200, efetch_xml([p for p in PUBMED if p["pmid"] in want]), "text/xml; charset=UTF-8"
        if service == "europepmc":
            rest = path.removeprefix("/webservices/rest")
            if rest == "/search":
                query = q.get("query", "")
                if query.startswith("EXT_ID:"):
                    pmid = query.split()[0].split(":", 1)[1]
                    hits = [p for p in EUROPEPMC if p["pmid"] == pmid]
                else:
                    hits = [p for p in EUROPEPMC if _matches(query, p)]
                return 200, {"version": "6.9", "hitCount": len(hits), "nextCursorMark": "*",
                             "request": {"queryString": query, "resultType": q.get("resultType", "lite")},
                             "resultList": {"result": [epmc_result(p) for p in hits]}}, "application/json"
            if rest.endswith("/fullTextXML"):
                pmcid = rest.split("/")[1]
                hit = next((p for p in EUROPEPMC if p.get("pmcid") == pmcid), None)
                return (200, jats(hit), "application/xml") if hit else (404, "", "text/plain")
        if service == "crossref" and path == "/works":
            items = [{"DOI": p["doi"], "title": [p["title"]], "type": "journal-article",
                      **({"abstract": p["abstract"]} if p.get("abstract") else {})}
                     for p in CROSSREF if _matches(q.get("query", ""), p)]
            return 200, {"status": "ok", "message-type": "work-list", "message-version": "1.0.0",
                         "message": {"total-results": len(items), "items": items, "items-per-page": 5}}, \
                "application/json"
        if service == "unpaywall" and path.startswith("/v2/"):
            doi = unquote(path[4:]).lower()
            if not q.get("email"):
                return 422, {"HTTP_status_code": 422, "error": True,
                             "message": "You must provide an email parameter"}, "application/json"
            if doi != ASPREE_BLEEDING["doi"]:
                return 404, {"HTTP_status_code": 404, "error": True,
                             "message": f"'{doi}' is an invalid doi. See https://doi.org/{doi}"}, "application/json"
            loc = {"url": f"{self.base}/papers/oa-copy", "url_for_landing_page": f"{self.base}/papers/oa-copy",
                   "url_for_pdf": None, "host_type": "repository", "version": "acceptedVersion",
                   "license": "cc-by", "is_best": True, "evidence": "oa repository (via OAI-PMH doi match)"}
            return 200, {"doi": doi, "doi_url": f"https://doi.org/{doi}", "is_oa": True, "oa_status": "green",
                         "journal_is_oa": False, "title": ASPREE_BLEEDING["title"], "best_oa_location": loc,
                         "oa_locations": [loc], "year": 2018}, "application/json"
        if service == "papers" and path == "/oa-copy":
            return 200, (f"<html><head><title>{ASPREE_BLEEDING['title']}</title></head><body><main><h1>"
                         f"{ASPREE_BLEEDING['title']}</h1><p>{ASPREE_BLEEDING['body']}</p><p>Accepted manuscript "
                         "deposited in a repository.</p></main></body></html>"), "text/html; charset=utf-8"
        return 404, {"status": "error", "message": "resource not found"}, "application/json"


def start_repair_servers() -> tuple[FakeRepair, Callable[[], None]]:
    fake = FakeRepair()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            service, _, rest = parts.path.lstrip("/").partition("/")
            q = {k: v[0] for k, v in parse_qs(parts.query).items()}
            fake.log.append((service, "/" + rest, parse_qs(parts.query)))
            extra: dict[str, str] = {}
            if service in fake.slow:
                time.sleep(SLOW_S)
            if service in fake.rate_limit:
                status, body, ctype = 429, {"error": "API rate limit exceeded", "api-key": "127.0.0.1",
                                            "count": "4", "limit": "3"}, "application/json"
                extra = {"Retry-After": "1"}
            elif service in fake.down:
                status, body, ctype = 500, "<html><body>Internal Server Error</body></html>", "text/html"
            else:
                status, body, ctype = fake.answer(service, "/" + rest, q)
            data = json.dumps(body).encode() if isinstance(body, (dict, list)) else str(body).encode()
            reply(self, status, data, ctype, extra)

    fake.base, stop = serve(Handler, "fake-repair")
    return fake, stop


@pytest.fixture
def repair_servers() -> Iterator[FakeRepair]:
    fake, stop = start_repair_servers()
    yield fake
    stop()
