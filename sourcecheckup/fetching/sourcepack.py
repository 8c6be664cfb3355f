"""A source pack: local files that stand in for cited URLs (a librarian's PDFs of paywalled papers).

DIR/sources.json maps each URL to a file path relative to DIR:
    {"https://doi.org/10.1000/xyz": "papers/xyz.pdf", "https://example.org/page": "page.html"}
A value may also be an object {"path": "...", "content_type": "...", "title": "..."}.
"""
from __future__ import annotations

import json
import mimetypes
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Mapping
from urllib.parse import urlsplit, urlunsplit

from ..models import FetchStatus, Source, utcnow
from .base import FetchOptions, refused_url
from .documents import source_from_document

PACK_FILE = "sources.json"


class SourcePackError(Exception):
    """The source pack itself cannot be used (missing or invalid sources.json)."""


@dataclass(frozen=True)
class PackEntry:
    url: str
    path: Path
    name: str                      # as written in sources.json
    content_type: str | None = None
    title: str | None = None


def pack_key(url: str) -> str:
    """The lookup form of a URL: scheme and host lowercased, fragment and trailing slash dropped."""
    try:
        parts = urlsplit(url.strip())
    except ValueError:
        return url.strip()
    path = parts.path.rstrip("/") or ""
    return urlunsplit((parts.scheme.lower(), parts.netloc.lower(), path, parts.query, ""))


def load_pack(directory: Path | str) -> dict[str, PackEntry]:
    """Read DIR/sources.json; SourcePackError with a plain message when it is unusable."""
    root = Path(directory).expanduser()
    index = root / PACK_FILE
    if not index.is_file():
        raise SourcePackError(f"source pack {root} has no {PACK_FILE}; create it with a mapping of URL to file")
    try:
        data = json.loads(index.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise SourcePackError(f"{index} is not valid JSON: {exc}") from None
    if not isinstance(data, dict):
        raise SourcePackError(f"{index} must be a JSON object mapping URL to file path")
    root_resolved = root.resolve()
    entries: dict[str, PackEntry] = {}
    for url, value in data.items():
        if isinstance(value, str):
            name, content_type, title = value, None, None
        elif isinstance(value, dict) and isinstance(value.get("path"), str):
            name, content_type, title = value["path"], value.get("content_type"), value.get("title")
        else:
            raise SourcePackError(f"{index}: the entry for {url!r} must be a file path or an object with \"path\"")
        path = (root / name).resolve()
        if not path.is_relative_to(root_resolved):
            raise SourcePackError(f"{index}: the file for {url!r} ({name}) lies outside the pack folder")
        entries[pack_key(url)] = PackEntry(url, path, name, content_type, title)
    return entries


def _guess_type(path: Path) -> str | None:
    suffix = path.suffix.lower()
    if suffix in (".md", ".markdown"):
        return "text/markdown; charset=utf-8"
    guessed, _ = mimetypes.guess_type(path.name)
    return guessed


class SourcePackFetcher:
    """Answers the pack's URLs from local files; every other URL goes to the wrapped fetcher."""

    def __init__(self, directory: Path | str, inner: object | None = None, options: object | None = None) -> None:
        self.directory = Path(directory)
        self.entries: Mapping[str, PackEntry] = load_pack(self.directory)
        self.inner = inner
        self.options = options if options is not None else FetchOptions()

    def covers(self, url: str) -> bool:
        return pack_key(url) in self.entries

    async def fetch(self, url: str) -> Source:
        if (refused := refused_url(url)) is not None:
            return refused
        entry = self.entries.get(pack_key(url))
        if entry is None:
            if self.inner is None:
                return Source(url=url, status=FetchStatus.ERROR, origin="local_file", fetched_at=utcnow(),
                              reason="not in the source pack and no other fetcher is configured")
            return await self.inner.fetch(url)  # type: ignore[attr-defined]
        return self.read(url, entry)

    def read(self, url: str, entry: PackEntry) -> Source:
        started = time.monotonic()
        opts = self.options
        try:
            size = entry.path.stat().st_size
            if size > opts.max_bytes:  # type: ignore[attr-defined]
                return Source(url=url, status=FetchStatus.TOO_LARGE, origin="local_file", fetched_at=utcnow(),
                              reason=f"local file {entry.name} is {size:,} bytes, over the limit",
                              final_url=entry.path.as_uri())
            raw = entry.path.read_bytes()
        except FileNotFoundError:
            return Source(url=url, status=FetchStatus.ERROR, origin="local_file", fetched_at=utcnow(),
                          reason=f"local file {entry.name} listed in {PACK_FILE} is missing ({entry.path})")
        except OSError as exc:
            return Source(url=url, status=FetchStatus.ERROR, origin="local_file", fetched_at=utcnow(),
                          reason=f"local file {entry.name} could not be read: {exc.strerror or exc}")
        content_type = entry.content_type or _guess_type(entry.path)
        source = source_from_document(
            url, raw, content_type, final_url=entry.path.as_uri(), http_status=None, origin="local_file",
            reason_ok=f"read from local file {entry.name}", started=started,
            meta={"local_file": str(entry.path)}, max_text_chars=opts.max_text_chars,  # type: ignore[attr-defined]
            max_pdf_pages=opts.max_pdf_pages)  # type: ignore[attr-defined]
        if entry.title and not source.title:
            from dataclasses import replace

            source = replace(source, title=entry.title)
        return source

    async def aclose(self) -> None:
        if self.inner is not None:
            await self.inner.aclose()  # type: ignore[attr-defined]
