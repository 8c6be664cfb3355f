"""The command line as a new user first meets it: usage errors, quiet, read-only commands, help."""
from __future__ import annotations

import argparse
import json
import os
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from sourcecheckup.cli import build_parser, main
from sourcecheckup.store import default_db_path
from tests.support import cli
from tests.support.paths import ROOT

SUPPORTED = "Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher."
PROGRESS_COMMANDS = {"audit", "cleanup", "verify-pairs", "demo", "questions", "answer", "benchmark", "report"}


def sc(*args: str, env_extra: dict | None = None, **kw) -> subprocess.CompletedProcess:
    env = {"SOURCECHECKUP_ARCHIVE": "off", "SOURCECHECKUP_BROWSER": "never", **(env_extra or {})}
    return cli.sc(*args, env=env, in_process=not kw, **kw)


@pytest.fixture(scope="module")
def audited(tmp_path_factory, site) -> Path:
    """A database with one run: two answers cite the same dead page, one line of the input is broken."""
    tmp = tmp_path_factory.mktemp("audited")
    lines = [json.dumps({"id": f"a{i}", "question": "What counts as high blood pressure?", "model": "model-x",
                         "response": f"{SUPPORTED} [1] Salt {i} matters [2].",
                         "citations": [f"{site}/article/hypertension", f"{site}/status/404"]}) for i in range(2)]
    lines.insert(1, "{not json")
    answers = tmp / "answers.jsonl"
    answers.write_text("\n".join(lines) + "\n")
    db = tmp / "a.db"
    p = sc("audit", str(answers), "--judge", "keyword:0", "--db", str(db), "--allow-host", "127.0.0.1", "-q")
    assert p.returncode == 0, p.stderr
    # -q hides progress, never a warning about a skipped record
    assert "warning: answers.jsonl:2" in p.stderr and "responses 2/2" not in p.stderr
    return db


def test_unknown_option_shows_the_commands_usage_and_the_nearest_option(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["audit", "answers.jsonl", "--allow-hosts", "127.0.0.1"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: sourcecheckup audit ")
    assert "unrecognized arguments: --allow-hosts" in err
    assert "did you mean --allow-host?" in err


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


def test_show_an_unknown_response_says_so_and_exits_2(audited, capsys) -> None:
    assert main(["show", "--db", str(audited), "--response", "nope"]) == 2
    out = capsys.readouterr()
    assert "has no response 'nope' (its responses: a0, a1)" in out.err
    assert "source URL validity" not in out.out           # no run summary in place of the answer
    assert main(["show", "--db", str(audited), "--response", "a1"]) == 0
    assert "== a1" in capsys.readouterr().out


@pytest.mark.parametrize("argv", [
    ["runs"], ["runs", "--json"], ["show"], ["report", "-o", "{tmp}/r.html"], ["review-sample"],
    ["compare", "A", "B"], ["revised", "--response", "x"], ["cleanup", "--accept", "1"],
    ["verify-report", "{tmp}/report.json"],
])
def test_read_only_commands_never_create_a_database(tmp_path, capsys, argv) -> None:
    (tmp_path / "report.json").write_text(json.dumps({"run": {"id": "x"}, "metrics": {}}))
    db = tmp_path / "typo.db"
    assert main([a.replace("{tmp}", str(tmp_path)) for a in argv] + ["--db", str(db)]) == 2
    assert f"{db}: no such database" in capsys.readouterr().err
    assert not db.exists() and not list(tmp_path.glob("typo.db*"))


def test_compare_against_a_missing_second_database_creates_nothing(audited, tmp_path, capsys) -> None:
    db_b = tmp_path / "b-typo.db"
    assert main(["compare", "A", "B", "--db", str(audited), "--db-b", str(db_b)]) == 2
    assert not db_b.exists()


def test_report_format_follows_the_extension_and_a_contradiction_is_refused(audited, tmp_path, capsys) -> None:
    out = tmp_path / "out.html"
    assert main(["report", "--db", str(audited), "-o", str(out), "--format", "pdf"]) == 2
    assert "names a .html file but --format is pdf" in capsys.readouterr().err
    assert not out.exists()
    csv_out = tmp_path / "out.csv"
    assert main(["report", "--db", str(audited), "-o", str(csv_out)]) == 0
    assert not csv_out.read_text(encoding="utf-8-sig").lstrip().startswith("{")     # CSV, not JSON
    htm = tmp_path / "out.htm"
    assert main(["report", "--db", str(audited), "-o", str(htm)]) == 0
    assert "<html" in htm.read_text().lower()
    anyname = tmp_path / "report.out"                     # no known extension: --format decides
    assert main(["report", "--db", str(audited), "-o", str(anyname), "--format", "json"]) == 0
    assert json.loads(anyname.read_text())["run"]["id"]


def test_a_closed_pipe_ends_quietly(audited) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "sourcecheckup", "runs", "--json", "--db", str(audited)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()                                   # `| head -0`: the reader is gone before a byte is written
    stderr = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr and stderr == ""
    assert proc.returncode == 141


def _subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(action.choices)


def test_every_help_screen_opens_with_its_description_and_explains_every_option(capsys) -> None:
    commands = _subparsers(build_parser())
    assert PROGRESS_COMMANDS <= set(commands)
    for name, p in commands.items():
        with pytest.raises(SystemExit):
            main([name, "--help"])
        text = capsys.readouterr().out
        usage, _, rest = text.partition("\n\n")
        assert usage.startswith(f"usage: sourcecheckup {name} ")
        assert " ".join(rest.split("\n\n")[0].split()) == p.description
        assert p.description.endswith(".") and p.description[0].isupper()
        for action in p._actions:
            label = f"{name} {action.option_strings or action.dest}"
            assert action.help, f"{label} has no help text"
            if action.type is int:
                assert action.metavar in ("N", "K", "ID"), f"{label}: metavar {action.metavar}"
        has_quiet = any("-q" in a.option_strings for a in p._actions)
        assert has_quiet == (name in PROGRESS_COMMANDS), f"{name}: -q {'shown' if has_quiet else 'missing'}"
        db = next(a for a in p._actions if "--db" in a.option_strings)
        assert str(default_db_path()) in db.help            # the actual path, not "your data folder"


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


@pytest.mark.parametrize("archive_args, said", [
    (["--archive-endpoint", "http://127.0.0.1:9/wayback/available"],
     "None recorded: archive lookup failed (no connection: the archive could not be reached (ConnectError))."),
    (["--no-archive"], "None recorded: archive lookup was off for this run (--no-archive)."),
])
def test_the_report_says_what_the_archive_lookup_did(tmp_path, site, archive_args, said) -> None:
    answers = tmp_path / "dead.json"
    answers.write_text(json.dumps({"response": f"{SUPPORTED} [1]", "citations": [f"{site}/status/404"]}))
    out = tmp_path / "r.html"
    p = sc("audit", str(answers), "--judge", "keyword:0", "--db", str(tmp_path / "d.db"), "--allow-host",
           "127.0.0.1", "-q", "--report", str(out), *archive_args, env_extra={"SOURCECHECKUP_ARCHIVE": "on"})
    assert p.returncode == 0, p.stderr
    text = " ".join(out.read_text().split())
    assert said in text
    assert "only when the fetch option is on" not in text


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


def test_a_refused_audit_leaves_no_empty_database(tmp_path):
    from tests.cli.test_cli import sc

    answer = tmp_path / "a.md"
    answer.write_text("Adults can take up to 4 g of paracetamol a day (https://example.org/p).\n", encoding="utf-8")
    for args in (("audit", str(tmp_path / "nothere.md")), ("audit", str(answer), "--judge", "gpt4")):
        db = tmp_path / "err.db"
        p = sc(*args, "--db", str(db))
        assert p.returncode == 2, p.stderr
        assert not db.exists(), f"{args} left {db} behind"


def test_report_says_where_it_wrote_and_takes_q_for_the_bare_path(audited, tmp_path):
    out = tmp_path / "r.json"
    p = sc("report", "--db", str(audited), "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"report written to {out}"
    quiet = sc("report", "--db", str(audited), "-o", str(out), "-q")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.strip() == str(out)


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
