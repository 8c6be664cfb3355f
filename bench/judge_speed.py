"""The built-in judge's speed on realistic work: cold start, steady pairs/s and CPU ms a pair.

  cold start      a fresh Python process (a subprocess) from its start to its first verdict: imports,
                  the model loaded, one WiCE page (about 6 KB) judged against its claim
  distinct pages  one page a pair: WiCE dev pages (../shared/data/claims/wice_dev.jsonl) against their
                  claims, each pair handed to the judge alone, as the pipeline does with a page that
                  serves one statement
  shared pages    audits where each page serves several statements, handed over together as the
                  pipeline does (``per_source_batching``): the clinical suite and the held-out suite
                  (bench/data, 3-7 statements a short page) and WiCE pages each judged against its own
                  claim and 3 other pages' claims (4 statements a 6 KB page)

Every mode runs once per embedding runtime (``--runtimes``: ONNX Runtime, the default, then plain torch;
``SOURCECHECKUP_EMBEDDING_RUNTIME`` picks one in a process), back to back in the one process, so the
runtimes are compared on the same load. Each mode starts with nothing embedded (a new judge, new pages, the per-process LRU emptied). The CPU
floor of a mode is the embedding model's own CPU time on the same texts (every distinct text the
judge embedded) at full batch in one call; the ratio is the mode's CPU time to that floor. The machine
may be shared: CPU figures are steadier than wall-clock ones, and runs to compare should be made
back to back.

    .venv/bin/python bench/judge_speed.py [--pages 40] [--data ../shared/data/claims] [--runtimes onnx,torch]
                                          [--judge builtin|builtin:screen|builtin:reader]

The last line is for scripts, of the first runtime:
``judge speed: cold S s; pairs/s P (distinct pages) Q (shared pages); cpu ms/pair C``
(Q: the 6 KB pages with 4 statements each; C: distinct pages).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Callable, Sequence

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

CLINICAL = [ROOT / "bench" / "data" / "clinical_pairs.jsonl", ROOT / "bench" / "data" / "clinical_heldout.jsonl"]
COLD = """
import json, sys
from sourcecheckup import embeddings
from sourcecheckup.evidence import SourceText
from sourcecheckup.judges.builtin import from_spec
row = json.loads(sys.argv[1])
verdict = from_spec(sys.argv[2]).score_pairs([(row["claim"], SourceText.from_text(row["evidence"]))])[0]
runtime = embeddings.runtime() if hasattr(embeddings, "runtime") else "sentence-transformers"
print(json.dumps({"label": verdict.label.value, "runtime": runtime}))
"""


def read_rows(path: Path) -> list[dict[str, Any]]:
    with path.open(encoding="utf-8") as fh:
        return [json.loads(line) for line in fh if line.strip()]


JUDGE = "builtin"   # --judge: the built-in judge's spec after "builtin:" ("" the default, "screen", "reader")


def new_judge() -> Any:
    from sourcecheckup.judges.builtin import from_spec

    return from_spec(JUDGE)


def cold_start(row: dict[str, Any], runtime: str) -> tuple[float, str]:
    start = time.time()
    out = subprocess.run([sys.executable, "-c", COLD, json.dumps(row), JUDGE], cwd=ROOT,
                         capture_output=True, text=True, timeout=600,
                         env={**os.environ, "PYTHONPATH": str(ROOT), "SOURCECHECKUP_EMBEDDING_RUNTIME": runtime})
    elapsed = time.time() - start
    if out.returncode != 0:
        raise SystemExit(f"cold start failed: {out.stderr[-2000:]}")
    return elapsed, json.loads(out.stdout.strip().splitlines()[-1])["runtime"]


class Recorder:
    """Wraps embeddings.embed: every text the judge asks for (the floor is measured on them)."""

    def __init__(self) -> None:
        from sourcecheckup import embeddings

        self.embeddings = embeddings
        self.plain = embeddings.embed
        self.texts: list[str] = []

    def __enter__(self) -> "Recorder":
        def recording(texts: Sequence[str], *args: Any, **kwargs: Any) -> Any:
            self.texts.extend(texts)
            return self.plain(texts, *args, **kwargs)
        self.embeddings.embed = recording  # type: ignore[assignment]
        recent = getattr(self.embeddings, "_recent", None)
        if recent is not None:
            recent.clear()
        return self

    def __exit__(self, *exc: object) -> None:
        self.embeddings.embed = self.plain  # type: ignore[assignment]


def floor_cpu(texts: Sequence[str]) -> float:
    """The model's own CPU seconds on these texts, distinct, in one call at full batch."""
    from sourcecheckup import embeddings

    distinct = list(dict.fromkeys(texts))
    model = embeddings._load()
    start = time.process_time()
    if embeddings.runtime_of(model) != "sentence-transformers":
        embeddings.embed(distinct, model=model)            # bypasses the LRU
    else:   # the sentence-transformers runtime (before this change)
        model.encode(distinct, batch_size=64, convert_to_numpy=True, normalize_embeddings=True,
                     show_progress_bar=False)
    return time.process_time() - start


def measure(name: str, batches: list[list[tuple[str, str]]], judge_batch: Callable[[Any, list], Any]
            ) -> dict[str, Any]:
    from sourcecheckup.evidence import SourceText

    judge = new_judge()
    sources: dict[str, Any] = {}
    work = [[(claim, sources.setdefault(text, SourceText.from_text(text))) for claim, text in batch]
            for batch in batches]
    pairs = sum(len(b) for b in work)
    with Recorder() as rec:
        wall, cpu = time.perf_counter(), time.process_time()
        for batch in work:
            judge_batch(judge, batch)
        wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    floor = floor_cpu(rec.texts)
    chars = sum(len(t) for t in sources)
    return {"name": name, "pairs": pairs, "pages": len(sources), "kb_page": chars / 1000 / max(1, len(sources)),
            "wall": wall, "cpu": cpu, "pairs_s": pairs / wall, "cpu_ms": 1000 * cpu / pairs,
            "texts": len(set(rec.texts)), "floor": floor, "ratio": cpu / floor if floor else float("nan")}


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    ap.add_argument("--data", type=Path, default=ROOT.parent / "shared" / "data" / "claims",
                    help="folder with wice_dev.jsonl (default: %(default)s)")
    ap.add_argument("--pages", type=int, default=40, help="WiCE pages a mode judges (default %(default)s)")
    ap.add_argument("--clinical", type=int, default=120, help="clinical pairs a suite judges (default %(default)s)")
    ap.add_argument("--runtimes", default="onnx,torch",
                    help="embedding runtimes to measure, the first one's summary last (default %(default)s)")
    ap.add_argument("--judge", default="builtin", help="builtin (the reader on whole pages, the screen elsewhere), builtin:screen or builtin:reader (default %(default)s)")
    args = ap.parse_args(argv)
    global JUDGE
    JUDGE = args.judge.removeprefix("builtin").lstrip(":")
    wice_file = args.data / "wice_dev.jsonl"
    if not wice_file.is_file():
        raise SystemExit(f"{wice_file} not found: pass --data DIR with wice_dev.jsonl")
    wice = read_rows(wice_file)
    runtimes = [r.strip() for r in args.runtimes.split(",") if r.strip()]
    summary: list[str] = []
    for runtime in runtimes:
        summary.append(run_modes(args, wice, runtime))
    print(summary[0])
    return 0


def run_modes(args: argparse.Namespace, wice: list[dict[str, Any]], wanted: str) -> str:
    """Cold start and every mode with one embedding runtime; prints them, returns the summary line."""
    cold, runtime = cold_start(wice[-1], wanted)
    from sourcecheckup import embeddings
    from sourcecheckup.evidence import SourceText

    os.environ["SOURCECHECKUP_EMBEDDING_RUNTIME"] = wanted
    embeddings._model = None        # the process's runtime, opened again as this one
    embeddings.preload()
    new_judge().score_pairs([(wice[-2]["claim"], SourceText.from_text(wice[-2]["evidence"]))])

    def one_by_one(judge: Any, batch: list) -> None:
        for pair in batch:
            judge.score_pairs([pair])

    def together(judge: Any, batch: list) -> None:
        judge.score_pairs(batch)

    rows = wice[:args.pages]
    results = [measure("distinct 6 KB pages, 1 statement each", [[(r["claim"], r["evidence"]) for r in rows]],
                       one_by_one)]
    shared_rows = wice[args.pages:2 * args.pages]
    claims = [r["claim"] for r in shared_rows]
    results.append(measure("shared 6 KB pages, 4 statements each", [
        [(claims[(i + k * 7) % len(claims)], r["evidence"]) for k in range(4)] for i, r in enumerate(shared_rows)],
        together))
    for path in CLINICAL:
        suite = read_rows(path)[:args.clinical]
        by_page: dict[str, list[tuple[str, str]]] = {}
        for r in suite:
            by_page.setdefault(r["evidence"], []).append((r["claim"], r["evidence"]))
        results.append(measure(f"shared pages: {path.stem} as an audit", list(by_page.values()), together))

    print(f"built-in judge {JUDGE or 'default'} speed ({embeddings.runtime()} runtime (cold: {runtime}); {embeddings._threads()} threads; "
          f"batches of {embeddings.BATCH_SIZE}; {os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.1f})")
    print(f"  cold start       {cold:6.2f} s  (process start to first verdict, one 6 KB page)")
    for r in results:
        print(f"  {r['name']:<44} {r['pairs']:4d} pairs on {r['pages']:3d} pages ({r['kb_page']:.1f} KB/page): "
              f"{r['pairs_s']:6.2f} pairs/s, {r['cpu_ms']:7.1f} CPU ms/pair; {r['texts']} texts embedded; "
              f"CPU floor {r['floor']:.2f} s, ratio {r['ratio']:.2f}")
    distinct, shared = results[0], results[1]
    line = (f"judge speed: cold {cold:.2f} s; pairs/s {distinct['pairs_s']:.2f} (distinct pages) "
            f"{shared['pairs_s']:.2f} (shared pages); cpu ms/pair {distinct['cpu_ms']:.1f}")
    print(f"  {runtime}: {line}", flush=True)
    return line


if __name__ == "__main__":
    raise SystemExit(main())
