"""Write a finished run straight into a Store (no fetching, no judging): for UI tests and benchmarks
that need a run of a given shape (1,000 responses, a 200 x 40 matrix, hostile text) in well under a second."""
from __future__ import annotations

from typing import Callable

from sourcecheckup.models import FetchStatus, Label, Response, Source, Verdict, sha256_bytes, utcnow
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
    # batch inserts in one transaction (executemany: sqlite-utils' insert_all checks every value and takes
    # four times as long): 100,000 responses in well under a minute
    conn = store.db.conn
    with conn:
        statement_rows = []
        for row in rows:
            text = row.response.text
            pos = 0
            for j, sent in enumerate(SENTENCES[(row.ord + j) % len(SENTENCES)] for j in range(statements)):
                start = text.find(sent, pos)
                end = start + len(sent) if start >= 0 else -1
                statement_rows.append((row.pk, run_id, j, sent, "informative", "[]", start, end))
                pos = max(pos, end)
        conn.executemany("INSERT INTO statements (response_pk, run_id, ord, text, category, cited, start, end) "
                         "VALUES (?, ?, ?, ?, ?, ?, ?, ?)", statement_rows)
        del statement_rows
        now = utcnow()
        verdict_sql = ("INSERT INTO verdicts (run_id, statement_pk, url, source_id, judge_id, label, score, rationale, "
                       "quote, quote_found, prompt_version, model_version, raw, tokens_in, tokens_out, flags, "
                       "created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL, NULL, '[]', ?)")
        verdict_rows: list[tuple] = []
        for pk, ord_, text in conn.execute("SELECT pk, ord, text FROM statements WHERE run_id = ? ORDER BY pk",
                                           [run_id]).fetchall():
            for k, (url, sid) in enumerate(zip(urls, source_ids)):
                ok = k == ord_ % sources
                for judge in judges:
                    verdict_rows.append((run_id, pk, url, sid, judge,
                                         (Label.SUPPORTED if ok else Label.NOT_SUPPORTED).value, 0.9 if ok else 0.1,
                                         "synthetic", text if ok else "", 1 if ok else None, "synthetic", "", now))
            if len(verdict_rows) >= 50_000:
                conn.executemany(verdict_sql, verdict_rows)
                verdict_rows = []
        conn.executemany(verdict_sql, verdict_rows)
        conn.execute("UPDATE responses SET parsed = 1, done = 1 WHERE run_id = ?", [run_id])
    store.set_run_status(run_id, status)
    return run_id


def one_verdict(store: Store, run_id: str, statement_pk: int, url: str, source_id: int, label: Label,
                quote: str = "", judge: str = "builtin") -> None:
    store.save_verdict(run_id, statement_pk, url, source_id,
                       Verdict(label=label, score=0.5, rationale="synthetic", quote=quote, judge_id=judge))
