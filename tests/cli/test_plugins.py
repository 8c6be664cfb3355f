"""Plugins load once, from $SOURCECHECKUP_PLUGINS and from entry points (group ``sourcecheckup``),
and what they register is usable from the real CLI."""
from __future__ import annotations

import asyncio
import json
import textwrap
from pathlib import Path

import pytest

from sourcecheckup import plugins
from sourcecheckup.cli import main
from sourcecheckup.models import Response
from sourcecheckup.parse import make_parser
from sourcecheckup.registry import Registry

HOOK_PLUGIN = '''
"""A plugin that registers a judge through the register_judges hook."""
from sourcecheckup.judges.base import BaseJudge
from sourcecheckup.models import Label, Verdict

HOOK_CALLS = []


class ShoutingJudge(BaseJudge):
    """Supported when the statement is written in capitals: easy to tell apart from any real judge."""
    prompt_version = "shout-1"

    def __init__(self, argument):
        self.id = "shout:" + argument

    async def verify(self, statement, source):
        label = Label.SUPPORTED if statement.isupper() else Label.NOT_SUPPORTED
        return Verdict(label=label, score=1.0, rationale="capitals" if statement.isupper() else "lower case",
                       judge_id=self.id, prompt_version=self.prompt_version)


def register_judges(register):
    HOOK_CALLS.append("judges")
    register("shout", lambda argument, **options: ShoutingJudge(argument),
             check=lambda spec, argument, env: None if argument else "shout needs a word: shout:WORD")
'''

ENTRY_POINT_PLUGIN = '''
"""A plugin published as an entry point: it registers a statement parser."""
from sourcecheckup.models import Statement


class LineParser:
    id = "lines"
    version = "lines-1"

    def __init__(self, argument):
        self.argument = argument

    async def parse(self, response):
        return [Statement(index=i, text=line.strip())
                for i, line in enumerate(response.text.splitlines()) if line.strip()]


def register_parsers(register):
    register("lines", lambda argument, **options: LineParser(argument))
'''


def write_module(folder: Path, name: str, source: str) -> None:
    (folder / f"{name}.py").write_text(textwrap.dedent(source), encoding="utf-8")


@pytest.fixture
def fresh(monkeypatch, tmp_path):
    """A process in which no plugin has been loaded yet, with tmp_path importable."""
    monkeypatch.setattr(plugins, "_loaded", {})
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delenv(plugins.PLUGINS_ENV, raising=False)
    return tmp_path


def test_a_plugin_named_in_the_environment_gives_the_cli_a_judge(fresh, monkeypatch, capsys):
    write_module(fresh, "scu_shout_plugin", HOOK_PLUGIN)
    monkeypatch.setenv(plugins.PLUGINS_ENV, "scu_shout_plugin")
    pairs = fresh / "pairs.jsonl"
    pairs.write_text('{"id": "a", "statement": "FLU IS VIRAL", "source": "Flu is viral."}\n'
                     '{"id": "b", "statement": "flu is bacterial", "source": "Flu is viral."}\n')
    out = fresh / "out.jsonl"
    assert main(["verify-pairs", str(pairs), "--judge", "shout:loud", "-o", str(out), "-q"]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [(r["id"], r["label"], r["rationale"]) for r in rows] == [
        ("a", "supported", "capitals"), ("b", "not_supported", "lower case")]


def test_plugins_load_once(fresh, monkeypatch):
    write_module(fresh, "scu_once_plugin", HOOK_PLUGIN)
    monkeypatch.setenv(plugins.PLUGINS_ENV, " scu_once_plugin , ")
    assert plugins.load_plugins() == ["scu_once_plugin"]
    assert plugins.load_plugins() == []          # the CLI and the app may both call it
    import scu_once_plugin  # type: ignore[import-not-found]

    assert scu_once_plugin.HOOK_CALLS == ["judges"]
    assert plugins.loaded_plugins() == ["scu_once_plugin"]


def test_an_entry_point_plugin_registers_a_parser(fresh):
    write_module(fresh, "scu_lines_plugin", ENTRY_POINT_PLUGIN)
    dist = fresh / "scu_lines_plugin-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: scu-lines-plugin\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text("[sourcecheckup]\nlines = scu_lines_plugin\n")
    loaded = plugins.load_plugins()
    assert loaded == ["entry point lines (scu_lines_plugin)"]
    parser = make_parser("lines:any")
    statements = asyncio.run(parser.parse(Response(id="r1", text="Flu is viral.\nRest helps.")))
    assert [s.text for s in statements] == ["Flu is viral.", "Rest helps."]


def test_a_plugin_that_cannot_be_imported_is_bad_usage(fresh, monkeypatch, capsys):
    monkeypatch.setenv(plugins.PLUGINS_ENV, "scu_no_such_plugin")
    pairs = fresh / "pairs.jsonl"
    pairs.write_text('{"id": "a", "statement": "x", "source": "y"}\n')
    assert main(["verify-pairs", str(pairs)]) == 2
    assert "$SOURCECHECKUP_PLUGINS names 'scu_no_such_plugin', which cannot be imported" in capsys.readouterr().err


def test_a_failing_hook_names_its_plugin(fresh, monkeypatch):
    write_module(fresh, "scu_broken_plugin", "def register_judges(register):\n    raise RuntimeError('no')\n")
    monkeypatch.setenv(plugins.PLUGINS_ENV, "scu_broken_plugin")
    with pytest.raises(plugins.PluginError, match="plugin 'scu_broken_plugin' failed in register_judges"):
        plugins.load_plugins()


def test_every_command_loads_the_plugins_before_it_runs(fresh, monkeypatch, capsys):
    from sourcecheckup.store import Store

    write_module(fresh, "scu_runs_plugin", HOOK_PLUGIN)
    monkeypatch.setenv(plugins.PLUGINS_ENV, "scu_runs_plugin")
    Store(fresh / "empty.db").close()
    assert main(["runs", "--db", str(fresh / "empty.db")]) == 0
    assert main(["runs", "--db", str(fresh / "empty.db")]) == 0
    import scu_runs_plugin  # type: ignore[import-not-found]

    assert scu_runs_plugin.HOOK_CALLS == ["judges"]      # loaded by the first command, once
    assert "no runs in" in capsys.readouterr().out


def test_a_plugin_adds_a_report_format_the_cli_writes(fresh, monkeypatch, capsys):
    from sourcecheckup import report
    from sourcecheckup.store import Store
    from tests.support.synth_run import synthesize_run

    write_module(fresh, "scu_md_report_plugin", '''
        def write(report, path):
            m = report["metrics"]["statement_support"]
            path.write_text(f"# {report['run']['id']}\\nstatement support {m['k']}/{m['n']}\\n")

        def register_report_writers(register):
            register("md", write)
    ''')
    monkeypatch.setattr(report, "_WRITERS", Registry("report format"))
    monkeypatch.setenv(plugins.PLUGINS_ENV, "scu_md_report_plugin")
    db = fresh / "audits.db"
    with Store(db) as st:
        run_id = synthesize_run(st, responses=3)
    out = fresh / "summary.md"
    assert main(["report", run_id, "--db", str(db), "-o", str(out)]) == 0, capsys.readouterr().err
    assert out.read_text().startswith(f"# {run_id}\nstatement support ")
    with pytest.raises(ValueError, match="built in"):
        report.register_report_writer("csv", lambda r, p: None)


def test_a_plugin_judge_without_optional_members_gets_the_documented_defaults():
    from sourcecheckup.judges.base import BaseJudge, JudgeTraits, judge_traits
    from sourcecheckup.judges.builtin import BuiltinJudge
    from sourcecheckup.parse.base import ParserTraits, parser_traits

    class Bare:   # meets the protocol, says nothing more
        id, prompt_version = "bare", "v1"

    assert judge_traits(Bare()) == JudgeTraits()
    assert judge_traits(BaseJudge()).per_source_batching is False
    builtin = judge_traits(BuiltinJudge())
    assert builtin.per_source_batching and builtin.takes_vector_cache and builtin.provenance is not None
    assert parser_traits(Bare()) == ParserTraits()


def test_a_registry_imports_a_lazy_entry_once_and_keeps_the_order_of_registration():
    reg = Registry("thing", {"b": ("json", "dumps")})
    reg.register("a", len)
    assert list(reg) == ["b", "a"] and reg.names() == ["a", "b"]
    import json

    assert reg.get("b") is json.dumps and reg.get("a") is len and reg.get("c") is None
    assert "b" in reg and "c" not in reg


def test_a_plugin_judge_spec_is_checked_by_the_check_registered_beside_its_factory(fresh, monkeypatch):
    from sourcecheckup.judges.base import validate_judge_spec

    write_module(fresh, "scu_shout_checked", HOOK_PLUGIN)
    monkeypatch.setenv(plugins.PLUGINS_ENV, "scu_shout_checked")
    plugins.load_plugins()
    assert validate_judge_spec("shout:loud") is None
    assert validate_judge_spec("shout") == "shout needs a word: shout:WORD"
    assert validate_judge_spec("builtin:2") == "builtin judge: threshold 2 must lie between 0 and 1"
    assert "unknown judge" in validate_judge_spec("nosuch:x")
