"""Which URLs the fetcher may touch: web schemes only, never the user's own network.

A cited URL is untrusted input. Without this check an answer could make us read
http://169.254.169.254/ (cloud credentials) or a router's admin page. The rule is
applied to the first request and to every redirect, before any connection is made.
"""
from __future__ import annotations

import asyncio
import ipaddress
import re
import socket
from dataclasses import dataclass
from typing import Any, Awaitable, Callable, Iterable, Sequence
from urllib.parse import urlsplit

ALLOWED_SCHEMES = ("http", "https")
# schemes whose URL carries or wraps its own content instead of naming a web page
_SELF_CONTAINED = {"data": "a data: URL carries its own content, it names no source",
                   "about": "an about: URL is the browser's own page, not a source",
                   "blob": "a blob: URL names content held inside one browser page, not a source",
                   "filesystem": "a filesystem: URL names a browser's private storage, not a source",
                   "javascript": "a javascript: URL is a script, not a source",
                   "view-source": "a view-source: URL is a browser view, not a source"}

# RFC 6761 special-use names: answered here so no resolver is ever asked about them.
_NEVER_RESOLVES = (".invalid", ".test", ".example")
_LOCALHOST_NAMES = ("localhost",)


class UnsafeUrlError(Exception):
    """The URL must not be fetched; str(error) says why in plain words."""


class HostNotFoundError(Exception):
    """The host name does not resolve (a dead link, not a safety problem)."""


# (host, port) -> every address of the host; raises HostNotFoundError. Tests pass a fake DNS.
Resolver = Callable[[str, int], Awaitable[tuple[str, ...]]]


@dataclass(frozen=True)
class CheckedUrl:
    url: str
    host: str
    addresses: tuple[str, ...]   # the checked addresses: the only ones the fetcher may connect to


def address_kind(ip: ipaddress.IPv4Address | ipaddress.IPv6Address) -> str | None:
    """Why an address is off limits ("a loopback address"), or None for a public address."""
    mapped = getattr(ip, "ipv4_mapped", None)
    if mapped is not None:
        return address_kind(mapped)
    embedded = getattr(ip, "sixtofour", None)   # 2002:AABB:CCDD::/48 is tunnelled to AA.BB.CC.DD
    if embedded is not None and (kind := address_kind(embedded)):
        return f"a 6to4 address of {embedded}, {kind}"
    if ip.is_loopback:
        return "a loopback address"
    if ip.is_link_local:
        return "a link-local address"
    if getattr(ip, "is_site_local", False):   # fec0::/10: deprecated, still routed inside sites (Windows' DNS)
        return "a site-local address"
    if ip.is_multicast:
        return "a multicast address"
    if ip.is_unspecified:
        return "an unspecified address"
    if ip.is_reserved:
        return "a reserved address"
    if ip.is_private:
        return "a private network address"
    if not ip.is_global:
        return "a non-public address"
    return None


def _host_allowed(host: str, addresses: Iterable[str], allow_hosts: Sequence[str]) -> bool:
    allowed = {h.strip().lower().strip("[]") for h in allow_hosts if h.strip()}
    if not allowed:
        return False
    if host in allowed:
        return True
    addrs = list(addresses)
    return bool(addrs) and all(a in allowed for a in addrs)


def split_checked(url: str) -> tuple[str, str]:
    """(scheme, host) of a URL, or UnsafeUrlError when it is not an http(s) URL with a host.

    The one scheme rule: every fetcher (plain HTTP, the browser in every mode, archives, source
    packs) and every request a rendered page makes passes it before anything touches the URL."""
    try:
        parts = urlsplit(url.strip())
        host = (parts.hostname or "").lower()
        parts.port  # noqa: B018  (raises ValueError for a malformed port)
    except ValueError as exc:
        raise UnsafeUrlError(f"not a valid URL ({exc})") from None
    scheme = parts.scheme.lower()
    if scheme not in ALLOWED_SCHEMES:
        shown = scheme or "no scheme"
        why = f" ({_SELF_CONTAINED[scheme]})" if scheme in _SELF_CONTAINED else ""
        raise UnsafeUrlError(f"scheme {shown!r} is not allowed; only http and https are fetched{why}")
    if not host:
        raise UnsafeUrlError("the URL has no host name")
    return scheme, host


async def resolve(host: str, port: int = 80, timeout_s: float = 10.0) -> tuple[str, ...]:
    """Every address a host name resolves to; HostNotFoundError when it does not resolve."""
    try:
        return (str(ipaddress.ip_address(host)),)
    except ValueError:
        pass
    if host in _LOCALHOST_NAMES or host.endswith(".localhost"):
        return ("127.0.0.1", "::1")
    if host.endswith(_NEVER_RESOLVES) or host in {h.lstrip(".") for h in _NEVER_RESOLVES}:
        raise HostNotFoundError(f"could not resolve host {host}")
    loop = asyncio.get_running_loop()
    try:
        infos = await asyncio.wait_for(
            loop.getaddrinfo(host, port, type=socket.SOCK_STREAM), timeout=timeout_s
        )
    except (socket.gaierror, UnicodeError) as exc:
        raise HostNotFoundError(f"could not resolve host {host} ({exc})") from None
    except (asyncio.TimeoutError, TimeoutError):
        raise HostNotFoundError(f"could not resolve host {host} (lookup timed out)") from None
    addresses = tuple(dict.fromkeys(str(info[4][0]).split("%")[0] for info in infos))
    if not addresses:
        raise HostNotFoundError(f"could not resolve host {host}")
    return addresses


_NUMERIC_LABEL = re.compile(r"(?:0x[0-9a-f]*|[0-9]+)", re.I)


def disguised_address(host: str) -> str | None:
    """Why a host is an address in disguise, or None. No top-level domain is a number: "127.1",
    "0x7f.1" and "0177.0.0.1" are addresses a system resolver reads as 127.0.0.1; they are refused
    at once, never looked up."""
    host = host.lower().strip("[]")
    if not host or _is_literal(host) or not _NUMERIC_LABEL.fullmatch(host.rsplit(".", 1)[-1]):
        return None
    return f"{host} is an IP address written in a short, octal or hex form"


def _is_literal(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
        return True
    except ValueError:
        return False


async def check_url(url: str, allow_hosts: Sequence[str] = (), timeout_s: float = 10.0,
                    resolver: Resolver | None = None) -> CheckedUrl:
    """Refuse non-web schemes and hosts that resolve to non-public addresses.

    Raises UnsafeUrlError (refused) or HostNotFoundError (does not resolve).
    A host named in allow_hosts (by name or by every one of its addresses) is let through.
    The returned addresses are the ones to connect to: connecting to a fresh lookup instead
    would let a hostile DNS server answer differently the second time (DNS rebinding).
    """
    scheme, host = split_checked(url)
    port = urlsplit(url).port or (443 if scheme == "https" else 80)
    if "." not in host and not _is_literal(host) and host not in _LOCALHOST_NAMES and not _host_allowed(
            host, (), allow_hosts):
        # a dotless name only means something on a local network; a number is an address in disguise
        if re.fullmatch(r"(?:0x[0-9a-f]+|[0-9]+)", host):
            raise UnsafeUrlError(f"{host} is an IP address written as a number; add --allow-host {host} "
                                 "to fetch it anyway")
        raise UnsafeUrlError(f"{host} has no dot: a name on a local network, not a public web site; "
                             f"add --allow-host {host} to fetch it anyway")
    if (disguised := disguised_address(host)) and not _host_allowed(host, (), allow_hosts):
        raise UnsafeUrlError(f"{disguised}; add --allow-host {host} to fetch it anyway")
    if _is_literal(host):
        addresses: tuple[str, ...] = (str(ipaddress.ip_address(host)),)
    elif resolver is not None:
        try:
            addresses = tuple(await asyncio.wait_for(resolver(host, port), timeout=timeout_s))
        except (asyncio.TimeoutError, TimeoutError):
            raise HostNotFoundError(f"could not resolve host {host} (lookup timed out)") from None
        if not addresses:
            raise HostNotFoundError(f"could not resolve host {host}")
    else:
        addresses = await resolve(host, port, timeout_s)
    if _host_allowed(host, addresses, allow_hosts):
        return CheckedUrl(url, host, addresses)
    literal = len(addresses) == 1 and _is_literal(host)
    for addr in addresses:
        try:
            kind = address_kind(ipaddress.ip_address(addr))
        except ValueError:
            raise UnsafeUrlError(f"{host} resolves to {addr!r}, which is not an IP address") from None
        if kind:
            where = f"{host} is {kind}" if literal else f"{host} resolves to {addr}, {kind}"
            raise UnsafeUrlError(f"{where}; add --allow-host {host} to fetch it anyway")
    return CheckedUrl(url, host, addresses)


class AddressPins:
    """The checked addresses of each host: the only places a pinned connection may go.

    check_url() resolves and checks; pin() records the result; PinnedBackend connects only to
    a pinned address, so the address that passed the check is the address we talk to.
    """

    def __init__(self) -> None:
        self._pins: dict[str, tuple[str, ...]] = {}

    @staticmethod
    def key(url_or_host: str) -> str:
        """The host as httpx writes it on the wire (IDNA-encoded, lowercased, no brackets)."""
        import httpx

        if "://" in url_or_host:
            return httpx.URL(url_or_host).raw_host.decode("ascii").lower().strip("[]")
        return url_or_host.lower().strip("[]")

    def pin(self, checked: CheckedUrl) -> None:
        # replaced, not merged: every address ever stored here passed the check
        self._pins[self.key(checked.url)] = checked.addresses

    def get(self, host: str) -> tuple[str, ...]:
        return self._pins.get(self.key(host), ())


def pinned_transport(pins: AddressPins, **transport_options: object):
    """An httpx transport whose TCP connections go only to pinned addresses.

    TLS still uses the URL's host name for SNI and certificate checks (httpcore takes it from the
    request's origin), so pinning the address does not weaken HTTPS.
    """
    import httpcore
    import httpx
    from httpcore._utils import is_socket_readable

    class ProbedStream(httpcore.AsyncNetworkStream):
        """The stream with a cheap idle check: before each request the pool asks every idle
        connection whether the server closed it, and anyio answers that by building its whole
        socket-attribute table (a getpeername() call included) each time; the socket is kept here."""

        def __init__(self, inner: httpcore.AsyncNetworkStream) -> None:
            self._inner = inner
            self._sock = inner.get_extra_info("socket")

        async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
            return await self._inner.read(max_bytes, timeout)

        async def write(self, buffer: bytes, timeout: float | None = None) -> None:
            await self._inner.write(buffer, timeout)

        async def aclose(self) -> None:
            await self._inner.aclose()

        async def start_tls(self, ssl_context, server_hostname=None, timeout=None):  # type: ignore[no-untyped-def]
            return ProbedStream(await self._inner.start_tls(ssl_context, server_hostname, timeout))

        def get_extra_info(self, info: str) -> object:
            if info == "is_readable":   # httpcore's own test, on the socket kept here
                return is_socket_readable(self._sock)
            return self._sock if info == "socket" else self._inner.get_extra_info(info)

    class PinnedBackend(httpcore.AsyncNetworkBackend):
        def __init__(self) -> None:
            self._inner = httpcore.AnyIOBackend()

        async def connect_tcp(self, host: str, port: int, timeout: float | None = None,
                              local_address: str | None = None,
                              socket_options: Iterable[Any] | None = None):
            addresses = pins.get(host)
            if not addresses:
                raise httpcore.ConnectError(f"{host} has no checked address; refusing to connect")
            last: Exception | None = None
            for addr in addresses:
                try:
                    return ProbedStream(await self._inner.connect_tcp(addr, port, timeout, local_address,
                                                                      socket_options))
                except (httpcore.ConnectError, httpcore.ConnectTimeout) as exc:
                    last = exc
            assert last is not None
            raise last

        async def connect_unix_socket(self, path: str, timeout: float | None = None, socket_options: object = None):
            raise httpcore.ConnectError("unix sockets are never used for cited URLs")

        async def sleep(self, seconds: float) -> None:
            await self._inner.sleep(seconds)

    transport = httpx.AsyncHTTPTransport(trust_env=False, **transport_options)  # type: ignore[arg-type]
    pool = getattr(transport, "_pool", None)
    if pool is None or not hasattr(pool, "_network_backend"):
        # fail closed: an httpx without this hook would connect to a fresh DNS answer
        raise RuntimeError("this httpx version cannot pin connections to checked addresses; "
                           "install the httpx/httpcore versions named in pyproject.toml")
    pool._network_backend = PinnedBackend()
    return transport
