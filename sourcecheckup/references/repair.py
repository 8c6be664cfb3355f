"""After the audit, the repair: a source that supports each unsupported statement, and open-access copies.

For each statement the run found unsupported, a query is built from its key terms, numbers and named
bodies and sent to PubMed (E-utilities esearch + efetch, for the abstracts), Europe PMC (REST search,
``resultType=core``: abstracts, and the open-access full text by PMCID) and Crossref (works search, its
abstracts). Every candidate with text is judged by the run's own judge(s) under the run's consensus rule;
one is offered only when the combined label is supported and every supporting judge's quote is found in
the candidate's text (checked here, never taken on trust). Otherwise the statement reads "no supporting
source found", with the candidates tried. With ``open_access``, each DOI or PMID the statement cites is
looked up in Unpaywall (by DOI, with the contact e-mail) and Europe PMC (by PMID, for a PMCID); the copy
is fetched (Unpaywall's location through the ordinary fetcher, with its safety rules and caps; Europe
PMC's full text from its API), judged, and labelled "open-access copy of ...".

The requests go through :class:`~sourcecheckup.references.lookup.MetadataClient`'s pacing, retries and
Retry-After handling. A service that fails is named on the repair, which stays ``incomplete`` so a later
``repair`` asks again; candidates already judged are kept and never judged twice.
"""
from __future__ import annotations

import asyncio
import html
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence
from urllib.parse import quote

import httpx

from ..evidence import SourceText, quote_in_source
from ..judges.base import Judge, open_judges
from ..metrics import Consensus, assess_run, pair_label
from ..models import FetchStatus, Label, Source, StatementStatus, Verdict
from ..pipeline import finalise_verdict
from ..store import Store
from .lookup import LookupFailed, MetadataClient
from .model import LookupSettings
from .step import doi_in_url, pmid_in_url

REPAIR_ROWS = 5                # candidates asked of each service per statement
MAX_QUERY_TERMS = 8
SHORT_QUERY_TERMS = 4          # the second try when all the terms together find nothing
NO_SOURCE = "no supporting source found"
NEEDS_NETWORK = ("repair needs the network: it searches PubMed, Europe PMC and Crossref and asks Unpaywall; "
                 "this run was made offline (a source pack or --offline), so give the services' endpoints "
                 "or run it on a machine that can reach them")
EUROPEPMC = "https://www.ebi.ac.uk/europepmc/webservices/rest"
UNPAYWALL = "https://api.unpaywall.org/v2"
_STOP = frozenset("""a an the and or but of in on at to for from by with without within into over under about as is are
was were be been being this that these those it its their there than then which who whom whose what when where
why how says said shows showed can could may might must should would will shall do does did not no nor so
such very more most less least also only often usually generally some any all each both either neither many
much per among between
after before during while people patients adults children""".split())


class RepairError(Exception):
    """Repair cannot start (offline run, no such statement); the message says why, in plain words."""


@dataclass(frozen=True)
class Candidate:
    """A paper found for a statement: what was found, how, and the text to judge it against."""

    key: str                # doi:... or pmid:... (one paper, whichever service found it)
    title: str
    url: str                # the citation offered: https://doi.org/DOI or the PubMed page
    found_by: str           # "pubmed search: <query>", "unpaywall: open-access copy of doi:..."
    text: str               # the abstract or the open-access full text
    text_kind: str          # abstract | full_text | none
    doi: str = ""
    pmid: str = ""
    pmcid: str = ""


@dataclass
class RepairResult:
    statement_pk: int
    kind: str                       # find | open_access
    status: str                     # offered | none_found | incomplete
    query: str
    offered: dict[str, Any] | None  # the candidate offered, with its verdict and quote
    tried: list[dict[str, Any]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)


def statement_query(text: str, limit: int = MAX_QUERY_TERMS) -> str:
    """Key terms of a statement for a literature search: named bodies and acronyms first, then numbers,
    then the longer content words, at most MAX_QUERY_TERMS, in their order of appearance."""
    words = re.findall(r"[A-Za-z][A-Za-z0-9\-]*[A-Za-z0-9]|\d+(?:\.\d+)?%?", text)
    named = [w for i, w in enumerate(words) if (w.isupper() and len(w) > 1) or (i > 0 and w[0].isupper())]
    numbers = [w for w in words if w[0].isdigit()]
    content = [w for w in words if w.lower() not in _STOP and not w[0].isdigit() and len(w) > 3]
    acronyms = {w for w in named if w.isupper()}   # WHO, CDC: a named body even when it spells a stop word
    picked: list[str] = []
    for w in named + numbers + content:
        if w.lower() not in {p.lower() for p in picked} and (w in acronyms or w.lower() not in _STOP):
            picked.append(w)
    keep = set(picked[:limit])
    return " ".join(w for w in dict.fromkeys(words) if w in keep)


def _plain(markup: str) -> str:
    """Text of JATS / HTML markup (Crossref and Europe PMC abstracts carry tags)."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", " ", markup or "")).split())


def _xml_text(el: ET.Element | None) -> str:
    return " ".join("".join(el.itertext()).split()) if el is not None else ""


def efetch_articles(xml_text: str) -> list[Candidate]:
    """PubMed's efetch XML (PubmedArticleSet) as candidates, the abstract as their text."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError:
        raise LookupFailed("pubmed", "the efetch answer is not XML") from None
    out = []
    for art in root.iter("PubmedArticle"):
        pmid = _xml_text(art.find("MedlineCitation/PMID"))
        title = _xml_text(art.find("MedlineCitation/Article/ArticleTitle"))
        abstract = " ".join(_xml_text(a) for a in art.findall("MedlineCitation/Article/Abstract/AbstractText"))
        ids = {a.get("IdType"): _xml_text(a) for a in art.findall("PubmedData/ArticleIdList/ArticleId")}
        doi = (ids.get("doi") or "").lower()
        out.append(Candidate(f"pmid:{pmid}" if not doi else f"doi:{doi}", title,
                             f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/", "", abstract,
                             "abstract" if abstract else "none", doi=doi, pmid=pmid, pmcid=ids.get("pmc") or ""))
    return out


def jats_body(xml_text: str) -> str:
    """The text of a JATS article (Europe PMC's fullTextXML): title, abstract and body."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError:
        raise LookupFailed("europepmc", "the full text is not XML") from None
    parts = [root.find(".//article-title"), root.find(".//abstract"), root.find(".//body")]
    return "\n\n".join(_xml_text(p) for p in parts if p is not None)


class RepairClient(MetadataClient):
    """The reference checks' polite client, taught the repair's services and their XML answers."""

    def __init__(self, settings: LookupSettings, cache: Any = None, *, europepmc_endpoint: str = EUROPEPMC,
                 unpaywall_endpoint: str = UNPAYWALL, ncbi_api_key: str = "",
                 transport: httpx.AsyncBaseTransport | None = None):
        super().__init__(settings, cache, transport=transport)
        self.europepmc = europepmc_endpoint.rstrip("/")
        self.unpaywall_endpoint = unpaywall_endpoint.rstrip("/")
        self.ncbi_api_key = ncbi_api_key

    def _ncbi_params(self) -> dict[str, str]:
        params = super()._ncbi_params()
        if self.ncbi_api_key:   # NCBI's 10 requests a second instead of 3
            params["api_key"] = self.ncbi_api_key
        return params

    async def _get_text(self, service: str, url: str, params: dict[str, str],
                        missing_is_none: bool = False) -> str | None:
        """GET a text answer (XML) under _get_json's pacing, Retry-After and failure rules; with
        ``missing_is_none``, None for any 404."""
        resp = await self._get(service, url, params, (lambda _r: True) if missing_is_none else None)
        return None if resp is None else resp.text

    async def pubmed_find(self, query: str) -> list[Candidate]:
        base = self.settings.pubmed_endpoint.rstrip("/")
        data = await self._get_json("pubmed", f"{base}/esearch.fcgi",
                                    {"db": "pubmed", "term": query, "retmax": str(REPAIR_ROWS), "retmode": "json",
                                     **self._ncbi_params()})
        result = (data or {}).get("esearchresult")
        if not isinstance(result, dict) or not isinstance(result.get("idlist", []), list):
            raise LookupFailed("pubmed", "the esearch answer has no esearchresult.idlist")
        ids = [str(i) for i in result.get("idlist", [])][:REPAIR_ROWS]
        if not ids:
            return []
        xml_text = await self._get_text("pubmed", f"{base}/efetch.fcgi",
                                        {"db": "pubmed", "id": ",".join(ids), "rettype": "abstract",
                                         "retmode": "xml", **self._ncbi_params()})
        return [_found(c, f"PubMed search: {query}") for c in efetch_articles(xml_text or "")]

    async def europepmc_find(self, query: str) -> list[Candidate]:
        data = await self._get_json("europepmc", f"{self.europepmc}/search",
                                    {"query": query, "format": "json", "resultType": "core",
                                     "pageSize": str(REPAIR_ROWS)})
        results = ((data or {}).get("resultList") or {}).get("result")
        if not isinstance(results, list):
            raise LookupFailed("europepmc", "the search answer has no resultList.result")
        out = []
        for r in results[:REPAIR_ROWS]:
            if not isinstance(r, dict):
                continue
            doi, pmid, pmcid = str(r.get("doi") or "").lower(), str(r.get("pmid") or ""), str(r.get("pmcid") or "")
            text, kind = _plain(str(r.get("abstractText") or "")), "abstract"
            if pmcid and r.get("isOpenAccess") == "Y":
                full = await self.europepmc_full_text(pmcid)
                if full:
                    text, kind = full, "full_text"
            key = (f"doi:{doi}" if doi else f"pmid:{pmid}") + ("#full_text" if kind == "full_text" else "")
            out.append(Candidate(key, _plain(str(r.get("title") or "")),   # full text: judged again, apart
                                 _citation_url(doi, pmid), f"Europe PMC search: {query}", text,
                                 kind if text else "none", doi=doi, pmid=pmid, pmcid=pmcid))
        return out

    async def europepmc_full_text(self, pmcid: str) -> str:
        xml_text = await self._get_text("europepmc", f"{self.europepmc}/{quote(pmcid)}/fullTextXML", {},
                                        missing_is_none=True)
        return jats_body(xml_text) if xml_text else ""

    async def europepmc_by_pmid(self, pmid: str) -> dict[str, Any] | None:
        data = await self._get_json("europepmc", f"{self.europepmc}/search",
                                    {"query": f"EXT_ID:{pmid} AND SRC:MED", "format": "json", "resultType": "core"})
        results = ((data or {}).get("resultList") or {}).get("result") or []
        return results[0] if results and isinstance(results[0], dict) else None

    async def crossref_find(self, query: str) -> list[Candidate]:
        params = {"query": query, "rows": str(REPAIR_ROWS), **self._mailto_params()}
        data = await self._get_json("crossref", f"{self.settings.crossref_endpoint.rstrip('/')}/works", params)
        items = ((data or {}).get("message") or {}).get("items")
        if not isinstance(items, list):
            raise LookupFailed("crossref", "the search answer has no item list")
        out = []
        for item in items[:REPAIR_ROWS]:
            if not isinstance(item, dict) or item.get("update-to"):
                continue   # a retraction notice or erratum is not a source
            doi = str(item.get("DOI") or "").lower()
            title = _plain(" ".join(item.get("title") or []))
            text = _plain(str(item.get("abstract") or ""))
            out.append(Candidate(f"doi:{doi}", title, _citation_url(doi, ""), f"Crossref search: {query}", text,
                                 "abstract" if text else "none", doi=doi))
        return out

    async def unpaywall(self, doi: str) -> dict[str, Any] | None:
        """Unpaywall's record of a DOI (None: Unpaywall does not know it). It requires the e-mail."""
        if not self.settings.contact_email:
            raise LookupFailed("unpaywall", "Unpaywall requires your contact e-mail (--contact-email)")
        return await self._get_json("unpaywall", f"{self.unpaywall_endpoint}/{quote(doi, safe='/();:')}",
                                    {"email": self.settings.contact_email}, missing_is_none=True)


def _found(c: Candidate, how: str) -> Candidate:
    return Candidate(c.key, c.title, _citation_url(c.doi, c.pmid), how, c.text, c.text_kind, c.doi, c.pmid, c.pmcid)


def _citation_url(doi: str, pmid: str) -> str:
    return f"https://doi.org/{doi}" if doi else f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/"


async def _judge(judges: Sequence[Judge], rule: Consensus, statement: str, cand: Candidate) -> dict[str, Any]:
    """Every judge's verdict on the statement against the candidate's text, and the combined label; a
    candidate counts as supporting only when the label is supported and every supporting quote is found."""
    source = Source(url=cand.url, status=FetchStatus.OK, title=cand.title, text=cand.text)
    st = SourceText.from_source(source)
    verdicts: list[Verdict] = []
    for judge in judges:
        try:
            v = await judge.verify(statement, st)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a judge that raises still gives an honest judge_error
            v = Verdict.error(judge.id, f"{type(exc).__name__}: {exc}", prompt_version=judge.prompt_version)
        verdicts.append(finalise_verdict(v, judge, source))
    label = pair_label([v.label for v in verdicts], rule)
    quotes = [v.quote for v in verdicts if v.label is Label.SUPPORTED]
    found = bool(quotes) and all(q and quote_in_source(q, cand.text) for q in quotes)
    supports = label is Label.SUPPORTED and found
    return {"label": label.value if label else "", "supports": supports, "quote": quotes[0] if found else "",
            "verdicts": [{"judge": v.judge_id, "label": v.label.value, "quote": v.quote,
                          "quote_found": v.quote_found, "rationale": v.rationale} for v in verdicts]}


def _cited_ids(store: Store, run_id: str, url: str) -> tuple[str, str]:
    """(DOI, PMID) of a cited source: from its URL, its reference check, or the page's metadata."""
    doi = doi_in_url(url).lower()
    pmid = pmid_in_url(url)
    check = store.reference_checks(run_id).get(url)
    if check is not None and check.matched is not None:
        doi = doi or check.matched.doi
        pmid = pmid or check.matched.pmid
    return doi, pmid


def targets(store: Store, run_id: str, statement_pk: int | None = None) -> list[tuple[Any, Any]]:
    """(response, statement) for each unsupported statement (or just the one asked for)."""
    data = store.load_run(run_id)
    out = []
    for r in assess_run(data):
        for s in r.statements:
            if statement_pk is not None and s.row.pk != statement_pk:
                continue
            if statement_pk is not None or s.status is StatementStatus.NOT_SUPPORTED:
                out.append((r, s))
    if statement_pk is not None and not out:
        raise RepairError(f"run {run_id} has no statement {statement_pk}")
    return out


async def run_repair(store: Store, run_id: str, client: RepairClient, *, statement_pk: int | None = None,
                     open_access: bool = False, judges: Sequence[Judge] | None = None, fetcher: Any = None,
                     progress: Callable[[str], None] | None = None,
                     cancelled: Callable[[], bool] = lambda: False) -> list[RepairResult]:
    """Find a source (and, with ``open_access``, open-access copies of the cited ones) for each unsupported
    statement not yet repaired. Stored as it goes: a cancel or a failure keeps what was found."""
    data = store.load_run(run_id)
    run = data.run
    if run.config.get("offline") or (run.config.get("fetch") or {}).get("sources_dir"):
        raise RepairError(NEEDS_NETWORK)
    rule = Consensus(run.config.get("consensus", Consensus.FIRST.value))
    todo = targets(store, run_id, statement_pk)
    kinds = ("find",) + (("open_access",) if open_access else ())
    results: list[RepairResult] = []
    say = progress or (lambda _m: None)
    async with open_judges(run.judges, run.config.get("judge_options"), given=judges) as verifiers:
        for resp, sa in todo:
            for kind in kinds:
                if cancelled():
                    return results
                done = store.repair(run_id, sa.row.pk, kind)
                if done is not None and done["status"] != "incomplete":
                    continue   # resumable: a finished repair is never asked again
                text = sa.row.statement.text
                say(f"{resp.rid}/s{sa.row.statement.index + 1}: {kind.replace('_', '-')}")
                if kind == "find":
                    result = await _find(store, run_id, sa.row.pk, text, client, verifiers, rule)
                else:
                    urls = list(sa.pair_labels) or list(resp.urls)   # the sources this statement cites
                    result = await _open_access(store, run_id, sa.row.pk, text, urls, client, verifiers, rule,
                                                fetcher)
                results.append(result)
    return results


async def _judge_and_keep(store: Store, run_id: str, statement_pk: int, kind: str, text: str,
                          cands: Sequence[Candidate], verifiers: Sequence[Judge], rule: Consensus,
                          tried: dict[str, dict[str, Any]]) -> None:
    for cand in cands:
        if cand.key in tried or not cand.key.split(":", 1)[1]:
            continue
        if cand.text_kind == "none":
            judged: dict[str, Any] = {"label": "", "supports": False, "quote": "", "verdicts": [],
                                      "note": "no abstract or open-access text to judge"}
        else:
            judged = await _judge(verifiers, rule, text, cand)
        copy = cand.key.split(":", 1)[1] if cand.key.startswith("oa:") else (
            f"https://europepmc.org/article/PMC/{cand.pmcid}" if cand.text_kind == "full_text" and cand.pmcid else "")
        row = {"key": cand.key, "title": cand.title, "url": cand.url, "copy_url": copy, "found_by": cand.found_by,
               "text_kind": cand.text_kind, "doi": cand.doi, "pmid": cand.pmid, "pmcid": cand.pmcid, **judged}
        tried[cand.key] = row
        store.save_repair_candidate(run_id, statement_pk, kind, row)


def _finish(store: Store, run_id: str, statement_pk: int, kind: str, query: str,
            tried: dict[str, dict[str, Any]], errors: list[str]) -> RepairResult:
    offered = next((c for c in tried.values() if c["supports"] and c["quote"]), None)
    status = "offered" if offered else ("incomplete" if errors else "none_found")
    store.save_repair(run_id, statement_pk, kind, status=status, query=query,
                      offered_key=offered["key"] if offered else "", errors=errors)
    return RepairResult(statement_pk, kind, status, query, offered, list(tried.values()), errors)


async def _find(store: Store, run_id: str, statement_pk: int, text: str, client: RepairClient,
                verifiers: Sequence[Judge], rule: Consensus) -> RepairResult:
    query = statement_query(text)
    tried = {c["key"]: c for c in store.repair_candidates(run_id, statement_pk, "find")}
    errors: list[str] = []
    # the services AND the terms: when every term together finds nothing, the key few are asked again
    queries = dict.fromkeys([query, statement_query(text, SHORT_QUERY_TERMS)])
    for q in queries:
        if q != query and (tried or errors):
            break
        for search in (client.pubmed_find, client.europepmc_find, client.crossref_find):
            if any(c["supports"] for c in tried.values()):
                break   # one supported source, with its quote found, is enough to offer
            try:
                cands = await search(q)
            except LookupFailed as exc:
                errors.append(str(exc))
                continue
            await _judge_and_keep(store, run_id, statement_pk, "find", text, cands, verifiers, rule, tried)
    return _finish(store, run_id, statement_pk, "find", query, tried, errors)


async def _open_access(store: Store, run_id: str, statement_pk: int, text: str, urls: Sequence[str],
                       client: RepairClient, verifiers: Sequence[Judge], rule: Consensus,
                       fetcher: Any) -> RepairResult:
    tried = {c["key"]: c for c in store.repair_candidates(run_id, statement_pk, "open_access")}
    errors: list[str] = []
    asked: list[str] = []
    for url in urls:
        doi, pmid = _cited_ids(store, run_id, url)
        if not (doi or pmid):
            continue
        asked.append(f"doi:{doi}" if doi else f"pmid:{pmid}")
        cands: list[Candidate] = []
        try:
            if pmid:
                rec = await client.europepmc_by_pmid(pmid) or {}
                pmcid = str(rec.get("pmcid") or "")
                if pmcid:
                    full = await client.europepmc_full_text(pmcid)
                    if full:
                        cands.append(Candidate(f"pmcid:{pmcid}", _plain(str(rec.get("title") or "")), url,
                                               f"Europe PMC full text {pmcid}: open-access copy of {url}", full,
                                               "full_text", doi=doi, pmid=pmid, pmcid=pmcid))
            if doi and not cands:
                rec = await client.unpaywall(doi) or {}
                loc = (rec.get("best_oa_location") if rec.get("is_oa") else None) or {}
                copy_url = str(loc.get("url_for_landing_page") or loc.get("url") or "")
                if copy_url and fetcher is not None:
                    src = await fetcher.fetch(copy_url)
                    if src.valid:
                        cands.append(Candidate(f"oa:{copy_url}", src.title or str(rec.get("title") or ""), url,
                                               f"Unpaywall ({loc.get('host_type') or 'repository'}, "
                                               f"{loc.get('version') or 'version unknown'}) {copy_url}: "
                                               f"open-access copy of {url}", src.text, "full_text", doi=doi))
                    else:
                        errors.append(f"the open-access copy {copy_url} could not be read: {src.reason}")
        except LookupFailed as exc:
            errors.append(str(exc))
        await _judge_and_keep(store, run_id, statement_pk, "open_access", text, cands, verifiers, rule, tried)
    return _finish(store, run_id, statement_pk, "open_access", " ".join(asked), tried, errors)


def accept_repair(store: Store, run_id: str, statement_pk: int, kind: str = "find") -> dict[str, Any]:
    """Accept an offered repair (a "no supporting source found" has nothing to accept)."""
    row = store.repair(run_id, statement_pk, kind)
    if row is None or row["status"] != "offered":
        raise RepairError(f"statement {statement_pk} has no offered {kind.replace('_', '-')} repair to accept")
    store.set_repair_decision(run_id, statement_pk, kind, "accepted")
    return row


def accepted_citations(store: Store, run_id: str, response_pk: int) -> dict[int, str]:
    """statement_pk -> the new citation of its accepted repair (a find before an open-access copy)."""
    out: dict[int, str] = {}
    for r in store.repairs(run_id):
        if r["response_pk"] != response_pk or r["decision"] != "accepted" or r["status"] != "offered":
            continue
        offered = next((c for c in r["candidates"] if c["key"] == r["offered_key"]), None)
        if offered is not None and (r["statement_pk"] not in out or r["kind"] == "find"):
            out[r["statement_pk"]] = offered["url"]
    return out


def apply_repairs(text: str, spans: Sequence[tuple[int, int, int]], citations: Mapping[int, str],
                  applied: Sequence[tuple[int, int, str, str]] = (), original: str | None = None
                  ) -> tuple[str, list[int]]:
    """``text`` with each accepted repair's citation after its statement. ``spans``: (statement_pk, start, end)
    in the original answer; ``applied``: the suggestions already applied (start, end, before, after) in the
    original's coordinates, so the spans are moved to the revised text. Returns the text and the statements
    that could not be placed (no span, or removed by a deletion)."""
    unplaced = [pk for pk in citations if not any(s[0] == pk and 0 <= s[1] < s[2] for s in spans)]
    inserts: list[tuple[int, str]] = []
    for pk, start, end in spans:
        if pk not in citations or not 0 <= start < end:
            continue
        pos = end
        for a_start, a_end, _before, after in applied:
            if a_start <= start and end <= a_end:   # the statement was rewritten: after the rewrite
                if not after:
                    pos = -1
                    break
                pos = a_start + len(after)
        if pos < 0:
            unplaced.append(pk)
            continue
        shift = sum(len(after) - (a_end - a_start) for a_start, a_end, _b, after in applied if a_end <= start)
        pos += shift
        if pos == end + shift and original is not None:   # an untouched sentence: found where it now is
            sentence = original[start:end]               # (a deletion also takes the space before it)
            at = text.find(sentence, max(0, pos - len(sentence) - 2))
            if at >= 0:
                pos = at + len(sentence)
        inserts.append((min(pos, len(text)), citations[pk]))
    for pos, url in sorted(inserts, reverse=True):
        body = text[:pos]
        punct = re.search(r"[.!?]+$", body)
        cut = punct.start() if punct else pos   # "fact (URL)." rather than "fact. (URL)"
        text = text[:cut] + f" ({url})" + text[cut:]
    return text, unplaced
