"""What every fetcher shares: the options, the Fetcher protocol, HTTP outcomes, the Retry-After header
(as the fetcher, the LLM client and the reference lookups read it) and bounded body reading.

Nothing here imports a fetcher: the implementations build on this module and the factory
(sourcecheckup.fetching.make_fetcher) sits above them all.
"""
from __future__ import annotations

import email.utils
import hashlib
import http
import json
import random
import time
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Protocol

import httpx

from ..models import FetchStatus, Source
from ..workers import AUTO

DEFAULT_USER_AGENT = (
    "Mozilla/5.0 (X11; Linux x86_64) AppleWebKit/537.36 (KHTML, like Gecko) "
    "Chrome/126.0.0.0 Safari/537.36"
)
# decompressed bytes produced per step: one compressed chunk can never balloon past this in memory
DECODE_STEP_BYTES = 256_000


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
    extract_workers: int = AUTO        # processes for text extraction and parsing: AUTO (-1), the shared
                                       # pool once a run is big enough; N, N processes; 0, this process only


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
    blob = json.dumps(fetch_settings(options), sort_keys=True, default=str).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()[:16]


def refused_url(url: str) -> Source | None:
    """The unsafe_url outcome of a URL the scheme rule refuses (data:, about:, filesystem:, file:, ...),
    else None. The one URL check every fetch path applies before anything touches the URL: the
    plain HTTP, the browser in every mode, a source pack, the pipeline; the address rule follows per request."""
    from ..models import utcnow
    from .safety import UnsafeUrlError, split_checked

    try:
        split_checked(url)
    except UnsafeUrlError as exc:
        return Source(url=url, status=FetchStatus.UNSAFE_URL, reason=str(exc), fetched_at=utcnow(), elapsed_s=0.0)
    return None


class Fetcher(Protocol):
    """Turns a URL into a Source; never raises for a URL (every failure is a FetchStatus with a reason)."""

    async def fetch(self, url: str) -> Source: ...

    async def aclose(self) -> None: ...


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


def backoff_delay(attempt: int, base_s: float, cap_s: float | None = None) -> float:
    """Seconds before retry ``attempt`` (0 for the first) when the server named no wait: exponential from
    ``base_s``, capped at ``cap_s``, half of it random ("equal jitter") so that clients that failed together
    do not all come back together. The one backoff of fetches, LLM calls and reference lookups."""
    full = base_s * (2 ** attempt)
    if cap_s is not None:
        full = min(cap_s, full)
    return full / 2 + random.uniform(0, full / 2)


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After value: delta-seconds or an HTTP date; None if absent or garbled."""
    if not value:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    if when is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


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

