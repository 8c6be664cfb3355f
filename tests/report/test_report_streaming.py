"""Reports written a page of responses at a time: the same report as build_report's, memory that does not
grow with the run, and a large run's HTML that says where the full support matrix is."""
from __future__ import annotations

import asyncio
import csv
import dataclasses
import gc
import io
import json
import os
import subprocess
import sys
import tracemalloc

import pytest

from sourcecheckup.models import Label
from sourcecheckup.report import build_report, report_csv, stream, verify_report, write_report
from sourcecheckup.report.stream import write_csv_stream, write_json_stream
from sourcecheckup.report.xlsx import write_xlsx, write_xlsx_stream
from sourcecheckup.review import add_review
from sourcecheckup.store import Store
from tests.support.fake_judge import KeywordJudge
from tests.support.paths import ROOT
from tests.support.report_runs import UNSUPPORTED, audit_site
from tests.support.synth_run import synthesize_run


class AlwaysSupports(KeywordJudge):
    """A second judge that says every source supports every statement: it disagrees with the first."""

    def __init__(self) -> None:
        super().__init__()
        self.id = "always-supports"

    async def verify(self, statement, source):
        v = await super().verify(statement, source)
        return dataclasses.replace(v, label=Label.SUPPORTED, judge_id=self.id)


@pytest.fixture(scope="module")
def mixed_run(site, tmp_path_factory):
    """A real pipeline run with two judges that disagree, a judge error, dead and paywalled sources,
    grouping columns and a reviewer's override."""
    store = Store(tmp_path_factory.mktemp("streaming") / "audit.db")
    judges = [KeywordJudge(fail_on="shown long ago"), AlwaysSupports()]
    run_id = asyncio.run(audit_site(store, site, judges=judges))
    data = store.load_run(run_id)
    spk = next(row.pk for rows in data.statements.values() for row in rows if row.statement.text == UNSUPPORTED)
    add_review(store, run_id, spk, data.verdicts[spk][0].url, "dr-a", "supported")
    yield store, run_id
    store.close()


def _without_time(report: dict) -> dict:
    report = json.loads(json.dumps(report, ensure_ascii=False))
    report.pop("generated_at")
    # the report's own digests cover generated_at; content_sha256 leaves it out and stays compared
    for key in ("sections", "report_sha256"):
        report["integrity"].pop(key)
    return report


@pytest.mark.parametrize("page_size", [1, 3, 500])
@pytest.mark.parametrize("with_reviews", [False, True])
def test_streamed_json_equals_build_report(mixed_run, tmp_path, page_size, with_reviews):
    store, run_id = mixed_run
    old = _without_time(build_report(store, run_id, with_reviews=with_reviews))
    assert old["disagreements"] and old["unsupported"] and old["counts"]["judge_errors"]   # the run exercises them
    assert old["by_group"]["source"] and old["review"]["reviews"]
    path = write_json_stream(store, run_id, tmp_path / "r.json", with_reviews=with_reviews, page_size=page_size)
    new = json.loads(path.read_text(encoding="utf-8"))
    assert [k for k in new if k != "generated_at"] == list(old)
    assert _without_time(new) == old
    assert verify_report(new, store) == []


def test_write_report_streams_json_with_build_reports_key_order(mixed_run, tmp_path):
    store, run_id = mixed_run
    old = build_report(store, run_id)
    new = json.loads(write_report(store, run_id, tmp_path / "r.json").read_text(encoding="utf-8"))
    assert list(new) == list(old)
    assert list(new["audit_trail"]) == list(old["audit_trail"])
    assert not (tmp_path / "r.json.part").exists()


def test_streamed_csv_rows_equal_the_report_csv(mixed_run, tmp_path):
    store, run_id = mixed_run
    for with_reviews in (False, True):
        old = list(csv.reader(io.StringIO(report_csv(build_report(store, run_id, with_reviews=with_reviews)))))
        path = write_csv_stream(store, run_id, tmp_path / "r.csv", with_reviews=with_reviews, page_size=2)
        new = list(csv.reader(io.StringIO(path.read_text(encoding="utf-8"))))
        assert new == old and len(new) > 10


def test_streamed_xlsx_holds_the_same_cells(mixed_run, tmp_path):
    from openpyxl import load_workbook

    store, run_id = mixed_run
    old_wb = load_workbook(write_xlsx(build_report(store, run_id), store, tmp_path / "old.xlsx"))
    new_wb = load_workbook(write_xlsx_stream(store, run_id, tmp_path / "new.xlsx", page_size=2))
    assert new_wb.sheetnames == old_wb.sheetnames
    for name in old_wb.sheetnames:
        old_rows = [[c.value for c in row] for row in old_wb[name].iter_rows()]
        new_rows = [[c.value for c in row] for row in new_wb[name].iter_rows()]
        assert new_rows == old_rows, name
    assert new_wb["reviews"].max_row == 2           # the reviewer's row, with the judges' labels on that pair
    assert "keyword:0" in str(new_wb["reviews"].cell(row=2, column=10).value)


# ----------------------------------------------------------------------------- memory

# a run larger than a report page (1,000 responses) and four times that: what a page holds is bounded, so the
# streamed writers' peak stays flat, while build_report's whole-run dict grows fourfold (3.9x measured)
SIZES = (1000, 4000)


@pytest.fixture(scope="module")
def synthetic_runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("synthetic")
    runs = {}
    for n in SIZES:
        store = Store(base / f"run{n}.db")
        # 2 statements x 2 sources per response: what grows here is the number of responses, and the test stays quick
        runs[n] = (store, synthesize_run(store, responses=n, statements=2, sources=2))
    # a first report of a small run: lazy imports and caches are not counted in the first size's peak
    warm = Store(base / "warm.db")
    warm_id = synthesize_run(warm, responses=3, statements=2, sources=2)
    for writer in (write_json_stream, write_csv_stream):
        writer(warm, warm_id, base / "warm.out")
    build_report(warm, warm_id)
    warm.close()
    yield runs
    for store, _ in runs.values():
        store.close()


def _peak_bytes(fn) -> int:
    gc.collect()
    tracemalloc.start()
    try:
        fn()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


@pytest.mark.parametrize("writer", [write_json_stream, write_csv_stream])
def test_json_and_csv_writers_memory_does_not_grow_with_the_run(synthetic_runs, tmp_path, writer):
    peaks = {}
    for n, (store, run_id) in synthetic_runs.items():
        out = tmp_path / f"r{n}.out"
        peaks[n] = _peak_bytes(lambda: writer(store, run_id, out))
        assert out.stat().st_size > n * 300                 # every response was written
    # four times the responses: the peak stays within a small factor (build_report's grows fourfold)
    print(f"{writer.__name__}: tracemalloc peak {peaks}")
    assert peaks[SIZES[1]] < 1.5 * peaks[SIZES[0]], peaks


def test_json_writer_memory_stays_flat_with_reference_checks(tmp_path):
    """The references section is gathered in the same pass: with every citation checked, its tallies do not hold
    the responses (verified references: no problem list or retracted-only statement grows with the run)."""
    from tests.support import reference_runs as rr

    peaks = {}
    for n in (3, *SIZES):   # the first, tiny run pays the lazy imports; it is not compared
        store = Store(tmp_path / f"refs{n}.db")
        run_id = synthesize_run(store, responses=n, statements=2, sources=2)
        for k in range(2):
            store.save_reference_check(run_id, f"https://example.org/page/{k}", rr.reference_checks()[rr.VERIFIED])
        out = tmp_path / f"r{n}.json"
        peaks[n] = _peak_bytes(lambda: write_json_stream(store, run_id, out))
        refs = json.loads(out.read_text(encoding="utf-8"))["references"]
        assert refs["counts"]["checked"] == 2 * n and refs["metrics"]["existence"]["n"] == 2 * n
        store.close()
    print(f"write_json_stream with reference checks: tracemalloc peak {peaks}")
    assert peaks[SIZES[1]] < 1.5 * peaks[SIZES[0]], peaks


def test_build_report_memory_does_grow_with_the_run(synthetic_runs):
    """The contrast that makes the test above mean something: the whole-run dict grows with the run."""
    peaks = {n: _peak_bytes(lambda: build_report(store, run_id)) for n, (store, run_id) in synthetic_runs.items()}
    print(f"build_report: tracemalloc peak {peaks}")
    assert peaks[SIZES[1]] > 2.5 * peaks[SIZES[0]], peaks


# ----------------------------------------------------------------------------- large runs

def test_large_run_html_says_where_the_full_matrix_is(synthetic_runs, tmp_path):
    store, run_id = synthetic_runs[SIZES[1]]
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "large.html"
    proc = subprocess.run([sys.executable, "-m", "sourcecheckup", "report", run_id, "--db", str(store.path),
                           "--output", str(out)], capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr
    html = out.read_text(encoding="utf-8")
    assert 'id="large-run"' in html
    assert "full support matrix" in html and "CSV/XLSX export" in html
    assert 'id="responses"' not in html                  # no per-response appendix
    assert f"{SIZES[1]:,} responses" in html
    assert len(html) < 2_000_000
    # the figures are the whole run's
    metrics = json.loads(write_report(store, run_id, tmp_path / "r.json").read_text(encoding="utf-8"))["metrics"]
    assert f"{metrics['statement_support']['k']}/{metrics['statement_support']['n']}" in html


def test_large_run_html_lists_the_first_unsupported_statements_and_counts_the_rest(mixed_run, tmp_path, monkeypatch):
    store, run_id = mixed_run
    total = len(build_report(store, run_id)["unsupported"])
    assert total >= 2
    monkeypatch.setattr(stream, "LARGE_RUN_RESPONSES", 2)
    monkeypatch.setattr(stream, "UNSUPPORTED_SHOWN", 1)
    html = write_report(store, run_id, tmp_path / "r.html").read_text(encoding="utf-8")
    assert f"4. Unsupported statements ({total})" in html
    assert f"The first 1 of {total} are shown here" in html
    assert html.count('<div class="unsupported">') == 1
    monkeypatch.setattr(stream, "LARGE_RUN_RESPONSES", 2000)
    small = write_report(store, run_id, tmp_path / "small.html").read_text(encoding="utf-8")
    assert 'id="large-run"' not in small and 'id="responses"' in small


def test_xlsx_continues_a_table_longer_than_a_sheet_on_a_second_sheet(mixed_run, tmp_path):
    from openpyxl import load_workbook

    store, run_id = mixed_run
    whole = load_workbook(write_xlsx_stream(store, run_id, tmp_path / "whole.xlsx"))
    split = load_workbook(write_xlsx_stream(store, run_id, tmp_path / "split.xlsx", max_rows=6))
    verdicts = [[c.value for c in row] for row in whole["verdicts"].iter_rows()]
    assert len(verdicts) > 11
    parts = [name for name in split.sheetnames if name.startswith("verdicts")]
    assert parts[:2] == ["verdicts", "verdicts (2)"]
    rows = []
    for name in parts:
        sheet = [[c.value for c in row] for row in split[name].iter_rows()]
        assert sheet[0] == verdicts[0] and len(sheet) <= 6       # each part has the header, none is over the limit
        rows += sheet[1:]
    assert rows == verdicts[1:]


def test_streamed_json_with_custom_overrides_equals_build_report(mixed_run, tmp_path):
    """The app's "with reviewer overrides" export passes its own overrides: the custom basis streams the same."""
    store, run_id = mixed_run
    data = store.load_run(run_id)
    spk, rows = next((k, v) for k, v in data.verdicts.items() if any(r.verdict.label is Label.SUPPORTED for r in v))
    overrides = {(spk, rows[0].url): Label.NOT_SUPPORTED}
    old = _without_time(build_report(store, run_id, overrides=overrides))
    assert old["metrics_basis"] == "custom_overrides" and old["reviewer_overrides"]["source"] == "custom"
    path = write_report(store, run_id, tmp_path / "custom.json", overrides=overrides)
    assert _without_time(json.loads(path.read_text(encoding="utf-8"))) == old


def test_every_csv_row_and_the_xlsx_summary_say_which_run_they_come_from(mixed_run, tmp_path):
    """A regulator puts several runs' exports together: each row carries its run's id and name."""
    from openpyxl import load_workbook

    store, run_id = mixed_run
    store.set_run_label(run_id, name="Ward 7, third quarter")
    try:
        for rows in (list(csv.reader(io.StringIO(report_csv(build_report(store, run_id))))),
                     list(csv.reader(io.StringIO(write_csv_stream(store, run_id, tmp_path / "r.csv", page_size=2)
                                                 .read_text(encoding="utf-8"))))):
            head, body = rows[0], rows[1:]
            i = head.index("run_id")   # columns are only ever added at the end: later ones follow these
            assert head[i:i + 2] == ["run_id", "run_name"] and body
            assert {(r[i], r[i + 1]) for r in body} == {(run_id, "Ward 7, third quarter")}
            assert head[-1] == "judge_version" and "keyword" in {r[-1] for r in body}   # recorded model version
        summary = load_workbook(write_xlsx_stream(store, run_id, tmp_path / "r.xlsx", page_size=2))["summary"]
        cells = {row[0].value: row[1].value for row in summary.iter_rows() if row[0].value}
        assert cells["run id"] == run_id and cells["run name"] == "Ward 7, third quarter"
    finally:
        store.set_run_label(run_id, name="")
