"""What earlier executions of a run did, so that a resumed run's progress counts the whole run."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

from ..models import FetchStatus, Label


@dataclass(frozen=True)
class EarlierProgress:
    """Counts of a run's stored work: its sources read (by URL) and which of them are unreadable; its
    pairs judged by every one of the given judges, their verdicts and the judge errors among them."""

    sources_read: frozenset[str] = frozenset()
    unreadable: frozenset[str] = frozenset()
    pairs: int = 0
    verdicts: int = 0
    judge_errors: int = 0


class ProgressTables:
    db: Any

    def earlier_progress(self, run_id: str, judge_ids: Sequence[str]) -> EarlierProgress:
        read: set[str] = set()
        unreadable: set[str] = set()
        for url, status, has_text in self.db.execute(
                "SELECT rs.url, s.status, LENGTH(TRIM(COALESCE(s.text, ''))) > 0 FROM run_sources rs "
                "JOIN sources s ON s.id = rs.source_id WHERE rs.run_id = ?", [run_id]).fetchall():
            read.add(url)
            if not (FetchStatus(status).readable and has_text):
                unreadable.add(url)
        if not judge_ids:
            return EarlierProgress(frozenset(read), frozenset(unreadable))
        marks = ", ".join("?" * len(judge_ids))
        pairs, verdicts, errors = self.db.execute(
            f"SELECT COUNT(*), COALESCE(SUM(n), 0), COALESCE(SUM(errors), 0) FROM ("
            f"SELECT COUNT(DISTINCT judge_id) AS n, SUM(label = ?) AS errors FROM verdicts "
            f"WHERE run_id = ? AND judge_id IN ({marks}) GROUP BY statement_pk, url) WHERE n = ?",
            [Label.JUDGE_ERROR.value, run_id, *judge_ids, len(set(judge_ids))]).fetchone()
        return EarlierProgress(frozenset(read), frozenset(unreadable), pairs, verdicts, errors)
