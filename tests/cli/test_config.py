"""One run-config builder: the CLI's flags and the app's Settings give the same RunConfig."""
from __future__ import annotations

import json
import os

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402
from PySide6.QtCore import QSettings  # noqa: E402

from sourcecheckup.cli import build_parser, main  # noqa: E402
from sourcecheckup.cli.common import run_config  # noqa: E402
from sourcecheckup.config import ConfigError, build_fetch_options, build_run_config  # noqa: E402
from ui.settings import AppSettings  # noqa: E402


def app_settings(tmp_path: Path) -> AppSettings:
    return AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))


def cli_config(*flags: str, batch: bool = False):
    return run_config(build_parser().parse_args(["audit", "answer.json", *flags]), batch=batch)


def source_pack(tmp_path: Path) -> Path:
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "page.html").write_text("<p>Flu is a viral infection.</p>", encoding="utf-8")
    (pack / "sources.json").write_text(json.dumps({"https://example.org/flu": "page.html"}), encoding="utf-8")
    return pack


@pytest.fixture
def no_env(monkeypatch):
    """The defaults as a user gets them: no CI opt-outs in the environment."""
    monkeypatch.delenv("SOURCECHECKUP_ARCHIVE", raising=False)
    monkeypatch.delenv("SOURCECHECKUP_BROWSER", raising=False)


def test_the_cli_and_a_fresh_app_build_the_same_default_run_config(tmp_path, no_env):
    cli = cli_config()
    app = app_settings(tmp_path).run_config()
    assert app.to_dict() == cli.to_dict()
    # the CLI's defaults are the truth: the browser when a page needs it, dead links looked up
    assert cli.fetch.browser == "auto" and cli.fetch.archive_lookup is True and cli.judges == ["builtin"]
    assert cli_config(batch=True).to_dict() == app_settings(tmp_path).run_config(batch=True).to_dict()
    assert cli_config(batch=True).fetch.respect_robots is True


def test_the_cli_and_the_app_build_the_same_run_config_from_the_same_choices(tmp_path, no_env):
    pack = source_pack(tmp_path)
    cli = cli_config("--judge", "keyword:0", "--judge", "builtin", "--consensus", "any", "--concurrency", "3",
                     "--parser", "builtin", "--browser", "always", "--no-archive", "--allow-host", "127.0.0.1",
                     "--sources", str(pack), batch=True)
    s = app_settings(tmp_path)
    s.judges = ["keyword:0", "builtin"]
    s.consensus = "any"
    s.concurrency = 3
    s.parser = "builtin"
    s.browser = "always"
    s.archive_lookup = False
    s.allow_hosts = ["127.0.0.1"]
    s.sources_dir = str(pack)
    s.sync()
    app = app_settings(tmp_path).run_config(batch=True)   # read back from the settings file
    assert app == cli
    assert app.fetch.sources_dir == pack.resolve() and app.fetch.archive_lookup is False
    assert app.fetch.allow_hosts == ("127.0.0.1",) and app.judges == ["keyword:0", "builtin"]


def test_the_settings_dialog_shows_the_clis_defaults(qtbot, tmp_path, no_env):
    from ui.dialogs import SettingsDialog

    dialog = SettingsDialog(app_settings(tmp_path))
    qtbot.addWidget(dialog)
    assert dialog.browser.currentText() == "auto"
    assert dialog.archive.isChecked()          # "Look dead links up in a web archive", on as in the CLI
    assert dialog.consensus.currentText() == "first" and dialog.concurrency.value() == 8


def test_the_archive_checkbox_turns_archive_lookups_off_for_the_run(qtbot, tmp_path, no_env):
    from ui.dialogs import SettingsDialog

    settings = app_settings(tmp_path)
    dialog = SettingsDialog(settings)
    qtbot.addWidget(dialog)
    dialog.archive.setChecked(False)
    dialog.save()
    assert app_settings(tmp_path).run_config().fetch.archive_lookup is False


def test_the_environment_opt_outs_apply_to_both_front_ends(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCECHECKUP_ARCHIVE", "off")
    monkeypatch.setenv("SOURCECHECKUP_BROWSER", "never")
    cli, app = cli_config(), app_settings(tmp_path).run_config()
    assert cli == app and cli.fetch.browser == "never" and cli.fetch.archive_lookup is False


def test_reading_archived_copies_without_lookups_is_refused(no_env):
    with pytest.raises(ConfigError) as exc:
        build_fetch_options(use_archive=True, archive_lookup=False)
    assert exc.value.option == "use_archive"
    with pytest.raises(ConfigError):
        build_run_config(judge_concurrency=0)
    with pytest.raises(ConfigError):
        build_run_config(consensus="most")


def test_the_cli_reports_a_refused_choice_as_bad_usage(tmp_path, capsys, no_env):
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"response": "Flu is viral [1].", "citations": ["https://example.org/flu"]}))
    db = str(tmp_path / "a.db")
    assert main(["audit", str(answer), "--db", db, "--use-archive", "--no-archive", "-q"]) == 2
    assert "--use-archive needs archive lookups; drop --no-archive" in capsys.readouterr().err
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["audit", str(answer), "--db", db, "--sources", str(empty), "-q"]) == 2
    assert f"--sources {empty}: no sources.json in that folder" in capsys.readouterr().err
    assert main(["audit", str(answer), "--db", db, "--concurrency", "0", "-q"]) == 2
    assert "--concurrency: judge calls at once must be at least 1" in capsys.readouterr().err
