"""What `audit` says besides its figures: warnings that -q keeps, a progress line and a summary that
count the same unit (totals that never go back, on a resume too), and notes on answers that cite
nothing, lookups not made, a CSV's dialect, renamed ids and inputs with nothing to audit."""
from __future__ import annotations

import asyncio
import io
import json
import re
import sqlite3
import subprocess
import sys

from sourcecheckup import demo
from sourcecheckup.cli import main
from sourcecheckup.events import EventKind, ProgressEvent
from sourcecheckup.fetching import FetchOptions
from sourcecheckup.ingest import load_path
from sourcecheckup.pipeline import Audit, RunConfig
from sourcecheckup.store import Store
from tests.support import (
    cli,
    fake_judge,  # noqa: F401  (registers the keyword judge for the CLI in this process)
)

SUPPORTED = "Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher."


def sc(*args: str, env_extra: dict | None = None, **kw) -> subprocess.CompletedProcess:
    env = {"SOURCECHECKUP_ARCHIVE": "off", "SOURCECHECKUP_BROWSER": "never", **(env_extra or {})}
    return cli.sc(*args, env=env, in_process=not kw, **kw)


def test_quiet_keeps_warnings_and_progress_and_summary_count_the_same_unit(audited, tmp_path, site) -> None:
    answers = tmp_path / "two.jsonl"
    answers.write_text("".join(json.dumps({"id": f"b{i}", "response": f"{SUPPORTED} [1]",
                                           "citations": [f"{site}/status/404"]}) + "\n" for i in range(2)))
    p = sc("audit", str(answers), "--judge", "keyword:0", "--db", str(tmp_path / "b.db"), "--allow-host",
           "127.0.0.1")
    assert p.returncode == 0, p.stderr
    # one dead page cited by two answers: one unreadable source in the progress line and in the summary
    assert "unreadable sources 1 ·" in p.stderr.splitlines()[-1]
    assert "  unreadable sources 1 · judge errors 0" in p.stdout
    assert "fetch failures" not in p.stdout + p.stderr


def _demo_config(judge: str = "keyword") -> RunConfig:
    return RunConfig(judges=[judge], judge_concurrency=2, fetch=FetchOptions(sources_dir=demo.sources_dir(), browser="never",
                                                            extract_workers=0))


class _Terminal(io.StringIO):
    def isatty(self) -> bool:   # the CLI redraws its progress line on a terminal, every 0.1 s
        return True


def test_a_resumed_runs_last_progress_line_counts_the_whole_run(tmp_path, monkeypatch):
    loaded = load_path(str(demo.answers_dir()))
    db = tmp_path / "r.db"
    store = Store(db)
    audit = Audit(store, _demo_config("keyword:0.02"))
    audit.commit_window_pairs = 1   # each answer is stored done as soon as it is: the cancel lands between answers

    def stop_after_the_first_answer(event: ProgressEvent) -> None:
        if event.kind is EventKind.RESPONSE_DONE:
            audit.cancel.set()

    audit.progress = stop_after_the_first_answer
    asyncio.run(audit.start(loaded.responses, loaded.skipped, "demo"))
    run = store.get_run(audit.run_id)
    assert run.status == "cancelled"
    done = sum(r.done for r in store.responses(run.id))
    assert 0 < done < len(loaded.responses)
    straight_events: list[ProgressEvent] = []
    asyncio.run(Audit(Store(tmp_path / "s.db"), _demo_config(), progress=straight_events.append)
                .start(loaded.responses, loaded.skipped, "demo"))
    whole = straight_events[-1]

    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["audit", "--resume", run.id, "--db", str(db)]) == 0
    lines = [line for line in re.split(r"[\r\n]", terminal.getvalue()) if line.startswith("[")]
    counts = [dict((k, tuple(map(int, v.split("/")))) for k, v in re.findall(r"(\w+) (\d+/\d+)", line))
              for line in lines]
    for name in ("responses", "sources", "pairs"):
        totals = [c[name][1] for c in counts]
        assert totals == sorted(totals), f"{name} total went back: {lines}"
    assert counts[-1]["responses"] == (whole.responses_total,) * 2
    assert counts[-1]["sources"] == (whole.sources_total,) * 2      # was 'sources 15/17' for a completed run
    assert counts[-1]["pairs"] == (whole.pairs_total,) * 2
    assert f"unreadable sources {whole.fetch_failures} " in lines[-1]


def test_an_answer_that_cites_nothing_is_named_in_a_note_after_the_figures(tmp_path):
    from tests.cli.test_cli import sc

    answer = tmp_path / "nolinks.md"
    answer.write_text("Paracetamol is usually taken every 4 to 6 hours. Adults can take up to 4 g a day.\n",
                      encoding="utf-8")
    p = sc("audit", str(answer), "--db", str(tmp_path / "a.db"))
    assert p.returncode == 0, p.stderr
    assert "1 response," in p.stdout and "0 cited URLs" in p.stdout
    assert "note: 1 of 1 answers cite no source (nolinks-1)" in p.stderr
    assert "count as unsupported (no readable source)" in p.stderr
    quiet = sc("audit", str(answer), "--db", str(tmp_path / "b.db"), "-q")   # -q hides progress, not this
    assert "note: 1 of 1 answers cite no source" in quiet.stderr


def test_reference_lookups_that_could_not_be_made_are_said_with_how_to_skip_them():
    from sourcecheckup.cli.runs import audit_notes

    report = {"responses": [{"id": "a", "sources": [{"url": "https://doi.org/10.1/x"}]}],
              "references": {"counts": {"lookup_failed": 2}}}
    (note,) = audit_notes(report)
    assert note.startswith("2 reference lookups could not be made") and "--no-references" in note
    assert audit_notes({"responses": [{"id": "a", "sources": [{"url": "u"}]}],
                        "references": {"counts": {"lookup_failed": 0}}}) == []


def test_a_csv_export_with_semicolons_is_read_and_the_run_log_names_the_dialect(tmp_path, site) -> None:
    path = tmp_path / "batch.csv"
    path.write_bytes(f"Prompt;LLM Output;Refs\r\nQ?;{SUPPORTED} [1];{site}/article/hypertension\r\n"
                     .encode("cp1252"))
    db = tmp_path / "c.db"
    p = sc("audit", str(path), "--text-col", "LLM Output", "--citations-col", "Refs", "--question-col", "Prompt",
           "--judge", "keyword:0", "--db", str(db), "--allow-host", "127.0.0.1")
    assert p.returncode == 0, p.stderr
    assert "note: batch.csv: read as a table separated by semicolons (detected)" in p.stderr
    with sqlite3.connect(db) as conn:
        log = [m for (m,) in conn.execute("SELECT message FROM run_log")]
    assert "batch.csv: read as a table separated by semicolons (detected), encoding UTF-8" in log


def test_a_repeated_id_is_renamed_and_the_renaming_is_named(tmp_path, capsys):
    """two JSONL lines with one id are two answers; the second's new id is said, with its line."""
    src = tmp_path / "dup.jsonl"
    src.write_text('{"id": "para-1", "text": "Aspirin thins the blood."}\n'
                   '{"id": "para-1", "text": "Statins lower cholesterol."}\n', encoding="utf-8")
    loaded = load_path(str(src))
    assert [r.id for r in loaded.responses] == ["para-1", "para-1-2"]
    assert len(loaded.notes) == 1 and "dup.jsonl:2 'para-1' -> 'para-1-2'" in loaded.notes[0]
    capsys.readouterr()
    assert main(["audit", str(src), "--db", str(tmp_path / "d.db"), "--judge", "keyword"]) == 0
    assert "dup.jsonl:2 'para-1' -> 'para-1-2'" in capsys.readouterr().err


def test_a_header_only_csv_and_an_empty_jsonl_fail_alike_naming_the_file(tmp_path):
    from tests.cli.test_cli import sc

    (tmp_path / "h.csv").write_text("answer,citations\n", encoding="utf-8")
    (tmp_path / "empty.jsonl").write_text("", encoding="utf-8")
    for name, why in (("h.csv", "the table has a header row and no data rows"),
                      ("empty.jsonl", "the file holds no JSON records")):
        p = sc("audit", str(tmp_path / name), "--db", str(tmp_path / "e.db"))
        assert p.returncode == 1, p.stderr
        assert f"skipped {name}: no answers: {why}" in p.stderr
        assert "nothing to audit" in p.stderr
