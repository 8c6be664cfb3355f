"""Paged reads of one run for a screen that shows it a page at a time (the app on a 100,000-answer run):
counts and facets by aggregate SQL, response keys in input order, and the rows of a few responses.

Nothing here loads a whole run; :meth:`Store.load_run` does that for the reports and the CLI.
Lists of keys travel as one JSON array (``json_each``), never as thousands of bound variables.
"""
from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Sequence

import sqlite_utils

if TYPE_CHECKING:
    from . import ResponseRow, SourceRow, StatementRow, VerdictRow


def _like(text: str) -> str:
    """A LIKE pattern that finds ``text`` anywhere, its own % and _ taken literally."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


class BrowseTables:
    """Store methods that page through a run (mixed into ``Store``)."""

    db: sqlite_utils.Database

    # the row builders of Store (a mixin borrows them)
    _response_row: Any
    _statement_row: Any
    _source_row: Any
    _verdict_row: Any

    def response_count(self, run_id: str) -> int:
        """How many responses a run holds (one indexed count)."""
        return self.db.execute("SELECT COUNT(*) FROM responses WHERE run_id = ?", [run_id]).fetchone()[0]

    def first_answer_start(self, run_id: str, chars: int = 80) -> str:
        """The first ``chars`` characters of a run's first answer ("" for none): what tells two unnamed runs
        of one pasted answer apart in a list."""
        row = self.db.execute("SELECT substr(text, 1, ?) FROM responses WHERE run_id = ? ORDER BY ord LIMIT 1",
                              [chars, run_id]).fetchone()
        return (row[0] or "") if row else ""

    def response_models(self, run_id: str) -> list[tuple[str, int]]:
        """(model, responses) of a run, by model name; "" for responses without a model."""
        return [(r[0] or "", r[1]) for r in self.db.execute(
            "SELECT COALESCE(model, ''), COUNT(*) FROM responses WHERE run_id = ? "
            "GROUP BY COALESCE(model, '') ORDER BY 1", [run_id]).fetchall()]

    def browse_response_pks(self, run_id: str, *, search: str = "", model: str | None = None) -> list[int]:
        """The keys of a run's responses in input order, narrowed to those whose id, model or question
        contains ``search`` (case-insensitive for ASCII, as SQLite's LIKE) and, given ``model``, to one model."""
        where, args = ["run_id = ?"], [run_id]
        needle = search.strip()
        if needle:
            where.append("(rid LIKE ? ESCAPE '\\' OR model LIKE ? ESCAPE '\\' OR question LIKE ? ESCAPE '\\')")
            args += [_like(needle)] * 3
        if model is not None:
            where.append("COALESCE(model, '') = ?")
            args.append(model)
        return [r[0] for r in self.db.execute(
            f"SELECT pk FROM responses WHERE {' AND '.join(where)} ORDER BY ord", args).fetchall()]

    def responses_by_pk(self, run_id: str, pks: Sequence[int]) -> list["ResponseRow"]:
        """These responses of a run, in input order."""
        return [self._response_row(r) for r in self.db.query(
            "SELECT * FROM responses WHERE run_id = ? AND pk IN (SELECT value FROM json_each(?)) ORDER BY ord",
            [run_id, json.dumps(list(pks))])]

    def responses_by_rid(self, run_id: str, rid: str) -> list["ResponseRow"]:
        """The responses of a run with this id (one, or none; ids are the input's, so not enforced unique)."""
        return [self._response_row(r) for r in self.db.query(
            "SELECT * FROM responses WHERE run_id = ? AND rid = ? ORDER BY ord", [run_id, rid])]

    def statements_of(self, response_pks: Sequence[int]) -> dict[int, list["StatementRow"]]:
        """response pk -> its statements in order, for these responses."""
        out: dict[int, list[StatementRow]] = {pk: [] for pk in response_pks}
        for r in self.db.query(
                "SELECT * FROM statements WHERE response_pk IN (SELECT value FROM json_each(?)) "
                "ORDER BY response_pk, ord", [json.dumps(list(response_pks))]):
            out.setdefault(r["response_pk"], []).append(self._statement_row(r))
        return out

    def verdicts_of(self, run_id: str, statement_pks: Sequence[int]) -> dict[int, list["VerdictRow"]]:
        """statement pk -> its verdicts in the order they were stored, for these statements."""
        out: dict[int, list[VerdictRow]] = {}
        for r in self.db.query(
                "SELECT * FROM verdicts WHERE run_id = ? AND statement_pk IN (SELECT value FROM json_each(?)) "
                "ORDER BY pk", [run_id, json.dumps(list(statement_pks))]):
            out.setdefault(r["statement_pk"], []).append(self._verdict_row(r))
        return out

    def run_sources_of(self, run_id: str, urls: Sequence[str]) -> dict[str, "SourceRow"]:
        """url -> the fetch this run used, for these cited URLs (those not fetched yet are absent)."""
        return {row["url"]: self._source_row(row) for row in self.db.query(
            "SELECT s.*, rs.url AS url FROM run_sources rs JOIN sources s ON s.id = rs.source_id "
            "WHERE rs.run_id = ? AND rs.url IN (SELECT value FROM json_each(?))",
            [run_id, json.dumps(sorted(set(urls)))])}

    def skipped_count(self, run_id: str) -> int:
        return self.db.execute("SELECT COUNT(*) FROM skipped WHERE run_id = ?", [run_id]).fetchone()[0]
