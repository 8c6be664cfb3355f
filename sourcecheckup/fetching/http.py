"""Retrieve cited URLs over HTTP and say exactly what happened.

HttpFetcher.fetch never raises for a URL: every failure becomes a Source with a
FetchStatus and a reason in plain words. Redirects are followed by hand so that the
safety rule (sourcecheckup.fetching.safety) is applied to every hop before connecting.
"""
from __future__ import annotations

import asyncio
import contextlib
import re
import time
import zlib
from typing import Any, AsyncIterator
from urllib.parse import quote, unquote, urljoin, urlsplit

import httpx

from ..models import FetchStatus, Source, sha256_bytes, utcnow
from ..urls import DOI_HOSTS
from .base import (
    BodyTooLarge,
    FetchOptions,
    backoff_delay,
    http_status_outcome,
    parse_retry_after,
    read_bounded,
    refused_url,
    status_phrase,
)
from .documents import DocumentReader
from .extract import unsupported_reason
from .pools import HostPools
from .robots import RobotsRules
from .safety import (
    AddressPins,
    HostNotFoundError,
    Resolver,
    UnsafeUrlError,
    check_url,
    disguised_address,
    pinned_transport,
)

ACCEPT = "text/html,application/xhtml+xml,application/pdf;q=0.9,text/plain;q=0.8,*/*;q=0.5"
REDIRECT_CODES = (301, 302, 303, 307, 308)
RETRY_CODES = (429, 503)
MAX_RETRY_AFTER_S = 60.0
WALL_CODES = (401, 403, 429, 503)   # error pages worth reading for a captcha or login wall
WALL_PEEK_BYTES = 256_000


class _Failure(Exception):
    """A fetch ended early with a known outcome."""

    def __init__(self, status: FetchStatus, reason: str, **fields: Any) -> None:
        super().__init__(reason)
        self.status = status
        self.reason = reason
        self.fields = fields


def _mb(n: int) -> str:
    return f"{n / 1_000_000:.1f} MB" if n >= 1_000_000 else f"{n:,} bytes"


def retry_after_s(value: str | None) -> float | None:
    """Seconds to wait from a Retry-After header (delta-seconds or an HTTP date)."""
    return parse_retry_after(value)


def doi_of(url: str) -> str | None:
    """The DOI in a doi.org link ("10.1056/NEJMoa2034577"), or None."""
    try:
        parts = urlsplit(url)
    except ValueError:
        return None
    if (parts.hostname or "").lower() in DOI_HOSTS and parts.path.startswith("/10."):
        return unquote(parts.path[1:])
    return None


class HttpFetcher:
    """Plain HTTP with httpx: safety check per hop, caps, retries, per-host limits."""

    def __init__(self, options: FetchOptions = FetchOptions(), resolver: Resolver | None = None,
                 transport: httpx.AsyncBaseTransport | None = None) -> None:
        """transport: replaces the pinned transport (tests pass httpx.MockTransport); the address rule is
        still applied to every hop, but connections are then the transport's business."""
        self.options = options
        self.resolver = resolver   # None: the system's DNS
        self.pins = AddressPins()
        limits = httpx.Limits(max_connections=max(1, options.total_concurrency) * 2,
                              max_keepalive_connections=max(1, options.total_concurrency))
        self.host_pools: HostPools | None = None
        if transport is None:   # a pool per host (pools.py): one pool over many hosts costs CPU squared
            per_host = max(1, options.per_host)
            host_limits = httpx.Limits(max_connections=2 * per_host, max_keepalive_connections=per_host)
            # one TLS context for every pool: building one (the CA bundle read) costs about 20 ms and 0.5 MB
            tls = httpx.create_ssl_context(trust_env=False)
            pinned_transport(self.pins, limits=host_limits, verify=tls)   # fails closed here without the hook
            transport = self.host_pools = HostPools(
                lambda: pinned_transport(self.pins, limits=host_limits, verify=tls),
                keep=max(16, 2 * max(1, options.total_concurrency) // per_host))
        self._client = httpx.AsyncClient(
            transport=transport,
            event_hooks={"response": [_keep_disguised_location]},
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
        self.robots = RobotsRules(self._client, self.check, options.timeout_s)
        self.reader = DocumentReader(options.extract_workers)
        # documents downloaded and waiting for their text to be read: the download slots are free
        # again meanwhile (reading is CPU, not the host's time), and this bounds the bytes held
        self._reading = asyncio.Semaphore(2 * max(1, options.total_concurrency))

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
        if (refused := refused_url(url)) is not None:
            return refused
        started = time.monotonic()
        async with self._total, self.host_slot(url):
            began = time.monotonic()
            got = await self._get(url, started)
            if isinstance(got, Source):
                return got
            left = self.options.timeout_s - (time.monotonic() - began)
            await self._reading.acquire()   # before the slots go: many read-waiting bodies slow the downloads
        try:
            return await self._read(url, got, started, left)
        finally:
            self._reading.release()

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
        if (refused := refused_url(url)) is not None:
            return refused
        started = time.monotonic()
        got = await self._get(url, started)
        if isinstance(got, Source):
            return got
        return await self._read(url, got, started, self.options.timeout_s - (time.monotonic() - started))

    async def _get(self, url: str, started: float) -> Source | tuple[str, int, str | None, bytes, dict[str, Any]]:
        """The downloaded document (final URL, status, content type, bytes, meta), or the failed Source."""
        opts = self.options
        try:
            async with asyncio.timeout(opts.timeout_s):
                if opts.respect_robots:
                    refusal = await self.robots.refusal(url)
                    if refusal:
                        raise _Failure(FetchStatus.BLOCKED, refusal, final_url=url)
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
        return got

    async def _read(self, url: str, got: tuple[str, int, str | None, bytes, dict[str, Any]], started: float,
                    left_s: float) -> Source:
        """The text of a downloaded document, as a Source, within the left_s seconds of the per-source
        time limit that the download left (a slow body that ends just before the limit gets no more)."""
        opts = self.options
        final_url, response_status, content_type, raw, meta = got
        left_s = max(0.0, left_s)
        await self.reader.ready()
        try:
            # a large document's worker is killed at the deadline, and says so; a page read in a thread
            # raises TimeoutError past it (waiting for a free thread does not count)
            return await self.reader.read(
                url, raw, content_type, final_url=final_url, http_status=response_status,
                origin="http", reason_ok=f"HTTP {response_status} {status_phrase(response_status)}",
                started=started, meta=meta, max_text_chars=opts.max_text_chars,
                max_pdf_pages=opts.max_pdf_pages, deadline=time.monotonic() + left_s)
        except TimeoutError:
            return self._failed(url, FetchStatus.TIMEOUT,
                                f"reading the text took longer than the {opts.timeout_s:g} s per-source time limit "
                                f"allows ({left_s:.1f} s were left after the download); it was stopped", started,
                                final_url=final_url, http_status=response_status, content_type=content_type,
                                meta=meta, sha256=sha256_bytes(raw))
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
                location = response.headers.get("location") or response.extensions.get(DISGUISED_LOCATION)
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
                refresh = refresh_target(got[3], got[2])
                nxt = urljoin(current, refresh) if refresh is not None else current
                if nxt != current:   # a "moved" stub: followed like a redirect, through the same checks
                    if nxt in chain:
                        raise _Failure(FetchStatus.HTTP_ERROR, f"meta refresh loop: {current} -> {nxt}",
                                       final_url=current, http_status=response.status_code)
                    chain.append(nxt)
                    current = nxt
                    continue
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
                status = (FetchStatus.DEAD if reason.startswith("could not resolve") else
                          FetchStatus.UNREACHABLE if reason in UNREACHABLE_REASONS else FetchStatus.HTTP_ERROR)
                raise _Failure(status, reason, final_url=url) from None
            except (httpx.RemoteProtocolError, httpx.ReadError, httpx.WriteError) as exc:
                if isinstance(exc, httpx.RemoteProtocolError) and not _dropped(exc):
                    # the server answered, badly: asking again gets the same answer
                    raise _Failure(FetchStatus.HTTP_ERROR, f"the server sent a malformed response ({_exc_text(exc)})",
                                   final_url=url) from None
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
            wait = backoff_delay(attempt, self.options.backoff_s)
        await asyncio.sleep(wait)

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
        refuse = unsupported_reason(content_type)
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


DISGUISED_LOCATION = "sourcecheckup.disguised_location"


async def _keep_disguised_location(response: httpx.Response) -> None:
    """httpx refuses a Location such as http://0177.0.0.1/ as a malformed response; such a redirect
    is an address in disguise, handed to the address rule (unsafe_url) instead."""
    location = response.headers.get("location")
    if not location or response.status_code not in REDIRECT_CODES:
        return
    try:
        httpx.URL(location)
        return
    except (httpx.InvalidURL, ValueError):
        pass
    if disguised_address(_host_of(urljoin(str(response.request.url), location.strip()))):
        del response.headers["location"]
        response.extensions[DISGUISED_LOCATION] = location


# a page this small that names a refresh target is a "moved" stub, not a page that reloads itself
REFRESH_STUB_BYTES = 16_000
_META_TAG = re.compile(rb"<meta\b[^<>]*>", re.I)
_REFRESH_EQUIV = re.compile(rb"""http-equiv\s*=\s*["']?\s*refresh""", re.I)
_REFRESH_URL = re.compile(
    rb"""content\s*=\s*["']?\s*(\d*(?:\.\d*)?)\s*[;,]?\s*url\s*=\s*["']?([^"'<>\s]+)""", re.I)
REFRESH_MAX_DELAY_S = 10   # a "moved" stub sends the reader on at once; a page that reloads itself waits minutes


def refresh_target(body: bytes, content_type: str | None) -> str | None:
    """Where a small HTML page's <meta http-equiv="refresh" content="0; url=..."> sends the reader."""
    if len(body) > REFRESH_STUB_BYTES or (content_type and "html" not in content_type.lower()):
        return None
    for tag in _META_TAG.findall(body):
        if _REFRESH_EQUIV.search(tag) and (m := _REFRESH_URL.search(tag)):
            try:
                delay = float(m.group(1) or 0)
            except ValueError:
                delay = 0.0
            return m.group(2).decode("latin-1").strip() if delay <= REFRESH_MAX_DELAY_S else None
    return None


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


# no server answered at the address: the host is down or not listening, or no route leads there (a server that
# answered badly, a reset connection or a TLS failure is a server error; a name that does not resolve, dead)
UNREACHABLE_REASONS = frozenset({"connection refused", "network unreachable", "host unreachable"})


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
    if "network is unreachable" in low or "errno 101" in low:
        return "network unreachable"
    if "no route to host" in low or "host is unreachable" in low or "errno 113" in low:
        return "host unreachable"
    if "reset" in low:
        return "connection reset"
    if "ssl" in low or "certificate" in low:
        return f"TLS error: {text}"
    if "name or service not known" in low or "nodename nor servname" in low:
        return "could not resolve host"
    return f"could not connect: {text}"
