"""Bytes to text: a downloaded or local document becomes a Source, in a thread or a worker process.

The worker process target (_extract_child) and source_from_document are pickled by module path
(forkserver or spawn), so they stay at module level here; build.spec names this module.
"""
from __future__ import annotations

import asyncio
import threading
import time
from dataclasses import replace
from typing import Any

from ..models import FetchStatus, Source, sha256_bytes, utcnow
from .extract import decode_text, extract, sniff_kind, warm_up


def finish_text(source: Source, max_chars: int) -> Source:
    """Cut text longer than max_chars and flag the source "truncated"."""
    if len(source.text) <= max_chars:
        return source
    flags = source.flags if "truncated" in source.flags else source.flags + ("truncated",)
    meta = dict(source.meta)
    meta["text_chars_before_truncation"] = len(source.text)
    return replace(source, text=source.text[:max_chars], flags=flags, meta=meta)


def source_from_document(url: str, raw: bytes, content_type: str | None, *, final_url: str | None,
                         http_status: int | None, origin: str, reason_ok: str, started: float,
                         meta: dict[str, Any] | None = None, max_text_chars: int = 300_000,
                         max_pdf_pages: int = 300, detect: bool = True) -> Source:
    """Extract a document's text and build the Source (shared by HTTP, local files and archives)."""
    doc = extract(raw, content_type, final_url or url, max_pdf_pages)
    all_meta = dict(meta or {})
    all_meta.update(doc.meta)
    common: dict[str, Any] = dict(
        url=url, http_status=http_status, final_url=final_url, content_type=content_type,
        sha256=sha256_bytes(raw), fetched_at=utcnow(), elapsed_s=round(time.monotonic() - started, 4),
        origin=origin, raw=raw)
    if doc.kind == "unsupported":
        return Source(status=FetchStatus.UNSUPPORTED_TYPE, reason=doc.problem, meta=all_meta, **common)
    if doc.kind == "error":
        status = FetchStatus.TOO_LARGE if doc.outcome == "too_large" else FetchStatus.ERROR
        return Source(status=status, reason=doc.problem, title=doc.title, meta=all_meta,
                      flags=("encrypted_pdf",) if doc.encrypted else (), **common)
    reason = reason_ok
    if not doc.text.strip():
        reason = f"{reason_ok}, but no main text was found" + (f" ({doc.problem})" if doc.problem else "")
    elif "pages_read" in doc.meta:
        reason = f"{reason_ok}; read the first {doc.meta['pages_read']} of {doc.meta['pages']} PDF pages"
    source = Source(status=FetchStatus.OK, reason=reason, title=doc.title, text=doc.text, meta=all_meta, **common)
    if "pages_read" in doc.meta:
        source = replace(source, flags=source.flags + ("pdf_pages_capped",))
    if detect and doc.kind == "html":
        from .detect import classify

        source = classify(source, doc.markup or decode_text(raw, content_type, html=True)[0])
    return finish_text(source, max_text_chars)


def warm_up_reading() -> None:
    """The extractor's and the page detectors' imports, once per process (thread or worker), before
    the first page arrives."""
    warm_up()
    from .detect import classify  # noqa: F401


# A document above this size is read in a process of its own, killed at the source's deadline
# and bounded in memory: markup can be built to make the extractor run for minutes (14 MB of
# nested <div>s took 209 s and 1.2 GB). Smaller ones, nearly every page, are read in a thread.
LARGE_DOCUMENT_BYTES = 500_000
# ...and so is a PDF of any size: its size says nothing of its work (8 KB whose 30 pages share one
# 2 MB compressed content stream read for 159 s), and a thread or a pool worker cannot be stopped
ALWAYS_IN_OWN_PROCESS = ("pdf",)
WORKER_GRACE_S = 0.5                   # past the deadline: the killed worker's own answer comes first
EXTRACT_MEMORY_BYTES = 1_500_000_000   # address space of that process


def _extract_child(conn: Any, args: tuple, kwargs: dict, memory_bytes: int) -> None:
    """In the worker process: read the document, send back the Source without its raw bytes."""
    try:
        import resource

        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    except (ImportError, ValueError, OSError):
        pass   # no address-space limit on this system: the deadline still holds
    try:
        source = source_from_document(*args, **kwargs)
        conn.send(("ok", replace(source, raw=b"")))
    except MemoryError:
        conn.send(("memory", ""))
    except BaseException as exc:
        conn.send(("error", f"{type(exc).__name__}: {exc}"[:300]))
    finally:
        conn.close()


_mp_context: Any = None


def _worker_context() -> Any:
    """forkserver where it exists (a fork of a small, single-threaded server that already imported the
    extractor: tens of ms), spawn elsewhere and in a frozen app."""
    global _mp_context
    if _mp_context is None:
        import multiprocessing
        import sys

        if "forkserver" in multiprocessing.get_all_start_methods() and not getattr(sys, "frozen", False):
            ctx: multiprocessing.context.BaseContext = multiprocessing.get_context("forkserver")
            ctx.set_forkserver_preload(["sourcecheckup.fetching.documents", "trafilatura", "pypdf"])
        else:
            ctx = multiprocessing.get_context("spawn")
        _mp_context = ctx
    return _mp_context


def read_in_worker(args: tuple, kwargs: dict, deadline: float,
                   memory_bytes: int = EXTRACT_MEMORY_BYTES) -> tuple[str, Any]:
    """source_from_document in a child process: ("ok", Source without raw), ("timeout", ""),
    ("memory", "") or ("error", message). The child is killed at deadline (time.monotonic()),
    its start included."""
    ctx = _worker_context()
    parent, child = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=_extract_child, args=(child, args, kwargs, memory_bytes), daemon=True)
    proc.start()
    child.close()
    try:
        if parent.poll(max(0.0, deadline - time.monotonic())):
            try:
                return parent.recv()
            except (EOFError, OSError):
                pass   # the child died before answering
            proc.join(2)
            if proc.exitcode is not None and proc.exitcode < 0:
                return "memory", ""   # killed by the system (out of memory) or by a failed allocation
            return "error", f"the text extractor stopped (exit code {proc.exitcode})"
        return "timeout", ""
    finally:
        parent.close()
        if proc.is_alive():
            proc.kill()
        proc.join(5)


def _document_size(raw: bytes) -> str:
    return f"{len(raw) / 1_000_000:.1f} MB" if len(raw) >= 100_000 else f"{len(raw):,} bytes"


class DocumentReader:
    """Runs source_from_document off the event loop: in threads, or in worker processes.

    Extraction is CPU work (trafilatura, pypdf); under the GIL, threads serialise it, so a
    large batch reads in worker processes (FetchOptions.extract_workers: AUTO, the default, is the
    process's shared pool, started once a run has read enough documents; N, a pool of N processes
    of its own; 0, threads only). A document over
    LARGE_DOCUMENT_BYTES, and a PDF of any size, is read in a process of its own under the source's
    deadline and a memory bound (killed there, so it never holds a pool worker or a thread), and
    ends as timeout or too_large, with the reason, when it goes past either.
    """

    large_bytes = LARGE_DOCUMENT_BYTES
    memory_bytes = EXTRACT_MEMORY_BYTES

    def __init__(self, workers: int = 0) -> None:
        from ..workers import AUTO, CpuPool, shared_pool

        self._own = workers > 0
        self._pool: CpuPool | None = (shared_pool() if workers == AUTO
                                      else CpuPool(workers, start_after=0, warm=warm_up_reading) if self._own else None)
        self._warming: threading.Thread | None = None
        if self._pool is None or not self._pool.started:   # the extractor's imports, ready for the first page
            self._warming = threading.Thread(target=warm_up_reading, name="extract-warm-up", daemon=True)
            self._warming.start()

    async def ready(self) -> None:
        """Until the extractor's imports are done: a one-time cost of the process, which a source's
        time limit does not pay."""
        if self._warming is not None and self._warming.is_alive():
            await asyncio.to_thread(self._warming.join)

    async def read(self, url: str, raw: bytes, content_type: str | None, *, deadline: float | None = None,
                   **kwargs: Any) -> Source:
        """The Source for a document; deadline (time.monotonic()) bounds the reading of a large one, and
        of one read in a thread: there the time counts from when the thread starts it (waiting for a
        free thread is not the document's time); TimeoutError when it runs past."""
        args = (url, raw, content_type)
        if deadline is not None and (len(raw) > self.large_bytes
                                     or sniff_kind(raw, content_type) in ALWAYS_IN_OWN_PROCESS):
            return await self._read_large(args, kwargs, deadline)
        if self._pool is None:
            if deadline is None:
                return await asyncio.to_thread(source_from_document, *args, **kwargs)
            return await self._read_in_thread(args, kwargs, deadline - time.monotonic())
        return await self._pool.run(source_from_document, *args, **kwargs)

    async def _read_in_thread(self, args: tuple, kwargs: dict[str, Any], budget_s: float) -> Source:
        """source_from_document in a thread, given budget_s seconds from when the thread begins it (a
        thread cannot be stopped: past the budget its result is dropped)."""
        loop = asyncio.get_running_loop()
        began = asyncio.Event()

        def call() -> Source:
            loop.call_soon_threadsafe(began.set)
            return source_from_document(*args, **kwargs)

        reading = asyncio.ensure_future(asyncio.to_thread(call))
        start = asyncio.ensure_future(began.wait())
        try:
            await asyncio.wait({reading, start}, return_when=asyncio.FIRST_COMPLETED)
            return await asyncio.wait_for(asyncio.shield(reading), max(0.0, budget_s))
        except BaseException:
            reading.add_done_callback(lambda f: f.cancelled() or f.exception())   # retrieved: never reported
            raise
        finally:
            start.cancel()

    async def _read_large(self, args: tuple, kwargs: dict[str, Any], deadline: float) -> Source:
        budget = max(0.0, deadline - time.monotonic())
        work = asyncio.ensure_future(asyncio.to_thread(read_in_worker, args, kwargs, time.monotonic() + budget,
                                                       self.memory_bytes))
        try:   # the worker is killed at the deadline; this also bounds starting it (the first fork server)
            outcome, got = await asyncio.wait_for(asyncio.shield(work), budget + WORKER_GRACE_S)
        except TimeoutError:
            work.add_done_callback(lambda f: f.cancelled() or f.exception())
            outcome, got = "timeout", ""
        url, raw, content_type = args
        if outcome == "ok":
            return replace(got, raw=raw)
        kind = "PDF" if sniff_kind(raw, content_type) == "pdf" else "document"
        if outcome == "timeout":
            status, reason = FetchStatus.TIMEOUT, (
                f"reading the text of this {_document_size(raw)} {kind} took longer than the per-source "
                f"time limit (--timeout) allows ({budget:.1f} s were left after the download); it was stopped")
        elif outcome == "memory":
            status, reason = FetchStatus.TOO_LARGE, (
                f"reading the text of this {_document_size(raw)} {kind} needed more than "
                f"{self.memory_bytes // 1_000_000:,} MB of memory; it was stopped")
        else:
            status, reason = FetchStatus.ERROR, f"could not read the document: {got}"
        return Source(url=url, status=status, reason=reason, final_url=kwargs.get("final_url"),
                      http_status=kwargs.get("http_status"), content_type=content_type, sha256=sha256_bytes(raw),
                      fetched_at=utcnow(), origin=kwargs.get("origin", "http"), meta=dict(kwargs.get("meta") or {}),
                      elapsed_s=round(time.monotonic() - kwargs.get("started", time.monotonic()), 4), raw=raw)

    def close(self) -> None:
        if self._own and self._pool is not None:   # the shared pool outlives a run
            self._pool.close()
        self._pool = None
