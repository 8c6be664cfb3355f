"""Answer-level grades (a person's Good/Bad on a whole answer) and a trained grader's scores of answers:
the ``answer_grades`` and ``answer_scores`` tables. Pair labels stay in ``reviews``; these never mix."""
from __future__ import annotations

from typing import Any, Iterable

import sqlite_utils

from ..models import utcnow


class GradeTables:
    """Store methods over ``answer_grades`` and ``answer_scores`` (mixed into :class:`~sourcecheckup.store.Store`)."""

    db: sqlite_utils.Database

    def add_answer_grade(self, run_id: str, response_pk: int, reviewer: str, grade: str, note: str = "", *,
                         sample: str | None = None) -> int:
        """Store one person's grade of one answer; returns its pk (grades are never overwritten)."""
        with self.db.conn:
            cur = self.db.conn.execute(
                "INSERT INTO answer_grades (run_id, response_pk, reviewer, grade, note, sample, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?)", [run_id, response_pk, reviewer, grade, note, sample, utcnow()])
        return int(cur.lastrowid or 0)

    def answer_grade_rows(self, run_id: str, response_pk: int | None = None) -> list[dict[str, Any]]:
        """A run's answer grades as stored (each with the answer's id, ``rid``), oldest first."""
        sql = ("SELECT g.*, r.rid AS rid FROM answer_grades g JOIN responses r ON r.pk = g.response_pk "
               "WHERE g.run_id = ?")
        args: list[Any] = [run_id]
        if response_pk is not None:
            sql += " AND g.response_pk = ?"
            args.append(response_pk)
        return list(self.db.query(sql + " ORDER BY g.pk", args))

    def response_pk_of_statement(self, statement_pk: int) -> int | None:
        row = self.db.execute("SELECT response_pk FROM statements WHERE pk = ?", [statement_pk]).fetchone()
        return None if row is None else int(row[0])

    def save_answer_scores(self, run_id: str, grader: str, scores: Iterable[tuple[int, float]]) -> None:
        """Store (or replace) a grader's score of each answer: (response_pk, score) pairs."""
        now = utcnow()
        with self.db.conn:
            self.db.conn.executemany(
                "INSERT OR REPLACE INTO answer_scores (run_id, response_pk, grader, score, created_at) "
                "VALUES (?, ?, ?, ?, ?)", [(run_id, pk, grader, float(s), now) for pk, s in scores])

    def answer_scores(self, run_id: str, grader: str) -> dict[int, float]:
        """response_pk -> the grader's stored score, for one run."""
        return {int(r[0]): float(r[1]) for r in self.db.execute(
            "SELECT response_pk, score FROM answer_scores WHERE run_id = ? AND grader = ?", [run_id, grader])}
