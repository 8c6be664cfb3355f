"""API keys: read from the OS keyring (service ``sourcecheckup``), else the environment.

A key is never logged, stored in SQLite or put into an exception message. Machines without
a keyring backend (headless servers) fall back to the environment without complaint.
"""
from __future__ import annotations

import logging
import os
from typing import Literal, Mapping

SERVICE = "sourcecheckup"
ENV_VARS: dict[str, str] = {
    "openai": "OPENAI_API_KEY",
    "anthropic": "ANTHROPIC_API_KEY",
}

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
