"""The review tables: people's labels on pairs (``reviews``) and named review samples (``review_samples``)."""
from __future__ import annotations

from typing import Any, Iterable, Mapping

import sqlite_utils

from ..models import utcnow


class ReviewTables:
    """Store methods over ``reviews`` and ``review_samples`` (mixed into :class:`~sourcecheckup.store.Store`)."""

    db: sqlite_utils.Database

    def add_review(self, run_id: str, statement_pk: int, url: str, reviewer: str, label: str,
                   reason: str = "", *, blind: bool = False, sample: str | None = None) -> int:
        """Store one person's label on one pair; returns its pk (reviews are never overwritten)."""
        with self.db.conn:
            row = self.db.table("reviews").insert({
                "run_id": run_id, "statement_pk": statement_pk, "url": url, "reviewer": reviewer,
                "label": label, "reason": reason, "blind": int(blind), "sample": sample,
                "created_at": utcnow(),
            })
        assert row.last_pk is not None   # set by every insert into a table with an integer pk
        return int(row.last_pk)

    def review_rows(self, run_id: str) -> list[dict[str, Any]]:
        """Every review of a run as stored, oldest first."""
        return list(self.db.query("SELECT * FROM reviews WHERE run_id = ? ORDER BY pk", [run_id]))

    def add_review_sample(self, run_id: str, name: str, pairs: Iterable[Mapping[str, Any]], *,
                          blind: bool, seed: int) -> None:
        """Store a drawn sample: ``pairs`` in order, each with ``statement_pk``, ``url`` and ``stratum``."""
        now = utcnow()
        with self.db.conn:
            self.db.table("review_samples").insert_all([{
                "run_id": run_id, "sample": name, "ord": i, "statement_pk": p["statement_pk"], "url": p["url"],
                "stratum": p["stratum"], "blind": int(blind), "seed": seed, "created_at": now}
                for i, p in enumerate(pairs)])

    def review_samples(self, run_id: str) -> list[dict[str, Any]]:
        """The run's samples: name, pairs, created_at, blind; oldest first."""
        return list(self.db.query(
            "SELECT sample, COUNT(*) AS pairs, MIN(created_at) AS created_at, MAX(blind) AS blind "
            "FROM review_samples WHERE run_id = ? GROUP BY sample ORDER BY created_at", [run_id]))

    def review_sample_rows(self, run_id: str, name: str) -> list[dict[str, Any]]:
        """A sample's pairs in order, each with its statement text, its answer's id, key and text."""
        return list(self.db.query(
            "SELECT rs.*, st.text AS statement, r.rid AS response_id, r.pk AS response_pk, r.text AS answer "
            "FROM review_samples rs "
            "JOIN statements st ON st.pk = rs.statement_pk JOIN responses r ON r.pk = st.response_pk "
            "WHERE rs.run_id = ? AND rs.sample = ? ORDER BY rs.ord", [run_id, name]))

    def review_sample_pair(self, pair_id: int) -> dict[str, Any] | None:
        """One sampled pair by its id (run_id, sample, statement_pk, url, blind), or None."""
        rows = list(self.db.query(
            "SELECT run_id, sample, statement_pk, url, blind FROM review_samples WHERE pk = ?", [pair_id]))
        return rows[0] if rows else None
