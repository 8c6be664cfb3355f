"""Hostile pages, served by the fixture site under /hostile/pages/, and the fetch options the hostile
tests read them with.

Each page is small and generated here: a page that crashes the renderer, one that opens popups, one that
busy-loops, one whose text holds a single control character, and a small PDF whose pages share one
huge content stream.
"""
from __future__ import annotations

import zlib
from typing import Any

from sourcecheckup.fetching import FetchOptions
from sourcecheckup.fetching.browser import TEST_RESOLVER_RULES

from .documents import pdf_file

ARTICLE = ("Metformin should not be started when the eGFR is below 30 mL/min/1.73 m2, and its dose is reviewed "
           "when the eGFR falls below 45. Lactic acidosis with metformin is rare, about 3 to 10 cases per "
           "100,000 patient-years, and vitamin B12 is checked in long-term use. ")


def _doc(title: str, body: str, script: str = "") -> bytes:
    return (f"<!DOCTYPE html><html><head><meta charset='utf-8'><title>{title}</title></head><body>"
            f"<main>{body}</main>{script and f'<script>{script}</script>'}</body></html>").encode()


def crash_page() -> bytes:
    """Short text (the render waits for more), then a script that exhausts the JavaScript heap: the
    renderer dies of it ("Target crashed") while the render waits (tests cap the heap with --js-flags)."""
    return _doc("Crash", "<p>Loading</p>",
                "setTimeout(() => { const a = []; for (;;) a.push(new Array(100000).fill(Math.random())); }, 100);")


def popup_page() -> bytes:
    """An article that opens six windows as it loads, to itself and to other pages."""
    return _doc("Metformin and kidney function", f"<h1>Metformin and kidney function</h1><p>{ARTICLE}</p>",
                "for (let i = 0; i < 6; i++) { try { window.open(i % 2 ? '/article/hypertension?popup=' + i "
                ": 'about:blank', '_blank'); } catch (e) {} }")


def js_article(n: int) -> bytes:
    """An article its script writes (an ordinary page that needs JavaScript)."""
    text = ARTICLE.replace("Metformin", f"Metformin (page {n})", 1)
    return _doc(f"Article {n}", "<div id='a'></div>",
                f"document.getElementById('a').innerHTML = '<h1>Article {n}</h1><p>' + {text!r} + '</p>';")


def busy_page() -> bytes:
    """A page whose script never yields: its renderer's main thread stays busy until it is stopped."""
    return _doc("Busy", "<p>Loading</p>", "setTimeout(() => { for (;;) {} }, 10);")


def control_character_page(entity: str) -> bytes:
    """The article with one control character (as written: &#11;, &#x1F;, a raw byte...) in it."""
    return _doc("Metformin and kidney function",
                f"<article><h1>Metformin and kidney function</h1><p>{ARTICLE}</p><p>Reviewed{entity} yearly. "
                f"{ARTICLE}</p></article>")


def shared_stream_pdf(pages: int = 30, operators_mb: float = 2.0, operator: bytes = b"BT /F1 1 Tf ET ") -> bytes:
    """A small PDF whose pages all draw one content stream of text-less operators that inflates to
    operators_mb MB: every page is parsed again, so reading it takes minutes from a few KB."""
    comp = zlib.compressobj(9)
    chunk = operator * 20_000
    data = b"".join(comp.compress(chunk) for _ in range(int(operators_mb * 1_000_000 / len(chunk)) + 1))
    data += comp.flush()
    kids = " ".join(f"{4 + i} 0 R" for i in range(pages))
    objects = [b"<< /Type /Catalog /Pages 2 0 R >>", f"<< /Type /Pages /Kids [{kids}] /Count {pages} >>".encode(),
               b"<< /Length %d /Filter /FlateDecode >>\nstream\n" % len(data) + data + b"\nendstream"]
    font = b"<< /Font << /F1 << /Type /Font /Subtype /Type1 /BaseFont /Helvetica >> >> >>"
    objects += [b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 3 0 R /Resources %s >>" % font] * pages
    return pdf_file(objects)


def route(path: str, query: dict[str, list[str]]) -> tuple[bytes, str] | None:
    """(body, content type) of a /hostile/pages/ path, or None."""
    name = path.removeprefix("/hostile/pages/")
    if name == "crash":
        return crash_page(), "text/html; charset=utf-8"
    if name == "popups":
        return popup_page(), "text/html; charset=utf-8"
    if name == "js":
        return js_article(int(query.get("n", ["0"])[0])), "text/html; charset=utf-8"
    if name == "busy":
        return busy_page(), "text/html; charset=utf-8"
    if name == "control":
        return control_character_page(query.get("c", ["&#11;"])[0]), "text/html; charset=utf-8"
    if name == "shared-stream.pdf":
        pages, mb = int(query.get("pages", ["30"])[0]), float(query.get("mb", ["2"])[0])
        return shared_stream_pdf(pages, mb), "application/pdf"
    return None


def fetch_options(**kw: Any) -> FetchOptions:
    """127.0.0.1 allowed, short timeouts, no browser unless asked, Chromium's resolver rules for tests."""
    base: dict[str, Any] = dict(allow_hosts=("127.0.0.1",), timeout_s=8.0, browser="never",
                                browser_args=(TEST_RESOLVER_RULES,), browser_page_timeout_s=6.0)
    base.update(kw)
    return FetchOptions(**base)
