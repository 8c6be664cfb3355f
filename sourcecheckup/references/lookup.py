"""Ask Crossref, PubMed E-utilities and OpenAlex for a paper's record, politely.

One :class:`MetadataClient` per run. Each method returns a :class:`Record` (or a tuple of them for a
search), ``None`` for a definite "no record", and raises :class:`LookupFailed` when the service could
not be asked (unreachable, timed out, 5xx, rate limited too long, a garbled answer): a failure is never
an answer. Identity: a User-Agent naming SourceCheckup and the contact e-mail, Crossref's and
OpenAlex's ``mailto=``, NCBI's ``tool=`` and ``email=``. Each service gets a minimum interval between
requests; a 429 or 503 with Retry-After is waited out and retried a bounded number of times.
Successful answers and definite "no record" answers are cached when a cache is given (the Store).
"""
from __future__ import annotations

import asyncio
import html
import re
import time
from typing import Any, Callable, Protocol
from urllib.parse import quote, urlsplit

import httpx

from .. import __version__
from ..fetching.base import backoff_delay, parse_retry_after
from .model import LookupSettings, Notice, NoticeKind, Record, Reference

SERVICES = ("crossref", "pubmed", "openalex")
SEARCH_ROWS = 5                   # candidates asked for per bibliographic search
MAX_TRIES = 3                     # one request and at most two retries after a 429/503
MAX_RETRY_WAIT_S = 30.0           # a longer Retry-After fails the lookup instead of stalling the run
CACHE_MAX_AGE_S = 30 * 24 * 3600  # a cached answer older than this is asked again (new notices)
SERVICE_CAPS = {"pubmed": 3.0}    # NCBI allows 3 requests a second without an API key
NCBI_TOOL = "sourcecheckup"
# Crossref update types -> notices (others, such as "new_version" or "addendum", are not notices)
_UPDATE_KINDS = {"retraction": NoticeKind.RETRACTION, "withdrawal": NoticeKind.WITHDRAWAL,
                 "removal": NoticeKind.WITHDRAWAL, "expression_of_concern": NoticeKind.EXPRESSION_OF_CONCERN,
                 "correction": NoticeKind.CORRECTION, "erratum": NoticeKind.CORRECTION,
                 "corrigendum": NoticeKind.CORRECTION, "partial_retraction": NoticeKind.CORRECTION}
_NOTICE_PUBTYPES = {"Retraction of Publication", "Published Erratum", "Expression of Concern"}
_NOTICE_TYPES = {"retraction", "erratum"}          # OpenAlex work types of notices
_INITIALS = re.compile(r"^[A-Z]{1,4}$")
_PARTICLES = {"van", "von", "der", "den", "de", "del", "della", "da", "di", "dos", "du", "la", "le", "ten", "ter", "st"}


class LookupFailed(Exception):
    """A metadata service could not be asked, or its answer could not be read."""

    def __init__(self, service: str, reason: str):
        super().__init__(f"{service}: {reason}")
        self.service = service
        self.reason = reason


class LookupCache(Protocol):
    def lookup_cache_get(self, service: str, key: str) -> dict[str, Any] | None: ...

    def lookup_cache_put(self, service: str, key: str, payload: dict[str, Any]) -> None: ...


def user_agent(contact_email: str = "") -> str:
    """SourceCheckup's polite identity (Crossref asks for a contact in the User-Agent)."""
    return f"SourceCheckup/{__version__}" + (f" (mailto:{contact_email})" if contact_email else "")


class MetadataClient:
    """Crossref, PubMed and OpenAlex behind one polite, rate-limited, cached client."""

    def __init__(self, settings: LookupSettings, cache: LookupCache | None = None, *,
                 transport: httpx.AsyncBaseTransport | None = None):
        self.settings = settings
        self.cache = cache
        self.requests_made = 0            # requests actually sent (a cache hit sends none)
        self._client = httpx.AsyncClient(headers={"User-Agent": user_agent(settings.contact_email),
                                                  "Accept": "application/json"},
                                         timeout=settings.timeout_s, follow_redirects=True, transport=transport)
        self._next_at: dict[str, float] = {}
        self._locks: dict[str, asyncio.Lock] = {}

    async def aclose(self) -> None:
        await self._client.aclose()

    async def __aenter__(self) -> "MetadataClient":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    # --- Crossref ---------------------------------------------------------------------------------------

    async def crossref_work(self, doi: str) -> Record | None:
        """Crossref's record of ``doi``; None when Crossref has no such DOI (its 404)."""
        doi = doi.strip().lower()

        async def ask() -> Record | None:
            data = await self._get_json("crossref", f"{_base(self.settings.crossref_endpoint)}/works/"
                                        f"{quote(doi, safe='/();:')}", self._mailto_params(), missing_is_none=True)
            return None if data is None else _parsed("crossref", _crossref_record, _message(data))
        return await self._cached_one("crossref", f"work:{doi}", ask)

    async def crossref_search(self, ref: Reference) -> tuple[Record, ...]:
        """Crossref's best bibliographic matches for the reference as written (up to SEARCH_ROWS)."""
        query = bibliographic_query(ref)
        if not query:
            return ()

        async def ask() -> tuple[Record, ...]:
            params = {"query.bibliographic": query, "rows": str(SEARCH_ROWS), **self._mailto_params()}
            data = await self._get_json("crossref", f"{_base(self.settings.crossref_endpoint)}/works", params)
            items = _message(data).get("items")
            if not isinstance(items, list):
                raise LookupFailed("crossref", "the search answer has no item list")
            return tuple(_parsed("crossref", _crossref_record, item) for item in items
                         if isinstance(item, dict) and not item.get("update-to"))   # a notice is not a candidate
        return await self._cached_many("crossref", f"search:{query}", ask)

    def _mailto_params(self) -> dict[str, str]:
        return {"mailto": self.settings.contact_email} if self.settings.contact_email else {}

    # --- PubMed E-utilities -----------------------------------------------------------------------------

    async def pubmed_summary(self, pmid: str) -> Record | None:
        """PubMed's summary of ``pmid``; None when PubMed has no such article."""
        pmid = pmid.strip()

        async def ask() -> Record | None:
            records = await self._esummary([pmid])
            return records[0] if records else None
        return await self._cached_one("pubmed", f"summary:{pmid}", ask)

    async def pubmed_search(self, ref: Reference) -> tuple[Record, ...]:
        """PubMed articles matching the reference's title (or first author, journal and year)."""
        term = pubmed_term(ref)
        if not term:
            return ()

        async def ask() -> tuple[Record, ...]:
            params = {"db": "pubmed", "term": term, "retmax": str(SEARCH_ROWS), "retmode": "json",
                      **self._ncbi_params()}
            data = await self._get_json("pubmed", f"{_base(self.settings.pubmed_endpoint)}/esearch.fcgi", params)
            result = data.get("esearchresult") if isinstance(data, dict) else None
            if not isinstance(result, dict) or not isinstance(result.get("idlist", []), list):
                raise LookupFailed("pubmed", "the esearch answer has no esearchresult.idlist")
            ids = [str(i) for i in result.get("idlist", [])][:SEARCH_ROWS]
            return tuple(await self._esummary(ids, search=True)) if ids else ()
        return await self._cached_many("pubmed", f"search:{term}", ask)

    async def _esummary(self, ids: list[str], *, search: bool = False) -> list[Record]:
        params = {"db": "pubmed", "id": ",".join(ids), "retmode": "json", **self._ncbi_params()}
        data = await self._get_json("pubmed", f"{_base(self.settings.pubmed_endpoint)}/esummary.fcgi", params)
        result = data.get("result") if isinstance(data, dict) else None
        if result is None:
            if isinstance(data, dict) and "esummaryresult" in data:   # NCBI's form for "invalid uid"
                return []
            raise LookupFailed("pubmed", "the esummary answer has no result")
        if not isinstance(result, dict):
            raise LookupFailed("pubmed", "the esummary result is not an object")
        records = []
        for uid in result.get("uids") or ids:
            entry = result.get(str(uid))
            if isinstance(entry, dict) and not entry.get("error"):
                if search and _NOTICE_PUBTYPES & set(entry.get("pubtype") or []):
                    continue   # in a search, the retraction notice or erratum is not a candidate
                records.append(_parsed("pubmed", _pubmed_record, entry))
        return records

    def _ncbi_params(self) -> dict[str, str]:
        params = {"tool": NCBI_TOOL}
        if self.settings.contact_email:
            params["email"] = self.settings.contact_email
        return params

    # --- OpenAlex ---------------------------------------------------------------------------------------

    async def openalex_work(self, doi: str = "", *, pmid: str = "") -> Record | None:
        """OpenAlex's work for a DOI (or a PMID); None when OpenAlex has none."""
        key = f"doi:{doi.strip().lower()}" if doi else f"pmid:{pmid.strip()}"

        async def ask() -> Record | None:
            data = await self._get_json("openalex", f"{_base(self.settings.openalex_endpoint)}/works/"
                                        f"{quote(key, safe='/();:')}", self._mailto_params(), missing_is_none=True)
            return None if data is None else _parsed("openalex", _openalex_record, data)
        return await self._cached_one("openalex", f"work:{key}", ask)

    async def openalex_search(self, ref: Reference) -> tuple[Record, ...]:
        query = re.sub(r"[^\w\s-]", " ", ref.title or bibliographic_query(ref))
        query = " ".join(query.split())
        if not query:
            return ()

        async def ask() -> tuple[Record, ...]:
            params = {"search": query, "per-page": str(SEARCH_ROWS), **self._mailto_params()}
            data = await self._get_json("openalex", f"{_base(self.settings.openalex_endpoint)}/works", params)
            results = data.get("results") if isinstance(data, dict) else None
            if not isinstance(results, list):
                raise LookupFailed("openalex", "the search answer has no results list")
            return tuple(_parsed("openalex", _openalex_record, w) for w in results[:SEARCH_ROWS]
                         if not (isinstance(w, dict) and w.get("type") in _NOTICE_TYPES))
        return await self._cached_many("openalex", f"search:{query}", ask)

    # --- caching, pacing, retries -----------------------------------------------------------------------

    def _cache_hit(self, service: str, key: str) -> dict[str, Any] | None:
        """A cached answer young enough to trust (a paper can be retracted after we last asked)."""
        hit = self.cache.lookup_cache_get(service, key) if self.cache is not None else None
        if not isinstance(hit, dict) or time.time() - float(hit.get("at") or 0) > CACHE_MAX_AGE_S:
            return None
        return hit

    async def _cached_one(self, service: str, key: str, ask: Any) -> Record | None:
        hit = self._cache_hit(service, key)
        if hit is not None and "record" in hit:
            return Record.from_dict(hit["record"]) if hit["record"] else None
        record = await ask()
        if self.cache is not None:   # a record or a definite "no record"; failures raised above
            self.cache.lookup_cache_put(service, key, {"record": record.to_dict() if record else None,
                                                       "at": time.time()})
        return record

    async def _cached_many(self, service: str, key: str, ask: Any) -> tuple[Record, ...]:
        hit = self._cache_hit(service, key)
        if hit is not None and isinstance(hit.get("records"), list):
            return tuple(Record.from_dict(r) for r in hit["records"])
        records = await ask()
        if self.cache is not None:
            self.cache.lookup_cache_put(service, key, {"records": [r.to_dict() for r in records], "at": time.time()})
        return records

    def _interval(self, service: str) -> float:
        rate = self.settings.requests_per_second
        cap = SERVICE_CAPS.get(service)
        if cap is not None:
            rate = min(rate, cap) if rate > 0 else cap
        return 1.0 / rate if rate > 0 else 0.0

    async def _pace(self, service: str) -> None:
        """Wait until this service may be asked again, then book the next slot."""
        lock = self._locks.setdefault(service, asyncio.Lock())
        async with lock:
            wait = self._next_at.get(service, 0.0) - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self._next_at[service] = time.monotonic() + self._interval(service)

    async def _get(self, service: str, url: str, params: dict[str, str],
                   missing: Callable[[httpx.Response], bool] | None = None) -> httpx.Response | None:
        """GET with the pacing, Retry-After and failure rules every service shares; None for a 404 that
        ``missing`` takes for the service's own "no record" (any other answer but 200 is LookupFailed)."""
        for attempt in range(1, MAX_TRIES + 1):
            await self._pace(service)
            self.requests_made += 1
            try:
                resp = await self._client.get(url, params=params)
            except httpx.TimeoutException:
                raise LookupFailed(service, f"no answer within {self.settings.timeout_s:g} s") from None
            except (httpx.HTTPError, httpx.InvalidURL) as exc:
                raise LookupFailed(service, f"could not reach {urlsplit(url).netloc} ({type(exc).__name__})") from None
            if resp.status_code in (429, 503):
                wait = parse_retry_after(resp.headers.get("retry-after"))
                wait = backoff_delay(attempt - 1, 2.0) if wait is None else wait
                if attempt == MAX_TRIES or wait > MAX_RETRY_WAIT_S:
                    raise LookupFailed(service, f"rate limited (HTTP {resp.status_code}) after {attempt} "
                                                f"tries; asked to wait {wait:g} s")
                self._next_at[service] = max(self._next_at.get(service, 0.0), time.monotonic() + wait)
                continue
            if resp.status_code == 404 and missing is not None and missing(resp):
                return None
            if resp.status_code != 200:
                raise LookupFailed(service, f"HTTP {resp.status_code} from {urlsplit(url).netloc}"
                                            + (" (check the endpoint)" if resp.status_code == 404 else ""))
            return resp
        raise AssertionError("unreachable")

    async def _get_json(self, service: str, url: str, params: dict[str, str],
                        missing_is_none: bool = False) -> dict[str, Any] | None:
        """GET a JSON object; with ``missing_is_none``, None for a 404 that is the service's own "no record"."""
        resp = await self._get(service, url, params,
                               (lambda r: _is_own_404(service, r)) if missing_is_none else None)
        if resp is None:
            return None
        try:
            data = resp.json()
        except ValueError:
            raise LookupFailed(service, "the answer is not JSON") from None
        if not isinstance(data, dict):
            raise LookupFailed(service, "the answer is not a JSON object")
        return data


def _is_own_404(service: str, resp: httpx.Response) -> bool:
    """A 404 that the service itself gave for an unknown id, not a wrong endpoint's page."""
    text = resp.text[:2000]
    if service == "crossref":
        return "resource not found" in text.lower()
    ctype = resp.headers.get("content-type", "")
    return "json" in ctype and not text.lstrip().startswith("<")


def _base(endpoint: str) -> str:
    return endpoint.rstrip("/")


def _message(data: dict[str, Any] | None) -> dict[str, Any]:
    msg = data.get("message") if isinstance(data, dict) else None
    if not isinstance(msg, dict):
        raise LookupFailed("crossref", "the answer has no message object")
    return msg


def _parsed(service: str, parse: Any, payload: Any) -> Record:
    try:
        return parse(payload)
    except (KeyError, TypeError, AttributeError, ValueError, IndexError) as exc:
        raise LookupFailed(service, f"unexpected answer shape ({type(exc).__name__})") from None


# --- queries ------------------------------------------------------------------------------------------

def bibliographic_query(ref: Reference) -> str:
    """The reference as one string (Crossref matches whole citations best)."""
    if ref.raw.strip() and ref.style not in ("doi", "pmid", "url"):
        return " ".join(ref.raw.split())
    parts = [", ".join(ref.authors), ref.title, ref.journal, str(ref.year or ""), ref.volume, ref.pages]
    return " ".join(" ".join(p for p in parts if p).split())


def pubmed_term(ref: Reference) -> str:
    """An E-utilities term: the title's words, else first author, journal and year with field tags."""
    if ref.title:
        return " ".join(re.sub(r"[^\w\s-]", " ", ref.title).split())
    parts = []
    if ref.authors:
        parts.append(f"{ref.authors[0]}[au]")
    if ref.journal:
        parts.append(f'"{ref.journal}"[ta]')
    if ref.year:
        parts.append(f"{ref.year}[dp]")
    return " AND ".join(parts) if len(parts) >= 2 else ""


# --- the three services' records ----------------------------------------------------------------------

def _first(value: Any) -> str:
    if isinstance(value, list):
        value = value[0] if value else ""
    return _clean(str(value)) if value else ""


def _clean(text: str) -> str:
    """Markup that publishers put in titles (<i>, <sup>, entities) out; spaces folded."""
    return " ".join(html.unescape(re.sub(r"<[^>]+>", "", text)).split())


def _date_parts(value: Any) -> list[int]:
    parts = value.get("date-parts") if isinstance(value, dict) else None
    if isinstance(parts, list) and parts and isinstance(parts[0], list):
        return [int(p) for p in parts[0] if p is not None]
    return []


def _iso(parts: list[int]) -> str:
    return "-".join(f"{p:02d}" if i else str(p) for i, p in enumerate(parts[:3]))


def _crossref_notices(item: dict[str, Any]) -> tuple[Notice, ...]:
    notices = []
    for update in item.get("updated-by") or []:
        if not isinstance(update, dict):
            continue
        kind = _UPDATE_KINDS.get(re.sub(r"[\s-]+", "_", str(update.get("type", "")).strip().lower()))
        if kind is None:
            continue
        label = str(update.get("label") or update.get("type"))
        source = str(update.get("source") or "publisher")
        notices.append(Notice(kind=kind, source="crossref", date=_iso(_date_parts(update.get("updated"))),
                              notice_doi=str(update.get("DOI") or "").lower(),
                              detail=f"Crossref update '{label}' (source: {source})"))
    return tuple(notices)


def _crossref_record(item: dict[str, Any]) -> Record:
    title, subtitle = _first(item.get("title")), _first(item.get("subtitle"))
    if subtitle and subtitle.lower() not in title.lower():
        title = f"{title}: {subtitle}"
    authors = tuple(_clean(a.get("family") or a.get("name") or "") for a in item.get("author") or []
                    if isinstance(a, dict) and (a.get("family") or a.get("name")))
    year = None
    for key in ("issued", "published-print", "published-online", "published", "created"):
        parts = _date_parts(item.get(key))
        if parts:
            year = parts[0]
            break
    doi = str(item.get("DOI") or "").lower()
    return Record(service="crossref", title=title, authors=authors, year=year,
                  journal=_first(item.get("container-title")), journal_abbrev=_first(item.get("short-container-title")),
                  volume=str(item.get("volume") or ""), pages=str(item.get("page") or ""), doi=doi,
                  url=f"https://doi.org/{doi}" if doi else str(item.get("URL") or ""),
                  notices=_crossref_notices(item))


def _pubmed_family(name: str) -> str:
    """"Mehra MR" -> "Mehra"; "van der Berg JA" -> "van der Berg"; a group name stays whole."""
    words = name.split()
    if len(words) > 1 and _INITIALS.match(words[-1]):
        words = words[:-1]
    return " ".join(words)


def _pubmed_record(entry: dict[str, Any]) -> Record:
    pmid = str(entry["uid"])
    title = _clean(str(entry.get("title") or ""))
    title = title.rstrip(".")
    if title.startswith("[") and title.endswith("]"):
        title = title[1:-1]                 # PubMed brackets a translated title
    authors = tuple(_pubmed_family(str(a.get("name", ""))) for a in entry.get("authors") or []
                    if isinstance(a, dict) and a.get("name") and a.get("authtype", "Author") == "Author")
    year_match = re.search(r"\b(1[89]\d\d|20\d\d)\b", str(entry.get("pubdate") or entry.get("sortpubdate") or ""))
    doi = ""
    for aid in entry.get("articleids") or []:
        if isinstance(aid, dict) and aid.get("idtype") == "doi":
            doi = str(aid.get("value", "")).lower()
    if not doi:
        m = re.search(r"doi:\s*(10\.\S+)", str(entry.get("elocationid") or ""))
        doi = m.group(1).lower() if m else ""
    pubtypes = [str(p) for p in entry.get("pubtype") or []]
    notices = (Notice(kind=NoticeKind.RETRACTION, source="pubmed",
                      detail="PubMed publication type 'Retracted Publication'"),) \
        if "Retracted Publication" in pubtypes else ()
    return Record(service="pubmed", title=title, authors=authors,
                  year=int(year_match.group(1)) if year_match else None,
                  journal=_clean(str(entry.get("fulljournalname") or entry.get("source") or "")),
                  journal_abbrev=_clean(str(entry.get("source") or "")), volume=str(entry.get("volume") or ""),
                  pages=str(entry.get("pages") or ""), doi=doi, pmid=pmid,
                  url=f"https://pubmed.ncbi.nlm.nih.gov/{pmid}/", notices=notices)


def _display_family(name: str) -> str:
    """"Mandeep R. Mehra" -> "Mehra"; "Ludwig van der Berg" -> "van der Berg"."""
    words = name.split()
    if not words:
        return ""
    family = [words[-1]]
    for word in reversed(words[:-1]):
        if word.lower() not in _PARTICLES:
            break
        family.insert(0, word)
    return " ".join(family)


def _strip_prefix(value: Any, prefix: str) -> str:
    text = str(value or "")
    return text[len(prefix):] if text.lower().startswith(prefix) else text


def _openalex_record(work: dict[str, Any]) -> Record:
    if not isinstance(work, dict) or not (work.get("id") or work.get("title") or work.get("display_name")):
        raise ValueError("not an OpenAlex work")
    source = ((work.get("primary_location") or {}).get("source") or {})
    biblio = work.get("biblio") or {}
    first, last = str(biblio.get("first_page") or ""), str(biblio.get("last_page") or "")
    ids = work.get("ids") or {}
    notices = (Notice(kind=NoticeKind.RETRACTION, source="openalex", detail="OpenAlex marks the work retracted"),) \
        if work.get("is_retracted") else ()
    year = work.get("publication_year")
    return Record(service="openalex", title=_clean(str(work.get("title") or work.get("display_name") or "")),
                  authors=tuple(_display_family(str((a.get("author") or {}).get("display_name") or ""))
                                for a in work.get("authorships") or []
                                if isinstance(a, dict) and (a.get("author") or {}).get("display_name")),
                  year=int(year) if year else None, journal=_clean(str(source.get("display_name") or "")),
                  journal_abbrev=_clean(str(source.get("abbreviated_title") or "")),
                  volume=str(biblio.get("volume") or ""), pages=f"{first}-{last}" if first and last else first,
                  doi=_strip_prefix(work.get("doi"), "https://doi.org/").lower(),
                  pmid=_strip_prefix(ids.get("pmid"), "https://pubmed.ncbi.nlm.nih.gov/").strip("/"),
                  url=str(work.get("id") or ""), notices=notices)
