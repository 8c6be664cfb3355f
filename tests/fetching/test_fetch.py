"""The HTTP fetcher against the local fixture site: every outcome with its recorded reason, and the README
naming every outcome."""
from __future__ import annotations

import asyncio
import time

import pytest

from sourcecheckup.fetching import FetchOptions, HttpFetcher, make_fetcher
from sourcecheckup.models import FetchStatus, sha256_bytes
from tests.support.paths import ROOT

LOCAL = ("127.0.0.1",)


def options(**kw) -> FetchOptions:
    base = dict(allow_hosts=LOCAL, timeout_s=2.0, connect_timeout_s=1.0, max_bytes=2_000_000, backoff_s=0.05)
    base.update(kw)
    return FetchOptions(**base)


@pytest.fixture
async def fetcher():
    f = HttpFetcher(options())
    yield f
    await f.aclose()


async def test_article_page_gives_main_text_without_boilerplate_and_metadata(fetcher, site):
    src = await fetcher.fetch(f"{site}/article/metformin-lactic-acidosis")
    assert src.status is FetchStatus.OK and src.valid
    assert src.reason == "HTTP 200 OK" and src.http_status == 200
    assert "Metformin is contraindicated in patients with an eGFR below 30" in src.text
    assert "cookies" not in src.text and "Search" not in src.text     # banner and header dropped
    assert src.title.startswith("Metformin and Lactic Acidosis")
    assert src.meta["date"] == "2022-06-14"
    assert src.meta["author"] == "Office of Drug Safety"
    assert src.meta["last_modified"] == "Tue, 14 Mar 2023 09:00:00 GMT" and src.meta["etag"]
    assert src.sha256 == sha256_bytes(src.raw) and src.content_type.startswith("text/html")
    assert src.origin == "http" and src.fetched_at.endswith("+00:00") and src.elapsed_s > 0


async def test_pdf_text_is_read_by_content_type_and_by_magic_bytes(site):
    # a PDF is read in a worker process of its own: starting one takes seconds when both cores are busy,
    # which the 2 s cap of the other fetch tests does not leave
    fetcher = HttpFetcher(options(timeout_s=20.0))
    try:
        pdf, octet = await asyncio.gather(fetcher.fetch(f"{site}/docs/diabetes-guideline.pdf"),
                                          fetcher.fetch(f"{site}/download/guideline"))
    finally:
        await fetcher.aclose()
    for src in (pdf, octet):
        assert src.status is FetchStatus.OK
        assert "Metformin should not be started when the eGFR is below 30" in src.text
        assert src.title == "Management of Type 2 Diabetes in Adults"
        assert src.meta["pages"] == 1
    assert pdf.sha256 == octet.sha256


async def test_encrypted_and_broken_pdfs_get_a_clear_outcome(fetcher, site):
    enc, broken = await asyncio.gather(fetcher.fetch(f"{site}/docs/encrypted.pdf"),
                                       fetcher.fetch(f"{site}/docs/broken.pdf"))
    assert enc.status is FetchStatus.ERROR and "encrypted" in enc.reason and "password" in enc.reason
    assert "encrypted_pdf" in enc.flags and enc.sha256
    assert broken.status is FetchStatus.ERROR and "damaged" in broken.reason


@pytest.mark.parametrize("path,status,reason", [
    ("/status/404", FetchStatus.DEAD, "HTTP 404 Not Found"),
    ("/status/410", FetchStatus.DEAD, "HTTP 410 Gone"),
    ("/status/500", FetchStatus.HTTP_ERROR, "HTTP 500 Internal Server Error"),
    ("/status/403", FetchStatus.BLOCKED, "HTTP 403 Forbidden: the site refused access"),
    ("/status/401", FetchStatus.PAYWALLED, "HTTP 401 Unauthorized: the site asks for a login"),
    ("/image.png", FetchStatus.UNSUPPORTED_TYPE, "content type image/png is not a document"),
])
async def test_http_status_and_content_type_outcomes(fetcher, site, path, status, reason):
    src = await fetcher.fetch(site + path)
    assert (src.status, src.reason) == (status, reason)
    assert src.final_url == site + path and src.text == ""


async def test_redirect_chain_is_followed_and_recorded(fetcher, site):
    src = await fetcher.fetch(f"{site}/redirect/chain/3")
    assert src.status is FetchStatus.OK
    assert src.final_url == f"{site}/article/hypertension"
    assert src.meta["redirects"][0] == f"{site}/redirect/chain/3" and len(src.meta["redirects"]) == 4
    assert "130/80 mm Hg" in src.text


async def test_redirect_limit_and_loop_are_http_errors(site):
    f = HttpFetcher(options(max_redirects=2))
    try:
        too_many, loop = await asyncio.gather(f.fetch(f"{site}/redirect/chain/5"), f.fetch(f"{site}/redirect/loop/a"))
    finally:
        await f.aclose()
    assert too_many.status is FetchStatus.HTTP_ERROR and too_many.reason.startswith("more than 2 redirects")
    assert loop.status is FetchStatus.HTTP_ERROR and loop.reason.startswith("redirect loop:")
    assert loop.reason.endswith("/redirect/loop/a")


@pytest.mark.parametrize("path,expected", [
    ("/redirect/private", "10.0.0.1 is a private network address"),
    ("/redirect/metadata", "169.254.169.254 is a link-local address"),
    ("/redirect/file", "scheme 'file' is not allowed"),
])
async def test_redirect_to_unsafe_target_is_refused_before_connecting(fetcher, site, path, expected):
    src = await fetcher.fetch(site + path)
    # refused, not a connect attempt that times out (how soon: bench/time_caps.py)
    assert src.status is FetchStatus.UNSAFE_URL
    assert src.reason.startswith(expected) and f"(redirected from {site}{path})" in src.reason


async def test_loopback_is_refused_unless_allowed(site):
    f = HttpFetcher(FetchOptions(timeout_s=2.0))
    try:
        src = await f.fetch(f"{site}/article/hypertension")
    finally:
        await f.aclose()
    assert src.status is FetchStatus.UNSAFE_URL
    assert "resolves" not in src.reason and src.reason.startswith("127.0.0.1 is a loopback address")


async def test_slow_server_and_dripping_headers_time_out_at_the_cap(site):
    f = HttpFetcher(options(timeout_s=0.8))
    try:
        slow, drip = await asyncio.gather(f.fetch(f"{site}/slow"), f.fetch(f"{site}/slow-headers"))
    finally:
        await f.aclose()
    # (how close to the cap they end: bench/time_caps.py)
    for src in (slow, drip):
        assert src.status is FetchStatus.TIMEOUT and src.reason == "no complete answer within 0.8 s"


async def test_size_caps_stop_large_endless_and_bomb_bodies(fetcher, site):
    large, endless, bomb = await asyncio.gather(
        fetcher.fetch(f"{site}/large"), fetcher.fetch(f"{site}/endless"), fetcher.fetch(f"{site}/gzip-bomb"))
    assert large.status is FetchStatus.TOO_LARGE and "announced 3.0 MB, over the 2.0 MB limit" in large.reason
    assert endless.status is FetchStatus.TOO_LARGE and endless.reason == "the body is larger than the 2.0 MB limit"
    assert bomb.status is FetchStatus.TOO_LARGE and "decompression bomb" in bomb.reason


async def test_429_with_retry_after_is_retried_until_success(fetcher, site):
    src = await fetcher.fetch(f"{site}/flaky/429?id=retry-test&after=0.1")
    assert src.status is FetchStatus.OK and src.meta["attempts"] == 3
    assert src.elapsed_s >= 0.2


async def test_retry_after_longer_than_the_budget_gives_up_at_once(fetcher, site):
    src = await fetcher.fetch(f"{site}/flaky/503-long")
    assert src.status is FetchStatus.HTTP_ERROR
    assert src.reason.startswith("HTTP 503 Service Unavailable (Retry-After 3600 is longer than")
    assert src.meta.get("attempts", 1) == 1   # given up at once: never waited, never asked again


async def test_429_after_all_retries_counts_as_blocked(site):
    f = HttpFetcher(options(retries=1))
    try:
        src = await f.fetch(f"{site}/flaky/429?id=give-up&after=0")
    finally:
        await f.aclose()
    assert src.status is FetchStatus.BLOCKED
    assert src.reason == "HTTP 429 Too Many Requests: the site rate-limited us after 2 attempts"


async def test_connection_reset_is_retried_then_reported(fetcher, site):
    src = await fetcher.fetch(f"{site}/reset")
    assert src.status is FetchStatus.HTTP_ERROR
    assert src.reason.startswith("the connection was reset") and src.reason.endswith("after 3 attempts")


async def test_connection_refused_and_unresolvable_host(fetcher):
    refused, nxdomain = await asyncio.gather(fetcher.fetch("http://127.0.0.1:9/"),
                                             fetcher.fetch("https://journal.invalid/article/1"))
    assert (refused.status, refused.reason) == (FetchStatus.UNREACHABLE, "connection refused")
    assert refused.status.plain == "host unreachable"
    assert nxdomain.status is FetchStatus.DEAD and nxdomain.reason.startswith("could not resolve host journal.invalid")


async def test_plain_text_and_empty_page(fetcher, site):
    txt, empty = await asyncio.gather(fetcher.fetch(f"{site}/text/notes.txt"), fetcher.fetch(f"{site}/empty"))
    assert txt.status is FetchStatus.OK and "µg/L" in txt.text
    assert empty.status is FetchStatus.OK and not empty.valid
    assert empty.reason == "HTTP 200 OK, but no main text was found"


async def test_long_text_is_cut_and_flagged_truncated(site):
    f = HttpFetcher(options(max_text_chars=500))
    try:
        src = await f.fetch(f"{site}/article/hfe-hemochromatosis")
    finally:
        await f.aclose()
    assert len(src.text) == 500 and "truncated" in src.flags
    assert src.meta["text_chars_before_truncation"] > 500


async def test_bad_urls_never_raise(fetcher):
    for url in ("", "not a url", "javascript:alert(1)", "http://", "http://[::1", "mailto:a@b.org"):
        src = await fetcher.fetch(url)
        assert src.status is FetchStatus.UNSAFE_URL and src.reason


async def test_per_host_limit_bounds_parallel_requests(site):
    f = HttpFetcher(options(per_host=2, timeout_s=3.0))
    started = time.monotonic()
    try:
        results = await asyncio.gather(*(f.fetch(f"{site}/slow?s=0.3&n={i}") for i in range(4)))
    finally:
        await f.aclose()
    elapsed = time.monotonic() - started
    assert all(r.status is FetchStatus.OK for r in results)
    assert elapsed > 0.55   # two waves of two, not one wave of four (a lower bound holds on any machine)


async def test_make_fetcher_without_pack_is_plain_http(site):
    f = make_fetcher(options())
    try:
        src = await f.fetch(f"{site}/article/hypertension")
    finally:
        await f.aclose()
    assert isinstance(f, HttpFetcher) and src.status is FetchStatus.OK


async def test_connection_goes_to_the_address_the_safety_check_resolved(site):
    """DNS rebinding: a hostile DNS answers a checked address first and another one later."""
    port = site.rsplit(":", 1)[1]
    asked: list[str] = []

    async def hostile_dns(host: str, port: int) -> tuple[str, ...]:
        asked.append(host)
        # 127.0.0.9 has no server: a client that looked the name up again would fail to connect
        return ("127.0.0.1",) if len(asked) == 1 else ("127.0.0.9",)

    f = HttpFetcher(options(), resolver=hostile_dns)
    try:
        src = await f.fetch(f"http://journal.rebind.test:{port}/echo-host")
    finally:
        await f.aclose()
    assert src.status is FetchStatus.OK and asked == ["journal.rebind.test"]
    assert f"Host header: journal.rebind.test:{port}." in src.text   # the name, not the address, is sent


async def test_every_redirect_hop_is_resolved_once_and_pinned(site):
    port = site.rsplit(":", 1)[1]
    asked: list[str] = []

    async def dns(host: str, port: int) -> tuple[str, ...]:
        asked.append(host)
        return ("127.0.0.1",)

    f = HttpFetcher(options(), resolver=dns)
    try:
        src = await f.fetch(f"http://pubs.rebind.test:{port}/redirect/chain/2")
    finally:
        await f.aclose()
    assert src.status is FetchStatus.OK and src.final_url == f"http://pubs.rebind.test:{port}/article/hypertension"
    assert asked == ["pubs.rebind.test"] * 3


async def test_name_resolving_to_a_private_address_is_refused_before_connecting(site):
    async def dns(host: str, port: int) -> tuple[str, ...]:
        return ("10.1.2.3",)

    f = HttpFetcher(options(), resolver=dns)
    try:
        src = await f.fetch("http://intranet.rebind.test/admin")
    finally:
        await f.aclose()
    assert src.status is FetchStatus.UNSAFE_URL
    assert src.reason.startswith("intranet.rebind.test resolves to 10.1.2.3, a private network address")


async def test_pinned_transport_refuses_hosts_that_were_never_checked(site):
    import httpx

    from sourcecheckup.fetching.safety import AddressPins, pinned_transport

    async with httpx.AsyncClient(transport=pinned_transport(AddressPins()), timeout=2.0) as client:
        with pytest.raises(httpx.ConnectError, match="no checked address"):
            await client.get(f"{site}/article/hypertension")


def test_one_compressed_chunk_never_expands_past_the_decode_step():
    import zlib

    from sourcecheckup.fetching.base import DECODE_STEP_BYTES, BoundedDecoder

    comp = zlib.compressobj(9, zlib.DEFLATED, 31)
    bomb = comp.compress(b"\0" * 20_000_000) + comp.flush()
    assert len(bomb) < 65_536                       # fits in one network read
    pieces = BoundedDecoder("gzip").feed(bomb)
    sizes = [len(next(pieces)) for _ in range(5)]   # decoded lazily, piece by piece
    assert sizes == [DECODE_STEP_BYTES] * 5
    total = sum(sizes) + sum(len(p) for p in pieces)
    assert total == 20_000_000


def test_raw_deflate_and_unknown_encodings():
    import zlib

    from sourcecheckup.fetching.base import BoundedDecoder

    raw = zlib.compressobj(6, zlib.DEFLATED, -15)
    data = raw.compress(b"<p>metformin</p>" * 100) + raw.flush()
    decoder = BoundedDecoder("deflate")
    assert b"".join(decoder.feed(data)) + decoder.flush() == b"<p>metformin</p>" * 100
    with pytest.raises(ValueError, match="'br'"):
        BoundedDecoder("br")


async def test_gzip_bomb_is_stopped_with_bounded_memory(site):
    import tracemalloc

    f = HttpFetcher(options(max_bytes=1_000_000))
    tracemalloc.start()
    try:
        src = await f.fetch(f"{site}/gzip-bomb")
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
        await f.aclose()
    assert src.status is FetchStatus.TOO_LARGE and "decompression bomb" in src.reason
    assert peak < 8_000_000    # the 40 MB body never sat in memory


async def test_meta_keeps_the_headers_that_tell_a_later_run_what_changed(fetcher, site):
    src = await fetcher.fetch(f"{site}/changing/headers-test")
    assert src.meta["content_type"] == "text/html; charset=utf-8"
    assert src.meta["last_modified"] == "Wed, 01 Oct 2025 10:00:00 GMT" and src.meta["etag"] == '"rev-1"'


@pytest.mark.skipif(__import__("shutil").which("openssl") is None, reason="openssl is needed to make a test certificate")
async def test_pinned_https_keeps_the_host_name_for_sni_and_certificate_checks(tmp_path):
    import ssl
    import subprocess
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    import httpx

    from sourcecheckup.fetching.safety import AddressPins, CheckedUrl, pinned_transport

    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout", str(key), "-out", str(cert),
                    "-days", "1", "-subj", "/CN=secure.rebind.test", "-addext", "subjectAltName=DNS:secure.rebind.test"],
                   check=True, capture_output=True, timeout=30)
    names: list[str | None] = []

    class Hello(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            body = f"hello {self.headers['Host']}".encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *args: object) -> None:
            return

    server = ThreadingHTTPServer(("127.0.0.1", 0), Hello)
    server_ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server_ctx.load_cert_chain(cert, key)
    server_ctx.sni_callback = lambda sock, name, ctx: names.append(name)
    server.socket = server_ctx.wrap_socket(server.socket, server_side=True)
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
    port = server.server_address[1]
    pins = AddressPins()
    good, wrong = f"https://secure.rebind.test:{port}/", f"https://other.rebind.test:{port}/"
    for url in (good, wrong):
        pins.pin(CheckedUrl(url, urlsplit_host(url), ("127.0.0.1",)))
    try:
        async with httpx.AsyncClient(transport=pinned_transport(pins, verify=ssl.create_default_context(cafile=cert)),
                                     timeout=5.0) as client:
            response = await client.get(good)
            assert (response.status_code, response.text) == (200, f"hello secure.rebind.test:{port}")
            assert names == ["secure.rebind.test"]
            with pytest.raises(httpx.ConnectError, match="Hostname mismatch"):
                await client.get(wrong)   # pinned to the same address, but the certificate is not for it
    finally:
        server.shutdown()
        server.server_close()


def urlsplit_host(url: str) -> str:
    from urllib.parse import urlsplit

    return urlsplit(url).hostname or ""


async def test_extraction_in_worker_processes_gives_the_same_sources(site):
    # 20 s: the PDF's worker process starts slowly when both cores are busy (see the test above)
    threads, workers = HttpFetcher(options(timeout_s=20.0)), HttpFetcher(options(timeout_s=20.0, extract_workers=1))
    try:
        urls = [f"{site}/article/metformin-lactic-acidosis", f"{site}/docs/diabetes-guideline.pdf",
                f"{site}/pages/paywall-teaser.html"]
        a = await asyncio.gather(*(threads.fetch(u) for u in urls))
        b = await asyncio.gather(*(workers.fetch(u) for u in urls))
    finally:
        await threads.aclose()
        await workers.aclose()
    for x, y in zip(a, b):
        assert (x.status, x.reason, x.title, x.text, x.sha256) == (y.status, y.reason, y.title, y.text, y.sha256)
    assert b[0].status is FetchStatus.OK and b[2].status is FetchStatus.PAYWALLED


async def test_statuses_and_encodings_the_fixture_site_never_sends_through_a_mock_transport():
    """httpx.MockTransport where a socket adds nothing: the outcome table for rarer answers, the
    headers we send, and the address rule still applied to each hop before the transport is asked."""
    import httpx

    asked: list[httpx.Request] = []

    def body(text: str) -> httpx.ByteStream:   # a stream, as a socket gives: content= arrives already read
        return httpx.ByteStream(text.encode())

    def journal(request: httpx.Request) -> httpx.Response:
        asked.append(request)
        path = request.url.path
        if path == "/pay":
            return httpx.Response(402, stream=body("<p>Pay per view</p>"))
        if path == "/legal":
            return httpx.Response(451, stream=body("<p>Not available in your country</p>"))
        if path == "/brotli":
            return httpx.Response(200, headers={"content-type": "text/html", "content-encoding": "br"},
                                  stream=body("\x1b\x00\x00"))
        if path == "/moved":
            return httpx.Response(302, headers={"location": "http://10.0.0.7/admin"})
        return httpx.Response(200, headers={"content-type": "text/plain"},
                              stream=body("Ferritin above 1000 ng/mL suggests iron overload."))

    async def public_dns(host: str, port: int) -> tuple[str, ...]:
        return ("93.184.216.34",)

    f = HttpFetcher(options(allow_hosts=()), resolver=public_dns, transport=httpx.MockTransport(journal))
    try:
        pay, legal, brotli, moved, ok = [await f.fetch(f"https://journal.example.org/{p}")
                                         for p in ("pay", "legal", "brotli", "moved", "ok")]
    finally:
        await f.aclose()
    assert (pay.status, pay.reason) == (FetchStatus.PAYWALLED, "HTTP 402 Payment Required: the site asks for payment")
    assert (legal.status, legal.reason) == (
        FetchStatus.BLOCKED, "HTTP 451 Unavailable For Legal Reasons: the site refused access")
    assert brotli.status is FetchStatus.HTTP_ERROR
    assert brotli.reason == "the body could not be decoded: the server used content encoding 'br', which we did not ask for"
    assert moved.status is FetchStatus.UNSAFE_URL and moved.final_url == "http://10.0.0.7/admin"
    assert "(redirected from https://journal.example.org/moved)" in moved.reason
    assert ok.status is FetchStatus.OK and "iron overload" in ok.text and ok.http_status == 200
    assert [r.url.host for r in asked] == ["journal.example.org"] * 5       # 10.0.0.7 was never asked
    sent = asked[-1].headers
    assert sent["accept-encoding"] == "gzip, deflate" and sent["user-agent"].startswith("Mozilla/5.0")


def test_the_readme_outcome_list_names_every_fetch_outcome():
    import re

    from sourcecheckup.models import FetchStatus

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    sentence = re.search(r"Every source\s+ends with exactly one outcome.*?:(.*?)\. The detectors", readme, re.S)
    assert sentence, "the README's outcome list moved"
    listed = set(re.findall(r"`([a-z_]+)`", sentence.group(1)))
    assert listed == {s.value for s in FetchStatus}, {s.value for s in FetchStatus} ^ listed
