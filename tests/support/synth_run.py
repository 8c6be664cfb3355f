"""Write a finished run straight into a Store (no fetching, no judging): for UI tests and benchmarks
that need a run of a given shape (1,000 responses, a 200 x 40 matrix, hostile text) in well under a second."""
from __future__ import annotations

from typing import Callable

from sourcecheckup.models import FetchStatus, Label, Response, Source, Statement, Verdict, sha256_bytes, utcnow
from sourcecheckup.store import Store

SENTENCES = [
    "Hypertension is defined as a blood pressure of 130/80 mm Hg or higher.",
    "The DASH diet can lower systolic blood pressure by about 11 mm Hg.",
    "Metformin should not be started when the eGFR is below 30.",
    "Vitamin B12 levels should be checked in patients on long-term metformin.",
    "Lactic acidosis with metformin is rare.",
]


def synthesize_run(store: Store, *, responses: int = 10, statements: int = 4, sources: int = 3,
                   judges: tuple[str, ...] = ("builtin",), answer_text: Callable[[int, list[str]], str] | None = None,
                   source_text: Callable[[int], str] | None = None, status: str = "completed",
                   base_url: str = "https://example.org/page") -> str:
    """A completed run: every statement x source pair judged; statement j is supported by source j % sources."""
    run_id = store.create_run(input="synthetic", config={"consensus": "first"}, judges=list(judges),
                              parser="builtin", app_version="test")
    urls = [f"{base_url}/{k}" for k in range(sources)]
    texts = [source_text(k) if source_text else " ".join(SENTENCES) + f" Page {k}." for k in range(sources)]
    source_ids = []
    for url, text in zip(urls, texts):
        raw = text.encode("utf-8")
        sid = store.add_source(Source(url=url, status=FetchStatus.OK, reason="HTTP 200 OK", http_status=200,
                                      final_url=url, content_type="text/html", title=f"Page about {url[-3:]}",
                                      text=text, sha256=sha256_bytes(raw), fetched_at=utcnow()))
        store.link_run_source(run_id, url, sid)
        source_ids.append(sid)
    resp_objs = []
    for i in range(responses):
        sents = [SENTENCES[(i + j) % len(SENTENCES)] for j in range(statements)]
        text = answer_text(i, sents) if answer_text else " ".join(sents)
        resp_objs.append(Response(id=f"r{i + 1}", text=text, citations=tuple(urls), question=f"Question {i + 1}?",
                                  model=("model-a", "model-b")[i % 2], origin=f"synthetic:{i + 1}"))
    store.add_responses(run_id, resp_objs)
    rows = store.responses(run_id)
    with store.db.conn:
        verdict_rows = []
        for row in rows:
            text = row.response.text
            stmts, pos = [], 0
            for j, sent in enumerate(SENTENCES[(row.ord + j) % len(SENTENCES)] for j in range(statements)):
                start = text.find(sent, pos)
                end = start + len(sent) if start >= 0 else -1
                stmts.append(Statement(index=j, text=sent, start=start, end=end))
                pos = max(pos, end)
            saved = store.save_statements(run_id, row.pk, stmts)
            for s in saved:
                for k, (url, sid) in enumerate(zip(urls, source_ids)):
                    ok = k == s.statement.index % sources
                    for judge in judges:
                        verdict_rows.append({
                            "run_id": run_id, "statement_pk": s.pk, "url": url, "source_id": sid,
                            "judge_id": judge, "label": (Label.SUPPORTED if ok else Label.NOT_SUPPORTED).value,
                            "score": 0.9 if ok else 0.1, "rationale": "synthetic",
                            "quote": s.statement.text if ok else "", "quote_found": 1 if ok else None,
                            "prompt_version": "synthetic", "model_version": "", "raw": None, "tokens_in": None,
                            "tokens_out": None, "flags": "[]", "created_at": utcnow()})
            store.mark_response_done(row.pk)
        store.db["verdicts"].insert_all(verdict_rows, batch_size=1000)
    store.set_run_status(run_id, status)
    return run_id


def one_verdict(store: Store, run_id: str, statement_pk: int, url: str, source_id: int, label: Label,
                quote: str = "", judge: str = "builtin") -> None:
    store.save_verdict(run_id, statement_pk, url, source_id,
                       Verdict(label=label, score=0.5, rationale="synthetic", quote=quote, judge_id=judge))
