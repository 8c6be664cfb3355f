"""Issue 25 items 1-2: verify-report rebuilds every field of a report from the database, ties the report to its
evidence by digests, checks a signature, and fails naming the field for each class of tampering.

The runs are real pipeline runs: the fixture site with two keyword judges that disagree (one of them
errs on a statement), three reviewers; the bundled demo through the CLI; a run with reference checks
against fake Crossref/PubMed/OpenAlex servers and a Retraction Watch file."""
from __future__ import annotations

import asyncio
import copy
import dataclasses
import hashlib
import json
import os
import re
import shutil
from pathlib import Path
from typing import Any, Callable

import pytest

from sourcecheckup.cli import main
from sourcecheckup.models import Label
from sourcecheckup.report import build_report, write_report
from sourcecheckup.review import add_review
from sourcecheckup.store import Store
from tests.support.fake_judge import KeywordJudge
from tests.support.report_runs import SUPPORTED, UNSUPPORTED, audit_site


class AlwaysSupports(KeywordJudge):
    """A second judge that says supported to every pair (so the two judges disagree on some)."""

    def __init__(self) -> None:
        super().__init__()
        self.id = "always"

    async def verify(self, statement, source):
        v = await super().verify(statement, source)
        return dataclasses.replace(v, label=Label.SUPPORTED, judge_id=self.id)


def _pair(store: Store, run_id: str, text: str, rid: str = "r1") -> tuple[int, str]:
    data = store.load_run(run_id)
    for resp in data.responses:
        if resp.response.id == rid:
            for row in data.statements[resp.pk]:
                if row.statement.text == text:
                    return row.pk, data.verdicts[row.pk][0].url
    raise AssertionError(text)


@pytest.fixture(scope="module")
def reviewed(site, tmp_path_factory):
    """Two judges (the first decides; it errs on one statement), dead and paywalled sources, a grouping column,
    three reviewers whose majority overturns the judge on one pair; its JSON reports, judges-led and with
    reviews."""
    folder = tmp_path_factory.mktemp("verify")
    store = Store(folder / "audit.db")
    run_id = asyncio.run(audit_site(store, site, judges=[KeywordJudge(fail_on="shown long ago"), AlwaysSupports()]))
    spk, url = _pair(store, run_id, UNSUPPORTED)
    add_review(store, run_id, spk, url, "dr-a", "supported")
    add_review(store, run_id, spk, url, "dr-b", "supported")
    add_review(store, run_id, spk, url, "dr-c", "not_supported", reason="the page is about metformin")
    spk2, url2 = _pair(store, run_id, SUPPORTED)
    add_review(store, run_id, spk2, url2, "dr-a", "supported")
    judges_led = write_report(store, run_id, folder / "report.json")
    with_reviews = write_report(store, run_id, folder / "with-reviews.json", with_reviews=True)
    yield store, run_id, judges_led, with_reviews
    store.close()


def _verify(path: Path, db: Path, capsys, *extra: str) -> tuple[int, str]:
    capsys.readouterr()
    code = main(["verify-report", str(path), "--db", str(db), *extra])
    return code, capsys.readouterr().out


def _statement(report: dict, text: str, rid: str = "r1") -> tuple[int, int]:
    for i, r in enumerate(report["responses"]):
        for j, s in enumerate(r["statements"]):
            if r["id"] == rid and s["text"] == text:
                return i, j
    raise AssertionError(text)


# ---------------------------------------------------------------------------- untouched reports verify

def test_untouched_reports_of_a_two_judge_run_with_reviews_verify(reviewed, capsys):
    store, run_id, judges_led, with_reviews = reviewed
    for path in (judges_led, with_reviews):
        code, out = _verify(path, store.path, capsys)
        assert code == 0, out
        assert out.startswith("OK: every metric and every other field")
        # it says what it compared, section by section, and what it left out and why
        assert "responses" in out and "review" in out and "integrity (evidence rows)" in out
        assert "not compared" in out and "generated_at" in out
    report = json.loads(with_reviews.read_text())
    assert report["report_options"]["with_reviews"] is True and len(report["run"]["judges"]) == 2
    assert report["review"]["overturned"] and report["disagreements"]


def test_the_demo_report_verifies_and_records_what_the_run_was_made_with(tmp_path, capsys):
    out = tmp_path / "demo.html"
    assert main(["demo", "--db", str(tmp_path / "demo.db"), "-o", str(out), "--quiet"]) == 0
    report = json.loads(out.with_suffix(".json").read_text())
    prov = report["audit_trail"]["provenance"]
    # the input files' hashes, as the run read them
    answers = sorted(p for p in (Path(report["run"]["input"])).rglob("*") if p.is_file())
    assert [i["sha256"] for i in prov["inputs"]] == [hashlib.sha256(p.read_bytes()).hexdigest() for p in answers]
    assert report["integrity"]["inputs"] == prov["inputs"]
    # the software, and the built-in judge's parameters hashed
    env = prov["environment"]
    assert env["python"] and set(env["packages"]) >= {"trafilatura", "pypdf", "numpy", "rank-bm25", "pysbd"}
    builtin = next(j for j in prov["judges"] if j["id"] == "builtin")
    from sourcecheckup.judges.builtin.features import params_path
    assert builtin["parameters"]["sha256"] == hashlib.sha256(params_path().read_bytes()).hexdigest()
    code, text = _verify(out.with_suffix(".json"), tmp_path / "demo.db", capsys)
    assert code == 0, text
    assert "input files re-hashed" in text
    code, text = _verify(out, tmp_path / "demo.db", capsys)     # the HTML, rebuilt and compared line by line
    assert code == 0, text


def _one_answer_audited(tmp_path: Path, site: str) -> tuple[Path, Path, Path, dict]:
    """One answer citing one fixture page, audited and reported: (answer, database, JSON report, report)."""
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"response": f"{SUPPORTED} [1]", "citations": [f"{site}/article/hypertension"]}))
    db = tmp_path / "a.db"
    assert main(["audit", str(answer), "--db", str(db), "--judge", "keyword", "--allow-host", "127.0.0.1",
                 "--browser", "never", "--no-archive", "--no-references", "-q"]) == 0
    out = tmp_path / "r.json"
    assert main(["report", "--db", str(db), "-o", str(out)]) == 0
    return answer, db, out, json.loads(out.read_text())


def test_an_input_file_changed_after_the_run_is_named(tmp_path, site, capsys):
    answer, db, out, report = _one_answer_audited(tmp_path, site)
    assert report["integrity"]["inputs"][0]["sha256"] == hashlib.sha256(answer.read_bytes()).hexdigest()
    assert _verify(out, db, capsys)[0] == 0
    answer.write_text(answer.read_text() + "\n")
    code, text = _verify(out, db, capsys)
    assert code == 1 and "integrity.inputs[0].sha256" in text and str(answer.resolve()) in text


def test_a_report_naming_other_files_as_inputs_never_makes_verify_open_them(tmp_path, site):
    """Issue 42 item 11: the inputs re-hashed are the database's, never paths a tampered report names."""
    import subprocess
    import sys

    answer, db, out, report = _one_answer_audited(tmp_path, site)
    secret = tmp_path / "secret.txt"
    secret.write_text("not for the report's eyes")
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)   # opening it for reading would block for ever, as /proc/kmsg does
    report["integrity"]["inputs"] += [{"path": str(fifo), "sha256": "0" * 64, "bytes": 1},
                                      {"path": str(secret), "sha256": "0" * 64, "bytes": 25}]
    out.write_text(json.dumps(report))
    done = subprocess.run([sys.executable, "-m", "sourcecheckup", "verify-report", str(out), "--db", str(db)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "integrity.inputs" in done.stdout
    assert hashlib.sha256(secret.read_bytes()).hexdigest() not in done.stdout + done.stderr


# ---------------------------------------------------------------------------- the report edited

def _find_comparison(report: dict, with_value: str) -> int:
    # a figure a comparison has (kappa is left out on fewer than 10 pairs: then the edit fills the empty value)
    return next((i for i, c in enumerate(report["review"]["comparisons"]) if c[with_value]["value"] is not None), 0)


def _flip(verdict: dict) -> None:
    verdict["label"] = "not_supported" if verdict["label"] == "supported" else "supported"


def _relabel_every_unsupported(report: dict) -> None:
    for r in report["responses"]:
        for s in r["statements"]:
            if s["status"] == "not_supported":
                s["status"], s["supported"] = "supported", True


EDITS: list[tuple[str, Callable[[dict], Any], str]] = [
    ("by_model deleted", lambda r: r.pop("by_model"), "by_model: missing from the report"),
    ("counts deleted", lambda r: r.pop("counts"), "counts: missing from the report"),
    ("metrics_with_reviews deleted", lambda r: r.pop("metrics_with_reviews"),
     "metrics_with_reviews: missing from the report"),
    ("references deleted", lambda r: r.pop("references"), "references: missing from the report"),
    ("a section added", lambda r: r.update(extra={"figure": 1}), "extra: in the report but not"),
    ("a response's supported flag", lambda r: r["responses"][0].update(supported=not r["responses"][0]["supported"]),
     "responses[0].supported"),
    ("a statement's status", lambda r: r["responses"][0]["statements"][1].update(status="supported"),
     "responses[0].statements[1].status: report says 'supported', database gives 'not_supported'"),
    ("a verdict's label", lambda r: _flip(r["responses"][0]["statements"][1]["verdicts"][0]),
     "responses[0].statements[1].verdicts[0].label"),
    ("a verdict's quote", lambda r: r["responses"][0]["statements"][0]["verdicts"][0].update(quote="made up"),
     "responses[0].statements[0].verdicts[0].quote"),
    ("every not_supported statement relabelled supported", _relabel_every_unsupported,
     ".status: report says 'supported', database gives 'not_supported'"),
    ("kappa", lambda r: r["review"]["comparisons"][_find_comparison(r, "kappa")]["kappa"].update(value=0.99),
     ".kappa.value"),
    ("agreement", lambda r: r["review"]["comparisons"][0]["agreement"].update(value=0.42),
     "review.comparisons[0].agreement.value"),
    ("overturned", lambda r: r["review"]["overturned"].clear(), "review.overturned: report has 0 item(s)"),
    ("comparisons", lambda r: r["review"]["comparisons"].pop(), "review.comparisons: report has"),
    ("by_group", lambda r: r["by_group"]["source"]["guidelines"]["statement_support"].update(k=9),
     "by_group.source.guidelines.statement_support.k"),
    ("dead-link rate", lambda r: r["analytics"]["rates"]["dead"].update(value=0.01), "analytics.rates.dead.value"),
    ("top domains", lambda r: r["analytics"]["top_domains"][0].update(count=99), "analytics.top_domains[0].count"),
    ("unsupported", lambda r: r["unsupported"].pop(0), "unsupported: report has"),
    ("an unsupported statement's text", lambda r: r["unsupported"][0].update(statement="edited"),
     "unsupported[0].statement"),
    ("skipped", lambda r: r["skipped"].append({"origin": "x.csv row 2", "problem": "no text"}),
     "skipped: report has 1 item(s), database gives 0"),
    ("run.judges", lambda r: r["run"].update(judges=["openai:gpt-4o"]), "run.judges"),
    ("a source's sha256", lambda r: r["responses"][0]["sources"][0].update(sha256="0" * 64),
     "responses[0].sources[0].sha256"),
    ("the audit trail's source hash", lambda r: r["audit_trail"]["sources"][0].update(sha256="0" * 64),
     "audit_trail.sources[0].sha256"),
    ("the run's recorded environment", lambda r: r["audit_trail"]["provenance"]["environment"].update(python="2.7"),
     "audit_trail.provenance.environment.python"),
    ("the evidence digest", lambda r: r["integrity"]["evidence"].update(sha256="0" * 64), "integrity.evidence.sha256"),
    ("report_options deleted", lambda r: r.pop("report_options"), "report_options: missing"),
]


@pytest.mark.parametrize("edit, expected", [(e, x) for _, e, x in EDITS], ids=[n for n, _, _ in EDITS])
def test_each_edit_of_the_report_fails_naming_the_field(reviewed, tmp_path, capsys, edit, expected):
    store, run_id, judges_led, _ = reviewed
    report = json.loads(judges_led.read_text())
    assert report["responses"][0]["statements"][1]["text"] == UNSUPPORTED   # the edits' assumptions
    edit(report)
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(report))
    code, out = _verify(path, store.path, capsys)
    assert code == 1, out
    assert out.startswith("MISMATCH") and expected in out, out


def test_a_long_text_edited_past_the_cut_is_shown_where_it_differs(reviewed, tmp_path, capsys):
    """Issue 41 item 10: both values used to be cut at the same point before the edit, so they read the same."""
    store, run_id, judges_led, _ = reviewed
    report = json.loads(judges_led.read_text())
    answer = report["responses"][0]["text"]
    assert len(answer) > 120 and answer.endswith("Please consult your doctor.")
    report["responses"][0]["text"] = answer.replace("your doctor.", "your pharmacist.")
    path = tmp_path / "edited.json"
    path.write_text(json.dumps(report))
    code, out = _verify(path, store.path, capsys)
    line = next(x for x in out.splitlines() if "responses[0].text: report says" in x)
    said, _, gave = line.partition(", database gives ")
    assert code == 1 and "pharmacist" in said and "doctor" in gave, line


def test_an_edit_is_also_named_by_the_reports_own_digest(reviewed):
    from sourcecheckup.report.integrity import check_self_digest

    report = json.loads(reviewed[2].read_text())
    assert check_self_digest(report) == []
    report["by_model"]["model-a"]["statement_support"]["k"] += 1
    assert check_self_digest(report) == ["by_model: this section was edited after the report was written "
                                         "(its digest differs)"]


# ---------------------------------------------------------------------------- the database altered

@pytest.fixture()
def altered(reviewed, tmp_path):
    """A copy of the run's database to alter, with the report written before the change."""
    store, run_id, judges_led, _ = reviewed
    db = tmp_path / "copy.db"
    store.db.conn.execute("PRAGMA wal_checkpoint(FULL)")
    shutil.copy(store.path, db)
    copy_store = Store(db)
    yield copy_store, run_id, judges_led
    copy_store.close()


def _first_citation(report_path: Path) -> str:
    return json.loads(report_path.read_text())["responses"][0]["sources"][0]["url"]   # r1's [1]: the hypertension page


def test_a_verdict_flip_that_leaves_every_total_equal_is_named(altered, capsys):
    store, run_id, report_path = altered
    before = build_report(store, run_id)
    spk, _ = _pair(store, run_id, SUPPORTED)
    url = _first_citation(report_path)
    verdicts = json.loads(report_path.read_text())["responses"][0]["statements"][0]["verdicts"]
    k = next(i for i, v in enumerate(verdicts) if v["url"] == url and v["judge"] == "always")
    # the second judge's verdict: the first judge decides, so no figure moves
    store.db.conn.execute("UPDATE verdicts SET label = 'not_supported' WHERE statement_pk = ? AND url = ? "
                          "AND judge_id = 'always'", [spk, url])
    store.db.conn.commit()
    after = build_report(store, run_id)
    assert after["metrics"] == before["metrics"] and after["counts"] == before["counts"]
    code, out = _verify(report_path, store.path, capsys)
    assert code == 1
    assert f"responses[0].statements[0].verdicts[{k}].label: report says 'supported', database gives " \
        "'not_supported'" in out, out
    assert "evidence verdicts" in out and "(statement r1/s1 x source 1" in out and "judge always) differs" in out


def test_a_sources_text_and_hash_replaced_are_named(altered, capsys):
    store, run_id, report_path = altered
    url = _first_citation(report_path)
    text = "Hypertension is a blood pressure of 140/90 mm Hg or higher."
    store.db.conn.execute("UPDATE sources SET text = ?, sha256 = ? WHERE id = (SELECT source_id FROM run_sources "
                          "WHERE run_id = ? AND url = ?)",
                          [text, hashlib.sha256(text.encode()).hexdigest(), run_id, url])
    store.db.conn.commit()
    code, out = _verify(report_path, store.path, capsys)
    assert code == 1
    assert "responses[0].sources[0].sha256" in out and "text_chars" in out
    assert "evidence sources" in out and f"({url}) differs from when the report was written" in out


def test_a_sources_text_alone_replaced_is_named_by_the_evidence_digest(altered, capsys):
    store, run_id, report_path = altered
    url = _first_citation(report_path)
    store.db.conn.execute("UPDATE sources SET text = upper(text) WHERE id = (SELECT source_id FROM run_sources "
                          "WHERE run_id = ? AND url = ?)", [run_id, url])
    store.db.conn.commit()
    code, out = _verify(report_path, store.path, capsys)
    assert code == 1 and f"({url}) differs from when the report was written" in out, out


def test_a_changed_review_is_named_even_when_no_figure_moves(altered, capsys):
    store, run_id, report_path = altered
    store.db.conn.execute("UPDATE reviews SET reason = 'edited later' WHERE reviewer = 'dr-c'")
    store.db.conn.commit()
    code, out = _verify(report_path, store.path, capsys)
    assert code == 1
    assert "evidence reviews" in out and "reviewer dr-c) differs from when the report was written" in out, out
    store.db.conn.execute("UPDATE reviews SET label = 'supported' WHERE reviewer = 'dr-c'")
    store.db.conn.commit()
    code, out = _verify(report_path, store.path, capsys)
    assert code == 1 and "review.comparisons" in out


# ---------------------------------------------------------------------------- signing

def test_a_signed_report_verifies_with_its_key_and_fails_with_another_or_after_an_edit(reviewed, tmp_path, capsys):
    store, run_id, _, _ = reviewed
    key, other = tmp_path / "filing.key", tmp_path / "other.key"
    assert main(["keygen", str(key)]) == 0 and main(["keygen", str(other)]) == 0
    assert (key.stat().st_mode & 0o777) == 0o600
    out = tmp_path / "signed.json"
    assert main(["report", run_id, "--db", str(store.path), "-o", str(out), "--sign", str(key)]) == 0
    report = json.loads(out.read_text())
    from sourcecheckup.report.integrity import fingerprint, load_public_key
    assert report["integrity"]["signature"]["public_key_fingerprint"] == fingerprint(
        load_public_key(Path(f"{key}.pub")))
    code, text = _verify(out, store.path, capsys, "--key", f"{key}.pub")
    assert code == 0 and "signature: verified" in text, text
    code, text = _verify(out, store.path, capsys, "--key", f"{other}.pub")
    assert code == 1 and "integrity.signature" in text
    for edit in (lambda r: r.update(generated_at="2020-01-01T00:00:00Z"),    # not compared, but signed
                 lambda r: r["run"].update(database="/elsewhere.db")):
        edited = copy.deepcopy(report)
        edit(edited)
        out.write_text(json.dumps(edited))
        code, text = _verify(out, store.path, capsys, "--key", f"{key}.pub")
        assert code == 1 and "integrity.signature: does not verify" in text, text
    # only the JSON report is signed: the other formats carry its content digest
    assert main(["report", run_id, "--db", str(store.path), "-o", str(tmp_path / "r.html"), "--sign", str(key)]) == 2


def test_a_key_pair_made_with_the_documented_openssl_line_signs_and_verifies(reviewed, tmp_path, capsys):
    import shutil as sh
    import subprocess

    if not sh.which("openssl"):
        pytest.skip("no openssl here")
    store, run_id, _, _ = reviewed
    key, pub = tmp_path / "k.pem", tmp_path / "k.pub.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(key)], check=True, timeout=30)
    subprocess.run(["openssl", "pkey", "-in", str(key), "-pubout", "-out", str(pub)], check=True, timeout=30)
    out = tmp_path / "signed.json"
    assert main(["report", run_id, "--db", str(store.path), "-o", str(out), "--sign", str(key)]) == 0
    code, text = _verify(out, store.path, capsys, "--key", str(pub))
    assert code == 0, text


# ---------------------------------------------------------------------------- other formats

def test_csv_xlsx_and_html_reports_are_rebuilt_and_compared(reviewed, tmp_path, capsys):
    store, run_id, _, _ = reviewed
    for fmt in ("csv", "xlsx", "html"):
        path = tmp_path / f"r.{fmt}"
        assert main(["report", run_id, "--db", str(store.path), "-o", str(path), "--with-reviews"]) == 0
        code, out = _verify(path, store.path, capsys)
        assert code == 0, out
    json_report = write_report(store, run_id, tmp_path / "r.json", with_reviews=True)
    html = (tmp_path / "r.html").read_text()
    # the HTML carries the JSON's content digest and the evidence digest
    integrity = json.loads(json_report.read_text())["integrity"]
    assert integrity["content_sha256"] in html and integrity["evidence"]["sha256"] in html
    (tmp_path / "r.html").write_text(html.replace("Metformin cures hypertension", "Metformin treats hypertension", 1))
    code, out = _verify(tmp_path / "r.html", store.path, capsys)
    assert code == 1 and "Metformin treats hypertension" in out
    csv_text = (tmp_path / "r.csv").read_text().replace(",not_supported,", ",supported,", 1)
    (tmp_path / "r.csv").write_text(csv_text)
    code, out = _verify(tmp_path / "r.csv", store.path, capsys)
    assert code == 1 and re.search(r"row \d+ \(r1/s1 x \S+\), label: file says 'supported', database gives "
                                   r"'not_supported'", out), out
    from openpyxl import load_workbook
    wb = load_workbook(tmp_path / "r.xlsx")
    row = next(r for r in wb["summary"].iter_rows() if r[0].value == "Statement-level support")
    row[4].value += 1
    wb.save(tmp_path / "r.xlsx")
    code, out = _verify(tmp_path / "r.xlsx", store.path, capsys)
    assert code == 1 and "sheet 'summary'" in out and "Statement-level support" in out


def test_an_html_report_names_a_database_changed_since(altered, tmp_path, capsys):
    store, run_id, _ = altered
    html = write_report(store, run_id, tmp_path / "r.html")
    store.db.conn.execute("UPDATE reviews SET reason = 'edited later' WHERE reviewer = 'dr-c'")
    store.db.conn.commit()
    code, out = _verify(html, store.path, capsys)
    assert code == 1 and "evidence digest" in out


# ---------------------------------------------------------------------------- reference checks

def test_reference_problems_and_retracted_only_support_are_verified(tmp_path, site, scholarly, capsys):
    from tests.references.test_references_end_to_end import _audit

    db = _audit(tmp_path, site, scholarly)
    store = Store(db)
    run_id = store.latest_run_id()
    path = write_report(store, run_id, tmp_path / "refs.json")
    assert _verify(path, db, capsys)[0] == 0
    report = json.loads(path.read_text())
    retractions = report["audit_trail"]["provenance"]["retraction_data"]
    from tests.support.fake_scholarly import RETRACTION_CSV
    assert retractions["sha256"] == hashlib.sha256(RETRACTION_CSV.read_bytes()).hexdigest() and retractions["date"]
    assert report["references"]["problems"]
    edits = [(lambda r: r["references"]["problems"][0].update(status="verified"), "references.problems[0].status"),
             (lambda r: r["references"]["statements_supported_only_by_retracted"].append(
                 {"statement_id": "x/s1", "statement": "made up"}),
              "references.statements_supported_only_by_retracted: report has"),
             (lambda r: r["responses"][0]["sources"][0]["reference"].update(retracted=True),
              "responses[0].sources[0].reference.retracted")]
    for edit, expected in edits:
        edited = json.loads(path.read_text())
        edit(edited)
        (tmp_path / "edited.json").write_text(json.dumps(edited))
        code, out = _verify(tmp_path / "edited.json", db, capsys)
        assert code == 1 and expected in out, out
    store.close()




def test_an_llm_judges_sampling_and_token_limits_are_stored_with_the_run_and_verified(tmp_path, site, capsys):
    from tests.support.fake_llm import FakeLLMServer

    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"response": f"{SUPPORTED} [1]", "citations": [f"{site}/article/hypertension"]}))
    db = tmp_path / "llm.db"
    with FakeLLMServer("openai") as srv:
        judge = f"openai-compatible:{srv.base_url}#gpt-4o"
        assert main(["audit", str(answer), "--db", str(db), "--judge", judge, "--allow-host", "127.0.0.1",
                     "--browser", "never", "--no-archive", "--no-references", "-q"]) in (0, 1)
    out = tmp_path / "r.json"
    assert main(["report", "--db", str(db), "-o", str(out)]) == 0
    report = json.loads(out.read_text())
    (record,) = report["audit_trail"]["provenance"]["judges"]
    assert (record["id"], record["temperature"], record["seed"], record["max_output_tokens"]) == (
        judge, 0, 42, 600)
    assert not any("key" in k.lower() for k in record["settings"])
    assert _verify(out, db, capsys)[0] == 0
    report["audit_trail"]["provenance"]["judges"][0]["temperature"] = 0.7
    out.write_text(json.dumps(report))
    code, text = _verify(out, db, capsys)
    assert code == 1 and "audit_trail.provenance.judges[0].temperature: report says 0.7, database gives 0" in text


def test_a_pdf_report_is_matched_by_its_digests(altered, tmp_path, capsys):
    from sourcecheckup.report.pdf import PdfError

    store, run_id, _ = altered
    try:
        pdf = write_report(store, run_id, tmp_path / "r.pdf")
    except PdfError as exc:
        pytest.skip(f"no PDF engine here: {exc}")
    code, out = _verify(pdf, store.path, capsys)
    assert code == 0 and "pdf text (figures, words and signs of every page)" in out, out
    store.db.conn.execute("UPDATE verdicts SET rationale = 'edited' WHERE judge_id = 'always'")
    store.db.conn.commit()
    code, out = _verify(pdf, store.path, capsys)
    assert code == 1 and "evidence digest: the file carries" in out, out


def test_a_pdf_printed_from_an_edited_html_report_is_not_verified(reviewed, tmp_path, capsys):
    """Issue 41 item 2: the figures a reader sees are checked, not only the digests the forger left alone."""
    from sourcecheckup.report.pdf import PdfError, html_to_pdf

    store, run_id, _, _ = reviewed
    page = write_report(store, run_id, tmp_path / "r.html").read_text(encoding="utf-8")
    shown = re.search(r"Statement-level support</td><td class=\"n\"><b>([\d.]+)%</b>", page)
    assert shown, "the summary's statement-level support"
    forged_figure = f"{float(shown.group(1)) + 10:.1f}"
    forged = page.replace(shown.group(0), shown.group(0).replace(shown.group(1), forged_figure), 1)
    forged = forged.replace("Please consult your doctor", "Please consult your pharmacist", 1)   # and a word
    assert "pharmacist" in forged
    try:
        html_to_pdf(page, tmp_path / "true.pdf")
        html_to_pdf(forged, tmp_path / "forged.pdf")
    except PdfError as exc:
        pytest.skip(f"no PDF engine here: {exc}")
    code, out = _verify(tmp_path / "true.pdf", store.path, capsys)
    assert code == 0 and out.startswith("OK"), out
    code, out = _verify(tmp_path / "forged.pdf", store.path, capsys)
    assert code == 1 and "OK" not in out, out
    assert (f"page 1: figure not verified: the PDF shows '{forged_figure}' where the report rebuilt from the "
            f"database gives '{shown.group(1)}'") in out, out
    assert "text not verified" in out and "pharmacist" in out, out


def test_verify_report_prints_what_a_tampered_report_says_escaped(tmp_path, site):
    """Issue 42 item 14: the differences quote the report under test; an ANSI or OSC sequence planted there
    reaches the terminal as code points, never raw."""
    import subprocess
    import sys

    answer, db, out, report = _one_answer_audited(tmp_path, site)
    report["run"]["name"] = "\x1b[2K\x1b[32m✓ verified\x1b[0m \x1b]52;c;cm0gLXJmIH4=\x07"
    # a note quotes the report's signature block as it stands (printed raw before the fix)
    report["integrity"]["signature"] = {"public_key_fingerprint": "\x1b[2K\x1b[32mOK: trusted key\x1b[0m"}
    out.write_text(json.dumps(report))
    done = subprocess.run([sys.executable, "-m", "sourcecheckup", "verify-report", str(out), "--db", str(db)],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 1, done.stdout + done.stderr
    assert "\x1b" not in done.stdout + done.stderr and "\x07" not in done.stdout + done.stderr
    assert "<U+001B>[32mOK: trusted key" in done.stdout, done.stdout
