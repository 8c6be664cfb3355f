"""The reference-check tables: each cited reference's outcome per run, and the metadata lookup cache."""
from __future__ import annotations

from typing import Any

import sqlite_utils

from ..models import utcnow
from ..references.model import ReferenceCheck
from .columns import dump_json, load_json


class ReferenceTables:
    """Store methods over ``reference_checks`` and ``lookup_cache`` (mixed into ``Store``)."""

    db: sqlite_utils.Database

    def save_reference_check(self, run_id: str, url: str, check: ReferenceCheck) -> None:
        """Record (or replace) the outcome for the citation ``url`` of a run."""
        with self.db.conn:
            self.db.conn.execute(
                "INSERT OR REPLACE INTO reference_checks (run_id, url, status, retracted, \"check\", checked_at) "
                "VALUES (?, ?, ?, ?, ?, ?)",
                [run_id, url, check.status.value, int(check.retracted), dump_json(check.to_dict()),
                 check.checked_at or utcnow()])

    def reference_checks(self, run_id: str) -> dict[str, ReferenceCheck]:
        """Citation url -> its reference check, for every citation of the run that was checked."""
        return {r["url"]: ReferenceCheck.from_dict(load_json(r["check"], {})) for r in self.db.query(
            "SELECT url, \"check\" FROM reference_checks WHERE run_id = ? ORDER BY pk", [run_id])}

    def checked_reference_urls(self, run_id: str) -> set[str]:
        """Citations of the run whose reference check is stored (a resume skips them)."""
        return {r[0] for r in self.db.execute("SELECT url FROM reference_checks WHERE run_id = ?",
                                              [run_id]).fetchall()}

    def lookup_cache_get(self, service: str, key: str) -> dict[str, Any] | None:
        """A metadata service's stored answer for ``key`` (a DOI, a PMID, a query), or None."""
        row = self.db.execute("SELECT payload FROM lookup_cache WHERE service = ? AND key = ?",
                              [service, key]).fetchone()
        return load_json(row[0], None) if row else None

    def lookup_cache_put(self, service: str, key: str, payload: dict[str, Any]) -> None:
        with self.db.conn:
            self.db.conn.execute(
                "INSERT OR REPLACE INTO lookup_cache (service, key, payload, fetched_at) VALUES (?, ?, ?, ?)",
                [service, key, dump_json(payload), utcnow()])
