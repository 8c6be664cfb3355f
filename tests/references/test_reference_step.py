"""Reference checks in the audit: which citations are checked, checks stored beside fetching, written
references read through their DOI or recorded as failed fetches, cancel and resume, the CLI, the config.

The metadata services are stood in for by ``ScriptedResolver``, injected as ``Audit(..., resolver=...)``:
the same ``check``/``aclose`` as ``references.resolve.ReferenceResolver``, answering ReferenceChecks
built here by hand. Everything else is real: the fixture site over HTTP, SQLite, the judge, the CLI.
"""
from __future__ import annotations

import asyncio
import json
import shutil
from pathlib import Path

import pytest

from sourcecheckup.cli import build_parser, main
from sourcecheckup.cli.common import run_config
from sourcecheckup.config import ConfigError, build_run_config
from sourcecheckup.events import EventKind
from sourcecheckup.fetching import FetchOptions
from sourcecheckup.metrics import assess_run
from sourcecheckup.models import FetchStatus, Response, StatementStatus
from sourcecheckup.pipeline import Audit, RunConfig
from sourcecheckup.references import (
    LookupSettings,
    Notice,
    NoticeKind,
    Record,
    Reference,
    ReferenceCheck,
    ReferenceStatus,
    reference_key,
)
from sourcecheckup.references.step import reference_of
from sourcecheckup.store import Store
from tests.cli.test_cli import sc
from tests.support.fake_judge import KeywordJudge
from tests.support.paths import FIXTURES

SITE_FILES = FIXTURES / "site"

HFE = "Iron-overload-related disease was present in 28.4% of male C282Y homozygotes."
SUPPORTED = "Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher."
GARLIC = "Garlic extract cures resistant hypertension within one week."
SGLT2 = "SGLT2 inhibitors slow the decline of kidney function."

HFE_WRITTEN = ("Beutler E, Felitti VJ, Koziol JA, Ho NJ, Gelbart T. Penetrance of 845G->A (C282Y) HFE "
               "hereditary haemochromatosis mutation in the USA. Lancet. 2002;359(9302):211-8.")
FAKE_WRITTEN = "Smith J, Doe A. Garlic extract for resistant hypertension. J Fict Med. 2019;12:34-40."
HFE_REF, FAKE_REF = reference_key(HFE_WRITTEN), reference_key(FAKE_WRITTEN)
SGLT2_DOI = "https://doi.org/10.5555/jnp.2023.0456"
PUBMED = "https://pubmed.ncbi.nlm.nih.gov/31535829/"
MET_WRITTEN = "Fixture Health. Metformin and lactic acidosis: what the evidence shows. 2021."

HFE_RECORD = Record(service="crossref", title="Penetrance of 845G->A (C282Y) HFE hereditary haemochromatosis "
                    "mutation in the USA", authors=("Beutler", "Felitti"), year=2002, journal="Lancet",
                    doi="10.5555/ihh.2020.0007")
SGLT2_RECORD = Record(service="crossref", title="SGLT2 inhibitors and kidney outcomes", authors=("Nguyen",),
                      year=2023, journal="J Nephrol Pract", doi="10.5555/jnp.2023.0456",
                      notices=(Notice(NoticeKind.RETRACTION, "retraction_watch", "2024-02-01",
                                      detail="Concerns/Issues About Data"),))
PUBMED_RECORD = Record(service="pubmed", title="A fixture abstract", authors=("Lee",), year=2019,
                       journal="Fixture J", pmid="31535829")


def _check(ref: Reference, status: ReferenceStatus, evidence: str, matched: Record | None = None) -> ReferenceCheck:
    return ReferenceCheck(reference=ref, status=status, evidence=evidence, matched=matched,
                          services=("crossref",), checked_at="2026-11-23T12:00:00Z")


def answer(ref: Reference) -> ReferenceCheck:
    """What the fake metadata services say about each reference of these answers."""
    if ref.doi == "10.5555/jnp.2023.0456":
        return _check(ref, ReferenceStatus.VERIFIED, "Crossref holds 10.5555/jnp.2023.0456 with the cited title.",
                      SGLT2_RECORD)
    if ref.pmid == "31535829":
        return _check(ref, ReferenceStatus.VERIFIED, "PubMed holds PMID 31535829.", PUBMED_RECORD)
    if "Penetrance" in ref.raw:
        return _check(ref, ReferenceStatus.VERIFIED, "Crossref's best candidate matches title, authors, year "
                      "and journal (score 0.97).", HFE_RECORD)
    if "Garlic" in ref.raw:
        return _check(ref, ReferenceStatus.NOT_FOUND, "no candidate above the match threshold 0.75 "
                      "(best 0.31: 'Garlic in cardiology')")
    if "Metformin" in ref.raw:
        return _check(ref, ReferenceStatus.AMBIGUOUS, "two candidates score 0.81 and 0.80")
    raise AssertionError(f"unexpected reference {ref}")


class ScriptedResolver:
    """Stands in for ReferenceResolver: answers from ``answer`` (or ``script``), records what it was asked."""

    def __init__(self, script=None) -> None:
        self.script = script or (lambda ref, n: answer(ref))
        self.asked: list[Reference] = []
        self.closed = False

    async def check(self, ref: Reference) -> ReferenceCheck:
        self.asked.append(ref)
        result = self.script(ref, len(self.asked))
        if asyncio.iscoroutine(result):
            result = await result
        if isinstance(result, Exception):
            raise result
        return result

    async def aclose(self) -> None:
        self.closed = True


def responses(site: str) -> list[Response]:
    hyp, met = f"{site}/article/hypertension", f"{site}/article/metformin-lactic-acidosis"
    return [
        Response(id="r1", text=f"{HFE} [1] {SUPPORTED} [2] {SGLT2} [3]", citations=(HFE_REF, hyp, SGLT2_DOI),
                 markers={"1": 0, "2": 1, "3": 2}, references={0: HFE_WRITTEN}),
        Response(id="r2", text=f"{SGLT2} [1] [2]", citations=(SGLT2_DOI, PUBMED), markers={"1": 0, "2": 1}),
        Response(id="r3", text=f"{GARLIC} [1]", citations=(FAKE_REF,), markers={"1": 0}),
        Response(id="r4", text=f"Metformin rarely causes lactic acidosis. [1] {SUPPORTED} [2]",
                 citations=(met, hyp), markers={"1": 0, "2": 1}, references={0: MET_WRITTEN}),
    ]


@pytest.fixture
def pack(tmp_path) -> Path:
    """A source pack standing in for the PubMed page (so nothing leaves this machine)."""
    d = tmp_path / "pack"
    d.mkdir()
    shutil.copy(SITE_FILES / "pubmed" / "31535829.html", d / "pubmed.html")
    (d / "sources.json").write_text(json.dumps({PUBMED: "pubmed.html"}), encoding="utf-8")
    return d


def config(site: str, pack: Path, enabled: bool = True) -> RunConfig:
    return RunConfig(judges=["keyword:0"], references=LookupSettings(enabled=enabled),
                     fetch=FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=5, doi_resolver=f"{site}/doi/",
                                        sources_dir=pack, archive_lookup=False, browser="never"))


async def audit(store: Store, site: str, pack: Path, resolver: ScriptedResolver, **kw):
    events: list = []
    a = Audit(store, config(site, pack), progress=events.append, judges=[KeywordJudge()], resolver=resolver, **kw)
    run_id = await a.start(responses(site), input_label="references test")
    return run_id, events


def verdict_urls(store: Store, run_id: str) -> dict[str, set[str]]:
    data = store.load_run(run_id)
    texts = {s.pk: s.statement.text for rows in data.statements.values() for s in rows}
    out: dict[str, set[str]] = {}
    for vs in data.verdicts.values():
        for v in vs:
            out.setdefault(v.url, set()).add(f"{texts[v.statement_pk]}={v.verdict.label.value}")
    return out


# ----------------------------------------------------------------------------- which citations


def test_reference_of_reads_identifiers_from_links_and_keeps_the_written_string():
    assert reference_of("https://doi.org/10.5555/JNP.2023.0456") == Reference(
        raw="10.5555/jnp.2023.0456", doi="10.5555/jnp.2023.0456", style="doi")
    assert reference_of(PUBMED) == Reference(raw="31535829", pmid="31535829", style="pmid")
    assert reference_of("https://www.cdc.gov/flu/about/index.html") is None      # a plain page: no check
    written = reference_of(HFE_REF)
    assert written.raw == HFE_WRITTEN and not written.doi
    # a written reference that carries a DOI link: the string is kept, the link's identifier wins
    both = reference_of(SGLT2_DOI, "Nguyen T. SGLT2 inhibitors and kidney outcomes. 2023. doi:10.1/other")
    assert both.raw.startswith("Nguyen T.") and both.doi == "10.5555/jnp.2023.0456"
    page = reference_of("https://www.cdc.gov/flu", MET_WRITTEN)
    assert page is not None and page.raw == MET_WRITTEN


async def test_doi_pmid_and_written_references_are_checked_once_and_plain_pages_not(tmp_path, site, pack):
    store = Store(tmp_path / "a.db")
    resolver = ScriptedResolver()
    run_id, events = await audit(store, site, pack, resolver)
    assert store.get_run(run_id).status == "completed"
    checks = store.reference_checks(run_id)
    met, hyp = f"{site}/article/metformin-lactic-acidosis", f"{site}/article/hypertension"
    assert set(checks) == {HFE_REF, FAKE_REF, SGLT2_DOI, PUBMED, met}    # the hypertension page: no check
    assert hyp not in checks
    assert checks[SGLT2_DOI].status is ReferenceStatus.VERIFIED and checks[SGLT2_DOI].retracted
    assert checks[PUBMED].matched.pmid == "31535829"
    assert checks[met].status is ReferenceStatus.AMBIGUOUS and checks[met].reference.raw == MET_WRITTEN
    assert checks[FAKE_REF].status is ReferenceStatus.NOT_FOUND
    # the DOI cited by two answers is asked once; a given resolver is left open for its owner
    assert len(resolver.asked) == 5 and not resolver.closed
    # progress: one event per check, under the run's own events
    checked = [e for e in events if e.kind is EventKind.REFERENCE_CHECKED]
    assert len(checked) == 5 and any("(retracted)" in e.message for e in checked)
    assert events[-1].kind is EventKind.RUN_FINISHED
    assert events[-1].references_done == events[-1].references_total == 5
    # the ambiguous written reference of a web page does not stop the page being fetched and judged
    assert "Metformin rarely causes lactic acidosis.=not_supported" in verdict_urls(store, run_id)[met]
    assert store.load_run(run_id).sources[met].source.status is FetchStatus.OK


async def test_a_verified_written_reference_is_read_through_its_doi_and_judged(tmp_path, site, pack):
    store = Store(tmp_path / "a.db")
    run_id, _ = await audit(store, site, pack, ScriptedResolver())
    data = store.load_run(run_id)
    src = data.sources[HFE_REF].source
    # fetched as the DOI link through the configured resolver (the fixture site), shown under the ref: key
    assert src.status is FetchStatus.OK and src.final_url == f"{site}/article/hfe-hemochromatosis"
    assert src.meta["doi"] == "10.5555/ihh.2020.0007" and src.meta["read_from"] == "https://doi.org/10.5555/ihh.2020.0007"
    assert f"{HFE}=supported" in verdict_urls(store, run_id)[HFE_REF]
    # the DOI link is not a citation of this run
    assert "https://doi.org/10.5555/ihh.2020.0007" not in store.run_source_ids(run_id)
    statuses = {a.row.statement.text: a.status for r in assess_run(data) for a in r.statements if r.rid == "r1"}
    assert statuses[HFE] is StatementStatus.SUPPORTED


async def test_a_written_reference_not_found_is_a_dead_source_with_the_evidence_and_no_verdict(tmp_path, site, pack):
    store = Store(tmp_path / "a.db")
    run_id, _ = await audit(store, site, pack, ScriptedResolver())
    data = store.load_run(run_id)
    src = data.sources[FAKE_REF].source
    assert src.status is FetchStatus.DEAD and not src.valid
    assert src.reason == ("no record in Crossref, PubMed or OpenAlex: likely fabricated: no candidate above the "
                          "match threshold 0.75 (best 0.31: 'Garlic in cardiology')")
    assert FAKE_REF not in verdict_urls(store, run_id)             # an error is never a verdict
    r3 = {a.row.statement.text: a.status for r in assess_run(data) if r.rid == "r3" for a in r.statements}
    assert r3[GARLIC] is StatementStatus.NO_READABLE_SOURCE


async def test_a_resolver_that_raises_or_cannot_ask_does_not_fail_the_run(tmp_path, site, pack):
    def script(ref: Reference, n: int):
        if "Penetrance" in ref.raw:
            return RuntimeError("Crossref answered 503 three times")
        if ref.doi:
            return _check(ref, ReferenceStatus.LOOKUP_FAILED, "metadata services could not be asked: "
                          "Crossref timed out after 10 s")
        return answer(ref)

    store = Store(tmp_path / "a.db")
    run_id, events = await audit(store, site, pack, ScriptedResolver(script))
    assert store.get_run(run_id).status == "completed"
    checks = store.reference_checks(run_id)
    broken = checks[HFE_REF]
    assert broken.status is ReferenceStatus.LOOKUP_FAILED                   # never not_found
    assert "RuntimeError: Crossref answered 503 three times" in broken.evidence
    data = store.load_run(run_id)
    src = data.sources[HFE_REF].source
    assert src.status is FetchStatus.HTTP_ERROR
    assert src.reason.startswith("metadata services could not be asked: RuntimeError: Crossref answered 503")
    assert HFE_REF not in verdict_urls(store, run_id)
    assert checks[SGLT2_DOI].status is ReferenceStatus.LOOKUP_FAILED
    # the DOI link itself is still fetched and judged: a failed lookup only lacks the metadata
    assert SGLT2_DOI in verdict_urls(store, run_id)
    assert any("Crossref answered 503" in line["message"] for line in store.run_log(run_id))
    assert any(e.kind is EventKind.WARNING and "Crossref answered 503" in e.message for e in events)


async def test_cancel_mid_run_then_resume_checks_only_what_was_not_stored(tmp_path, site, pack):
    store = Store(tmp_path / "a.db")
    cancel = asyncio.Event()

    async def script(ref: Reference, n: int):
        if n <= 2:
            return answer(ref)
        cancel.set()                       # the user cancels while the third check is under way
        await asyncio.Event().wait()

    first = ScriptedResolver(script)
    run_id, _ = await audit(store, site, pack, first, cancel=cancel)
    assert store.get_run(run_id).status == "cancelled"
    stored = store.checked_reference_urls(run_id)
    assert len(stored) == 2
    stored_raws = {c.reference.raw for c in store.reference_checks(run_id).values()}

    second = ScriptedResolver()
    resumed = Audit(store, config(site, pack), judges=[KeywordJudge()], resolver=second)
    await resumed.resume(run_id)
    assert store.get_run(run_id).status == "completed"
    asked_again = {r.raw for r in second.asked}
    assert len(second.asked) == 3 and not (asked_again & stored_raws)      # nothing stored is asked again
    assert len(store.checked_reference_urls(run_id)) == 5
    assert f"{HFE}=supported" in verdict_urls(store, run_id)[HFE_REF]


async def test_reference_checks_off_ask_nothing_and_a_written_reference_says_why_it_is_unread(tmp_path, site, pack):
    store = Store(tmp_path / "a.db")
    resolver = ScriptedResolver()
    a = Audit(store, config(site, pack, enabled=False), judges=[KeywordJudge()], resolver=resolver)
    run_id = await a.start(responses(site))
    assert resolver.asked == [] and store.reference_checks(run_id) == {}
    src = store.load_run(run_id).sources[HFE_REF].source
    assert src.status is FetchStatus.ERROR and "reference checks are off" in src.reason


# ----------------------------------------------------------------------------- the CLI


@pytest.fixture
def audited(tmp_path, site, pack):
    db = tmp_path / "a.db"
    store = Store(db)
    run_id, _ = asyncio.run(audit(store, site, pack, ScriptedResolver()))
    store.close()
    return db, run_id


def test_the_references_command_lists_each_checked_citation(audited, capsys, site):
    db, run_id = audited
    assert main(["references", run_id, "--db", str(db)]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[0].split() == ["STATUS", "NOTICES", "CITATION", "EVIDENCE"]
    fake = [line for line in lines if "ref:Smith J, Doe A. Garlic extract" in line]
    assert len(fake) == 1 and fake[0].startswith("not_found")               # one row per checked citation
    assert "no candidate above the match threshold 0.75" in fake[0]
    sglt2 = [line for line in lines if SGLT2_DOI in line]
    assert len(sglt2) == 1 and sglt2[0].split()[:3] == ["verified", "RETRACTED", "2024-02-01"]
    assert len(lines) == 1 + 5 + 1
    assert f"{site}/article/hypertension" not in out                       # a plain page has no check
    assert lines[-1] == (f"run {run_id}: 5 references checked: 3 verified, 1 not_found, 1 ambiguous; "
                         "1 retracted or withdrawn")
    assert main(["references", run_id, "--db", str(db), "--problems"]) == 0
    problems = capsys.readouterr().out
    assert SGLT2_DOI in problems and "not_found" in problems and PUBMED not in problems
    assert "ref:Beutler" not in problems                                   # verified, not retracted


def test_the_references_command_prints_json_from_a_real_process(audited):
    db, run_id = audited
    p = sc("references", run_id, "--db", str(db), "--json")
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["run"] == run_id
    by_citation = {r["citation"]: r for r in data["references"]}
    assert by_citation[FAKE_REF]["status"] == "not_found" and by_citation[FAKE_REF]["matched"] is None
    assert by_citation[SGLT2_DOI]["retracted"] is True
    assert by_citation[SGLT2_DOI]["matched"]["notices"][0]["kind"] == "retraction"
    assert by_citation[HFE_REF]["matched"]["doi"] == "10.5555/ihh.2020.0007"


def test_a_terminal_never_receives_control_characters_from_a_record(tmp_path, capsys):
    store = Store(tmp_path / "a.db")
    run_id = store.create_run(input="x", config={}, judges=["builtin"], parser="builtin", app_version="t")
    ref = Reference(raw="10.1/x", doi="10.1/x")
    store.save_reference_check(run_id, "https://doi.org/10.1/x", _check(
        ref, ReferenceStatus.MISMATCH, "Crossref holds \x1b[2J\x1b[31mAnother title\x07 for 10.1/x"))
    store.close()
    assert main(["references", run_id, "--db", str(tmp_path / "a.db")]) == 0
    out = capsys.readouterr().out
    assert "\x1b" not in out and "\x07" not in out and "Another title for 10.1/x" in out


# ----------------------------------------------------------------------------- configuration


def test_reference_checks_are_on_for_real_audits_and_the_environment_turns_them_off(monkeypatch):
    on = build_run_config(environ={})
    assert on.references.enabled and on.references.crossref_endpoint == "https://api.crossref.org"
    assert not build_run_config(environ={"SOURCECHECKUP_REFERENCES": "off"}).references.enabled
    assert not build_run_config(environ={}, references=False).references.enabled
    # the tests' own environment (conftest) keeps every CLI run away from the public services
    assert not build_run_config().references.enabled
    monkeypatch.setenv("SOURCECHECKUP_REFERENCES", "on")
    args = build_parser().parse_args(["audit", "a.json", "--crossref-endpoint", "http://127.0.0.1:9/api/",
                                      "--pubmed-endpoint", "http://127.0.0.1:9/eutils", "--contact-email",
                                      "librarian@example.org"])
    cfg = run_config(args)
    assert cfg.references.enabled and cfg.references.crossref_endpoint == "http://127.0.0.1:9/api"
    assert cfg.references.openalex_endpoint == "https://api.openalex.org"
    assert cfg.references.contact_email == "librarian@example.org"
    assert not run_config(build_parser().parse_args(["audit", "a.json", "--no-references"])).references.enabled
    # stored with the run and read back for a resume; a run stored before reference checks keeps them off
    again = RunConfig.from_dict(json.loads(json.dumps(cfg.to_dict())))
    assert again.references == cfg.references and again.retraction_data == cfg.retraction_data
    assert not RunConfig.from_dict({"judges": ["builtin"]}).references.enabled


def test_a_missing_or_foreign_retraction_file_is_refused_by_name(tmp_path, capsys):
    missing = tmp_path / "retraction_watch.csv"
    with pytest.raises(ConfigError) as exc:
        build_run_config(retraction_data=missing, environ={})
    assert exc.value.option == "retraction_data" and str(missing) in exc.value.problem
    foreign = tmp_path / "other.csv"
    foreign.write_text("DOI,Title\n10.1/x,Something\n", encoding="utf-8")
    with pytest.raises(ConfigError, match="no OriginalPaperDOI column"):
        build_run_config(retraction_data=foreign, environ={})
    good = tmp_path / "rw.csv"
    good.write_text("Record ID,Title,RetractionDate,OriginalPaperDOI,RetractionNature\n"
                    "1,A paper,6/30/2023 0:00,10.5555/jnp.2023.0456,Retraction\n", encoding="utf-8")
    assert build_run_config(retraction_data=good, environ={}).retraction_data == str(good.resolve())
    with pytest.raises(ConfigError, match="base URL"):
        build_run_config(crossref_endpoint="api.crossref.org", environ={})
    # the CLI says it in its own words, exit 2, before any run starts
    answer_file = tmp_path / "answer.json"
    answer_file.write_text(json.dumps({"response": "Flu is viral [1].", "citations": ["https://doi.org/10.1/x"]}))
    db = tmp_path / "a.db"
    assert main(["audit", str(answer_file), "--db", str(db), "--retraction-data", str(missing), "-q"]) == 2
    assert f"--retraction-data: {missing}: no such file" in capsys.readouterr().err
    assert Store(db).list_runs() == []


def test_the_demo_never_asks_the_public_services_unless_given_endpoints(monkeypatch, tmp_path):
    import sourcecheckup.cli.audit as audit_cli

    monkeypatch.setenv("SOURCECHECKUP_REFERENCES", "on")
    seen = []
    monkeypatch.setattr(audit_cli, "cmd_audit", lambda ns: seen.append(run_config(ns, batch=True)) or 0)
    assert main(["demo", "--db", str(tmp_path / "d.db"), "-o", str(tmp_path / "d.html"), "-q"]) == 0
    assert main(["demo", "--db", str(tmp_path / "d.db"), "-o", str(tmp_path / "d.html"), "-q",
                 "--crossref-endpoint", "http://127.0.0.1:9", "--pubmed-endpoint", "http://127.0.0.1:9",
                 "--openalex-endpoint", "http://127.0.0.1:9"]) == 0
    assert [c.references.enabled for c in seen] == [False, True]
    assert seen[1].references.openalex_endpoint == "http://127.0.0.1:9"


RW_CSV = ("Record ID,Title,Journal,RetractionDate,RetractionDOI,OriginalPaperDate,OriginalPaperDOI,"
          "RetractionNature,Reason\n"
          "1,SGLT2 inhibitors and kidney outcomes,J Nephrol Pract,2/1/2024 0:00,10.5555/jnp.2024.9,"
          "3/3/2023 0:00,10.5555/jnp.2023.0456,Retraction,+Concerns/Issues About Data;\n"
          "2,Another paper,Fixture J,11/20/2026 0:00,10.1/n,1/1/2020 0:00,10.1/o,Expression of concern,+Bias;\n")


def test_references_update_imports_a_file_for_an_offline_machine(monkeypatch, tmp_path, capsys):
    retractions = pytest.importorskip("sourcecheckup.references.retractions")   # merged from the lookups branch
    dest = tmp_path / "data" / "retraction_watch.csv"
    monkeypatch.setattr(retractions, "default_retraction_path", lambda: dest)
    copy = tmp_path / "rw.csv"
    copy.write_text(RW_CSV, encoding="utf-8")
    assert main(["references", "update", "--from", str(copy)]) == 0
    out = capsys.readouterr()
    assert dest.read_text(encoding="utf-8") == RW_CSV
    assert f"retraction data: {dest}: 2 notices, latest dated 2026-11-20" in out.out
    foreign = tmp_path / "foreign.csv"
    foreign.write_text("DOI,Title\n", encoding="utf-8")
    assert main(["references", "update", "--from", str(foreign)]) == 2
    assert "no OriginalPaperDOI column" in capsys.readouterr().err
    assert dest.read_text(encoding="utf-8") == RW_CSV                  # the saved data is left as it was
    # a run built without --retraction-data reads the saved file
    assert build_run_config(environ={}).retraction_data == str(dest)


def test_the_cli_asks_no_service_when_switched_off_and_survives_one_it_cannot_reach(tmp_path, site):
    answer_file = tmp_path / "answer.json"
    answer_file.write_text(json.dumps({"response": f"{HFE} [1]", "citations": ["https://doi.org/10.5555/ihh.2020.0007"]}))
    common = ["audit", str(answer_file), "--judge", "keyword:0", "--doi-resolver", f"{site}/doi/",
              "--allow-host", "127.0.0.1", "--browser", "never", "--no-archive", "-q"]
    off = sc(*common, "--db", str(tmp_path / "off.db"))          # the tests' environment: references off
    assert off.returncode == 0, off.stderr
    store = Store(tmp_path / "off.db")
    run_id = store.latest_run_id()
    assert store.reference_checks(run_id) == {} and store.get_run(run_id).config["references"]["enabled"] is False
    # on, against a port where nothing listens: the check is lookup_failed, never not_found, and the run completes
    dead = "http://127.0.0.1:9"
    on = sc(*common, "--db", str(tmp_path / "on.db"), "--crossref-endpoint", dead, "--pubmed-endpoint", dead,
            "--openalex-endpoint", dead, env={"SOURCECHECKUP_REFERENCES": "on"}, timeout=120)
    assert on.returncode == 0, on.stderr
    store = Store(tmp_path / "on.db")
    run = store.get_run(store.latest_run_id())
    assert run.status == "completed" and run.config["references"]["crossref_endpoint"] == dead
    checks = store.reference_checks(run.id)
    assert [c.status for c in checks.values()] == [ReferenceStatus.LOOKUP_FAILED]
    data = store.load_run(run.id)
    assert data.sources["https://doi.org/10.5555/ihh.2020.0007"].source.status is FetchStatus.OK


def test_the_lookup_timeout_rate_and_match_threshold_are_set_from_the_cli_within_their_limits(tmp_path, capsys):
    args = build_parser().parse_args(["audit", "a.json", "--lookup-timeout", "30", "--lookup-rate", "1.5",
                                      "--match-threshold", "0.9"])
    lookup = run_config(args).references
    assert (lookup.timeout_s, lookup.requests_per_second, lookup.match_threshold) == (30.0, 1.5, 0.9)
    default = run_config(build_parser().parse_args(["audit", "a.json"])).references
    assert (default.timeout_s, default.requests_per_second, default.match_threshold) == (10.0, 5.0, 0.75)
    for option, value in (("lookup_timeout_s", 0), ("match_threshold", 1.2), ("lookup_requests_per_second", float("nan"))):
        with pytest.raises(ConfigError) as exc:
            build_run_config(environ={}, **{option: value})
        assert exc.value.option == option and "must be between" in exc.value.problem
    answer = tmp_path / "answer.json"
    answer.write_text(json.dumps({"response": "Flu is viral [1].", "citations": ["https://example.org/flu"]}))
    assert main(["audit", str(answer), "--db", str(tmp_path / "a.db"), "--lookup-rate", "0", "-q"]) == 2
    assert ("--lookup-rate: requests a second to each metadata service must be between 0.2 and 20, not '0.0'"
            in capsys.readouterr().err)
