"""What a run was made with, recorded when it runs: the input files' SHA-256, the software environment
(version, git commit, Python, the packages that shape results), each judge's own record (the built-in
judge's parameter and embedding-model hashes, an LLM judge's temperature, seed and token limits) and the
Retraction Watch data's date and hash.

The pipeline stores this in the run's configuration (``config["provenance"]``) so a report states what the
*run* used, not what the machine that writes or verifies the report has installed.
"""
from __future__ import annotations

import functools
import hashlib
import platform
import subprocess
import sys
from importlib import metadata
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from . import __version__
from .judges.base import judge_traits

# the packages whose version can change a figure: text extraction, PDF text, the built-in judge's model stack,
# passage ranking and sentence splitting
RESULT_PACKAGES = ("trafilatura", "pypdf", "torch", "sentence-transformers", "transformers", "numpy", "rank-bm25",
                   "pysbd")
MAX_INPUT_FILES = 10_000       # files of an input folder hashed one by one (the rest are counted)
_ROOT = Path(__file__).resolve().parent.parent


def sha256_file(path: str | Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


@functools.lru_cache(maxsize=256)
def _cached_sha256(path: str, size: int, mtime_ns: int) -> str:
    return sha256_file(path)


def file_record(path: str | Path) -> dict[str, Any]:
    """A file as {path, bytes, sha256} (the hash is kept per process while the file is unchanged)."""
    p = Path(path).expanduser().resolve()
    st = p.stat()
    return {"path": str(p), "bytes": st.st_size, "sha256": _cached_sha256(str(p), st.st_size, st.st_mtime_ns)}


def input_records(paths: Iterable[str | Path], stdin_text: str | None = None) -> list[dict[str, Any]]:
    """Each input as read: a file's hash, each file of a folder (sorted), standard input's text hash."""
    out: list[dict[str, Any]] = []
    for raw in paths:
        if str(raw) == "-":
            out.append({"path": "-", "bytes": None if stdin_text is None else len(stdin_text.encode("utf-8")),
                        "sha256": None if stdin_text is None else
                        hashlib.sha256(stdin_text.encode("utf-8")).hexdigest(), "note": "standard input"})
            continue
        p = Path(raw)
        if p.is_file():
            out.append(file_record(p))
        elif p.is_dir():
            files = sorted(f for f in p.rglob("*") if f.is_file())
            out.extend(file_record(f) for f in files[:MAX_INPUT_FILES])
            if len(files) > MAX_INPUT_FILES:
                out.append({"path": str(p.resolve()), "bytes": None, "sha256": None,
                            "note": f"{len(files) - MAX_INPUT_FILES} more files not hashed"})
        else:
            out.append({"path": str(raw), "bytes": None, "sha256": None, "note": "not a file when the run started"})
    return out


@functools.lru_cache(maxsize=1)
def _git_commit() -> str | None:
    """The commit of a git checkout the package runs from (None for an installed package)."""
    if not (_ROOT / ".git").exists():
        return None
    try:
        done = subprocess.run(["git", "-C", str(_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                              timeout=5, check=False)
    except (OSError, subprocess.SubprocessError):
        return None
    commit = done.stdout.strip()
    return commit if done.returncode == 0 and len(commit) == 40 else None


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def software_environment() -> dict[str, Any]:
    """The software this process runs: SourceCheckup's version and git commit, Python, the result packages."""
    return {"sourcecheckup": __version__, "git_commit": _git_commit(),
            "python": platform.python_version(), "python_implementation": platform.python_implementation(),
            "platform": platform.platform(terse=True), "executable_is_frozen": bool(getattr(sys, "frozen", False)),
            "packages": {name: _version(name) for name in RESULT_PACKAGES}}


def retraction_record(path: str | Path | None) -> dict[str, Any] | None:
    """The Retraction Watch CSV a run read: its path, date (download or modification date) and SHA-256."""
    if not path:
        return None
    p = Path(path)
    if not p.is_file():
        return {"path": str(p), "date": None, "sha256": None, "bytes": None, "note": "not found when the run started"}
    from .references.retractions import data_date

    return {**file_record(p), "date": data_date(p)}


def judge_records(judges: Sequence[Any]) -> list[dict[str, Any]]:
    """Each judge's own record (``provenance()``), or its id and prompt version for a judge without one."""
    out = []
    for judge in judges:
        describe = judge_traits(judge).provenance
        rec = dict(describe()) if describe is not None else {}
        out.append({"id": judge.id, "prompt_version": judge.prompt_version or None, **rec})
    return out


def record_execution(stored: Mapping[str, Any] | None, judges: Sequence[Any],
                     retraction_data: str | None) -> dict[str, Any]:
    """The run's provenance after one execution: the environment of its first execution (a resume under
    other software is added to ``resumed_with``), the judges and the Retraction Watch data it used."""
    prov = dict(stored or {})
    env = software_environment()
    if "environment" not in prov:
        prov["environment"] = env
    elif prov["environment"] != env and env not in prov.get("resumed_with", []):
        prov["resumed_with"] = [*prov.get("resumed_with", []), env]
    prov["judges"] = judge_records(judges)
    prov["retraction_data"] = retraction_record(retraction_data)
    prov.setdefault("inputs", [])
    return prov
