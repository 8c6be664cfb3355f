"""Hostile pages read as they are: a meta-refresh stub followed under the same address rule, a page that
reloads itself read as it is, a slow body that ends near the size cap, and a page holding one control
character (the fixture site on 127.0.0.1).
"""
from __future__ import annotations

from urllib.parse import quote

import pytest

from sourcecheckup.fetching import HttpFetcher
from sourcecheckup.models import FetchStatus
from tests.support.hostile_pages import fetch_options


async def _fetch_local(url: str, **kw):
    from sourcecheckup.fetching import FetchOptions, HttpFetcher

    f = HttpFetcher(FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=6.0, connect_timeout_s=2.0, **kw))
    try:
        return await f.fetch(url)
    finally:
        await f.aclose()


async def test_a_meta_refresh_stub_is_followed_to_the_page_it_names(site):
    src = await _fetch_local(f"{site}/hostile/meta-refresh?to=/article/hypertension")
    assert src.status.value == "ok" and "130/80" in src.text, (src.status, src.text[:80])
    assert src.final_url.endswith("/article/hypertension")
    assert src.meta["redirects"][-1].endswith("/article/hypertension")


async def test_a_meta_refresh_stub_is_followed_through_the_same_address_rule(site):
    src = await _fetch_local(f"{site}/hostile/meta-refresh?to=http://169.254.169.254/latest/meta-data/")
    assert src.status.value == "unsafe_url" and "link-local" in src.reason, (src.status, src.reason)


def test_a_page_that_reloads_itself_or_refreshes_after_minutes_is_read_as_it_is():
    from sourcecheckup.fetching.http import refresh_target

    page = b'<html><head><meta http-equiv="refresh" content="%s"><title>News</title></head><body>Text</body></html>'
    assert refresh_target(page % b"300; url=/other", "text/html") is None   # an auto-reload, not a move
    assert refresh_target(page % b"300", "text/html") is None
    assert refresh_target(page % b"0; URL='/moved/here'", "text/html; charset=utf-8") == "/moved/here"
    assert refresh_target(page % b"0; url=/moved", "application/pdf") is None


@pytest.mark.parametrize("mb", [0.2, 0.6])   # read in a thread / in a worker process of its own
async def test_a_slow_body_that_ends_near_the_cap_is_read_within_what_the_cap_left(site, mb):
    import time

    import httpx

    from sourcecheckup.fetching import FetchOptions, HttpFetcher
    from sourcecheckup.fetching.extract import extract

    cap = 4.0
    drip = 3.0
    if mb < 0.5:   # read in a thread: the download leaves half of what reading this page takes here, measured now
        body = httpx.get(f"{site}/hostile/nested?mb={mb}").content
        started = time.perf_counter()
        extract(body, "text/html; charset=utf-8", f"{site}/hostile/nested")
        drip = max(drip, cap - (time.perf_counter() - started) / 2)
    f = HttpFetcher(FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=cap, extract_workers=0))
    try:
        src = await f.fetch(f"{site}/hostile/drip?mb={mb}&s={drip}")
    finally:
        await f.aclose()
    # the download used most of the 4 s; reading nested markup takes longer than what is left (0.2 MB: in a
    # thread, unbounded before; 0.6 MB: its worker was given at least 1 s more): both overran the cap
    assert src.status.value == "timeout" and "took longer than" in src.reason, (src.status, src.reason)
    assert src.http_status == 200 and src.sha256   # (how soon after the cap: bench/time_caps.py)


@pytest.mark.parametrize("character", ["&#11;", "&#27;", "&#x1F;", "&#xFFFE;"])
async def test_one_control_character_does_not_erase_the_page(site, character):
    f = HttpFetcher(fetch_options())
    try:
        src = await f.fetch(f"{site}/hostile/pages/control?c={quote(character)}")
    finally:
        await f.aclose()
    # before the fix: "HTTP 200 OK, but no main text was found"
    assert src.status is FetchStatus.OK and src.reason == "HTTP 200 OK", src.reason
    assert "Metformin should not be started when the eGFR is below 30" in src.text
    assert "Reviewed" in src.text and "yearly" in src.text
