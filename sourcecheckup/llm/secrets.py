"""API keys: read from the OS keyring (service ``sourcecheckup``), else the environment; kept out of logs.

A key is never logged, stored in SQLite or put into an exception message. Machines without
a keyring backend (headless servers) fall back to the environment without complaint.
"""
from __future__ import annotations

import logging
import os
from typing import Literal, Mapping, Sequence

SERVICE = "sourcecheckup"
ENV_VARS: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
    "openai-compatible": "SOURCECHECKUP_JUDGE_KEY",   # a local server started with a key (also checker:)
}
COMPATIBLE_KEY_HINT = ("store it with `keyring set sourcecheckup openai-compatible`, or set SOURCECHECKUP_JUDGE_KEY, "
                       "or name the variable that holds it with --judge-key-env NAME")

log = logging.getLogger(__name__)

KeySource = Literal["option", "keyring", "environment"]


class MissingKeyError(RuntimeError):
    """No API key was found for a provider; the message says where to put one."""


def _keyring_get(provider: str) -> str | None:
    try:
        import keyring

        return keyring.get_password(SERVICE, provider) or None
    except Exception as exc:  # no backend, locked, D-Bus missing: all mean "not in the keyring"
        log.debug("keyring not usable for %s (%s); trying the environment", provider, type(exc).__name__)
        return None


def find_api_key(provider: str, env: Mapping[str, str] | None = None) -> tuple[str, KeySource] | None:
    """The key for ``provider`` and where it came from, or None. Keyring first, then environment."""
    key = _keyring_get(provider)
    if key:
        return key, "keyring"
    env = os.environ if env is None else env
    var = ENV_VARS.get(provider)
    if var and env.get(var):
        return env[var], "environment"
    return None


def get_api_key(provider: str, env: Mapping[str, str] | None = None) -> str:
    """The key for ``provider``; raises :class:`MissingKeyError` with instructions when absent."""
    found = find_api_key(provider, env)
    if found is None:
        var = ENV_VARS.get(provider)
        hint = f" or set the {var} environment variable" if var else ""
        raise MissingKeyError(
            f"no API key for {provider}: store one with `keyring set {SERVICE} {provider}`{hint}")
    return found[0]


def compatible_key(key_env: str | None = None, env: Mapping[str, str] | None = None) -> str | None:
    """The key for a local OpenAI-compatible server (``openai-compatible:``, ``checker:``), or None (it
    needs none): the variable ``key_env`` names (which must then be set), else the keyring entry
    ``openai-compatible``, else ``SOURCECHECKUP_JUDGE_KEY``."""
    env = os.environ if env is None else env
    if key_env:
        if not env.get(key_env):
            raise MissingKeyError(f"--judge-key-env {key_env}: the environment variable {key_env} is not set")
        return env[key_env]
    found = find_api_key("openai-compatible", env)
    return found[0] if found else None


def key_source(provider: str, env: Mapping[str, str] | None = None) -> KeySource | None:
    """Where the key would come from (for the UI's settings page), without returning it."""
    found = find_api_key(provider, env)
    return found[1] if found else None


def set_api_key(provider: str, key: str) -> None:
    """Store ``key`` in the OS keyring; raises RuntimeError when no keyring backend exists."""
    try:
        import keyring

        keyring.set_password(SERVICE, provider, key)
    except Exception as exc:
        raise RuntimeError(f"could not store the {provider} key in the OS keyring "
                           f"({type(exc).__name__}); set {ENV_VARS.get(provider, 'the key')} "
                           "in the environment instead") from None


def delete_api_key(provider: str) -> bool:
    """Remove the stored key; False when there was none or no keyring backend exists."""
    try:
        import keyring

        keyring.delete_password(SERVICE, provider)
        return True
    except Exception:
        return False


# ---------------------------------------------------------------------------------------------
# Keeping keys out of text and logs


def redact(text: str | None, secrets_: Sequence[str]) -> str | None:
    """``text`` with every known secret replaced by ``[redacted]``."""
    if not text:
        return text
    for secret in secrets_:
        if secret and len(secret) >= 4 and secret in text:
            text = text.replace(secret, "[redacted]")
    return text


class _RedactingFilter(logging.Filter):
    """Scrubs known keys from records of the SDK loggers, which log request options at DEBUG."""

    def __init__(self) -> None:
        super().__init__()
        self.secrets: set[str] = set()

    def filter(self, record: logging.LogRecord) -> bool:
        if not self.secrets:
            return True
        message = record.getMessage()
        if any(s in message for s in self.secrets):
            record.msg = redact(message, sorted(self.secrets))
            record.args = None
        return True


_REDACTOR = _RedactingFilter()
# a logger's filters see only records created on that very logger, so name the SDKs' own loggers
for _name in ("openai", "openai._base_client", "anthropic", "anthropic._base_client", "httpx", "httpx2",
              "httpcore", "httpcore2", "httpcore2.http11", "httpcore2.connection", "sourcecheckup.judges",
              "sourcecheckup.llm"):
    logging.getLogger(_name).addFilter(_REDACTOR)


def protect_secret(secret: str | None) -> None:
    """Make every log record of the SDKs and of this package scrub ``secret``."""
    if secret and len(secret) >= 4 and secret != "not-needed":
        _REDACTOR.secrets.add(secret)
