"""`sourcecheckup merge`: one batch audited by two processes (audit --input-split) and merged is the
run one process would have written; overlapping or differently judged inputs are refused."""
from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest

from tests.support import cli
from tests.support.paths import ROOT

PAGES = ("/article/hypertension", "/article/metformin-lactic-acidosis", "/article/hfe-hemochromatosis",
         "/status/404", "/docs/diabetes-guideline.pdf")
CLAIMS = ("Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher.",
          "Metformin should not be started when the eGFR is below 30 mL/min/1.73 m2.",
          "Salt has no effect on blood pressure in anyone.",
          "Iron overload is always caused by eating red meat.")


def sc(*args: str, timeout: float = 180) -> subprocess.CompletedProcess:
    return cli.sc(*args, timeout=timeout, in_process=True)


def _answers(folder: Path, site: str, n: int = 7) -> Path:
    lines = []
    for i in range(n):
        cites = [f"{site}{PAGES[i % len(PAGES)]}", f"{site}{PAGES[(i + 2) % len(PAGES)]}"]
        lines.append(json.dumps({"id": f"a{i}", "question": "What should a clinician know?", "model": f"model-{i % 2}",
                                 "response": f"{CLAIMS[i % len(CLAIMS)]} [1] {CLAIMS[(i + 1) % len(CLAIMS)]} [2]",
                                 "citations": cites}))
    lines.insert(3, "{not json")   # a skipped record: counted once in the merged run, not once per part
    path = folder / "answers.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _audit(answers: Path, db: Path, *extra: str) -> None:
    p = sc("audit", str(answers), "--db", str(db), "--allow-host", "127.0.0.1", "--no-archive", "-q", *extra)
    assert p.returncode == 0, p.stderr


def _report(db: Path, run: str | None = None) -> dict:
    from sourcecheckup.report import build_report
    from sourcecheckup.store import Store

    with Store(db) as store:
        return build_report(store, run or store.latest_run_id())


def _pairs(report: dict) -> list[tuple]:
    return sorted((r["id"], st["text"], v["url"], v["label"], v.get("quote", ""))
                  for r in report["responses"] for st in r["statements"] for v in st["verdicts"])


@pytest.fixture(scope="module")
def split_batch(tmp_path_factory, site):
    """The same input audited whole (builtin judge) and as two halves into two databases."""
    folder = tmp_path_factory.mktemp("merge")
    answers = _answers(folder, site)
    _audit(answers, folder / "whole.db")
    _audit(answers, folder / "part1.db", "--input-split", "1/2")
    _audit(answers, folder / "part2.db", "--input-split", "2/2")
    return folder, answers


def test_two_halves_merge_into_the_run_one_process_would_have_written(split_batch):
    folder, _ = split_batch
    half1, half2 = _report(folder / "part1.db"), _report(folder / "part2.db")
    assert [r["id"] for r in half1["responses"]] == ["a0", "a2", "a4", "a6"]
    assert [r["id"] for r in half2["responses"]] == ["a1", "a3", "a5"]
    merged_db = folder / "merged.db"
    p = sc("merge", str(merged_db), str(folder / "part1.db"), str(folder / "part2.db"), "--run-name", "batch 7")
    assert p.returncode == 0, p.stderr
    assert "merged 2 runs into run" in p.stdout and "(input split order)" in p.stdout
    whole, merged = _report(folder / "whole.db"), _report(merged_db)
    assert merged["metrics"] == whole["metrics"]
    assert merged["counts"] == whole["counts"]
    assert [r["id"] for r in merged["responses"]] == [r["id"] for r in whole["responses"]]   # input order
    pairs = _pairs(merged)
    assert pairs == _pairs(whole) and len(pairs) == len(set(pairs)) > 10   # every pair, once
    assert merged["run"]["n_skipped"] == 1 and len(merged["skipped"]) == 1
    assert sorted(s["url"] for r in merged["responses"] for s in r["sources"]) == \
        sorted(s["url"] for r in whole["responses"] for s in r["sources"])

    from sourcecheckup.store import Store
    from sourcecheckup.store.merge import file_sha256

    with Store(merged_db) as store:
        run = store.get_run(store.latest_run_id())
        n_sources = store.db.execute("SELECT COUNT(*), COUNT(DISTINCT url) FROM sources").fetchone()
    assert run.name == "batch 7" and run.status == "completed"
    inputs = run.config["merged_from"]["inputs"]
    assert [(Path(i["file"]).name, i["input_split"]["part"]) for i in inputs] == [("part1.db", 1), ("part2.db", 2)]
    assert [i["sha256"] for i in inputs] == [file_sha256(folder / "part1.db"), file_sha256(folder / "part2.db")]
    assert [i["run_id"] for i in inputs] == [half1["run"]["id"], half2["run"]["id"]]
    assert run.config["merged_from"]["forced"] is False
    assert n_sources[0] == n_sources[1]   # a page both halves read with the same bytes is stored once


def test_a_merged_run_opens_in_show_and_report(split_batch):
    folder, _ = split_batch
    merged_db = folder / "merged-show.db"
    p = sc("merge", "--db", str(merged_db), str(folder / "part1.db"), str(folder / "part2.db"))
    assert p.returncode == 0, p.stderr
    run_id = p.stdout.split("into run ", 1)[1].split()[0]
    show = sc("show", run_id, "--db", str(merged_db))
    assert show.returncode == 0, show.stderr
    assert "a6" in show.stdout and "a1" in show.stdout and "✓" in show.stdout
    out = folder / "merged.html"
    rep = sc("report", run_id, "--db", str(merged_db), "-o", str(out))
    assert rep.returncode == 0, rep.stderr
    assert "Hypertension is now defined" in out.read_text(encoding="utf-8")
    check = sc("report", run_id, "--db", str(merged_db), "-o", str(folder / "merged.json"))
    assert check.returncode == 0
    verify = sc("verify-report", str(folder / "merged.json"), "--db", str(merged_db))
    assert verify.returncode == 0, verify.stdout + verify.stderr


def test_a_response_id_in_two_inputs_is_refused_naming_both_files(split_batch):
    folder, _ = split_batch
    shutil.copy(folder / "part1.db", folder / "part1-again.db")
    out = folder / "refused.db"
    p = sc("merge", str(out), str(folder / "part1.db"), str(folder / "part2.db"), str(folder / "part1-again.db"))
    assert p.returncode == 2
    assert f"response id 'a0' is in both {folder / 'part1.db'} and {folder / 'part1-again.db'}" in p.stderr
    assert not out.exists() or _runs(out) == 0   # nothing half-merged was left behind


def test_runs_judged_differently_are_refused_unless_forced(split_batch):
    folder, answers = split_batch
    _audit(answers, folder / "part2-keyword.db", "--input-split", "2/2", "--judge", "keyword:0")
    parts = [str(folder / "part1.db"), str(folder / "part2-keyword.db")]
    p = sc("merge", str(folder / "mixed.db"), *parts)
    assert p.returncode == 2
    assert "the runs were not judged alike" in p.stderr and "judges: ['builtin'] in" in p.stderr
    assert "--force" in p.stderr and _runs(folder / "mixed.db") == 0
    forced = sc("merge", str(folder / "mixed.db"), *parts, "--force")
    assert forced.returncode == 0, forced.stderr
    assert "merged despite: judges" in forced.stderr
    from sourcecheckup.store import Store

    with Store(folder / "mixed.db") as store:
        merged = store.get_run(store.latest_run_id()).config["merged_from"]
    assert merged["forced"] is True and merged["differences"][0].startswith("judges: ['builtin']")


def test_input_split_must_name_a_part_of_the_whole(tmp_path, site):
    answers = _answers(tmp_path, site, n=2)
    p = sc("audit", str(answers), "--db", str(tmp_path / "x.db"), "--input-split", "3/2")
    assert p.returncode == 2 and "--input-split 3/2: give N/K with 1 <= N <= K" in p.stderr
    p = sc("audit", str(answers), "--db", str(tmp_path / "x.db"), "--input-split", "3/3", "--allow-host", "127.0.0.1")
    assert p.returncode == 1 and "part 3 of 3 holds none of the input's 2 answers" in p.stderr


def _runs(db: Path) -> int:
    with sqlite3.connect(db) as conn:
        return conn.execute("SELECT COUNT(*) FROM runs").fetchone()[0]


# ----------------------------------------------------------------------------- the store's merge, directly

URL_OK, URL_FLAKY = "https://example.org/guideline", "https://example.org/flaky"


def _part(path: Path, ids: list[str], flaky_ok: bool, *, part: int, prompt: str = "builtin-3"):
    """A database holding one run of `ids`, each with one statement judged against two sources,
    one review, one suggestion and one review-sample pair per response."""
    from sourcecheckup.models import FetchStatus, Label, Response, Source, Statement, Verdict
    from sourcecheckup.store import Store
    from sourcecheckup.store.merge import mark_input_split

    with Store(path) as store:
        run = store.create_run(input="answers.jsonl", config={"consensus": "first"}, judges=["builtin"],
                               parser="builtin", app_version="test")
        rows = store.add_responses(run, [Response(id=i, text=f"Claim of {i}.", citations=(URL_OK, URL_FLAKY))
                                         for i in ids])
        mark_input_split(store, run, part, 2, 4)
        ok = store.add_source(Source(url=URL_OK, status=FetchStatus.OK, text="The guideline text.", sha256="ab" * 32,
                                     http_status=200, raw=b"<html>The guideline text.</html>"))
        flaky = store.add_source(Source(url=URL_FLAKY, status=FetchStatus.OK if flaky_ok else FetchStatus.TIMEOUT,
                                        text="Flaky page text." if flaky_ok else "",
                                        http_status=200 if flaky_ok else None,
                                        sha256="cd" * 32 if flaky_ok else None,
                                        reason="" if flaky_ok else "no complete answer within 20 s"))
        store.link_run_source(run, URL_OK, ok)
        store.link_run_source(run, URL_FLAKY, flaky)
        samples = []
        for row in rows:
            (st,) = store.save_statements(run, row.pk, [Statement(0, f"Claim of {row.response.id}.")])
            store.save_verdict(run, st.pk, URL_OK, ok, Verdict(Label.SUPPORTED, 0.9, quote="The guideline text.",
                                                               quote_found=True, judge_id="builtin",
                                                               prompt_version=prompt))
            if flaky_ok:
                store.save_verdict(run, st.pk, URL_FLAKY, flaky, Verdict(Label.NOT_SUPPORTED, 0.1, judge_id="builtin",
                                                                         prompt_version=prompt))
            store.add_review(run, st.pk, URL_OK, "Dr Lee", "supported", f"checked {row.response.id}")
            store.add_suggestion(run, st.pk, URL_OK, kind="rewrite", original=st.statement.text,
                                 suggested=f"Rewritten {row.response.id}.", quote="", status="verified",
                                 judge_id="builtin", verification={})
            samples.append({"statement_pk": st.pk, "url": URL_OK, "stratum": "supported"})
        store.add_review_sample(run, "pilot", samples, blind=True, seed=1)
        store.set_run_status(run, "completed")
    return path


def test_reviews_suggestions_and_samples_follow_their_statements_into_the_merged_run(tmp_path):
    from sourcecheckup.store import Store
    from sourcecheckup.store.merge import MergeInput, merge_runs

    a = _part(tmp_path / "a.db", ["r0", "r2"], flaky_ok=False, part=1)
    b = _part(tmp_path / "b.db", ["r1", "r3"], flaky_ok=True, part=2)
    with Store(tmp_path / "out.db") as out:
        result = merge_runs(out, [MergeInput(a), MergeInput(b)])
        run = result.run_id
        labels = out.statement_labels(run)
        data = out.load_run(run)
        reviews = {(labels[r["statement_pk"]], r["reason"]) for r in out.review_rows(run)}
        suggestions = {(labels[s["statement_pk"]], s["suggested"]) for s in out.suggestion_rows(run)}
        sample = [labels[r["statement_pk"]] for r in out.review_sample_rows(run, "pilot")]
        log = [m["message"] for m in out.run_log(run)]
        n_sources = out.db.execute("SELECT COUNT(*) FROM sources").fetchone()[0]
    assert [r.response.id for r in data.responses] == ["r0", "r1", "r2", "r3"] and result.order == "input split"
    assert reviews == {(f"{i}/s1", f"checked {i}") for i in ("r0", "r1", "r2", "r3")}
    assert suggestions == {(f"{i}/s1", f"Rewritten {i}.") for i in ("r0", "r1", "r2", "r3")}
    assert sorted(sample) == ["r0/s1", "r1/s1", "r2/s1", "r3/s1"]
    verdicts = {(labels[v.statement_pk], v.url): v.source_id for vs in data.verdicts.values() for v in vs}
    assert len(verdicts) == 6 and verdicts[("r0/s1", URL_OK)] == verdicts[("r1/s1", URL_OK)]   # one row, same bytes
    assert n_sources == 3   # the guideline once; the flaky page as each part read it
    # the flaky page: one part timed out, the other read it; the run counts the read, and says so
    assert data.sources[URL_FLAKY].source.status.value == "ok"
    assert any(f"{URL_FLAKY} was read differently by the inputs" in m and "uses the valid read" in m for m in log)
    assert len(result.source_conflicts) == 1


def test_runs_of_other_prompt_versions_are_refused(tmp_path):
    from sourcecheckup.store import Store
    from sourcecheckup.store.merge import MergeError, MergeInput, merge_runs

    a = _part(tmp_path / "a.db", ["r0"], flaky_ok=True, part=1)
    b = _part(tmp_path / "b.db", ["r1"], flaky_ok=True, part=2, prompt="builtin-4")
    with Store(tmp_path / "out.db") as out:
        with pytest.raises(MergeError, match="prompt version of builtin: builtin-3 in .*a.db but builtin-4 in .*b.db"):
            merge_runs(out, [MergeInput(a), MergeInput(b)])
        assert out.list_runs() == []


def test_merging_the_same_runs_again_answers_already_merged_and_writes_no_second_run(split_batch):
    # issue 30: run twice (or killed after its commit and run again) merge wrote a second identical run
    folder, _ = split_batch
    out = folder / "merged-twice.db"
    parts = [str(folder / "part1.db"), str(folder / "part2.db")]
    first = sc("merge", str(out), *parts)
    assert first.returncode == 0, first.stderr
    run_id = first.stdout.split("into run ", 1)[1].split()[0]
    again = sc("merge", str(out), *parts)
    assert again.returncode == 0, again.stderr
    assert f"already merged as run {run_id}" in again.stdout and "--force" in again.stdout
    assert _runs(out) == 1
    relative = sc("merge", str(out), *(os.path.relpath(p, ROOT) for p in parts))   # the same files, named otherwise
    assert f"already merged as run {run_id}" in relative.stdout and _runs(out) == 1
    forced = sc("merge", str(out), *parts, "--force")
    assert forced.returncode == 0 and "merged 2 runs into run" in forced.stdout, forced.stderr
    assert _runs(out) == 2
    from sourcecheckup.store import Store

    with Store(out) as store:
        merged = store.get_run(store.latest_run_id()).config["merged_from"]
    assert merged["remerge_of"] == run_id and merged["forced"] is True
