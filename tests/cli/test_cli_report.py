"""`report` and `show` on a stored run: the format follows the file's extension, where the report went,
what the archive lookup did, an unknown response, URLs a cancelled run never fetched, and an
unreachable host as its own outcome."""
from __future__ import annotations

import asyncio
import json
import re
import subprocess

import pytest

from sourcecheckup import demo
from sourcecheckup.cli import main
from sourcecheckup.events import EventKind, ProgressEvent
from sourcecheckup.fetching import FetchOptions
from sourcecheckup.ingest import load_path
from sourcecheckup.models import FetchStatus
from sourcecheckup.pipeline import Audit, RunConfig
from sourcecheckup.report import build_report
from sourcecheckup.store import Store
from tests.support import (
    cli,
    fake_judge,  # noqa: F401  (registers the keyword judge)
)

SUPPORTED = "Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher."


def sc(*args: str, env_extra: dict | None = None, **kw) -> subprocess.CompletedProcess:
    env = {"SOURCECHECKUP_ARCHIVE": "off", "SOURCECHECKUP_BROWSER": "never", **(env_extra or {})}
    return cli.sc(*args, env=env, in_process=not kw, **kw)


def test_show_an_unknown_response_says_so_and_exits_2(audited, capsys) -> None:
    assert main(["show", "--db", str(audited), "--response", "nope"]) == 2
    out = capsys.readouterr()
    assert "has no response 'nope' (its responses: a0, a1)" in out.err
    assert "source URL validity" not in out.out           # no run summary in place of the answer
    assert main(["show", "--db", str(audited), "--response", "a1"]) == 0
    assert "== a1" in capsys.readouterr().out


def test_show_after_cancel_counts_sources_not_fetched_yet_apart_from_unreadable_ones(tmp_path, capsys):
    """a demo run cancelled before it fetched; URLs it never reached are "not fetched yet", not unreadable."""
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


def test_report_format_follows_the_extension_and_a_contradiction_is_refused(audited, tmp_path, capsys) -> None:
    out = tmp_path / "out.html"
    assert main(["report", "--db", str(audited), "-o", str(out), "--format", "pdf"]) == 2
    assert "names a .html file but --format is pdf" in capsys.readouterr().err
    assert not out.exists()
    csv_out = tmp_path / "out.csv"
    assert main(["report", "--db", str(audited), "-o", str(csv_out)]) == 0
    assert not csv_out.read_text(encoding="utf-8-sig").lstrip().startswith("{")     # CSV, not JSON
    htm = tmp_path / "out.htm"
    assert main(["report", "--db", str(audited), "-o", str(htm)]) == 0
    assert "<html" in htm.read_text().lower()
    anyname = tmp_path / "report.out"                     # no known extension: --format decides
    assert main(["report", "--db", str(audited), "-o", str(anyname), "--format", "json"]) == 0
    assert json.loads(anyname.read_text())["run"]["id"]


def test_report_says_where_it_wrote_and_takes_q_for_the_bare_path(audited, tmp_path):
    out = tmp_path / "r.json"
    p = sc("report", "--db", str(audited), "-o", str(out))
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == f"report written to {out}"
    quiet = sc("report", "--db", str(audited), "-o", str(out), "-q")
    assert quiet.returncode == 0, quiet.stderr
    assert quiet.stdout.strip() == str(out)


@pytest.mark.parametrize("archive_args, said", [
    (["--archive-endpoint", "http://127.0.0.1:9/wayback/available"],
     "None recorded: archive lookup failed (no connection: the archive could not be reached (ConnectError))."),
    (["--no-archive"], "None recorded: archive lookup was off for this run (--no-archive)."),
])
def test_the_report_says_what_the_archive_lookup_did(tmp_path, site, archive_args, said) -> None:
    answers = tmp_path / "dead.json"
    answers.write_text(json.dumps({"response": f"{SUPPORTED} [1]", "citations": [f"{site}/status/404"]}))
    out = tmp_path / "r.html"
    p = sc("audit", str(answers), "--judge", "keyword:0", "--db", str(tmp_path / "d.db"), "--allow-host",
           "127.0.0.1", "-q", "--report", str(out), *archive_args, env_extra={"SOURCECHECKUP_ARCHIVE": "on"})
    assert p.returncode == 0, p.stderr
    text = " ".join(out.read_text().split())
    assert said in text
    assert "only when the fetch option is on" not in text


def test_an_unreachable_host_is_its_own_outcome_with_its_own_rate(tmp_path, site, capsys):
    """"Connection refused" was filed as a server error and a model with 1 of 2 links unreachable
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
