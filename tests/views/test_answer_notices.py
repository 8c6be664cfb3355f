"""What the Answer tab says of an answer not split yet: a run still under way is not said to have stopped."""
from __future__ import annotations

import asyncio

from sourcecheckup import demo
from sourcecheckup.events import EventKind, ProgressEvent
from sourcecheckup.fetching import FetchOptions
from sourcecheckup.ingest import load_path
from sourcecheckup.pipeline import Audit, RunConfig
from sourcecheckup.store import Store
from tests.support import fake_judge  # noqa: F401  (registers the keyword judge)


def test_an_answer_of_a_run_still_under_way_is_not_said_to_be_stopped(tmp_path):
    """the Answer tab of an answer not split yet said "the audit stopped … Resume the run" while the
    audit was still running; read from another connection while the audit runs, as the app's live refresh does."""
    from sourcecheckup.views.results import answer_notices, load_run_view

    loaded = load_path(str(demo.answers_dir()))
    db = tmp_path / "live.db"
    store = Store(db)
    config = RunConfig(judges=["keyword"], judge_concurrency=1,
                       fetch=FetchOptions(sources_dir=demo.sources_dir(), browser="never", extract_workers=0))
    audit = Audit(store, config)
    seen: list[list[str]] = []

    def look_while_running(event: ProgressEvent) -> None:
        if event.kind is EventKind.PARSED and not seen:
            with Store(db) as reader:
                view = load_run_view(reader, audit.run_id)
                assert view.data.run.status == "running"
                unsplit = [r for r in view.data.responses if not r.parsed]
                assert unsplit, "an answer not split yet"
                seen.append(answer_notices(view, unsplit[0].pk))
            audit.cancel.set()

    audit.progress = look_while_running
    asyncio.run(audit.start(loaded.responses, loaded.skipped, "demo"))
    store.close()
    assert seen and seen[0], seen
    assert "still under way" in seen[0][0] and "stopped" not in seen[0][0] and "Resume" not in seen[0][0]
