"""Issue 41: what the command line and the views say of a cancelled or running run, and of duplicate ids."""
from __future__ import annotations

import asyncio
import re

from sourcecheckup import demo
from sourcecheckup.cli import main
from sourcecheckup.events import EventKind, ProgressEvent
from sourcecheckup.fetching import FetchOptions
from sourcecheckup.ingest import load_path
from sourcecheckup.models import FetchStatus
from sourcecheckup.pipeline import Audit, RunConfig
from sourcecheckup.report import build_report
from sourcecheckup.store import Store
from tests.support import fake_judge  # noqa: F401  (registers the keyword judge)


def test_show_after_cancel_counts_sources_not_fetched_yet_apart_from_unreadable_ones(tmp_path, capsys):
    """Item 5: a demo run cancelled before it fetched; URLs it never reached are "not fetched yet", not unreadable."""
    loaded = load_path(str(demo.answers_dir()))
    store = Store(tmp_path / "c.db")
    config = RunConfig(judges=["keyword"], judge_concurrency=1,
                       fetch=FetchOptions(sources_dir=demo.sources_dir(), browser="never", extract_workers=0,
                                          total_concurrency=1))
    audit = Audit(store, config)
    audit.commit_window_pairs = 1

    def stop_after_the_first_split(event: ProgressEvent) -> None:
        if event.kind is EventKind.PARSED:
            audit.cancel.set()

    audit.progress = stop_after_the_first_split
    asyncio.run(audit.start(loaded.responses, loaded.skipped, "demo"))
    assert store.get_run(audit.run_id).status == "cancelled"
    sources = {s["url"]: s for r in build_report(store, audit.run_id)["responses"] for s in r["sources"]}
    pending = {u for u, s in sources.items() if s["status"] == "not_fetched"}
    unreadable = {u for u, s in sources.items() if s["status"] != "not_fetched"
                  and not (FetchStatus(s["status"]).readable and s.get("text_chars", 0) > 0)}
    assert pending, "the cancel left URLs not fetched"
    store.close()
    capsys.readouterr()
    assert main(["show", audit.run_id, "--db", str(tmp_path / "c.db")]) == 0
    out = capsys.readouterr().out
    line = next(x for x in out.splitlines() if "unreadable sources" in x)
    assert re.search(rf"unreadable sources {len(unreadable)} · not fetched yet {len(pending)} ·", line), line


def test_a_repeated_id_is_renamed_and_the_renaming_is_named(tmp_path, capsys):
    """Item 6: two JSONL lines with one id are two answers; the second's new id is said, with its line."""
    src = tmp_path / "dup.jsonl"
    src.write_text('{"id": "para-1", "text": "Aspirin thins the blood."}\n'
                   '{"id": "para-1", "text": "Statins lower cholesterol."}\n', encoding="utf-8")
    loaded = load_path(str(src))
    assert [r.id for r in loaded.responses] == ["para-1", "para-1-2"]
    assert len(loaded.notes) == 1 and "dup.jsonl:2 'para-1' -> 'para-1-2'" in loaded.notes[0]
    capsys.readouterr()
    assert main(["audit", str(src), "--db", str(tmp_path / "d.db"), "--judge", "keyword"]) == 0
    assert "dup.jsonl:2 'para-1' -> 'para-1-2'" in capsys.readouterr().err


def test_an_answer_of_a_run_still_under_way_is_not_said_to_be_stopped(tmp_path):
    """Item 12: the Answer tab of an answer not split yet said "the audit stopped … Resume the run" while the
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


def test_an_unreachable_host_is_its_own_outcome_with_its_own_rate(tmp_path, site, capsys):
    """Item 11: "Connection refused" was filed as a server error and a model with 1 of 2 links unreachable
    showed "Dead 0.0%"; it is now "host unreachable", with its own column of the fetch-outcome rates."""
    import json

    from tests.support.fake_model_servers import closed_port

    answer = tmp_path / "a.jsonl"
    nowhere = f"http://127.0.0.1:{closed_port()}/guideline"
    answer.write_text(json.dumps({"id": "a1", "model": "m", "response": "Aspirin thins the blood [1]. Statins lower "
                                  "cholesterol [2].", "citations": [f"{site}/article/hypertension", nowhere]}) + "\n")
    db = tmp_path / "u.db"
    assert main(["audit", str(answer), "--db", str(db), "--judge", "keyword", "--allow-host", "127.0.0.1",
                 "--browser", "never", "--no-archive", "--no-references", "-q"]) == 0
    with Store(db) as store:
        run_id = store.latest_run_id()
        report = build_report(store, run_id)
    (src,) = [s for r in report["responses"] for s in r["sources"] if s["url"] == nowhere]
    assert src["status"] == "unreachable"
    rates = report["analytics"]["by_model"]["m"]["rates"]
    assert (rates["unreachable"]["k"], rates["unreachable"]["n"]) == (1, 2)
    assert (rates["dead"]["k"], rates["dead"]["n"]) == (0, 2)
    html = tmp_path / "r.html"
    assert main(["report", run_id, "--db", str(db), "-o", str(html)]) == 0
    assert "<th class=\"n\">Unreachable</th>" in html.read_text()
    capsys.readouterr()
    assert main(["show", run_id, "--db", str(db)]) == 0
    assert "host unreachable" in capsys.readouterr().out
