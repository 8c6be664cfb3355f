"""``bench/scale.py --cluster``: one audit with the built-in judge on a local Dask cluster of two worker
processes (127.0.0.1), against the same audit on one node, and again with a worker killed mid-way.

The answers and pages are scale.py's (N answers, S statements, K cited pages, a page server in a
subprocess). Three runs of ``sourcecheckup audit`` as a user runs it, each in a process of its own:
  single   the whole input on this machine
  cluster  ``--cluster tcp://...`` with two workers (one thread each), K shards
  killed   the same, one worker killed (SIGKILL) once the first shard's part exists
  sent     ``--cluster-files sent``: the input goes with each task, each part comes back as its result
The CPU floor is the single run's CPU seconds (its process and children) / the cores: the least wall time
any split of the same work can take here. Printed: each wall time, its ratio to the single run and to the
floor, pairs judged, and whether the cluster runs' verdicts and figures equal the single run's.

    .venv/bin/python bench/scale.py --cluster [--answers 200] [--shards 4]
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]


def _write_answers(answers: list[Any], path: Path) -> None:
    with path.open("w", encoding="utf-8") as out:
        for r in answers:
            out.write(json.dumps({"id": r.id, "model": r.model, "response": r.text, "citations": list(r.citations)})
                      + "\n")


def _audit(answers: Path, db: Path, hosts: list[str], extra: list[str], kill: Any = None) -> tuple[float, str, str]:
    cmd = [sys.executable, "-m", "sourcecheckup", "audit", str(answers), "--db", str(db), "--no-archive",
           "--browser", "never", "-q", *[a for h in hosts for a in ("--allow-host", h)], *extra]
    started = time.perf_counter()
    proc = subprocess.Popen(cmd, cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)}, text=True,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if kill is not None:
        kill(proc)
    out, err = proc.communicate()
    if proc.returncode != 0:
        print(f"audit failed ({proc.returncode}): {err[-2000:]}", file=sys.stderr)
    return time.perf_counter() - started, out.strip().splitlines()[-1] if out.strip() else "", err


def _figures(db: Path, run_id: str) -> tuple[list[tuple], dict[str, Any]]:
    from sourcecheckup.report import build_report
    from sourcecheckup.store import Store

    with Store(db) as st:
        report = build_report(st, run_id or st.latest_run_id())
    pairs = sorted((r["id"], s["text"], v["url"], v["label"]) for r in report["responses"] for s in r["statements"]
                   for v in s["verdicts"])
    return pairs, {k: report["metrics"][k]["value"] for k in ("statement_support", "response_support",
                                                              "url_validity", "unused_sources")}


def main(args: Any) -> int:
    import distributed

    from scale import _reaped_children_cpu_s, build_answers, start_server

    server, bases = start_server(args.hosts, args.site_latency)
    hosts = sorted({b.split("//", 1)[1].rsplit(":", 1)[0] for b in bases})
    tmp = Path(tempfile.mkdtemp(prefix="sc-cluster-"))
    try:
        answers = tmp / "answers.jsonl"
        _write_answers(build_answers(args.answers, args.statements, args.sources, bases), answers)
        cpu0 = _reaped_children_cpu_s()
        single_s, single_run, _ = _audit(answers, tmp / "single.db", hosts, [])
        single_cpu = _reaped_children_cpu_s() - cpu0
        cores = os.cpu_count() or 1
        floor = single_cpu / cores
        base_pairs, base_figures = _figures(tmp / "single.db", single_run)
        results = {}
        for name in ("cluster", "killed", "sent"):
            with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True, host="127.0.0.1",
                                          dashboard_address=None, silence_logs=40) as c, \
                    distributed.Client(c) as client:
                parts = tmp / f"{name}.db.parts"
                killed: list[int] = []

                def kill(proc: subprocess.Popen, parts: Path = parts, client: Any = client,
                         killed: list[int] = killed) -> None:
                    deadline = time.monotonic() + 600
                    while not any(parts.glob("*.db")) and proc.poll() is None and time.monotonic() < deadline:
                        time.sleep(0.05)
                    time.sleep(1.0)   # into the shard's work, not at its first write
                    if proc.poll() is None:
                        pid = next(iter(client.run(os.getpid).values()))
                        os.kill(pid, signal.SIGKILL)
                        killed.append(pid)

                wall, run_id, _ = _audit(answers, tmp / f"{name}.db", hosts,
                                         ["--cluster", c.scheduler_address, "--cluster-shards", str(args.shards),
                                          *(["--cluster-files", "sent"] if name == "sent" else [])],
                                         kill if name == "killed" else None)
                pairs, figures = _figures(tmp / f"{name}.db", run_id)
                results[name] = (wall, pairs == base_pairs, figures == base_figures, len(pairs), bool(killed))
        print(f"cluster: {args.answers} answers x {args.statements} statements x {args.sources} pages, built-in judge, "
              f"{args.shards} shards on 2 local workers; {cores} cores here")
        print(f"  single node   {single_s:7.1f} s  ({single_s / floor:.2f}x the CPU floor of {floor:.1f} s: "
              f"{single_cpu:.1f} CPU s / {cores} cores); {len(base_pairs)} verdicts")
        ok = True
        for name, (wall, same_pairs, same_figures, n, killed_one) in results.items():
            ok &= same_pairs and same_figures
            print(f"  {name:<13} {wall:7.1f} s  ({wall / single_s:.2f}x the single node, {wall / floor:.2f}x the floor); "
                  f"{n} verdicts; verdicts equal: {'yes' if same_pairs else 'NO'}; figures equal: "
                  f"{'yes' if same_figures else 'NO'}" + ("; a worker was killed mid-way" if killed_one else
                                                           ("; (the run ended before a worker could be killed)"
                                                            if name == "killed" else "")))
        print(f"scale-cluster: ratio {results['cluster'][0] / single_s:.2f}; killed ratio "
              f"{results['killed'][0] / single_s:.2f}; sent ratio {results['sent'][0] / single_s:.2f}; "
              f"equal {'yes' if ok else 'no'}")
        return 0 if ok else 1
    finally:
        server.terminate()
