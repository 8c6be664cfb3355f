"""Fake Crossref, PubMed E-utilities and OpenAlex on one 127.0.0.1 server, in the APIs' own response shapes.

Use the ``scholarly`` pytest fixture (function scope: each test gets a fresh server and log), or
``start_scholarly()`` from scripts. Base URLs: ``.crossref`` (``BASE/works/{doi}``,
``BASE/works?query.bibliographic=``), ``.pubmed`` (``BASE/esearch.fcgi``, ``BASE/esummary.fcgi``),
``.openalex`` (``BASE/works/doi:{doi}``, ``BASE/works/pmid:{pmid}``, ``BASE/works?search=``) and
``.retraction_csv_url`` (the Retraction Watch CSV of tests/fixtures/references/).

Switches: ``slow`` (True, or a set of service names) sleeps past any test's client timeout;
``rate_limit_next = N`` answers the next N requests with 429 and ``Retry-After: 1``;
``down`` (a set of service names) answers 500; ``garbled`` (likewise) answers 200 with an HTML page.
Every request is logged (service, path, query, headers, monotonic time). The catalogue holds real
papers as the services hold them; ``CITED`` has reference strings as an answer would write them, one
per outcome, for end-to-end tests.
"""
from __future__ import annotations

import json
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator
from urllib.parse import parse_qs, unquote, urlsplit

import pytest

SLOW_S = 2.0        # longer than the tests' client timeout (0.5 s), short enough to end quickly
RETRACTION_CSV = Path(__file__).resolve().parents[1] / "fixtures" / "references" / "retraction_watch.csv"


@dataclass(frozen=True)
class Paper:
    doi: str
    pmid: str
    title: str
    authors: tuple[tuple[str, str], ...]     # (given, family)
    date: tuple[int, int, int]
    journal: str                             # Crossref container-title
    abbrev: str                              # Crossref short-container-title, PubMed source
    pubmed_journal: str                      # PubMed fulljournalname
    volume: str
    issue: str
    pages: str
    openalex_id: str
    retracted_by: dict[str, Any] | None = None    # the Crossref notice that updates it
    pubtypes: tuple[str, ...] = ("Journal Article",)


MEHRA_NOTICE_DOI = "10.1016/s0140-6736(20)31324-6"

PAPERS: tuple[Paper, ...] = (
    # 1. exists, and the tests cite it correctly
    Paper("10.1056/nejmoa1504720", "26378978",
          "Empagliflozin, Cardiovascular Outcomes, and Mortality in Type 2 Diabetes",
          (("Bernard", "Zinman"), ("Christoph", "Wanner"), ("John M.", "Lachin"), ("David", "Fitchett"),
           ("Erich", "Bluhmki"), ("Stefan", "Hantel"), ("Michaela", "Mattheus"), ("Theresa", "Devins"),
           ("Odd Erik", "Johansen"), ("Hans J.", "Woerle"), ("Uli C.", "Broedl"), ("Silvio E.", "Inzucchi")),
          (2015, 11, 26), "New England Journal of Medicine", "N Engl J Med",
          "The New England journal of medicine", "373", "22", "2117-2128", "W2186212349",
          pubtypes=("Journal Article", "Randomized Controlled Trial", "Multicenter Study")),
    # 2. exists, but the tests cite its DOI for another paper
    Paper("10.1056/nejmoa1603827", "27295427", "Liraglutide and Cardiovascular Outcomes in Type 2 Diabetes",
          (("Steven P.", "Marso"), ("Gilbert H.", "Daniels"), ("Kirstine", "Brown-Frandsen"),
           ("Peter", "Kristensen"), ("Johannes F.E.", "Mann"), ("Michael A.", "Nauck"), ("Steven E.", "Nissen"),
           ("Stuart", "Pocock"), ("Neil R.", "Poulter"), ("Lasse S.", "Ravn"), ("John B.", "Buse")),
          (2016, 7, 28), "New England Journal of Medicine", "N Engl J Med",
          "The New England journal of medicine", "375", "4", "311-322", "W2431283862",
          pubtypes=("Journal Article", "Randomized Controlled Trial")),
    # 3. retracted: a Crossref notice updates it, PubMed types it, Retraction Watch lists it
    Paper("10.1016/s0140-6736(20)31180-6", "32450107",
          "Hydroxychloroquine or chloroquine with or without a macrolide for treatment of COVID-19: "
          "a multinational registry analysis",
          (("Mandeep R", "Mehra"), ("Sapan S", "Desai"), ("Frank", "Ruschitzka"), ("Amit N", "Patel")),
          (2020, 5, 22), "The Lancet", "The Lancet", "Lancet (London, England)", "395", "10240", "1820",
          "W3027569424",
          retracted_by={"updated": {"date-parts": [[2020, 6, 5]], "date-time": "2020-06-05T00:00:00Z",
                                    "timestamp": 1591315200000},
                        "DOI": MEHRA_NOTICE_DOI, "type": "retraction", "source": "publisher",
                        "label": "Retraction"},
          pubtypes=("Journal Article", "Multicenter Study", "Retracted Publication")),
    # 4-5. the only near neighbours of the fabricated vitamin D reference: weak candidates
    Paper("10.1080/03007995.2018.1519503", "30182753",
          "A randomized, double-blinded, placebo-controlled, parallel trial of vitamin D3 supplementation "
          "in adult patients with migraine",
          (("Parisa", "Gazerani"), ("Rasmus", "Fuglsang"), ("John G", "Pedersen"), ("Jeppe", "Sørensen"),
           ("Jan L", "Kjeldsen"), ("Hayder", "Yassin"), ("Brian S", "Nedergaard")),
          (2019, 4, 3), "Current Medical Research and Opinion", "Curr Med Res Opin",
          "Current medical research and opinion", "35", "4", "715-723", "W2888446925"),
    Paper("10.1007/s10072-019-04220-8", "31897949",
          "Vitamin D3 might improve headache characteristics and protect against inflammation in migraine: "
          "a randomized clinical trial",
          (("Zeinab", "Ghorbani"), ("Mansoureh", "Togha"), ("Pegah", "Rafiee"), ("Zahra", "Ahmadi")),
          (2020, 1, 2), "Neurological Sciences", "Neurol Sci", "Neurological sciences", "41", "5", "1183-1192",
          "W2998567214"),
    # 6-7. one guideline printed in two journals: a reference without its journal fits both
    Paper("10.1161/hyp.0000000000000065", "29133356",
          "2017 ACC/AHA/AAPA/ABC/ACPM/AGS/APhA/ASH/ASPC/NMA/PCNA Guideline for the Prevention, Detection, "
          "Evaluation, and Management of High Blood Pressure in Adults: A Report of the American College of "
          "Cardiology/American Heart Association Task Force on Clinical Practice Guidelines",
          (("Paul K.", "Whelton"), ("Robert M.", "Carey"), ("Wilbert S.", "Aronow"), ("Donald E.", "Casey")),
          (2018, 6, 1), "Hypertension", "Hypertension", "Hypertension (Dallas, Tex. : 1979)", "71", "6",
          "e13-e115", "W2766578912", pubtypes=("Journal Article", "Practice Guideline")),
    Paper("10.1016/j.jacc.2017.11.006", "29146535",
          "2017 ACC/AHA/AAPA/ABC/ACPM/AGS/APhA/ASH/ASPC/NMA/PCNA Guideline for the Prevention, Detection, "
          "Evaluation, and Management of High Blood Pressure in Adults: A Report of the American College of "
          "Cardiology/American Heart Association Task Force on Clinical Practice Guidelines",
          (("Paul K.", "Whelton"), ("Robert M.", "Carey"), ("Wilbert S.", "Aronow"), ("Donald E.", "Casey")),
          (2018, 5, 15), "Journal of the American College of Cardiology", "Journal of the American College of "
          "Cardiology", "Journal of the American College of Cardiology", "71", "19", "e127-e248", "W2767081398",
          pubtypes=("Journal Article", "Practice Guideline")),
)
BY_DOI = {p.doi: p for p in PAPERS}
BY_PMID = {p.pmid: p for p in PAPERS}
MEHRA_NOTICE = {  # the Crossref record of the retraction notice itself: it updates the paper
    "DOI": MEHRA_NOTICE_DOI, "type": "journal-article",
    "title": ["Retraction—Hydroxychloroquine or chloroquine with or without a macrolide for treatment of "
              "COVID-19: a multinational registry analysis"],
    "author": [{"given": "Mandeep R", "family": "Mehra", "sequence": "first", "affiliation": []}],
    "container-title": ["The Lancet"], "short-container-title": ["The Lancet"],
    "issued": {"date-parts": [[2020, 6, 5]]},
    "update-to": [{"updated": {"date-parts": [[2020, 6, 5]]}, "DOI": "10.1016/s0140-6736(20)31180-6",
                   "type": "retraction", "source": "publisher", "label": "Retraction"}],
}

# reference strings an answer might write, one per outcome the fake services lead to
CITED = {
    "verified": "Zinman B, Wanner C, Lachin JM, et al. Empagliflozin, cardiovascular outcomes, and mortality in "
                "type 2 diabetes. N Engl J Med. 2015;373(22):2117-2128. doi:10.1056/NEJMoa1504720",
    "mismatch": "Smith J, Brown K. Metformin and colorectal cancer risk in type 2 diabetes. JAMA. "
                "2019;321(5):456-463. doi:10.1056/NEJMoa1603827",
    "unknown_doi": "Lee H, Park S. Intermittent fasting and HbA1c in adults with prediabetes. JAMA. "
                   "2019;322(3):211-219. doi:10.1001/jama.2019.99999",
    "fabricated": "Johnson A, Patel R. Vitamin D supplementation eliminates migraine recurrence: a randomized "
                  "trial. J Neurol Sci. 2021;412:118-125.",
    "retracted": "Mehra MR, Desai SS, Ruschitzka F, Patel AN. Hydroxychloroquine or chloroquine with or without a "
                 "macrolide for treatment of COVID-19: a multinational registry analysis. Lancet. 2020. "
                 "doi:10.1016/S0140-6736(20)31180-6",
    "ambiguous": "Whelton PK, Carey RM, Aronow WS, et al. 2017 ACC/AHA/AAPA/ABC/ACPM/AGS/APhA/ASH/ASPC/NMA/PCNA "
                 "guideline for the prevention, detection, evaluation, and management of high blood pressure in "
                 "adults. 2018.",
}

# one answer citing a real, a mismatched, a fabricated and a retracted reference (issue 18's "done when")
FOUR_REFERENCES_ANSWER = f"""Empagliflozin reduced death from cardiovascular causes by 38% relative to placebo [1].
Metformin halves the risk of colorectal cancer in type 2 diabetes [2].
Vitamin D supplements eliminate migraine recurrence [3].
Hydroxychloroquine was associated with increased in-hospital mortality in COVID-19 [4].

References
1. {CITED["verified"]}
2. {CITED["mismatch"]}
3. {CITED["fabricated"]}
4. {CITED["retracted"]}
"""

_STOP = {"the", "and", "for", "with", "without", "from", "a", "an", "of", "in", "on", "or", "to", "et", "al"}
_MONTHS = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", re.sub(r"\[[a-z]+\]", " ", text.lower()))
            if w not in _STOP and len(w) > 1}


def search(query: str, min_overlap: float = 0.2) -> list[tuple[Paper, float]]:
    """Papers sharing at least ``min_overlap`` of the query's words, best first (a crude relevance)."""
    q = _words(query)
    if not q:
        return []
    hits = []
    for p in PAPERS:
        words = _words(" ".join([p.title, p.journal, p.abbrev, str(p.date[0])] + [f for _, f in p.authors]))
        overlap = len(q & words) / len(q)
        if overlap >= min_overlap:
            hits.append((p, overlap))
    return sorted(hits, key=lambda h: -h[1])


# --- the three APIs' shapes ---------------------------------------------------------------------------

def crossref_item(p: Paper, score: float | None = None) -> dict[str, Any]:
    item: dict[str, Any] = {
        "indexed": {"date-parts": [[2025, 3, 1]]}, "publisher": "Elsevier BV" if "10.1016" in p.doi else "Publisher",
        "issue": p.issue, "DOI": p.doi.upper() if p.doi.startswith("10.1056") else p.doi, "type": "journal-article",
        "page": p.pages, "source": "Crossref", "title": [p.title], "prefix": p.doi.split("/")[0],
        "volume": p.volume, "member": "78",
        "author": [{"given": g, "family": f, "sequence": "first" if i == 0 else "additional", "affiliation": []}
                   for i, (g, f) in enumerate(p.authors)],
        "container-title": [p.journal], "short-container-title": [p.abbrev],
        "issued": {"date-parts": [list(p.date)]},
        "published-print": {"date-parts": [list(p.date[:2])]},
        "URL": f"https://dx.doi.org/{p.doi}", "ISSN": ["0028-4793"],
    }
    if p.retracted_by:
        item["updated-by"] = [p.retracted_by]
    if score is not None:
        item["score"] = score
    return item


def pubmed_summary(p: Paper) -> dict[str, Any]:
    y, m, d = p.date
    return {"uid": p.pmid, "pubdate": f"{y} {_MONTHS[m - 1]} {d}", "epubdate": "",
            "source": p.abbrev if p.abbrev != "The Lancet" else "Lancet",
            "authors": [{"name": f"{f} {''.join(w[0] for w in g.replace('.', ' ').split())}",
                         "authtype": "Author", "clusterid": ""} for g, f in p.authors],
            "lastauthor": p.authors[-1][1], "title": p.title + ".", "sorttitle": p.title.lower(),
            "volume": p.volume, "issue": p.issue, "pages": p.pages, "lang": ["eng"], "issn": "",
            "pubtype": list(p.pubtypes),
            "articleids": [{"idtype": "pubmed", "idtypen": 1, "value": p.pmid},
                           {"idtype": "doi", "idtypen": 3, "value": p.doi}],
            "fulljournalname": p.pubmed_journal, "elocationid": f"doi: {p.doi}", "doctype": "citation",
            "sortpubdate": f"{y}/{m:02d}/{d:02d} 00:00"}


def openalex_work(p: Paper) -> dict[str, Any]:
    first, last = (p.pages.split("-") + [""])[:2]
    return {"id": f"https://openalex.org/{p.openalex_id}", "doi": f"https://doi.org/{p.doi}",
            "title": p.title, "display_name": p.title, "publication_year": p.date[0],
            "publication_date": "%04d-%02d-%02d" % p.date, "type": "article",
            "ids": {"openalex": f"https://openalex.org/{p.openalex_id}", "doi": f"https://doi.org/{p.doi}",
                    "pmid": f"https://pubmed.ncbi.nlm.nih.gov/{p.pmid}"},
            "primary_location": {"is_oa": False, "landing_page_url": f"https://doi.org/{p.doi}",
                                 "source": {"id": "https://openalex.org/S1", "display_name": p.journal,
                                            "type": "journal"}},
            "authorships": [{"author_position": "first" if i == 0 else "middle",
                             "author": {"id": f"https://openalex.org/A{i}", "display_name": f"{g} {f}"},
                             "raw_author_name": f"{g} {f}"} for i, (g, f) in enumerate(p.authors)],
            "biblio": {"volume": p.volume, "issue": p.issue, "first_page": first, "last_page": last},
            "is_retracted": bool(p.retracted_by), "cited_by_count": 1000}


# --- the server ---------------------------------------------------------------------------------------

@dataclass
class LoggedRequest:
    service: str
    path: str
    query: dict[str, list[str]]
    headers: dict[str, str]
    at: float
    status: int = 0


@dataclass
class FakeScholarly:
    base: str = ""
    slow: bool | set[str] = False
    rate_limit_next: int = 0
    down: set[str] = field(default_factory=set)
    garbled: set[str] = field(default_factory=set)
    log: list[LoggedRequest] = field(default_factory=list)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def crossref(self) -> str:
        return f"{self.base}/crossref"

    @property
    def pubmed(self) -> str:
        return f"{self.base}/pubmed"

    @property
    def openalex(self) -> str:
        return f"{self.base}/openalex"

    @property
    def retraction_csv_url(self) -> str:
        return f"{self.base}/retraction-watch/retraction_watch.csv"

    def requests_to(self, service: str) -> list[LoggedRequest]:
        return [r for r in self.log if r.service == service]

    def is_slow(self, service: str) -> bool:
        return self.slow is True or (isinstance(self.slow, set) and service in self.slow)

    def take_rate_limit(self) -> bool:
        with self._lock:
            if self.rate_limit_next > 0:
                self.rate_limit_next -= 1
                return True
            return False

    # answers: (status, body as JSON or text)
    def answer(self, service: str, path: str, q: dict[str, list[str]]) -> tuple[int, Any]:
        one = {k: v[0] for k, v in q.items()}
        if service == "crossref":
            return self._crossref(path, one)
        if service == "pubmed":
            return self._pubmed(path, one)
        if service == "openalex":
            return self._openalex(path, one)
        if service == "retraction-watch" and path.endswith("/retraction_watch.csv"):
            return 200, RETRACTION_CSV.read_bytes()
        return 404, {"error": f"no route {path}"}

    def _crossref(self, path: str, q: dict[str, str]) -> tuple[int, Any]:
        if path.startswith("/works/"):
            doi = unquote(path[len("/works/"):]).lower()
            if doi == MEHRA_NOTICE_DOI:
                return 200, {"status": "ok", "message-type": "work", "message-version": "1.0.0",
                             "message": MEHRA_NOTICE}
            paper = BY_DOI.get(doi)
            if paper is None:
                return 404, "Resource not found."
            return 200, {"status": "ok", "message-type": "work", "message-version": "1.0.0",
                         "message": crossref_item(paper)}
        if path == "/works":
            query = q.get("query.bibliographic") or q.get("query") or ""
            rows = int(q.get("rows", "20"))
            hits = search(query)[:rows]
            items = []
            for p, s in hits:
                items.append(crossref_item(p, score=round(40 + 60 * s, 3)))
                if p.retracted_by:   # Crossref's search finds the retraction notice beside the paper
                    items.append(dict(MEHRA_NOTICE, score=round(39 + 60 * s, 3)))
            return 200, {"status": "ok", "message-type": "work-list", "message-version": "1.0.0",
                         "message": {"facets": {}, "total-results": len(items), "items": items,
                                     "items-per-page": rows, "query": {"start-index": 0, "search-terms": query}}}
        return 404, "Resource not found."

    def _pubmed(self, path: str, q: dict[str, str]) -> tuple[int, Any]:
        header = {"type": "esearch" if "esearch" in path else "esummary", "version": "0.3"}
        if path == "/esearch.fcgi":
            ids = [p.pmid for p, _ in search(q.get("term", ""), min_overlap=0.3)][:int(q.get("retmax", "20"))]
            return 200, {"header": header, "esearchresult": {
                "count": str(len(ids)), "retmax": str(len(ids)), "retstart": "0", "idlist": ids,
                "translationset": [], "querytranslation": q.get("term", "")}}
        if path == "/esummary.fcgi":
            ids = [i for i in q.get("id", "").split(",") if i]
            result: dict[str, Any] = {"uids": ids}
            for i in ids:
                paper = BY_PMID.get(i)
                result[i] = pubmed_summary(paper) if paper else {"uid": i, "error": "cannot get document summary"}
            return 200, {"header": header, "result": result}
        return 404, "<html><body>Not Found</body></html>"

    def _openalex(self, path: str, q: dict[str, str]) -> tuple[int, Any]:
        if path.startswith("/works/"):
            key = unquote(path[len("/works/"):]).lower()
            paper = None
            if key.startswith("doi:"):
                paper = BY_DOI.get(key[4:].removeprefix("https://doi.org/"))
            elif key.startswith("pmid:"):
                paper = BY_PMID.get(key[5:])
            if paper is None:
                return 404, {"error": "404 Not Found", "message": "The requested URL was not found on the server."}
            return 200, openalex_work(paper)
        if path == "/works":
            hits = search(q.get("search", ""))[:int(q.get("per-page", "25"))]
            return 200, {"meta": {"count": len(hits), "db_response_time_ms": 12, "page": 1,
                                  "per_page": int(q.get("per-page", "25"))},
                         "results": [dict(openalex_work(p), relevance_score=round(100 * s, 3)) for p, s in hits],
                         "group_by": []}
        return 404, {"error": "404 Not Found"}


def start_scholarly() -> tuple[FakeScholarly, Callable[[], None]]:
    """Start the fake services on a random loopback port; returns (the fake, stop)."""
    fake = FakeScholarly()

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args: object) -> None:
            pass

        def do_GET(self) -> None:
            parts = urlsplit(self.path)
            service, _, rest = parts.path.lstrip("/").partition("/")
            entry = LoggedRequest(service, "/" + rest, parse_qs(parts.query),
                                  {k.lower(): v for k, v in self.headers.items()}, time.monotonic())
            fake.log.append(entry)
            if fake.is_slow(service):
                time.sleep(SLOW_S)
            if fake.take_rate_limit():
                status, body, extra = 429, {"status": "error", "message": "Too many requests"}, {"Retry-After": "1"}
            elif service in fake.down:
                status, body, extra = 500, "<html><body>Internal Server Error</body></html>", {}
            elif service in fake.garbled:
                status, body, extra = 200, "<html><body>Service temporarily moved</body></html>", {}
            else:
                status, body = fake.answer(service, "/" + rest, entry.query)
                extra = {}
            entry.status = status
            if isinstance(body, (dict, list)):
                data, ctype = json.dumps(body).encode(), "application/json"
            elif isinstance(body, bytes):
                data, ctype = body, "text/csv; charset=utf-8"
            else:
                data, ctype = body.encode(), "text/plain"
            reply(self, status, data, ctype, extra)

    fake.base, stop = serve(Handler, "fake-scholarly")
    return fake, stop


def reply(handler: BaseHTTPRequestHandler, status: int, data: bytes, ctype: str, extra: dict[str, str]) -> None:
    """Send one answer; a client that gave up (a timeout test) is no error of the server's."""
    try:
        handler.send_response(status)
        handler.send_header("Content-Type", ctype)
        handler.send_header("Content-Length", str(len(data)))
        for k, v in extra.items():
            handler.send_header(k, v)
        handler.end_headers()
        handler.wfile.write(data)
    except (BrokenPipeError, ConnectionResetError):
        pass


def serve(handler: type[BaseHTTPRequestHandler], name: str) -> tuple[str, Callable[[], None]]:
    """Serve ``handler`` on a free loopback port in a thread: its base URL and the function that stops it."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05}, name=name, daemon=True)
    thread.start()
    host, port = httpd.server_address[:2]

    def stop() -> None:
        httpd.shutdown()
        httpd.server_close()
        thread.join(timeout=2)

    return f"http://{host}:{port}", stop


@pytest.fixture
def scholarly() -> Iterator[FakeScholarly]:
    """Fake Crossref / PubMed / OpenAlex on 127.0.0.1 (``.crossref``, ``.pubmed``, ``.openalex``, ``.log``)."""
    fake, stop = start_scholarly()
    yield fake
    stop()
