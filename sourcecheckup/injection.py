"""Detect text in a source that addresses the judge ("ignore previous instructions", ...).

Source text is data; a page that talks to the model reading it is flagged
``possible_injection`` on every verdict that used it. Patterns live in
``resources/patterns/injection.json`` so they can be reviewed and extended without code.
"""
from __future__ import annotations

import dataclasses
import json
import re
import unicodedata
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from .models import Source
from .resources import resources_dir

FLAG = "possible_injection"
_SNIPPET_CHARS = 80


@dataclass(frozen=True)
class InjectionPattern:
    id: str
    reason: str
    regex: re.Pattern[str]


def patterns_path() -> Path:
    return resources_dir() / "patterns" / "injection.json"


@lru_cache(maxsize=4)
def load_patterns(path: Path | None = None) -> tuple[InjectionPattern, ...]:
    path = path or patterns_path()
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise FileNotFoundError(f"injection patterns not found at {path}; "
                                "set SOURCECHECKUP_RESOURCES to the folder that holds patterns/") from None
    out = []
    for entry in data["patterns"]:
        try:
            regex = re.compile(entry["pattern"], re.I)
        except re.error as exc:
            raise ValueError(f"injection pattern {entry.get('id')!r} in {path} is not a valid "
                             f"regular expression: {exc}") from None
        out.append(InjectionPattern(entry["id"], entry["reason"], regex))
    return tuple(out)


def _normalise(text: str) -> str:
    text = unicodedata.normalize("NFKC", text or "")
    text = text.replace("\u2018", "'").replace("\u2019", "'").replace("\u201c", '"').replace("\u201d", '"')
    text = re.sub(r"[ \t\u00a0\u200b]+", " ", text)
    return re.sub(r"\r\n?", "\n", text)


def detect_injection(text: str, patterns: tuple[InjectionPattern, ...] | None = None) -> list[str]:
    """Reasons why ``text`` looks like it addresses the judge; empty when it does not.

    Each reason names what was found and quotes the matched text, one per pattern.
    """
    if not text:
        return []
    normal = _normalise(text)
    reasons: list[str] = []
    for pattern in patterns or load_patterns():
        match = pattern.regex.search(normal)
        if match:
            snippet = " ".join(match.group(0).split())[:_SNIPPET_CHARS]
            reasons.append(f"{pattern.reason}: \"{snippet}\"")
    return reasons


def flag_injection(source: Source) -> Source:
    """The source flagged ``possible_injection``, with the reasons in its meta, when its text addresses the
    judge; else the source unchanged."""
    reasons = detect_injection(source.text) if source.text else []
    if not reasons:
        return source
    meta = {**dict(source.meta), "injection_reasons": reasons}
    return dataclasses.replace(source, flags=tuple(dict.fromkeys((*source.flags, FLAG))), meta=meta)
