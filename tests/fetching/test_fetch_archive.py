"""Dead links looked up in a (local, fake) web archive; robots.txt respected when asked."""
from __future__ import annotations

import pytest

from sourcecheckup.fetching import FetchOptions, make_fetcher
from sourcecheckup.models import FetchStatus


def options(site: str, **kw) -> FetchOptions:
    base = dict(allow_hosts=("127.0.0.1",), timeout_s=3.0, archive_lookup=True,
                archive_endpoint=f"{site}/wayback/available")
    base.update(kw)
    return FetchOptions(**base)


async def test_dead_link_records_the_nearest_snapshot_and_its_date(site):
    f = make_fetcher(options(site))
    try:
        dead = await f.fetch(f"{site}/status/404")
        never = await f.fetch(f"{site}/status/410")
        alive = await f.fetch(f"{site}/article/hypertension")
    finally:
        await f.aclose()
    assert dead.status is FetchStatus.DEAD
    assert dead.reason == "HTTP 404 Not Found; archived copy of 2020-01-02 exists"
    assert dead.meta["archive"]["date"] == "2020-01-02" and "/web/20200102030405/" in dead.meta["archive"]["snapshot_url"]
    assert never.reason == "HTTP 410 Gone; no archived copy found"
    assert "archive" not in alive.meta


async def test_use_archive_reads_the_copy_labelled_as_archived(site):
    f = make_fetcher(options(site, use_archive=True))
    try:
        src = await f.fetch(f"{site}/retired/metformin-guidance")
    finally:
        await f.aclose()
    assert src.status is FetchStatus.OK and src.origin == "archive" and "archived" in src.flags
    assert src.reason == "archived copy of 2019-03-15 (the live page: HTTP 404 Not Found)"
    assert src.title.startswith("[archived copy of 2019-03-15] Metformin and Lactic Acidosis")
    assert src.url == f"{site}/retired/metformin-guidance" and "/web/20190315083000/" in src.final_url
    assert "Metformin is contraindicated in patients with an eGFR below 30" in src.text
    assert src.meta["live"]["status"] == "dead"


async def test_unreachable_archive_leaves_the_dead_outcome_with_a_note(site):
    f = make_fetcher(options(site, archive_endpoint="http://127.0.0.1:9/wayback/available"))
    try:
        src = await f.fetch(f"{site}/status/404")
    finally:
        await f.aclose()
    assert (src.status, src.reason) == (FetchStatus.DEAD, "HTTP 404 Not Found")
    assert src.meta["archive"]["error"].startswith("no connection: the archive could not be reached")


async def test_archive_is_off_by_default(site):
    f = make_fetcher(FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=3.0))
    try:
        src = await f.fetch(f"{site}/status/404")
    finally:
        await f.aclose()
    assert "archive" not in src.meta


@pytest.mark.parametrize("respect,status", [(True, FetchStatus.BLOCKED), (False, FetchStatus.OK)])
async def test_robots_txt_is_respected_when_asked(site, respect, status):
    f = make_fetcher(FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=3.0, respect_robots=respect))
    try:
        src = await f.fetch(f"{site}/private-area/report")
        ok = await f.fetch(f"{site}/article/hypertension")
    finally:
        await f.aclose()
    assert src.status is status and ok.status is FetchStatus.OK
    if respect:
        assert src.reason == "the site's robots.txt disallows /private-area/report for crawlers"
