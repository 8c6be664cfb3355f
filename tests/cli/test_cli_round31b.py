"""Issue 31, second part: Ctrl-C stops an audit at once keeping what is committed, progress totals that
never go back, the built-in judge described with its measured figures, `models list` naming the pull command."""
from __future__ import annotations

import asyncio
import io
import json
import os
import re
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from pathlib import Path

import numpy as np
import pytest

from sourcecheckup import demo, embeddings
from sourcecheckup.cli import main
from sourcecheckup.events import EventKind, ProgressEvent
from sourcecheckup.fetching import FetchOptions
from sourcecheckup.ingest import load_path
from sourcecheckup.judges.base import JudgeStopped, in_stoppable_thread
from sourcecheckup.pipeline import Audit, RunConfig
from sourcecheckup.store import Store
from tests.support import fake_judge  # noqa: F401  (registers the keyword judge for the CLI in this process)
from tests.support.paths import ROOT

PAGES = ("hypertension", "metformin-lactic-acidosis", "hfe-hemochromatosis")
SENTENCES = ("Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher.",
             "Metformin is a biguanide used as first-line treatment for type 2 diabetes.",
             "Iron-overload-related disease was present in 28.4% of male C282Y homozygotes.",
             "The DASH diet alone can lower systolic blood pressure by about 11 mm Hg.")
WAIT_S = 120   # a generous ceiling for real work on a busy machine; never what a test measures


def _ctrl_c_heard() -> None:
    """In the audit's process before it starts: SIGINT back to its default. A shell starts background jobs
    with SIGINT ignored, and Python leaves an inherited "ignore" alone, so a suite run from a background job
    (`make test &`) would give the audit a Ctrl-C it cannot hear."""
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def _verdicts(db: Path) -> list[tuple[int, str]]:
    try:
        with sqlite3.connect(db, timeout=5) as c:
            return c.execute("SELECT pk, created_at FROM verdicts ORDER BY pk").fetchall()
    except sqlite3.OperationalError:   # not created yet
        return []


# -- Ctrl-C (item 5) -------------------------------------------------------------------------------

def test_ctrl_c_stops_a_builtin_audit_keeping_its_verdicts_and_a_resume_judges_only_the_rest(tmp_path, site):
    answers = tmp_path / "batch.jsonl"
    # pages of sentences no other page has: each batch of pairs embeds new text, so the audit is still judging
    # when its first verdicts are stored, however fast or busy the machine (the same pages cited again would be
    # judged from cached vectors in a blink, and the run could end before the signal lands)
    answers.write_text("\n".join(json.dumps({
        "id": f"b{i}", "response": " ".join(f"{s} Case {i}." for s in SENTENCES),
        "citations": [f"{site}/generated?n={i * len(PAGES) + k}&sentences=30" for k in range(len(PAGES))]})
        for i in range(12)))
    db = tmp_path / "c.db"
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "SOURCECHECKUP_ARCHIVE": "off"}
    proc = subprocess.Popen([sys.executable, "-m", "sourcecheckup", "audit", str(answers), "--db", str(db),
                             "--allow-host", "127.0.0.1", "--no-references", "--browser", "never"],
                            cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            preexec_fn=_ctrl_c_heard)
    deadline = time.monotonic() + 5 * WAIT_S   # fetching 36 pages and embedding a third of them: a minute and
    while not _verdicts(db) and proc.poll() is None and time.monotonic() < deadline:   # more on a crowded machine
        time.sleep(0.05)
    assert proc.poll() is None, "the audit ended before its first verdicts: nothing to interrupt"
    assert _verdicts(db), f"no verdict stored within {5 * WAIT_S} s"
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=WAIT_S)   # it exits (bench/interrupt.py measures how soon)
    assert proc.returncode == 130, err
    kept = _verdicts(db)
    with sqlite3.connect(db) as c:
        run_id, status = c.execute("SELECT id, status FROM runs").fetchone()
        pairs = c.execute("SELECT COUNT(*) FROM statements WHERE run_id = ?", [run_id]).fetchone()[0] * len(PAGES)
    assert status == "cancelled"
    assert f"resume with: sourcecheckup audit --resume {run_id}" in err
    assert 0 < len(kept) < pairs, "interrupted part way, its committed verdicts kept"

    resumed = subprocess.run([sys.executable, "-m", "sourcecheckup", "audit", "--resume", run_id, "--db", str(db),
                              "-q"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=600)
    assert resumed.returncode == 0, resumed.stderr
    after = _verdicts(db)
    with sqlite3.connect(db) as c:
        pairs = c.execute("SELECT COUNT(*) FROM statements WHERE run_id = ?", [run_id]).fetchone()[0] * len(PAGES)
        assert c.execute("SELECT status FROM runs").fetchone()[0] == "completed"
    assert len(after) == pairs   # every pair judged once: the kept ones were not judged again
    assert set(kept) <= set(after)


def test_cancelling_the_task_that_awaits_a_judge_thread_tells_the_thread_to_stop():
    saw: list[bool] = []
    started = threading.Event()

    def work(stop: threading.Event) -> None:
        started.set()
        saw.append(stop.wait(WAIT_S))   # returns True as soon as the stop is set

    async def go() -> None:
        task = asyncio.ensure_future(in_stoppable_thread(work))
        await asyncio.to_thread(started.wait, WAIT_S)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())   # asyncio.run waits for the worker thread before it returns
    assert saw == [True]


def test_the_builtin_judge_stops_between_pairs_once_told(monkeypatch):
    from sourcecheckup.evidence import SourceText
    from sourcecheckup.judges.builtin import judge as builtin

    stop = threading.Event()
    analysed: list[str] = []
    real = builtin.analyse_pair

    def analyse_then_stop(statement, *args, **kw):
        analysed.append(statement)
        stop.set()   # as Ctrl-C would, while the first pair is analysed
        return real(statement, *args, **kw)

    monkeypatch.setattr(builtin, "analyse_pair", analyse_then_stop)
    judge = builtin.BuiltinJudge(use_embeddings=False)
    source = SourceText.from_text("Hypertension is a blood pressure of 130/80 mm Hg or higher. " * 3)
    with pytest.raises(JudgeStopped):
        judge.score_pairs([(s, source) for s in SENTENCES], stop=stop)
    assert analysed == [SENTENCES[0]]
    assert len(judge.score_pairs([(s, source) for s in SENTENCES], stop=threading.Event())) == len(SENTENCES)


@pytest.mark.skipif(not embeddings.available(), reason="the embedding model is not installed")
def test_a_stoppable_embedding_gives_one_calls_vectors_and_stops_between_batches():
    texts = [f"{s} Variant {i} with {'more words ' * (i % 7)}here." for i in range(20) for s in SENTENCES[:2]]
    embeddings._recent.clear()
    whole = embeddings.embed(texts)
    embeddings._recent.clear()
    in_slices = embeddings.embed(texts, stop=threading.Event())
    np.testing.assert_allclose(in_slices, whole, atol=1e-6)   # the same batches (bit for bit today)
    embeddings._recent.clear()
    told = threading.Event()
    told.set()
    with pytest.raises(embeddings.EmbeddingStopped):
        embeddings.embed(texts, stop=told)


# -- progress totals (item 11) -----------------------------------------------------------------------

def _demo_config(judge: str = "keyword") -> RunConfig:
    return RunConfig(judges=[judge], judge_concurrency=2, fetch=FetchOptions(sources_dir=demo.sources_dir(), browser="never",
                                                            extract_workers=0))


def _assert_totals_never_go_back(events: list[ProgressEvent]) -> None:
    for name in ("responses", "sources", "pairs", "verdicts"):
        totals = [getattr(e, f"{name}_total") for e in events]
        assert totals == sorted(totals), f"{name} total went back: {totals}"
        for e in events:
            assert getattr(e, f"{name}_done") <= getattr(e, f"{name}_total"), f"{name} overshoots: {e}"


def test_the_demos_progress_totals_never_go_back_nor_overshoot(tmp_path):
    loaded = load_path(str(demo.answers_dir()))
    events: list[ProgressEvent] = []
    store = Store(tmp_path / "p.db")
    audit = Audit(store, _demo_config(), progress=events.append)
    asyncio.run(audit.start(loaded.responses, loaded.skipped, "demo"))
    _assert_totals_never_go_back(events)
    last = events[-1]
    assert last.kind is EventKind.RUN_FINISHED and last.fetch_failures >= 1   # the sample's dead link
    assert (last.pairs_done, last.sources_done, last.responses_done) == \
        (last.pairs_total, last.sources_total, last.responses_total)


class _Terminal(io.StringIO):
    def isatty(self) -> bool:   # the CLI redraws its progress line on a terminal, every 0.1 s
        return True


def test_a_resumed_runs_last_progress_line_counts_the_whole_run(tmp_path, monkeypatch):
    loaded = load_path(str(demo.answers_dir()))
    db = tmp_path / "r.db"
    store = Store(db)
    audit = Audit(store, _demo_config("keyword:0.02"))
    audit.commit_window_pairs = 1   # each answer is stored done as soon as it is: the cancel lands between answers

    def stop_after_the_first_answer(event: ProgressEvent) -> None:
        if event.kind is EventKind.RESPONSE_DONE:
            audit.cancel.set()

    audit.progress = stop_after_the_first_answer
    asyncio.run(audit.start(loaded.responses, loaded.skipped, "demo"))
    run = store.get_run(audit.run_id)
    assert run.status == "cancelled"
    done = sum(r.done for r in store.responses(run.id))
    assert 0 < done < len(loaded.responses)
    straight_events: list[ProgressEvent] = []
    asyncio.run(Audit(Store(tmp_path / "s.db"), _demo_config(), progress=straight_events.append)
                .start(loaded.responses, loaded.skipped, "demo"))
    whole = straight_events[-1]

    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    assert main(["audit", "--resume", run.id, "--db", str(db)]) == 0
    lines = [line for line in re.split(r"[\r\n]", terminal.getvalue()) if line.startswith("[")]
    counts = [dict((k, tuple(map(int, v.split("/")))) for k, v in re.findall(r"(\w+) (\d+/\d+)", line))
              for line in lines]
    for name in ("responses", "sources", "pairs"):
        totals = [c[name][1] for c in counts]
        assert totals == sorted(totals), f"{name} total went back: {lines}"
    assert counts[-1]["responses"] == (whole.responses_total,) * 2
    assert counts[-1]["sources"] == (whole.sources_total,) * 2      # was 'sources 15/17' for a completed run
    assert counts[-1]["pairs"] == (whole.pairs_total,) * 2
    assert f"unreadable sources {whole.fetch_failures} " in lines[-1]


# -- the judges guide and the models list (item 4) ------------------------------------------------------

def _readme_row(name: str) -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    return next(line for line in readme.splitlines() if line.startswith(f"| `{name}`"))


def test_judges_guide_says_the_screen_errs_both_ways_with_the_figures_the_readme_measures(capsys):
    from sourcecheckup.judges.guide import BUILTIN_FIGURES as f

    assert main(["judges", "guide"]) == 0
    out = capsys.readouterr().out
    first = out.split("\n\n")[0]
    assert "screening judge" in first
    assert "call a wrong statement supported" in first and "miss paraphrased support" in first
    for figure in (f"{f.wice:.3f}", f"{f.wice_cross_validated:.3f}", f"{f.passed_unreviewed:.1%}",
                   f"{f.clinical_heldout:.3f}"):
        assert figure in first
    # the figures in code are the README's measured ones (bench/judge_accuracy.py)
    wice = _readme_row("wice_dev")
    assert f"**{f.wice:.3f}**" in wice and f"**{f.wice_cross_validated:.3f}**" in wice
    assert f"**{f.passed_unreviewed:.1%}**" in wice
    assert f"**{f.clinical_heldout:.3f}**" in _readme_row("clinical_heldout")
    way3 = out.split("\n3. ")[1]
    assert "sourcecheckup models pull NAME" in way3 and "`sourcecheckup models pull minicheck-roberta-large`" in way3


def test_models_list_names_the_command_that_gets_each_checker(capsys, tmp_path, monkeypatch):
    monkeypatch.setenv("SOURCECHECKUP_MODELS", str(tmp_path / "models"))
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert "[pull]" not in out
    assert "minicheck-roberta-large  [get it: sourcecheckup models pull minicheck-roberta-large]" in out
    assert "bespoke-minicheck-7b  [via Ollama: ollama pull bespoke-minicheck]" in out
