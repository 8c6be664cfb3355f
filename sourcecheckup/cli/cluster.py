"""``audit --cluster tcp://HOST:PORT``: one audit spread over a Dask cluster as K input-split shards, each
a task writing its own SQLite part, the parts merged into the user's database as ``merge`` does."""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from .common import EXIT_FAIL, EXIT_INTERRUPTED, EXIT_OK, UsageError, err

INSTALL = "pip install 'sourcecheckup[cluster]'"
# options whose value belongs to the driver, not to a shard
_DRIVER_VALUED = ("--cluster", "--cluster-shards", "--db", "--report", "--input-split")
_DRIVER_FLAGS = ("-q", "--quiet")
SHARD_PARENT = "SOURCECHECKUP_SHARD_PARENT"   # set in a shard's audit process: its worker's pid


def shard_argv(argv: list[str]) -> list[str]:
    """The audit's own arguments without the driver's: every shard is configured as the driver was."""
    out: list[str] = []
    skip = False
    for a in argv:
        if skip:
            skip = False
            continue
        if a in _DRIVER_VALUED:
            skip = True
            continue
        if a in _DRIVER_FLAGS or any(a.startswith(o + "=") for o in _DRIVER_VALUED) or a == "audit":
            continue
        out.append(a)
    return out


def run_shard(argv: list[str], part_db: str, part: int, of: int) -> dict[str, Any]:
    """One shard, run in a worker process. A retry after the worker died finds the run its part
    stored and resumes it, judging only the pairs it lacks."""
    from ..store import Store

    run_id = None
    if Path(part_db).is_file():
        with Store(Path(part_db)) as store:
            latest = store.latest_run_status()
        if latest is not None:
            run_id, status = latest
            if status == "completed":
                return {"part": part, "db": part_db, "run": run_id, "code": EXIT_OK}
    if run_id:
        code = _audit_process(["audit", "--resume", run_id, "--db", part_db, "-q"])
    else:
        code = _audit_process(["audit", *argv, "--input-split", f"{part}/{of}", "--db", part_db, "-q"])
    if code not in (EXIT_OK, EXIT_FAIL):   # usage or interruption: a retry would do no better
        raise RuntimeError(f"shard {part} of {of} ended with exit code {code}")
    return {"part": part, "db": part_db, "run": run_id, "code": code}


def _audit_process(argv: list[str]) -> int:
    """The audit in a child process: Dask's workers are daemonic and may not start the process pools
    a run uses (PDF reading); the child ends with its worker (watch_parent), so a retried shard never
    shares its part with an orphan."""
    import os
    import subprocess

    proc = subprocess.Popen([sys.executable, "-m", "sourcecheckup", *argv], stdout=subprocess.DEVNULL,
                            env={**os.environ, SHARD_PARENT: str(os.getpid())})
    try:
        return proc.wait()
    finally:
        if proc.poll() is None:   # the task was cancelled (Ctrl-C on the driver)
            proc.kill()


def _verdicts_in(folder: Path) -> int:
    """Verdicts stored so far in the shards' parts (a part being written is read as it stands)."""
    from ..store import Store

    total = 0
    for part in folder.glob("part-*.db"):
        try:
            with Store(part, read_only=True) as store:
                total += store.verdict_count()
        except Exception:   # a part just created, or its first write under way: counted next time
            continue
    return total


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
        return manifest
    if not args.inputs or "-" in args.inputs:
        raise UsageError("--cluster reads its input from files every worker can open; give file paths, not '-'")
    argv = shard_argv(list(args.argv))
    argv = [str(Path(a).resolve()) if a in args.inputs else a for a in argv]   # workers may run elsewhere
    if manifest is not None:
        if manifest["argv"] != argv:
            raise UsageError(f"{folder} holds the parts of another cluster audit (run {manifest['run_id']}, "
                             f"{', '.join(manifest['inputs'])}): resume it with `sourcecheckup audit --resume "
                             f"{manifest['run_id']} --db {db}`, or remove {folder} to start this one")
        if args.cluster_shards and args.cluster_shards != manifest["shards"]:
            raise UsageError(f"the parts in {folder} were cut into {manifest['shards']} shards: give "
                             f"--cluster-shards {manifest['shards']} (or none) to resume them, or remove {folder}")
        manifest["scheduler"] = args.cluster
        return manifest
    from ..models import new_run_id, utcnow

    return {"run_id": new_run_id(), "argv": argv, "inputs": list(args.inputs), "shards": args.cluster_shards or 0,
            "scheduler": args.cluster, "created_at": utcnow()}


def _write_manifest(folder: Path, manifest: dict[str, Any]) -> None:
    tmp = folder / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=1), encoding="utf-8")
    tmp.replace(folder / MANIFEST)


def _remove_parts(folder: Path, of: int) -> None:
    """Once merged, the parts were only the tasks' outputs: the merged run holds every row."""
    for n in range(1, of + 1):
        for suffix in ("", "-wal", "-shm"):
            (folder / f"part-{n}-of-{of}.db{suffix}").unlink(missing_ok=True)
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
    from .audit import finish_audit

    if not args.db:
        raise UsageError("--cluster needs --db DB: the shards' parts are kept beside it until merged")
    if args.cluster_shards is not None and args.cluster_shards < 2:
        raise UsageError("--cluster-shards: give 2 or more (one shard is an audit on one machine)")
    db = Path(args.db).resolve()
    folder = parts_folder(db)
    plan = _plan(args, db, folder)
    run_id, argv = plan["run_id"], plan["argv"]
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
        futures = [client.submit(run_shard, argv, str(folder / f"part-{n}-of-{of}.db"), n, of,
                                 key=f"sourcecheckup-shard-{run_id}-{n}-of-{of}", retries=2, pure=False)
                   for n in range(1, of + 1)]
        try:
            pending = set(futures)
            while pending:
                for fut in [f for f in pending if f.done()]:
                    fut.result()   # a shard that failed past its retries raises here
                    pending.discard(fut)
                if not args.quiet:   # one line for the whole cluster: verdicts stored in the parts so far
                    print(f"\rcluster: {_verdicts_in(folder):,} verdicts judged · {of - len(pending)} of {of} shards "
                          "done", end="", file=sys.stderr, flush=True)
                if pending:
                    try:
                        wait(list(pending), timeout=1.0, return_when="FIRST_COMPLETED")
                    except TimeoutError:   # a second with no shard done: the line is refreshed
                        pass
        except KeyboardInterrupt:
            client.cancel(futures)
            err(f"interrupted; resume with: sourcecheckup audit --resume {run_id} --db {db} (the parts stay in "
                f"{folder}; the scheduler {plan['scheduler']} is remembered, --cluster ADDRESS names another)")
            return EXIT_INTERRUPTED
        if not args.quiet:
            print(file=sys.stderr)
    finally:
        client.close()
    parts = [MergeInput(folder / f"part-{n}-of-{of}.db") for n in range(1, of + 1)]
    with Store(db) as store:
        try:
            merge_runs(store, parts, run_name=f"{', '.join(plan['inputs'])} (cluster, {of} shards)",
                       app_version=__version__, run_id=run_id)
        except AlreadyMerged as exc:
            run_id = exc.run_id
        except MergeError as exc:
            err(str(exc))
            return EXIT_FAIL
        _remove_parts(folder, of)
        return finish_audit(args, store, run_id)
