"""The ``repairs`` and ``repair_candidates`` tables: sources found for unsupported statements."""
from __future__ import annotations

import json
from typing import Any, Mapping

import sqlite_utils

from ..models import utcnow
from .columns import dump_json


class RepairTables:
    """Store methods over ``repairs`` and ``repair_candidates`` (mixed into the Store)."""

    db: sqlite_utils.Database

    def save_repair(self, run_id: str, statement_pk: int, kind: str, *, status: str, query: str,
                    offered_key: str, errors: list[str]) -> None:
        """One repair per (run, statement, kind): offered, none_found or incomplete (asked again on resume)."""
        with self.db.conn:
            self.db.execute(
                "INSERT INTO repairs (run_id, statement_pk, kind, status, query, offered_key, errors, decision, "
                "updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, 'pending', ?) ON CONFLICT (run_id, statement_pk, kind) "
                "DO UPDATE SET status = excluded.status, query = excluded.query, offered_key = excluded.offered_key, "
                "errors = excluded.errors, updated_at = excluded.updated_at",
                [run_id, statement_pk, kind, status, query, offered_key, dump_json(errors), utcnow()])

    def repair(self, run_id: str, statement_pk: int, kind: str) -> dict[str, Any] | None:
        if "repairs" not in self.db.table_names():
            return None
        rows = list(self.db.query("SELECT * FROM repairs WHERE run_id = ? AND statement_pk = ? AND kind = ?",
                                  [run_id, statement_pk, kind]))
        return _repair(rows[0]) if rows else None

    def repairs(self, run_id: str) -> list[dict[str, Any]]:
        """The run's repairs in statement order, each with its statement text and its candidates."""
        if "repairs" not in self.db.table_names():
            return []
        rows = [_repair(r) for r in self.db.query(
            "SELECT p.*, s.text AS statement, s.response_pk AS response_pk, s.ord AS ord, r.rid AS rid "
            "FROM repairs p JOIN statements s ON s.pk = p.statement_pk JOIN responses r ON r.pk = s.response_pk "
            "WHERE p.run_id = ? ORDER BY r.ord, s.ord, p.kind", [run_id])]
        for r in rows:
            r["candidates"] = self.repair_candidates(run_id, r["statement_pk"], r["kind"])
        return rows

    def repair_old_verdicts(self, run_id: str) -> dict[int, list[tuple[str, str, str]]]:
        """statement_pk -> (url, judge, label) of the run's own verdicts on the repaired statements."""
        out: dict[int, list[tuple[str, str, str]]] = {}
        if "repairs" not in self.db.table_names():
            return out
        for r in self.db.query("SELECT v.statement_pk, v.url, v.judge_id, v.label FROM verdicts v WHERE v.run_id = ? "
                               "AND v.statement_pk IN (SELECT statement_pk FROM repairs WHERE run_id = ?) "
                               "ORDER BY v.statement_pk, v.pk", [run_id, run_id]):
            out.setdefault(r["statement_pk"], []).append((r["url"], r["judge_id"], r["label"]))
        return out

    def set_repair_decision(self, run_id: str, statement_pk: int, kind: str, decision: str) -> bool:
        with self.db.conn:
            cur = self.db.conn.execute("UPDATE repairs SET decision = ? WHERE run_id = ? AND statement_pk = ? "
                                       "AND kind = ?", [decision, run_id, statement_pk, kind])
        return cur.rowcount > 0

    def save_repair_candidate(self, run_id: str, statement_pk: int, kind: str, row: Mapping[str, Any]) -> None:
        """A candidate with its verdicts and how it was found, stored as soon as it is judged."""
        with self.db.conn:
            self.db.execute(
                "INSERT OR REPLACE INTO repair_candidates (run_id, statement_pk, kind, key, candidate, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)", [run_id, statement_pk, kind, row["key"], dump_json(dict(row)), utcnow()])

    def repair_candidates(self, run_id: str, statement_pk: int, kind: str) -> list[dict[str, Any]]:
        if "repair_candidates" not in self.db.table_names():
            return []
        return [json.loads(r["candidate"]) for r in self.db.query(
            "SELECT candidate FROM repair_candidates WHERE run_id = ? AND statement_pk = ? AND kind = ? ORDER BY rowid",
            [run_id, statement_pk, kind])]


def _repair(r: Mapping[str, Any]) -> dict[str, Any]:
    d = dict(r)
    d["errors"] = json.loads(d.get("errors") or "[]")
    return d
