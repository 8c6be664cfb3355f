"""The full report: every figure checked against SQL written independently here, PDF, xlsx, verify-report."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

from sourcecheckup.report import build_report, report_html, verify_report, write_report
from sourcecheckup.review import add_review
from sourcecheckup.store import Store
from tests.support.paths import ROOT
from tests.support.report_runs import SUPPORTED, UNSUPPORTED, audit_site

READABLE = "('ok', 'abstract_only', 'paywalled')"


@pytest.fixture(scope="module")
def audited(site, tmp_path_factory):
    path = tmp_path_factory.mktemp("report") / "audit.db"
    store = Store(path)
    run_id = asyncio.run(audit_site(store, site))
    yield store, run_id
    store.close()


def _sql(store: Store, sql: str, args=()) -> list[tuple]:
    return store.db.execute(sql, list(args)).fetchall()


def _citations_sql(model: str | None = None) -> str:
    where = "AND r.model = ?" if model else ""
    return (f"SELECT r.model, c.value AS url, s.status, length(trim(coalesce(s.text, ''))) AS chars "
            f"FROM responses r, json_each(r.citations) c "
            f"LEFT JOIN run_sources rs ON rs.run_id = r.run_id AND rs.url = c.value "
            f"LEFT JOIN sources s ON s.id = rs.source_id WHERE r.run_id = ? {where}")


def test_metrics_match_sql_computed_independently(audited):
    store, run_id = audited
    report = build_report(store, run_id)
    cites = _sql(store, _citations_sql(), [run_id])
    valid = sum(1 for _, _, status, chars in cites if status in ("ok", "abstract_only", "paywalled") and chars > 0)
    m = report["metrics"]
    assert (m["url_validity"]["k"], m["url_validity"]["n"]) == (valid, len(cites))
    # one judge, no errors: a claim is supported when any verdict on it says so
    claims = _sql(store, "SELECT st.pk, r.model, EXISTS(SELECT 1 FROM verdicts v WHERE v.statement_pk = st.pk "
                         "AND v.label = 'supported') FROM statements st JOIN responses r ON r.pk = st.response_pk "
                         "WHERE st.run_id = ? AND st.category = 'informative'", [run_id])
    assert (m["statement_support"]["k"], m["statement_support"]["n"]) == (sum(c[2] for c in claims), len(claims))
    per_response = _sql(store, "SELECT r.pk, MIN(EXISTS(SELECT 1 FROM verdicts v WHERE v.statement_pk = st.pk "
                               "AND v.label = 'supported')) FROM responses r JOIN statements st ON st.response_pk = r.pk "
                               "WHERE r.run_id = ? AND st.category = 'informative' GROUP BY r.pk", [run_id])
    assert (m["response_support"]["k"], m["response_support"]["n"]) == (sum(p[1] for p in per_response),
                                                                       len(per_response))
    for model in ("model-a", "model-b"):
        mine = [c for c in claims if c[1] == model]
        got = report["by_model"][model]["statement_support"]
        assert (got["k"], got["n"]) == (sum(c[2] for c in mine), len(mine))
        rows = _sql(store, _citations_sql(model), [run_id, model])
        dead = sum(1 for r in rows if r[2] == "dead")
        rate = report["analytics"]["by_model"][model]["rates"]["dead"]
        assert (rate["k"], rate["n"]) == (dead, len(rows))
    counts = dict(_sql(store, "SELECT s.status, COUNT(*) FROM responses r, json_each(r.citations) c JOIN run_sources rs "
                              "ON rs.run_id = r.run_id AND rs.url = c.value JOIN sources s ON s.id = rs.source_id "
                              "WHERE r.run_id = ? GROUP BY s.status", [run_id]))
    assert report["counts"]["fetch_outcomes"] == counts
    assert counts.get("dead") == 2 and counts.get("paywalled") == 1
    unsupported = {u["statement"] for u in report["unsupported"]}
    assert UNSUPPORTED in unsupported and SUPPORTED in unsupported     # r3's only readable page is a teaser
    assert set(report["by_group"]) == {"source"}
    hashes = dict(_sql(store, "SELECT rs.url, s.sha256 FROM run_sources rs JOIN sources s ON s.id = rs.source_id "
                              "WHERE rs.run_id = ?", [run_id]))
    assert {s["url"]: s["sha256"] for s in report["audit_trail"]["sources"]} == hashes
    assert report["audit_trail"]["judges"][0]["prompt_versions"] == ["keyword-1"]


def test_html_has_every_section_a_toc_and_inline_svg_charts(audited):
    store, run_id = audited
    html = report_html(build_report(store, run_id))
    for anchor in ("summary", "by-model", "sources", "unsupported", "review", "method"):
        assert f'href="#{anchor}"' in html and f'id="{anchor}"' in html
    assert html.count("<svg") >= 2 and "<img" not in html and "<script" not in html
    assert "counted as United States" in html and "break-before: page" in html


def test_pdf_has_pages_page_numbers_and_the_report_text(audited, tmp_path):
    from pypdf import PdfReader

    store, run_id = audited
    out = write_report(store, run_id, tmp_path / "r.pdf")
    reader = PdfReader(str(out))
    assert len(reader.pages) >= 5
    text = "\n".join(p.extract_text() for p in reader.pages)
    assert "Statement-level support" in text and "Method and audit trail" in text
    assert "page 1 of" in reader.pages[0].extract_text()
    assert any(o for o in reader.outline)          # bookmarks from the headings


def test_xlsx_opens_with_every_sheet_and_keeps_formulas_as_text(audited, tmp_path):
    from openpyxl import load_workbook

    store, run_id = audited
    data = store.load_run(run_id)
    spk = next(iter(data.verdicts))
    url = data.verdicts[spk][0].url
    add_review(store, run_id, spk, url, "=HYPERLINK(\"http://x\")", "supported")
    out = write_report(store, run_id, tmp_path / "r.xlsx")
    wb = load_workbook(out)
    assert wb.sheetnames == ["summary", "by model", "statements", "verdicts", "sources", "reviews", "references"]
    n_statements = store.db.execute("SELECT COUNT(*) FROM statements WHERE run_id = ?", [run_id]).fetchone()[0]
    assert wb["statements"].max_row == n_statements + 1
    reviewer = wb["reviews"].cell(row=2, column=4)
    assert reviewer.value.startswith("=HYPERLINK") and reviewer.data_type == "s"
    store.db.execute("DELETE FROM reviews WHERE run_id = ?", [run_id])
    store.db.conn.commit()


def test_verify_report_confirms_and_names_a_tampered_figure(audited, tmp_path):
    store, run_id = audited
    path = write_report(store, run_id, tmp_path / "r.json")
    assert verify_report(json.loads(path.read_text()), store) == []
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    ok = subprocess.run([sys.executable, "-m", "sourcecheckup", "verify-report", str(path), "--db", str(store.path)],
                        cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert ok.returncode == 0 and "OK" in ok.stdout, ok.stdout + ok.stderr
    report = json.loads(path.read_text())
    report["metrics"]["statement_support"]["k"] += 1
    (tmp_path / "bad.json").write_text(json.dumps(report))
    bad = subprocess.run([sys.executable, "-m", "sourcecheckup", "verify-report", str(tmp_path / "bad.json"),
                          "--db", str(store.path)], cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert bad.returncode == 1
    assert "metrics.statement_support.k" in bad.stdout


def test_report_command_writes_each_format(audited, tmp_path):
    store, run_id = audited
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    for fmt in ("html", "json", "csv", "xlsx"):
        out = tmp_path / f"r.{fmt}"
        p = subprocess.run([sys.executable, "-m", "sourcecheckup", "report", run_id, "--db", str(store.path),
                            "--format", fmt, "-o", str(out)], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=60)
        assert p.returncode == 0, p.stderr
        assert out.stat().st_size > 500


def test_pdf_falls_back_to_qt_when_chromium_is_missing(audited, tmp_path, monkeypatch):
    from pypdf import PdfReader

    import ui.pdf_qt  # noqa: F401 - the desktop app's Qt writer registers itself
    from sourcecheckup.report.pdf import html_to_pdf

    store, run_id = audited
    monkeypatch.setenv("SOURCECHECKUP_CHROMIUM", str(tmp_path / "no-such-chromium"))
    result = html_to_pdf(report_html(build_report(store, run_id)), tmp_path / "q.pdf")
    assert result.engine == "qt" and "no Chromium found" in result.problems[0]
    reader = PdfReader(str(tmp_path / "q.pdf"))
    text = " ".join(" ".join(p.extract_text().split()) for p in reader.pages)
    assert len(reader.pages) >= 2 and "Statement-level support" in text and "Method and audit trail" in text
