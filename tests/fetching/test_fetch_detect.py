"""Soft 404s, paywalls, login walls, abstract pages and bot walls, told apart with a recorded reason."""
from __future__ import annotations

import asyncio

import pytest

from sourcecheckup.fetching import FetchOptions, HttpFetcher
from sourcecheckup.fetching.detect import detect_page, load_detectors, redirected_home
from sourcecheckup.models import FetchStatus


@pytest.fixture
async def fetcher():
    f = HttpFetcher(FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=3.0, max_text_chars=50_000))
    yield f
    await f.aclose()


@pytest.mark.parametrize("path,status,reason", [
    ("/pages/retired-guidance.html", FetchStatus.DEAD, "soft 404: title matched 'Page not found'"),
    ("/pages/paywall-teaser.html", FetchStatus.PAYWALLED,
     "paywall teaser: text matched 'Subscribe to continue reading'"),
    ("/forum/login-required.html", FetchStatus.PAYWALLED, "login wall: title matched 'Sign in'"),
    ("/pages/captcha.html", FetchStatus.BLOCKED, "captcha or bot wall: title matched 'Just a moment...'"),
    ("/blocked/captcha", FetchStatus.BLOCKED,
     "HTTP 403 Forbidden: captcha or bot wall: title matched 'Just a moment...'"),
    ("/pages/abstract-landing.html", FetchStatus.ABSTRACT_ONLY,
     "abstract only: "),
    ("/redirect/home", FetchStatus.DEAD, "soft 404: redirected to the home page"),
])
async def test_page_kind_is_detected_with_its_reason(fetcher, site, path, status, reason):
    src = await fetcher.fetch(site + path)
    assert src.status is status
    assert src.reason.startswith(reason)


async def test_teaser_and_abstract_text_stay_readable_for_the_judge(fetcher, site):
    teaser, abstract = await asyncio.gather(fetcher.fetch(f"{site}/pages/paywall-teaser.html"),
                                            fetcher.fetch(f"{site}/pages/abstract-landing.html"))
    assert teaser.valid and "adult-onset diabetes" in teaser.text
    assert abstract.valid and "hazard ratio, 0.61" in abstract.text
    assert abstract.meta["detector"] == "abstract"


@pytest.mark.parametrize("path", ["/article/metformin-lactic-acidosis", "/article/hfe-hemochromatosis",
                                  "/article/hypertension", "/forum/thread-ferritin.html"])
async def test_real_articles_and_forum_threads_are_not_flagged(fetcher, site, path):
    src = await fetcher.fetch(site + path)
    assert (src.status, src.reason) == (FetchStatus.OK, "HTTP 200 OK")
    assert "needs_js" not in src.flags


async def test_app_shell_is_flagged_as_needing_javascript(fetcher, site):
    src = await fetcher.fetch(f"{site}/app/article.html")
    assert src.status is FetchStatus.OK and not src.valid and "needs_js" in src.flags
    assert "needs JavaScript: " in src.reason and src.reason.startswith("HTTP 200 OK, but no main text was found")


async def test_windows_1252_page_and_huge_page(fetcher, site):
    fr, huge = await asyncio.gather(fetcher.fetch(f"{site}/pages/hemochromatose-cp1252.html"),
                                    fetcher.fetch(f"{site}/huge"))
    assert fr.status is FetchStatus.OK and "ferritine inférieure à 50 µg/L" in fr.text
    assert fr.title.startswith("Hémochromatose héréditaire : diagnostic et traitement – Société")
    assert huge.status is FetchStatus.OK and len(huge.text) == 50_000 and "truncated" in huge.flags


def test_long_article_mentioning_page_not_found_is_not_a_soft_404():
    text = "A clinic letter said the page was not found in the chart. " * 100
    assert detect_page("Audit of discharge letters", text, "<html></html>") is None


def test_redirect_to_home_only_counts_for_deep_links():
    assert redirected_home("https://a.org/guidance/x", "https://a.org/")
    assert not redirected_home("https://a.org/", "https://www.a.org/")
    assert not redirected_home("https://a.org/x", "https://a.org/y")


def test_pattern_files_load_in_order():
    names = [d.name for d in load_detectors()]
    assert names == ["captcha", "soft404", "login", "paywall", "abstract", "js_required"]


async def test_pubmed_page_yields_the_abstract_labelled_abstract_only(fetcher, site):
    src = await fetcher.fetch(f"{site}/pubmed/31535829/")
    assert src.status is FetchStatus.ABSTRACT_ONLY and src.valid
    assert src.reason == "abstract only: html matched '<meta name=\"ncbi_db\" content=\"pubmed\"'"
    assert "hazard ratio, 0.74" in src.text and "Trial registration" in src.text
    assert src.title.startswith("Dapagliflozin in Patients with Heart Failure")


async def test_pmc_full_text_is_read_as_full_text_though_it_opens_with_an_abstract(fetcher, site):
    # a short open-access article on PMC: scholarly metadata and an Abstract heading, as on a
    # landing page, but with the body sections after it
    src = await fetcher.fetch(f"{site}/pmc/articles/PMC7654321/")
    assert src.status is FetchStatus.OK and src.reason == "HTTP 200 OK", src.reason
    assert "detector" not in src.meta
    assert "one in six adults on long-term metformin had low B12" in src.text     # the Discussion
    assert "24.6%" in src.text and src.title.startswith("Vitamin B12 status in adults on long-term metformin")


async def test_doi_resolves_through_redirects_to_a_publisher_landing_page(site):
    f = HttpFetcher(FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=3.0, doi_resolver=f"{site}/doi/"))
    try:
        landing, full, missing = await asyncio.gather(
            f.fetch("https://doi.org/10.5555/jnp.2023.0456"), f.fetch("https://doi.org/10.5555/ihh.2020.0007"),
            f.fetch("https://doi.org/10.5555/no.such.article"))
    finally:
        await f.aclose()
    assert landing.url == "https://doi.org/10.5555/jnp.2023.0456"       # the citation as written
    assert landing.final_url == f"{site}/journal/jnp/doi/10.5555/jnp.2023.0456"
    assert landing.meta["redirects"][:2] == ["https://doi.org/10.5555/jnp.2023.0456", f"{site}/doi/10.5555/jnp.2023.0456"]
    assert landing.status is FetchStatus.ABSTRACT_ONLY and landing.meta["doi"] == "10.5555/jnp.2023.0456"
    assert landing.reason == "abstract only: html matched '>Access through your institution<'"
    assert "hazard ratio 0.72" in landing.text
    assert full.status is FetchStatus.OK and full.final_url == f"{site}/article/hfe-hemochromatosis"
    assert len(full.meta["redirects"]) == 4
    assert missing.status is FetchStatus.DEAD
    assert missing.reason == "HTTP 404 Not Found: the DOI 10.5555/no.such.article is not registered"


async def test_short_abstract_page_with_scholarly_metadata_is_abstract_only(fetcher, site):
    src = await fetcher.fetch(f"{site}/journal/short-abstract.html")
    assert src.status is FetchStatus.ABSTRACT_ONLY and "below 45 µg/L" in src.text
    assert src.reason == "abstract only: html matched '<meta name=\"citation_title\"' and text matched 'Abstract'"


async def test_full_text_article_with_scholarly_metadata_stays_ok(fetcher, site):
    src = await fetcher.fetch(f"{site}/article/hfe-hemochromatosis")
    assert '<meta name="citation_title"' in src.raw.decode()
    assert (src.status, src.reason) == (FetchStatus.OK, "HTTP 200 OK")


def test_quick_lowercase_patterns_decide_exactly_as_the_case_insensitive_ones(monkeypatch):
    """The detectors first search a lowercased copy without IGNORECASE (twice as fast); every page
    must get the same decision and the same quoted reason as from the full patterns alone."""
    from pathlib import Path

    from sourcecheckup.fetching import detect
    from sourcecheckup.fetching.extract import decode_text, extract_html

    pages = [(doc.title, doc.text, html) for doc, html in
             ((extract_html(p.read_bytes(), "text/html"), decode_text(p.read_bytes(), "text/html", html=True)[0])
              for p in sorted(Path("tests/fixtures/site").rglob("*.html")))]
    pages += [("PAGE NOT FOUND", "", ""),
              ("Health", "PLEA\u017fE ENABLE JAVA\u017fCRIPT to read this article.", "<script></script>"),   # long s
              ("Health", "Th\u0131s page could not be found.", ""),                                   # dotless i
              ("\u0130stanbul clinic", "SUBSCRIBE TO CONTINUE READING \u0130", ""),   # lower() lengthens the text
              ("Account", "You must sign in to view this article.", "<div class='meteredContent'></div>"),
              ("News", "A short teaser.", "<div class=\"story METEREDCONTENT\">"),   # pattern written meteredContent
              ("News", "A short teaser.", "<div class=\"story metered\u0130Content\">")]
    quick = [detect_page(*page) for page in pages]
    monkeypatch.setattr(detect, "lowered", lambda text: None)   # the full patterns only
    full = [detect_page(*page) for page in pages]
    assert quick == full
    assert sum(found is not None for found in full) >= 8   # the pages do exercise the detectors
    assert full[len(pages) - 6] is not None and "\u017f" in full[len(pages) - 6].reason   # quoted as written
    assert full[len(pages) - 2] is not None and full[len(pages) - 2].detector == "paywall"
