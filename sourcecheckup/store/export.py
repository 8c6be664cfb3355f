"""Reading a stored run a page of responses at a time, for exports of runs too large to load whole.

A 100,000-answer run holds about 1.5 million verdicts; :meth:`Store.load_run` would hold them all.
:meth:`ExportTables.iter_run_page_rows` yields the parts of a :class:`RunData` for a page of responses
(their statements, their verdicts, the sources they cite), so the code that reads one run reads a
page unchanged; the other methods answer what a report needs about the whole run in one query.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator, Sequence

import sqlite_utils

from .columns import load_json

if TYPE_CHECKING:
    from . import ResponseRow, SourceRow, StatementRow, VerdictRow

# the parts of a RunData: responses, statements by response pk, sources by URL, verdicts by statement pk
PageRows = tuple[list["ResponseRow"], dict[int, list["StatementRow"]], dict[str, "SourceRow"],
                 dict[int, list["VerdictRow"]]]

PAGE_RESPONSES = 500
# every column of a source but its raw bytes (up to 5 MB each, never read by a report)
_SOURCE_COLUMNS = ("s.id, s.url, s.status, s.reason, s.http_status, s.final_url, s.content_type, s.title, s.text, "
                   "s.sha256, s.fetched_at, s.elapsed_s, s.origin, s.flags, s.meta")


class ExportTables:
    """Paged and aggregate reads of one run (mixed into :class:`~sourcecheckup.store.Store`)."""

    db: sqlite_utils.Database

    def count_responses(self, run_id: str) -> int:
        return self.db.execute("SELECT COUNT(*) FROM responses WHERE run_id = ?", [run_id]).fetchone()[0]

    def iter_run_page_rows(self, run_id: str, page_size: int = PAGE_RESPONSES) -> Iterator[PageRows]:
        """The run as consecutive pages of ``page_size`` responses in order: the rows of a RunData holding
        only those responses (their statements, verdicts and cited sources)."""
        last_ord = -1
        while True:
            responses = [self._response_row(r) for r in self.db.query(  # type: ignore[attr-defined]
                "SELECT * FROM responses WHERE run_id = ? AND ord > ? ORDER BY ord LIMIT ?",
                [run_id, last_ord, page_size])]
            if not responses:
                return
            last_ord = responses[-1].ord
            pks = [r.pk for r in responses]
            marks = ", ".join("?" * len(pks))
            statements: dict[int, list[Any]] = {pk: [] for pk in pks}
            for r in self.db.query(f"SELECT * FROM statements WHERE response_pk IN ({marks}) ORDER BY response_pk, ord",
                                   pks):
                statements[r["response_pk"]].append(self._statement_row(r))  # type: ignore[attr-defined]
            verdicts: dict[int, list[Any]] = {}
            for r in self.db.query(
                    f"SELECT * FROM verdicts WHERE run_id = ? AND statement_pk IN (SELECT pk FROM statements "
                    f"WHERE response_pk IN ({marks})) ORDER BY pk", [run_id, *pks]):
                verdicts.setdefault(r["statement_pk"], []).append(self._verdict_row(r))  # type: ignore[attr-defined]
            urls = sorted({u for r in responses for u in r.response.citations})
            yield responses, statements, self.run_sources_for(run_id, urls), verdicts

    def run_sources_for(self, run_id: str, urls: Sequence[str]) -> dict[str, Any]:
        """url -> the SourceRow this run used, for the given URLs (those not fetched are absent)."""
        out: dict[str, Any] = {}
        for i in range(0, len(urls), 500):
            chunk = list(urls[i:i + 500])
            marks = ", ".join("?" * len(chunk))
            for r in self.db.query(
                    f"SELECT {_SOURCE_COLUMNS}, rs.url AS url FROM run_sources rs JOIN sources s ON s.id = rs.source_id "
                    f"WHERE rs.run_id = ? AND rs.url IN ({marks})", [run_id, *chunk]):
                out[r["url"]] = self._source_row(r)  # type: ignore[attr-defined]
        return out

    def iter_run_source_summaries(self, run_id: str) -> Iterator[dict[str, Any]]:
        """Every source the run used, in URL order, without its text (``text_chars`` is its length)."""
        yield from self.db.query(
            "SELECT rs.url AS url, s.id AS source_id, s.status, s.http_status, s.sha256, s.fetched_at, s.origin, "
            "s.final_url, LENGTH(s.text) AS text_chars FROM run_sources rs JOIN sources s ON s.id = rs.source_id "
            "WHERE rs.run_id = ? ORDER BY rs.url", [run_id])

    def verdict_provenance(self, run_id: str) -> tuple[dict[str, dict[str, set[str]]], str | None, str | None]:
        """judge id (in order of its first verdict) -> {model_versions, prompt_versions}, and the times
        of the run's first and last verdict."""
        judges: dict[str, dict[str, set[str]]] = {}
        for row in self.db.execute("SELECT judge_id FROM verdicts WHERE run_id = ? GROUP BY judge_id "
                                   "ORDER BY MIN(pk)", [run_id]).fetchall():
            judges[row[0]] = {"model_versions": set(), "prompt_versions": set()}
        for judge_id, model, prompt in self.db.execute(
                "SELECT DISTINCT judge_id, model_version, prompt_version FROM verdicts WHERE run_id = ?",
                [run_id]).fetchall():
            if model:
                judges[judge_id]["model_versions"].add(model)
            if prompt:
                judges[judge_id]["prompt_versions"].add(prompt)
        first, last = self.db.execute("SELECT MIN(created_at), MAX(created_at) FROM verdicts WHERE run_id = ?",
                                      [run_id]).fetchone()
        return judges, first, last

    def response_extras(self, run_id: str) -> Iterator[dict[str, Any]]:
        """Each response's extra input columns, in order."""
        for (extra,) in self.db.execute("SELECT extra FROM responses WHERE run_id = ? ORDER BY ord", [run_id]):
            yield load_json(extra, {})

    def reviewed_statement_pks(self, run_id: str) -> list[int]:
        return [r[0] for r in self.db.execute(
            "SELECT DISTINCT statement_pk FROM reviews WHERE run_id = ? ORDER BY statement_pk", [run_id])]

    def rows_for_statements(self, run_id: str, statement_pks: Sequence[int]) -> PageRows:
        """The rows of a RunData holding only the given statements, their responses and verdicts (no sources)."""
        statements: dict[int, list[Any]] = {}
        verdicts: dict[int, list[Any]] = {}
        response_pks: set[int] = set()
        for i in range(0, len(statement_pks), 500):
            chunk = list(statement_pks[i:i + 500])
            marks = ", ".join("?" * len(chunk))
            for r in self.db.query(f"SELECT * FROM statements WHERE pk IN ({marks}) ORDER BY response_pk, ord", chunk):
                statements.setdefault(r["response_pk"], []).append(self._statement_row(r))  # type: ignore[attr-defined]
                response_pks.add(r["response_pk"])
            for r in self.db.query(f"SELECT * FROM verdicts WHERE run_id = ? AND statement_pk IN ({marks}) "
                                   "ORDER BY pk", [run_id, *chunk]):
                verdicts.setdefault(r["statement_pk"], []).append(self._verdict_row(r))  # type: ignore[attr-defined]
        responses = []
        pks = sorted(response_pks)
        for i in range(0, len(pks), 500):
            chunk = pks[i:i + 500]
            marks = ", ".join("?" * len(chunk))
            responses += [self._response_row(r) for r in self.db.query(  # type: ignore[attr-defined]
                f"SELECT * FROM responses WHERE pk IN ({marks}) ORDER BY ord", chunk)]
        responses.sort(key=lambda r: r.ord)
        return responses, statements, {}, verdicts
