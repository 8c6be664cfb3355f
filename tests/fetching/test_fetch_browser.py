"""The headless browser: JavaScript pages rendered, one launch per run, safety rule and caps kept."""
from __future__ import annotations

import asyncio

import httpx
import pytest

from sourcecheckup.fetching import FetchOptions, make_fetcher
from sourcecheckup.fetching.browser import TEST_RESOLVER_RULES, BrowserFetcher, find_chromium
from sourcecheckup.models import FetchStatus

pytestmark = [pytest.mark.browser,
              pytest.mark.skipif(find_chromium() is None, reason="Chromium is not installed")]


def options(**kw) -> FetchOptions:
    base = dict(allow_hosts=("127.0.0.1",), timeout_s=6.0, browser="auto", browser_args=(TEST_RESOLVER_RULES,),
                browser_page_timeout_s=5.0)
    base.update(kw)
    return FetchOptions(**base)




async def test_auto_renders_js_only_article_and_keeps_plain_pages_on_http(site):
    f = make_fetcher(options())
    assert isinstance(f, BrowserFetcher)
    try:
        js, plain, pdf = await asyncio.gather(f.fetch(f"{site}/app/article.html?id=auto-once"),
                                              f.fetch(f"{site}/article/hypertension"),
                                              f.fetch(f"{site}/docs/diabetes-guideline.pdf"))
        again = await f.fetch(f"{site}/app/article.html")
    finally:
        await f.aclose()
    assert js.status is FetchStatus.OK and js.origin == "browser" and js.valid
    assert js.reason == "HTTP 200 OK, rendered in the browser"
    assert "Atorvastatin 80 mg lowers LDL cholesterol by about 50 percent" in js.text
    assert js.title == "Statins after a heart attack: who benefits most | HealthHub"
    assert plain.origin == "http" and pdf.origin == "http" and pdf.status is FetchStatus.OK
    assert again.origin == "browser"
    assert f.launches == 1
    async with httpx.AsyncClient() as client:
        hits = (await client.get(f"{site}/_hits", params={"path": "/app/article.html?id=auto-once"})).json()
    assert hits == {"hits": 1}   # plain HTTP read the page; the browser was handed the same bytes


async def test_browser_follows_redirects_itself_and_refuses_private_hops(site):
    f = make_fetcher(options(browser="always"))
    try:
        chain, private = await asyncio.gather(f.fetch(f"{site}/redirect/chain/2"),
                                              f.fetch(f"{site}/app/redirect-private.html"))
    finally:
        await f.aclose()
    assert chain.origin == "browser" and chain.final_url == f"{site}/article/hypertension"
    assert "130/80 mm Hg" in chain.text
    # the script's navigation to a redirect into 10.0.0.1 is stopped at the hop, never connected
    assert "10.0.0.1" not in private.text
    assert private.status in (FetchStatus.UNSAFE_URL, FetchStatus.OK)
    if private.status is FetchStatus.UNSAFE_URL:
        assert private.reason.startswith("10.0.0.1 is a private network address")


async def test_page_cap_ends_a_page_that_never_shows_text(site):
    f = make_fetcher(options(browser_page_timeout_s=1.5))
    try:
        src = await f.fetch(f"{site}/app/never-ready.html")
    finally:
        await f.aclose()
    assert src.status is FetchStatus.OK and not src.valid
    assert "browser" in src.reason and "needs_js" in src.flags


async def test_missing_browser_falls_back_to_http_with_a_clear_reason(site):
    f = make_fetcher(options(browser_executable="/nonexistent/chromium"))
    import os

    saved = os.environ.pop("SOURCECHECKUP_CHROMIUM", None)
    try:
        from sourcecheckup.fetching import browser as b

        b_candidates = b.CHROMIUM_CANDIDATES
        b.CHROMIUM_CANDIDATES = ()
        try:
            src = await f.fetch(f"{site}/app/article.html")
        finally:
            b.CHROMIUM_CANDIDATES = b_candidates
    finally:
        if saved is not None:
            os.environ["SOURCECHECKUP_CHROMIUM"] = saved
        await f.aclose()
    assert src.origin == "http" and "browser_unavailable" in src.flags
    assert "the page needs JavaScript but no browser is available: Chromium not found at /nonexistent/chromium: " \
           "install the 'chromium' package" in src.reason
    assert "pages that need JavaScript will be read as plain HTML" in src.reason


def test_browser_status_says_what_is_missing_in_plain_words(monkeypatch):
    from sourcecheckup.fetching import browser as b

    assert b.browser_status() == (True, f"Chromium at {find_chromium()} renders pages that need JavaScript")
    monkeypatch.delenv("SOURCECHECKUP_CHROMIUM", raising=False)
    monkeypatch.setattr(b, "CHROMIUM_CANDIDATES", ("/usr/lib/chromium/chromium-missing",))
    available, message = b.browser_status()
    assert not available
    assert message.startswith("Chromium not found at /usr/lib/chromium/chromium-missing: install the 'chromium' "
                              "package")
    assert message.endswith("pages that need JavaScript will be read as plain HTML")


async def test_browser_requests_go_to_the_checked_address_with_byte_caps(site):
    """The browser's requests are fetched by our pinned client: a rebinding DNS cannot redirect them."""
    from sourcecheckup.fetching import HttpFetcher

    port = site.rsplit(":", 1)[1]
    asked: list[str] = []

    async def hostile_dns(host: str, port: int) -> tuple[str, ...]:
        asked.append(host)
        return ("127.0.0.1",) if len(asked) <= 3 else ("127.0.0.9",)

    opts = options(browser="always", max_bytes=1_000_000)
    f = BrowserFetcher(HttpFetcher(opts, resolver=hostile_dns), opts)
    try:
        js = await f.fetch(f"http://news.rebind.test:{port}/app/article.html")
        big = await f.fetch(f"{site}/large")
    finally:
        await f.aclose()
    assert js.origin == "browser" and "Atorvastatin 80 mg lowers LDL cholesterol" in js.text
    assert asked[:2] == ["news.rebind.test", "news.rebind.test"]   # the page, then its data request
    assert big.status is FetchStatus.TOO_LARGE and big.origin == "http"   # the browser gave up; HTTP says why



def test_a_named_browser_that_is_missing_is_not_replaced_by_another(monkeypatch):
    from sourcecheckup.fetching import browser as b

    assert b.find_chromium() is not None      # the machine has one (the module is skipped otherwise)
    assert b.find_chromium("/nonexistent/chromium") is None
    monkeypatch.setenv("SOURCECHECKUP_CHROMIUM", "/nonexistent/chromium")
    assert b.find_chromium() is None
    assert b.browser_status()[1].startswith("Chromium not found at /nonexistent/chromium")


async def test_a_pages_own_requests_keep_the_per_host_limit(site):
    # the page asks its site for six panels at once; Chromium alone would open six connections
    f = make_fetcher(options(per_host=2))
    try:
        src = await f.fetch(f"{site}/app/parallel.html?tag=per-host-2")
    finally:
        await f.aclose()
    assert src.status is FetchStatus.OK and src.origin == "browser", src.reason
    assert "leave at least four hours between doses" in src.text
    peak = httpx.get(f"{site}/slow-peak?tag=per-host-2").json()["peak"]
    assert peak == 2   # all six were served, never more than two at a time


MEDIA_REQUESTS = {"stylesheet": "/app/media/site.css?id=media", "font": "/app/media/hubsans.woff2?id=media",
                  "css image": "/app/media/background.png?id=media", "image": "/app/media/logo.png?id=media",
                  "script-made image": "/app/media/ldl-chart.png?id=media", "video": "/app/media/intro.mp4?id=media",
                  "audio": "/app/media/podcast.mp3?id=media", "manifest": "/app/media/site.webmanifest?id=media"}


def _site_hits(site: str, path: str) -> int:
    return httpx.get(f"{site}/_hits", params={"path": path}).json()["hits"]


async def test_images_fonts_media_and_stylesheets_are_never_requested_from_the_site(site, monkeypatch):
    """Rendering reads the DOM's text: what only changes the look costs requests and CPU and is blocked."""
    f = make_fetcher(options())
    try:
        src = await f.fetch(f"{site}/app/media-article.html")
    finally:
        await f.aclose()
    assert src.status is FetchStatus.OK and src.origin == "browser", src.reason
    assert "Atorvastatin 80 mg lowers LDL cholesterol by about 50 percent" in src.text   # same text without them
    assert _site_hits(site, "/app/article-data.json?id=media") == 1   # the page's own data request still goes out
    assert {kind: _site_hits(site, path) for kind, path in MEDIA_REQUESTS.items()} == dict.fromkeys(MEDIA_REQUESTS, 0)

    # the same page with nothing blocked: the site's log does see them, so the zeros above are real
    from sourcecheckup.fetching import browser as b

    monkeypatch.setattr(b, "BLOCKED_RESOURCES", ())
    f = make_fetcher(options())
    try:
        again = await f.fetch(f"{site}/app/media-article.html")
    finally:
        await f.aclose()
    assert again.origin == "browser" and again.text == src.text
    seen = {kind for kind, path in MEDIA_REQUESTS.items() if _site_hits(site, path)}
    assert {"stylesheet", "font", "css image", "image", "script-made image"} <= seen, seen


async def test_a_page_that_rendered_is_used_again_and_one_that_failed_is_closed(site):
    """Opening a page per render cost about 90 ms; a page is kept once it rendered. What it showed
    never leaks into the next render, and a page whose render failed is never used again."""
    from sourcecheckup.fetching.browser import BrowserPool, RenderError

    # it checks reuse, not speed: with both cores busy (the frozen build beside the suite) a page once took over 4 s
    pool = BrowserPool(options(), extra_args=(TEST_RESOLVER_RULES,), pages=1, page_timeout_s=20.0)
    try:
        js = await pool.render(f"{site}/app/article.html?id=reuse")
        plain = await pool.render(f"{site}/article/hypertension")
        assert pool.pages_opened == 1
        with pytest.raises(RenderError) as refused:
            await pool.render(f"{site}/redirect/private")
        after = await pool.render(f"{site}/article/metformin-lactic-acidosis")
    finally:
        await pool.aclose()
    assert "Atorvastatin 80 mg" in js.html and js.title.startswith("Statins after a heart attack")
    assert "130/80 mm Hg" in plain.html and "Atorvastatin" not in plain.html and plain.title != js.title
    assert refused.value.status is FetchStatus.UNSAFE_URL
    assert "lactic acidosis" in after.html.lower() and "130/80" not in after.html
    assert pool.pages_opened == 2   # the failed page was closed, a new one opened


def _node_drivers() -> set[int]:
    """Playwright driver processes that are children of this one."""
    import os
    from pathlib import Path

    from tests.support.memory import descendants

    found = set()
    for kid in descendants(os.getpid()):
        try:
            if b"playwright" in Path(f"/proc/{kid}/cmdline").read_bytes():
                found.add(kid)
        except OSError:
            continue
    return found


async def test_a_batch_starts_the_driver_ahead_and_chromium_only_for_a_page_that_needs_it(site):
    """The driver is most of a launch: a batch in auto mode starts it after a few fetches, so its
    first JavaScript page waits for Chromium alone; a run that never needs the browser launches none,
    and closing leaves no driver behind."""
    from sourcecheckup.fetching.browser import PRESTART_AFTER

    before = _node_drivers()
    f = make_fetcher(options())
    try:
        plain = await asyncio.gather(*(f.fetch(f"{site}/article/hypertension?n={i}") for i in range(PRESTART_AFTER)))
        assert f.pool._driver is not None and f.launches == 0
        await asyncio.wait_for(asyncio.shield(f.pool._driver), 20)   # started in the background
        assert _node_drivers() - before   # a driver runs, and no Chromium
    finally:
        await f.aclose()
    assert all(s.origin == "http" for s in plain) and f.launches == 0
    await asyncio.sleep(0.5)
    assert _node_drivers() - before == set()

    f = make_fetcher(options())
    try:
        await asyncio.gather(*(f.fetch(f"{site}/article/hypertension?m={i}") for i in range(PRESTART_AFTER)))
        js = await f.fetch(f"{site}/app/article.html?id=after-prestart")
    finally:
        await f.aclose()
    assert js.origin == "browser" and "Atorvastatin 80 mg" in js.text and f.launches == 1
    await asyncio.sleep(0.5)
    assert _node_drivers() - before == set()
