"""The store owns every SQL statement: SQLite is the single source of truth for runs, responses,
statements, sources, verdicts, reviews, suggestions and benchmarks.

One file, WAL mode, a schema version table and ordered migrations (:mod:`.migrations`) from the
first release on. Judged work is committed in short windows (:meth:`Store.commit_judged`: a
pipeline's verdicts and the responses they finish, in one transaction), so a crash or a kill loses
at most the last uncommitted window, which a resume judges again; nothing committed is lost. :class:`Store` is
the one way in; its methods for the review, suggestion and benchmark tables live in :mod:`.reviews`,
:mod:`.suggestions` and :mod:`.benchmark`.
"""
from __future__ import annotations

import os
import sqlite3
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Iterator, Sequence

import sqlite_utils

from ..models import (
    ExpertReference,
    FetchStatus,
    Response,
    SkippedRecord,
    Source,
    Statement,
    StatementCategory,
    Verdict,
    new_run_id,
    utcnow,
)
from ..run_owner import Owner, owner_alive, owner_note, this_process
from . import wal
from .benchmark import BenchTables
from .browse import BrowseTables
from .columns import dump_json, load_json, stored_label
from .evidence import EvidenceTables
from .expert import ExpertTables
from .export import ExportTables
from .grades import GradeTables
from .migrations import MIGRATIONS
from .progress import EarlierProgress, ProgressTables
from .references import ReferenceTables
from .repairs import RepairTables
from .reviews import ReviewTables
from .suggestions import SuggestionTables

__all__ = ["MIGRATIONS", "EarlierProgress", "ResponseRow", "RunData", "RunRow", "SourceRow", "StatementRow", "Store",
           "StoreError", "VerdictRow", "default_db_path", "dump_json", "load_json"]

BUSY_TIMEOUT_S = 30.0         # how long an opener waits for another process's write (a migration)
RAW_CAP_BYTES = 5_000_000      # raw bytes kept per source (compressed); beyond it only the hash
DB_ENV = "SOURCECHECKUP_DB"


def default_db_path() -> Path:
    env = os.environ.get(DB_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir("sourcecheckup", appauthor=False)) / "audits.db"


class StoreError(RuntimeError):
    pass


def not_yet_a_database(path: Path) -> str | None:
    """Why the file at ``path`` is not a SourceCheckup database (empty, or SQLite without our schema), read
    without writing to it; None when it is one, or when opening it will say what is wrong (not SQLite,
    busy). A reading command must not give such a file a schema, as opening it to write would."""
    if path.stat().st_size == 0:
        return "the file is empty"
    try:
        conn = sqlite3.connect(f"{path.resolve().as_uri()}?mode=ro", uri=True, timeout=BUSY_TIMEOUT_S)
    except sqlite3.Error:
        return None
    try:
        found = conn.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
                             ).fetchone()
    except sqlite3.Error:
        return None
    finally:
        conn.close()
    return None if found else "an SQLite file without SourceCheckup's tables"


def write_blocker(path: Path) -> str | None:
    """Why a database at ``path`` cannot be written (its file or folder; a read-only mount), else None.
    SQLite in WAL mode writes a -wal and a -shm file beside the database, so the folder counts too."""
    folder = path.parent if path.parent.exists() else None
    probe = path if path.exists() else folder
    if probe is None:
        return None
    try:
        if os.statvfs(probe).f_flag & os.ST_RDONLY:
            return "it is on a read-only file system"
    except (OSError, AttributeError):
        pass
    if path.exists() and not os.access(path, os.W_OK):
        return "its file cannot be written"
    if folder is not None and not os.access(folder, os.W_OK):
        return "its folder cannot be written, so SQLite cannot keep its journal beside it"
    return None


# ---------------------------------------------------------------------------- rows

@dataclass(frozen=True)
class RunRow:
    id: str
    created_at: str
    finished_at: str | None
    status: str
    input: str
    config: dict[str, Any]
    judges: list[str]
    parser: str
    app_version: str
    n_records: int
    n_skipped: int
    message: str
    name: str = ""    # the user's name for the run ("" when not named)
    note: str = ""    # the user's note on the run


@dataclass(frozen=True)
class ResponseRow:
    pk: int
    run_id: str
    ord: int
    response: Response
    parsed: bool
    done: bool


@dataclass(frozen=True)
class StatementRow:
    pk: int
    response_pk: int
    statement: Statement


@dataclass(frozen=True)
class SourceRow:
    id: int
    source: Source


@dataclass(frozen=True)
class VerdictRow:
    pk: int
    statement_pk: int
    url: str
    source_id: int | None
    verdict: Verdict
    created_at: str


@dataclass
class RunData:
    """Everything stored for one run, loaded in a handful of queries."""

    run: RunRow
    responses: list[ResponseRow]
    statements: dict[int, list[StatementRow]]            # response_pk -> statements in order
    sources: dict[str, SourceRow]                        # url -> the fetch this run used
    verdicts: dict[int, list[VerdictRow]]                # statement_pk -> verdicts
    skipped: list[SkippedRecord] = field(default_factory=list)


class Store(ReviewTables, SuggestionTables, RepairTables, BenchTables, ReferenceTables, ExportTables, BrowseTables,
            EvidenceTables, ExpertTables, GradeTables, ProgressTables):
    """A SourceCheckup database. Thread-affine like sqlite3: use one Store per thread."""

    def __init__(self, path: str | Path | None = None, *, check_same_thread: bool = True,
                 read_only: bool | None = False) -> None:
        """Open (or create) the database. ``read_only``: False, to write (a database that cannot be
        written is refused as read-only, in those words); None, to read: written normally, but read
        only where its file or folder cannot be written (a read-only mount); True, read only."""
        self.path = Path(path) if path is not None else default_db_path()
        self.read_only = False
        self.read_only_why = ""     # why it was opened read-only ("read-only file system")
        blocked = write_blocker(self.path) if str(self.path) != ":memory:" else None
        if blocked and read_only is False:
            raise StoreError(f"{self.path}: the database is read-only ({blocked}); this command writes to it: "
                             "copy the file to a folder you can write, or use --db to name another database")
        if str(self.path) != ":memory:" and not blocked:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        if blocked or read_only:
            self._open_read_only(check_same_thread, blocked or "opened read-only")
            return
        try:
            conn = wal.connect(str(self.path), check_same_thread=check_same_thread, timeout=BUSY_TIMEOUT_S)
            self.db = sqlite_utils.Database(conn)
            self._set_wal()
            self.db.execute("PRAGMA synchronous=NORMAL")
            self.db.execute("PRAGMA foreign_keys=ON")
            self._migrate()
        except sqlite3.OperationalError as exc:
            if "locked" in str(exc) or "busy" in str(exc):
                raise StoreError(f"{self.path} is busy: another process kept it locked for more than "
                                 f"{BUSY_TIMEOUT_S:g} s ({exc}); try again when it has finished") from exc
            raise StoreError(f"{self.path} is not a usable SourceCheckup database: {exc}") from exc
        except sqlite3.DatabaseError as exc:
            raise StoreError(f"{self.path} is not a usable SourceCheckup database: {exc}") from exc

    def _open_read_only(self, check_same_thread: bool, why: str) -> None:
        """SQLite's read-only mode; ``immutable=1`` where even that cannot open it (a WAL database on a
        read-only mount, whose -shm index cannot be created: nothing can change it there anyway)."""
        if not self.path.is_file():
            raise StoreError(f"{self.path}: no such database")
        uri = self.path.resolve().as_uri()
        last: Exception | None = None
        for mode in ("mode=ro", "immutable=1"):
            conn = wal.connect(str(self.path), uri=f"{uri}?{mode}", check_same_thread=check_same_thread,
                               timeout=BUSY_TIMEOUT_S)
            try:
                conn.execute("SELECT COUNT(*) FROM sqlite_master").fetchone()
            except sqlite3.DatabaseError as exc:
                conn.close()
                last = exc
                continue
            self.db = sqlite_utils.Database(conn)
            self.read_only, self.read_only_why = True, why
            version = self._current_version()
            if version != len(MIGRATIONS):
                conn.close()
                newer = version > len(MIGRATIONS)
                raise StoreError(f"{self.path}: the database is read-only ({why}) and was written by "
                                 + (f"a newer SourceCheckup (schema {version}); upgrade the app to open it" if newer else
                                    f"an older SourceCheckup (schema {version} of {len(MIGRATIONS)}); open it once "
                                    "where it can be written to upgrade it"))
            return
        raise StoreError(f"{self.path} is not a usable SourceCheckup database (opened read-only: {why}): {last}")

    def in_memory_copy(self) -> "Store":
        """A writable copy of this database in memory: what a reading command that keeps a scratch
        result (a drawn review sample) uses on a read-only database."""
        copy = Store(":memory:")
        copy.db.conn.close()
        conn = sqlite3.connect(":memory:")
        self.db.conn.backup(conn)
        copy.db = sqlite_utils.Database(conn)
        copy.path = self.path
        return copy

    # -- lifecycle ------------------------------------------------------------------
    def close(self) -> None:
        self.db.conn.close()

    def __enter__(self) -> "Store":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _set_wal(self) -> None:
        """WAL mode; a new file opened by two processes at once can refuse the switch for a moment,
        and SQLite does not wait on a busy handler for it, so we do."""
        deadline = time.monotonic() + BUSY_TIMEOUT_S
        while True:
            try:
                self.db.execute("PRAGMA journal_mode=WAL")
                return
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def _current_version(self) -> int:
        if not self.db.execute("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'"
                               ).fetchone():
            return 0
        return self.db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] or 0

    def _migrate(self) -> None:
        if self._current_version() == len(MIGRATIONS):
            return   # the usual open: nothing to write, no lock taken
        conn = self.db.conn
        # one writer migrates; another opener waits here (busy timeout) and then finds it done
        conn.execute("BEGIN EXCLUSIVE")
        try:
            current = self._current_version()
            if current > len(MIGRATIONS):
                raise StoreError(f"{self.path} was written by a newer SourceCheckup (schema {current}); "
                                 "upgrade the app to open it")
            if current == 0 and "schema_version" not in self.db.table_names():
                self.db.table("schema_version").create({"version": int, "applied_at": str}, pk="version")
            for version in range(current + 1, len(MIGRATIONS) + 1):
                MIGRATIONS[version - 1](self.db)
                self.db.table("schema_version").insert({"version": version, "applied_at": utcnow()})
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise

    @property
    def schema_version(self) -> int:
        return self.db.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] or 0

    # -- runs -------------------------------------------------------------------------
    def create_run(self, *, input: str, config: dict[str, Any], judges: Sequence[str], parser: str,
                   app_version: str, run_id: str | None = None) -> str:
        run_id = run_id or new_run_id()
        with self.db.conn:
            self.db.table("runs").insert({
                "id": run_id, "created_at": utcnow(), "finished_at": None, "status": "running",
                "input": input, "config": dump_json(config), "judges": dump_json(list(judges)), "parser": parser,
                "app_version": app_version, "n_records": 0, "n_skipped": 0, "message": "",
            })
            self._take_ownership(run_id)
        return run_id

    def _take_ownership(self, run_id: str) -> None:
        # which process runs it: a killed one leaves the run "interrupted" (run_interrupted)
        owner = this_process()
        self.db.table("runs").update(run_id, {"owner_pid": owner.pid, "owner_host": owner.host,
                                        "owner_started": owner.started})
        self.db.table("run_log").insert({"run_id": run_id, "at": utcnow(), "level": "info", "message": owner_note(owner)})

    def set_run_status(self, run_id: str, status: str, message: str = "") -> None:
        finished = utcnow() if status in ("completed", "cancelled", "failed") else None
        with self.db.conn:
            self.db.table("runs").update(run_id, {"status": status, "message": message, "finished_at": finished})
            if status == "running":
                self._take_ownership(run_id)

    def run_interrupted(self, run: RunRow) -> bool:
        """A run stored as running whose process ended without finishing it (killed, crashed)."""
        if run.status != "running":
            return False
        row = self.db.execute("SELECT owner_pid, owner_host, owner_started FROM runs WHERE id = ?", [run.id]).fetchone()
        owner = Owner(row[0], row[1], row[2]) if row and row[0] is not None else None
        return owner_alive(owner) is False

    def set_run_config(self, run_id: str, config: dict[str, Any], judges: Sequence[str], parser: str) -> None:
        """Replace a run's configuration (a resume with corrected judge settings)."""
        with self.db.conn:
            self.db.table("runs").update(run_id, {"config": dump_json(config), "judges": dump_json(list(judges)),
                                            "parser": parser})

    def set_run_label(self, run_id: str, *, name: str | None = None, note: str | None = None) -> RunRow:
        """Name a run and/or set its note (None leaves that field as it is); returns the run."""
        run = self.get_run(run_id)
        changes = {k: v.strip() for k, v in (("name", name), ("note", note)) if v is not None}
        if changes:
            with self.db.conn:
                self.db.table("runs").update(run.id, changes)
        return self.get_run(run.id)

    def set_run_judges(self, run_id: str, judge_ids: Sequence[str]) -> None:
        with self.db.conn:
            self.db.table("runs").update(run_id, {"judges": dump_json(list(judge_ids))})

    def find_by_id(self, table: str, ident: str, noun: str, listing: str = "") -> dict[str, Any]:
        """The row whose id is ``ident``, or the one row whose id contains it (users type fragments)."""
        rows = list(self.db.query(f"SELECT * FROM [{table}] WHERE id = ?", [ident]))
        if not rows:
            rows = list(self.db.query(f"SELECT * FROM [{table}] WHERE id LIKE ? ORDER BY created_at DESC",
                                      [f"%{ident}%"]))
            if len(rows) != 1:
                hint = "" if not rows else f" (matches {', '.join(r['id'] for r in rows[:5])})"
                raise StoreError(f"no {noun} '{ident}' in {self.path}{hint}{listing}")
        return rows[0]

    def get_run(self, run_id: str) -> RunRow:
        return self._run_row(self.find_by_id("runs", run_id, "run", "; `sourcecheckup runs` lists them"))

    def latest_run_id(self) -> str | None:
        latest = self.latest_run_status()
        return latest[0] if latest else None

    def latest_run_status(self) -> tuple[str, str] | None:
        """(id, status) of the newest run in one plain read (no savepoint): a cluster shard asks it of its
        part while the audit process of a worker that just died may still be ending."""
        rows = self.db.execute("SELECT id, status FROM runs ORDER BY created_at DESC, rowid DESC LIMIT 1").fetchall()
        return (rows[0][0], rows[0][1]) if rows else None

    def list_runs(self) -> list[RunRow]:
        return [self._run_row(r) for r in self.db.query("SELECT * FROM runs ORDER BY created_at DESC, rowid DESC")]

    @staticmethod
    def _run_row(r: dict[str, Any]) -> RunRow:
        return RunRow(id=r["id"], created_at=r["created_at"], finished_at=r["finished_at"],
                      status=r["status"], input=r["input"] or "", config=load_json(r["config"], {}),
                      judges=load_json(r["judges"], []), parser=r["parser"] or "",
                      app_version=r["app_version"] or "", n_records=r["n_records"] or 0,
                      n_skipped=r["n_skipped"] or 0, message=r["message"] or "",
                      name=r.get("name") or "", note=r.get("note") or "")

    def log(self, run_id: str, message: str, level: str = "info") -> None:
        with self.db.conn:
            self.db.table("run_log").insert({"run_id": run_id, "at": utcnow(), "level": level, "message": message})

    def run_log(self, run_id: str) -> list[dict[str, Any]]:
        return list(self.db.query("SELECT at, level, message FROM run_log WHERE run_id = ? ORDER BY pk", [run_id]))

    # -- responses & skipped ---------------------------------------------------------
    def add_responses(self, run_id: str, responses: Sequence[Response],
                      skipped: Sequence[SkippedRecord] = ()) -> list[ResponseRow]:
        """Append responses (and skipped records) to a run; returns the stored rows of the responses."""
        start = self.db.execute("SELECT COALESCE(MAX(ord), -1) + 1 FROM responses WHERE run_id = ?",
                                [run_id]).fetchone()[0]
        with self.db.conn:
            self.db.table("responses").insert_all(({
                "run_id": run_id, "ord": start + i, "rid": r.id, "question": r.question, "model": r.model,
                "text": r.text, "citations": dump_json(list(r.citations)), "markers": dump_json(dict(r.markers)),
                "origin": r.origin, "extra": dump_json(dict(r.extra)), "parsed": 0, "done": 0,
                "refs": dump_json({str(k): v for k, v in r.references.items()}),
                "reference_answer": r.expert.reference_answer if r.expert else None,
                "must_have": dump_json(list(r.expert.must_have)) if r.expert else None,
                "nice_to_have": dump_json(list(r.expert.nice_to_have)) if r.expert else None,
            } for i, r in enumerate(responses)), batch_size=500)
            self.db.table("skipped").insert_all(({"run_id": run_id, "origin": s.origin, "problem": s.problem}
                                           for s in skipped), batch_size=500)
            self.db.execute("UPDATE runs SET n_records = n_records + ?, n_skipped = n_skipped + ? WHERE id = ?",
                            [len(responses) + len(skipped), len(skipped), run_id])
        if not responses:
            return []
        return [self._response_row(r) for r in
                self.db.query("SELECT * FROM responses WHERE run_id = ? AND ord >= ? ORDER BY ord", [run_id, start])]

    def responses(self, run_id: str) -> list[ResponseRow]:
        return [self._response_row(r) for r in
                self.db.query("SELECT * FROM responses WHERE run_id = ? ORDER BY ord", [run_id])]

    @staticmethod
    def _response_row(r: dict[str, Any]) -> ResponseRow:
        resp = Response(id=r["rid"], text=r["text"], citations=tuple(load_json(r["citations"], [])),
                        question=r["question"], model=r["model"], origin=r["origin"] or "",
                        markers=load_json(r["markers"], {}), extra=load_json(r["extra"], {}),
                        references={int(k): v for k, v in load_json(r.get("refs"), {}).items()},
                        expert=ExpertReference(r.get("reference_answer") or "", tuple(load_json(r.get("must_have"), [])),
                                               tuple(load_json(r.get("nice_to_have"), []))) or None)
        return ResponseRow(pk=r["pk"], run_id=r["run_id"], ord=r["ord"], response=resp,
                           parsed=bool(r["parsed"]), done=bool(r["done"]))

    def skipped(self, run_id: str) -> list[SkippedRecord]:
        return [SkippedRecord(r["origin"], r["problem"]) for r in
                self.db.query("SELECT origin, problem FROM skipped WHERE run_id = ? ORDER BY pk", [run_id])]

    def mark_response_done(self, response_pk: int) -> None:
        with self.db.conn:
            self.db.table("responses").update(response_pk, {"done": 1})

    # -- statements ------------------------------------------------------------------
    def save_statements(self, run_id: str, response_pk: int, statements: Sequence[Statement]) -> list[StatementRow]:
        """Store a response's statements once; a second call returns what is stored."""
        with self.db.conn:
            existing = self.statements_for(response_pk)
            if existing:
                return existing
            # one statement for the lot: this runs once per response of a run
            self.db.conn.executemany(
                "INSERT INTO statements (response_pk, run_id, ord, text, category, cited, [start], [end]) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                [(response_pk, run_id, s.index, s.text, s.category.value, dump_json(list(s.cited)), s.start, s.end)
                 for s in statements])
            self.db.conn.execute("UPDATE responses SET parsed = 1 WHERE pk = ?", [response_pk])
        return self.statements_for(response_pk)

    def statements_for(self, response_pk: int) -> list[StatementRow]:
        return [self._statement_row(r) for r in
                self.db.query("SELECT * FROM statements WHERE response_pk = ? ORDER BY ord", [response_pk])]

    @staticmethod
    def _statement_row(r: dict[str, Any]) -> StatementRow:
        st = Statement(index=r["ord"], text=r["text"], category=StatementCategory(r["category"]),
                       cited=tuple(load_json(r["cited"], [])), start=r["start"], end=r["end"])
        return StatementRow(pk=r["pk"], response_pk=r["response_pk"], statement=st)

    def statement_ids(self, run_id: str) -> dict[int, str]:
        """statement pk -> the id a report shows ("response-id/s3")."""
        return {r["pk"]: f"{r['rid']}/s{r['ord'] + 1}" for r in self.db.query(
            "SELECT s.pk, s.ord, r.rid FROM statements s JOIN responses r ON r.pk = s.response_pk "
            "WHERE s.run_id = ?", [run_id])}

    # -- sources ---------------------------------------------------------------------
    def add_source(self, source: Source) -> int:
        """Store one fetch. Flags it 'changed' when an earlier fetch of the URL read other bytes."""
        return self.record_fetch(source).id

    def record_fetch(self, source: Source, *, link: tuple[str, str] | None = None,
                     previous: SourceRow | None | bool = False) -> SourceRow:
        """Store one fetch and, given ``link=(run_id, url)``, make it that run's source of that URL, in
        one transaction; returns the row as stored. Flags it 'changed' when an earlier fetch of the URL
        read other bytes; ``previous`` is that earlier fetch (or None) when the caller has looked it
        up already (False: look it up here)."""
        prev = self.latest_source(source.url) if previous is False or previous is True else previous
        flags = list(source.flags)
        meta = dict(source.meta)
        if prev is not None and prev.source.sha256 and source.sha256 and prev.source.sha256 != source.sha256 \
                and prev.source.valid and source.valid:
            if "changed" not in flags:
                flags.append("changed")
            meta["changed_since"] = prev.source.fetched_at
            meta["previous_sha256"] = prev.source.sha256
        raw = source.raw
        stored_raw = zlib.compress(raw, 6) if raw is not None and len(raw) <= RAW_CAP_BYTES else None
        record = {
            "url": source.url, "status": source.status.value, "reason": source.reason,
            "http_status": source.http_status, "final_url": source.final_url,
            "content_type": source.content_type, "title": source.title, "text": source.text,
            "sha256": source.sha256, "fetched_at": source.fetched_at or utcnow(),
            "elapsed_s": source.elapsed_s, "origin": source.origin, "flags": dump_json(flags),
            "meta": dump_json(meta), "raw": stored_raw,
        }
        with self.db.conn:   # plain SQL: once per URL of a run
            cursor = self.db.conn.execute(
                f"INSERT INTO sources ({', '.join(f'[{k}]' for k in record)}) VALUES ({', '.join('?' * len(record))})",
                list(record.values()))
            source_id = int(cursor.lastrowid or 0)
            if link is not None:
                self._link_run_source(link[0], link[1], source_id)
        return self._source_row({**record, "id": source_id})   # the stored form, as a read would give it

    def latest_source(self, url: str) -> SourceRow | None:
        rows = list(self.db.query(
            "SELECT * FROM sources WHERE url = ? ORDER BY fetched_at DESC, id DESC LIMIT 1", [url]))
        return self._source_row(rows[0]) if rows else None

    def get_source(self, source_id: int) -> SourceRow:
        return self._source_row(self.db.table("sources").get(source_id))

    def source_raw(self, source_id: int) -> bytes | None:
        row = self.db.execute("SELECT raw FROM sources WHERE id = ?", [source_id]).fetchone()
        return zlib.decompress(row[0]) if row and row[0] else None

    @staticmethod
    def _source_row(r: dict[str, Any]) -> SourceRow:
        src = Source(url=r["url"], status=FetchStatus(r["status"]), reason=r["reason"] or "",
                     http_status=r["http_status"], final_url=r["final_url"], content_type=r["content_type"],
                     title=r["title"], text=r["text"] or "", sha256=r["sha256"], fetched_at=r["fetched_at"] or "",
                     elapsed_s=r["elapsed_s"] or 0.0, origin=r["origin"] or "http",
                     flags=tuple(load_json(r["flags"], [])), meta=load_json(r["meta"], {}))
        return SourceRow(id=r["id"], source=src)

    def link_run_source(self, run_id: str, url: str, source_id: int) -> None:
        with self.db.conn:
            self._link_run_source(run_id, url, source_id)

    def _link_run_source(self, run_id: str, url: str, source_id: int) -> None:
        self.db.conn.execute("INSERT INTO run_sources (run_id, url, source_id) VALUES (?, ?, ?) "
                             "ON CONFLICT (run_id, url) DO UPDATE SET source_id = excluded.source_id",
                             [run_id, url, source_id])

    def run_source_ids(self, run_id: str) -> dict[str, int]:
        return {r["url"]: r["source_id"] for r in
                self.db.query("SELECT url, source_id FROM run_sources WHERE run_id = ?", [run_id])}

    def update_source_flags(self, source_id: int, flags: Iterable[str]) -> None:
        with self.db.conn:
            self.db.table("sources").update(source_id, {"flags": dump_json(sorted(set(flags)))})

    # -- verdicts ----------------------------------------------------------------------
    def save_verdict(self, run_id: str, statement_pk: int, url: str, source_id: int | None,
                     verdict: Verdict) -> None:
        """Store one verdict and commit it (a pipeline run commits in windows: :meth:`commit_judged`)."""
        self.commit_judged(run_id, [(statement_pk, url, source_id, verdict)])

    def commit_judged(self, run_id: str, verdicts: Sequence[tuple[int, str, int | None, Verdict]],
                      done_responses: Sequence[int] = ()) -> None:
        """Store verdicts ``(statement_pk, url, source_id, verdict)`` and then mark ``done_responses``
        done, in one transaction: a response is never stored done without its verdicts."""
        now = utcnow()
        with self.db.conn:
            self.db.conn.executemany(
                "INSERT OR REPLACE INTO verdicts (run_id, statement_pk, url, source_id, judge_id, label, score, "
                "rationale, quote, quote_found, prompt_version, model_version, raw, tokens_in, tokens_out, flags, "
                "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(run_id, statement_pk, url, source_id, v.judge_id, v.label.value, v.score, v.rationale, v.quote,
                  None if v.quote_found is None else int(v.quote_found), v.prompt_version, v.model_version, v.raw,
                  v.tokens_in, v.tokens_out, dump_json(list(v.flags)), now)
                 for statement_pk, url, source_id, v in verdicts])
            if done_responses:
                self.db.conn.executemany("UPDATE responses SET done = 1 WHERE pk = ?",
                                         [(pk,) for pk in done_responses])

    def judged_keys(self, run_id: str) -> set[tuple[int, str, str]]:
        """(statement_pk, url, judge_id) of every pair already judged in this run."""
        return {(r[0], r[1], r[2]) for r in self.db.execute(
            "SELECT statement_pk, url, judge_id FROM verdicts WHERE run_id = ?", [run_id]).fetchall()}

    def verdict_count(self) -> int:
        """Verdicts stored in this database, every run (a cluster's driver sums its shards' parts)."""
        return int(self.db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0])

    def judged_keys_for(self, run_id: str, statement_pks: Sequence[int]) -> set[tuple[int, str, str]]:
        """(statement_pk, url, judge_id) already judged in this run for these statements (one response's)."""
        if not statement_pks:
            return set()
        marks = ", ".join("?" * len(statement_pks))
        return {(r[0], r[1], r[2]) for r in self.db.execute(
            f"SELECT statement_pk, url, judge_id FROM verdicts WHERE run_id = ? AND statement_pk IN ({marks})",
            [run_id, *statement_pks]).fetchall()}

    def verdict_usage(self, run_id: str) -> list[tuple[str, str, int, int, int]]:
        """(judge_id, model_version or "", calls that reported tokens, tokens_in, tokens_out) per judge and model."""
        return [tuple(r) for r in self.db.execute(
            "SELECT judge_id, COALESCE(model_version, ''), SUM(CASE WHEN tokens_in IS NOT NULL OR tokens_out "
            "IS NOT NULL THEN 1 ELSE 0 END), COALESCE(SUM(tokens_in), 0), COALESCE(SUM(tokens_out), 0) "
            "FROM verdicts WHERE run_id = ? GROUP BY judge_id, model_version", [run_id]).fetchall()]

    @staticmethod
    def _verdict_row(r: dict[str, Any]) -> VerdictRow:
        label, rationale, flags = stored_label(r["label"], r["rationale"], tuple(load_json(r["flags"], [])))
        v = Verdict(label=label, score=r["score"] or 0.0, rationale=rationale,
                    quote=r["quote"] or "", quote_found=None if r["quote_found"] is None else bool(r["quote_found"]),
                    judge_id=r["judge_id"], prompt_version=r["prompt_version"] or "",
                    model_version=r["model_version"] or "", raw=r["raw"], tokens_in=r["tokens_in"],
                    tokens_out=r["tokens_out"], flags=flags)
        return VerdictRow(pk=r["pk"], statement_pk=r["statement_pk"], url=r["url"], source_id=r["source_id"],
                          verdict=v, created_at=r["created_at"])

    # -- whole run -------------------------------------------------------------------
    def load_run(self, run_id: str) -> RunData:
        run = self.get_run(run_id)
        responses = self.responses(run.id)
        statements: dict[int, list[StatementRow]] = {r.pk: [] for r in responses}
        for r in self.db.query("SELECT * FROM statements WHERE run_id = ? ORDER BY response_pk, ord", [run.id]):
            statements.setdefault(r["response_pk"], []).append(self._statement_row(r))
        sources = {url: self._source_row(r) for url, r in (
            (row["url"], row) for row in self.db.query(
                "SELECT s.* , rs.url AS url FROM run_sources rs JOIN sources s ON s.id = rs.source_id "
                "WHERE rs.run_id = ?", [run.id]))}
        verdicts: dict[int, list[VerdictRow]] = {}
        for r in self.db.query("SELECT * FROM verdicts WHERE run_id = ? ORDER BY pk", [run.id]):
            verdicts.setdefault(r["statement_pk"], []).append(self._verdict_row(r))
        return RunData(run=run, responses=responses, statements=statements, sources=sources,
                       verdicts=verdicts, skipped=self.skipped(run.id))

    def iter_verdict_rows(self, run_id: str) -> Iterator[dict[str, Any]]:
        yield from self.db.query("SELECT * FROM verdicts WHERE run_id = ? ORDER BY pk", [run_id])

    def statement_labels(self, run_id: str) -> dict[int, str]:
        """Statement pk -> ``RESPONSE/sN`` (its response id and 1-based position), for listings."""
        return {r[0]: f"{r[1]}/s{r[2] + 1}" for r in self.db.execute(
            "SELECT s.pk, r.rid, s.ord FROM statements s JOIN responses r ON r.pk = s.response_pk "
            "WHERE s.run_id = ?", [run_id]).fetchall()}
