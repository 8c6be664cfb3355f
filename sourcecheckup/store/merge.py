"""Merge the runs of several databases into one run (``sourcecheckup merge``).

Several audit processes can split one batch by answer (``audit --input-split N/K``), each writing
its own database; merging their runs gives the run one process would have written. The inputs are
opened read-only and hashed first; every row is copied with its keys remapped: responses (in input
order), statements, sources (one row per URL, hash and outcome), the run's source links, verdicts,
reviews, review samples, suggestions, reference checks, skipped records and the run log.
"""
from __future__ import annotations

import hashlib
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Sequence

from ..models import new_run_id, utcnow
from .columns import dump_json, load_json
from .migrations import MIGRATIONS
from .wal import connect

# tables of one run whose rows are copied as they are, with run_id (and statement_pk) remapped
_RUN_TABLES = ("reviews", "suggestions", "skipped", "run_log")


class MergeError(Exception):
    """The runs cannot be merged; the message names the files and what to do."""


class AlreadyMerged(MergeError):
    """These (file, run) pairs were merged into the output before: a second run would repeat it."""

    def __init__(self, message: str, run_id: str) -> None:
        super().__init__(message)
        self.run_id = run_id


@dataclass(frozen=True)
class MergeInput:
    path: Path
    run: str | None = None        # a run id (or a unique part of one); None: the database's latest run


@dataclass
class MergeResult:
    run_id: str
    responses: int = 0
    statements: int = 0
    verdicts: int = 0
    sources_copied: int = 0
    sources_shared: int = 0       # identical fetches (URL, hash, outcome) stored once
    order: str = ""               # "input split" | "concatenated"
    differences: list[str] = field(default_factory=list)
    source_conflicts: list[str] = field(default_factory=list)


def file_sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def mark_input_split(store: Any, run_id: str, part: int, of: int, responses_in_input: int) -> None:
    """Record in a run's config that it holds part ``part`` of ``of`` of its input (every answer i
    with i % of == part - 1), so a merge can put the answers back in their input order."""
    row = store.db.execute("SELECT config FROM runs WHERE id = ?", [run_id]).fetchone()
    config = load_json(row[0] if row else None, {})
    config["input_split"] = {"part": part, "of": of, "responses_in_input": responses_in_input}
    with store.db.conn:
        store.db.execute("UPDATE runs SET config = ? WHERE id = ?", [dump_json(config), run_id])


class _Input:
    """One input database, read-only, and the run taken from it."""

    def __init__(self, spec: MergeInput) -> None:
        self.path = Path(spec.path)
        if not self.path.is_file():
            raise MergeError(f"{self.path}: no such database")
        self.sha256 = file_sha256(self.path)
        try:
            self.conn = connect(str(self.path), uri=f"{self.path.resolve().as_uri()}?mode=ro")
        except sqlite3.DatabaseError as exc:
            raise MergeError(f"{self.path} is not a usable SourceCheckup database: {exc}") from None
        try:
            self.tables = self._check()
            self.run = self._pick_run(spec.run)
        except BaseException:
            self.conn.close()
            raise
        self.run_id: str = self.run["id"]
        self.config: dict[str, Any] = load_json(self.run["config"], {})
        self.judges: list[str] = load_json(self.run["judges"], [])

    def _check(self) -> set[str]:
        """The database's tables, after checking it is a SourceCheckup database this version can read."""
        self.conn.row_factory = sqlite3.Row
        try:
            tables = {r[0] for r in self.conn.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
            version = self.conn.execute("SELECT MAX(version) FROM schema_version").fetchone()[0] \
                if "schema_version" in tables else 0
        except sqlite3.DatabaseError as exc:
            raise MergeError(f"{self.path} is not a usable SourceCheckup database: {exc}") from None
        if not {"runs", "responses", "statements", "verdicts"} <= tables:
            raise MergeError(f"{self.path} is not a SourceCheckup database (it has no runs table)")
        if (version or 0) > len(MIGRATIONS):   # columns this version does not know would be dropped
            raise MergeError(f"{self.path} was written by a newer SourceCheckup (schema {version}); "
                             "upgrade the app to merge it")
        return tables

    def _pick_run(self, wanted: str | None) -> sqlite3.Row:
        if wanted:
            rows = self.conn.execute("SELECT * FROM runs WHERE id = ?", [wanted]).fetchall() or \
                self.conn.execute("SELECT * FROM runs WHERE id LIKE ?", [f"%{wanted}%"]).fetchall()
            if len(rows) != 1:
                raise MergeError(f"{self.path}: no single run '{wanted}' "
                                 f"({len(rows)} match; `sourcecheckup runs --db {self.path}` lists them)")
            return rows[0]
        row = self.conn.execute("SELECT * FROM runs ORDER BY created_at DESC, rowid DESC LIMIT 1").fetchone()
        if row is None:
            raise MergeError(f"{self.path} holds no run")
        return row

    def rows(self, sql: str, params: Sequence[Any] = ()) -> list[dict[str, Any]]:
        return [dict(r) for r in self.conn.execute(sql, params)]

    def prompt_versions(self) -> dict[str, set[str]]:
        out: dict[str, set[str]] = {}
        for judge, version in self.conn.execute(
                "SELECT DISTINCT judge_id, COALESCE(prompt_version, '') FROM verdicts WHERE run_id = ?", [self.run_id]):
            out.setdefault(judge, set()).add(version)
        return out

    def close(self) -> None:
        self.conn.close()


def _differences(inputs: Sequence[_Input]) -> list[str]:
    """What makes the runs' verdicts incomparable: judges, prompt versions, parser, consensus."""
    first = inputs[0]
    out: list[str] = []
    for other in inputs[1:]:
        for what, a, b in (("judges", first.judges, other.judges),
                           ("parser", first.run["parser"], other.run["parser"]),
                           ("consensus", first.config.get("consensus"), other.config.get("consensus"))):
            if a != b:
                out.append(f"{what}: {a} in {first.path} but {b} in {other.path}")
        pa, pb = first.prompt_versions(), other.prompt_versions()
        for judge in sorted(set(pa) & set(pb)):
            if pa[judge] != pb[judge]:
                out.append(f"prompt version of {judge}: {', '.join(sorted(pa[judge])) or 'none'} in {first.path} "
                           f"but {', '.join(sorted(pb[judge])) or 'none'} in {other.path}")
    return out


def _positions(inputs: Sequence[_Input]) -> tuple[str, dict[tuple[int, int], int]]:
    """(how, (input index, response ord) -> position in the merged run).

    Parts of one split input go back to their input order (part N held answers N-1, N-1+K, ...);
    anything else is concatenated in the order the inputs were given."""
    ords = [[r[0] for r in i.conn.execute("SELECT ord FROM responses WHERE run_id = ? ORDER BY ord", [i.run_id])]
            for i in inputs]
    splits = [i.config.get("input_split") or {} for i in inputs]
    parts = [s.get("part") for s in splits]
    if all(splits) and len({s.get("of") for s in splits}) == 1 and len(set(parts)) == len(parts):
        of = int(splits[0]["of"])
        keys = {(n, o): rank for n, part_ords in enumerate(ords) for rank, o in enumerate(part_ords)}
        original = {k: rank * of + int(splits[k[0]]["part"]) - 1 for k, rank in keys.items()}
        return "input split", _dense(original)
    original, offset = {}, 0
    for n, part_ords in enumerate(ords):
        for rank, o in enumerate(part_ords):
            original[(n, o)] = offset + rank
        offset += len(part_ords)
    return "concatenated", original


def _dense(positions: dict[tuple[int, int], int]) -> dict[tuple[int, int], int]:
    """0, 1, 2, ... in the order of the positions (a part that is missing leaves no gap)."""
    return {k: n for n, k in enumerate(sorted(positions, key=positions.__getitem__))}


class _Writer:
    """Inserts rows into the output database, keeping only the columns it has."""

    def __init__(self, conn: sqlite3.Connection) -> None:
        self.conn = conn
        self._columns: dict[str, list[str]] = {}

    def columns(self, table: str) -> list[str]:
        if table not in self._columns:
            self._columns[table] = [r[1] for r in self.conn.execute(f"PRAGMA table_info([{table}])")]
        return self._columns[table]

    def insert(self, table: str, row: dict[str, Any], *, skip: Iterable[str] = ("pk",), verb: str = "INSERT") -> int:
        cols = [c for c in self.columns(table) if c in row and c not in skip]
        cur = self.conn.execute(f"{verb} INTO [{table}] ({', '.join(cols)}) VALUES ({', '.join('?' * len(cols))})",
                                [row[c] for c in cols])
        return int(cur.lastrowid or 0)


def merge_runs(out: Any, specs: Sequence[MergeInput], *, run_name: str = "", force: bool = False,
               app_version: str = "", run_id: str | None = None,
               provenance_inputs: list[dict[str, Any]] | None = None) -> MergeResult:
    """Merge the runs of ``specs`` into one new run in the store ``out``; returns what was copied.
    ``run_id``: the new run's id when one was announced before the merge (a cluster audit's);
    ``provenance_inputs``: the input files as the merger read them, where the parts read copies.

    Refuses (MergeError) an input that is the output, a response id found in two inputs, and
    runs whose judges, prompt versions, parser or consensus differ unless ``force`` (recorded)."""
    if len(specs) < 2:
        raise MergeError("give at least two databases to merge")
    out_path = Path(out.path).resolve()
    inputs: list[_Input] = []
    try:
        for spec in specs:
            if Path(spec.path).resolve() == out_path:
                raise MergeError(f"{spec.path} is the output database too: merge into a new file")
            inputs.append(_Input(spec))
        _refuse_duplicate_ids(inputs)
        earlier = _merged_before(out, inputs)
        if earlier and not force:
            run_id, changed = earlier
            raise AlreadyMerged(f"already merged as run {run_id}: the same runs of the same files "
                             + ("(some changed since: " + ", ".join(changed) + ") " if changed else "")
                             + f"were merged into {out.path} before (`sourcecheckup show {run_id}`); "
                             "use --force to merge them again as a new run", run_id)
        differences = _differences(inputs)
        if differences and not force:
            raise MergeError("the runs were not judged alike, so their figures cannot be pooled: "
                             + "; ".join(differences) + ". Use --force to merge anyway (recorded in the merged run)")
        with out.db.conn:
            return _copy(out, inputs, run_name, force, differences, app_version,
                         remerge_of=earlier[0] if earlier else None, run_id=run_id,
                         provenance_inputs=provenance_inputs)
    finally:
        for i in inputs:
            i.close()


def _merged_pairs(config: dict[str, Any]) -> set[tuple[str, str]]:
    """The (file, run id) pairs a merged run's config names (absolute paths; older runs kept the path as given)."""
    inputs = (config.get("merged_from") or {}).get("inputs") or []
    return {(str(Path(i.get("path") or i.get("file") or "").resolve()), str(i.get("run_id"))) for i in inputs}


def _merged_before(out: Any, inputs: Sequence[_Input]) -> tuple[str, list[str]] | None:
    """(run id, inputs changed since) of a run of ``out`` merged from exactly these (file, run) pairs, or None."""
    wanted = {(str(i.path.resolve()), i.run_id) for i in inputs}
    for run_id, config_json in out.db.execute(
            "SELECT id, config FROM runs WHERE config LIKE '%\"merged_from\"%' ORDER BY created_at, rowid"):
        config = load_json(config_json, {})
        if _merged_pairs(config) == wanted:
            hashes = {(str(Path(i.get("path") or i.get("file") or "").resolve()), str(i.get("run_id"))): i.get("sha256")
                      for i in config["merged_from"]["inputs"]}
            changed = [str(i.path) for i in inputs if hashes.get((str(i.path.resolve()), i.run_id)) != i.sha256]
            return run_id, changed
    return None


def _refuse_duplicate_ids(inputs: Sequence[_Input]) -> None:
    seen: dict[str, Path] = {}
    for i in inputs:
        for (rid,) in i.conn.execute("SELECT DISTINCT rid FROM responses WHERE run_id = ?", [i.run_id]):
            if rid in seen:
                where = f"both {seen[rid]} and {i.path}" if seen[rid] != i.path else f"{i.path} twice"
                raise MergeError(f"response id '{rid}' is in {where}: the inputs overlap (were the same answers "
                                 "audited twice?); merge databases of distinct answers")
            seen[rid] = i.path


def _copy(out: Any, inputs: Sequence[_Input], run_name: str, force: bool, differences: list[str],
          app_version: str, remerge_of: str | None = None, run_id: str | None = None,
          provenance_inputs: list[dict[str, Any]] | None = None) -> MergeResult:
    conn: sqlite3.Connection = out.db.conn
    w = _Writer(conn)
    run_id = run_id or new_run_id()
    order, positions = _positions(inputs)
    result = MergeResult(run_id=run_id, order=order, differences=list(differences))
    statuses = [i.run["status"] for i in inputs]
    config = dict(inputs[0].config)
    config.pop("input_split", None)
    if provenance_inputs is not None:
        config["provenance"] = {**config.get("provenance", {}), "inputs": provenance_inputs}
    config["merged_from"] = {
        "inputs": [{"file": str(i.path), "path": str(i.path.resolve()), "run_id": i.run_id, "sha256": i.sha256,
                    "status": i.run["status"], "judges": i.judges,
                    **({"input_split": i.config["input_split"]} if "input_split" in i.config else {})}
                   for i in inputs],
        "order": order, "forced": bool(force and (differences or remerge_of)), "differences": differences,
        **({"remerge_of": remerge_of} if remerge_of else {}), "merged_at": utcnow()}
    w.insert("runs", {
        "id": run_id, "created_at": min(i.run["created_at"] for i in inputs), "finished_at": utcnow(),
        "status": "completed" if all(s == "completed" for s in statuses) else
        next(s for s in statuses if s != "completed"),
        "input": "merge of " + ", ".join(f"{i.path.name} ({i.run['input'] or i.run_id})" for i in inputs),
        "config": dump_json(config), "judges": dump_json(inputs[0].judges), "parser": inputs[0].run["parser"],
        "app_version": app_version or inputs[0].run["app_version"],
        "n_records": sum(i.run["n_records"] or 0 for i in inputs),
        "n_skipped": sum(i.run["n_skipped"] or 0 for i in inputs),
        "message": "; ".join(f"{i.path.name}: {i.run['message']}" for i in inputs if i.run["message"]),
        "name": run_name.strip(), "note": ""}, skip=())
    linked: dict[str, tuple[int, bool]] = {}   # url -> (source id, valid) the merged run uses
    for n, i in enumerate(inputs):
        source_ids = _copy_sources(w, i, result)
        response_pks: dict[int, int] = {}
        for r in i.rows("SELECT * FROM responses WHERE run_id = ? ORDER BY ord", [i.run_id]):
            response_pks[r["pk"]] = w.insert("responses", {**r, "run_id": run_id, "ord": positions[(n, r["ord"])]})
        statement_pks: dict[int, int] = {}
        for r in i.rows("SELECT * FROM statements WHERE run_id = ?", [i.run_id]):
            statement_pks[r["pk"]] = w.insert("statements", {**r, "run_id": run_id,
                                                            "response_pk": response_pks[r["response_pk"]]})
        for r in i.rows("SELECT * FROM run_sources WHERE run_id = ?", [i.run_id]):
            _link(w, run_id, r["url"], source_ids[r["source_id"]], linked, i, result)
        for r in i.rows("SELECT * FROM verdicts WHERE run_id = ?", [i.run_id]):
            w.insert("verdicts", {**r, "run_id": run_id, "statement_pk": statement_pks.get(r["statement_pk"]),
                                  "source_id": source_ids.get(r["source_id"]) if r["source_id"] is not None else None})
            result.verdicts += 1
        for table in _RUN_TABLES:
            if table in i.tables:
                for r in i.rows(f"SELECT * FROM [{table}] WHERE run_id = ? ORDER BY pk", [i.run_id]):
                    if "statement_pk" in r and r["statement_pk"] is not None:
                        r["statement_pk"] = statement_pks.get(r["statement_pk"])
                    w.insert(table, {**r, "run_id": run_id})
        _copy_samples(w, i, run_id, statement_pks)
        for table in ("expert_verdicts", "expert_similarity"):   # the expert measures' rows, per answer
            if table in i.tables:
                for r in i.rows(f"SELECT * FROM [{table}] WHERE run_id = ? ORDER BY pk", [i.run_id]):
                    w.insert(table, {**r, "run_id": run_id, "response_pk": response_pks[r["response_pk"]]})
        if "reference_checks" in i.tables:
            for r in i.rows("SELECT * FROM reference_checks WHERE run_id = ? ORDER BY pk", [i.run_id]):
                w.insert("reference_checks", {**r, "run_id": run_id}, verb="INSERT OR IGNORE")
        if "lookup_cache" in i.tables:   # what outside services answered: shared by every run of the file
            for r in i.rows("SELECT * FROM lookup_cache"):
                w.insert("lookup_cache", r, skip=(), verb="INSERT OR IGNORE")
        result.responses += len(response_pks)
        result.statements += len(statement_pks)
    w.insert("run_log", {"run_id": run_id, "at": utcnow(), "level": "info",
                         "message": f"merged {len(inputs)} runs ({order}): " + ", ".join(
                             f"{i.path} run {i.run_id} sha256 {i.sha256[:12]}" for i in inputs)
                         + (f"; forced despite: {'; '.join(differences)}" if differences else "")
                         + (f"; merged again with --force (already merged as run {remerge_of})" if remerge_of else "")})
    for conflict in result.source_conflicts:
        w.insert("run_log", {"run_id": run_id, "at": utcnow(), "level": "warning", "message": conflict})
    return result


def _copy_sources(w: _Writer, i: _Input, result: MergeResult) -> dict[int, int]:
    """The input's sources this run uses, stored once per (URL, hash, outcome); input id -> output id.
    A fetch that read no bytes (a timeout, a refused address) is the same when its outcome is."""
    ids: dict[int, int] = {}
    for r in i.rows("SELECT * FROM sources WHERE id IN (SELECT source_id FROM run_sources WHERE run_id = ? "
                    "UNION SELECT source_id FROM verdicts WHERE run_id = ? AND source_id IS NOT NULL)",
                    [i.run_id, i.run_id]):
        if r["sha256"]:
            same = w.conn.execute("SELECT id FROM sources WHERE url = ? AND sha256 = ? AND status = ? "
                                  "ORDER BY id LIMIT 1", [r["url"], r["sha256"], r["status"]]).fetchone()
        else:
            same = w.conn.execute("SELECT id FROM sources WHERE url = ? AND sha256 IS NULL AND status = ? AND "
                                  "http_status IS ? AND reason IS ? ORDER BY id LIMIT 1",
                                  [r["url"], r["status"], r["http_status"], r["reason"]]).fetchone()
        if same:
            ids[r["id"]] = same[0]
            result.sources_shared += 1
        else:
            ids[r["id"]] = w.insert("sources", r, skip=("id",))
            result.sources_copied += 1
    return ids


def _link(w: _Writer, run_id: str, url: str, source_id: int, linked: dict[str, tuple[int, bool]],
          i: _Input, result: MergeResult) -> None:
    """One source per URL in a run: the first input's, unless a later input read it and it did not."""
    row = w.conn.execute("SELECT status = 'ok' AND LENGTH(COALESCE(text, '')) > 0, sha256 FROM sources WHERE id = ?",
                         [source_id]).fetchone()
    valid = bool(row[0])
    if url in linked:
        kept, kept_valid = linked[url]
        if kept == source_id:
            return
        kept_hash = w.conn.execute("SELECT sha256 FROM sources WHERE id = ?", [kept]).fetchone()[0]
        if kept_hash == row[1] and kept_valid == valid:
            return   # the same bytes read twice: either row tells the same
        use_new = valid and not kept_valid
        result.source_conflicts.append(
            f"{url} was read differently by the inputs ({'valid' if kept_valid else 'not valid'} in one, "
            f"{'valid' if valid else 'not valid'} in {i.path}); the merged run uses the "
            f"{'valid' if (valid if use_new else kept_valid) else 'first'} read")
        if not use_new:
            return
    linked[url] = (source_id, valid)
    w.insert("run_sources", {"run_id": run_id, "url": url, "source_id": source_id}, skip=(), verb="INSERT OR REPLACE")


def _copy_samples(w: _Writer, i: _Input, run_id: str, statement_pks: dict[int, int]) -> None:
    """Review samples keep their names; positions continue after what earlier inputs gave the same name."""
    if "review_samples" not in i.tables:
        return
    for r in i.rows("SELECT * FROM review_samples WHERE run_id = ? ORDER BY sample, ord", [i.run_id]):
        start = w.conn.execute("SELECT COALESCE(MAX(ord), -1) + 1 FROM review_samples WHERE run_id = ? AND sample = ?",
                               [run_id, r["sample"]]).fetchone()[0]
        w.insert("review_samples", {**r, "run_id": run_id, "ord": start,
                                    "statement_pk": statement_pks.get(r["statement_pk"])})
