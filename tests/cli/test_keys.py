"""API keys come from the OS keyring, else the environment, and never leak."""
from __future__ import annotations

import keyring
import pytest
from keyring.backends import fail
from keyrings.alt.file import PlaintextKeyring

from sourcecheckup.evidence import SourceText
from sourcecheckup.judges import make_judge
from sourcecheckup.llm import secrets as keys
from sourcecheckup.models import Label
from tests.support.fake_llm import FakeLLMServer

KEY = "sk-keyring-3c5e7a9b1d2f4e6a"


@pytest.fixture
def file_keyring(tmp_path):
    original = keyring.get_keyring()
    backend = PlaintextKeyring()
    backend.file_path = str(tmp_path / "keyring.cfg")
    keyring.set_keyring(backend)
    yield backend
    keyring.set_keyring(original)


@pytest.fixture
def no_keyring():
    original = keyring.get_keyring()
    keyring.set_keyring(fail.Keyring())
    yield
    keyring.set_keyring(original)


def test_key_stored_in_keyring_is_found_before_the_environment(file_keyring):
    keys.set_api_key("openai", KEY)
    assert keys.get_api_key("openai", env={"OPENAI_API_KEY": "sk-env"}) == KEY
    assert keys.key_source("openai", env={}) == "keyring"
    assert file_keyring.get_password("sourcecheckup", "openai") == KEY
    assert keys.delete_api_key("openai") is True
    assert keys.find_api_key("openai", env={}) is None


def test_without_a_keyring_backend_the_environment_is_used(no_keyring):
    assert keys.get_api_key("anthropic", env={"ANTHROPIC_API_KEY": "sk-ant-env"}) == "sk-ant-env"
    assert keys.key_source("anthropic", env={"ANTHROPIC_API_KEY": "x"}) == "environment"


def test_missing_key_error_says_how_to_provide_one(no_keyring):
    with pytest.raises(keys.MissingKeyError) as err:
        keys.get_api_key("openai", env={})
    assert "keyring set sourcecheckup openai" in str(err.value) and "OPENAI_API_KEY" in str(err.value)


def test_storing_without_a_backend_fails_clearly_and_without_the_key(no_keyring):
    with pytest.raises(RuntimeError) as err:
        keys.set_api_key("openai", KEY)
    assert KEY not in str(err.value) and "OPENAI_API_KEY" in str(err.value)
    assert keys.delete_api_key("openai") is False


async def test_judge_reads_its_key_from_the_keyring(file_keyring, monkeypatch, caplog):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    keys.set_api_key("openai", KEY)
    caplog.set_level("DEBUG")
    with FakeLLMServer("openai", api_key=KEY) as server:
        judge = make_judge("openai:gpt-4o", base_url=server.base_url)
        try:
            v = await judge.verify("Ferritin stores iron.", SourceText.from_text("Ferritin stores iron."))
        finally:
            await judge.aclose()
    assert v.label is Label.SUPPORTED
    assert server.requests[0].headers["authorization"] == f"Bearer {KEY}"
    assert KEY not in repr(v) and KEY not in repr(judge.settings)
    assert not [r for r in caplog.records if KEY in r.getMessage()]
