"""The audit's lifecycle: a run created, executed (judges opened, responses worked through, the
run's status written whatever happens), resumed and cancelled; its sources are in ``sources``, its
uncommitted verdicts in ``commits``."""
from __future__ import annotations

import asyncio
import contextlib
import dataclasses
from typing import Any, Callable, Mapping, Sequence

from .. import __version__
from ..config import RunConfig
from ..events import EventKind, ProgressCallback, ProgressEvent, ignore
from ..evidence import SourceText, quote_in_source
from ..expert.step import expert_step
from ..fetching import Fetcher, FetchOptions, make_fetcher
from ..ingest.records import UNUSABLE_KEY
from ..judges.base import Judge, judge_traits, open_judges
from ..models import REVIEW_FIRST, Label, Response, SkippedRecord, Source, Verdict
from ..parse import Parser, make_parser
from ..parse.base import parser_traits
from ..references.step import ReferenceChecks, Resolver
from ..store import ResponseRow, SourceRow, StatementRow, Store
from ..store.vectors import VectorCache
from ..workers import CpuPool, WorkerStopped, shared_pool
from .commits import COMMIT_WINDOW_PAIRS, COMMIT_WINDOW_S, CommitWindow
from .counters import Counters
from .sources import SourceCache


class RunCancelled(Exception):
    pass


class Audit:
    """One audit run over a store. ``await Audit(...).start(responses)`` or ``.resume(run_id)``.

    ``fetcher``, ``judges`` and ``parser`` may be passed in (tests, the app's shared browser);
    otherwise they are built from the config and closed at the end. So may ``resolver``, the reference
    resolver (``check(Reference) -> ReferenceCheck``, ``aclose()``), used when ``config.references`` is enabled.
    """

    commit_window_pairs = COMMIT_WINDOW_PAIRS   # read when an execution starts (tests set them smaller)
    commit_window_s = COMMIT_WINDOW_S

    def __init__(self, store: Store, config: RunConfig | None = None, *,
                 progress: ProgressCallback | None = None, fetcher: Fetcher | None = None,
                 judges: Sequence[Judge] | None = None, parser: Parser | None = None,
                 cancel: asyncio.Event | None = None, max_active_responses: int | None = None,
                 resolver: Resolver | None = None) -> None:
        self.store = store
        self.config = config or RunConfig()
        self.progress = progress or ignore
        self._fetcher = fetcher
        self._judges = list(judges) if judges is not None else None
        self._parser = parser
        self._resolver = resolver   # the reference resolver (tests); else built from config.references
        self._refs: ReferenceChecks | None = None
        self.cancel = cancel or asyncio.Event()
        self.max_active = max_active_responses or max(16, 4 * self.config.judge_concurrency)
        self.run_id = ""
        self.c = Counters()
        # (statement pk, url, judge id) judged, for the responses in flight (filled from the store per response)
        self._judged: set[tuple[int, str, str]] = set()
        # streaming input (open_input / add_responses / close_input): responses that arrive while
        # the run goes on, as a benchmark's answers do; None in the queue ends one worker
        self._streaming = False
        self._workers = 0
        self._queue: asyncio.Queue[ResponseRow | None] | None = None
        self._urls: set[str] = set()
        self.window: CommitWindow | None = None    # this execution's commit window and sources
        self.sources: SourceCache | None = None

    # -- public entry points -----------------------------------------------------------
    def create(self, responses: Sequence[Response], skipped: Sequence[SkippedRecord] = (),
               input_label: str = "", notes: Sequence[str] = (),
               inputs: Sequence[Mapping[str, Any]] = ()) -> str:
        """Record a new run and its inputs; returns the run id (nothing judged yet).
        ``notes`` say how the inputs were read (IngestResult.notes); they go to the run log. ``inputs`` are the
        input files as read (:func:`~sourcecheckup.provenance.input_records`: path, bytes, SHA-256)."""
        config = self.config.to_dict()
        config["provenance"] = {"inputs": [dict(i) for i in inputs]}
        self.run_id = self.store.create_run(
            input=input_label, config=config, judges=self.config.judges,
            parser=self.config.parser, app_version=__version__)
        for note in notes:
            self.store.log(self.run_id, note, "info")
        self.store.add_responses(self.run_id, responses, skipped)
        for s in skipped:
            self.store.log(self.run_id, f"skipped {s.origin}: {s.problem}", "warning")
        self._log_unusable_citations(responses)
        return self.run_id

    def _log_unusable_citations(self, responses: Sequence[Response]) -> None:
        """Citations that name no link (kept in the answer's unusable_citations) are never fetched:
        the run log names each, so none is dropped without a word."""
        for r in responses:
            if unusable := r.extra.get(UNUSABLE_KEY):
                self.store.log(self.run_id, f"answer {r.origin or r.id}: citation(s) not read as a link, "
                               f"so not fetched: {unusable}", "warning")

    async def start(self, responses: Sequence[Response], skipped: Sequence[SkippedRecord] = (),
                    input_label: str = "", notes: Sequence[str] = (),
                    inputs: Sequence[Mapping[str, Any]] = ()) -> str:
        self.create(responses, skipped, input_label, notes, inputs)
        for s in skipped:
            self._emit(EventKind.SKIPPED, f"{s.origin}: {s.problem}")
        await self.execute(self.run_id)
        return self.run_id

    async def resume(self, run_id: str, config: RunConfig | None = None) -> str:
        """Judge what a run still lacks. ``config`` replaces the stored configuration (judge settings
        corrected after a run failed on them); without it the run goes on as it was configured."""
        run = self.store.get_run(run_id)
        if config is not None:
            self.config = config
            stored = config.to_dict()
            stored["provenance"] = run.config.get("provenance")   # what the run was made with stays recorded
            self.store.set_run_config(run.id, stored, config.judges, config.parser)
        elif self._judges is None:
            self.config = RunConfig.from_dict(run.config)
        await self.execute(run.id)
        return run.id

    def open_input(self) -> None:
        """Keep the next execute() going until close_input(): responses given to add_responses()
        meanwhile are judged as they arrive (a benchmark audits answers while others are written)."""
        self._streaming = True

    def add_responses(self, responses: Sequence[Response], skipped: Sequence[SkippedRecord] = ()) -> None:
        """Add responses to the run; while the run executes they join its work at once.

        Stored first, so a crash before they are judged leaves them for resume.
        """
        if not self.run_id:
            raise ValueError("create() the run before adding responses to it")
        rows = self.store.add_responses(self.run_id, responses, skipped)
        for sk in skipped:
            self.store.log(self.run_id, f"skipped {sk.origin}: {sk.problem}", "warning")
            self._emit(EventKind.SKIPPED, f"{sk.origin}: {sk.problem}")
        self._log_unusable_citations(responses)
        if self._queue is None:
            return   # not executing yet: execute() reads them from the store
        self._count_new(rows)
        for row in rows:
            self._queue.put_nowait(row)
        self._emit(EventKind.INGESTED, f"{len(rows)} responses added")

    def close_input(self) -> None:
        """No more responses: execute() ends once those given are judged."""
        self._streaming = False
        if self._queue is not None:
            for _ in range(self._workers):
                self._queue.put_nowait(None)

    def _count_new(self, rows: Sequence[ResponseRow]) -> None:
        self.c.responses_total += len(rows)
        self.c.responses_done += sum(1 for r in rows if r.done)
        self._urls.update(u for r in rows for u in r.response.citations)
        self.c.sources_total = len(self._urls)
        if self._refs is not None:   # a resumed run checks the citations of finished responses too
            for r in rows:
                self._refs.schedule(r.response)

    # -- the run -----------------------------------------------------------------------
    async def execute(self, run_id: str) -> None:
        self.run_id = run_id
        self.store.set_run_status(run_id, "running")
        rows = self.store.responses(run_id)
        self._refs = None
        self.c = Counters()
        self._urls = set()
        self._count_new(rows)
        self._judged = set()   # filled per response in flight from the store (judged_keys_for)
        self._emit(EventKind.RUN_STARTED, f"{len(rows)} responses")
        owns_fetcher = self._fetcher is None
        judges_open = contextlib.AsyncExitStack()   # closes the judges this run built
        try:
            if self.config.embeddings:   # the built-in judge's embeddings from a served model, for this run
                from .. import embeddings

                judges_open.enter_context(embeddings.use_served(self.config.embeddings))
            if self.config.reader:   # builtin:reader's probabilities from a rerank server, for this run
                from ..judges.builtin.served_reader import use_served_reader

                judges_open.enter_context(use_served_reader(self.config.reader))
            # each judge is loaded here: a broken local model fails before any work is done
            judges = await judges_open.enter_async_context(
                open_judges(self.config.judges, self.config.judge_options, given=self._judges))
            # the offline parser takes no judge options; an LLM parser uses the judges' (keys, base URL)
            parser = self._parser or make_parser(self.config.parser, **(
                {} if self.config.parser == "builtin" else self.config.judge_options))
            fetcher = self._fetcher or make_fetcher(self.config.fetch)
        except Exception as exc:
            await judges_open.aclose()
            self.store.set_run_status(run_id, "failed", str(exc))
            self._emit(EventKind.RUN_FINISHED, f"failed: {exc}")
            raise
        if self.config.references.enabled:
            self._refs = ReferenceChecks(
                self.store, run_id, self.config.references, retraction_data=self.config.retraction_data,
                resolver=self._resolver, cancel=self.cancel,
                emit=lambda m: self._emit(EventKind.REFERENCE_CHECKED, m), log=self._log)
            for r in rows:
                self._refs.schedule(r.response)
        ids = [j.id for j in judges]
        if ids != self.store.get_run(run_id).judges:  # metrics wait for every judge named on the run
            self.store.set_run_judges(run_id, ids)
        counted = self._count_earlier(run_id, ids)
        self.sources = SourceCache(self.store, run_id, self.config, fetcher, self._refs, self.c, self._emit, counted)
        self.window = window = CommitWindow(self.store, run_id, self.c, self._emit,
                                            pairs=self.commit_window_pairs, seconds=self.commit_window_s)
        self._record_provenance(run_id, judges)
        vector_cache = self._attach_vector_cache(judges)
        status, message = "completed", ""
        committer = asyncio.create_task(window.commit_every_window())
        try:
            await self._process_all([r for r in rows if not r.done], judges, parser)
            if self._refs is not None and not self.cancel.is_set():
                await self._refs.wait_all()
            window.commit()
            if not self.cancel.is_set():   # OLAPH's expert statements against each answer, EVAL's similarity
                await expert_step(self.store, run_id, judges, self._judge_sem, self.cancel, self._log)
            if self.cancel.is_set():
                status, message = "cancelled", "cancelled by the user"
        except (asyncio.CancelledError, RunCancelled):
            status, message = "cancelled", "cancelled"
            raise
        except BaseException as exc:   # also a KeyboardInterrupt: never "completed"
            status, message = "failed", f"{type(exc).__name__}: {exc}"
            raise
        finally:
            committer.cancel()
            with contextlib.suppress(Exception):   # what was judged before a cancel or an error is kept
                window.commit()
            with contextlib.suppress(Exception):   # a full disk: the run's error is already being raised
                self.store.set_run_status(run_id, status, message)
            # collected, so that a task that failed too (the same full disk) is not reported again
            await asyncio.gather(committer, return_exceptions=True)
            await self.sources.cancel_all()
            if self._refs is not None:
                await self._refs.aclose()
            if owns_fetcher:
                await fetcher.aclose()
            self._detach_vector_cache(judges, vector_cache)
            await judges_open.aclose()
            close = parser_traits(parser).aclose
            if self._parser is None and close is not None:
                await close()
            self._emit(EventKind.RUN_FINISHED, status if not message else f"{status}: {message}")

    def _count_earlier(self, run_id: str, judge_ids: Sequence[str]) -> set[str]:
        """A resumed run's progress counts the whole run: sources read and pairs judged before count as done.
        Returns the URLs counted as read."""
        earlier = self.store.earlier_progress(run_id, judge_ids)
        counted = set(earlier.sources_read & self._urls)
        self.c.sources_done = len(counted)
        self.c.fetch_failures = len(earlier.unreadable & self._urls)
        self.c.pairs_total = self.c.pairs_done = earlier.pairs
        self.c.verdicts_total = self.c.verdicts_done = earlier.verdicts
        self.c.judge_errors = earlier.judge_errors
        return counted

    def _record_provenance(self, run_id: str, judges: Sequence[Judge]) -> None:
        """Store the software, judges and reference data this execution uses (the report's audit trail)."""
        from ..provenance import record_execution

        run = self.store.get_run(run_id)
        config = dict(run.config)
        retractions = self.config.retraction_data if self.config.references.enabled else None
        config["provenance"] = record_execution(config.get("provenance"), judges, retractions)
        self.store.set_run_config(run_id, config, run.judges, run.parser)

    def _attach_vector_cache(self, judges: Sequence[Judge]) -> VectorCache | None:
        """A judge that embeds source sentences keeps their vectors in this database: a page judged
        against many statements, or again in a later run, is embedded once."""
        takers = [j for j in judges if judge_traits(j).takes_vector_cache]
        if not takers or str(self.store.path) == ":memory:":
            return None
        cache = VectorCache(self.store.path)
        for judge in takers:
            judge.vector_cache = cache  # type: ignore[attr-defined]
        return cache

    @staticmethod
    def _detach_vector_cache(judges: Sequence[Judge], cache: VectorCache | None) -> None:
        for judge in judges if cache is not None else ():
            if judge_traits(judge).takes_vector_cache and judge.vector_cache is cache:  # type: ignore[attr-defined]
                judge.vector_cache = None  # type: ignore[attr-defined]
        if cache is not None:
            cache.close()

    async def _process_all(self, rows: Sequence[ResponseRow], judges: Sequence[Judge], parser: Parser) -> None:
        self._judge_sem = asyncio.Semaphore(max(1, self.config.judge_concurrency))
        queue: asyncio.Queue[ResponseRow | None] = asyncio.Queue()
        self._workers = self.max_active if self._streaming else min(self.max_active, max(1, len(rows)))
        for r in rows:
            queue.put_nowait(r)
        self._queue = queue
        if not self._streaming:
            for _ in range(self._workers):
                queue.put_nowait(None)

        async def worker() -> None:
            while not self.cancel.is_set():
                row = await queue.get()
                if row is None:
                    return
                await self._process_response(row, judges, parser)

        workers = [asyncio.create_task(worker()) for _ in range(self._workers)]
        cancel_wait = asyncio.create_task(self.cancel.wait())
        try:
            pending: set[asyncio.Task[Any]] = set(workers)
            while pending:
                done, pending = await asyncio.wait(pending | {cancel_wait}, return_when=asyncio.FIRST_COMPLETED)
                for t in done:
                    if t is not cancel_wait and t.exception():
                        raise t.exception()  # type: ignore[misc]
                pending.discard(cancel_wait)
                if cancel_wait in done:
                    for t in pending:
                        t.cancel()
                    await asyncio.gather(*pending, return_exceptions=True)
                    return
        finally:
            self._queue = None   # responses added from now on wait in the store for a resume
            cancel_wait.cancel()
            for t in workers:
                if not t.done():
                    t.cancel()
            # every worker's end is collected: when several fail at once (a full disk fails them all),
            # the first is raised and the others are not left as "Task exception was never retrieved"
            await asyncio.gather(*workers, return_exceptions=True)

    async def _process_response(self, row: ResponseRow, judges: Sequence[Judge], parser: Parser) -> None:
        statements = self.store.statements_for(row.pk) if row.parsed else []
        if not row.parsed:
            try:
                parsed = await self._parse(parser, row.response)
            except Exception as exc:
                self.store.log(self.run_id, f"parser failed on {row.response.id}: {exc}", "error")
                raise
            take_warnings = parser_traits(parser).take_warnings  # e.g. an LLM parser that fell back
            for warning in (take_warnings(row.response) if take_warnings else []):
                self.store.log(self.run_id, warning, "warning")
                self._emit(EventKind.WARNING, warning)
            statements = self.store.save_statements(self.run_id, row.pk, parsed)
            self._emit(EventKind.PARSED, row.response.id)
        informative = [s for s in statements if s.statement.informative]
        self._judged |= self.store.judged_keys_for(self.run_id, [s.pk for s in informative])
        urls = list(dict.fromkeys(row.response.citations))
        assert self.sources is not None and self.window is not None   # execute() made them
        tasks = self.sources.hold(urls)
        # verdicts still to give per pair; a pair is done when its last judge's verdict is committed
        left = {(s.pk, u): n for s in informative for u in urls
                if (n := sum(1 for j in judges if (s.pk, u, j.id) not in self._judged))}
        self.window.expect(left)
        for fut in asyncio.as_completed(tasks):
            src_row = await fut
            url = src_row.source.url
            if not src_row.source.valid:   # no pairs for an unreadable source
                for s in informative:
                    self.window.forget((s.pk, url))
                continue
            # counted once the source is known readable, so that a total never goes back
            planned = [n for s in informative if (n := left.get((s.pk, url), 0))]
            self.c.pairs_total += len(planned)
            self.c.verdicts_total += sum(planned)
            await self._judge_source(informative, url, src_row, judges)
        self._release(urls, informative, judges)
        if self.cancel.is_set():
            return  # pairs skipped after the cancel must be judged on resume
        self.window.response_done(row)   # stored done with its verdicts at the next commit

    async def _parse(self, parser: Parser, response: Response) -> list:
        """The builtin parser's sentence splitting is CPU work: in a worker once the run is big enough."""
        pool = self._cpu_pool()
        if pool is not None and parser_traits(parser).parse_in_worker:
            try:
                return await pool.run(parser.parse_sync, response, inline=True)   # type: ignore[attr-defined]
            except WorkerStopped:
                raise
            except Exception:   # e.g. a plugin's subclass that does not pickle: parsed here (a real error recurs)
                pass
        return await parser.parse(response)

    def _cpu_pool(self) -> CpuPool | None:
        return None if self.config.fetch.extract_workers == 0 else shared_pool()

    def _release(self, urls: Sequence[str], informative: Sequence[StatementRow], judges: Sequence[Judge]) -> None:
        """A response is through: forget its judged keys, and the sources no response in flight cites."""
        self._judged.difference_update((s.pk, u, j.id) for s in informative for u in urls for j in judges)
        assert self.sources is not None
        self.sources.release(urls)

    # -- judging -----------------------------------------------------------------------
    async def _judge_source(self, informative: Sequence[StatementRow], url: str, src_row: SourceRow,
                            judges: Sequence[Judge]) -> None:
        assert self.sources is not None
        source_text = self.sources.text(src_row)
        jobs = []
        for judge in judges:
            todo = [s for s in informative if (s.pk, url, judge.id) not in self._judged]
            if not todo:
                continue
            if judge_traits(judge).per_source_batching:
                jobs.append(self._judge_batch(judge, todo, url, src_row, source_text))
            else:
                jobs.extend(self._judge_batch(judge, [s], url, src_row, source_text) for s in todo)
        running = [asyncio.ensure_future(job) for job in jobs]
        try:
            await asyncio.gather(*running)
        except BaseException:   # one failed: its siblings must not go on calling the judge for a dead run
            for task in running:
                task.cancel()
            raise

    async def _judge_batch(self, judge: Judge, statements: Sequence[StatementRow], url: str,
                           src_row: SourceRow, source_text: SourceText) -> None:
        async with self._judge_sem:
            if self.cancel.is_set():
                return
            try:
                if len(statements) == 1:
                    verdicts = [await judge.verify(statements[0].statement.text, source_text)]
                else:
                    verdicts = await judge.verify_many([(s.statement.text, source_text) for s in statements])
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a judge that raises still yields honest judge_error rows
                verdicts = [Verdict.error(judge.id, f"{type(exc).__name__}: {exc}",
                                          prompt_version=judge.prompt_version)
                            for _ in statements]
        assert self.window is not None
        for s, verdict in zip(statements, verdicts):
            self._judged.add((s.pk, url, judge.id))
            self.window.add(s.pk, url, src_row.id, finalise_verdict(verdict, judge, src_row.source))
        self.window.commit_if_full()

    def _log(self, message: str, level: str) -> None:
        self.store.log(self.run_id, message, level)
        if level != "info":
            self._emit(EventKind.WARNING, message)

    def _emit(self, kind: EventKind, message: str = "") -> None:
        counts = vars(self.c).copy()   # flat ints: cheaper than dataclasses.asdict on every pair
        counts["pairs_total"] = max(self.c.pairs_total, self.c.pairs_done)
        counts["verdicts_total"] = max(self.c.verdicts_total, self.c.verdicts_done)
        if self._refs is not None:
            counts["references_total"], counts["references_done"] = self._refs.total, self._refs.done
        try:
            self.progress(ProgressEvent(kind, self.run_id, message=message, **counts))
        except Exception:  # a broken progress view must not break the run
            pass


async def reaudit(store: Store, run_id: str, config_overrides: Mapping[str, Any] | None = None, *,
                  progress: ProgressCallback | None = None, cancel: asyncio.Event | None = None,
                  fetcher: Fetcher | None = None, judges: Sequence[Judge] | None = None,
                  parser: Parser | None = None) -> str:
    """Audit an earlier run's responses again as a new run, fetching every source again ("Fetch
    sources again" in the app, ``--refetch`` on the CLI); returns the new run's id.

    The earlier run's stored configuration is used, with ``config_overrides`` on top (RunConfig
    fields; ``"fetch"`` may be a dict of FetchOptions fields or a FetchOptions, merged over the
    stored one), so corrected settings (an allowed host, judge options with keys) take effect.
    Sources whose bytes differ from an earlier fetch are flagged "changed".
    """
    run = store.get_run(run_id)
    stored = dict(run.config)
    overrides = dict(config_overrides or {})
    fetch_over = overrides.pop("fetch", None) or {}
    if isinstance(fetch_over, FetchOptions):
        fetch_over = RunConfig(fetch=fetch_over).to_dict()["fetch"]
    stored.update(overrides)
    stored["fetch"] = {**dict(stored.get("fetch") or {}), **dict(fetch_over)}
    stored["refetch"] = True
    config = RunConfig.from_dict(stored)
    if "judge_options" in overrides:   # keys are never stored, so they come in unfiltered here
        config.judge_options = dict(overrides["judge_options"])
    responses = [row.response for row in store.responses(run.id)]
    audit = Audit(store, config, progress=progress, fetcher=fetcher, judges=judges, parser=parser, cancel=cancel)
    return await audit.start(responses, store.skipped(run.id), input_label=f"re-audit of run {run.id}: {run.input}")


def finalise_verdict(verdict: Verdict, judge: Judge, source: Source) -> Verdict:
    """Enforce the rules every stored verdict obeys, whatever backend produced it."""
    changes: dict[str, Any] = {}
    if not verdict.judge_id:
        changes["judge_id"] = judge.id
    if not verdict.prompt_version:
        changes["prompt_version"] = judge.prompt_version
    found = quote_in_source(verdict.quote, source.text)  # checked here, never taken on trust
    if found != verdict.quote_found:
        changes["quote_found"] = found
    flags = list(verdict.flags)
    if found is False and "quote_not_found" not in flags:
        flags.append("quote_not_found")
    if found is False and verdict.label is Label.SUPPORTED and REVIEW_FIRST not in flags:
        flags.append(REVIEW_FIRST)   # "supported" on a quote the source does not hold: a person looks first
    for f in source.flags:
        if f in ("possible_injection",) and f not in flags:
            flags.append(f)
    if tuple(flags) != verdict.flags:
        changes["flags"] = tuple(flags)
    return dataclasses.replace(verdict, **changes) if changes else verdict


def run_sync(coro_factory: Callable[[], Any]) -> Any:
    """Run an engine coroutine from synchronous code (the CLI, a worker thread)."""
    return asyncio.run(coro_factory())
