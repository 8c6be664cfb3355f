"""The reference step of an audit: which citations get a reference check, running the checks beside
fetching, and what a written reference with no link is read from.

A citation gets a check when it is a DOI link, a PubMed link, a ``ref:`` key (a written reference with
no link), or when the answer wrote a reference string for it (``Response.references``). Plain web
pages get none. A check that could not be made is ``lookup_failed`` with the reason, never
``not_found``, and never fails the run.
"""
from __future__ import annotations

import asyncio
import dataclasses
import re
from pathlib import Path
from typing import Any, Callable, Protocol
from urllib.parse import unquote, urlsplit

from ..models import FetchStatus, Response, Source, utcnow
from ..urls import DOI_HOSTS
from .model import REFERENCE_KEY_PREFIX, LookupSettings, Reference, ReferenceCheck, ReferenceStatus, is_reference_key

CHECK_CONCURRENCY = 4            # metadata services are asked politely: a few references at a time
_PUBMED_PATH = re.compile(r"^/(?:pubmed/)?(\d{1,9})/?$")
_PUBMED_HOSTS = frozenset({"pubmed.ncbi.nlm.nih.gov", "www.ncbi.nlm.nih.gov", "ncbi.nlm.nih.gov"})

# why a written reference with no link has no text to judge, by the outcome of its check
FABRICATED = "no record in Crossref, PubMed or OpenAlex: likely fabricated"
UNASKED = "metadata services could not be asked"
SEVERAL = "several candidate papers"
OTHER_PAPER = "the record found names another paper"
NO_LINK = "found in the metadata services, but with no DOI or PMID to read it from"
CHECKS_OFF = "a written reference with no link: reference checks are off, so there is nothing to read"


class Resolver(Protocol):
    """What the step needs of a resolver (``references.resolve.ReferenceResolver`` or a test double)."""

    async def check(self, ref: Reference) -> ReferenceCheck: ...

    async def aclose(self) -> None: ...


def doi_in_url(url: str) -> str:
    """The DOI of a doi.org link, lower-case ('' for any other URL)."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    if (parts.hostname or "").lower() in DOI_HOSTS and parts.path.startswith("/10."):
        return unquote(parts.path[1:]).lower()
    return ""


def pmid_in_url(url: str) -> str:
    """The PMID of a PubMed link (``https://pubmed.ncbi.nlm.nih.gov/N/``, ``.../pubmed/N``), else ''."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return ""
    if (parts.hostname or "").lower() not in _PUBMED_HOSTS:
        return ""
    m = _PUBMED_PATH.match(parts.path)
    return m.group(1) if m else ""


def needs_check(url: str, raw: str | None = None) -> bool:
    """Does this citation get a reference check? (A plain web page cited without a written reference: no.)"""
    return bool(raw and raw.strip()) or is_reference_key(url) or bool(doi_in_url(url) or pmid_in_url(url))


def _parse(text: str) -> Reference | None:
    try:
        from .parse import parse_reference
    except ImportError:   # the parser ships with the reference checks; without it the raw text is asked
        return None
    try:
        return parse_reference(text)
    except Exception:     # an unparsable string is still a reference to look up as written
        return None


def reference_of(url: str, raw: str | None = None) -> Reference | None:
    """The reference a citation names, or None when it names none (a plain web page with no written reference).

    A DOI or PubMed link gives its identifier; a written reference (``raw``, or the text of a ``ref:``
    key) is parsed, keeping the link's identifier over any the text carries.
    """
    raw = raw.strip() if raw and raw.strip() else None
    doi, pmid = doi_in_url(url), pmid_in_url(url)
    if is_reference_key(url):
        text = raw or url[len(REFERENCE_KEY_PREFIX):].strip()
        return _parse(text) or Reference(raw=text)
    if raw is None:
        if doi:
            return Reference(raw=doi, doi=doi, style="doi")
        if pmid:
            return Reference(raw=pmid, pmid=pmid, style="pmid")
        return None
    parsed = _parse(raw) or Reference(raw=raw, style="doi" if doi else "pmid" if pmid else "url")
    changes: dict[str, Any] = {}
    if doi:
        changes["doi"] = doi
    if pmid:
        changes["pmid"] = pmid
    return dataclasses.replace(parsed, **changes) if changes else parsed


def lookup_failed(ref: Reference, problem: str) -> ReferenceCheck:
    """The outcome of a check that could not be made: shown as such, never counted as not found."""
    return ReferenceCheck(reference=ref, status=ReferenceStatus.LOOKUP_FAILED,
                          evidence=f"{UNASKED}: {problem}", checked_at=utcnow())


def reading_link(check: ReferenceCheck) -> str | None:
    """Where a verified written reference is read from: its DOI link, else its PubMed page."""
    if check.status is not ReferenceStatus.VERIFIED or check.matched is None:
        return None
    if check.matched.doi:
        return "https://doi.org/" + check.matched.doi
    if check.matched.pmid:
        return f"https://pubmed.ncbi.nlm.nih.gov/{check.matched.pmid}/"
    return None


# a written reference with nothing to read is not a link: its outcome is its reference check's, in words
_UNREAD_OUTCOME = {"not_found": "reference not found", "lookup_failed": "reference lookup failed",
                   "ambiguous": "reference ambiguous", "mismatch": "reference mismatch",
                   "verified": "reference found, no link to read", "unchecked": "reference not checked"}


def unread_reference_outcome(src: Source) -> str:
    """"reference not found (written, no URL)": what the Sources tab says of a written reference with nothing
    to read, instead of the fetch status (DEAD) it is stored with, which reads "dead link"."""
    status = str((src.meta or {}).get("reference_status", "unchecked"))
    return f"{_UNREAD_OUTCOME.get(status, status.replace('_', ' '))} (written, no URL)"


def unread_reference(key: str, check: ReferenceCheck | None) -> Source:
    """The explicit failed fetch of a written reference that has nothing to read, its check's evidence as reason."""
    if check is None:
        status, reason = FetchStatus.ERROR, CHECKS_OFF
    else:
        status, why = {
            ReferenceStatus.NOT_FOUND: (FetchStatus.DEAD, FABRICATED),
            ReferenceStatus.LOOKUP_FAILED: (FetchStatus.HTTP_ERROR, UNASKED),
            ReferenceStatus.AMBIGUOUS: (FetchStatus.ERROR, SEVERAL),
            ReferenceStatus.MISMATCH: (FetchStatus.ERROR, OTHER_PAPER),
        }.get(check.status, (FetchStatus.ERROR, NO_LINK))
        evidence = check.evidence.strip()
        # lookup_failed() already opens its evidence with the same words
        reason = evidence if evidence.startswith(why) else f"{why}: {evidence}" if evidence else why
    meta = {"reference_status": check.status.value if check else "unchecked"}
    return Source(url=key, status=status, reason=reason, fetched_at=utcnow(), origin="reference", meta=meta)


async def open_resolver(settings: LookupSettings, cache: Any, retraction_data: str | None,
                        warn: Callable[[str], None]) -> Resolver:
    """The real resolver for a run's settings; the retraction data is read off the event loop."""
    from .resolve import ReferenceResolver

    retractions = None
    if retraction_data:
        try:
            from .retractions import RetractionIndex

            retractions = await asyncio.to_thread(RetractionIndex.from_csv, Path(retraction_data))
        except Exception as exc:   # the run goes on; Crossref and PubMed still report retractions
            warn(f"the retraction data {retraction_data} could not be read ({type(exc).__name__}: {exc}); "
                 "retractions come from Crossref and PubMed only")
    return ReferenceResolver(settings, cache=cache, retractions=retractions)


class ReferenceChecks:
    """The reference checks of one run: started as citations become known, a few at a time, each
    stored when made. Everything here runs on the event loop thread, so the Store is used there only.

    ``resolver`` is used as given (and not closed); without one the real resolver is built from
    ``settings`` on the first check and closed by :meth:`aclose`.
    """

    def __init__(self, store: Any, run_id: str, settings: LookupSettings, *, retraction_data: str | None = None,
                 resolver: Resolver | None = None, cancel: asyncio.Event | None = None,
                 emit: Callable[[str], None] = lambda message: None,
                 log: Callable[[str, str], None] = lambda message, level: None,
                 concurrency: int = CHECK_CONCURRENCY) -> None:
        self.store = store
        self.run_id = run_id
        self.settings = settings
        self.retraction_data = retraction_data
        self.cancel = cancel or asyncio.Event()
        self._emit = emit
        self._log = log
        self._given = resolver
        self._resolver: Resolver | None = resolver
        self._resolver_problem = ""
        self._resolver_lock = asyncio.Lock()
        self._sem = asyncio.Semaphore(max(1, concurrency))
        self._tasks: dict[str, asyncio.Task[ReferenceCheck | None]] = {}
        self._stored = set(store.checked_reference_urls(run_id))
        self._stored_checks: dict[str, ReferenceCheck] | None = None
        self._known: set[str] = set()
        self.total = 0   # citations of the run that need a check
        self.done = 0    # of those, checked (stored before or now)

    # -- scheduling ------------------------------------------------------------------
    def schedule(self, response: Response) -> None:
        """Start the checks a response's citations need (once per citation of the run)."""
        refs = response.references or {}
        for i, url in enumerate(response.citations):
            raw = refs.get(i)
            if url in self._known or not needs_check(url, raw):
                continue
            self._known.add(url)
            self.total += 1
            if url in self._stored:
                self.done += 1       # a resumed run skips stored checks
                continue
            ref = reference_of(url, raw)
            if ref is not None:
                self._tasks[url] = asyncio.create_task(self._check(url, ref), name=f"reference {url[:60]}")

    async def check_for(self, url: str) -> ReferenceCheck | None:
        """The check of a scheduled citation: awaited if under way, read back if stored; None if never scheduled."""
        task = self._tasks.get(url)
        if task is not None:
            return await task
        if url in self._stored:
            if self._stored_checks is None:
                self._stored_checks = self.store.reference_checks(self.run_id)
            return self._stored_checks.get(url)
        return None

    async def wait_all(self) -> None:
        """Until every scheduled check is stored, or the run is cancelled."""
        pending: set[asyncio.Task[Any]] = {t for t in self._tasks.values() if not t.done()}
        if not pending:
            return
        cancel_wait = asyncio.create_task(self.cancel.wait())
        try:
            while pending and not self.cancel.is_set():
                done, pending = await asyncio.wait(pending | {cancel_wait}, return_when=asyncio.FIRST_COMPLETED)
                for t in done:
                    if t is not cancel_wait and not t.cancelled() and (exc := t.exception()):
                        raise exc
                pending.discard(cancel_wait)
        finally:
            cancel_wait.cancel()

    def cancel_pending(self) -> None:
        for task in self._tasks.values():
            task.cancel()

    async def aclose(self) -> None:
        self.cancel_pending()
        if self._tasks:
            await asyncio.gather(*self._tasks.values(), return_exceptions=True)
        if self._resolver is not None and self._resolver is not self._given:
            await self._resolver.aclose()

    # -- one check -------------------------------------------------------------------
    async def _ready(self) -> Resolver | None:
        async with self._resolver_lock:
            if self._resolver is None and not self._resolver_problem:
                try:
                    self._resolver = await open_resolver(self.settings, self.store, self.retraction_data,
                                                         lambda m: self._log(m, "warning"))
                except Exception as exc:
                    self._resolver_problem = f"the reference resolver could not start ({type(exc).__name__}: {exc})"
                    self._log(self._resolver_problem, "error")
            return self._resolver

    async def _check(self, url: str, ref: Reference) -> ReferenceCheck | None:
        async with self._sem:
            if self.cancel.is_set():
                await asyncio.Future()   # cancelled with the run; nothing stored, so a resume checks it
            resolver = await self._ready()
            if resolver is None:
                check = lookup_failed(ref, self._resolver_problem)
            else:
                try:
                    check = await resolver.check(ref)
                except asyncio.CancelledError:
                    raise
                except Exception as exc:   # a resolver that breaks is a failed lookup, not a missing paper
                    check = lookup_failed(ref, f"{type(exc).__name__}: {exc}")
                    self._log(f"reference check of {url} failed: {type(exc).__name__}: {exc}", "warning")
        self.store.save_reference_check(self.run_id, url, check)
        self._stored.add(url)
        self.done += 1
        shown = url if len(url) <= 80 else url[:79] + "…"
        self._emit(f"{shown}: {check.status.plain}" + (" (retracted)" if check.retracted else ""))
        return check
