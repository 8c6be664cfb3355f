"""Retrieve cited URLs over HTTP and say exactly what happened.

HttpFetcher.fetch never raises for a URL: every failure becomes a Source with a
FetchStatus and a reason in plain words. Redirects are followed by hand so that the
safety rule (sourcecheckup.safety) is applied to every hop before connecting.
"""
from __future__ import annotations

import asyncio
import contextlib
import http
import random
import threading
import time
import zlib
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, AsyncIterator, Iterator, Protocol
from urllib.parse import quote, urljoin, urlsplit

import httpx

from . import extract as _extract
from .models import FetchStatus, Source, sha256_bytes, utcnow
from .retry_after import parse_retry_after
from .safety import AddressPins, HostNotFoundError, Resolver, UnsafeUrlError, check_url, pinned_transport

DEFAULT_USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Safari/537.36"
)
ACCEPT = "text/html,application/xhtml+xml,application/pdf;q=0.9,text/plain;q=0.8,*/*;q=0.5"
REDIRECT_CODES = (301, 302, 303, 307, 308)
RETRY_CODES = (429, 503)
MAX_RETRY_AFTER_S = 60.0
WALL_CODES = (401, 403, 429, 503)   # error pages worth reading for a captcha or login wall
WALL_PEEK_BYTES = 256_000
ROBOTS_AGENT = "SourceCheckup"
ROBOTS_MAX_BYTES = 500_000
# decompressed bytes produced per step: one compressed chunk can never balloon past this in memory
DECODE_STEP_BYTES = 256_000
DOI_HOSTS = ("doi.org", "dx.doi.org", "www.doi.org")


@dataclass(frozen=True)
class FetchOptions:
    timeout_s: float = 20.0            # total time per source (all hops, retries and the body)
    connect_timeout_s: float = 10.0
    max_bytes: int = 15_000_000        # streamed cap on the (decompressed) body: too_large beyond it
    max_redirects: int = 10
    max_text_chars: int = 300_000      # text cap before judging: flag "truncated"
    allow_hosts: tuple[str, ...] = ()  # hosts exempt from the private-address rule, e.g. ("127.0.0.1",)
    user_agent: str = DEFAULT_USER_AGENT
    total_concurrency: int = 16
    per_host: int = 4
    retries: int = 2                   # extra attempts on 429/503 and connection resets
    sources_dir: Path | None = None    # a source pack: DIR/sources.json maps URL -> local file
    browser: str = "never"             # "auto" | "always" | "never"
    politeness_s: float = 0.0          # minimum gap between request starts to one host
    backoff_s: float = 0.5             # first retry delay; doubles each attempt, with jitter
    max_pdf_pages: int = 300
    browser_pages: int = 4             # pages open at once in the one browser of a run
    browser_page_timeout_s: float | None = None   # hard cap per page; None: timeout_s
    browser_executable: str | None = None         # None: $SOURCECHECKUP_CHROMIUM or the system Chromium
    browser_args: tuple[str, ...] = ()            # extra Chromium flags (tests: --host-resolver-rules=...)
    archive_lookup: bool = False       # look dead links up in a web archive (off here: it is network traffic)
    archive_endpoint: str | None = None  # Wayback-compatible availability API; None: archive.org
    use_archive: bool = False          # read the archived copy of a dead link as its source
    respect_robots: bool = False       # refuse URLs that the site's robots.txt disallows
    doi_resolver: str | None = None    # where https://doi.org/<doi> is asked; None: doi.org itself
    extract_workers: int = 0           # processes for text extraction; 0: threads in this process


# The options that can change what a fetch of a URL finds (not how fast or how many at once).
FETCH_SETTINGS_KEYS = ("allow_hosts", "browser", "archive_lookup", "archive_endpoint", "use_archive",
                       "sources_dir", "doi_resolver", "respect_robots", "max_bytes", "timeout_s",
                       "max_redirects", "max_pdf_pages", "user_agent")


def fetch_settings(options: FetchOptions) -> dict[str, Any]:
    """The fetch-relevant settings as plain JSON values (what a cached outcome was fetched under)."""
    out: dict[str, Any] = {}
    for key in FETCH_SETTINGS_KEYS:
        value = getattr(options, key)
        if key == "allow_hosts":
            value = sorted({str(h).lower() for h in value})
        elif isinstance(value, Path):
            value = str(value.resolve())
        out[key] = value
    return out


def fetch_settings_fingerprint(options: FetchOptions) -> str:
    """A short hash of :func:`fetch_settings`: equal when a URL would be fetched the same way."""
    import hashlib
    import json

    blob = json.dumps(fetch_settings(options), sort_keys=True, default=str).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:16]


class Fetcher(Protocol):
    async def fetch(self, url: str) -> Source: ...

    async def aclose(self) -> None: ...


class _Failure(Exception):
    """A fetch ended early with a known outcome."""

    def __init__(self, status: FetchStatus, reason: str, **fields: Any) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.fields = fields


def status_phrase(code: int, given: str = "") -> str:
    try:
        return http.HTTPStatus(code).phrase
    except ValueError:
        return given or "Unknown status"


def http_status_outcome(code: int, phrase: str = "") -> tuple[FetchStatus, str]:
    """The outcome of a final non-2xx HTTP status."""
    reason = f"HTTP {code} {status_phrase(code, phrase)}"
    if code in (404, 410):
        return FetchStatus.DEAD, reason
    if code in (401, 407):
        return FetchStatus.PAYWALLED, f"{reason}: the site asks for a login"
    if code == 402:
        return FetchStatus.PAYWALLED, f"{reason}: the site asks for payment"
    if code in (403, 451):
        return FetchStatus.BLOCKED, f"{reason}: the site refused access"
    if code == 429:
        return FetchStatus.BLOCKED, f"{reason}: the site rate-limited us"
    return FetchStatus.HTTP_ERROR, reason


def _mb(n: int) -> str:
    return f"{n / 1_000_000:.1f} MB" if n >= 1_000_000 else f"{n:,} bytes"


def retry_after_s(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    return parse_retry_after(value)


def finish_text(source: Source, max_chars: int) -> Source:
    """Cut text longer than max_chars and flag the source "truncated"."""
    if len(source.text) <= max_chars:
        return source
    flags = source.flags if "truncated" in source.flags else source.flags + ("truncated",)
    meta = dict(source.meta)
    meta["text_chars_before_truncation"] = len(source.text)
    return replace(source, text=source.text[:max_chars], flags=flags, meta=meta)


def source_from_document(url: str, raw: bytes, content_type: str | None, *, final_url: str | None,
                         http_status: int | None, origin: str, reason_ok: str, started: float,
                         meta: dict[str, Any] | None = None, max_text_chars: int = 300_000,
                         max_pdf_pages: int = 300, detect: bool = True) -> Source:
    """Extract a document's text and build the Source (shared by HTTP, local files and archives)."""
    doc = _extract.extract(raw, content_type, final_url or url, max_pdf_pages)
    all_meta = dict(meta or {})
    all_meta.update(doc.meta)
    common = dict(url=url, http_status=http_status, final_url=final_url, content_type=content_type,
                  sha256=sha256_bytes(raw), fetched_at=utcnow(), elapsed_s=round(time.monotonic() - started, 4),
                  origin=origin, raw=raw)
    if doc.kind == "unsupported":
        return Source(status=FetchStatus.UNSUPPORTED_TYPE, reason=doc.problem, meta=all_meta, **common)
    if doc.kind == "error":
        status = FetchStatus.TOO_LARGE if doc.outcome == "too_large" else FetchStatus.ERROR
        return Source(status=status, reason=doc.problem, title=doc.title, meta=all_meta,
                      flags=("encrypted_pdf",) if doc.encrypted else (), **common)
    reason = reason_ok
    if not doc.text.strip():
        reason = f"{reason_ok}, but no main text was found" + (f" ({doc.problem})" if doc.problem else "")
    elif "pages_read" in doc.meta:
        reason = f"{reason_ok}; read the first {doc.meta['pages_read']} of {doc.meta['pages']} PDF pages"
    source = Source(status=FetchStatus.OK, reason=reason, title=doc.title, text=doc.text, meta=all_meta, **common)
    if "pages_read" in doc.meta:
        source = replace(source, flags=source.flags + ("pdf_pages_capped",))
    if detect and doc.kind == "html":
        from .detect import classify

        source = classify(source, _extract.decode_text(raw, content_type, html=True)[0])
    return finish_text(source, max_text_chars)


class BoundedDecoder:
    """Content-Encoding decoding in bounded steps, so one small compressed chunk (a gzip bomb)
    never expands in memory past DECODE_STEP_BYTES before the body cap is checked."""

    def __init__(self, content_encoding: str | None) -> None:
        names = [e.strip().lower() for e in (content_encoding or "").split(",")]
        names = [n for n in names if n and n != "identity"]
        if len(names) > 1:
            raise ValueError(f"stacked content encodings ({', '.join(names)}) are not supported")
        self.name = names[0] if names else ""
        if self.name in ("gzip", "x-gzip"):
            self._d: Any = zlib.decompressobj(zlib.MAX_WBITS | 16)
        elif self.name == "deflate":
            self._d = zlib.decompressobj()
        elif self.name:
            raise ValueError(f"the server used content encoding {self.name!r}, which we did not ask for")
        else:
            self._d = None
        self._started = False

    def feed(self, data: bytes) -> Iterator[bytes]:
        """The decoded bytes of one received chunk, in pieces of at most DECODE_STEP_BYTES."""
        if self._d is None:
            if data:
                yield data
            return
        if not self._started and data:
            self._started = True
            if self.name == "deflate":
                try:   # "deflate" is meant to be zlib-wrapped; some servers send it raw
                    zlib.decompressobj().decompress(data[:2])
                except zlib.error:
                    self._d = zlib.decompressobj(-zlib.MAX_WBITS)
        out = b"x"
        while data or len(out) == DECODE_STEP_BYTES:
            out = self._d.decompress(data, DECODE_STEP_BYTES)
            data = self._d.unconsumed_tail
            if out:
                yield out
            elif not data:
                break

    def flush(self) -> bytes:
        return self._d.flush() if self._d is not None else b""


class BodyTooLarge(Exception):
    """A body went past its byte cap while being read."""


async def read_bounded(response: httpx.Response, limit: int, *, truncate: bool = False) -> bytes:
    """The decoded body, at most `limit` bytes: BodyTooLarge beyond it (or cut there with truncate).

    Reads the raw stream and decodes it here, in bounded steps (see BoundedDecoder).
    Raises ValueError for an encoding we cannot read and zlib.error for a broken stream.
    """
    decoder = BoundedDecoder(response.headers.get("content-encoding"))
    body = bytearray()
    async for chunk in response.aiter_raw():
        for piece in decoder.feed(chunk):
            body += piece
            if len(body) > limit:
                if truncate:
                    return bytes(body[:limit])
                raise BodyTooLarge()
    body += decoder.flush()
    if len(body) > limit:
        if truncate:
            return bytes(body[:limit])
        raise BodyTooLarge()
    return bytes(body)


def doi_of(url: str) -> str | None:
    """The DOI in a doi.org link ("10.1056/NEJMoa2034577"), or None."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if (parts.hostname or "").lower() in DOI_HOSTS and parts.path.startswith("/10."):
        from urllib.parse import unquote

        return unquote(parts.path[1:])
    return None


def _warm_worker() -> None:
    _extract.warm_up()   # once per worker, before the first page arrives


# A document above this size is read in a process of its own, killed at the source's deadline
# and bounded in memory: markup can be built to make the extractor run for minutes (14 MB of
# nested <div>s took 209 s and 1.2 GB). Smaller ones, nearly every page, are read in a thread.
LARGE_DOCUMENT_BYTES = 500_000
EXTRACT_MEMORY_BYTES = 1_500_000_000   # address space of that process
MIN_EXTRACT_S = 1.0                    # time given to reading a document whose download used the whole budget


def _extract_child(conn: Any, args: tuple, kwargs: dict, memory_bytes: int) -> None:
    """In the worker process: read the document, send back the Source without its raw bytes."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    except (ImportError, ValueError, OSError):
        pass   # no address-space limit on this system: the deadline still holds
    try:
        source = source_from_document(*args, **kwargs)
        conn.send(("ok", replace(source, raw=b"")))
    except MemoryError:
        conn.send(("memory", ""))
    except BaseException as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"[:300]))
    finally:
        conn.close()


_mp_context: Any = None


def _worker_context() -> Any:
    """forkserver where it exists (a fork of a small, single-threaded server that already imported the
    extractor: tens of ms), spawn elsewhere and in a frozen app."""
    global _mp_context
    if _mp_context is None:
        import multiprocessing
        import sys

        if "forkserver" in multiprocessing.get_all_start_methods() and not getattr(sys, "frozen", False):
            ctx = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["sourcecheckup.fetch", "trafilatura", "pypdf"])
        else:
            ctx = multiprocessing.get_context("spawn")
        _mp_context = ctx
    return _mp_context


def read_in_worker(args: tuple, kwargs: dict, deadline: float,
                   memory_bytes: int = EXTRACT_MEMORY_BYTES) -> tuple[str, Any]:
    """source_from_document in a child process: ("ok", Source without raw), ("timeout", ""),
    ("memory", "") or ("error", message). The child is killed at deadline (time.monotonic()),
    its start included."""
    ctx = _worker_context()
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_extract_child, args=(child, args, kwargs, memory_bytes), daemon=True)
    proc.start()
    child.close()
    try:
        if parent.poll(max(0.0, deadline - time.monotonic())):
            try:
                return parent.recv()
            except (EOFError, OSError):
                pass   # the child died before answering
            proc.join(2)
            if proc.exitcode is not None and proc.exitcode < 0:
                return "memory", ""   # killed by the system (out of memory) or by a failed allocation
            return "error", f"the text extractor stopped (exit code {proc.exitcode})"
        return "timeout", ""
    finally:
        parent.close()
        if proc.is_alive():
            proc.kill()
        proc.join(5)


def _document_size(raw: bytes) -> str:
    return f"{len(raw) / 1_000_000:.1f} MB" if len(raw) >= 100_000 else f"{len(raw):,} bytes"


class DocumentReader:
    """Runs source_from_document off the event loop: in threads, or in worker processes.

    Extraction is CPU work (trafilatura, pypdf); under the GIL, threads serialise it, so a
    large batch can use a few processes instead (FetchOptions.extract_workers). A document over
    LARGE_DOCUMENT_BYTES is read in a process of its own under the source's deadline and a memory
    bound, and ends as timeout or too_large, with the reason, when it goes past either.
    """

    large_bytes = LARGE_DOCUMENT_BYTES
    memory_bytes = EXTRACT_MEMORY_BYTES

    def __init__(self, workers: int = 0) -> None:
        self.workers = max(0, workers)
        self._pool: Any = None
        if not self.workers:   # the extractor's imports, ready by the time the first page arrives
            threading.Thread(target=_extract.warm_up, name="extract-warm-up", daemon=True).start()
        else:
            import multiprocessing
            from concurrent.futures import ProcessPoolExecutor

            # spawn, not fork: this process has threads (asyncio, Playwright) that fork would copy half-way
            self._pool = ProcessPoolExecutor(self.workers, mp_context=multiprocessing.get_context("spawn"))
            for _ in range(self.workers):
                self._pool.submit(_warm_worker)

    async def read(self, url: str, raw: bytes, content_type: str | None, *, deadline: float | None = None,
                   **kwargs: Any) -> Source:
        """The Source for a document; deadline (time.monotonic()) bounds the reading of a large one."""
        args = (url, raw, content_type)
        if deadline is not None and len(raw) > self.large_bytes:
            return await self._read_large(args, kwargs, deadline)
        if self._pool is None:
            return await asyncio.to_thread(source_from_document, *args, **kwargs)
        import functools

        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._pool, functools.partial(source_from_document, *args, **kwargs))

    async def _read_large(self, args: tuple, kwargs: dict[str, Any], deadline: float) -> Source:
        budget = max(MIN_EXTRACT_S, deadline - time.monotonic())
        outcome, got = await asyncio.to_thread(read_in_worker, args, kwargs, time.monotonic() + budget,
                                               self.memory_bytes)
        url, raw, content_type = args
        if outcome == "ok":
            return replace(got, raw=raw)
        kind = "PDF" if _extract.sniff_kind(raw, content_type) == "pdf" else "document"
        if outcome == "timeout":
            status, reason = FetchStatus.TIMEOUT, (
                f"reading the text of this {_document_size(raw)} {kind} took longer than the per-source "
                f"time limit allows ({budget:.1f} s were left after the download); it was stopped")
        elif outcome == "memory":
            status, reason = FetchStatus.TOO_LARGE, (
                f"reading the text of this {_document_size(raw)} {kind} needed more than "
                f"{self.memory_bytes // 1_000_000:,} MB of memory; it was stopped")
        else:
            status, reason = FetchStatus.ERROR, f"could not read the document: {got}"
        return Source(url=url, status=status, reason=reason, final_url=kwargs.get("final_url"),
                      http_status=kwargs.get("http_status"), content_type=content_type, sha256=sha256_bytes(raw),
                      fetched_at=utcnow(), origin=kwargs.get("origin", "http"), meta=dict(kwargs.get("meta") or {}),
                      elapsed_s=round(time.monotonic() - kwargs.get("started", time.monotonic()), 4), raw=raw)

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=False, cancel_futures=True)
            self._pool = None


class HttpFetcher:
    """Plain HTTP with httpx: safety check per hop, caps, retries, per-host limits."""

    def __init__(self, options: FetchOptions = FetchOptions(), resolver: Resolver | None = None) -> None:
        self.options = options
        self.resolver = resolver   # None: the system's DNS
        self.pins = AddressPins()
        limits = httpx.Limits(max_connections=max(1, options.total_concurrency) * 2,
                              max_keepalive_connections=max(1, options.total_concurrency))
        self._client = httpx.AsyncClient(
            transport=pinned_transport(self.pins, limits=limits),
            follow_redirects=False,
            timeout=httpx.Timeout(options.timeout_s, connect=options.connect_timeout_s),
            headers={"User-Agent": options.user_agent, "Accept": ACCEPT,
                     "Accept-Language": "en-US,en;q=0.9", "Accept-Encoding": "gzip, deflate"},
            limits=limits,
            trust_env=False,  # a proxy would make the per-hop address check meaningless
        )
        self._total = asyncio.Semaphore(max(1, options.total_concurrency))
        self._hosts: dict[str, asyncio.Semaphore] = {}
        self._last_start: dict[str, float] = {}
        self._host_locks: dict[str, asyncio.Lock] = {}
        self._robots: dict[str, Any] = {}   # origin -> RobotFileParser or None (no usable robots.txt)
        self._robots_locks: dict[str, asyncio.Lock] = {}
        self.reader = DocumentReader(options.extract_workers)

    async def aclose(self) -> None:
        try:
            await self._client.aclose()
        finally:
            self.reader.close()

    async def __aenter__(self) -> "HttpFetcher":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def fetch(self, url: str) -> Source:
        async with self._total, self.host_slot(url):
            return await self.fetch_now(url)

    @contextlib.asynccontextmanager
    async def host_slot(self, url: str) -> AsyncIterator[None]:
        """One of the URL's host's per_host request slots, after its politeness gap; the browser's
        requests take these too, so a page's scripts cannot open more connections to a site."""
        host = _host_of(url)
        async with self._hosts.setdefault(host, asyncio.Semaphore(max(1, self.options.per_host))):
            await self._polite(host)
            yield

    async def _polite(self, host: str) -> None:
        gap = self.options.politeness_s
        if gap <= 0:
            return
        lock = self._host_locks.setdefault(host, asyncio.Lock())
        async with lock:
            wait = self._last_start.get(host, -1e9) + gap - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            self._last_start[host] = time.monotonic()

    @property
    def client(self) -> httpx.AsyncClient:
        """The pinned client (only pinned addresses are reachable: call check(url) first)."""
        return self._client

    async def check(self, url: str) -> None:
        """Apply the address rule to a URL and pin the checked addresses for its connection."""
        checked = await check_url(url, self.options.allow_hosts, self.options.connect_timeout_s, self.resolver)
        self.pins.pin(checked)

    async def fetch_now(self, url: str) -> Source:
        """Fetch without waiting for a concurrency slot (the caller already holds one)."""
        started = time.monotonic()
        opts = self.options
        try:
            async with asyncio.timeout(opts.timeout_s):
                if opts.respect_robots:
                    await self._check_robots(url)
                got = await self._download(url, started)
        except _Failure as f:
            return self._failed(url, f.status, f.reason, started, **f.fields)
        except TimeoutError:
            return self._failed(url, FetchStatus.TIMEOUT,
                                f"no complete answer within {opts.timeout_s:g} s", started)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # never let one URL crash a batch
            return self._failed(url, FetchStatus.ERROR, f"unexpected error: {type(exc).__name__}: {exc}", started)
        final_url, response_status, content_type, raw, meta = got
        try:
            return await self.reader.read(
                url, raw, content_type, final_url=final_url, http_status=response_status,
                origin="http", reason_ok=f"HTTP {response_status} {status_phrase(response_status)}",
                started=started, meta=meta, max_text_chars=opts.max_text_chars, max_pdf_pages=opts.max_pdf_pages,
                deadline=started + opts.timeout_s)
        except Exception as exc:
            return self._failed(url, FetchStatus.ERROR, f"could not read the document: {type(exc).__name__}: {exc}",
                                started, final_url=final_url, http_status=response_status, content_type=content_type)

    def _failed(self, url: str, status: FetchStatus, reason: str, started: float, **fields: Any) -> Source:
        return Source(url=url, status=status, reason=reason, fetched_at=utcnow(),
                      elapsed_s=round(time.monotonic() - started, 4), origin="http", **fields)

    async def _download(self, url: str, started: float) -> tuple[str, int, str | None, bytes, dict[str, Any]]:
        opts = self.options
        current = url
        doi = doi_of(url)
        if doi and opts.doi_resolver:
            current = opts.doi_resolver.rstrip("/") + "/" + quote(doi, safe="/;:()")
        chain: list[str] = [url] if current == url else [url, current]
        for _hop in range(opts.max_redirects + 1):
            try:
                await self.check(current)
            except UnsafeUrlError as exc:
                via = f" (redirected from {url})" if current != url else ""
                raise _Failure(FetchStatus.UNSAFE_URL, f"{exc}{via}", final_url=current) from None
            except HostNotFoundError as exc:
                raise _Failure(FetchStatus.DEAD, str(exc), final_url=current) from None
            response, attempts, note = await self._send(current, started)
            try:
                location = response.headers.get("location")
                if response.status_code in REDIRECT_CODES and location:
                    nxt = urljoin(current, location.strip())
                    if nxt in chain:
                        loop = " -> ".join(chain[chain.index(nxt):] + [nxt])
                        raise _Failure(FetchStatus.HTTP_ERROR, f"redirect loop: {loop}",
                                       final_url=current, http_status=response.status_code)
                    chain.append(nxt)
                    current = nxt
                    continue
                got = await self._read_final(current, response, chain, attempts, note, doi)
                if doi:
                    got[4]["doi"] = doi
                return got
            finally:
                await response.aclose()
        raise _Failure(FetchStatus.HTTP_ERROR, f"more than {opts.max_redirects} redirects (last: {current})",
                       final_url=current)

    async def _send(self, url: str, started: float) -> tuple[httpx.Response, int, str]:
        """One GET with retries on 429/503 and connection resets, honouring Retry-After.

        Returns the response, the number of attempts made and a note on why retrying stopped.
        """
        opts = self.options
        attempt = 0
        while True:
            try:
                request = self._client.build_request("GET", url)
                response = await self._client.send(request, stream=True)
            except httpx.ConnectTimeout:
                raise _Failure(FetchStatus.TIMEOUT, f"could not connect within {opts.connect_timeout_s:g} s",
                               final_url=url) from None
            except httpx.TimeoutException:
                raise _Failure(FetchStatus.TIMEOUT, f"the server did not answer within {opts.timeout_s:g} s",
                               final_url=url) from None
            except httpx.ConnectError as exc:
                reason = _connect_reason(exc)
                status = FetchStatus.DEAD if reason.startswith("could not resolve") else FetchStatus.HTTP_ERROR
                raise _Failure(status, reason, final_url=url) from None
            except httpx.RemoteProtocolError as exc:
                if not _dropped(exc):   # the server answered, badly: asking again gets the same answer
                    raise _Failure(FetchStatus.HTTP_ERROR, f"the server sent a malformed response ({_exc_text(exc)})",
                                   final_url=url) from None
                if attempt < opts.retries:
                    await self._backoff(attempt, None, started)
                    attempt += 1
                    continue
                raise _Failure(FetchStatus.HTTP_ERROR,
                               f"the connection was reset ({_exc_text(exc)}) after {attempt + 1} attempts",
                               final_url=url) from None
            except (httpx.ReadError, httpx.WriteError) as exc:
                if attempt < opts.retries:
                    await self._backoff(attempt, None, started)
                    attempt += 1
                    continue
                raise _Failure(FetchStatus.HTTP_ERROR,
                               f"the connection was reset ({_exc_text(exc)}) after {attempt + 1} attempts",
                               final_url=url) from None
            if response.status_code in RETRY_CODES and attempt < opts.retries:
                wait = retry_after_s(response.headers.get("retry-after"))
                remaining = opts.timeout_s - (time.monotonic() - started)
                if wait is not None and (wait > MAX_RETRY_AFTER_S or wait >= remaining):
                    # the site asks for longer than our budget: give up honestly
                    return response, attempt + 1, (f"Retry-After {response.headers.get('retry-after')} "
                                                   f"is longer than the {remaining:.0f} s left")
                await response.aclose()
                await self._backoff(attempt, wait, started)
                attempt += 1
                continue
            return response, attempt + 1, ""

    async def _backoff(self, attempt: int, wait: float | None, started: float) -> None:
        if wait is None:
            wait = self.options.backoff_s * (2 ** attempt) * (1 + random.random() * 0.5)
        await asyncio.sleep(wait)

    async def _check_robots(self, url: str) -> None:
        """Refuse a URL its site's robots.txt disallows for us (robots.txt is read once per site)."""
        from urllib.robotparser import RobotFileParser

        try:
            parts = urlsplit(url)
            origin = f"{parts.scheme}://{parts.netloc}".lower()
        except ValueError:
            return
        if parts.scheme not in ("http", "https"):
            return
        async with self._robots_locks.setdefault(origin, asyncio.Lock()):
            if origin not in self._robots:
                parser: RobotFileParser | None = None
                try:
                    await self.check(origin + "/robots.txt")
                    async with asyncio.timeout(min(5.0, self.options.timeout_s)):
                        async with self._client.stream("GET", origin + "/robots.txt") as response:
                            if response.status_code == 200:
                                body = await read_bounded(response, ROBOTS_MAX_BYTES)
                                parser = RobotFileParser()
                                parser.parse(body.decode("utf-8", "replace").splitlines())
                except (UnsafeUrlError, HostNotFoundError, httpx.HTTPError, TimeoutError, BodyTooLarge, ValueError,
                        zlib.error):
                    parser = None   # no readable robots.txt: nothing is disallowed
                self._robots[origin] = parser
        parser = self._robots[origin]
        if parser is not None and not parser.can_fetch(ROBOTS_AGENT, url):
            raise _Failure(FetchStatus.BLOCKED, f"the site's robots.txt disallows {parts.path or '/'} for crawlers",
                           final_url=url)

    async def _bot_wall(self, response: httpx.Response) -> str | None:
        """Read a little of an error page to tell a captcha or login wall from a plain refusal."""
        from .detect import block_reason

        try:
            body = await read_bounded(response, WALL_PEEK_BYTES, truncate=True)
        except (httpx.HTTPError, OSError, ValueError, zlib.error):
            return None
        return await asyncio.to_thread(block_reason, body, response.headers.get("content-type"))

    async def _read_final(self, final_url: str, response: httpx.Response, chain: list[str], attempts: int,
                          note: str, doi: str | None = None) -> tuple[str, int, str | None, bytes, dict[str, Any]]:
        opts = self.options
        code = response.status_code
        content_type = response.headers.get("content-type")
        meta: dict[str, Any] = {}
        # the headers that tell a later run whether the page changed
        for header, key in (("content-type", "content_type"), ("last-modified", "last_modified"), ("etag", "etag")):
            if response.headers.get(header):
                meta[key] = response.headers[header]
        if len(chain) > 1:
            meta["redirects"] = chain
        if attempts > 1:
            meta["attempts"] = attempts
        fields = dict(final_url=final_url, http_status=code, content_type=content_type, meta=meta)
        if not 200 <= code < 300:
            status, reason = http_status_outcome(code, response.reason_phrase)
            if code in WALL_CODES:
                wall = await self._bot_wall(response)
                if wall:
                    status, reason = (FetchStatus.PAYWALLED if wall.startswith("login") else FetchStatus.BLOCKED,
                                      f"HTTP {code} {status_phrase(code)}: {wall}")
            if doi and code in (404, 410) and len(chain) <= 2:
                reason += f": the DOI {doi} is not registered"
            if note:
                reason += f" ({note})"
            elif attempts > 1:
                reason += f" after {attempts} attempts"
            raise _Failure(status, reason, **fields)
        refuse = _extract.unsupported_reason(content_type)
        if refuse:
            raise _Failure(FetchStatus.UNSUPPORTED_TYPE, refuse, **fields)
        declared = response.headers.get("content-length", "")
        if declared.isdigit() and int(declared) > opts.max_bytes:
            raise _Failure(FetchStatus.TOO_LARGE,
                           f"the server announced {_mb(int(declared))}, over the {_mb(opts.max_bytes)} limit", **fields)
        try:
            body = await read_bounded(response, opts.max_bytes)
        except BodyTooLarge:
            sent = response.num_bytes_downloaded
            encoding = response.headers.get("content-encoding", "").strip()
            if encoding and encoding != "identity" and sent * 20 < opts.max_bytes:
                reason = (f"the body grew past the {_mb(opts.max_bytes)} limit after decompression "
                          f"from {_mb(sent)} sent ({encoding}): a decompression bomb")
            else:
                reason = f"the body is larger than the {_mb(opts.max_bytes)} limit"
            raise _Failure(FetchStatus.TOO_LARGE, reason, **fields) from None
        except httpx.TimeoutException:
            raise _Failure(FetchStatus.TIMEOUT, f"the body did not arrive within {opts.timeout_s:g} s", **fields) from None
        except ValueError as exc:
            raise _Failure(FetchStatus.HTTP_ERROR, f"the body could not be decoded: {exc}", **fields) from None
        except zlib.error as exc:
            raise _Failure(FetchStatus.HTTP_ERROR, f"the body could not be decompressed ({_exc_text(exc)})",
                           **fields) from None
        except (httpx.ReadError, httpx.RemoteProtocolError) as exc:
            raise _Failure(FetchStatus.HTTP_ERROR, f"the connection broke while reading ({_exc_text(exc)})",
                           **fields) from None
        return final_url, code, content_type, body, meta


def _host_of(url: str) -> str:
    try:
        return (urlsplit(url).hostname or "").lower()
    except (ValueError, TypeError, AttributeError):
        return ""


def _dropped(exc: httpx.RemoteProtocolError) -> bool:
    """True when the server hung up (worth another attempt), not when it sent something malformed."""
    text = str(exc).lower()
    return "disconnected" in text or "without sending" in text or "connection closed" in text or not text


def _exc_text(exc: BaseException) -> str:
    return str(exc) or type(exc).__name__


def _connect_reason(exc: httpx.ConnectError) -> str:
    text = _exc_text(exc)
    seen: BaseException | None = exc
    for _ in range(8):   # httpx wraps the OS error; its own message may only say "attempts failed"
        if seen is None:
            break
        if isinstance(seen, ConnectionRefusedError):
            return "connection refused"
        if isinstance(seen, ConnectionResetError):
            return "connection reset"
        if isinstance(seen, ExceptionGroup):
            refused = [e for e in seen.exceptions if isinstance(e, ConnectionRefusedError)]
            if refused:
                return "connection refused"
        seen = seen.__cause__ or seen.__context__
    low = text.lower()
    if "refused" in low or "errno 111" in low:
        return "connection refused"
    if "reset" in low:
        return "connection reset"
    if "ssl" in low or "certificate" in low:
        return f"TLS error: {text}"
    if "name or service not known" in low or "nodename nor servname" in low:
        return "could not resolve host"
    return f"could not connect: {text}"


def make_fetcher(options: FetchOptions) -> Fetcher:
    """The fetcher a run uses: HTTP, the browser when options.browser is "auto" or "always",
    all behind a source pack when options.sources_dir is set."""
    if options.browser not in ("auto", "always", "never"):
        raise ValueError(f"browser must be auto, always or never, not {options.browser!r}")
    fetcher: Fetcher = HttpFetcher(options)
    if options.browser != "never":
        from .browser import BrowserFetcher

        fetcher = BrowserFetcher(fetcher, options)  # type: ignore[arg-type]
    if options.archive_lookup or options.use_archive:
        from .archive import ArchiveFetcher

        fetcher = ArchiveFetcher(fetcher, options)
    if options.sources_dir is not None:
        from .sourcepack import SourcePackFetcher

        fetcher = SourcePackFetcher(options.sources_dir, fetcher, options)
    return fetcher
