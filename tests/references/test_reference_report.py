"""Reference checks where people read them: the JSON report, the References section of the HTML report,
the metrics with intervals, verify-report and the CSV/XLSX columns (issue 18)."""
from __future__ import annotations

import csv
import io
import json
import os
import subprocess
import sys

import lxml.html
import pytest

from sourcecheckup.metrics.intervals import clopper_pearson
from sourcecheckup.models import Label, Verdict
from sourcecheckup.references.model import ReferenceStatus
from sourcecheckup.report import build_report, report_csv, report_html, verify_report
from sourcecheckup.store import Store
from tests.report.test_report_escaping import ALLOWED_TAGS
from tests.support import reference_runs as rr
from tests.support.paths import ROOT
from tests.support.synth_run import synthesize_run


@pytest.fixture
def seeded(tmp_path) -> tuple[Store, str]:
    store = Store(tmp_path / "refs.db")
    return store, rr.seed_reference_run(store)


def _sources(report: dict, rid: str) -> dict[str, dict]:
    resp = next(r for r in report["responses"] if r["id"] == rid)
    return {s["url"]: s for s in resp["sources"]}


def _references_section(html: str) -> str:
    return html[html.index('id="references"'):html.index('id="unsupported"')]


def _section_elements(html: str) -> list:
    """The elements of the References section: from its heading up to the next section's."""
    doc = lxml.html.document_fromstring(html)
    head = doc.get_element_by_id("references")
    out = [head]
    for el in head.itersiblings():
        if el.get("id") == "unsupported":
            break
        out.append(el)
    return out


def _words(elements: list) -> str:
    return " ".join(" ".join(t for el in elements for t in el.itertext()).split())


def _rows(elements: list) -> list[str]:
    return [" | ".join(" ".join(td.text_content().split()) for td in tr.findall("td"))
            for el in elements for tr in el.iter("tr")]


# ----------------------------------------------------------------------------- JSON


def test_each_citation_carries_its_reference_check_and_a_plain_page_none(seeded):
    store, run_id = seeded
    sources = _sources(build_report(store, run_id), "r1")
    assert sources[rr.PLAIN]["reference"] is None
    expected = {rr.VERIFIED: "verified", rr.MISMATCH: "mismatch", rr.NOT_FOUND: "not_found",
                rr.AMBIGUOUS: "ambiguous", rr.LOOKUP_FAILED: "lookup_failed", rr.RETRACTED: "verified",
                rr.CORRECTED: "verified"}
    assert {u: sources[u]["reference"]["status"] for u in expected} == expected
    assert [u for u in expected if sources[u]["reference"]["retracted"]] == [rr.RETRACTED]
    retracted = sources[rr.RETRACTED]["reference"]
    assert {"title", "authors", "year", "journal", "doi", "pmid"} <= set(retracted["matched"])
    assert retracted["matched"]["authors"] == ["Wakefield"] and retracted["matched"]["pmid"] == "9500320"
    assert [(n["kind"], n["source"]) for n in retracted["notices"]] == [("retraction", "crossref"),
                                                                      ("retraction", "retraction_watch")]
    mismatch = sources[rr.MISMATCH]["reference"]
    assert [(c["field"], c["cited"], c["agrees"]) for c in mismatch["comparisons"]][:2] == [
        ("title", "Aspirin for stroke", False), ("authors", "Brown", False)]
    assert sources[rr.CORRECTED]["reference"]["retracted"] is False        # a correction is shown, not retraction
    assert sources[rr.LOOKUP_FAILED]["reference"]["matched"] is None


def test_references_section_counts_and_metrics_with_exact_intervals(seeded):
    store, run_id = seeded
    refs = build_report(store, run_id)["references"]
    c = refs["counts"]
    assert c["checked"] == 10 and c["not_checked"] == 1 and c["unique_references"] == 7
    assert c["status"] == {"verified": 5, "mismatch": 1, "not_found": 2, "ambiguous": 1, "lookup_failed": 1}
    assert c["resolved"] == 9 and c["lookup_failed"] == 1 and c["retracted"] == 2
    assert c["notices"]["correction"] == 1
    m = refs["metrics"]
    # the failed lookup is in no denominator: 9 resolved citations, not 10
    assert (m["existence"]["k"], m["existence"]["n"]) == (7, 9)
    assert (m["mismatch"]["k"], m["mismatch"]["n"]) == (1, 9)
    assert (m["not_found"]["k"], m["not_found"]["n"]) == (2, 9)
    assert (m["retraction"]["k"], m["retraction"]["n"]) == (2, 6)          # verified + mismatch citations
    assert (m["retracted_only"]["k"], m["retracted_only"]["n"]) == (2, 11)
    assert m["existence"]["ci95"] == pytest.approx(list(clopper_pearson(7, 9)), abs=1e-6)
    assert m["retraction"]["ci_method"] == "clopper_pearson"
    by = refs["by_model"]
    assert (by["model-a"]["not_found"]["k"], by["model-a"]["not_found"]["n"]) == (1, 6)
    assert (by["model-b"]["retraction"]["k"], by["model-b"]["retraction"]["n"]) == (1, 2)
    assert by["model-a"]["counts"]["lookup_failed"] == 1 and by["model-b"]["counts"]["lookup_failed"] == 0
    assert [s["statement_id"] for s in refs["statements_supported_only_by_retracted"]] == ["r1/s6", "r2/s3"]
    problems = {p["url"]: p for p in refs["problems"]}
    assert rr.VERIFIED not in problems                                     # verified, no notice: no problem
    assert set(problems) == {rr.MISMATCH, rr.NOT_FOUND, rr.AMBIGUOUS, rr.LOOKUP_FAILED, rr.RETRACTED, rr.CORRECTED}
    assert problems[rr.NOT_FOUND]["cited_in"] == ["r1", "r2"]


def test_a_failed_lookup_is_never_counted_as_not_found(seeded):
    store, run_id = seeded
    before = build_report(store, run_id)["references"]
    failed = rr.reference_checks()[rr.LOOKUP_FAILED]
    store.save_reference_check(run_id, rr.NOT_FOUND, failed)              # the services were down this time
    after = build_report(store, run_id)["references"]
    assert after["counts"]["lookup_failed"] == 3 and after["counts"]["status"]["not_found"] == 0
    assert (after["metrics"]["not_found"]["k"], after["metrics"]["not_found"]["n"]) == (0, 7)
    assert before["metrics"]["not_found"]["k"] == 2


def test_a_statement_is_marked_only_when_every_supporting_source_is_retracted(seeded):
    store, run_id = seeded
    report = build_report(store, run_id)
    r1 = next(r for r in report["responses"] if r["id"] == "r1")
    assert [s["id"] for s in r1["statements"] if s["supported_only_by_retracted"]] == ["r1/s6"]
    html = report_html(report)
    appendix = html[html.index('id="responses"'):]
    row = appendix[appendix.index("The MMR vaccine causes autism."):]
    assert "supported only by retracted papers" in row[:row.index("</tr>")]
    # a second, sound source supports it too: it is no longer "only by retracted papers"
    spk = next(p for p, in store.db.execute(
        "SELECT s.pk FROM statements s JOIN responses r ON r.pk = s.response_pk WHERE r.rid = 'r1' AND s.ord = 5"))
    source_id = store.latest_source(rr.VERIFIED).id
    store.save_verdict(run_id, spk, rr.VERIFIED, source_id,
                       Verdict(label=Label.SUPPORTED, score=0.9, rationale="also here", judge_id="builtin"))
    again = build_report(store, run_id)
    assert [s["statement_id"] for s in again["references"]["statements_supported_only_by_retracted"]] == ["r2/s3"]


# ----------------------------------------------------------------------------- HTML


def test_html_references_section_shows_each_problem_with_its_evidence(seeded):
    store, run_id = seeded
    section = _section_elements(report_html(build_report(store, run_id)))
    text, rows = _words(section), _rows(section)
    assert "10 citations of 7 references" in text and "1 citation of a plain web page was not" in text
    assert "Reference existence 77.8%" in text and "7/9" in text
    # mismatch: cited and found side by side in one row
    assert any(r.startswith("title | Aspirin for stroke | Salt intake and kidney stones") for r in rows)
    assert "Best weak candidate (match 0.41): Statin use in nonagenarians · Smithers · 2017" in text
    assert "Statins and memory loss" in text and "Statins and memory in older adults" in text
    assert "The lookup failed: this reference is neither verified nor counted as not found." in text
    assert "RETRACTED" in text
    assert any(r.startswith("retraction | retraction watch | 2010-02-02") for r in rows)
    assert any(r.startswith("retraction | crossref | 2010-02-02 | 10.1016/s0140-6736(10)60175-4") for r in rows)
    assert any(r.startswith("correction | crossref | 2019-05-01") for r in rows)
    assert "Statements supported only by retracted papers (2)" in text


def test_untrusted_reference_text_is_escaped_in_the_html(seeded):
    store, run_id = seeded
    html = report_html(build_report(store, run_id))
    doc = lxml.html.document_fromstring(html)
    for el in doc.iter():
        if isinstance(el.tag, str):
            assert el.tag in ALLOWED_TAGS, f"unexpected element <{el.tag}> in the report"
            assert not any(name.startswith("on") for name in el.attrib)
    section = _references_section(html)
    assert "&lt;script&gt;alert(&#34;ref&#34;)&lt;/script&gt;" in section     # shown as text, twice
    assert section.count("&lt;img src=x onerror=alert(1)&gt;") >= 2
    assert 'href="ref:' not in html                                          # a reference key is never a link


def test_a_run_without_scholarly_citations_says_none_was_checked(tmp_path):
    store = Store(tmp_path / "plain.db")
    run_id = synthesize_run(store, responses=2, statements=2, sources=2)
    report = build_report(store, run_id)
    assert report["references"]["counts"]["checked"] == 0
    assert report["references"]["metrics"]["existence"]["value"] is None
    assert all(s["reference"] is None for r in report["responses"] for s in r["sources"])
    assert "none was checked" in _words(_section_elements(report_html(report)))
    assert verify_report(json.loads(json.dumps(report)), store) == []


# ----------------------------------------------------------------------------- verify-report, CSV, XLSX


def test_verify_report_recomputes_the_reference_figures_from_the_checks(seeded):
    store, run_id = seeded
    report = json.loads(json.dumps(build_report(store, run_id)))
    assert verify_report(report, store) == []
    edited = json.loads(json.dumps(report))
    edited["references"]["metrics"]["existence"]["k"] = 9
    assert any(d.startswith("references.metrics.existence.k") for d in verify_report(edited, store))
    # a check changed in the database after the report was written
    store.save_reference_check(run_id, rr.MISMATCH, rr.reference_checks()[rr.VERIFIED])
    diffs = verify_report(report, store)
    assert any(d.startswith("references.counts.status.mismatch") for d in diffs)
    assert any(d.startswith("references.by_model.model-a.mismatch.k") for d in diffs)


def test_report_and_verify_report_through_the_cli(seeded, tmp_path):
    store, run_id = seeded
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    out = tmp_path / "report.json"
    run = subprocess.run([sys.executable, "-m", "sourcecheckup", "report", run_id, "--db", str(store.path),
                          "-o", str(out)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    saved = json.loads(out.read_text(encoding="utf-8"))
    assert saved["references"]["counts"]["status"]["lookup_failed"] == 1
    ok = subprocess.run([sys.executable, "-m", "sourcecheckup", "verify-report", str(out), "--db", str(store.path)],
                        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    saved["references"]["metrics"]["retraction"]["k"] = 0
    out.write_text(json.dumps(saved), encoding="utf-8")
    bad = subprocess.run([sys.executable, "-m", "sourcecheckup", "verify-report", str(out), "--db", str(store.path)],
                         cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert bad.returncode != 0 and "references.metrics.retraction.k" in bad.stdout + bad.stderr


def test_csv_rows_carry_reference_status_and_retracted(seeded):
    store, run_id = seeded
    rows = list(csv.DictReader(io.StringIO(report_csv(build_report(store, run_id)))))
    by_url = {}
    for row in rows:
        if row["response_id"] == "r1":
            by_url.setdefault(row["url"], set()).add((row["reference_status"], row["reference_retracted"]))
    assert by_url[rr.RETRACTED] == {("verified", "yes")}
    assert by_url[rr.VERIFIED] == {("verified", "no")}
    assert by_url[rr.LOOKUP_FAILED] == {("lookup_failed", "no")}
    assert by_url[rr.NOT_FOUND] == {("not_found", "no")}
    assert by_url[rr.PLAIN] == {("", "")}


def test_xlsx_sources_sheet_has_reference_columns(seeded, tmp_path):
    from openpyxl import load_workbook

    from sourcecheckup.report import write_report

    store, run_id = seeded
    path = write_report(store, run_id, tmp_path / "r.xlsx")
    ws = load_workbook(path, read_only=True)["sources"]
    rows = [list(r) for r in ws.iter_rows(values_only=True)]
    head = rows[0]
    status, retracted = head.index("reference status"), head.index("retracted")
    by_url = {r[0]: (r[status], r[retracted]) for r in rows[1:]}
    assert by_url[rr.RETRACTED] == ("verified", "yes")
    assert by_url[rr.MISMATCH] == ("mismatch", "no")
    assert by_url[rr.PLAIN][0] in ("", None)
    assert ReferenceStatus.AMBIGUOUS.value == by_url[rr.AMBIGUOUS][0]
    metrics = [list(r) for r in load_workbook(path, read_only=True)["references"].iter_rows(values_only=True)]
    existence = next(r for r in metrics if r[0] == "all" and r[1] == "Reference existence")
    assert existence[5:] == [7, 9]


def test_pdf_report_has_the_references_section(seeded, tmp_path):
    from pypdf import PdfReader

    from sourcecheckup.report import write_report

    store, run_id = seeded
    path = write_report(store, run_id, tmp_path / "r.pdf")
    text = " ".join(" ".join(p.extract_text() for p in PdfReader(str(path)).pages).split())
    assert "3a. References" in text and "Statements supported only by retracted papers (2)" in text
    assert "Best weak candidate (match 0.41)" in text and "retraction retraction watch 2010-02-" in text


def test_a_long_problem_list_is_cut_in_html_and_kept_whole_in_json(seeded, monkeypatch):
    from sourcecheckup.report import html_report

    store, run_id = seeded
    monkeypatch.setattr(html_report, "MAX_REFERENCE_PROBLEMS", 2)
    report = build_report(store, run_id)
    section = _section_elements(report_html(report))
    assert sum(1 for el in section if "reference-problem" in (el.get("class") or "")) == 2
    assert "4 more problems in the JSON report." in _words(section)
    assert len(report["references"]["problems"]) == 6


# ----------------------------------------------------------------------------- streamed reports (issues 17 + 18)


def _without_time(report: dict) -> dict:
    report = json.loads(json.dumps(report, ensure_ascii=False))
    report.pop("generated_at")
    # the report's own digests cover generated_at; content_sha256 leaves it out and stays compared
    for key in ("sections", "report_sha256"):
        report["integrity"].pop(key)
    return report


@pytest.mark.parametrize("page_size", [1, 500])
def test_streamed_json_carries_the_reference_checks_as_build_report_does(seeded, tmp_path, page_size):
    from sourcecheckup.report.stream import write_json_stream

    store, run_id = seeded
    old = _without_time(build_report(store, run_id))
    path = write_json_stream(store, run_id, tmp_path / "r.json", page_size=page_size)
    new = json.loads(path.read_text(encoding="utf-8"))
    assert [k for k in new if k != "generated_at"] == list(old)           # `references` in the same key position
    assert _without_time(new) == old
    # what the equality covers: a page of one response still gathers both responses into the section
    refs = new["references"]
    assert refs["counts"]["checked"] == 10 and len(refs["problems"]) == 6
    assert {p["url"]: p["cited_in"] for p in refs["problems"]}[rr.NOT_FOUND] == ["r1", "r2"]
    assert [s["statement_id"] for s in refs["statements_supported_only_by_retracted"]] == ["r1/s6", "r2/s3"]
    assert sorted(refs["by_model"]) == ["model-a", "model-b"]
    assert _sources(new, "r2")[rr.RETRACTED]["reference"]["retracted"] is True
    r2 = next(r for r in new["responses"] if r["id"] == "r2")
    assert [s["supported_only_by_retracted"] for s in r2["statements"]] == [False, False, True]
    assert verify_report(new, store) == []


def test_streamed_csv_and_xlsx_carry_the_reference_columns_as_the_in_memory_writers(seeded, tmp_path):
    from openpyxl import load_workbook

    from sourcecheckup.report.stream import write_csv_stream
    from sourcecheckup.report.xlsx import write_xlsx, write_xlsx_stream

    store, run_id = seeded
    report = build_report(store, run_id)
    old_csv = list(csv.reader(io.StringIO(report_csv(report))))
    new_csv = list(csv.reader(io.StringIO(
        write_csv_stream(store, run_id, tmp_path / "r.csv", page_size=1).read_text(encoding="utf-8"))))
    head = old_csv[0]
    status, retracted = head.index("reference_status"), head.index("reference_retracted")
    assert new_csv == old_csv and retracted == status + 1
    assert ["r2", rr.RETRACTED, "verified", "yes"] in [[r[0], r[7], r[status], r[retracted]] for r in new_csv]
    old_wb = load_workbook(write_xlsx(report, store, tmp_path / "old.xlsx"))
    new_wb = load_workbook(write_xlsx_stream(store, run_id, tmp_path / "new.xlsx", page_size=1))
    assert new_wb.sheetnames == old_wb.sheetnames and new_wb.sheetnames[-1] == "references"
    for name in old_wb.sheetnames:
        assert ([[c.value for c in row] for row in new_wb[name].iter_rows()]
                == [[c.value for c in row] for row in old_wb[name].iter_rows()]), name
    statements = [[c.value for c in row] for row in new_wb["statements"].iter_rows()]
    flag = statements[0].index("supported only by retracted papers")
    assert [r[3] for r in statements[1:] if r[flag]] == ["r1/s6", "r2/s3"]


def test_large_run_html_has_the_references_section_with_its_lists_capped(seeded, tmp_path, monkeypatch):
    from sourcecheckup.report import html_report, stream, write_report

    store, run_id = seeded
    monkeypatch.setattr(stream, "LARGE_RUN_RESPONSES", 1)        # two responses: a "large" run here
    monkeypatch.setattr(html_report, "MAX_REFERENCE_PROBLEMS", 1)
    html = write_report(store, run_id, tmp_path / "r.html").read_text(encoding="utf-8")
    assert 'id="large-run"' in html and 'id="responses"' not in html
    section = _section_elements(html)
    words = _words(section)
    assert "10 citations of 7 references" in words
    assert "Reference existence" in words and "7/9" in words
    assert sum(1 for el in section if "reference-problem" in (el.get("class") or "")) == 1
    assert "5 more problems in the JSON report." in words
    assert "Statements supported only by retracted papers (2)" in words
    assert "1 more statements in the JSON report." in words
