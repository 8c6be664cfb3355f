"""Issue 41 item 4: the progress bar counts the work left (sources, pairs, answers) and the status line gives
the time left, as the README says. The events are those of a real 30-answer audit (the demo sample three
times, keyword judge) fed to the app's own audit controller."""
from __future__ import annotations

import asyncio
import re
import time

import pytest

from sourcecheckup import demo
from sourcecheckup.events import EventKind, ProgressEvent, RunProgress
from sourcecheckup.fetching import FetchOptions
from sourcecheckup.ingest import load_path
from sourcecheckup.pipeline import Audit, RunConfig
from sourcecheckup.store import Store
from tests.support import fake_judge  # noqa: F401  (registers the 'keyword' judge)


@pytest.fixture(scope="module")
def batch_events() -> list[ProgressEvent]:
    loaded = load_path(str(demo.answers_dir()))
    events: list[ProgressEvent] = []
    config = RunConfig(judges=["keyword"], judge_concurrency=2,
                       fetch=FetchOptions(sources_dir=demo.sources_dir(), browser="never", extract_workers=0))
    asyncio.run(Audit(Store(":memory:"), config, progress=events.append).start(loaded.responses * 3, loaded.skipped,
                                                                               "demo x3"))
    assert events[-1].responses_done == events[-1].responses_total == 3 * len(loaded.responses)
    return events


def test_the_bar_counts_the_work_left_and_the_line_gives_the_time_left(window, batch_events):
    audit = window.audit
    audit._started_at = time.monotonic() - 30      # the batch has been running for 30 s
    audit._progress = RunProgress(audit._started_at)
    shown: list[tuple[ProgressEvent, float]] = []
    lines: list[str] = []
    for ev in batch_events:
        audit._on_progress(ev)
        shown.append((ev, audit.progress_bar.value() / audit.progress_bar.maximum()))
        lines.append(audit.progress_label.text())
    shares = [s for _, s in shown]
    assert shares == sorted(shares), "the bar moved back"
    # every source fetched and no pair judged yet: the bar (sources 17/17) used to show 100% here
    fetched_only = [s for ev, s in shown if ev.sources_done == ev.sources_total and not ev.verdicts_done]
    assert fetched_only and max(fetched_only) < 0.5, fetched_only
    # full only once every answer is done
    assert all(s < 1.0 for ev, s in shown if ev.responses_done < ev.responses_total)
    assert shares[-1] == 1.0
    # the time left, while work is left
    mid = [line for (_, s), line in zip(shown, lines) if 0.05 < s < 0.9]
    assert mid and all(re.search(r" · about \d+ (s|min) left", line) for line in mid), mid
    assert batch_events[-1].kind in (EventKind.RUN_FINISHED, EventKind.RESPONSE_DONE)
