"""What a benchmark starts from: reference documents (URLs or files) or questions that exist.

- a text file with one URL a line (``#`` comments allowed): pages fetched with the run's fetcher;
- a folder of HTML, PDF, text or Markdown files, or one such file: read like a fetched page;
- a CSV (``question`` column; optional ``answer``/``reference_answer``, ``id``, ``url``,
  ``question_source``) or a questions JSONL: questions used as they are.
"""
from __future__ import annotations

import asyncio
import csv
import io
import time
from dataclasses import dataclass, field
from pathlib import Path

from ..fetching import Fetcher
from ..fetching.documents import source_from_document
from ..models import FetchStatus, Source
from ..urls import normalise_url
from .records import Question, QuestionFileError, QuestionSource, question_from_mapping, read_questions

DOCUMENT_SUFFIXES = {".html": "text/html", ".htm": "text/html", ".pdf": "application/pdf",
                     ".txt": "text/plain", ".md": "text/plain", ".markdown": "text/plain"}


class DocumentsError(ValueError):
    """Input that names no usable documents or questions; the message says what to give instead."""


@dataclass(frozen=True)
class BenchInput:
    """Documents to fetch or read (``locations``) or ready questions (``questions``)."""

    locations: tuple[str, ...] = ()
    questions: tuple[Question, ...] = ()
    label: str = ""
    problems: tuple[str, ...] = field(default_factory=tuple)


def _url_lines(text: str) -> list[str] | None:
    """The URLs when every non-comment line is one, else None."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip() and not ln.strip().startswith("#")]
    if not lines:
        return None
    urls = [normalise_url(ln) for ln in lines]
    if any(u is None or not u.startswith(("http://", "https://")) for u in urls):
        return None
    return [u for u in urls if u]


def read_csv_questions(path: Path) -> list[Question]:
    text = path.read_text(encoding="utf-8-sig")
    reader = csv.DictReader(io.StringIO(text), delimiter="\t" if path.suffix.lower() == ".tsv" else ",")
    header = {h.strip().lower(): h for h in (reader.fieldnames or [])}
    if "question" not in header:
        raise DocumentsError(f"{path.name}: a questions CSV needs a 'question' column "
                             f"(found: {', '.join(reader.fieldnames or []) or 'no header'})")
    seen: set[str] = set()
    out = []
    for n, row in enumerate(reader, 2):
        obj = {k.strip().lower(): (v or "").strip() for k, v in row.items() if k}
        if not obj.get("question"):
            continue
        obj.setdefault("question_source", QuestionSource.IMPORTED.value)
        if not obj.get("document_url") and obj.get("url"):
            obj["document_url"] = obj["url"]
        try:
            out.append(question_from_mapping(obj, f"{path.name} row {n}", f"row{n}", seen))
        except QuestionFileError as exc:
            raise DocumentsError(str(exc)) from None
    return out


def read_bench_input(path: str | Path) -> BenchInput:
    """Decide what ``path`` holds (see the module doc) and read it."""
    p = Path(path)
    if not p.exists():
        raise DocumentsError(f"{p}: no such file or folder")
    if p.is_dir():
        files = sorted(f for f in p.rglob("*") if f.is_file() and f.suffix.lower() in DOCUMENT_SUFFIXES)
        if not files:
            raise DocumentsError(f"{p}: no HTML, PDF, text or Markdown files in this folder")
        return BenchInput(locations=tuple(str(f.resolve()) for f in files), label=str(p))
    suffix = p.suffix.lower()
    if suffix in (".csv", ".tsv"):
        return BenchInput(questions=tuple(read_csv_questions(p)), label=str(p))
    if suffix in (".jsonl", ".ndjson"):
        try:
            return BenchInput(questions=tuple(read_questions(p)), label=str(p))
        except QuestionFileError as exc:
            raise DocumentsError(str(exc)) from None
    if suffix in (".txt", ".lst", ".urls", ""):
        urls = _url_lines(p.read_text(encoding="utf-8-sig", errors="replace"))
        if urls is not None:
            return BenchInput(locations=tuple(dict.fromkeys(urls)), label=str(p))
    if suffix in DOCUMENT_SUFFIXES:
        return BenchInput(locations=(str(p.resolve()),), label=str(p))
    raise DocumentsError(f"{p}: give a URL list (one a line), a folder of documents, an HTML/PDF/text "
                         "file, a CSV with a 'question' column or a questions JSONL")


def read_local_document(path: str | Path) -> Source:
    """A local file read the way a fetched page is read (same extraction, hash and outcome)."""
    p = Path(path)
    started = time.monotonic()
    url = p.resolve().as_uri()
    try:
        raw = p.read_bytes()
    except OSError as exc:
        return Source(url=url, status=FetchStatus.ERROR, reason=f"could not read the file: {exc}",
                      origin="local_file")
    return source_from_document(url, raw, DOCUMENT_SUFFIXES.get(p.suffix.lower()), final_url=None,
                                http_status=None, origin="local_file", reason_ok="local file", started=started,
                                meta={"path": str(p)})


async def load_document(location: str, fetcher: Fetcher) -> Source:
    if location.startswith(("http://", "https://")):
        return await fetcher.fetch(location)
    return await asyncio.to_thread(read_local_document, location)
