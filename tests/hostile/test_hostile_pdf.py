"""Hostile PDFs: a small source whose pages share a huge stream stops at its timeout, a PDF answer over
the page cap or of slow text-less pages stops at its cap, and the PDF report shows CJK, Arabic and
emoji or names each character no font covers (pypdf in its worker process, the real PDF writer).
"""
from __future__ import annotations

import asyncio
import re
import time

import pytest

from sourcecheckup.fetching import HttpFetcher
from sourcecheckup.models import FetchStatus
from tests.support.hostile_pages import fetch_options


async def test_a_small_pdf_whose_pages_share_a_huge_stream_stops_at_the_timeout_and_blocks_nothing(site):
    f = HttpFetcher(fetch_options(timeout_s=3.0, extract_workers=1))
    await f.reader.ready()
    try:
        await f.fetch(f"{site}/article/metformin-lactic-acidosis")   # the pool's one worker started and warm
        started = time.monotonic()
        pdf_task = asyncio.ensure_future(f.fetch(f"{site}/hostile/pages/shared-stream.pdf?pages=60&mb=3"))
        await asyncio.sleep(0.5)
        page = await f.fetch(f"{site}/article/hypertension")   # read while the PDF is still being read
        page_done = time.monotonic() - started
        pdf = await pdf_task
        took = time.monotonic() - started
    finally:
        await f.aclose()
    # the page was read while the PDF still was (before the fix it waited behind it in the one worker)
    assert page.status is FetchStatus.OK and page_done < min(3.0, took), (page.reason, page_done, took)
    # before the fix: read for a minute and more in the one pool worker, every later page behind it
    assert pdf.status is FetchStatus.TIMEOUT, (pdf.status, pdf.reason)
    assert "PDF took longer than the per-source time limit (--timeout)" in pdf.reason
    assert len(pdf.raw) < 20_000 and took < 3.0 + 3.0


def test_a_pdf_answer_over_the_page_cap_is_skipped_naming_the_cap(tmp_path):
    from sourcecheckup.ingest import load_path
    from sourcecheckup.ingest.documents import MAX_ANSWER_PDF_PAGES
    from tests.support.hostile_pages import shared_stream_pdf

    path = tmp_path / "answer.pdf"
    path.write_bytes(shared_stream_pdf(pages=MAX_ANSWER_PDF_PAGES + 50, operators_mb=0.01))
    started = time.monotonic()
    result = load_path(path)
    assert time.monotonic() - started < 5.0
    assert not result.responses
    (skipped,) = result.skipped
    assert f"the PDF has {MAX_ANSWER_PDF_PAGES + 50:,} pages, over the {MAX_ANSWER_PDF_PAGES:,}-page limit" \
        in skipped.problem


def test_a_pdf_answer_of_slow_text_less_pages_stops_at_the_time_cap(tmp_path, monkeypatch):
    from sourcecheckup.ingest import documents, load_path
    from tests.support.hostile_pages import shared_stream_pdf

    # one such page read alone, on this machine now: the cap is checked between pages and every 2,000
    # operators, so reading stops within about a page of it however loaded the machine is
    one = tmp_path / "one.pdf"
    one.write_bytes(shared_stream_pdf(pages=1, operators_mb=0.6))
    started = time.monotonic()
    load_path(one)
    a_page = time.monotonic() - started
    monkeypatch.setattr(documents, "MAX_ANSWER_PDF_SECONDS", 1.5)   # the cap, short for the test (30 s shipped)
    path = tmp_path / "answer.pdf"
    path.write_bytes(shared_stream_pdf(pages=60, operators_mb=0.6))   # about a second a page, a minute in all
    started = time.monotonic()
    result = load_path(path)
    took = time.monotonic() - started
    # before the fix: every page read, however long it took (60 such pages: 130 s in the probe). The
    # page it stopped at is the robust check (a page takes about a second, several on a loaded machine);
    # the wall-clock bound only catches a cap not applied at all
    (skipped,) = result.skipped
    assert "reading the PDF took longer than the 1.5-second limit for one answer (stopped at page" \
        in skipped.problem
    stopped_at = int(re.search(r"stopped at page (\d+)", skipped.problem).group(1))
    assert stopped_at < 30, skipped.problem
    assert took < 1.5 + 3 * a_page + 1.0, (took, a_page)
    # a page whose operators alone would outlast the cap before the first can be checked: refused by size
    path.write_bytes(shared_stream_pdf(pages=2, operators_mb=3))
    started = time.monotonic()
    (skipped,) = load_path(path).skipped
    assert time.monotonic() - started < 5.0
    assert "page 1 of the PDF holds 3.3 MB of drawing operators, over the 1 MB limit for one page" in skipped.problem


def test_pdf_fonts_a_character_no_font_covers_is_found_and_written_as_its_code_point():
    from sourcecheckup.report.pdf_fonts import mark_unrenderable, uncovered_characters

    latin_only = ((0x20, 0x7E), (0xA0, 0x24F))
    assert uncovered_characters("Café 高 \u200d\ufe0f", latin_only) == ["高"]   # ZWJ and selectors need no glyph
    html, missing = mark_unrenderable("<html><body class='r'><p>血压 \U00010C80</p></body></html>", latin_only)
    assert missing == ["压", "血", "\U00010C80"]
    assert "[U+8840][U+538B] [U+10C80]" in html and "U+10C80 (OLD HUNGARIAN CAPITAL LETTER A)" in html
    assert html.index("pdf-font-note") > html.index("<body")


SCRIPTS = {"CJK": "高血压的定义是血压达到130/80毫米汞柱", "Arabic": "ارتفاع ضغط الدم", "emoji": "💊🩺",
           "Toto": "\U0001E290\U0001E291"}   # the last: a script (Unicode 14) no Noto package of Debian 12 covers


@pytest.mark.skipif(__import__("shutil").which("fc-list") is None, reason="fontconfig's fc-list is not installed")
def test_pdf_report_shows_cjk_arabic_and_emoji_or_names_each_character_it_cannot(tmp_path):
    from pypdf import PdfReader

    from sourcecheckup.fetching.browser import find_chromium
    from sourcecheckup.report import write_report
    from sourcecheckup.report.pdf_fonts import uncovered_characters
    from sourcecheckup.store import Store
    from tests.support.synth_run import synthesize_run

    if find_chromium() is None:
        pytest.skip("Chromium is not installed")
    statement = " ".join(f"{name}: {text}." for name, text in SCRIPTS.items())
    with Store(tmp_path / "fonts.db") as store:
        run_id = synthesize_run(store, responses=1, statements=1, sources=1)
        with store.db.conn:
            store.db.execute("UPDATE statements SET text = ? WHERE run_id = ?", [statement, run_id])
        warnings: list[str] = []
        out = write_report(store, run_id, tmp_path / "r.pdf", warnings=warnings)
    import unicodedata

    # NFKC: Arabic comes back in its presentation forms (the shaped letters)
    text = unicodedata.normalize("NFKC", "".join(p.extract_text() for p in PdfReader(str(out)).pages))
    assert "\x00" not in text
    missing = set(uncovered_characters(statement))
    assert "\U0001E290" in missing
    drawn = set()
    for ch in {c for c in statement if ord(c) > 0x7F and not c.isspace()}:
        if ch in missing:   # named in the warning and in the PDF, by its code point
            assert f"U+{ord(ch):04X}" in warnings[0] and f"[U+{ord(ch):04X}]" in text, ch
        else:   # drawn, and readable in the PDF's text (CJK may come back as Kangxi radicals: NFKC above)
            assert ch in text, ch
            drawn.add(ch)
    print(f"drawn: {''.join(sorted(drawn))}; named: {''.join(sorted(missing))}")
    assert warnings and "could not show" in warnings[0]
