"""What the command line writes cannot be turned against its user: report targets that are not files (a
FIFO, a device node, a folder) are refused in words, and ids, models and text with terminal escapes
and bidi controls print as code points (the real CLI in a subprocess).
"""
from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from tests.support.cli import sc_here as cli

REFUSED = "http://127.0.0.1:9/x"   # refused as unsafe at once: nothing leaves the machine


def good(i: int) -> str:
    return json.dumps({"response": f"Aspirin thins the blood in trial {i} [1].", "citations": [REFUSED],
                       "id": f"good{i}"})


@pytest.fixture(scope="module")
def audited(tmp_path_factory) -> Path:
    """A database holding one finished run of two answers (their sources refused: nothing fetched)."""
    folder = tmp_path_factory.mktemp("audited")
    answers = folder / "answers.jsonl"
    answers.write_text(f"{good(1)}\n{good(2)}\n")
    db = folder / "a.db"
    p = cli("audit", str(answers), "--db", str(db), "--no-archive", "--browser", "never", "-q")
    assert p.returncode == 0, p.stderr
    return db


def test_report_onto_a_fifo_or_a_device_node_is_refused_and_leaves_it_as_it_was(tmp_path, audited):
    import stat

    fifo = tmp_path / "pipe.json"
    os.mkfifo(fifo)
    p = cli("report", "--db", str(audited), "-o", str(fifo), timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "is a FIFO (named pipe), not a regular file" in p.stderr
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)           # it was renamed over with a plain file
    device = tmp_path / "null.json"
    try:
        os.mknod(device, stat.S_IFCHR | 0o666, os.makedev(1, 3))   # a /dev/null of our own
    except PermissionError:
        pytest.skip("making a device node needs root")
    p = cli("report", "--db", str(audited), "-o", str(device), timeout=60)
    assert p.returncode == 2 and "is a device, not a regular file" in p.stderr, p.stderr
    assert stat.S_ISCHR(os.stat(device).st_mode)
    # standard output as a path: here a pipe, refused in words, not a traceback
    p = cli("report", "--db", str(audited), "-o", "/proc/self/fd/1", timeout=60)
    assert p.returncode != 0 and "Traceback" not in p.stderr and "cannot write the report" in p.stderr, p.stderr


def test_report_onto_a_folder_is_a_clear_message_not_a_traceback(tmp_path, audited):
    folder = tmp_path / "out.json"
    folder.mkdir()
    p = cli("report", "--db", str(audited), "-o", str(folder), timeout=60)
    assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
    assert "it is a folder; name a file in it" in p.stderr
    assert folder.is_dir() and not list(folder.iterdir())


def test_audit_report_onto_a_folder_is_refused_before_the_audit_and_a_late_failure_keeps_the_run(tmp_path):
    answers = tmp_path / "answers.jsonl"
    answers.write_text(f"{good(1)}\n")
    folder = tmp_path / "out.json"
    folder.mkdir()
    db = tmp_path / "a.db"
    p = cli("audit", str(answers), "--db", str(db), "--no-archive", "--browser", "never", "-q", "--report", str(folder))
    assert p.returncode == 2 and "Traceback" not in p.stderr and "it is a folder" in p.stderr, p.stderr
    # a report that fails only once the audit is done (here: no file can be made in /proc/self)
    p = cli("audit", str(answers), "--db", str(db), "--no-archive", "--browser", "never", "-q",
            "--report", "/proc/self/report.json")
    assert p.returncode == 1 and "Traceback" not in p.stderr, p.stderr
    run_id = p.stdout.strip()
    assert f"The audit itself is stored as run {run_id} in {db}" in p.stderr
    assert f"sourcecheckup report {run_id} --db {db} -o FILE" in p.stderr
    assert run_id in cli("runs", "--db", str(db)).stdout


ERASE_AND_FAKE = "\x1b[2K\r\x1b[32m ✓ supported\x1b[0m"


CLIPBOARD = "\x1b]52;c;aGVsbG8=\x07"


RAW_CONTROLS = ("\x1b", "\x07", "\x9b", "\r", "\u202e", "\u2066")


def test_ids_models_and_text_with_escapes_and_bidi_controls_print_as_code_points(tmp_path):
    records = [
        {"response": f"Aspirin \u202eenilesab\u202c thins the blood{ERASE_AND_FAKE} [1].", "citations": [REFUSED],
         "id": f"r{CLIPBOARD}one", "model": "gpt\x1b[31m-x", "question": "Is it\x9b2J safe?"},
        {"response": "Metformin is first line.", "id": f"uncited{ERASE_AND_FAKE}\u2066x"},   # named in a note
    ]
    answers = tmp_path / "answers.jsonl"
    answers.write_text("\n".join(json.dumps(r) for r in records) + "\n")
    db = tmp_path / "a.db"
    audit = cli("audit", str(answers), "--db", str(db), "--no-archive", "--browser", "never", "-q")
    assert audit.returncode == 0, audit.stderr
    assert "cite no source (uncited<U+001B>[2K<U+000D><U+001B>[32m ✓ supported<U+001B>[0m<U+2066>x)" in audit.stderr
    show = cli("show", "--db", str(db), "--full")
    assert show.returncode == 0, show.stderr
    for out in (audit.stdout, audit.stderr, show.stdout, show.stderr):
        assert not any(c in out for c in RAW_CONTROLS), repr(out)
    assert "== r<U+001B>]52;c;aGVsbG8=<U+0007>one [gpt<U+001B>[31m-x]" in show.stdout
    assert "Q: Is it<U+009B>2J safe?" in show.stdout
    assert "Aspirin <U+202E>enilesab<U+202C> thins the blood" in show.stdout
    missing = cli("show", "--db", str(db), "--response", f"no{CLIPBOARD}such")   # echoed in the usage error
    assert missing.returncode == 2 and "\x1b" not in missing.stderr and "no<U+001B>]52" in missing.stderr

    report = tmp_path / "report.html"
    assert cli("report", "--db", str(db), "-o", str(report)).returncode == 0
    html = report.read_text(encoding="utf-8")
    assert "\u202e" not in html and "\u2066" not in html
    assert "Aspirin [U+202E]enilesab[U+202C] thins the blood" in html
