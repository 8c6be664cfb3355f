"""The expert step of an audit run: every expert statement of an answer is judged against the answer's text by
the run's judges, and every answer with a reference answer gets its similarity to it.

OLAPH (Jeong et al. 2024, "OLAPH: Improving Factuality in Biomedical Long-form Question Answering",
arXiv:2405.12701, its automatic factuality evaluation) scores an answer by asking an NLI model whether the
answer (premise) entails each must-have / nice-to-have statement (hypothesis); here the run's own judges play
the NLI model through the one judge interface: the answer text is the source, each expert statement the claim.
Statements already judged (a resume) are not judged again; a judge that fails gives a ``judge_error`` row,
never "not entailed".
"""
from __future__ import annotations

import asyncio
from typing import Callable, Sequence

from ..evidence import SourceText
from ..judges.base import Judge, judge_traits
from ..models import Verdict
from ..store import ResponseRow, Store
from .model import ExpertKind, ExpertVerdict

EXPERT_SOURCE_PREFIX = "answer:"     # the "URL" an answer's text is judged under (never fetched)


def reports_contradictions(judge: Judge) -> bool:
    """Whether the judge flags a contradicted claim (``contradicted``): the built-in screen (its exact checks)
    and the LLM judges do; an NLI model run as ``local:`` gives an entailment score only, so its hallucination
    figure is not available rather than zero."""
    declared = judge_traits(judge).reports_contradictions
    if declared is not None:
        return declared
    from ..judges.api import ApiJudge
    from ..judges.builtin.judge import BuiltinJudge

    return isinstance(judge, (ApiJudge, BuiltinJudge))


def expert_pairs(row: ResponseRow) -> list[tuple[ExpertKind, int, str]]:
    """(kind, position, statement) of every expert statement of one answer, must-have first."""
    expert = row.response.expert
    if not expert:
        return []
    return ([(ExpertKind.MUST_HAVE, i, s) for i, s in enumerate(expert.must_have)]
            + [(ExpertKind.NICE_TO_HAVE, i, s) for i, s in enumerate(expert.nice_to_have)])


async def judge_expert_statements(store: Store, run_id: str, judges: Sequence[Judge], semaphore: asyncio.Semaphore,
                                  cancel: asyncio.Event, log: Callable[[str, str], None] | None = None) -> int:
    """Judge every expert statement of the run not judged yet; returns how many verdicts were stored."""
    rows = [r for r in store.responses_with_expert(run_id) if expert_pairs(r)]
    if not rows:
        return 0
    done = store.expert_judged_keys(run_id)
    stored = 0
    for row in rows:
        if cancel.is_set():
            break
        source = SourceText.from_text(row.response.text, url=f"{EXPERT_SOURCE_PREFIX}{row.response.id}")
        todo = [(judge, kind, i, s) for judge in judges for kind, i, s in expert_pairs(row)
                if (row.pk, kind.value, i, judge.id) not in done]
        results = await asyncio.gather(*(_judge(semaphore, judge, s, source) for judge, _, _, s in todo))
        verdicts = [ExpertVerdict(row.pk, kind, i, s, _finalised(v, judge, reports_contradictions(judge)))
                    for (judge, kind, i, s), v in zip(todo, results)]
        if verdicts:
            store.save_expert_verdicts(run_id, verdicts)
            stored += len(verdicts)
    if stored and log is not None:
        log(f"expert statements: {stored} verdict(s) on {len(rows)} answer(s) with expert material", "info")
    return stored


async def _judge(semaphore: asyncio.Semaphore, judge: Judge, statement: str, source: SourceText) -> Verdict:
    async with semaphore:
        try:
            return await judge.verify(statement, source)
        except asyncio.CancelledError:
            raise
        except Exception as exc:   # a judge that raises still yields an honest judge_error row
            return Verdict.error(judge.id, f"{type(exc).__name__}: {exc}",
                                 prompt_version=judge.prompt_version)


def _finalised(verdict: Verdict, judge: Judge, contradictions: bool) -> Verdict:
    from dataclasses import replace

    flags = tuple(verdict.flags) + (() if contradictions else ("no_contradiction_reading",))
    return replace(verdict, judge_id=verdict.judge_id or judge.id,
                   prompt_version=verdict.prompt_version or judge.prompt_version,
                   flags=tuple(dict.fromkeys(flags)))


async def score_similarities(store: Store, run_id: str, log: Callable[[str, str], None] | None = None) -> int:
    """Each answer's similarity to its reference answer (late interaction and sentence cosine), for the answers
    with a reference answer and no stored similarity yet; returns how many answers were scored. The model not
    loading is logged and leaves the figures absent, never zero."""
    from .model import LATE_INTERACTION, SENTENCE_COSINE
    from .similarity import TOKEN_MODEL, answer_similarities

    have = store.similarities(run_id)
    rows = [r for r in store.responses_with_expert(run_id) if r.response.expert
            and r.response.expert.reference_answer.strip() and r.pk not in have]
    if not rows:
        return 0
    pairs = [(r.response.expert.reference_answer, r.response.text) for r in rows]   # type: ignore[union-attr]
    try:
        scores = await asyncio.to_thread(answer_similarities, pairs)
    except Exception as exc:   # no embedding model here: say so; the similarity is absent, not zero
        if log is not None:
            log(f"similarity to the reference answers not computed: {type(exc).__name__}: {exc}", "warning")
        return 0
    out: list[tuple[int, str, str, float]] = []
    for row, (late, cosine) in zip(rows, scores):
        if late is not None:
            out.append((row.pk, LATE_INTERACTION, TOKEN_MODEL, round(late, 6)))
        out.append((row.pk, SENTENCE_COSINE, "all-MiniLM-L6-v2", round(cosine, 6)))
    store.save_similarities(run_id, out)
    return len(rows)


async def expert_step(store: Store, run_id: str, judges: Sequence[Judge], semaphore: asyncio.Semaphore,
                      cancel: asyncio.Event, log: Callable[[str, str], None] | None = None) -> None:
    """The run's expert step: the expert statements judged, then the similarities scored."""
    await judge_expert_statements(store, run_id, judges, semaphore, cancel, log)
    if not cancel.is_set():
        await score_similarities(store, run_id, log)
