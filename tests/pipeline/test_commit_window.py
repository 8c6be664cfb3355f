"""Verdicts are committed in windows (pipeline.COMMIT_WINDOW_PAIRS / _S): a crash loses at most the
uncommitted window, nothing reported done, and a resume judges every pair exactly once."""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from sourcecheckup.fetching import FetchOptions
from sourcecheckup.metrics import compute_metrics
from sourcecheckup.models import Response
from sourcecheckup.pipeline import Audit, RunConfig
from sourcecheckup.store import Store
from tests.support.fake_judge import KeywordJudge
from tests.support.paths import ROOT

SUPPORTED = "Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher."
N_RESPONSES = 30
TOTAL_PAIRS = N_RESPONSES * 2 * 2   # two informative statements x two sources each


def _responses(site: str) -> list[Response]:
    return [Response(id=f"w{i}", text=f"{SUPPORTED} Blood pressure fact {i} stands alone here.",
                     citations=(f"{site}/article/hypertension", f"{site}/article/hfe-hemochromatosis"))
            for i in range(N_RESPONSES)]


def _config() -> RunConfig:
    return RunConfig(judges=["keyword:0"], judge_concurrency=2,
                     fetch=FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=5))


# The audit in a child process that SIGKILLs itself when its judge is asked for pair 61: windows of
# 25 verdicts (and no timed commit) put 50 verdicts in the store and about 10 in the lost window.
CHILD = r"""
import asyncio, json, os, signal, sys
from pathlib import Path
from sourcecheckup.events import EventKind
from sourcecheckup.store import Store
from sourcecheckup.pipeline import Audit
from tests.support.fake_judge import KeywordJudge
from tests.pipeline.test_commit_window import _config, _responses

db, site, reported = sys.argv[1], sys.argv[2], Path(sys.argv[3])

class KilledMidRun(KeywordJudge):
    async def verify(self, statement, source):
        if self.calls >= 60:
            os.kill(os.getpid(), signal.SIGKILL)
        return await super().verify(statement, source)

def progress(ev):
    if ev.kind in (EventKind.JUDGED, EventKind.RESPONSE_DONE):   # what the run has reported done
        reported.write_text(json.dumps({"run": ev.run_id, "pairs": ev.pairs_done, "responses": ev.responses_done}))

audit = Audit(Store(db), _config(), judges=[KilledMidRun(0.002)], progress=progress)
audit.commit_window_pairs, audit.commit_window_s = 25, 3600.0
asyncio.run(audit.start(_responses(site)))
"""


def _pairs_once(store: Store, run_id: str) -> bool:
    rows = store.db.execute("SELECT COUNT(*), COUNT(DISTINCT statement_pk || ' ' || url || ' ' || judge_id) "
                            "FROM verdicts WHERE run_id = ?", [run_id]).fetchone()
    return rows[0] == rows[1] == TOTAL_PAIRS


async def _straight_metrics(tmp_path: Path, site: str) -> dict:
    other = Store(tmp_path / "straight.db")
    run_id = await Audit(other, _config(), judges=[KeywordJudge(0.002)]).start(_responses(site))
    return compute_metrics(other.load_run(run_id)).as_dict()


async def test_a_kill_loses_only_the_uncommitted_window_and_resume_judges_each_pair_once(tmp_path, site):
    db, reported = tmp_path / "killed.db", tmp_path / "reported.json"
    child = subprocess.run([sys.executable, "-c", CHILD, str(db), site, str(reported)], cwd=ROOT, timeout=120,
                           env={**os.environ, "PYTHONPATH": str(ROOT)}, capture_output=True, text=True)
    assert child.returncode == -9, child.stderr   # killed, not finished: no finally, no last commit
    seen = json.loads(reported.read_text())
    store = Store(db)
    run_id = seen["run"]
    assert store.get_run(run_id).status == "running"
    stored = store.db.execute("SELECT COUNT(*) FROM verdicts WHERE run_id = ?", [run_id]).fetchone()[0]
    assert stored == seen["pairs"] == 50        # every verdict reported done is there; the open window is not
    # a response is stored done only together with all of its verdicts
    done = [r for r in store.responses(run_id) if r.done]
    assert len(done) == seen["responses"] > 0
    for r in done:
        pks = [s.pk for s in store.statements_for(r.pk)]
        assert len(store.judged_keys_for(run_id, pks)) == 4
    judge = KeywordJudge(0.002)   # the same judge id as the killed run's
    await Audit(store, _config(), judges=[judge]).resume(run_id)
    assert store.get_run(run_id).status == "completed"
    assert judge.calls == TOTAL_PAIRS - 50      # only what was not committed is judged again
    assert _pairs_once(store, run_id)
    assert compute_metrics(store.load_run(run_id)).as_dict() == await _straight_metrics(tmp_path, site)


class JudgeCrashed(BaseException):
    """Not an Exception: a judge error would become a judge_error verdict; this unwinds the run."""


class CrashingJudge(KeywordJudge):
    returned = 0   # verdicts handed back to the pipeline

    async def verify(self, statement, source):
        if self.calls == 37:
            self.calls += 1
            raise JudgeCrashed("the judge process died")
        verdict = await super().verify(statement, source)
        self.returned += 1
        return verdict


async def test_a_run_that_dies_on_a_judge_keeps_the_window_it_made_and_resume_finishes_it(tmp_path, site):
    store = Store(tmp_path / "crashed.db")
    crashing = CrashingJudge(0.002)
    audit = Audit(store, _config(), judges=[crashing])
    audit.commit_window_pairs, audit.commit_window_s = 25, 3600.0
    try:
        await audit.start(_responses(site))
    except JudgeCrashed:
        pass
    else:
        raise AssertionError("the run should have died with its judge")
    run = store.get_run(audit.run_id)
    assert run.status == "failed" and "JudgeCrashed" in run.message
    stored = store.db.execute("SELECT COUNT(*) FROM verdicts WHERE run_id = ?", [run.id]).fetchone()[0]
    # the 25 committed at the window's size plus the open window, committed as the run ended: every
    # verdict the judge handed back; and no judge call goes on once the run has ended
    calls_at_end = crashing.calls
    await asyncio.sleep(0.1)
    assert stored == crashing.returned and 36 <= stored <= 37 and crashing.calls == calls_at_end
    judge = KeywordJudge(0.002)
    await Audit(store, _config(), judges=[judge]).resume(run.id)
    assert store.get_run(run.id).status == "completed"
    assert judge.calls == TOTAL_PAIRS - stored
    assert _pairs_once(store, run.id)
    assert compute_metrics(store.load_run(run.id)).as_dict() == await _straight_metrics(tmp_path, site)
