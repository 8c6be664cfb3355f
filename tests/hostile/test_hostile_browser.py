"""Pages that attack the browser stay one source's outcome: a page that crashes the renderer, one that
opens popups, one that busy-loops; an audit through the real command line completes, and resumes, with
them (Chromium rendering the pages of tests/support/hostile_pages.py from the fixture site).
"""
from __future__ import annotations

import asyncio
import json
import time

import pytest

from sourcecheckup.fetching import HttpFetcher, make_fetcher
from sourcecheckup.fetching.browser import TEST_RESOLVER_RULES, find_chromium
from sourcecheckup.models import FetchStatus
from tests.support.hostile_pages import fetch_options
from tests.support.paths import ROOT


@pytest.mark.browser
@pytest.mark.skipif(find_chromium() is None, reason="Chromium is not installed")
async def test_a_page_that_crashes_the_renderer_is_its_own_outcome_and_the_batch_reads_the_rest(site):
    # the heap is capped so that the page's allocation loop kills its renderer in a moment
    f = make_fetcher(fetch_options(browser="always", browser_args=(TEST_RESOLVER_RULES,
                                                              "--js-flags=--max-old-space-size=24")))
    try:
        crashed, *good = await asyncio.gather(f.fetch(f"{site}/hostile/pages/crash"),
                                              *(f.fetch(f"{site}/hostile/pages/js?n={n}") for n in range(3)))
        after = await f.fetch(f"{site}/hostile/pages/js?n=9")   # the browser still renders once it crashed
    finally:
        await f.aclose()
    # before the fix: "Page.evaluate: Target crashed" raised out of fetch(), and the run failed
    assert "browser_failed" in crashed.flags and not crashed.text.strip(), crashed.reason
    assert "the browser failed: the page crashed the browser's renderer (Page.evaluate: Target crashed" \
        in crashed.reason
    for n, src in enumerate(good):   # each in a renderer of its own: the crash took none of them
        assert src.status is FetchStatus.OK and src.origin == "browser" and f"page {n}" in src.text, src.reason
    assert after.status is FetchStatus.OK and "page 9" in after.text, after.reason


@pytest.mark.browser
@pytest.mark.skipif(find_chromium() is None, reason="Chromium is not installed")
async def test_popups_are_closed_and_never_fail_the_batch_or_lose_other_sources(site):
    f = make_fetcher(fetch_options(browser="always"))
    try:
        for _ in range(2):
            popups, *good = await asyncio.gather(f.fetch(f"{site}/hostile/pages/popups"),
                                                 *(f.fetch(f"{site}/hostile/pages/js?n={n}") for n in range(8)))
            assert popups.status is FetchStatus.OK and popups.origin == "browser", popups.reason
            assert "Metformin should not be started" in popups.text
            for n, src in enumerate(good):
                assert src.status is FetchStatus.OK and f"page {n}" in src.text, (n, src.reason)
        pool = f.pool
        assert len(pool._context.pages) <= pool._pages   # no popup left open, holding the renderer
        hits = json.loads((await HttpFetcher(fetch_options()).fetch(f"{site}/_hits?path=/article/hypertension?popup=1"))
                          .raw)
        assert hits == {"hits": 0}   # a popup's requests are refused, never fetched
    finally:
        await f.aclose()


@pytest.mark.browser
@pytest.mark.skipif(find_chromium() is None, reason="Chromium is not installed")
async def test_a_busy_looping_page_does_not_starve_another_pages_render(site):
    f = make_fetcher(fetch_options(browser="always", browser_page_timeout_s=3.0, timeout_s=3.0))
    try:
        await f.fetch(f"{site}/hostile/pages/js?n=0")   # the browser is up before the clock starts
        for trial in range(2):   # before the fix a good page timed out in every trial here
            started = time.monotonic()
            busy, *good = await asyncio.gather(f.fetch(f"{site}/hostile/pages/busy?t={trial}"),
                                               *(f.fetch(f"{site}/hostile/pages/js?n={n}&t={trial}") for n in (1, 2, 3)))
            # before the fix (two renderers for four pages) a good page timed out beside the busy one
            for n, src in zip((1, 2, 3), good):
                assert src.status is FetchStatus.OK and src.origin == "browser", (trial, n, src.reason)
                assert f"page {n}" in src.text
            assert time.monotonic() - started < 3.0 + 3.0
            assert busy.status is FetchStatus.TIMEOUT, busy.reason
    finally:
        await f.aclose()


@pytest.mark.browser
@pytest.mark.skipif(find_chromium() is None, reason="Chromium is not installed")
def test_an_audit_with_a_popup_page_completes_quietly_with_every_source_read(tmp_path, site):
    import os
    import subprocess
    import sys

    from sourcecheckup.store import Store

    root = ROOT
    urls = [f"{site}/hostile/pages/popups", *(f"{site}/hostile/pages/js?n={n}&cli=1" for n in range(8))]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("".join(json.dumps({"id": f"a{i}", "response": f"Metformin is reviewed at an eGFR of 45 [{1}].",
                                           "citations": [url]}) + "\n" for i, url in enumerate(urls)))
    db = tmp_path / "a.db"
    env = {**os.environ, "PYTHONPATH": str(root), "HF_HUB_OFFLINE": "1", "SOURCECHECKUP_PLUGINS": "tests.support.fake_judge"}
    p = subprocess.run([sys.executable, "-m", "sourcecheckup", "audit", str(answers), "--db", str(db), "-q",
                        "--judge", "keyword:0", "--allow-host", "127.0.0.1", "--no-archive", "--browser", "always",
                        "--timeout", "15"], cwd=root, env=env, capture_output=True, text=True, timeout=240)
    # before the fix: 3 runs in 4 ended "Frame for this navigation request is not available", with tracebacks
    assert p.returncode == 0, p.stderr[-2000:]
    assert "Traceback" not in p.stderr and "Frame for this navigation" not in p.stderr, p.stderr[-2000:]
    with Store(str(db)) as store:
        (run,) = store.list_runs()
        assert run.status == "completed"
        for url in urls:
            row = store.latest_source(url)
            assert row is not None and row.source.status is FetchStatus.OK, (url, row and row.source.reason)
            assert row.source.origin == "browser" and "Metformin" in row.source.text


@pytest.mark.browser
@pytest.mark.skipif(find_chromium() is None, reason="Chromium is not installed")
async def test_an_audit_and_its_resume_complete_with_a_renderer_crashing_page(tmp_path, site):
    from sourcecheckup.events import EventKind
    from sourcecheckup.models import Response
    from sourcecheckup.pipeline import Audit, RunConfig
    from sourcecheckup.store import Store
    from tests.support.fake_judge import KeywordJudge

    fetch = fetch_options(browser="always", browser_args=(TEST_RESOLVER_RULES, "--js-flags=--max-old-space-size=24"))
    crash = f"{site}/hostile/pages/crash?audit=1"
    responses = [Response(id=f"r{n}", text=f"Metformin is reviewed when the eGFR falls below 45 (page {n}).",
                          citations=(f"{site}/hostile/pages/js?n={n}&audit=1", crash)) for n in range(4)]
    store = Store(tmp_path / "a.db")
    cancel = asyncio.Event()

    def progress(ev):
        if ev.kind is EventKind.FETCHED:
            cancel.set()   # stopped after the first source, so the resume meets the crashing page again

    run_id = await Audit(store, RunConfig(judges=["keyword:0"], fetch=fetch), progress=progress,
                         judges=[KeywordJudge()], cancel=cancel).start(responses)
    assert store.get_run(run_id).status in ("cancelled", "completed")
    # before the fix: "the run could not complete: Error: Page.evaluate: Target crashed", here and on resume
    await Audit(store, RunConfig(judges=["keyword:0"], fetch=fetch, refetch=True),
                judges=[KeywordJudge()]).resume(run_id)
    assert store.get_run(run_id).status == "completed"
    crashed = store.latest_source(crash).source
    assert "browser_failed" in crashed.flags and "crashed the browser's renderer" in crashed.reason
    for n in range(4):
        src = store.latest_source(f"{site}/hostile/pages/js?n={n}&audit=1").source
        assert src.status is FetchStatus.OK and f"page {n}" in src.text, src.reason
