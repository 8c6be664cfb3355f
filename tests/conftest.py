"""Shared test set-up: fixture servers on 127.0.0.1 only, no network, no real keyring; and the fixtures that
tests in several folders use (the app's settings and main window, a keyring that holds no API key, a fake
OpenAI server, the fake model hub with its tiny checker)."""
from __future__ import annotations

import os
from pathlib import Path

import pytest

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
os.environ.setdefault("PYTHON_KEYRING_BACKEND", "keyring.backends.null.Keyring")
# subprocess runs of the CLI must never look dead links up on the public web archive
os.environ["SOURCECHECKUP_ARCHIVE"] = "off"
# ...nor ask the public metadata services (Crossref, PubMed, OpenAlex) about cited references
os.environ["SOURCECHECKUP_REFERENCES"] = "off"
# the app's tests run offscreen
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")

# the fixture site, and the fake metadata and repair services (fixtures `site`, `scholarly`, `repair_servers`)
pytest_plugins = ["tests.support.site", "tests.support.fake_scholarly", "tests.support.fake_repair"]


# -- the desktop app (Qt is imported only by the tests that ask for these) ------------------------------

@pytest.fixture
def settings(tmp_path: Path):
    """The app's settings in a file of the test's own, set for the fixture site and the keyword judge."""
    from PySide6.QtCore import QSettings

    import tests.support.fake_judge  # noqa: F401  registers keyword:LATENCY, which the settings name
    from ui.settings import AppSettings

    s = AppSettings(QSettings(str(tmp_path / "settings.ini"), QSettings.Format.IniFormat))
    s.judges = ["keyword:0"]
    s.allow_hosts = ["127.0.0.1"]
    s.concurrency = 4
    s.reviewer = "Dr Tester"
    s.browser = "never"   # the app's tests read the local site as plain HTTP (the default is auto)
    return s


@pytest.fixture
def window(qtbot, tmp_path: Path, settings):
    """The main window offscreen, on a database in tmp_path; its work is stopped and waited for after the test."""
    from ui.main_window import MainWindow

    w = MainWindow(tmp_path / "audits.db", settings)
    qtbot.addWidget(w)
    w.show()
    yield w
    w.benchmark_page.shutdown(10_000)
    if w.audit.worker is not None:
        w.audit.worker.cancel()
        w.audit.worker.wait(10_000)
    w.db.wait(10_000)


# -- keys, LLM servers and the model hub --------------------------------------------------------------

@pytest.fixture
def no_keyring(monkeypatch):
    """No API key anywhere: the keyring answers nothing and the providers' variables are unset."""
    from sourcecheckup.llm import secrets as keys

    monkeypatch.setattr(keys, "_keyring_get", lambda provider: None)
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)


@pytest.fixture
def server():
    """A fake OpenAI server on 127.0.0.1 that wants the key TEST_KEY (tests/support/fake_llm.py)."""
    from tests.support.fake_llm import TEST_KEY, FakeLLMServer

    with FakeLLMServer("openai", api_key=TEST_KEY) as srv:
        yield srv


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A tiny checker model, built once for a module."""
    from tests.support.fake_hub import build_tiny_checker

    return build_tiny_checker(tmp_path_factory.mktemp("hub") / "tiny-checker")


@pytest.fixture
def hub(model_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """A fake model hub on 127.0.0.1 (HF_ENDPOINT) serving the tiny checker as TINY_REPO; pulled models go
    to tmp_path."""
    from huggingface_hub import constants

    from tests.support.fake_hub import TINY_REPO, FakeHub

    monkeypatch.setenv("SOURCECHECKUP_MODELS", str(tmp_path / "models"))
    # the suite runs offline (above); the fake hub on 127.0.0.1 is the one server a pull may reach
    monkeypatch.setattr(constants, "HF_HUB_OFFLINE", False)
    with FakeHub() as fake:
        fake.add_repo(TINY_REPO, model_dir)
        monkeypatch.setenv("HF_ENDPOINT", fake.endpoint)
        yield fake
