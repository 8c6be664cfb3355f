"""The expert-measure tables (migration 8): each judge's verdict on each expert statement against an
answer (``expert_verdicts``) and each answer's similarity to its reference answer (``expert_similarity``)."""
from __future__ import annotations

from typing import Any, Sequence

import sqlite_utils

from ..expert.model import ExpertKind, ExpertVerdict
from ..models import Verdict, utcnow
from .columns import dump_json, load_json, stored_label


class ExpertTables:
    """Store methods over ``expert_verdicts`` and ``expert_similarity`` (mixed into ``Store``)."""

    db: sqlite_utils.Database

    def save_expert_verdicts(self, run_id: str, verdicts: Sequence[ExpertVerdict]) -> None:
        now = utcnow()
        with self.db.conn:
            self.db.conn.executemany(
                "INSERT OR REPLACE INTO expert_verdicts (run_id, response_pk, kind, ord, statement, judge_id, label, "
                "contradicted, score, rationale, quote, prompt_version, model_version, flags, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
                [(run_id, e.response_pk, e.kind.value, e.ord, e.statement, e.verdict.judge_id, e.verdict.label.value,
                  int(e.verdict.contradicted), e.verdict.score, e.verdict.rationale, e.verdict.quote,
                  e.verdict.prompt_version, e.verdict.model_version, dump_json(list(e.verdict.flags)), now)
                 for e in verdicts])

    def expert_verdicts(self, run_id: str) -> list[ExpertVerdict]:
        """Every expert-statement verdict of a run, by response, kind, statement and judge (stored order)."""
        out = []
        for r in self.db.query("SELECT * FROM expert_verdicts WHERE run_id = ? ORDER BY response_pk, kind, ord, pk",
                               [run_id]):
            label, rationale, flags = stored_label(r["label"], r["rationale"], tuple(load_json(r["flags"], [])))
            out.append(ExpertVerdict(
                response_pk=r["response_pk"], kind=ExpertKind(r["kind"]), ord=r["ord"], statement=r["statement"],
                verdict=Verdict(label=label, score=r["score"] or 0.0, rationale=rationale,
                                quote=r["quote"] or "", judge_id=r["judge_id"], prompt_version=r["prompt_version"] or "",
                                model_version=r["model_version"] or "", flags=flags)))
        return out

    def responses_with_expert(self, run_id: str) -> list[Any]:
        """The run's responses that carry expert material (ResponseRow, in order): a run without any reads none."""
        return [self._response_row(r) for r in self.db.query(   # type: ignore[attr-defined]
            "SELECT * FROM responses WHERE run_id = ? AND (COALESCE(reference_answer, '') != '' OR "
            "COALESCE(must_have, '[]') != '[]' OR COALESCE(nice_to_have, '[]') != '[]') ORDER BY ord", [run_id])]

    def expert_judged_keys(self, run_id: str) -> set[tuple[int, str, int, str]]:
        """(response_pk, kind, ord, judge_id) of every expert statement already judged in this run."""
        return {(r[0], r[1], r[2], r[3]) for r in self.db.execute(
            "SELECT response_pk, kind, ord, judge_id FROM expert_verdicts WHERE run_id = ?", [run_id]).fetchall()}

    def save_similarities(self, run_id: str, rows: Sequence[tuple[int, str, str, float]]) -> None:
        """Store ``(response_pk, method, model, value)`` similarities to the reference answer."""
        now = utcnow()
        with self.db.conn:
            self.db.conn.executemany(
                "INSERT OR REPLACE INTO expert_similarity (run_id, response_pk, method, model, value, created_at) "
                "VALUES (?, ?, ?, ?, ?, ?)", [(run_id, pk, method, model, value, now) for pk, method, model, value in rows])

    def similarities(self, run_id: str) -> dict[int, dict[str, tuple[str, float]]]:
        """response_pk -> method -> (model, value)."""
        out: dict[int, dict[str, tuple[str, float]]] = {}
        for r in self.db.query("SELECT response_pk, method, model, value FROM expert_similarity WHERE run_id = ? "
                               "ORDER BY response_pk, method", [run_id]):
            out.setdefault(r["response_pk"], {})[r["method"]] = (r["model"] or "", r["value"])
        return out
