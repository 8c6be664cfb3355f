"""``audit --cluster tcp://HOST:PORT``: one audit spread over a Dask cluster as K input-split shards, each
a task writing its own SQLite part, the parts merged into the user's database as ``merge`` does."""
from __future__ import annotations

import argparse
import json
import secrets
import shutil
import sys
from pathlib import Path
from typing import Any

from .common import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, UsageError, err

INSTALL = "pip install 'sourcecheckup[cluster]'"
# options whose value belongs to the driver, not to a shard
_DRIVER_VALUED = ("--cluster", "--cluster-shards", "--cluster-files", "--db", "--report", "--input-split")
_DRIVER_FLAGS = ("-q", "--quiet")
SHARD_PARENT = "SOURCECHECKUP_SHARD_PARENT"   # set in a shard's audit process: its worker's pid


# options naming a file or folder the shards read: made absolute (a worker runs in a folder of its own) and,
# with --cluster-files sent, sent with the input
PATH_VALUED = ("--prompt", "--sources", "--retraction-data")


def shard_argv(argv: list[str]) -> list[str]:
    """The audit's own arguments without the driver's: every shard is configured as the driver was."""
    out: list[str] = []
    skip = path_next = False
    for a in argv:
        if skip:
            skip = False
            continue
        if path_next:
            path_next = False
            out.append(str(Path(a).resolve()))
            continue
        if a in _DRIVER_VALUED:
            skip = True
            continue
        if a in _DRIVER_FLAGS or any(a.startswith(o + "=") for o in _DRIVER_VALUED) or a == "audit":
            continue
        option, eq, value = a.partition("=")
        if option in PATH_VALUED:
            if eq:   # --sources=DIR: one argument of the two
                out.extend([option, str(Path(value).resolve())])
                continue
            path_next = True
        out.append(a)
    return out


def option_paths(argv: list[str]) -> list[str]:
    """The files and folders the shards' options name (shard_argv has made them absolute)."""
    return [argv[i + 1] for i, a in enumerate(argv[:-1]) if a in PATH_VALUED]


def run_shard(argv: list[str], part_db: str, part: int, of: int, run_id: str = "",
              sent: dict[str, dict[str, bytes]] | None = None, topic: str = "") -> dict[str, Any]:
    """One shard, run in a worker process. A retry after the worker died finds the run its part
    stored and resumes it, judging only the pairs it lacks.

    ``sent``: the input files themselves (driver path -> {path inside it: bytes}) for workers that cannot
    read the driver's paths; the shard then works in its worker's own folder and returns its part's
    bytes as the task's result (a retry on another machine starts the shard again). ``topic``: where the
    shard's progress goes (one per run of the driver, so an earlier attempt's counts are not read as this
    one's)."""
    local: Path | None = None
    if sent is not None:
        local = _worker_folder(f"sourcecheckup-{run_id}-{part}-of-{of}")
        argv = _unpack_inputs(argv, sent, local)
        part_db = str(local / Path(part_db).name)
    code, shard_run = _run_part(argv, part_db, part, of, topic=topic or f"sourcecheckup-{run_id}")
    result: dict[str, Any] = {"part": part, "db": part_db, "run": shard_run, "code": code}
    if local is not None:
        result["part_bytes"] = _part_bytes(Path(part_db))
        shutil.rmtree(local, ignore_errors=True)
    return result


def _run_part(argv: list[str], part_db: str, part: int, of: int, topic: str) -> tuple[int, str | None]:
    latest = _part_status(Path(part_db))
    run_id = latest[0] if latest else None
    if latest is not None and latest[1] == "completed":
        return EXIT_OK, run_id
    if run_id:
        code = _audit_process(["audit", "--resume", run_id, "--db", part_db, "-q"], part_db, part, topic)
    else:
        code = _audit_process(["audit", *argv, "--input-split", f"{part}/{of}", "--db", part_db, "-q"], part_db,
                              part, topic)
    if code not in (EXIT_OK, EXIT_FAIL):   # usage or interruption: a retry would do no better
        raise RuntimeError(f"shard {part} of {of} ended with exit code {code}")
    return code, run_id


def _worker_folder(name: str) -> Path:
    """A folder of the worker's own (its local directory, where Dask keeps a worker's files)."""
    import tempfile

    try:
        from distributed import get_worker

        base = Path(get_worker().local_directory)
    except (ImportError, ValueError):   # not in a worker (a test calling the task directly)
        base = Path(tempfile.gettempdir())
    folder = base / name
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def pack_inputs(inputs: list[str]) -> dict[str, dict[str, bytes]]:
    """Each input file, or each file of an input folder (and the files the options name), read on the driver
    to travel with the shards."""
    out: dict[str, dict[str, bytes]] = {}
    for raw in inputs:
        path = Path(raw).resolve()
        if path.is_dir():   # under the folder's own name, as the shard will read it
            out[str(path)] = {str(Path(path.name) / f.relative_to(path)): f.read_bytes()
                              for f in sorted(path.rglob("*")) if f.is_file()}
        else:
            out[str(path)] = {path.name: path.read_bytes()}
    return out


def _unpack_inputs(argv: list[str], sent: dict[str, dict[str, bytes]], local: Path) -> list[str]:
    """The inputs written under ``local`` with their own names; ``argv`` pointing at them."""
    moved: dict[str, str] = {}
    for n, (driver_path, files) in enumerate(sent.items()):
        base = local / f"input-{n}"
        for rel, data in files.items():
            (base / rel).parent.mkdir(parents=True, exist_ok=True)
            (base / rel).write_bytes(data)
        moved[driver_path] = str(base / Path(driver_path).name)
    return [moved.get(a, a) for a in argv]


def _part_bytes(part_db: Path) -> bytes:
    """The finished part as one file: its write-ahead log folded in first."""
    from ..store.wal import fold_into_file

    fold_into_file(str(part_db))
    return part_db.read_bytes()


def _audit_process(argv: list[str], part_db: str, part: int, topic: str) -> int:
    """The audit in a child process: Dask's workers are daemonic and may not start the process pools
    a run uses (PDF reading); the child ends with its worker (watch_parent), so a retried shard never
    shares its part with an orphan. Every second the verdicts its part holds go to the driver as an
    event of the cluster's (the driver's one progress line)."""
    import os
    import subprocess
    import time

    proc = subprocess.Popen([sys.executable, "-m", "sourcecheckup", *argv], stdout=subprocess.DEVNULL,
                            env={**os.environ, SHARD_PARENT: str(os.getpid())})
    try:
        while proc.poll() is None:
            time.sleep(1.0)
            _report_progress(topic, part, _verdicts_in(Path(part_db)))
        _report_progress(topic, part, _verdicts_in(Path(part_db)))
        return proc.returncode
    finally:
        if proc.poll() is None:   # the task was cancelled (Ctrl-C on the driver)
            proc.kill()


def _report_progress(topic: str, part: int, verdicts: int) -> None:
    try:
        from distributed import get_worker

        get_worker().log_event(topic, {"part": part, "verdicts": verdicts})
    except (ImportError, ValueError):   # not in a worker
        pass


def _verdicts_in(part: Path) -> int:
    """Verdicts stored so far in a part (one being written is read as it stands)."""
    from ..store import Store

    if not part.is_file():
        return 0
    try:
        with Store(part, read_only=True) as store:
            return store.verdict_count()
    except Exception:   # a part just created, or its first write under way: counted next time
        return 0


def _completed(part: Path) -> bool:
    latest = _part_status(part)
    return latest is not None and latest[1] == "completed"


def _part_status(part: Path) -> tuple[str, str] | None:
    """(id, status) of the run a part holds, or None when there is none yet."""
    from ..store import Store

    if not part.is_file():
        return None
    try:
        with Store(part, read_only=True) as store:
            return store.latest_run_status()
    except Exception:   # a part cut short as it was written: its shard runs again
        return None


def watch_parent(parent: int) -> None:
    """A shard's audit process ends when the worker that started it is gone."""
    import os
    import threading
    import time

    def watch() -> None:
        while os.getppid() == parent:
            time.sleep(0.5)
        os._exit(EXIT_INTERRUPTED)

    threading.Thread(target=watch, daemon=True, name="shard-parent").start()


def parts_folder(db: Path) -> Path:
    """Beside the database: on one machine every worker sees it; a real cluster needs it on a shared
    filesystem (docs/scaling.md)."""
    return db.with_name(db.name + ".parts")


def part_path(folder: Path, n: int, of: int) -> Path:
    return folder / f"part-{n}-of-{of}.db"


MANIFEST = "cluster.json"   # in the parts folder: what --resume RUN needs to pick the audit up


def read_manifest(folder: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((folder / MANIFEST).read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise UsageError(f"{folder / MANIFEST} cannot be read ({exc}); remove {folder} to start the audit "
                         "again") from exc
    if not isinstance(data, dict) or not {"run_id", "argv", "shards", "scheduler", "inputs"} <= data.keys():
        raise UsageError(f"{folder / MANIFEST} is not a cluster audit's record; remove {folder} to start again")
    return data


def is_cluster_resume(args: argparse.Namespace) -> bool:
    """``audit --resume RUN --db DB`` where RUN is a cluster audit not merged yet: its parts and record
    are beside DB, the run itself is not in it."""
    if not args.resume or not args.db:
        return False
    db = Path(args.db).resolve()
    manifest = read_manifest(parts_folder(db))
    if manifest is None or manifest["run_id"] != args.resume:
        return False
    if db.is_file():
        from ..store import Store, StoreError

        with Store(db, read_only=True) as store:
            try:
                store.get_run(args.resume)
            except StoreError:   # not merged yet
                return True
            return False   # merged: resumed (nothing left to do) as any run
    return True


def _plan(args: argparse.Namespace, db: Path, folder: Path) -> dict[str, Any]:
    """The cluster audit to run: resumed from its record, the same command again (its record reused, so
    its shards are cut as before), or a new one (recorded before any shard starts)."""
    manifest = read_manifest(folder)
    if args.resume:
        if manifest is None or manifest["run_id"] != args.resume:
            raise UsageError(f"--resume {args.resume}: no cluster audit of that id has its parts in {folder}")
        if args.cluster:
            manifest["scheduler"] = args.cluster   # the same audit on another scheduler
        _check_inputs_unchanged(manifest, folder)
        return manifest
    if not args.inputs or "-" in args.inputs:
        raise UsageError("--cluster reads its input from files every worker can open; give file paths, not '-'")
    argv = shard_argv(list(args.argv))
    argv = [str(Path(a).resolve()) if a in args.inputs else a for a in argv]   # workers may run elsewhere
    files = args.cluster_files or "shared"
    if manifest is not None:
        if manifest["argv"] != argv:
            raise UsageError(f"{folder} holds the parts of another cluster audit (run {manifest['run_id']}, "
                             f"{', '.join(manifest['inputs'])}): resume it with `sourcecheckup audit --resume "
                             f"{manifest['run_id']} --db {db}`, or remove {folder} to start this one")
        for option, value, wanted in (("--cluster-shards", manifest["shards"], args.cluster_shards),
                                      ("--cluster-files", manifest.get("files", "shared"), args.cluster_files)):
            if wanted and wanted != value:
                raise UsageError(f"the parts in {folder} were made with {option} {value}: give {option} {value} "
                                 f"(or none) to resume them, or remove {folder} to start again")
        manifest["scheduler"] = args.cluster
        _check_inputs_unchanged(manifest, folder)
        return manifest
    from ..models import new_run_id, utcnow
    from ..provenance import input_records

    return {"run_id": new_run_id(), "argv": argv, "inputs": list(args.inputs), "shards": args.cluster_shards or 0,
            "files": files, "scheduler": args.cluster, "created_at": utcnow(),
            "sent": [str(Path(i).resolve()) for i in args.inputs] + option_paths(argv),
            "input_records": input_records([str(Path(i).resolve()) for i in args.inputs])}


def _check_inputs_unchanged(manifest: dict[str, Any], folder: Path) -> None:
    """Shards cut from an input that changed since the first ones ran would merge into a run of neither."""
    from ..provenance import input_records

    before = manifest.get("input_records")
    if before is None:
        return
    now = input_records([str(Path(i).resolve()) for i in manifest["inputs"]])
    changed = [b["path"] for b, n in zip(before, now) if b.get("sha256") != n.get("sha256")]
    if changed or len(before) != len(now):
        raise UsageError(f"the input of cluster audit {manifest['run_id']} changed since it started "
                         f"({', '.join(changed) or 'files added or removed'}): its parts cannot be resumed; "
                         f"remove {folder} to audit it again")


def _write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    tmp = folder / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    tmp.replace(folder / MANIFEST)


def _remove_parts(folder: Path, of: int) -> None:
    """Once merged, the parts were only the tasks' outputs: the merged run holds every row."""
    for n in range(1, of + 1):
        part = part_path(folder, n, of)
        for suffix in ("", "-wal", "-shm"):
            part.with_name(part.name + suffix).unlink(missing_ok=True)
    (folder / MANIFEST).unlink(missing_ok=True)
    try:
        folder.rmdir()
    except OSError:   # something of the user's is in it: left there
        pass


def cmd_audit_cluster(args: argparse.Namespace) -> int:
    try:
        from distributed import Client, wait
    except ImportError as exc:
        raise UsageError(f"--cluster needs the cluster extra: {INSTALL}") from exc
    from .. import __version__
    from ..store import Store
    from ..store.merge import AlreadyMerged, MergeError, MergeInput, merge_runs
    from .finish import finish_audit

    if not args.db:
        raise UsageError("--cluster needs --db DB: the shards' parts are kept beside it until merged")
    if args.cluster_shards is not None and args.cluster_shards < 2:
        raise UsageError("--cluster-shards: give 2 or more (one shard is an audit on one machine)")
    db = Path(args.db).resolve()
    folder = parts_folder(db)
    plan = _plan(args, db, folder)
    run_id = plan["run_id"]
    try:
        client = Client(plan["scheduler"], timeout="20s")
    except OSError as exc:
        raise UsageError(f"--cluster {plan['scheduler']}: no scheduler answers there ({exc})") from exc
    try:
        if not plan["shards"]:
            plan["shards"] = max(2, 2 * len(client.scheduler_info().get("workers", {})))
        of = plan["shards"]
        folder.mkdir(parents=True, exist_ok=True)
        _write_manifest(folder, plan)
        code = _run_shards(client, wait, plan, db, quiet=args.quiet)
        if code is not None:
            return code
    finally:
        client.close()
    parts = [MergeInput(part_path(folder, n, of)) for n in range(1, of + 1)]
    with Store(db) as store:
        try:
            merge_runs(store, parts, run_name=f"{', '.join(plan['inputs'])} (cluster, {of} shards)",
                       app_version=__version__, run_id=run_id, provenance_inputs=plan.get("input_records"))
        except AlreadyMerged as exc:
            run_id = exc.run_id
        except MergeError as exc:
            err(str(exc))
            return EXIT_FAIL
        _remove_parts(folder, of)
        return finish_audit(args, store, run_id)


def _run_shards(client: Any, wait: Any, plan: dict[str, Any], db: Path, quiet: bool) -> int | None:
    """Every shard not finished before, as a task; None when all are done, else the exit status."""
    folder = parts_folder(db)
    run_id, of, argv = plan["run_id"], plan["shards"], plan["argv"]
    paths = {n: part_path(folder, n, of) for n in range(1, of + 1)}
    done = {n: _verdicts_in(p) for n, p in paths.items() if _completed(p)}   # part -> verdicts
    sent = client.scatter(pack_inputs(plan.get("sent") or plan["inputs"])) if plan.get("files") == "sent" else None
    topic = f"sourcecheckup-{run_id}-{secrets.token_hex(4)}"   # this attempt's: a resumed run starts afresh
    futures = {client.submit(run_shard, argv, str(paths[n]), n, of, run_id, sent, topic,
                             key=f"sourcecheckup-shard-{run_id}-{n}-of-{of}", retries=2, pure=False): n
               for n in paths if n not in done}
    try:
        pending = set(futures)
        while pending:
            for fut in [f for f in pending if f.done()]:
                n = futures[fut]
                try:
                    result = fut.result()
                except Exception as exc:   # a shard that failed past its retries: the others stop with it
                    client.cancel(list(futures))
                    if not quiet:
                        print(file=sys.stderr)
                    err(f"shard {n} of {of} failed on the cluster: {type(exc).__name__}: {exc}. The parts stay in "
                        f"{folder}; once the cause is fixed: sourcecheckup audit --resume {run_id} --db {db}")
                    return EXIT_FAIL
                if "part_bytes" in result:   # the part came back as the task's result
                    tmp = paths[n].with_suffix(".tmp")
                    tmp.write_bytes(result["part_bytes"])
                    tmp.replace(paths[n])
                done[n] = _verdicts_in(paths[n])
                pending.discard(fut)
            if not quiet:   # one line for the whole cluster: verdicts the shards have stored so far
                running: dict[int, int] = {}
                for _at, event in client.get_events(topic):
                    running[event["part"]] = event["verdicts"]
                judged = sum(done.values()) + sum(v for k, v in running.items() if k not in done)
                print(f"\rcluster: {judged:,} verdicts judged · {len(done)} of {of} shards done", end="",
                      file=sys.stderr, flush=True)
            if pending:
                try:
                    wait(list(pending), timeout=1.0, return_when="FIRST_COMPLETED")
                except TimeoutError:   # a second with no shard done: the line is refreshed
                    pass
    except KeyboardInterrupt:
        client.cancel(list(futures))
        if not quiet:   # below the progress line, not on it
            print(file=sys.stderr)
        err(f"interrupted; resume with: sourcecheckup audit --resume {run_id} --db {db} "
            f"(the parts stay in {folder}; the scheduler {plan['scheduler']} is remembered, --cluster ADDRESS names "
            "another)")
        return EXIT_INTERRUPTED
    if not quiet:
        print(file=sys.stderr)
    return None

