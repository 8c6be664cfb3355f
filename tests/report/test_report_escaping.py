"""Hostile text from answers and pages reaches every section of the HTML report only as text."""
from __future__ import annotations

import json

import lxml.html

from sourcecheckup.models import FetchStatus, Source, sha256_bytes, utcnow
from sourcecheckup.report import build_report, report_html
from sourcecheckup.report.html_report import http_url
from sourcecheckup.review import add_review
from sourcecheckup.store import Store
from tests.support.synth_run import synthesize_run

PAYLOADS = ['<script>alert("x")</script>', '<img src=x onerror=alert(1)>', '"><svg onload=alert(2)>',
            "javascript:alert(3)", "<a href='javascript:alert(4)'>click</a>", "</textarea><iframe src=//evil>"]
HOSTILE = " ".join(PAYLOADS)
HUGE = "A" * 300_000 + "<script>alert('huge')</script>"
ALLOWED_TAGS = {"html", "head", "meta", "title", "style", "body", "h1", "h2", "h3", "h4", "p", "nav", "ol", "li", "a",
                "div", "span", "b", "em", "code", "pre", "table", "thead", "tr", "th", "td", "caption", "blockquote",
                "svg", "g", "rect", "line", "text"}


def _hostile_run(tmp_path) -> tuple[Store, str]:
    store = Store(tmp_path / "h.db")
    run_id = synthesize_run(
        store, responses=4, statements=2, sources=2,
        answer_text=lambda i, sents: " ".join(sents) + f" {HOSTILE}",
        source_text=lambda k: f"Hypertension facts {HOSTILE} " * 3)
    with store.db.conn:
        store.db.execute("UPDATE responses SET model = ?, question = ?, extra = ? WHERE run_id = ? AND ord % 2 = 0",
                         [f"model {HOSTILE}", HUGE, json.dumps({"arm": f"arm {HOSTILE}"}), run_id])
        store.db.execute("UPDATE responses SET extra = ? WHERE run_id = ? AND ord % 2 = 1",
                         [json.dumps({"arm": "plain"}), run_id])
        store.db.execute("UPDATE statements SET text = ? WHERE run_id = ? AND ord = 1", [f"{HOSTILE} {HUGE}", run_id])
        store.db.execute("UPDATE verdicts SET rationale = ?, quote = ?, label = 'not_supported', prompt_version = ?, "
                         "model_version = ? WHERE run_id = ?",
                         [HOSTILE, HOSTILE, f"verifier@{HOSTILE}", HOSTILE, run_id])
        store.db.execute("UPDATE runs SET input = ?, config = ? WHERE id = ?",
                         [HOSTILE, json.dumps({"consensus": "first", "note": HOSTILE}), run_id])
        store.db.execute("UPDATE sources SET title = ?, reason = ?", [HOSTILE, HOSTILE])
    # a javascript: citation, a dead link whose "archive" URL is hostile, a changed and an injection-flagged page
    bad_url = "javascript:alert(document.cookie)//<script>"
    sid = store.add_source(Source(url=bad_url, status=FetchStatus.DEAD, reason=HOSTILE, title=HOSTILE,
                                  meta={"archive": {"snapshot_url": "javascript:alert(5)", "timestamp": HOSTILE}},
                                  flags=("archived_copy_exists",), fetched_at=utcnow()))
    store.link_run_source(run_id, bad_url, sid)
    url = "https://example.org/page/0"
    for text in ("first version", f"second version {HOSTILE}"):
        sid = store.add_source(Source(url=url, status=FetchStatus.OK, text=text, title=HOSTILE,
                                      sha256=sha256_bytes(text.encode()), fetched_at=utcnow(),
                                      flags=("possible_injection",), meta={"injection_reasons": [HOSTILE]}))
    store.link_run_source(run_id, url, sid)
    with store.db.conn:
        row = store.db.execute("SELECT pk, citations FROM responses WHERE run_id = ? AND ord = 0", [run_id]).fetchone()
        store.db.execute("UPDATE responses SET citations = ? WHERE pk = ?",
                         [json.dumps(json.loads(row[1]) + [bad_url]), row[0]])
        store.db["skipped"].insert({"run_id": run_id, "origin": HOSTILE, "problem": HOSTILE})
        spk = store.db.execute("SELECT pk FROM statements WHERE run_id = ? LIMIT 1", [run_id]).fetchone()[0]
        store.db["suggestions"].insert({"run_id": run_id, "statement_pk": spk, "url": url, "kind": HOSTILE,
                                        "original": HOSTILE, "suggested": HOSTILE, "status": HOSTILE})
    for reviewer in (f"rev {HOSTILE}", "second reviewer"):
        add_review(store, run_id, spk, url, reviewer, "supported", reason=HOSTILE)
    store.log(run_id, HOSTILE, "warning")
    return store, run_id


def test_hostile_text_never_survives_as_markup_in_any_section(tmp_path):
    store, run_id = _hostile_run(tmp_path)
    report = build_report(store, run_id)
    html = report_html(report)
    doc = lxml.html.document_fromstring(html)
    for el in doc.iter():
        if not isinstance(el.tag, str):
            continue
        assert el.tag in ALLOWED_TAGS, f"unexpected element <{el.tag}> in the report"
        for name, value in el.attrib.items():
            assert not name.lower().startswith("on"), f"event handler {name} on <{el.tag}>"
            if name.lower() in ("href", "src", "xlink:href", "action", "formaction"):
                assert value.startswith(("http://", "https://", "#")), f"{name}={value!r}"
    text = doc.text_content()
    # the payloads are there, as text, in every section that shows data
    sections = {sid: doc.get_element_by_id(sid) for sid in ("summary", "by-model", "sources", "unsupported",
                                                           "review", "method")}
    assert all(s is not None for s in sections.values())
    for payload in PAYLOADS:
        assert payload in text
    assert text.count('<script>alert("x")</script>') >= 10
    svg_text = " ".join(t.text_content() for t in doc.iter("text"))
    assert "<script>" in svg_text or "model <script>" in svg_text   # model names in charts are escaped text
    assert "more characters in the JSON report" in text             # huge strings are cut in the HTML
    assert len(html) < 3_000_000


def test_only_http_urls_become_links():
    assert http_url("https://example.org/a?b=1") == "https://example.org/a?b=1"
    for bad in ("javascript:alert(1)", " JAVASCRIPT:alert(1)", "data:text/html,<script>", "vbscript:x",
                "https://exa mple.org/\"onmouseover=x", "//evil.example/x", "file:///etc/passwd", None, 3):
        assert http_url(bad) is None
