"""Local files standing in for cited URLs (a librarian's source pack)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from sourcecheckup.fetching import FetchOptions, make_fetcher
from sourcecheckup.fetching.sourcepack import SourcePackError, SourcePackFetcher
from sourcecheckup.models import FetchStatus, sha256_bytes
from tests.support.paths import FIXTURES
from tests.support.site import GUIDELINE_PDF_LINES, minimal_pdf

SITE = FIXTURES / "site"
PAYWALLED = "https://journals.example.com/doi/10.1056/NEJMoa0707434"


@pytest.fixture
def pack(tmp_path: Path) -> Path:
    (tmp_path / "papers").mkdir()
    (tmp_path / "papers" / "allen2008.html").write_bytes((SITE / "article/hfe-hemochromatosis.html").read_bytes())
    (tmp_path / "papers" / "guideline.pdf").write_bytes(minimal_pdf(GUIDELINE_PDF_LINES, title="T2D guideline"))
    (tmp_path / "notes.txt").write_text("Phlebotomy removes about 250 mg of iron per unit of blood.", encoding="utf-8")
    (tmp_path / "sources.json").write_text(json.dumps({
        PAYWALLED: "papers/allen2008.html",
        "https://guidelines.example.org/t2d.pdf": "papers/guideline.pdf",
        "https://notes.example.org/iron": {"path": "notes.txt", "title": "Iron notes"},
        "https://gone.example.org/missing": "papers/missing.pdf",
    }), encoding="utf-8")
    return tmp_path


async def test_pack_urls_are_read_from_local_files_and_say_so(pack, site):
    f = make_fetcher(FetchOptions(sources_dir=pack, allow_hosts=("127.0.0.1",), timeout_s=2))
    try:
        html = await f.fetch(PAYWALLED)
        pdf = await f.fetch("https://guidelines.example.org/t2d.pdf#page=2")   # fragment ignored
        txt = await f.fetch("https://notes.example.org/iron/")                 # trailing slash ignored
        web = await f.fetch(f"{site}/article/hypertension")                   # not in the pack: HTTP
    finally:
        await f.aclose()
    assert html.status is FetchStatus.OK and html.origin == "local_file"
    assert html.reason == "read from local file papers/allen2008.html"
    assert "28.4% of male C282Y homozygotes" in html.text and html.http_status is None
    assert html.sha256 == sha256_bytes((pack / "papers/allen2008.html").read_bytes())
    assert pdf.status is FetchStatus.OK and "eGFR is below 30" in pdf.text and pdf.title == "T2D guideline"
    assert txt.title == "Iron notes" and "250 mg of iron" in txt.text
    assert web.origin == "http" and web.status is FetchStatus.OK


async def test_missing_pack_file_is_an_error_outcome_not_a_crash(pack):
    f = SourcePackFetcher(pack)
    src = await f.fetch("https://gone.example.org/missing")
    assert src.status is FetchStatus.ERROR and src.origin == "local_file"
    assert src.reason.startswith("local file papers/missing.pdf listed in sources.json is missing")


def test_unusable_pack_is_refused_with_a_clear_message(tmp_path):
    with pytest.raises(SourcePackError, match="has no sources.json"):
        SourcePackFetcher(tmp_path)
    (tmp_path / "sources.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(SourcePackError, match="is not valid JSON"):
        SourcePackFetcher(tmp_path)
    (tmp_path / "sources.json").write_text(json.dumps({"https://a.org/": "../../etc/passwd"}), encoding="utf-8")
    with pytest.raises(SourcePackError, match="lies outside the pack folder"):
        SourcePackFetcher(tmp_path)
