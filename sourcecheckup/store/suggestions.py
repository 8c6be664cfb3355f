"""The ``suggestions`` table: SourceCleanup's edit suggestions and a person's decision on each."""
from __future__ import annotations

from typing import Any, Mapping

import sqlite_utils

from ..models import utcnow
from .columns import dump_json


class SuggestionTables:
    """Store methods over ``suggestions`` (mixed into :class:`~sourcecheckup.store.Store`)."""

    db: sqlite_utils.Database

    def suggestion_rows(self, run_id: str) -> list[dict[str, Any]]:
        """The run's SourceCleanup suggestions as stored, in the order they were made."""
        if "suggestions" not in self.db.table_names():
            return []
        return list(self.db.query("SELECT * FROM suggestions WHERE run_id = ? ORDER BY pk", [run_id]))

    def suggestions_in_order(self, run_id: str, response_pk: int | None = None) -> list[dict[str, Any]]:
        """The run's suggestions (of one response when ``response_pk`` is given), in statement order."""
        sql = ("SELECT g.* FROM suggestions g JOIN statements s ON s.pk = g.statement_pk WHERE g.run_id = ?"
               + (" AND s.response_pk = ?" if response_pk is not None else "")
               + " ORDER BY s.response_pk, s.ord, g.pk")
        args: list[Any] = [run_id] + ([response_pk] if response_pk is not None else [])
        return list(self.db.query(sql, args))

    def suggestion_row(self, suggestion_pk: int) -> dict[str, Any] | None:
        rows = list(self.db.query("SELECT * FROM suggestions WHERE pk = ?", [suggestion_pk]))
        return rows[0] if rows else None

    def suggested_pairs(self, run_id: str) -> set[tuple[int, str]]:
        """(statement_pk, url) of every pair that already has a suggestion in this run."""
        return {(r[0], r[1]) for r in self.db.execute(
            "SELECT statement_pk, url FROM suggestions WHERE run_id = ?", [run_id]).fetchall()}

    def add_suggestion(self, run_id: str, statement_pk: int, url: str, *, kind: str, original: str,
                       suggested: str, quote: str, status: str, judge_id: str,
                       verification: Mapping[str, Any]) -> bool:
        """Store a pending suggestion once per statement x source; False when the pair has one already."""
        with self.db.conn:
            exists = self.db.execute("SELECT 1 FROM suggestions WHERE run_id = ? AND statement_pk = ? AND url = ?",
                                     [run_id, statement_pk, url]).fetchone()
            if exists:
                return False
            self.db.table("suggestions").insert({
                "run_id": run_id, "statement_pk": statement_pk, "url": url, "kind": kind,
                "original": original, "suggested": suggested, "quote": quote, "status": status,
                "judge_id": judge_id, "verification": dump_json(verification),
                "decision": "pending", "decided_by": None, "decided_at": None, "created_at": utcnow()})
        return True

    def set_suggestion_decision(self, suggestion_pk: int, decision: str, decided_by: str | None) -> bool:
        """Record a decision (``decided_by`` None clears who and when); False when there is no such suggestion."""
        with self.db.conn:
            cur = self.db.conn.execute(
                "UPDATE suggestions SET decision = ?, decided_by = ?, decided_at = ? WHERE pk = ?",
                [decision, decided_by, None if decided_by is None else utcnow(), suggestion_pk])
        return cur.rowcount > 0

    def suggestion_writers(self, run_id: str) -> list[tuple[str, str]]:
        """(judge_id, verification JSON) of each of the run's suggestions (what each writer spent)."""
        if "suggestions" not in self.db.table_names():
            return []
        return [(r[0], r[1]) for r in self.db.execute(
            "SELECT judge_id, verification FROM suggestions WHERE run_id = ?", [run_id]).fetchall()]
