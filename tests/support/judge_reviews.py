"""A run with two judges and reviews stored through the real review API, for judges-compare tests.

The figures the tests check by hand follow from this shape: see :func:`reviewed_two_judge_run`.
"""
from __future__ import annotations

import asyncio

from sourcecheckup.evidence import SourceText
from sourcecheckup.models import Verdict
from sourcecheckup.review import add_review
from sourcecheckup.store import Store
from tests.support.fake_judge import KeywordJudge
from tests.support.synth_run import synthesize_run

S, N = "supported", "not_supported"
FLIP = {S: N, N: S}
SYNTH, KEYWORD = "synthetic", "keyword:0"


def two_judge_run(store: Store) -> str:
    """10 responses x 4 statements x 3 sources; 'synthetic' supports 1 pair in 3, the real keyword judge
    (every statement word in the source) calls every pair supported, since each page holds every sentence."""
    run_id = synthesize_run(store, responses=10, statements=4, sources=3, judges=(SYNTH, KEYWORD))
    data = store.load_run(run_id)
    judge = KeywordJudge()
    for rows in data.statements.values():
        for row in rows:
            for v in data.verdicts[row.pk]:
                if v.verdict.judge_id != KEYWORD:
                    continue
                src = data.sources[v.url]
                verdict = asyncio.run(judge.verify(row.statement.text, SourceText.from_source(src.source)))
                store.save_verdict(run_id, row.pk, v.url, src.id, verdict)
    return run_id


def pairs_by_label(store: Store, run_id: str) -> list[tuple[int, str, str, int]]:
    """(statement_pk, url, the synthetic judge's label, source id), sorted."""
    data = store.load_run(run_id)
    return sorted((spk, v.url, v.verdict.label.value, data.sources[v.url].id)
                  for spk, vs in data.verdicts.items() for v in vs if v.verdict.judge_id == SYNTH)


def review_pair(store: Store, run_id: str, spk: int, url: str, majority: str, third: str = "") -> None:
    """ana and ben give the majority; cy gives ``third`` (the other label, or unsure) when asked."""
    add_review(store, run_id, spk, url, "ana", majority)
    add_review(store, run_id, spk, url, "ben", majority)
    if third:
        add_review(store, run_id, spk, url, "cy", third)


def reviewed_two_judge_run(store: Store) -> tuple[str, set[tuple[int, str]]]:
    """24 compared pairs: 8 the synthetic judge calls supported (the reviewers overturn 1), 16 it calls
    not supported (the reviewers overturn 2); one more pair both judges erred on; one pair with a tie.
    Returns the run id and the 3 pairs the reviewers overturned."""
    run_id = two_judge_run(store)
    pairs = pairs_by_label(store, run_id)
    sup = [p for p in pairs if p[2] == S][:9]
    nos = [p for p in pairs if p[2] == N][:18]
    flipped = {sup[0][:2], nos[0][:2], nos[1][:2]}
    for i, (spk, url, label, _) in enumerate(sup[:8] + nos[:16]):
        majority = FLIP[label] if (spk, url) in flipped else label
        review_pair(store, run_id, spk, url, majority,
                    third="unsure" if i == 3 else FLIP[majority] if i % 5 == 0 else "")
    spk, url, _, sid = nos[16]                                  # both judges erred: no label to compare
    for judge in (SYNTH, KEYWORD):
        store.save_verdict(run_id, spk, url, sid, Verdict.error(judge, "scripted timeout"))
    review_pair(store, run_id, spk, url, N)
    spk, url, _, _ = nos[17]                                    # ana and ben disagree: no majority
    add_review(store, run_id, spk, url, "ana", S)
    add_review(store, run_id, spk, url, "ben", N)
    return run_id, flipped
