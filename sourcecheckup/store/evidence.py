"""The stored evidence of one run, table by table, in a canonical order, for the report's evidence digest.

:meth:`EvidenceTables.iter_evidence` yields each row of one evidence table as a plain dict, read with a
cursor (flat memory however large the run). The order is fixed by what a row *is* (a response's place in
the input, a statement's place in its answer, a URL, a judge id), never by a database key, so a copy of the
database (``merge``, a backup) gives the same digest. Keys starting with ``_`` name the row for a person
(the response id, the statement's place, the cited source's position) and are left out of the digest.
"""
from __future__ import annotations

import zlib
from typing import Any, Iterator

import sqlite_utils

# table -> (query, its parameters are the run id); ordered so that a row's place does not depend on pks
_STATEMENT_KEY = ("JOIN statements st ON st.pk = {t}.statement_pk JOIN responses r ON r.pk = st.response_pk")
_QUERIES: dict[str, str] = {
    "run": "SELECT id, created_at, finished_at, status, input, config, judges, parser, app_version, n_records, "
           "n_skipped, name, note FROM runs WHERE id = ?",
    "responses": "SELECT rid AS _rid, ord, rid, question, model, text, citations, markers, origin, extra, refs "
                 "FROM responses WHERE run_id = ? ORDER BY ord",
    "statements": "SELECT r.rid AS _rid, st.ord AS _ord, r.ord AS response_ord, st.ord, st.text, st.category, "
                  "st.cited, st.start, st.[end] FROM statements st JOIN responses r ON r.pk = st.response_pk "
                  "WHERE st.run_id = ? ORDER BY r.ord, st.ord",
    "sources": "SELECT rs.url, s.status, s.reason, s.http_status, s.final_url, s.content_type, s.title, s.sha256, "
               "s.text, s.fetched_at, s.origin, s.flags, s.meta, s.raw AS raw_blob FROM run_sources rs "
               "LEFT JOIN sources s ON s.id = rs.source_id WHERE rs.run_id = ? ORDER BY rs.url",
    "verdicts": "SELECT r.rid AS _rid, st.ord AS _ord, r.citations AS _citations, r.ord AS response_ord, "
                "st.ord AS statement_ord, v.url, v.judge_id, v.label, v.score, v.rationale, v.quote, v.quote_found, "
                "v.prompt_version, v.model_version, v.flags, v.raw, v.tokens_in, v.tokens_out, v.created_at "
                "FROM verdicts v " + _STATEMENT_KEY.format(t="v") + " WHERE v.run_id = ? "
                "ORDER BY r.ord, st.ord, v.url, v.judge_id",
    "reviews": "SELECT r.rid AS _rid, st.ord AS _ord, r.citations AS _citations, r.ord AS response_ord, "
               "st.ord AS statement_ord, rv.url, rv.reviewer, rv.label, rv.reason, rv.blind, rv.sample, "
               "rv.created_at FROM reviews rv " + _STATEMENT_KEY.format(t="rv") + " WHERE rv.run_id = ? "
               "ORDER BY r.ord, st.ord, rv.url, rv.reviewer, rv.created_at, rv.label, rv.reason",
    "suggestions": "SELECT r.rid AS _rid, st.ord AS _ord, r.citations AS _citations, r.ord AS response_ord, "
                   "st.ord AS statement_ord, sg.url, sg.kind, sg.original, sg.suggested, sg.quote, sg.status, "
                   "sg.judge_id, sg.verification, sg.decision, sg.decided_by, sg.decided_at, sg.created_at "
                   "FROM suggestions sg " + _STATEMENT_KEY.format(t="sg") + " WHERE sg.run_id = ? "
                   "ORDER BY r.ord, st.ord, sg.url, sg.created_at, sg.kind, sg.suggested",
    "reference_checks": "SELECT url, status, retracted, [check], checked_at FROM reference_checks WHERE run_id = ? "
                        "ORDER BY url",
    "skipped": "SELECT origin, problem FROM skipped WHERE run_id = ? ORDER BY pk",
}
EVIDENCE_TABLES = tuple(_QUERIES)


class EvidenceTables:
    """Canonical reads of a run's evidence (mixed into :class:`~sourcecheckup.store.Store`)."""

    db: sqlite_utils.Database

    def iter_evidence(self, run_id: str, table: str) -> Iterator[dict[str, Any]]:
        """Each row of ``table`` (one of EVIDENCE_TABLES) for the run, in the canonical order. A source's raw
        bytes are given as the SHA-256 of the bytes stored (decompressed), not the bytes."""
        import hashlib

        cursor = self.db.conn.execute(_QUERIES[table], [run_id])
        names = [d[0] for d in cursor.description]
        for values in cursor:
            row = dict(zip(names, values))
            if "raw_blob" in row:
                blob = row.pop("raw_blob")
                row["raw_sha256"] = hashlib.sha256(zlib.decompress(blob)).hexdigest() if blob else None
            yield row
