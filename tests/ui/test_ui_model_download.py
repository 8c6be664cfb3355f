"""Settings → Judges → Download…: the catalogue with licence, hardware and published accuracy; a pull
from a fake hub on 127.0.0.1 (HF_ENDPOINT) off the GUI thread with a progress bar to 100%; Cancel
mid-file and Resume; a non-commercial licence asked before any byte is fetched; import from a folder;
Remove; "Use as judge" putting local:NAME in the Judges field; and Download with no internet saying what
happened and what to do."""
from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest
from PySide6.QtWidgets import QMessageBox

from sourcecheckup.judges import models_hub
from tests.support.app import WAIT_MS
from tests.support.fake_hub import TINY_REPO
from ui.dialogs import SettingsDialog
from ui.model_download import ModelDownloadDialog

REPO = TINY_REPO   # what the `hub` fixture serves


def entry(name: str, licence: str, commercial_use: bool | None) -> models_hub.CatalogueEntry:
    return models_hub.CatalogueEntry(
        name=name, repo=REPO, kind="classifier", via="huggingface", parameters="1M", size="about 1 MB",
        licence=licence, commercial_use=commercial_use, hardware="any CPU", accuracy="90% on a test set",
        citation="the test's own model", judge=f"local:{name}")


@pytest.fixture
def hub(hub, monkeypatch: pytest.MonkeyPatch):
    """The shared fake hub (tests/conftest.py), with small download chunks and two test checkers in the
    catalogue."""
    from huggingface_hub import constants

    monkeypatch.setattr(constants, "DOWNLOAD_CHUNK_SIZE", 4096)  # many progress steps per file
    real = models_hub.catalogue()
    extra = [entry("tiny-checker", "MIT", True), entry("tiny-nc", "CC BY-NC 4.0", False)]
    monkeypatch.setattr(models_hub, "catalogue", lambda path=None: real + extra)
    return hub


@pytest.fixture
def pull_threads(monkeypatch: pytest.MonkeyPatch) -> list[threading.Thread]:
    """The thread each pull ran on (the real pull, only watched)."""
    seen: list[threading.Thread] = []
    real = models_hub.pull

    def watched(*args, **kwargs):
        seen.append(threading.current_thread())
        return real(*args, **kwargs)

    monkeypatch.setattr(models_hub, "pull", watched)
    return seen


def open_downloads(qtbot, settings) -> tuple[SettingsDialog, ModelDownloadDialog]:
    settings_dialog = SettingsDialog(settings)
    qtbot.addWidget(settings_dialog)
    settings_dialog.show()
    settings_dialog.judge_guide.download_button.click()
    dialog = settings_dialog.judge_guide.download_dialog
    assert dialog is not None
    qtbot.waitUntil(dialog.isVisible, timeout=WAIT_MS)
    return settings_dialog, dialog


def row_texts(dialog: ModelDownloadDialog, name: str) -> list[str]:
    r = [row.name for row in dialog.model.rows].index(name)
    return [dialog.model.index(r, c).data() for c in range(dialog.model.columnCount())]


def weights(folder: Path) -> Path:
    return next(folder.glob("*.safetensors"))


def test_download_runs_off_the_gui_thread_to_100_percent_and_use_as_judge_fills_the_judges_field(
        qtbot, settings, hub, model_dir, pull_threads):
    settings_dialog, dialog = open_downloads(qtbot, settings)
    # the real catalogue is shown with size, licence (non-commercial marked), hardware and accuracy
    assert row_texts(dialog, "bespoke-minicheck-7b")[1:4] == [
        "via Ollama", "about 4-5 GB in Ollama (quantised); 15 GB as full weights", "⚠ non-commercial: CC BY-NC 4.0"]
    assert "77.4% balanced accuracy on LLM-AggreFact" in row_texts(dialog, "bespoke-minicheck-7b")[5]
    assert row_texts(dialog, "minicheck-roberta-large")[3:5] == ["MIT", "CPU works; any GPU with 2 GB is much faster"]
    dialog.select("bespoke-minicheck-7b")
    assert not dialog.download_button.isEnabled() and "ollama pull bespoke-minicheck" in dialog.details.text()

    dialog.select("tiny-checker")
    assert row_texts(dialog, "tiny-checker")[1] == "not installed" and not dialog.use_button.isEnabled()
    values: list[int] = []
    dialog.progress_bar.valueChanged.connect(values.append)
    with qtbot.waitSignal(dialog.job_finished, timeout=WAIT_MS):
        dialog.download_button.click()
        assert dialog.licence_box is None          # an MIT model is not asked about
        assert dialog.cancel_button.isEnabled() and not dialog.download_button.isEnabled()

    assert pull_threads and threading.main_thread() not in pull_threads
    total = sum(f.stat().st_size for f in model_dir.iterdir() if f.is_file())
    assert dialog.last_progress is not None and dialog.last_progress.done_bytes == total
    assert dialog.progress_bar.value() == 100 and values == sorted(values) and len(values) > 5
    assert "tiny-checker is installed and works offline" in dialog.status.text()
    assert row_texts(dialog, "tiny-checker")[1] == "installed"
    assert dialog.selected().name == "tiny-checker" and dialog.use_button.isEnabled()
    assert weights(models_hub.installed_path("tiny-checker")).read_bytes() == weights(model_dir).read_bytes()

    dialog.use_button.click()
    assert settings_dialog.judges.text() == "local:tiny-checker, keyword:0"
    settings_dialog.save()
    assert settings.judges == ["local:tiny-checker", "keyword:0"]


def test_cancel_mid_download_keeps_the_bytes_and_resume_fetches_only_the_rest(qtbot, settings, hub, model_dir):
    name, size = weights(model_dir).name, weights(model_dir).stat().st_size
    release = threading.Event()
    hub.hold[name] = (size // 2, release)   # the hub sends half the weights, then holds until the click has landed
    _, dialog = open_downloads(qtbot, settings)
    dialog.select("tiny-checker")
    with qtbot.waitSignal(dialog.job_finished, timeout=WAIT_MS):
        dialog.download_button.click()
        part = models_hub.models_dir() / ".partial" / "tiny-checker" / f"{name}.part"
        # weights are on disk while the hub holds the rest back: the download is truly mid-file
        qtbot.waitUntil(lambda: part.is_file() and part.stat().st_size > 0, timeout=WAIT_MS)
        dialog.cancel_button.click()
        release.set()
    assert dialog.status.text().startswith("Cancelled: the download was cancelled; pull again to resume")
    assert 0 < dialog.progress_bar.value() < 100
    assert models_hub.installed() == []
    kept = (models_hub.models_dir() / ".partial" / "tiny-checker" / f"{name}.part").stat().st_size
    assert 0 < kept < size
    assert row_texts(dialog, "tiny-checker")[1] == "partly downloaded"
    assert dialog.download_button.text() == "Resume download" and not dialog.use_button.isEnabled()

    with qtbot.waitSignal(dialog.job_finished, timeout=WAIT_MS):
        dialog.download_button.click()
    assert hub.file_gets(name) == ["", f"bytes={kept}-"]      # the resumed GET asks only for the rest
    assert dialog.progress_bar.value() == 100 and row_texts(dialog, "tiny-checker")[1] == "installed"


def test_a_non_commercial_licence_is_shown_and_confirmed_before_any_download(qtbot, settings, hub):
    _, dialog = open_downloads(qtbot, settings)
    dialog.select("tiny-nc")
    assert row_texts(dialog, "tiny-nc")[3] == "⚠ non-commercial: CC BY-NC 4.0"
    dialog.download_button.click()
    box = dialog.licence_box
    assert box is not None
    qtbot.waitUntil(box.isVisible, timeout=WAIT_MS)
    assert box.text().startswith("tiny-nc is licensed CC BY-NC 4.0: it may not be used commercially")
    assert dialog.job is None and hub.requests == []      # nothing is fetched while the user reads

    box.button(QMessageBox.StandardButton.Cancel).click()
    assert dialog.job is None and hub.requests == [] and "tiny-nc was not downloaded" in dialog.status.text()

    dialog.download_button.click()
    accept = next(b for b in dialog.licence_box.buttons() if b.text() == "Download")
    with qtbot.waitSignal(dialog.job_finished, timeout=WAIT_MS):
        accept.click()
    assert [m.name for m in models_hub.installed()] == ["tiny-nc"]
    assert row_texts(dialog, "tiny-nc")[1] == "installed"


def test_import_from_a_folder_then_use_as_judge_then_remove(qtbot, settings, model_dir, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCECHECKUP_MODELS", str(tmp_path / "models"))
    monkeypatch.setenv("HF_ENDPOINT", "http://127.0.0.1:9")    # nothing listens: an import needs no network
    settings_dialog, dialog = open_downloads(qtbot, settings)
    with qtbot.waitSignal(dialog.job_finished, timeout=WAIT_MS):
        dialog.import_from(model_dir, "offline-checker")
    assert row_texts(dialog, "offline-checker")[:2] == ["offline-checker", "installed (imported)"]
    assert dialog.selected().name == "offline-checker"
    dialog.use_button.click()
    assert settings_dialog.judges.text() == "local:offline-checker, keyword:0"

    with qtbot.waitSignal(dialog.job_finished, timeout=WAIT_MS):
        dialog.import_from(model_dir, "offline-checker")
    assert "already installed; remove it first" in dialog.status.text()

    monkeypatch.setattr(QMessageBox, "question", lambda *a, **k: QMessageBox.StandardButton.Yes)
    dialog.remove_button.click()
    assert models_hub.installed() == [] and "offline-checker" not in [r.name for r in dialog.model.rows]
    assert dialog.status.text().startswith("Removed ")


def test_download_without_internet_says_what_happened_and_what_to_do(qtbot, tmp_path, monkeypatch):
    from huggingface_hub import constants

    with socket.socket() as s:      # a port nothing listens on: refused, as an offline machine is
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    monkeypatch.setenv("HF_ENDPOINT", f"http://127.0.0.1:{port}")
    monkeypatch.setenv("SOURCECHECKUP_MODELS", str(tmp_path / "models"))
    dialog = ModelDownloadDialog()
    qtbot.addWidget(dialog)
    dialog.show()
    with qtbot.waitSignal(dialog.job_finished, timeout=120_000):
        dialog.start_pull("minicheck-roberta-large")
    text = dialog.status.text()
    assert text.startswith("⚠ The download could not reach the model hub"), text
    for what in ("Import from folder…", "HF_ENDPOINT", "sourcecheckup models pull"):
        assert what in text, what
    assert not text.startswith("⚠ ConnectError") and "ConnectError:" not in text.splitlines()[0]
    assert not dialog.progress_bar.isVisible()   # nothing under way: no bar at 0% looking busy
