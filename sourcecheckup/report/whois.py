"""Registrant country of a domain by whois (RFC 3912): ask a server, follow one referral, read the country.

Off by default; the report asks only when the user passes ``--whois``. Every lookup is bounded
(5 s for the whole lookup, referral included; 64 KB per reply; 200 domains per report) and
never raises: a lookup that fails says why in ``WhoisAnswer.problem`` and the caller falls back
to the top-level domain. A server that fails to connect or answer is not asked again in the
same batch, so a dead server costs one time cap, not one per domain.
"""
from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
import threading
from dataclasses import dataclass
from typing import Any, Iterable

DEFAULT_SERVER = "whois.iana.org:43"
WHOIS_PORT = 43
TIME_CAP_S = 5.0
BYTE_CAP = 64 * 1024
MAX_LOOKUPS = 200
CONCURRENCY = 10

# second-level labels under a country code where registrations sit one level lower (bbc.co.uk)
_SECOND_LEVEL = frozenset({"co", "com", "ac", "gov", "govt", "gouv", "gob", "org", "net", "edu", "or",
                           "ne", "go", "nhs", "mil", "nic", "ltd", "plc", "sch", "med"})
_COUNTRY_LINE = re.compile(r"^\s*(registrant[ _-]?country(?:[ _-]?code)?|country)\s*:\s*(\S.*?)\s*$",
                           re.IGNORECASE | re.MULTILINE)
_REFER_LINE = re.compile(r"^\s*(refer|referralserver|whois)\s*:\s*(\S+)\s*$", re.IGNORECASE | re.MULTILINE)
_HOST = re.compile(r"^[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?(?::\d{1,5})?$")


class WhoisError(Exception):
    """A whois exchange that did not produce a usable reply. ``server_down``: the server could not be
    reached at all (not resolved, refused, reset), so asking it again in this report is pointless."""

    def __init__(self, message: str, *, server_down: bool = False) -> None:
        super().__init__(message)
        self.server_down = server_down


@dataclass(frozen=True)
class WhoisAnswer:
    """What whois said about one domain: an ISO 3166 alpha-2 country, or why there is none."""

    domain: str                 # the registrable domain that was asked about
    country: str | None         # upper case, e.g. "DE"; None when whois gave no country
    server: str = ""            # the server whose reply decided (or the last one tried)
    problem: str = ""           # empty when a country was found


def _user_assigned(code: str) -> bool:
    # ISO 3166 keeps these for private use; registries write ZZ / XX for "unknown" or "redacted"
    return code in ("AA", "ZZ") or code[0] == "X" or (code[0] == "Q" and code[1] >= "M")


def parse_country(reply: str) -> str | None:
    """The registrant's country code from a whois reply: 'Registrant Country:' first, then 'country:'."""
    found: dict[str, str] = {}
    for m in _COUNTRY_LINE.finditer(reply):
        key = "registrant" if m.group(1).lower().startswith("registrant") else "country"
        value = m.group(2).strip().upper()
        if key not in found and re.fullmatch(r"[A-Z]{2}", value) and not _user_assigned(value):
            found[key] = value
    return found.get("registrant") or found.get("country")


def parse_referral(reply: str) -> str | None:
    """The 'HOST[:PORT]' a reply refers to ('refer:' from IANA, 'ReferralServer: whois://…'), or None."""
    for m in _REFER_LINE.finditer(reply):
        value = m.group(2).strip()
        if "://" in value:
            scheme, _, value = value.partition("://")
            if scheme.lower() != "whois":
                continue
        value = value.rstrip("/")
        if _HOST.match(value):
            return value
    return None


def registrable_domain(domain: str) -> str | None:
    """The name a registry knows ('www.bbc.co.uk' -> 'bbc.co.uk'); None for IP addresses and bare TLDs."""
    host = (domain or "").strip().lower().rstrip(".")
    if host.startswith("[") or not host:
        return None
    try:
        ipaddress.ip_address(host)
        return None
    except ValueError:
        pass
    labels = [p for p in host.split(".") if p]
    if len(labels) < 2:
        return None
    if len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in _SECOND_LEVEL:
        return ".".join(labels[-3:])
    return ".".join(labels[-2:])


def split_server(server: str) -> tuple[str, int]:
    """'host', 'host:port' or '[v6]:port' -> (host, port); ValueError says how to write it."""
    text = server.strip()
    host, port = text, WHOIS_PORT
    if text.startswith("["):
        host, _, rest = text[1:].partition("]")
        if rest.startswith(":"):
            port = int(rest[1:]) if rest[1:].isdigit() else -1
    elif text.count(":") == 1:
        host, _, p = text.partition(":")
        port = int(p) if p.isdigit() else -1
    if not host or not 0 < port < 65536:
        raise ValueError(f"whois server '{server}' is not HOST or HOST:PORT (e.g. whois.iana.org:43)")
    return host, port


async def _resolve(host: str, port: int) -> list[tuple[Any, ...]]:
    """getaddrinfo on a daemon thread: a hung resolver must not hold the loop's executor at shutdown."""
    loop = asyncio.get_running_loop()
    fut: asyncio.Future[list[tuple[Any, ...]]] = loop.create_future()

    def settle(result: Any, exc: BaseException | None) -> None:
        if not fut.done():
            fut.set_exception(exc) if exc else fut.set_result(result)

    def work() -> None:
        try:
            result, exc = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM), None
        except OSError as e:
            result, exc = None, e
        try:
            loop.call_soon_threadsafe(settle, result, exc)
        except RuntimeError:  # the loop closed while we waited (the time cap fired)
            pass

    threading.Thread(target=work, name=f"whois-resolve-{host}", daemon=True).start()
    return await fut


async def query(server: str, question: str, *, max_bytes: int = BYTE_CAP) -> str:
    """One RFC 3912 exchange: send the question and CRLF, read until the server closes. No time cap here:
    callers wrap it (``lookup`` does). Raises WhoisError."""
    host, port = split_server(server)
    try:
        infos = await _resolve(host, port)
    except OSError as exc:
        raise WhoisError(f"cannot resolve whois server {host}: {exc}", server_down=True) from exc
    writer = None
    try:
        family, _, _, _, addr = infos[0]
        reader, writer = await asyncio.open_connection(addr[0], addr[1], family=family)
        writer.write(question.encode("idna") + b"\r\n")
        await writer.drain()
        chunks: list[bytes] = []
        size = 0
        while True:
            chunk = await reader.read(8192)
            if not chunk:
                break
            size += len(chunk)
            if size > max_bytes:
                raise WhoisError(f"reply from {server} is over {max_bytes} bytes")
            chunks.append(chunk)
    except (OSError, UnicodeError, IndexError) as exc:
        raise WhoisError(f"whois {server}: {type(exc).__name__}: {exc}", server_down=isinstance(exc, OSError)) from exc
    finally:
        if writer is not None:
            writer.close()
    raw = b"".join(chunks)
    if not raw.strip():
        raise WhoisError(f"empty reply from {server}")
    if b"\x00" in raw:
        raise WhoisError(f"reply from {server} is not text")
    return raw.decode("utf-8", errors="replace")


class WhoisClient:
    """Lookups for one report: a cache per registrable domain, a lookup budget, and servers found dead."""

    def __init__(self, server: str | None = None, *, timeout_s: float = TIME_CAP_S, max_bytes: int = BYTE_CAP,
                 max_lookups: int = MAX_LOOKUPS, concurrency: int = CONCURRENCY) -> None:
        self.server = server or DEFAULT_SERVER
        split_server(self.server)  # a bad --whois-server is a usage error, raised here before any lookup
        self.timeout_s = timeout_s
        self.max_bytes = max_bytes
        self.max_lookups = max_lookups
        self.concurrency = max(1, concurrency)
        self.lookups = 0                      # lookups started (the budget counts these)
        self._cache: dict[str, WhoisAnswer] = {}
        self._pending: dict[str, asyncio.Task[WhoisAnswer]] = {}
        self._dead: set[str] = set()

    async def _ask(self, server: str, name: str) -> str:
        if server in self._dead:
            raise WhoisError(f"{server} could not be reached earlier in this report; not asked again")
        try:
            return await query(server, name, max_bytes=self.max_bytes)
        except WhoisError as exc:
            if exc.server_down:
                self._dead.add(server)
            raise
        except asyncio.CancelledError:  # the time cap fired while this server was silent
            self._dead.add(server)
            raise

    async def _lookup(self, name: str) -> WhoisAnswer:
        server = self.server
        try:
            async with asyncio.timeout(self.timeout_s):
                reply = await self._ask(server, name)
                referral = parse_referral(reply)
                if referral and referral.lower() != server.lower():
                    server = referral
                    reply = await self._ask(server, name)
        except TimeoutError:
            return WhoisAnswer(name, None, server, f"no answer from {server} within {self.timeout_s:g} s")
        except WhoisError as exc:
            return WhoisAnswer(name, None, server, str(exc))
        except Exception as exc:  # never raise: the report falls back to the top-level domain
            return WhoisAnswer(name, None, server, f"{type(exc).__name__}: {exc}")
        country = parse_country(reply)
        return WhoisAnswer(name, country, server, "" if country else f"no registrant country in the reply from {server}")

    async def lookup(self, domain: str) -> WhoisAnswer:
        """The answer for a host name; never raises."""
        name = registrable_domain(domain)
        if name is None:
            return WhoisAnswer(domain, None, "", "not a registrable domain name")
        if name in self._cache:
            return self._cache[name]
        if name not in self._pending:
            if self.lookups >= self.max_lookups:
                return WhoisAnswer(name, None, "", f"whois lookup limit reached ({self.max_lookups} per report)")
            self.lookups += 1
            self._pending[name] = asyncio.ensure_future(self._lookup(name))
        answer = await self._pending[name]
        self._cache[name] = answer
        self._pending.pop(name, None)
        return answer

    async def lookup_many(self, domains: Iterable[str]) -> dict[str, WhoisAnswer]:
        """Answers keyed by the host names given, at most ``concurrency`` exchanges at a time."""
        hosts = list(dict.fromkeys(domains))
        gate = asyncio.Semaphore(self.concurrency)

        async def one(host: str) -> tuple[str, WhoisAnswer]:
            async with gate:
                return host, await self.lookup(host)

        return dict(await asyncio.gather(*(one(h) for h in hosts)))


def whois_countries(domains: Iterable[str], *, server: str | None = None, timeout_s: float = TIME_CAP_S,
                    max_bytes: int = BYTE_CAP, max_lookups: int = MAX_LOOKUPS,
                    concurrency: int = CONCURRENCY) -> dict[str, WhoisAnswer]:
    """Blocking form for the report: answers keyed by host name. Raises only ValueError for a bad server."""
    client = WhoisClient(server, timeout_s=timeout_s, max_bytes=max_bytes, max_lookups=max_lookups,
                         concurrency=concurrency)
    hosts = list(domains)
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return asyncio.run(client.lookup_many(hosts))
    # called from async code (the app, a pipeline hook): run on a loop of our own in a thread
    box: dict[str, Any] = {}

    def work() -> None:
        try:
            box["result"] = asyncio.run(client.lookup_many(hosts))
        except BaseException as exc:  # lookup_many does not raise; this is belt and braces
            box["error"] = exc

    t = threading.Thread(target=work, name="whois", daemon=True)
    t.start()
    t.join()
    if "error" in box:
        return {h: WhoisAnswer(h, None, client.server, f"whois failed: {box['error']}") for h in hosts}
    return box["result"]
