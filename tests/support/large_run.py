"""A finished run of tens of thousands of answers written straight into a Store with batched inserts
(synth_run.synthesize_run commits per response: minutes at 100,000). The same shape: statement j of
response i is SENTENCES[(i + j) % 5], supported by source j % sources only; every pair judged by one judge.
Models alternate model-a / model-b; every 7th response has one statement judged not supported by every
source (so it is "not all supported"), the others are all supported.
"""
from __future__ import annotations

import shutil
import tempfile
import time
from pathlib import Path

from sourcecheckup.models import FetchStatus, Label, Source, sha256_bytes, utcnow
from sourcecheckup.store import Store, dump_json
from tests.support.synth_run import SENTENCES

BATCH = 20_000


def build_large_run(store: Store, *, responses: int, statements: int = 4, sources: int = 3,
                    judge: str = "builtin") -> str:
    run_id = store.create_run(input="synthetic-large", config={"consensus": "first"}, judges=[judge],
                              parser="builtin", app_version="test")
    urls = [f"https://example.org/page/{k}" for k in range(sources)]
    sids = []
    for k, url in enumerate(urls):
        text = " ".join(SENTENCES) + f" Page {k}."
        sid = store.add_source(Source(url=url, status=FetchStatus.OK, reason="HTTP 200 OK", http_status=200,
                                      final_url=url, content_type="text/html", title=f"Page {k}", text=text,
                                      sha256=sha256_bytes(text.encode()), fetched_at=utcnow()))
        store.link_run_source(run_id, url, sid)
        sids.append(sid)
    conn = store.db.conn
    base_r = (conn.execute("SELECT COALESCE(MAX(pk), 0) FROM responses").fetchone()[0]) + 1
    base_s = (conn.execute("SELECT COALESCE(MAX(pk), 0) FROM statements").fetchone()[0]) + 1
    now = utcnow()
    citations = dump_json(urls)
    resp_rows, stmt_rows, verdict_rows = [], [], []

    def flush() -> None:
        conn.executemany("INSERT INTO responses (pk, run_id, ord, rid, question, model, text, citations, markers, "
                         "origin, extra, parsed, done, refs) VALUES (?,?,?,?,?,?,?,?,'{}',?,'{}',1,1,'{}')",
                         resp_rows)
        conn.executemany("INSERT INTO statements (pk, response_pk, run_id, ord, text, category, cited, start, "
                         "\"end\") VALUES (?,?,?,?,?,'informative','[]',?,?)", stmt_rows)
        conn.executemany("INSERT INTO verdicts (run_id, statement_pk, url, source_id, judge_id, label, score, "
                         "rationale, quote, quote_found, prompt_version, model_version, flags, created_at) "
                         "VALUES (?,?,?,?,?,?,?,'synthetic',?,?,'synthetic','','[]',?)", verdict_rows)
        resp_rows.clear(), stmt_rows.clear(), verdict_rows.clear()

    with conn:
        spk = base_s
        for i in range(responses):
            rpk = base_r + i
            sents = [SENTENCES[(i + j) % len(SENTENCES)] for j in range(statements)]
            text = " ".join(sents)
            resp_rows.append((rpk, run_id, i, f"r{i + 1}", f"Question {i + 1} about blood pressure?",
                              ("model-a", "model-b")[i % 2], text, citations, f"synthetic:{i + 1}"))
            pos = 0
            for j, sent in enumerate(sents):
                start = text.find(sent, pos)
                pos = start + len(sent)
                stmt_rows.append((spk, rpk, run_id, j, sent, start, pos))
                for k, (url, sid) in enumerate(zip(urls, sids)):
                    ok = k == j % sources and not (i % 7 == 3 and j == 0)
                    verdict_rows.append((run_id, spk, url, sid, judge,
                                         (Label.SUPPORTED if ok else Label.NOT_SUPPORTED).value, 0.9 if ok else 0.1,
                                         sent if ok else "", 1 if ok else None, now))
                spk += 1
            if len(verdict_rows) >= BATCH:
                flush()
        flush()
        conn.execute("UPDATE runs SET n_records = ? WHERE id = ?", [responses, run_id])
    store.set_run_status(run_id, "completed")
    return run_id


def cached_large_run(responses: int, *, cache_dir: Path | None = None) -> tuple[Path, str, float]:
    """(database, run id, seconds the build took; 0.0 when it came from the cache), built once per size
    under the temp dir and copied from there on later calls."""
    cache = cache_dir or Path(tempfile.gettempdir()) / "sourcecheckup-large-runs"
    cache.mkdir(parents=True, exist_ok=True)
    db = cache / f"run-{responses}.db"
    marker = cache / f"run-{responses}.id"
    if db.exists() and marker.exists():
        return db, marker.read_text().strip(), 0.0
    for stale in (db, Path(f"{db}-wal"), Path(f"{db}-shm")):
        stale.unlink(missing_ok=True)
    t0 = time.perf_counter()
    tmp = cache / f"run-{responses}.building.db"
    tmp.unlink(missing_ok=True)
    with Store(tmp) as st:
        run_id = build_large_run(st, responses=responses)
        st.db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    shutil.move(str(tmp), db)
    marker.write_text(run_id)
    return db, run_id, time.perf_counter() - t0
