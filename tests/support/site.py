"""A fixture website on 127.0.0.1: real pages from tests/fixtures/site/ plus misbehaving routes.

Use the `site` pytest fixture (base URL) in tests, or start_site() from bench scripts.
Every handler is bounded in time: nothing here sleeps longer than SLOW_S.
"""
from __future__ import annotations

import io
import json
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Callable, Iterator
from urllib.parse import parse_qs, urlsplit

import pytest

from . import hostile_pages
from .documents import pdf_file

SITE_DIR = Path(__file__).resolve().parents[1] / "fixtures" / "site"
SLOW_S = 4.0                   # longer than any test's fetch timeout, short enough to end quickly
LARGE_BYTES = 3_000_000        # tests set max_bytes below this
# the fake web archive knows these paths (any host): path -> snapshot timestamp
ARCHIVED = {"/retired/metformin-guidance": "20190315083000", "/status/404": "20200102030405"}
# the fake DOI resolver (/doi/<doi>, like https://doi.org/<doi>): DOI -> where the publisher lives
DOIS = {"10.5555/jnp.2023.0456": "/journal/jnp/doi/10.5555/jnp.2023.0456",
        "10.5555/ihh.2020.0007": "/journal/ihh/doi/10.5555/ihh.2020.0007",
        # papers the fake metadata services know (tests/support/fake_scholarly.py), as cited and lower-cased
        "10.1056/NEJMoa1504720": "/journal/nejm/doi/10.1056/NEJMoa1504720",
        "10.1056/nejmoa1504720": "/journal/nejm/doi/10.1056/NEJMoa1504720",
        "10.1016/S0140-6736(20)31180-6": "/journal/lancet/doi/10.1016/S0140-6736(20)31180-6",
        "10.1016/s0140-6736(20)31180-6": "/journal/lancet/doi/10.1016/S0140-6736(20)31180-6"}
# publisher paths the DOIs land on -> fixture files (the second hops once more, like real publishers)
PUBLISHER = {"/journal/jnp/doi/10.5555/jnp.2023.0456": "journal/sglt2-landing.html",
             "/journal/ihh/doi/10.5555/ihh.2020.0007": "/article/hfe-hemochromatosis",
             "/journal/nejm/doi/10.1056/NEJMoa1504720": "journal/empa-reg-abstract.html",
             "/journal/lancet/doi/10.1016/S0140-6736(20)31180-6": "journal/hcq-registry-abstract.html"}
ENDLESS_CAP_BYTES = 50_000_000  # the "endless" body stops here so a broken client cannot hang a test

_TYPES = {".html": "text/html; charset=utf-8", ".htm": "text/html; charset=utf-8", ".pdf": "application/pdf",
          ".txt": "text/plain; charset=utf-8", ".png": "image/png", ".json": "application/json",
          ".xml": "application/xml", ".js": "application/javascript", ".css": "text/css"}


def minimal_pdf(lines: list[str], title: str = "") -> bytes:
    """A valid one-page PDF whose text layer holds `lines` (Helvetica, one line each)."""
    def esc(s: str) -> str:
        return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    ops = ["BT", "/F1 11 Tf", "14 TL", "72 760 Td"]
    for line in lines:
        ops.append(f"({esc(line)}) Tj T*")
    ops.append("ET")
    stream = "\n".join(ops).encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
        b"<< /Title (" + esc(title).encode("latin-1") + b") /Author (Fixture Press) >>",
    ]
    return pdf_file(objects, header=b"%PDF-1.4\n%\xe2\xe3\xcf\xd3\n", trailer=b" /Info 6 0 R")


GUIDELINE_PDF_LINES = [
    "Clinical Guideline: Management of Type 2 Diabetes in Adults",
    "Section 4. Metformin",
    "Metformin remains the preferred initial glucose-lowering drug for most adults with type 2 diabetes.",
    "Metformin should not be started when the eGFR is below 30 mL/min/1.73 m2.",
    "The dose should be reviewed when the eGFR falls below 45 mL/min/1.73 m2.",
    "Lactic acidosis associated with metformin is rare, about 3 to 10 cases per 100,000 patient-years.",
    "Vitamin B12 levels should be checked periodically in patients on long-term metformin therapy.",
]


def _guideline_pdf() -> bytes:
    return minimal_pdf(GUIDELINE_PDF_LINES, title="Management of Type 2 Diabetes in Adults")


def _encrypted_pdf() -> bytes:
    from pypdf import PdfReader, PdfWriter

    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(_guideline_pdf())))
    writer.encrypt(user_password="clinician-only", owner_password="owner", algorithm="RC4-128")
    buf = io.BytesIO()
    writer.write(buf)
    return buf.getvalue()


def _broken_pdf() -> bytes:
    """A PDF cut short in transfer: a valid header, no cross-reference table."""
    return _guideline_pdf()[:400] + b"\n%%EOF garbage"


def _gzip_bomb(decompressed: int = 40_000_000) -> bytes:
    comp = zlib.compressobj(9, zlib.DEFLATED, 31)   # wbits 31: a gzip stream
    chunk = b"\0" * 1_000_000
    parts = [comp.compress(chunk) for _ in range(decompressed // len(chunk))]
    parts.append(comp.flush())
    return b"".join(parts)


def nested_divs_page(n_bytes: int) -> bytes:
    """Blocks of 40 nested <div>s, repeated to n_bytes: an extractor's worst case (14 MB took 209 s)."""
    unit = ("<div>" * 40 + "<p>Nested paragraph about blood pressure, metformin and the kidneys.</p>"
            + "</div>" * 40)
    return ("<!DOCTYPE html><html><head><title>Nested</title></head><body>"
            + unit * max(1, n_bytes // len(unit)) + "</body></html>").encode()


def tables_page(n_bytes: int) -> bytes:
    """One table of n_bytes (13 MB took 45 s to extract)."""
    row = "<tr><td>Systolic pressure</td><td>130</td><td>mm Hg</td><td>adults over 18</td></tr>"
    return ("<!DOCTYPE html><html><head><title>Tables</title></head><body><table>"
            + row * max(1, n_bytes // len(row)) + "</table></body></html>").encode()


def pdf_bomb(decompressed_mb: int = 120) -> bytes:
    """A one-page PDF whose content stream inflates to decompressed_mb MB (about 150 KB sent)."""
    comp = zlib.compressobj(9)
    chunk = b"0 0 m " * 170_000            # about 1 MB of drawing operators, no text
    data = b"".join(comp.compress(chunk) for _ in range(decompressed_mb)) + comp.flush()
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
               b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R >>",
               b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream"]
    out = io.BytesIO()
    out.write(b"%PDF-1.4\n")
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, xref))
    return out.getvalue()


def websocket_page(port: int) -> bytes:
    """An article whose script tries ws:// and wss:// connections to 127.0.0.1:port, again and again."""
    return (f"""<!DOCTYPE html><html><head><title>Live blood pressure ticker</title></head><body><main>
<h1>Live blood pressure ticker</h1>
<p>Hypertension is defined as a blood pressure of 130/80 mm Hg or higher. Lifestyle changes such as the
DASH diet, less salt and regular exercise lower blood pressure in most adults, and medicines are added
when they are not enough. This page streams readings over a WebSocket.</p></main>
<script>
for (let i = 0; i < 5; i++) {{
  for (const url of ["ws://127.0.0.1:{port}/feed", "wss://127.0.0.1:{port}/feed", "ws://localhost:{port}/x"]) {{
    try {{ const s = new WebSocket(url); s.onerror = () => {{}}; }} catch (e) {{}}
  }}
}}
// a worker's scope is not the page's: only the browser's network settings can stop this one
try {{
  const code = "for (let i = 0; i < 3; i++) {{ try {{ new WebSocket('ws://127.0.0.1:{port}/w'); }} catch (e) {{}} }}";
  new Worker(URL.createObjectURL(new Blob([code], {{type: "text/javascript"}})));
}} catch (e) {{}}
</script></body></html>""").encode()


_CACHE: dict[str, bytes] = {}
_CACHE_LOCK = threading.Lock()


def _cached(name: str, make: Callable[[], bytes]) -> bytes:
    with _CACHE_LOCK:
        if name not in _CACHE:
            _CACHE[name] = make()
        return _CACHE[name]


class _Handler(BaseHTTPRequestHandler):
    server_version = "FixtureSite/1.0"
    protocol_version = "HTTP/1.1"
    # headers and body are two writes: with Nagle's algorithm the body waits for the client's delayed
    # ACK of the headers, 40 ms a response on Linux loopback, which real servers do not add
    disable_nagle_algorithm = True

    def log_message(self, format: str, *args: object) -> None:  # keep test output quiet
        return

    # -- helpers -------------------------------------------------------------------------------
    def _send(self, code: int, body: bytes = b"", content_type: str = "text/html; charset=utf-8",
              headers: dict[str, str] | None = None) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _page(self, code: int, title: str, body: str) -> None:
        html = (f"<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\"><title>{title}</title></head>"
                f"<body><main><h1>{title}</h1><p>{body}</p></main></body></html>")
        self._send(code, html.encode("utf-8"))

    def _redirect(self, location: str, code: int = 302) -> None:
        self._send(code, b"", headers={"Location": location})

    def _static(self, rel: str) -> bool:
        path = (SITE_DIR / rel.lstrip("/")).resolve()
        if not path.is_relative_to(SITE_DIR.resolve()):
            return False
        if path.is_dir():
            path = path / "index.html"
        if not path.is_file():
            alt = path.with_suffix(".html")
            if not alt.is_file():
                return False
            path = alt
        ctype = _TYPES.get(path.suffix.lower(), "application/octet-stream")
        if path.suffix.lower() in (".html", ".htm") and b"charset=windows-1252" in path.read_bytes()[:400]:
            ctype = "text/html"   # the page declares its own charset in <meta>
        self._send(200, path.read_bytes(), ctype, {"Last-Modified": "Tue, 14 Mar 2023 09:00:00 GMT",
                                                   "ETag": f'"{path.stat().st_size:x}"'})
        return True

    def _archive_lookup(self, query: dict[str, list[str]]) -> None:
        """A Wayback-compatible availability answer: /wayback/available?url=..."""
        url = query.get("url", [""])[0]
        stamp = ARCHIVED.get(urlsplit(url).path)
        closest = {}
        if stamp:
            host = self.headers.get("Host", "127.0.0.1")
            closest = {"closest": {"available": True, "status": "200", "timestamp": stamp,
                                   "url": f"http://{host}/web/{stamp}/{url}"}}
        self._send(200, json.dumps({"url": url, "archived_snapshots": closest}).encode(), "application/json")

    def _archived_copy(self, path: str) -> None:
        stamp = path.split("/")[2]
        banner = f'<div id="wm-ipp">The Wayback Machine - snapshot of {stamp}</div>'.encode()
        page = (SITE_DIR / "article/metformin-lactic-acidosis.html").read_bytes()
        self._send(200, page.replace(b"<body>", b"<body>" + banner, 1))

    # -- routes --------------------------------------------------------------------------------
    def do_HEAD(self) -> None:
        self.do_GET()

    def do_GET(self) -> None:  # noqa: C901 - one flat routing table reads best here
        latency = getattr(self.server, "latency_s", 0.0)
        if latency:
            time.sleep(latency)
        parts = urlsplit(self.path)
        path, query = parts.path, parse_qs(parts.query)
        server: _SiteServer = self.server  # type: ignore[assignment]
        with server.lock:
            # counted per full path with query, so each test can use its own ?id= counter
            server.hits[self.path] = server.hits.get(self.path, 0) + 1
            hits = server.hits[self.path]
        try:
            self._route(path, query, hits)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _route(self, path: str, query: dict[str, list[str]], hits: int) -> None:
        if path.startswith("/status/"):
            code = int(path.rsplit("/", 1)[1])
            titles = {404: "Page not found", 410: "Gone", 500: "Internal Server Error", 403: "Forbidden",
                      503: "Service Unavailable", 401: "Unauthorized", 429: "Too Many Requests"}
            self._page(code, titles.get(code, f"Status {code}"), "Sorry.")
        elif path.startswith("/redirect/chain/"):
            n = int(path.rsplit("/", 1)[1])
            self._redirect(f"/redirect/chain/{n - 1}" if n > 1 else "/article/hypertension", 301 if n % 2 else 302)
        elif path == "/redirect/loop/a":
            self._redirect("/redirect/loop/b")
        elif path == "/redirect/loop/b":
            self._redirect("/redirect/loop/a")
        elif path == "/redirect/private":
            self._redirect("http://10.0.0.1/admin")
        elif path == "/redirect/metadata":
            self._redirect("http://169.254.169.254/latest/meta-data/")
        elif path == "/redirect/file":
            self._redirect("file:///etc/passwd")
        elif path == "/redirect/to":         # ?u=<location>: a redirect to any location (issue 30)
            self._redirect(query.get("u", ["/"])[0])
        elif path == "/hostile/meta-refresh":   # ?to=<url>: a "moved" stub that redirects by <meta refresh>
            to = query.get("to", ["/article/hypertension"])[0].replace('"', "%22")
            self._send(200, (f'<html><head><meta http-equiv="refresh" content="0; url={to}">'
                             f"<title>Moved</title></head><body>Moved</body></html>").encode())
        elif path == "/redirect/home":
            self._redirect("/", 301)
        elif path == "/slow":
            # requests with the same tag are counted while they wait: /slow-peak?tag= says how
            # many were ever in flight at once (per-host limits, seen from the server's side)
            tag = query.get("tag", [""])[0]
            with self.server.lock:
                self.server.in_flight[tag] = self.server.in_flight.get(tag, 0) + 1
                self.server.peak[tag] = max(self.server.peak.get(tag, 0), self.server.in_flight[tag])
            try:
                time.sleep(min(float(query.get("s", [SLOW_S])[0]), SLOW_S))
            finally:
                with self.server.lock:
                    self.server.in_flight[tag] -= 1
            self._page(200, "Finally", "This page took a long time.")
        elif path == "/slow-peak":
            with self.server.lock:
                peak = self.server.peak.get(query.get("tag", [""])[0], 0)
            self._send(200, json.dumps({"peak": peak}).encode(), "application/json")
        elif path == "/slow-headers":
            # slowloris-style: a header line every 0.5 s, never finishing within a test's cap
            self.wfile.write(b"HTTP/1.1 200 OK\r\n")
            deadline = time.monotonic() + SLOW_S
            i = 0
            while time.monotonic() < deadline:
                self.wfile.write(b"X-Drip-%d: x\r\n" % i)
                self.wfile.flush()
                i += 1
                time.sleep(0.5)
            self.close_connection = True
        elif path == "/slow-body":
            # slowloris in the body: quick headers, then a few bytes every 0.5 s for longer than the cap
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            deadline = time.monotonic() + SLOW_S
            while time.monotonic() < deadline:
                self.wfile.write(b"<p>drip</p>\n")
                self.wfile.flush()
                time.sleep(0.5)
            self.close_connection = True
        elif path == "/endless":
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.end_headers()
            chunk = b"<p>" + b"metformin " * 6500 + b"</p>\n"
            sent = 0
            while sent < ENDLESS_CAP_BYTES:
                self.wfile.write(chunk)
                sent += len(chunk)
            self.close_connection = True
        elif path == "/large":
            para = (b"<p>Hypertension is defined as a blood pressure of 130/80 mm Hg or higher. " * 20) + b"</p>\n"
            body = b"<html><body>" + para * (LARGE_BYTES // len(para) + 1) + b"</body></html>"
            self._send(200, body)
        elif path == "/gzip-bomb":
            self._send(200, _cached("bomb", _gzip_bomb), headers={"Content-Encoding": "gzip"})
        elif path == "/image.png":
            self._send(200, b"\x89PNG\r\n\x1a\n" + b"\0" * 2048, "image/png")
        elif path == "/docs/diabetes-guideline.pdf":
            self._send(200, _cached("pdf", _guideline_pdf), "application/pdf")
        elif path == "/download/guideline":   # a PDF served as octet-stream: found by its magic bytes
            self._send(200, _cached("pdf", _guideline_pdf), "application/octet-stream")
        elif path == "/docs/encrypted.pdf":
            self._send(200, _cached("encrypted", _encrypted_pdf), "application/pdf")
        elif path == "/docs/broken.pdf":
            self._send(200, _cached("broken", _broken_pdf), "application/pdf")
        elif path == "/flaky/429":
            # fails twice with Retry-After, then answers: a polite client gets the page
            if hits < 3:
                self._send(429, b"slow down", "text/plain", {"Retry-After": query.get("after", ["0.2"])[0]})
            else:
                self._static("article/hypertension.html")
        elif path == "/flaky/503-long":
            self._send(503, b"maintenance", "text/plain", {"Retry-After": "3600"})
        elif path == "/reset":
            self.close_connection = True
            self.connection.shutdown(2)
        elif path == "/text/notes.txt":
            self._send(200, "Ferritin above 1000 µg/L in C282Y homozygotes predicts cirrhosis risk.\n".encode(),
                       "text/plain; charset=utf-8")
        elif path == "/blocked/captcha":
            self._send(403, (SITE_DIR / "pages/captcha.html").read_bytes(), headers={"Server": "cloudflare"})
        elif path == "/huge":
            paras = "".join(f"<p>Case {i}: serum ferritin {200 + i} µg/L and transferrin saturation {30 + i % 60}% "
                            f"were interpreted with inflammation, alcohol use and liver disease in mind.</p>\n"
                            for i in range(1500))
            self._send(200, ("<html><head><title>Iron studies handbook</title></head><body><article>"
                             "<h1>Iron studies handbook</h1>" + paras + "</article></body></html>").encode())
        elif path == "/wayback/available":
            self._archive_lookup(query)
        elif path.startswith("/web/"):
            self._archived_copy(path)
        elif path == "/robots.txt":
            self._send(200, b"User-agent: *\nDisallow: /private-area/\n", "text/plain")
        elif path.startswith("/private-area/"):
            self._static("article/hypertension.html")
        elif path.startswith("/doi/"):
            target = DOIS.get(path[len("/doi/"):])
            if target:
                self._redirect(target, 302)
            else:
                self._page(404, "DOI Not Found", f"DOI {path[len('/doi/'):]} could not be found.")
        elif path in PUBLISHER:
            target = PUBLISHER[path]
            if target.startswith("/"):
                self._redirect(target, 301)
            else:
                self._static(target)
        elif path.startswith("/changing/"):
            # a page revised on every visit: each fetch reads other bytes
            page = (SITE_DIR / "article/hypertension.html").read_bytes()
            note = f"<p>Revision {hits}: the editors reviewed this page again.</p></main>".encode()
            self._send(200, page.replace(b"</main>", note, 1),
                       headers={"Last-Modified": f"Wed, 0{min(hits, 9)} Oct 2025 10:00:00 GMT",
                                "ETag": f'"rev-{hits}"'})
        elif path == "/_hits":   # how often a path (with its query) was requested
            site: _SiteServer = self.server  # type: ignore[assignment]
            with site.lock:
                count = site.hits.get(query.get("path", [""])[0], 0)
            self._send(200, json.dumps({"hits": count}).encode(), "application/json")
        elif path == "/echo-host":
            self._page(200, "Echo", f"Host header: {self.headers.get('Host', '')}. " * 20)
        elif path == "/hostile/nested":      # ?mb=14: generated here, never kept in git
            mb = float(query.get("mb", ["14"])[0])
            self._send(200, _cached(f"nested-{mb}", lambda: nested_divs_page(int(mb * 1_000_000))))
        elif path == "/hostile/drip":        # ?mb=0.2&s=2: the nested page, dripped over s seconds (slowloris)
            mb, secs = float(query.get("mb", ["0.2"])[0]), float(query.get("s", ["2"])[0])
            body = _cached(f"nested-{mb}", lambda: nested_divs_page(int(mb * 1_000_000)))
            self.send_response(200)
            self.send_header("Content-Type", "text/html; charset=utf-8")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            step = len(body) // 20 + 1
            for i in range(0, len(body), step):
                self.wfile.write(body[i:i + step])
                self.wfile.flush()
                time.sleep(secs / 20)
        elif path == "/hostile/tables":
            mb = float(query.get("mb", ["13"])[0])
            self._send(200, _cached(f"tables-{mb}", lambda: tables_page(int(mb * 1_000_000))))
        elif path == "/hostile/pdf-bomb.pdf":
            self._send(200, _cached("pdf-bomb", pdf_bomb), "application/pdf")
        elif path == "/hostile/html-as-pdf":   # a login page sent with the PDF's type
            self._send(200, (SITE_DIR / "article/hypertension.html").read_bytes(), "application/pdf")
        elif path == "/hostile/location-tab":
            self.send_response(302)
            self.send_header("Location", "/article/hyper\ttension")
            self.send_header("Content-Length", "0")
            self.end_headers()
        elif path == "/hostile/websocket":
            self._send(200, websocket_page(int(query.get("port", ["9"])[0])))
        elif path.startswith("/hostile/pages/") and (got := hostile_pages.route(path, query)) is not None:
            self._send(200, got[0], got[1])
        elif path == "/empty":
            self._send(200, b"<html><head><title>Loading</title></head><body></body></html>")
        elif path == "/generated":   # ?n=<seed>&sentences=<k>: k sentences no other seed's page has (real work
            # for an embedding model: nothing of it is cached from another page)
            n, k = int(query.get("n", ["0"])[0]), int(query.get("sentences", ["40"])[0])
            body = " ".join(f"<p>{_generated_sentence(n, j)}</p>" for j in range(k))
            self._send(200, f"<html><head><title>Generated page {n}</title></head><body><article>{body}"
                            f"</article></body></html>".encode())
        elif not self._static(path):
            self._page(404, "Page not found", f"No page at {path}.")


_DRUGS = ("metformin", "amlodipine", "lisinopril", "atorvastatin", "warfarin", "insulin", "ramipril", "apixaban")
_EFFECTS = ("lowers blood pressure", "raises the risk of bleeding", "reduces LDL cholesterol", "needs dose changes",
            "is stopped before surgery", "causes a dry cough", "is taken with food", "interacts with grapefruit")


def _generated_sentence(n: int, j: int) -> str:
    drug, effect = _DRUGS[(n + j) % len(_DRUGS)], _EFFECTS[(n * 3 + j) % len(_EFFECTS)]
    return (f"In cohort {n}-{j}, {drug} {effect} in {10 + (n * 7 + j * 13) % 80} of "
            f"{100 + (n * 11 + j) % 400} adults followed for {1 + j % 9} years.")


class _SiteServer(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, latency_s: float, host: str = "127.0.0.1", port: int = 0) -> None:
        super().__init__((host, port), _Handler)
        self.latency_s = latency_s
        self.hits: dict[str, int] = {}
        self.in_flight: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.lock = threading.Lock()

    def handle_error(self, request: object, client_address: object) -> None:
        return  # clients that hang up early (timeouts, caps) are expected here


def start_site(latency_s: float = 0.0, host: str = "127.0.0.1", port: int = 0) -> tuple[str, Callable[[], None]]:
    """Start the fixture site on a random port of a loopback address; returns (base URL, stop)."""
    if not host.startswith("127."):
        raise ValueError(f"the fixture site only listens on loopback addresses, not {host}")
    server = _SiteServer(latency_s, host, port)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05},
                              name="fixture-site", daemon=True)
    thread.start()
    host, port = server.server_address[:2]

    def stop() -> None:
        server.shutdown()
        server.server_close()
        thread.join(timeout=2)

    return f"http://{host}:{port}", stop


@pytest.fixture(scope="session")
def site() -> Iterator[str]:
    """Base URL of the fixture website, e.g. "http://127.0.0.1:PORT"."""
    base, stop = start_site()
    yield base
    stop()


if __name__ == "__main__":
    # python -m tests.support.site [latency_s] [hosts]: serve on 127.0.0.1 .. 127.0.0.<hosts>,
    # one base URL per line, until stdin closes
    import sys

    latency = float(sys.argv[1]) if len(sys.argv) > 1 else 0.0
    n_hosts = int(sys.argv[2]) if len(sys.argv) > 2 else 1
    started = [start_site(latency, f"127.0.0.{i}") for i in range(1, max(1, min(n_hosts, 250)) + 1)]
    for url, _ in started:
        print(url, flush=True)
    try:
        sys.stdin.read()
    finally:
        for _, stop_site in started:
            stop_site()
