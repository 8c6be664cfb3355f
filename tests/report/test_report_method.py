"""Issue 25 (items 3-6): what the reports say about their own method is true, and the intervals are honest.

The fixture run goes through the real pipeline (the local fixture site, two keyword judges under
``--consensus majority``) and holds each case where the method text matters: a claim with no readable
source, a judge error, a disagreement between the judges, paywall-teaser and abstract-only sources.
"""
from __future__ import annotations

import json
import re

from sourcecheckup.cli import main
from sourcecheckup.events import EventKind
from sourcecheckup.evidence import SourceText
from sourcecheckup.fetching import FetchOptions
from sourcecheckup.judges.base import register
from sourcecheckup.metrics import CI_CLUSTERED, assess_run, clustered_counts, proportion_of
from sourcecheckup.models import FetchStatus, Label, Response, Source, StatementStatus, Verdict
from sourcecheckup.pipeline import Audit, RunConfig
from sourcecheckup.references.model import Record, Reference, ReferenceCheck, ReferenceStatus
from sourcecheckup.report import build_report, report_html, write_report
from sourcecheckup.report.json_report import method_notes
from sourcecheckup.report.references import reconcile_link
from sourcecheckup.review import add_review
from sourcecheckup.review.agreement import OTHERS_MAJORITY, agreement_report, compare_raters
from sourcecheckup.store import Store
from tests.support.fake_judge import KeywordJudge
from tests.support.report_runs import HFE, SUPPORTED, UNSUPPORTED

FLIPPED = "130/80"          # the contrary judge turns its colleague's verdict round on claims holding this


class ContraryJudge(KeywordJudge):
    """The keyword judge, but of the opposite opinion on claims holding ``FLIPPED``: a second judge that disagrees."""

    def __init__(self) -> None:
        super().__init__()
        self.id = "contrary"

    async def verify(self, statement: str, source: SourceText) -> Verdict:
        v = await super().verify(statement, source)
        if FLIPPED not in statement or v.label is Label.JUDGE_ERROR:
            return v
        flipped = Label.NOT_SUPPORTED if v.label is Label.SUPPORTED else Label.SUPPORTED
        return Verdict(label=flipped, score=1 - v.score, rationale="the contrary judge reads it otherwise",
                       judge_id=self.id, prompt_version="contrary-1", model_version="keyword")


register("contrary", lambda arg, **options: ContraryJudge())


def _responses(site: str) -> list[Response]:
    hyp, met, hfe = (f"{site}/article/hypertension", f"{site}/article/metformin-lactic-acidosis",
                     f"{site}/article/hfe-hemochromatosis")
    return [
        # the judges split on this claim (keyword: supported, contrary: not): "judges disagree"
        Response(id="disagree", text=SUPPORTED, citations=(hyp,), model="model-a"),
        # both judges say not supported
        Response(id="unsupported", text=UNSUPPORTED, citations=(met,), model="model-a"),
        # the keyword judge fails on it, the contrary judge supports it: a judge error, undecided
        Response(id="error", text=HFE, citations=(hfe,), model="model-b"),
        # the only cited source is dead: no readable source, counted unsupported
        Response(id="dead", text=UNSUPPORTED, citations=(f"{site}/status/404",), model="model-b"),
        # a paywall teaser and an abstract page: valid for URL validity, not full text
        Response(id="teasers", text=UNSUPPORTED, citations=(f"{site}/pages/paywall-teaser.html",
                                                            f"{site}/pages/abstract-landing.html"), model="model-b"),
    ]


async def _fixture_run(store: Store, site: str, events: list | None = None) -> str:
    judges = [KeywordJudge(fail_on="C282Y"), ContraryJudge()]
    config = RunConfig(judges=[j.id for j in judges], consensus="majority",
                       fetch=FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=5, browser="never"))
    audit = Audit(store, config, judges=judges, progress=events.append if events is not None else None)
    return await audit.start(_responses(site), input_label="method test")


def _figures(html: str) -> dict[str, int]:
    return {m.group(1): int(m.group(2)) for m in re.finditer(r'data-figure="(\w+)">(\d+)<', html)}


def _independent_counts(store: Store, run_id: str) -> dict[str, int]:
    """The figures the method text states, counted straight from the stored rows (no metrics code)."""
    data = store.load_run(run_id)
    out = {"no_readable_source": 0, "judge_error_claims": 0, "judges_disagree_claims": 0,
           "paywalled_or_abstract": 0, "full_text_urls": 0, "urls": 0, "answers_all_citations_valid": 0}
    for resp in data.responses:
        for url in resp.response.citations:
            src = data.sources[url].source
            out["urls"] += 1
            out["paywalled_or_abstract"] += src.status.value in ("paywalled", "abstract_only") and bool(src.text.strip())
            out["full_text_urls"] += src.status.value == "ok" and bool(src.text.strip())
        readable = [u for u in resp.response.citations
                    if data.sources[u].source.status.value in ("ok", "paywalled", "abstract_only")
                    and data.sources[u].source.text.strip()]
        # Almanac's per-answer citation validity: 1 only when every citation of the answer is valid
        out["answers_all_citations_valid"] += bool(resp.response.citations) and len(readable) == len(
            resp.response.citations)
        for row in data.statements.get(resp.pk, []):
            if not row.statement.informative:
                continue
            if not readable:
                out["no_readable_source"] += 1
                continue
            labels = [v.verdict.label.value for v in data.verdicts.get(row.pk, [])]
            if labels.count("supported") * 2 > len(labels):
                continue
            if "supported" in labels and "not_supported" in labels:
                out["judges_disagree_claims"] += 1
            elif "judge_error" in labels:
                out["judge_error_claims"] += 1
    return out


async def test_every_figure_the_method_text_states_is_the_number_its_sentence_describes(tmp_path, site):
    store = Store(tmp_path / "m.db")
    run_id = await _fixture_run(store, site)
    truth = _independent_counts(store, run_id)
    # the fixture holds every case the method text distinguishes
    assert truth == {"no_readable_source": 1, "judge_error_claims": 1, "judges_disagree_claims": 1,
                     "paywalled_or_abstract": 2, "full_text_urls": 3, "urls": 6, "answers_all_citations_valid": 4}
    report = build_report(store, run_id)
    html = report_html(report)
    assert _figures(html) == truth
    text = re.sub(r"<[^>]+>", "", html)
    # the sentences say what the code computes
    assert "judge errors and unreadable sources are not counted as unsupported" not in html
    assert "none of whose cited sources could be read is counted unsupported" in text
    assert "a paywall\nteaser and an abstract-only page count as valid" in text
    # ... and the figures follow those sentences: a no-readable-source claim is in the denominator, judge errors
    # and disagreements are not
    m = report["metrics"]
    assert (m["statement_support"]["k"], m["statement_support"]["n"]) == (0, 3)   # unsupported, dead, teasers
    assert (m["url_validity"]["k"], m["url_validity"]["n"]) == (5, 6)
    assert (m["full_text_validity"]["k"], m["full_text_validity"]["n"]) == (3, 6)
    # five answers each cite URLs; the one citing a dead page is the one not wholly valid
    assert (m["answer_citation_validity"]["k"], m["answer_citation_validity"]["n"]) == (4, 5)
    assert report["exclusions"]["answer_citation_validity"] == "leaves out nothing"
    assert m["full_text_validity"]["ci95"][0] < 0.5 < m["full_text_validity"]["ci95"][1]
    assert report["counts"]["excluded"]["statement_support"] == {"judges_disagree": 1, "judge_error": 1, "pending": 0}
    assert report["exclusions"]["statement_support"] == "leaves out 2 claims (1 judges disagree, 1 judge error)"
    assert report["exclusions"]["response_support"] == "leaves out 2 responses (1 judges disagree, 1 judge error)"
    assert 'data-excluded="statement_support">leaves out 2 claims' in html
    # the XLSX notes state the same figures
    notes = " ".join(method_notes(report))
    assert "no readable source: 1 claims" in notes and "judge error: 1 claims" in notes
    assert "judges disagree: 1 claims" in notes and "(2 cited URLs)" in notes and "(3 of 6)" in notes
    assert "Between judges the rule is majority" in notes


def test_two_disagreeing_judges_show_judges_disagree_with_the_excluded_counts_in_cli_and_report(
        tmp_path, site, capsys, monkeypatch):
    monkeypatch.setenv("SOURCECHECKUP_PLUGINS", "tests.support.fake_judge")
    answers = tmp_path / "answers.jsonl"
    answers.write_text("\n".join(json.dumps({"id": r.id, "response": r.text, "citations": list(r.citations),
                                             "model": r.model}) for r in _responses(site)[:2]), encoding="utf-8")
    db, html = str(tmp_path / "d.db"), tmp_path / "r.html"
    assert main(["audit", str(answers), "--db", db, "--allow-host", "127.0.0.1", "--no-archive", "--browser",
                 "never", "--judge", "keyword:0", "--judge", "contrary", "--consensus", "majority",
                 "--report", str(html)]) == 0
    progress = capsys.readouterr()
    # two claims x one source each: 2 pairs, 4 verdicts, counted apart
    assert "pairs 2/2" in progress.err + progress.out and "verdicts 4/4" in progress.err + progress.out
    assert main(["show", "--db", db]) == 0
    shown = capsys.readouterr().out
    assert "judges_disagree" in shown and "judges disagree 1 (claims)" in shown
    assert "statement-level support  0.0%" in shown and "leaves out 1 claim (1 judges disagree)" in shown
    assert "leaves out 1 response (1 judges disagree)" in shown
    assert "judge errors 0 (verdicts)" in shown
    assert main(["runs", "--db", db]) == 0
    assert "left out: 1 claims (1 judges disagree), 1 responses" in capsys.readouterr().out
    page = html.read_text(encoding="utf-8")
    assert "judges disagree" in page and "leaves out 1 claim (1 judges disagree)" in page
    data = Store(db).load_run(Store(db).latest_run_id())
    assert sorted(s.status for r in assess_run(data) for s in r.statements) == sorted(
        [StatementStatus.JUDGES_DISAGREE, StatementStatus.NOT_SUPPORTED])


async def test_progress_counts_pairs_and_verdicts_apart(tmp_path, site):
    events: list = []
    store = Store(tmp_path / "p.db")
    await _fixture_run(store, site, events)
    last = [e for e in events if e.kind is EventKind.JUDGED][-1]
    # 5 claims; the dead link has no pair; 6 readable pairs... each judged by both judges
    pairs = sum(1 for rows in store.load_run(store.latest_run_id()).verdicts.values()
                for _ in {v.url for v in rows})
    assert (last.pairs_done, last.pairs_total) == (pairs, pairs)
    assert (last.verdicts_done, last.verdicts_total) == (2 * pairs, 2 * pairs)


# ------------------------------------------------------------------------------------------ intervals

def test_clustered_support_with_few_responses_is_not_narrower_than_its_responses_allow():
    # issue 25's demo: 5/7 statements over 2 responses was 66.7-75.0 (a bootstrap over 2 responses)
    m = clustered_counts([4, 1], [5, 2])
    assert m.method == CI_CLUSTERED and m.ci95[0] < 0.4 and m.ci95[1] > 0.95
    # every statement supported across 10 responses: never zero width, and wider than if the 40 were independent
    all_ok = clustered_counts([4] * 10, [4] * 10)
    assert all_ok.ci95[1] == 1.0 and all_ok.ci95[0] < 0.9
    # 1/54 and 19/20 responses: at least as wide as Wilson near 0 and 100%
    low, high = proportion_of(1, 54), proportion_of(19, 20)
    assert low.ci95[0] < 0.003 and low.ci95[1] > 0.098
    assert high.ci95[0] < 0.76 and high.ci95[1] > 0.99


def test_kappa_interval_never_collapses_when_every_pair_agrees():
    labels = ["supported", "not_supported"] * 6
    c = compare_raters(labels, labels, "a", "b", "reviewer-reviewer")
    assert c.kappa.value == 1.0 and c.kappa.ci95[1] == 1.0 and c.kappa.ci95[0] < 0.9
    assert c.as_dict()["kappa"]["ci_method"] == "bootstrap_exact_hull"


async def test_reviewer_is_compared_with_the_others_majority_and_the_judges_consensus(tmp_path, site):
    store = Store(tmp_path / "r.db")
    run_id = await _fixture_run(store, site)
    data = store.load_run(run_id)
    pairs = sorted({(spk, v.url) for spk, rows in data.verdicts.items() for v in rows})
    for spk, url in pairs:
        add_review(store, run_id, spk, url, "ann", "supported")
        add_review(store, run_id, spk, url, "bob", "supported")
    review = agreement_report(store, data)
    ann = next(c for c in review["comparisons"] if c["rater_a"] == "ann" and c["kind"] == "reviewer-majority")
    # the majority ann is compared with is bob's alone: with her own vote in it, it agreed with her by construction
    assert ann["rater_b"] == OTHERS_MAJORITY and ann["n"] == len(pairs)
    assert ann["kappa"]["ci95"][0] is None or ann["kappa"]["ci95"][0] < 1.0
    kinds = {c["kind"] for c in review["comparisons"]}
    assert {"consensus-reviewer", "consensus-majority"} <= kinds
    consensus = next(c for c in review["comparisons"] if c["kind"] == "consensus-majority")
    assert consensus["rater_a"] == "judges' consensus (majority)"
    # the judges' consensus decides the pairs it decides: not the disagreement, not the judge error
    assert consensus["n"] == len(pairs) - 2


async def test_with_reviews_report_labels_every_table_and_gives_per_model_figures_with_reviews(tmp_path, site):
    store = Store(tmp_path / "w.db")
    run_id = await _fixture_run(store, site)
    data = store.load_run(run_id)
    disputed = next(spk for spk, rows in data.verdicts.items()
                    if {v.verdict.label for v in rows} == {Label.SUPPORTED, Label.NOT_SUPPORTED})
    url = data.verdicts[disputed][0].url
    add_review(store, run_id, disputed, url, "ann", "supported")
    report = build_report(store, run_id, with_reviews=True)
    assert report["by_model_with_reviews"]["model-a"]["statement_support"]["k"] == 1
    assert report["by_model"]["model-a"]["statement_support"]["k"] == 0
    assert report["bases"]["by_model"] == "judges only"
    assert report["bases"]["by_model_with_reviews"] == "with reviewer overrides"
    html = report_html(report)
    assert "By model: judges only." in html and "By model: with reviewer overrides." in html
    assert "Figures below are with reviewer overrides applied" not in html
    assert 'id="summary-basis">The figures and counts in this section are <b>with reviewer overrides</b>' in html
    path = write_report(store, run_id, tmp_path / "w.xlsx", with_reviews=True)
    from openpyxl import load_workbook

    rows = [[c.value for c in row] for ws in load_workbook(path).worksheets for row in ws.iter_rows()]
    bases = {row[-1] for row in rows if row and row[0] == "model"}
    assert bases == {"judges only", "with reviewer overrides"}


def test_a_verified_reference_beside_an_unregistered_doi_link_is_reconciled():
    doi = "10.1000/xyz123"
    source = Source(url=f"https://doi.org/{doi}", status=FetchStatus.DEAD,
                    reason=f"HTTP 404 Not Found: the DOI {doi} is not registered")
    record = Record(service="crossref", title="A paper", doi=doi)
    check = ReferenceCheck(reference=Reference(raw=doi, doi=doi), status=ReferenceStatus.VERIFIED,
                           evidence="Crossref holds the DOI", matched=record)
    note = reconcile_link(source, check)
    assert note and "is registered (Crossref holds its record)" in note and "counts as existing" in note
    assert "dead link in URL validity" in note
    other = ReferenceCheck(reference=Reference(raw="Smith 2019"), status=ReferenceStatus.VERIFIED,
                           evidence="PubMed title match", matched=Record(service="pubmed", title="A paper", pmid="1"))
    assert "The paper exists (PubMed record matched)" in reconcile_link(source, other)
    readable = Source(url="https://example.org/a", status=FetchStatus.OK, text="text")
    assert reconcile_link(readable, check) is None


async def test_the_app_metrics_bar_names_what_the_support_figures_leave_out(qtbot, tmp_path, site):
    from sourcecheckup.metrics import compute_metrics
    from ui.widgets import MetricsBar

    store = Store(tmp_path / "u.db")
    run_id = await _fixture_run(store, site)
    bar = MetricsBar()
    qtbot.addWidget(bar)
    bar.show_metrics(compute_metrics(store.load_run(run_id)), 0, "completed", judges=["keyword:0", "contrary"])
    shown = bar.counts.text()
    assert "judges disagree on 1 claim" in shown
    assert "statement support leaves out 2 claims (1 judges disagree, 1 judge error)" in shown
    assert "response support leaves out 2 responses (1 judges disagree, 1 judge error)" in shown
    assert "full-text validity 50.0% (3/6)" in shown


async def test_the_csv_says_why_each_claim_is_left_out_of_statement_support(tmp_path, site):
    import csv

    store = Store(tmp_path / "c.db")
    run_id = await _fixture_run(store, site)
    path = write_report(store, run_id, tmp_path / "r.csv")
    rows = list(csv.DictReader(path.open(encoding="utf-8")))
    why = {(r["response_id"], r["statement_support_left_out"]) for r in rows}
    assert ("disagree", "judges disagree") in why and ("error", "judge error") in why
    assert ("dead", "") in why and ("unsupported", "") in why     # no readable source / unsupported: counted
