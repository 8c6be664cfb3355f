"""Issue 12: what the reports show must be true (items 2-6 and 16), on real runs in a real SQLite file."""
from __future__ import annotations

import asyncio
import csv
import io
import json

from sourcecheckup.cli import main
from sourcecheckup.compare import NO_SHARED_WARNING, SAME_RUN_WARNING, compare_runs
from sourcecheckup.events import EventKind
from sourcecheckup.fetching import FetchOptions, HttpFetcher
from sourcecheckup.judges.api import parse_verdict
from sourcecheckup.metrics import CI_CLUSTERED, CI_EXACT, assess_run, compute_metrics, partial_run_note
from sourcecheckup.models import CONTRADICTED, REVIEW_FIRST, Label, Response, StatementStatus, Verdict
from sourcecheckup.pipeline import Audit, RunConfig
from sourcecheckup.report import build_report, report_csv, report_html, verify_report, write_report
from sourcecheckup.review import add_review
from sourcecheckup.store import Store
from sourcecheckup.views.results import load_run_view
from sourcecheckup.views.runs import comparison_view
from tests.support.fake_judge import KeywordJudge
from tests.support.paths import FIXTURES, ROOT
from tests.support.report_runs import SUPPORTED, UNSUPPORTED, audit_site
from tests.support.synth_run import synthesize_run

SITE = FIXTURES / "site"


def _pair(store: Store, run_id: str, text: str, rid: str = "r1") -> tuple[int, str]:
    data = store.load_run(run_id)
    for r in assess_run(data):
        if r.rid == rid:
            for s in r.statements:
                if s.row.statement.text == text:
                    return s.row.pk, next(u for u, lab in s.pair_labels.items() if lab is not None)
    raise AssertionError(text)


# -------------------------------------------------------------------- 2: judge-only vs with reviews

async def test_report_keeps_judge_only_figures_apart_from_reviewer_overrides(tmp_path, site):
    store = Store(tmp_path / "r.db")
    run_id = await audit_site(store, site)
    judges = compute_metrics(store.load_run(run_id))
    spk, url = _pair(store, run_id, UNSUPPORTED)          # a reviewer says the unsupported claim IS supported
    add_review(store, run_id, spk, url, "dr-a", "supported")
    # the app's export with "With reviewer overrides" on passes the overrides: the judges' column stays the judges'
    from sourcecheckup.review import overrides
    report = build_report(store, run_id, overrides=overrides(store, run_id))
    assert report["metrics"]["statement_support"]["k"] == judges.statement_support.k
    assert report["metrics_with_reviews"]["statement_support"]["k"] == judges.statement_support.k + 1
    assert report["reviewer_overrides"]["applied"] is True and report["reviewer_overrides"]["overrides"] == 1
    assert report["metrics_basis"] == "judges"
    assert verify_report(json.loads(json.dumps(report)), store) == []
    # verify-report recomputes the with-reviews figures too: tampering with them is caught
    tampered = json.loads(json.dumps(report))
    tampered["metrics_with_reviews"]["statement_support"]["k"] -= 1
    assert any(d.startswith("metrics_with_reviews.statement_support.k") for d in verify_report(tampered, store))
    html = report_html(report)
    first_page = html[:html.index('id="toc"')]
    assert "Reviewer overrides applied." in first_page
    assert "Judges only" in first_page and "With reviews (headline)" in first_page
    j, w = report["metrics"]["statement_support"], report["metrics_with_reviews"]["statement_support"]
    assert f"{j['k']}/{j['n']}" in first_page and f"{w['k']}/{w['n']}" in first_page
    plain = build_report(store, run_id)               # the CLI's default: judges lead, reviews beside them
    assert plain["reviewer_overrides"]["applied"] is False
    assert "Reviewer overrides not applied." in report_html(plain)[:report_html(plain).index('id="toc"')]
    assert plain["metrics_with_reviews"] == report["metrics_with_reviews"]
    rows = list(csv.DictReader(io.StringIO(report_csv(report))))
    row = next(r for r in rows if r["statement"] == UNSUPPORTED and r["url"] == url)
    assert (row["status_judges"], row["status_with_reviews"], row["reviewer_overrides_applied"]) == \
        ("not_supported", "supported", "yes")
    xlsx = write_report(store, run_id, tmp_path / "r.xlsx", overrides=overrides(store, run_id))
    import openpyxl
    summary = list(openpyxl.load_workbook(xlsx)["summary"].iter_rows(values_only=True))
    assert summary[1][:2] == ("reviewer overrides", "applied")   # first row under the header
    stmt_row = next(r for r in summary if r[0] == "Statement-level support")
    assert stmt_row[4] == judges.statement_support.k and stmt_row[9] == judges.statement_support.k + 1
    # and the CLI writes the JSON report, then verify-report agrees on both sets of figures
    out = tmp_path / "r.json"
    assert main(["report", run_id, "--db", str(tmp_path / "r.db"), "-o", str(out), "--with-reviews"]) == 0
    assert json.loads(out.read_text())["reviewer_overrides"]["applied"] is True
    assert main(["verify-report", str(out), "--db", str(tmp_path / "r.db")]) == 0


# -------------------------------------------------------------------- 3: pending is not failure

class StallingFetcher(HttpFetcher):
    """Never finishes fetching the URLs in ``stall`` (a slow source when the user presses Cancel)."""

    def __init__(self, options, stall):
        super().__init__(options)
        self.stall = set(stall)

    async def fetch(self, url):
        if url in self.stall:
            await asyncio.Event().wait()
        return await super().fetch(url)


async def test_cancelled_run_counts_unfetched_sources_as_pending_not_failures(tmp_path, site, capsys):
    db = tmp_path / "p.db"
    store = Store(db)
    slow = f"{site}/article/hfe-hemochromatosis"
    hfe = "Iron-overload-related disease was present in 28.4% of male C282Y homozygotes."
    responses = [Response(id="r1", text=f"{SUPPORTED} [1]", citations=(f"{site}/article/hypertension",),
                          markers={"1": 0}),
                 Response(id="r2", text=f"{hfe} [1]", citations=(slow,), markers={"1": 0})]
    config = RunConfig(judges=["keyword:0"], fetch=FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=5))
    cancel = asyncio.Event()

    def progress(ev):
        if ev.kind is EventKind.RESPONSE_DONE:
            cancel.set()

    audit = Audit(store, config, judges=[KeywordJudge()], fetcher=StallingFetcher(config.fetch, [slow]),
                  progress=progress, cancel=cancel, max_active_responses=2)
    run_id = await asyncio.wait_for(audit.start(responses), 30)
    data = store.load_run(run_id)
    assert data.run.status == "cancelled" and slow not in data.sources
    status = {r.rid: [s.status for s in r.statements] for r in assess_run(data)}
    assert status == {"r1": [StatementStatus.SUPPORTED], "r2": [StatementStatus.PENDING]}
    m = compute_metrics(data)
    assert (m.url_validity.k, m.url_validity.n) == (1, 1)          # the unfetched URL is in no figure
    assert (m.statement_support.k, m.statement_support.n) == (1, 1)
    assert m.counts["fetch_failures"] == 0 and m.counts["urls_pending"] == 1
    assert m.counts["partial"] and (m.counts["pairs_judged"], m.counts["pairs"]) == (1, 2)
    assert partial_run_note(m.counts).startswith("partial run: 1 of 2 pairs judged")
    view = load_run_view(store, run_id)
    assert view.metrics.url_validity.value == 1.0
    report = build_report(store, run_id)
    assert report["partial_run"].startswith("partial run: 1 of 2 pairs judged")
    assert "Partial run." in report_html(report)
    assert main(["show", run_id, "--db", str(db)]) == 0
    shown = capsys.readouterr().out
    assert "partial run: 1 of 2 pairs judged" in shown and "no_readable_source" not in shown
    assert "…src" in shown and "pending" in shown
    assert main(["runs", "--db", str(db)]) == 0
    assert "partial: 1 of 2 pairs judged" in capsys.readouterr().out
    # a finished run is not partial
    done = await audit_site(store, site)
    assert not compute_metrics(store.load_run(done)).counts["partial"]


# -------------------------------------------------------------------- 4: intervals never collapse

async def test_no_interval_collapses_to_a_point_and_each_says_its_method(tmp_path, site):
    store = Store(tmp_path / "c.db")
    run_id = await audit_site(store, site)
    report = build_report(store, run_id)
    for key, m in report["metrics"].items():
        if m["n"]:
            assert m["ci95"][1] - m["ci95"][0] > 0, (key, m)
            assert m["ci95"][0] <= m["value"] <= m["ci95"][1]
    assert report["metrics"]["url_validity"]["ci_method"] == CI_EXACT
    assert report["metrics"]["statement_support"]["ci_method"] == CI_CLUSTERED
    assert set(report["audit_trail"]["intervals"]) == set(report["metrics"])
    for rate in report["analytics"]["rates"].values():
        if rate["n"]:
            assert rate["ci95"][1] > rate["ci95"][0]
    html = report_html(report)
    assert "0.0–0.0%" not in html and "100.0–100.0%" not in html
    assert "Clopper-Pearson exact interval" in html and "Korn-Graubard interval" in html
    assert verify_report(json.loads(json.dumps(report)), store) == []
    # all supported in one response: one response is one observation, however many claims it makes
    all_ok = synthesize_run(store, responses=1, statements=1, sources=1)
    m = compute_metrics(store.load_run(all_ok)).statement_support
    assert (m.k, m.n, m.method) == (1, 1, CI_CLUSTERED) and m.ci95[0] < 0.3


# -------------------------------------------------------------------- 5: domains from the cited URL

async def test_source_pack_run_counts_the_cited_domains(tmp_path):
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "hyp.html").write_bytes((SITE / "article/hypertension.html").read_bytes())
    cited = "https://www.heart.org/en/health-topics/high-blood-pressure"
    (pack / "sources.json").write_text(json.dumps({cited: "hyp.html"}), encoding="utf-8")
    store = Store(tmp_path / "d.db")
    config = RunConfig(judges=["keyword:0"], fetch=FetchOptions(sources_dir=pack, timeout_s=2))
    run_id = await Audit(store, config, judges=[KeywordJudge()]).start(
        [Response(id="r1", text=f"{SUPPORTED} [1]", citations=(cited,), markers={"1": 0}, model="m")])
    data = store.load_run(run_id)
    assert data.sources[cited].source.origin == "local_file"
    an = build_report(store, run_id)["analytics"]
    assert an["top_domains"][0]["domain"] == "heart.org"
    assert an["domain_types"]["org"]["count"] == 1 and an["domain_types"]["other"]["count"] == 0
    assert [c["country"] for c in an["countries"]] == ["United States"]
    assert build_report(store, run_id)["responses"][0]["sources"][0]["domain"] == "heart.org"


def test_there_is_one_domain_rule():
    root = ROOT
    defs = [p for d in ("sourcecheckup", "ui") for p in (root / d).rglob("*.py")
            if "def domain_of(" in p.read_text(encoding="utf-8")]
    assert [p.relative_to(root).as_posix() for p in defs] == ["sourcecheckup/urls.py"]


# -------------------------------------------------------------------- 6: compare says when it means little

def test_compare_warns_on_the_same_run_and_on_runs_sharing_no_statements(tmp_path, capsys):
    store = Store(tmp_path / "c.db")
    a = synthesize_run(store, responses=4, statements=2, sources=2)
    other = synthesize_run(store, responses=4, statements=2, sources=2,
                           answer_text=lambda i, s: " ".join(s) + " Extra words.")
    with store.db.conn:      # other answers altogether: different response ids
        store.db.execute("UPDATE responses SET rid = 'x' || rid WHERE run_id = ?", [other])
    same = compare_runs(store, a, a)
    assert same["warnings"] == [SAME_RUN_WARNING] and not same["comparable"]
    assert all(d["diff"] is None and d["ci95"] == [None, None] for d in same["differences"])
    unrelated = compare_runs(store, a, other)
    assert unrelated["statements_matched"] == 0 and unrelated["warnings"] == [NO_SHARED_WARNING]
    assert comparison_view(unrelated).summary.startswith("⚠ The runs share no statements")
    assert main(["compare", a, a, "--db", str(tmp_path / "c.db")]) == 0
    assert "warning: A and B are the same run" in capsys.readouterr().out


def test_compare_counts_reviewer_overrides_like_the_results_page(tmp_path, capsys):
    store = Store(tmp_path / "c.db")
    a = synthesize_run(store, responses=4, statements=2, sources=2)
    b = synthesize_run(store, responses=4, statements=2, sources=2)
    data = store.load_run(b)
    row = data.statements[data.responses[0].pk][0]
    for url in data.responses[0].response.citations:     # a reviewer rejects every pair of one statement
        add_review(store, b, row.pk, url, "dr-a", "not_supported")
    # judges only by default, as the Results page's default (issue 28 item 4); with reviews when asked
    default = compare_runs(store, a, b)
    with_reviews = compare_runs(store, a, b, with_overrides=True)
    reviewed = load_run_view(store, b, with_overrides=True)     # the Results page with the box ticked
    assert with_reviews["metrics_b"]["statement_support"]["k"] == reviewed.metrics.statement_support.k
    assert default["metrics_b"]["statement_support"]["k"] == reviewed.metrics.statement_support.k + 1
    assert default["metrics_b"]["statement_support"]["k"] == \
        load_run_view(store, b, with_overrides=False).metrics.statement_support.k
    assert with_reviews["overrides_b"] == 2 and default["overrides_b"] == 0
    assert main(["compare", a, b, "--db", str(tmp_path / "c.db"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["with_overrides"] is False
    assert main(["compare", a, b, "--db", str(tmp_path / "c.db"), "--with-reviews", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["with_overrides"] is True
    assert main(["compare", a, b, "--db", str(tmp_path / "c.db"), "--judges-only", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["with_overrides"] is False


# -------------------------------------------------------------------- 16: contradicted / review first

def test_llm_reply_reading_accepts_a_contradicted_decision():
    p = parse_verdict('{"label": "contradicted", "quote": "1,200 mg", "rationale": "source says 1,200 mg"}')
    assert p.label is Label.NOT_SUPPORTED and p.contradicted
    p = parse_verdict('{"label": "not_supported", "contradicted": true, "quote": "", "rationale": "x"}')
    assert p.label is Label.NOT_SUPPORTED and p.contradicted
    assert not parse_verdict('{"label": "not_supported", "quote": "", "rationale": "x"}').contradicted


async def test_contradicted_and_review_first_survive_storage_and_show_everywhere(tmp_path, site, capsys):
    db = tmp_path / "v.db"
    store = Store(db)
    run_id = synthesize_run(store, responses=1, statements=2, sources=2)
    data = store.load_run(run_id)
    s1, s2 = data.statements[data.responses[0].pk]
    urls = data.responses[0].response.citations
    sid = data.sources[urls[1]].id
    store.save_verdict(run_id, s1.pk, urls[1], sid, Verdict(
        label=Label.NOT_SUPPORTED, rationale="contradicted: source says 1,200 mg", judge_id="builtin",
        flags=(CONTRADICTED,)))
    store.save_verdict(run_id, s2.pk, urls[1], sid, Verdict(
        label=Label.SUPPORTED, rationale="probably", quote=s2.statement.text, judge_id="builtin",
        flags=(REVIEW_FIRST,)))
    stored = {v.statement_pk: v.verdict for vs in store.load_run(run_id).verdicts.values() for v in vs
              if v.url == urls[1]}
    assert stored[s1.pk].contradicted and stored[s1.pk].flags == (CONTRADICTED,)
    assert stored[s2.pk].review_first
    report = build_report(store, run_id)
    v1 = next(v for st in report["responses"][0]["statements"] for v in st["verdicts"]
              if v["url"] == urls[1] and v["contradicted"])
    assert v1["reading"] == "contradicted" and v1["rationale"].startswith("contradicted: ")
    assert any(st["review_first"] for st in report["responses"][0]["statements"])
    readings = {r["reading"] for r in csv.DictReader(io.StringIO(report_csv(report)))}
    assert {"contradicted", "review first"} <= readings
    html = report_html(report)
    assert "contradicted: source says 1,200 mg" in html and "review first" in html
    assert main(["show", run_id, "--db", str(db)]) == 0
    out = capsys.readouterr().out
    assert "✗c" in out and "review first" in out and "source says 1,200 mg" in out
