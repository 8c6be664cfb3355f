"""How the command line meets a user's mistakes: an unknown option with the nearest one, help screens
that explain every option, commands that only read never create a database, a refused audit leaves
none, and a closed pipe ends quietly."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys

import pytest

from sourcecheckup.cli import build_parser, main
from sourcecheckup.store import default_db_path
from tests.support.paths import ROOT


def test_unknown_option_shows_the_commands_usage_and_the_nearest_option(capsys) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["audit", "answers.jsonl", "--allow-hosts", "127.0.0.1"])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: sourcecheckup audit ")
    assert "unrecognized arguments: --allow-hosts" in err
    assert "did you mean --allow-host?" in err


PROGRESS_COMMANDS = {"audit", "cleanup", "verify-pairs", "demo", "questions", "answer", "benchmark", "report"}


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


def test_a_refused_audit_leaves_no_empty_database(tmp_path):
    from tests.cli.test_cli import sc

    answer = tmp_path / "a.md"
    answer.write_text("Adults can take up to 4 g of paracetamol a day (https://example.org/p).\n", encoding="utf-8")
    for args in (("audit", str(tmp_path / "nothere.md")), ("audit", str(answer), "--judge", "gpt4")):
        db = tmp_path / "err.db"
        p = sc(*args, "--db", str(db))
        assert p.returncode == 2, p.stderr
        assert not db.exists(), f"{args} left {db} behind"


def test_a_closed_pipe_ends_quietly(audited) -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    proc = subprocess.Popen([sys.executable, "-m", "sourcecheckup", "runs", "--json", "--db", str(audited)],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()                                   # `| head -0`: the reader is gone before a byte is written
    stderr = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "Traceback" not in stderr and "BrokenPipeError" not in stderr and stderr == ""
    assert proc.returncode == 141
