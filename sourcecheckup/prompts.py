"""Versioned prompt files: load, check and fill them.

A prompt file has a ``[system]`` and a ``[user]`` section; ``{{name}}`` placeholders are
filled at call time. Its version is the file name stem plus a short SHA-256 of the bytes,
so an edited prompt can never pass for the original one in a stored verdict.
"""
from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path

from .resources import resources_dir

DEFAULT_VERIFIER = "verifier-v1"
DEFAULT_BATCH_VERIFIER = "verifier-batch-v1"

_SECTION = re.compile(r"^\[(system|user)\]\s*$", re.M)
_PLACEHOLDER = re.compile(r"\{\{\s*([a-z_]+)\s*\}\}")


class PromptError(ValueError):
    """A prompt file that cannot be used (missing, no sections, missing placeholders)."""


def prompts_dir() -> Path:
    return resources_dir() / "prompts"


@dataclass(frozen=True)
class Prompt:
    name: str          # file name stem, e.g. "verifier-v1"
    version: str       # stem + short sha256, e.g. "verifier-v1@3f2a9c1b"
    sha256: str
    system: str
    user: str
    path: Path

    @property
    def placeholders(self) -> frozenset[str]:
        return frozenset(_PLACEHOLDER.findall(self.system + self.user))

    def render(self, **values: str) -> tuple[str, str]:
        """(system, user) with every ``{{name}}`` replaced; an unknown name is an error."""
        def fill(text: str) -> str:
            def one(match: re.Match[str]) -> str:
                key = match.group(1)
                if key not in values:
                    raise PromptError(f"prompt {self.name} uses {{{{{key}}}}} but no value was given")
                return values[key]
            return _PLACEHOLDER.sub(one, text)

        return fill(self.system).strip(), fill(self.user).strip()


def parse_prompt(text: str, name: str, path: Path, required: tuple[str, ...] = ()) -> Prompt:
    digest = hashlib.sha256(text.encode("utf-8")).hexdigest()
    parts = _SECTION.split(text)
    # parts = [preamble, "system", body, "user", body] (order as written)
    sections: dict[str, str] = {}
    for i in range(1, len(parts) - 1, 2):
        sections[parts[i]] = parts[i + 1]
    if "user" not in sections:
        raise PromptError(f"prompt file {path} has no [user] section; "
                          "write a [system] and a [user] section (see resources/prompts/verifier-v1.txt)")
    prompt = Prompt(name=name, version=f"{name}@{digest[:8]}", sha256=digest,
                    system=sections.get("system", "").strip(), user=sections["user"].strip(), path=path)
    missing = [key for key in required if key not in prompt.placeholders]
    if missing:
        raise PromptError(f"prompt file {path} lacks the placeholder(s) "
                          + ", ".join("{{" + m + "}}" for m in missing))
    return prompt


def load_prompt(path_or_name: str | Path | None = None, *, default: str = DEFAULT_VERIFIER,
                required: tuple[str, ...] = ("source",)) -> Prompt:
    """Load a prompt by file path or by name under ``resources/prompts`` (``verifier-v1``)."""
    if path_or_name is None:
        path_or_name = default
    path = Path(path_or_name)
    if not path.suffix and not path.exists():
        path = prompts_dir() / f"{path_or_name}.txt"
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PromptError(f"prompt file not found: {path}; give a path to a .txt prompt file "
                          f"or a name from {prompts_dir()}") from None
    return parse_prompt(text, path.stem, path, required)
