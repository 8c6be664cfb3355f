"""Hostile inputs, round four (issue 42, items 8-10, 12, 14, 15, 17, 18, 20, 21, 23, 24): inputs that
loop, nest, inflate or carry terminal and bidi controls, and report targets that are not files.

Each test drives the real part: the real ingest readers on real files, a real .docx zip, the real CLI
in a subprocess on a real SQLite file, a real FIFO.
"""
from __future__ import annotations

import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from tests.support import cli as run_cli

REFUSED = "http://127.0.0.1:9/x"   # refused as unsafe at once: nothing leaves the machine


def cli(*args: str, timeout: float = 120, **kw) -> subprocess.CompletedProcess:
    return run_cli.sc(*args, timeout=timeout, in_process=not kw, **kw)


def good(i: int) -> str:
    return json.dumps({"response": f"Aspirin thins the blood in trial {i} [1].", "citations": [REFUSED],
                       "id": f"good{i}"})


# -------------------------------------------------------------- 8. a ChatGPT export whose tree loops

def _looping_export() -> list[dict]:
    def node(nid, parent, children, role, text):
        return {"id": nid, "parent": parent, "children": children,
                "message": {"id": nid, "author": {"role": role}, "content": {"content_type": "text", "parts": [text]}}}

    looping = {"title": "Loops", "mapping": {   # no current_node: the child walk from the root is taken
        "root": {"id": "root", "parent": None, "children": ["q"]},
        "q": node("q", "root", ["a"], "user", "Does aspirin thin the blood?"),
        "a": node("a", "q", ["q"], "assistant", "Yes, it does."),   # a's child is its own parent
    }}
    fine = {"title": "Fine", "current_node": "a2", "mapping": {
        "q2": node("q2", None, ["a2"], "user", "Is metformin first line?"),
        "a2": node("a2", "q2", [], "assistant", f"Metformin is first line ({REFUSED})."),
    }}
    return [looping, fine]


def test_a_chatgpt_export_whose_message_tree_loops_skips_that_conversation_naming_it(tmp_path):
    from sourcecheckup.ingest import load_path

    path = tmp_path / "conversations.json"
    path.write_text(json.dumps(_looping_export()))
    started = time.monotonic()
    result = load_path(path)
    assert time.monotonic() - started < 10          # it spun forever before
    assert [r.question for r in result.responses] == ["Is metformin first line?"]
    (skipped,) = result.skipped
    assert "conversation 1 (Loops)" in skipped.origin
    assert "loops" in skipped.problem and "'q'" in skipped.problem


# -------------------------------------------------------------- 9. JSON nested 990 deep

DEEP = '{"response": "Nested.", "x": ' + "[" * 990 + "]" * 990 + "}"


@pytest.mark.parametrize("name, text, where", [
    ("deep.jsonl", f"{good(1)}\n{DEEP}\n{good(2)}\n", "deep.jsonl:2"),
    ("deep.json", f"[{good(1)},\n{DEEP},\n{good(2)}]", "deep.json:2 (record 2)"),
])
def test_json_nested_past_the_cap_costs_that_record_only_in_the_real_cli(tmp_path, name, text, where):
    path = tmp_path / name
    path.write_text(text)
    p = cli("audit", str(path), "--db", str(tmp_path / "a.db"), "--no-archive", "--browser", "never", "-q")
    assert "Traceback" not in p.stderr and "RecursionError" not in p.stderr, p.stderr
    assert p.returncode == 0, p.stderr
    assert f"{where}: JSON nested more than 100 levels deep" in p.stderr and "MAX_JSON_DEPTH" in p.stderr
    shown = cli("show", "--db", str(tmp_path / "a.db"))
    assert "== good1" in shown.stdout and "== good2" in shown.stdout


def test_a_chat_export_with_one_conversation_nested_past_the_cap_reads_the_others(tmp_path):
    from sourcecheckup.ingest import load_path

    deep = {"title": "Deep", "mapping": {"n": {"id": "n", "parent": None, "children": [], "message": None}}}
    text = json.dumps([_looping_export()[1], deep]).replace('"message": null', '"message": ' + "[" * 995 + "]" * 995)
    path = tmp_path / "conversations.json"
    path.write_text(text)
    result = load_path(path)
    assert [r.question for r in result.responses] == ["Is metformin first line?"]
    (skipped,) = result.skipped
    assert "conversation 2" in skipped.origin and "MAX_JSON_DEPTH" in skipped.problem


# -------------------------------------------------------------- 10. a .docx zip bomb

def test_a_docx_zip_bomb_is_refused_from_its_directory_with_the_cap_named(tmp_path):
    import resource
    import zipfile

    from sourcecheckup.ingest import load_path
    from tests.support.documents import DOCUMENTS, build_docx

    folder = tmp_path / "answers"
    folder.mkdir()
    build_docx("af_answer", folder / "good.docx")
    parts = DOCUMENTS / "af_answer_docx"
    with zipfile.ZipFile(folder / "bomb.docx", "w", zipfile.ZIP_DEFLATED) as z:
        for part in sorted(p for p in parts.rglob("*") if p.is_file()):
            name = part.relative_to(parts).as_posix()
            text = part.read_bytes()
            if name != "word/document.xml":
                z.writestr(name, text)
                continue
            head, tail = text.split(b"?>", 1)   # 120 MB of comments after the XML declaration
            with z.open(name, "w", force_zip64=True) as out:
                out.write(head + b"?>")
                chunk = b"<!--" + b" " * (1 << 20) + b"-->"
                for _ in range(120):
                    out.write(chunk)
                out.write(tail)
    assert (folder / "bomb.docx").stat().st_size < 1_000_000
    assert load_path(folder / "good.docx").responses      # the same parts, without the padding, read
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    result = load_path(folder / "bomb.docx")
    grown_mb = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before) / 1024
    assert not result.responses
    (skipped,) = result.skipped
    assert skipped.origin == "bomb.docx"
    assert "over the cap of 100 MB (MAX_DOCX_UNCOMPRESSED)" in skipped.problem
    assert grown_mb < 60, grown_mb     # nothing inflated


# -------------------------------------------------------------- 12, 20. report targets that are not files

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


# -------------------------------------------------------------- 14, 23. terminal escapes and bidi controls

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


# -------------------------------------------------------------- 17. duplicate ids in linear time, each named

def test_twenty_thousand_answers_sharing_an_id_are_renamed_in_linear_time_and_named_in_a_note(tmp_path):
    from sourcecheckup.ingest import load_path
    from sourcecheckup.ingest.records import unique_ids
    from sourcecheckup.models import Response

    def timed(ids: list[str]) -> float:
        responses = [Response(id=i, text="Claim.", citations=(), origin=f"a.jsonl:{n}") for n, i in enumerate(ids, 1)]
        started = time.perf_counter()
        renamed = unique_ids(responses)
        assert len({r.id for r in renamed}) == len(ids)
        return time.perf_counter() - started

    # the best of two tries each: a pause of the machine (a build beside the suite) is not the code's time;
    # the bound is loose (0.13 s against 0.04 s here) and still far under the quadratic 31.9 s it caught
    distinct = min(timed([f"a{i}" for i in range(20_000)]) for _ in range(2))
    shared = min(timed(["a"] * 20_000) for _ in range(2))
    assert shared < 10 * distinct + 3.0, (shared, distinct)     # 31.9 s against 2.2 s before

    path = tmp_path / "dup.jsonl"
    path.write_text("\n".join(json.dumps({"response": f"Claim {i}.", "id": "same"}) for i in range(8)) + "\n")
    result = load_path(path)
    assert [r.id for r in result.responses][:3] == ["same", "same-2", "same-3"]
    note = next(n for n in result.notes if "repeat the id" in n)
    assert note.startswith("7 answer(s) repeat the id of an earlier answer")
    assert "dup.jsonl:2 'same' -> 'same-2'" in note and "and 2 more" in note


# -------------------------------------------------------------- 18. unclosed links in an answer

def test_an_answer_of_unclosed_links_is_read_in_linear_time_and_closed_links_still_cite():
    from sourcecheckup.ingest import load_text

    hostile = ('<a href="x">' * 16_600)[:199_000]
    started = time.perf_counter()
    (response,) = load_text(json.dumps({"response": hostile, "citations": ["https://a.example/"]})).responses
    assert time.perf_counter() - started < 3          # 17.6 s before (a lazy (.*?)</a> per unclosed <a)
    text = ('Use <a href="https://a.example/nice">NICE NG136</a> <a href="y">unclosed and '
            '<a href="https://b.example/who">the WHO</a>.')
    (response,) = load_text(json.dumps({"response": text})).responses
    assert response.citations == ("https://a.example/nice", "https://b.example/who")


# -------------------------------------------------------------- 15. a table of very many columns

def test_a_table_of_100000_columns_keeps_50_as_metadata_and_its_missing_column_error_is_short(tmp_path):
    from sourcecheckup.ingest import IngestError, load_path

    MAX_EXTRA_FIELDS = 50   # noqa: N806 - the cap of sourcecheckup.ingest.records, as the docs give it
    n = 100_000
    header = "response,citations," + ",".join(f"c{i}" for i in range(n))
    rows = [f"Aspirin thins the blood {k} [1].,{REFUSED}," + ",".join("v" * 3000 if i == 0 else "v" for i in range(n))
            for k in range(3)]
    wide = tmp_path / "wide.csv"
    wide.write_text("\n".join([header, *rows]) + "\n")
    result = load_path(wide)
    assert len(result.responses) == 3
    for response in result.responses:
        assert len(response.extra) == MAX_EXTRA_FIELDS
        assert len(response.extra["c0"]) == 2001       # cut to MAX_EXTRA_VALUE_CHARS
    note = next(n for n in result.notes if "MAX_EXTRA_FIELDS" in n)
    assert f"{3 * (n - MAX_EXTRA_FIELDS):,} metadata field(s) left out in 3 answer(s)" in note

    unnamed = tmp_path / "unnamed.csv"
    unnamed.write_text("\n".join([header.replace("response,", "reply,", 1), *rows]) + "\n")
    with pytest.raises(IngestError) as caught:
        load_path(unnamed)
    message = str(caught.value)
    assert len(message) < 1000, len(message)           # 8.9 MB for a million columns before
    assert "has no column 'response' (its columns: reply, citations, c0," in message
    assert "and 99,982 more" in message


# -------------------------------------------------------------- 21. an unknown label; a file not yet a database

def test_a_verdict_row_with_an_unknown_label_reads_as_unreadable_in_runs_and_show(tmp_path):
    import sqlite3

    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "a.txt").write_text("Aspirin thins the blood. It is an antiplatelet drug.")
    (pack / "sources.json").write_text(json.dumps({"https://a.example/x": "a.txt"}))
    answers = tmp_path / "a.jsonl"
    answers.write_text(json.dumps({"response": "Aspirin thins the blood [1].", "citations": ["https://a.example/x"],
                                   "id": "v1"}) + "\n")
    db = tmp_path / "a.db"
    p = cli("audit", str(answers), "--db", str(db), "--sources", str(pack), "--no-archive", "--browser", "never",
            "-q", "--no-references")
    assert p.returncode == 0, p.stderr
    with sqlite3.connect(db) as conn:
        assert conn.execute("UPDATE verdicts SET label = 'bogus'").rowcount == 1
    for command in ("runs", "show"):
        p = cli(command, "--db", str(db))
        assert p.returncode == 0 and "Traceback" not in p.stderr, p.stderr
        assert "1 verdict row(s) could not be read (unreadable verdict row: its label 'bogus'" in p.stderr
    assert "judge_error" in cli("show", "--db", str(db)).stdout


@pytest.mark.parametrize("content", [b"", b"sqlite of another program"])
def test_a_reading_command_on_a_file_not_yet_a_database_says_so_and_leaves_it_untouched(tmp_path, content):
    import sqlite3

    path = tmp_path / "other.db"
    if content:
        with sqlite3.connect(path) as conn:   # someone else's SQLite database
            conn.execute("CREATE TABLE notes (text TEXT)")
        conn.close()
    else:
        path.write_bytes(b"")
    before = path.read_bytes()
    for args in (("runs",), ("show",), ("report", "-o", str(tmp_path / "r.json"))):
        p = cli(*args, "--db", str(path))
        assert p.returncode == 2 and "Traceback" not in p.stderr, p.stderr
        assert f"{path} is not a SourceCheckup database" in p.stderr and "left as it is" in p.stderr
    assert path.read_bytes() == before
    assert sorted(f.name for f in tmp_path.iterdir()) == ["other.db"]


# -------------------------------------------------------------- 24. a lookalike host

def test_a_lookalike_host_is_shown_with_its_punycode_and_a_warning_in_show_and_the_html_report(tmp_path):
    from sourcecheckup.urls import host_note

    lookalike = "https://www.nh\u0455.uk/conditions/aspirin/"     # a Cyrillic ѕ
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "a.txt").write_text("Aspirin thins the blood.")
    (pack / "sources.json").write_text(json.dumps({lookalike: "a.txt"}))
    answers = tmp_path / "a.jsonl"
    answers.write_text(json.dumps({"response": "Aspirin thins the blood [1].", "citations": [lookalike]}) + "\n")
    db = tmp_path / "a.db"
    p = cli("audit", str(answers), "--db", str(db), "--sources", str(pack), "--no-archive", "--browser", "never",
            "-q", "--no-references")
    assert p.returncode == 0, p.stderr
    warning = "host www.xn--nh-foc.uk; ⚠ lookalike host: 'nh\u0455' mixes Cyrillic and Latin letters"
    assert f"S1: {lookalike} [{warning}]" in cli("show", "--db", str(db)).stdout
    report = tmp_path / "r.html"
    assert cli("report", "--db", str(db), "-o", str(report)).returncode == 0
    assert warning.replace("'", "&#39;") in report.read_text(encoding="utf-8")
    assert host_note("www.nhs.uk") == ""                                      # ASCII: nothing to add
    assert host_note("пример.рф") == "host xn--e1afmkfd.xn--p1ai"             # one script: punycode, no warning


def test_the_apps_domain_column_shows_a_lookalike_hosts_punycode_and_warning():
    pytest.importorskip("PySide6")
    from PySide6.QtCore import Qt

    from sourcecheckup.views.sources import SourceSummary
    from ui.models import SourcesModel

    model = SourcesModel()
    model.set_rows([SourceSummary(url, domain, "", None, "not fetched yet", "", (), None, None)
                    for url, domain in (("https://nh\u0455.uk/a", "nh\u0455.uk"), ("https://nhs.uk/a", "nhs.uk"))])
    column = [name for name, _ in SourcesModel.columns].index("Domain")
    shown = [model.data(model.index(row, column), Qt.ItemDataRole.DisplayRole) for row in (0, 1)]
    assert shown == ["nh\u0455.uk [host xn--nh-foc.uk; ⚠ lookalike host: 'nh\u0455' mixes Cyrillic and Latin letters]",
                     "nhs.uk"]
