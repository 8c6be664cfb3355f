"""Downloaded checkers: the catalogue, pull through a fake hub on 127.0.0.1 (HF_ENDPOINT), resume,
cancel, a corrupt file refused, import from a folder, the pulled model judging offline, and `models list`
naming the command that gets each checker."""
from __future__ import annotations

import hashlib
import json
import threading
from pathlib import Path

import pytest

from sourcecheckup.cli import main
from sourcecheckup.evidence import SourceText
from sourcecheckup.judges import make_judge, models_hub
from sourcecheckup.judges.models_hub import ModelHubError, PullCancelled
from sourcecheckup.models import Label
from tests.support.fake_hub import TINY_REPO

REPO = TINY_REPO   # what the `hub` fixture serves
PAGE = SourceText.from_text("Iron overload is treated by weekly phlebotomy. Most patients do well.",
                            url="https://example.org/hemochromatosis")
STATEMENT = "Weekly blood removal treats iron overload."


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 4096)   # several progress steps per file


def weights(model_dir: Path) -> Path:
    return next(model_dir.glob("*.safetensors"))


def test_models_list_shows_the_catalogue_with_accuracy_citation_and_licence(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCECHECKUP_MODELS", str(tmp_path / "models"))
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    for name in ("bespoke-minicheck-7b", "minicheck-flan-t5-large", "minicheck-roberta-large",
                 "minicheck-deberta-v3-large", "deberta-v3-large-nli"):
        assert name in out
    assert "77.4% balanced accuracy on LLM-AggreFact" in out
    assert "Tang, Laban, Durrett" in out and "EMNLP 2024" in out
    assert "CC BY-NC 4.0 — NON-COMMERCIAL use only" in out
    entries = {e.name: e for e in models_hub.catalogue()}
    assert entries["bespoke-minicheck-7b"].licence_warning and entries["minicheck-roberta-large"].licence_warning is None
    assert {e.kind for e in entries.values()} == {"checker", "seq2seq", "classifier"}


def test_pull_reports_progress_then_the_model_judges_offline(hub, model_dir, tmp_path, small_chunks, monkeypatch):
    seen: list[models_hub.PullProgress] = []
    model = models_hub.pull(REPO, progress=seen.append)

    total = sum(f.stat().st_size for f in model_dir.iterdir() if f.is_file())
    assert model.name == "tiny-checker" and model.path == tmp_path / "models" / "tiny-checker"
    assert seen[-1].done_bytes == seen[-1].total_bytes == total
    assert [p.done_bytes for p in seen] == sorted(p.done_bytes for p in seen)
    assert len(seen) > 5       # byte progress, not one step per file
    assert hashlib.sha256(weights(model.path).read_bytes()).hexdigest() == \
        hashlib.sha256(weights(model_dir).read_bytes()).hexdigest()
    assert [m.name for m in models_hub.installed()] == ["tiny-checker"]

    hub.close()                                  # no hub any more: the judge must not need one
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    judge = make_judge("local:tiny-checker")
    assert judge.id == "local:tiny-checker"

    import asyncio

    verdict = asyncio.run(judge.verify(STATEMENT, PAGE))
    assert verdict.label is Label.SUPPORTED
    assert verdict.score == pytest.approx(1 / (1 + pytest.importorskip("math").exp(-3.0)), abs=1e-4)
    assert verdict.quote == "Iron overload is treated by weekly phlebotomy." and verdict.quote_found


def test_a_cancelled_pull_keeps_its_bytes_and_the_next_pull_resumes_with_a_range_request(hub, model_dir, small_chunks):
    name = weights(model_dir).name
    size = weights(model_dir).stat().st_size
    cancel, release = threading.Event(), threading.Event()
    hub.hold[name] = (size // 2, release)     # the hub sends half the weights, then waits

    part = models_hub.models_dir() / ".partial" / "tiny-checker" / f"{name}.part"

    def progress(p: models_hub.PullProgress) -> None:
        if p.file == name and part.is_file() and part.stat().st_size > 0:
            cancel.set()       # weights are on disk and the rest is held back: cancel mid-file, then let the hub go on
            release.set()

    with pytest.raises(PullCancelled, match="pull again to resume"):
        models_hub.pull(REPO, progress=progress, cancel=cancel)
    assert models_hub.installed() == [] and models_hub.installed_path("tiny-checker") is None
    kept = (models_hub.models_dir() / ".partial" / "tiny-checker" / f"{name}.part").stat().st_size
    assert 0 < kept < size

    model = models_hub.pull(REPO)
    assert hub.file_gets(name) == ["", f"bytes={kept}-"]          # the second GET asks only for the rest
    assert weights(model.path).read_bytes() == weights(model_dir).read_bytes()
    assert hub.file_gets("config.json") == [""]                   # a finished file is not fetched again


def test_a_connection_dropped_mid_file_is_resumed_within_the_pull(hub, model_dir, small_chunks):
    name = weights(model_dir).name
    hub.drop_after[name] = 3 * 4096 + 100     # three whole chunks reach the file, then the line drops
    model = models_hub.pull(REPO)
    assert hub.file_gets(name) == ["", f"bytes={3 * 4096}-"]
    assert weights(model.path).read_bytes() == weights(model_dir).read_bytes()


@pytest.mark.parametrize("bad, check", [("model.safetensors", "sha256"), ("config.json", "git blob id")])
def test_a_corrupt_file_is_refused_and_nothing_is_installed(hub, model_dir, bad, check):
    bad = weights(model_dir).name if bad.endswith(".safetensors") else bad
    hub.corrupt.add(bad)
    with pytest.raises(ModelHubError, match=f"{bad} of {REPO} is corrupt \\({check}"):
        models_hub.pull(REPO)
    assert models_hub.installed() == []
    partial = models_hub.models_dir() / ".partial" / "tiny-checker"
    assert not (partial / bad).exists() and not (partial / f"{bad}.part").exists()

    hub.corrupt.clear()                        # the next pull fetches it again and succeeds
    assert models_hub.pull(REPO).name == "tiny-checker"


def test_not_enough_disk_space_stops_the_pull_before_any_download(hub, monkeypatch):
    import shutil
    from collections import namedtuple

    usage = namedtuple("usage", "total used free")
    monkeypatch.setattr(models_hub.shutil, "disk_usage", lambda _: usage(10**9, 10**9 - 1000, 1000))
    with pytest.raises(ModelHubError, match="not enough disk space.*is free"):
        models_hub.pull(REPO)
    assert [p for m, p, _ in hub.requests if "/resolve/" in p] == []
    assert shutil is not None


def test_cli_pull_prints_a_non_commercial_licence_before_downloading(hub, capsys, monkeypatch):
    entry = models_hub.CatalogueEntry(
        name="tiny-nc", repo=REPO, kind="classifier", via="huggingface", parameters="1M", size="1 MB",
        licence="CC BY-NC 4.0", commercial_use=False, hardware="any", accuracy="n/a", citation="test",
        judge="local:tiny-nc")
    monkeypatch.setattr(models_hub, "catalogue", lambda path=None: [entry])
    assert main(["models", "pull", "tiny-nc", "-q"]) == 0
    captured = capsys.readouterr()
    assert captured.err.startswith("Licence: tiny-nc is licensed CC BY-NC 4.0: it may not be used commercially")
    assert "judge with: --judge local:tiny-nc" in captured.out
    assert main(["models", "list"]) == 0
    assert "tiny-nc  [installed]" in capsys.readouterr().out


def test_cli_pull_of_an_unknown_repo_fails_with_the_hub_message(hub, capsys):
    assert main(["models", "pull", "lab/no-such-model", "-q"]) == 1
    assert "could not read lab/no-such-model on http://127.0.0.1" in capsys.readouterr().err


def test_import_from_a_folder_then_judge_then_remove(model_dir, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("SOURCECHECKUP_MODELS", str(tmp_path / "models"))
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")     # nothing listens: an import needs no network
    assert main(["models", "import", str(model_dir), "--name", "offline-checker"]) == 0
    assert "judge with: --judge local:offline-checker" in capsys.readouterr().out
    manifest = json.loads((tmp_path / "models" / "offline-checker" / models_hub.MANIFEST).read_text())
    assert manifest["source"] == "folder" and any(f["path"] == "config.json" for f in manifest["files"])

    import asyncio

    verdict = asyncio.run(make_judge("local:offline-checker").verify(STATEMENT, PAGE))
    assert verdict.label is Label.SUPPORTED

    assert main(["models", "import", str(model_dir), "--name", "offline-checker"]) == 2
    assert "already installed" in capsys.readouterr().err
    assert main(["models", "remove", "offline-checker"]) == 0
    assert not (tmp_path / "models" / "offline-checker").exists()
    assert main(["models", "remove", "offline-checker"]) == 2
    with pytest.raises(Exception, match="not found"):
        make_judge("local:offline-checker")


def test_an_ollama_model_is_not_pulled_here(tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCECHECKUP_MODELS", str(tmp_path / "models"))
    with pytest.raises(ModelHubError, match="ollama pull bespoke-minicheck"):
        models_hub.pull("bespoke-minicheck-7b")


def test_pull_with_no_internet_says_what_to_do_in_one_line(tmp_path):
    import socket

    from tests.cli.test_cli import sc

    with socket.socket() as s:          # a port nothing listens on: refused, as an offline machine is
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = sc("models", "pull", "minicheck-roberta-large",
           env={"HF_ENDPOINT": f"http://127.0.0.1:{port}", models_hub.MODELS_ENV: str(tmp_path / "models")})
    assert p.returncode == 1
    assert "Traceback" not in p.stderr and "ConnectError" not in p.stderr
    (line,) = [ln for ln in p.stderr.splitlines() if ln.startswith("sourcecheckup: error")]
    assert "could not reach" in line and "models import DIR --name NAME" in line and "HF_ENDPOINT" in line


def test_models_list_names_the_command_that_gets_each_checker(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCECHECKUP_MODELS", str(tmp_path / "models"))
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert "[pull]" not in out
    assert "minicheck-roberta-large  [get it: sourcecheckup models pull minicheck-roberta-large]" in out
    assert "bespoke-minicheck-7b  [via Ollama: ollama pull bespoke-minicheck]" in out
