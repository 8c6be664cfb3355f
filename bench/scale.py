"""Scale benchmark: N answers citing pages on H loopback hosts, a fast fake judge, one SQLite file.

Each answer has S statements and cites K pages; two neighbouring answers cite the same K pages, so
a run has N x K / 2 distinct URLs spread over the hosts 127.0.0.1 .. 127.0.0.H (Linux routes all
of 127/8 to loopback). The pages are served by a light asyncio HTTP/1.1 server in a subprocess
(its CPU is measured and left out of the audit's), a few paragraphs of medical text each, so the
real extractor reads them. The judge is KeywordJudge with a fixed latency (``--judge builtin``: the
built-in judge, its bound the embedding model's own time on the texts it embedded); HTTP only (no
browser, no archive, no robots); the store is a temporary SQLite file.

The three bounds the wall time is compared with, all measured or computed in this run:
  judge bound = pairs x judge latency / judge concurrency
  fetch bound = max(busiest host's URLs x page latency / per-host slots,
                    all URLs x page latency / total fetch slots)
  CPU floor   = CPU seconds of the audit process (and its children, not the server) / cores
Memory is the proportional set size of this process and its worker processes (smaps_rollup), sampled
from the pipeline's progress events; "flat" when the last quarter's peak is within 10% of the first's.

    .venv/bin/python bench/scale.py [--answers 20000] [--hosts 64] [--judge-latency 0.001] [--judge builtin]
        [--concurrency 64] [--statements 5] [--sources 3] [--site-latency 0.02] [--per-host 4] [--fetch-timeout 60]

``--cluster`` runs bench/scale_cluster.py instead: the built-in judge on a local Dask cluster of two workers
against one node, and with a worker killed mid-way (its docstring says what it measures).

``--fetch-timeout`` is the per-source time limit (download and reading the text). A run at low CPU priority
on a loaded machine (``echo 19 > /proc/self/autogroup``) waits minutes for the CPU, its extraction worker
too, and pages then fail on the time limits although nothing is wrong with them (2,000 answers with the
built-in judge at load 13: 1,909 of 3,000 pages read); such a run needs a longer one (and still lost 949 of
7,500 pages at 1,800 s and load 13-25: the 10 s connect limit, or the wait, may cut them too).

The last line is for scripts: ``scale: ratio R; pairs/s P; cpu ms/pair C; memory flat yes|no``.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests.support.memory import cpu_seconds, descendants, pss_kb  # noqa: E402

# one topic per page kind: its paragraphs are the page, its claims the statements that page supports
TOPICS = [
    ("Hypertension in adults", [
        "Hypertension is defined as a blood pressure of 130/80 mm Hg or higher in adults. It affects "
        "nearly half of adults and is a leading modifiable risk factor for stroke and heart failure.",
        "Lifestyle measures come first. The DASH diet lowers systolic blood pressure by about 11 mm Hg "
        "in people with hypertension, and reducing dietary sodium adds a further reduction.",
        "Thiazide diuretics, calcium channel blockers and angiotensin converting enzyme inhibitors are "
        "first-line drugs. Most patients need two agents to reach the target blood pressure.",
    ], ["The DASH diet lowers systolic blood pressure by about 11 mm Hg.",
        "Thiazide diuretics are first-line drugs for hypertension."]),
    ("Metformin and lactic acidosis", [
        "Metformin is a biguanide used as first-line treatment for type 2 diabetes. It lowers hepatic "
        "glucose production and improves insulin sensitivity without causing weight gain.",
        "Lactic acidosis is a rare but serious adverse effect. It presents with malaise, myalgia, "
        "respiratory distress and abdominal pain, and it is more likely with severe renal impairment.",
        "Metformin should be stopped before iodinated contrast studies in patients with reduced kidney "
        "function and restarted when renal function is stable.",
    ], ["Metformin is a biguanide used as first-line treatment for type 2 diabetes.",
        "Lactic acidosis presents with malaise, myalgia and abdominal pain."]),
    ("Hereditary hemochromatosis", [
        "Hereditary hemochromatosis is most often caused by homozygosity for the C282Y variant of the "
        "HFE gene. Iron accumulates in the liver, heart and pancreas over decades.",
        "Iron-overload-related disease was present in 28.4% of male C282Y homozygotes and in 1.2% of "
        "female homozygotes in a large population cohort.",
        "Treatment is regular phlebotomy until serum ferritin falls below 50 micrograms per litre, "
        "followed by maintenance phlebotomy a few times each year.",
    ], ["Iron-overload-related disease was present in 28.4% of male C282Y homozygotes.",
        "Treatment is regular phlebotomy until serum ferritin falls below 50 micrograms per litre."]),
    ("Community-acquired pneumonia", [
        "Community-acquired pneumonia is diagnosed from symptoms such as cough, fever and dyspnoea "
        "together with a new infiltrate on a chest radiograph.",
        "Streptococcus pneumoniae remains the most common bacterial cause. Outpatients without "
        "comorbidities are treated with amoxicillin or doxycycline for five days.",
        "Severity scores such as CURB-65 help decide whether a patient is admitted to hospital, and "
        "patients with a score of three or more are usually treated as severe pneumonia.",
    ], ["Streptococcus pneumoniae remains the most common bacterial cause of pneumonia.",
        "Severity scores such as CURB-65 help decide whether a patient is admitted to hospital."]),
]
UNSUPPORTED = ["Zinc lozenges cure the condition within two days in every patient.",
               "Vitamin megadoses replace all standard therapy for this disease."]


def page_html(n: int) -> bytes:
    """Page ``n``: its topic's paragraphs under a title and a line naming the page (distinct bytes)."""
    title, paragraphs, _ = TOPICS[n % len(TOPICS)]
    body = "".join(f"<p>{p}</p>\n" for p in paragraphs)
    return (f"<!doctype html><html><head><title>{title} (review {n})</title></head><body>"
            f"<nav><a href='/'>Home</a> <a href='/about'>About</a></nav><main><article>"
            f"<h1>{title}</h1><p class='byline'>Clinical review number {n}, updated yearly.</p>\n{body}"
            f"</article></main><footer>Educational use only.</footer></body></html>").encode()


# ---------------------------------------------------------------------------------------- the site

async def _serve(hosts: int, latency_s: float) -> None:
    async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:   # HTTP/1.1 keep-alive: one connection serves many requests
                head = await reader.readuntil(b"\r\n\r\n")
                path = head.split(b" ", 2)[1].decode("ascii", "replace")
                if latency_s:
                    await asyncio.sleep(latency_s)
                try:
                    body, status = page_html(int(path.rsplit("/", 1)[1])), b"200 OK"
                except ValueError:
                    body, status = b"<html><body><p>Not found.</p></body></html>", b"404 Not Found"
                writer.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: text/html; charset=utf-8\r\n"
                             b"Content-Length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
                await writer.drain()
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
            pass
        finally:
            writer.close()

    servers = [await asyncio.start_server(handle, f"127.0.0.{i}", 0, backlog=512) for i in range(1, hosts + 1)]
    for s in servers:
        host, port = s.sockets[0].getsockname()[:2]
        print(f"http://{host}:{port}", flush=True)
    await asyncio.get_running_loop().run_in_executor(None, sys.stdin.read)   # until the parent closes stdin


def start_server(hosts: int, latency_s: float) -> tuple[subprocess.Popen[str], list[str]]:
    proc = subprocess.Popen([sys.executable, str(Path(__file__).resolve()), "--serve", str(hosts), str(latency_s)],
                            cwd=ROOT, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    return proc, [proc.stdout.readline().strip() for _ in range(hosts)]


# ---------------------------------------------------------------------------------------- measures

def _reaped_children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


class Sampler:
    """Fed by the pipeline's progress events: the PSS peak in each quarter of the answers done, of
    this process and its worker processes (not the site's)."""

    def __init__(self, answers: int, exclude: int = 0) -> None:
        self.exclude = exclude
        self.answers = max(1, answers)
        self.peaks = [0, 0, 0, 0]
        self.events = 0
        self._last = 0.0

    def __call__(self, ev) -> None:   # a ProgressEvent
        self.events += 1
        now = time.monotonic()
        quarter = min(3, ev.responses_done * 4 // self.answers)
        if now - self._last < 0.25 and self.peaks[quarter]:   # reading smaps costs: 4 samples a second
            return
        self._last = now
        self.peaks[quarter] = max(self.peaks[quarter], self.pss())

    def pss(self) -> int:
        me = os.getpid()
        return sum((pss_kb(p) or 0) * 1024 for p in [me, *descendants(me)] if p != self.exclude)


# ---------------------------------------------------------------------------------------- the run

def build_answers(n: int, statements: int, sources: int, bases: list[str]):
    from sourcecheckup.models import Response

    out = []
    for a in range(n):
        pages = [(a // 2) * sources + j for j in range(sources)]   # answers 2m and 2m+1 cite the same pages
        urls = tuple(f"{bases[p % len(bases)]}/review/{p}" for p in pages)
        parts = []
        for k in range(statements):
            j = k % sources
            claims = TOPICS[pages[j] % len(TOPICS)][2]
            text = UNSUPPORTED[(a + k) % len(UNSUPPORTED)] if k % 4 == 3 else claims[(a + k) % len(claims)]
            parts.append(f"{text} [{j + 1}]")
        out.append(Response(id=f"a{a}", text=" ".join(parts), citations=urls,
                            markers={str(j + 1): j for j in range(sources)}, model=f"model-{a % 3}"))
    return out


async def run(args: argparse.Namespace) -> int:
    from sourcecheckup.fetching import FetchOptions
    from sourcecheckup.fetching.extract import warm_up
    from sourcecheckup.pipeline import Audit, RunConfig
    from sourcecheckup.store import Store
    from tests.support.fake_judge import KeywordJudge

    server, bases = start_server(args.hosts, args.site_latency)
    hosts = [b.split("//", 1)[1].rsplit(":", 1)[0] for b in bases]
    try:
        answers = build_answers(args.answers, args.statements, args.sources, bases)
        urls = {u for r in answers for u in r.citations}
        per_host: dict[str, int] = {}
        for u in urls:
            h = u.split("//", 1)[1].rsplit(":", 1)[0]
            per_host[h] = per_host.get(h, 0) + 1
        n_urls = len(urls)
        del urls
        fetch_slots = args.fetch_concurrency or args.per_host * len(hosts)
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "scale.db"
            store = Store(db)
            config = RunConfig(judges=["keyword"], judge_concurrency=args.concurrency, fetch=FetchOptions(
                allow_hosts=tuple(hosts), total_concurrency=fetch_slots, per_host=args.per_host,
                browser="never", archive_lookup=False, use_archive=False, respect_robots=False,
                timeout_s=args.fetch_timeout, extract_workers=args.extract_workers))
            sampler = Sampler(args.answers, exclude=server.pid)
            if args.judge == "builtin":
                from sourcecheckup import embeddings
                from sourcecheckup.judges.builtin import BuiltinJudge

                config.judges, judge = ["builtin"], BuiltinJudge()
                embeddings.preload()   # loading the model is start-up (bench/judge_speed.py measures it)
                plain_embed, embedded = embeddings.embed, []

                def recording(texts, *a, **k):  # type: ignore[no-untyped-def]
                    embedded.extend(texts)
                    return plain_embed(texts, *a, **k)
                embeddings.embed = recording  # type: ignore[assignment]
            else:
                judge = KeywordJudge(args.judge_latency)
            audit = Audit(store, config, judges=[judge], progress=sampler)
            warm_up()   # the extractor's one-off imports are start-up, not throughput
            sampler.peaks[0] = sampler.pss()
            me = os.getpid()
            server_cpu0 = cpu_seconds(server.pid)
            cpu0, reaped0, loop0 = time.process_time(), _reaped_children_cpu_s(), time.thread_time()
            t0 = time.perf_counter()
            run_id = audit.create(answers, input_label="scale bench")   # stored; the run reads them back
            del answers   # so the memory measured is the audit's, not this script's copy of the input
            await audit.execute(run_id)
            wall = time.perf_counter() - t0
            loop_cpu = time.thread_time() - loop0   # the event loop's thread: one interpreter lock
            # this process, extraction workers that have exited (reaped) and any still alive; not the site
            cpu = (time.process_time() - cpu0 + _reaped_children_cpu_s() - reaped0
                   + sum(cpu_seconds(p) for p in descendants(me) if p != server.pid))
            server_cpu = cpu_seconds(server.pid) - server_cpu0
            sampler.peaks[3] = max(sampler.peaks[3], sampler.pss())
            status = store.get_run(run_id).status
            pairs = store.db.execute("SELECT COUNT(*) FROM verdicts WHERE run_id = ?", [run_id]).fetchone()[0]
            distinct = store.db.execute("SELECT COUNT(*) FROM (SELECT DISTINCT statement_pk, url, judge_id "
                                        "FROM verdicts WHERE run_id = ?)", [run_id]).fetchone()[0]
            ok = store.db.execute("SELECT COUNT(*) FROM run_sources rs JOIN sources s ON s.id = rs.source_id "
                                  "WHERE rs.run_id = ? AND s.status = 'ok'", [run_id]).fetchone()[0]
            store.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            store.close()
            db_bytes = sum(p.stat().st_size for p in Path(tmp).glob("scale.db*"))
    finally:
        assert server.stdin is not None
        server.stdin.close()
        server.wait(timeout=10)
    expected = args.answers * args.statements * args.sources
    cores = os.cpu_count() or 1
    judge_bound = pairs * args.judge_latency / max(1, args.concurrency)
    judge_what = "pairs x latency / concurrency"
    if args.judge == "builtin":
        # the embedding model's own time on the same texts, each once, at full batch
        embeddings.embed = plain_embed  # type: ignore[assignment]
        distinct_texts = list(dict.fromkeys(embedded))
        t = time.perf_counter()
        embeddings.embed(distinct_texts, model=embeddings._load())
        judge_bound = time.perf_counter() - t
        judge_what = f"the model alone on the {len(distinct_texts)} distinct texts the judge embedded, at full batch"
    fetch_bound = max(max(per_host.values()) * args.site_latency / args.per_host,
                      n_urls * args.site_latency / fetch_slots)
    cpu_floor = cpu / cores
    bound = max(judge_bound, fetch_bound, cpu_floor)
    ratio = wall / bound if bound else float("inf")
    peaks = sampler.peaks
    flat = peaks[3] <= 1.10 * peaks[0]
    print(f"scale: {args.answers} answers x {args.statements} statements x {args.sources} sources; "
          f"{n_urls} URLs on {len(hosts)} hosts ({ok} read); judge "
          f"{'builtin' if args.judge == 'builtin' else f'latency {args.judge_latency * 1000:g} ms'}, "
          f"concurrency {args.concurrency}; page latency {args.site_latency * 1000:g} ms, "
          f"{args.per_host} slots a host, {fetch_slots} in all")
    print(f"  run status       {status}; {pairs} pairs judged ({distinct} distinct, {expected} expected); "
          f"{sampler.events} progress events")
    print(f"  wall time        {wall:9.2f} s")
    print(f"  judge bound      {judge_bound:9.2f} s  ({judge_what})")
    print(f"  fetch bound      {fetch_bound:9.2f} s  (busiest host's URLs x page latency / per-host slots)")
    print(f"  CPU floor        {cpu_floor:9.2f} s  ({cpu:.1f} CPU s of the audit / {cores} cores; the site's "
          f"{server_cpu:.1f} CPU s in its own process excluded)")
    print(f"  ratio            {ratio:9.2f}  (wall / largest bound; target <= 1.3)")
    print(f"  event loop CPU   {loop_cpu:9.2f} s  (the main thread alone; wall / max(bounds, this) = "
          f"{wall / max(bound, loop_cpu):.2f}: what runs in this process shares the interpreter lock)")
    print(f"  pairs/s          {pairs / wall:9.0f}")
    print(f"  CPU per pair     {cpu / max(1, pairs) * 1000:9.3f} ms;  per URL {cpu / max(1, n_urls) * 1000:.2f} ms "
          f"(the whole audit's CPU divided each way)")
    print("  peak memory      " + "  ".join(f"{q}% {p / 2**20:.0f} MiB" if p else f"{q}% -"
                                          for q, p in zip((25, 50, 75, 100), peaks))
          + f"  (PSS, with the worker processes); flat {'yes' if flat else 'no'} (last quarter within 10% of the first)")
    print(f"  database         {db_bytes / 2**20:.1f} MiB; {db_bytes / 2**20 / max(1, args.answers) * 1000:.2f} MiB "
          "per 1,000 answers")
    print(f"scale: ratio {ratio:.2f}; pairs/s {pairs / wall:.0f}; cpu ms/pair {cpu / max(1, pairs) * 1000:.3f}; "
          f"memory flat {'yes' if flat else 'no'}")
    return 0 if status == "completed" and pairs == distinct == expected else 1


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--serve":
        asyncio.run(_serve(int(sys.argv[2]), float(sys.argv[3])))
        return 0
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--answers", type=int, default=0, help="answers (default 20,000; 300 with --judge builtin)")
    ap.add_argument("--judge", choices=("fake", "builtin"), default="fake",
                    help="fake: a keyword judge with --judge-latency; builtin: the built-in judge")
    ap.add_argument("--hosts", type=int, default=64, help="loopback addresses 127.0.0.1 .. 127.0.0.N")
    ap.add_argument("--judge-latency", type=float, default=0.001, help="seconds per pair")
    ap.add_argument("--concurrency", type=int, default=64, help="judge calls at once")
    ap.add_argument("--statements", type=int, default=5, help="statements per answer")
    ap.add_argument("--sources", type=int, default=3, help="cited pages per answer")
    ap.add_argument("--site-latency", type=float, default=0.02, help="seconds the site takes per page")
    ap.add_argument("--per-host", type=int, default=4, help="fetch slots per host")
    ap.add_argument("--fetch-timeout", type=float, default=60.0,
                    help="seconds a source may take, download and text (default %(default)s)")
    ap.add_argument("--fetch-concurrency", type=int, default=0, help="fetch slots in all (0: per-host x hosts)")
    ap.add_argument("--extract-workers", type=int, default=-1,
                    help="processes for extraction and parsing (-1: the audit's default, the shared pool; "
                         "0: this process only)")
    ap.add_argument("--cluster", action="store_true",
                    help="the built-in judge on a local Dask cluster of two workers against one node (bench/scale_cluster.py)")
    ap.add_argument("--shards", type=int, default=4, help="with --cluster: input-split shards")
    args = ap.parse_args()
    if args.cluster:
        import scale_cluster

        args.answers = args.answers or 200
        return scale_cluster.main(args)
    args.answers = args.answers or (300 if args.judge == "builtin" else 20_000)
    if not 1 <= args.hosts <= 250:
        ap.error("--hosts must be between 1 and 250 (127.0.0.1 .. 127.0.0.250)")
    return asyncio.run(run(args))


if __name__ == "__main__":
    sys.exit(main())
