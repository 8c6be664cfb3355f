"""A judge told to stop stops: a cancelled task tells its judge thread, the built-in judge stops between
pairs and a stoppable embedding between batches (Ctrl-C on an audit relies on all three)."""
from __future__ import annotations

import asyncio
import threading

import numpy as np
import pytest

from sourcecheckup import embeddings
from sourcecheckup.judges.base import JudgeStopped, in_stoppable_thread

WAIT_S = 120   # a generous ceiling for real work on a busy machine; never what a test measures


def test_cancelling_the_task_that_awaits_a_judge_thread_tells_the_thread_to_stop():
    saw: list[bool] = []
    started = threading.Event()

    def work(stop: threading.Event) -> None:
        started.set()
        saw.append(stop.wait(WAIT_S))   # returns True as soon as the stop is set

    async def go() -> None:
        task = asyncio.ensure_future(in_stoppable_thread(work))
        await asyncio.to_thread(started.wait, WAIT_S)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(go())   # asyncio.run waits for the worker thread before it returns
    assert saw == [True]


SENTENCES = ("Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher.",
             "Metformin is a biguanide used as first-line treatment for type 2 diabetes.",
             "Iron-overload-related disease was present in 28.4% of male C282Y homozygotes.",
             "The DASH diet alone can lower systolic blood pressure by about 11 mm Hg.")


def test_the_builtin_judge_stops_between_pairs_once_told(monkeypatch):
    from sourcecheckup.evidence import SourceText
    from sourcecheckup.judges.builtin import judge as builtin

    stop = threading.Event()
    analysed: list[str] = []
    real = builtin.analyse_pair

    def analyse_then_stop(statement, *args, **kw):
        analysed.append(statement)
        stop.set()   # as Ctrl-C would, while the first pair is analysed
        return real(statement, *args, **kw)

    monkeypatch.setattr(builtin, "analyse_pair", analyse_then_stop)
    judge = builtin.BuiltinJudge(use_embeddings=False)
    source = SourceText.from_text("Hypertension is a blood pressure of 130/80 mm Hg or higher. " * 3)
    with pytest.raises(JudgeStopped):
        judge.score_pairs([(s, source) for s in SENTENCES], stop=stop)
    assert analysed == [SENTENCES[0]]
    assert len(judge.score_pairs([(s, source) for s in SENTENCES], stop=threading.Event())) == len(SENTENCES)


@pytest.mark.skipif(not embeddings.available(), reason="the embedding model is not installed")
def test_a_stoppable_embedding_gives_one_calls_vectors_and_stops_between_batches():
    texts = [f"{s} Variant {i} with {'more words ' * (i % 7)}here." for i in range(20) for s in SENTENCES[:2]]
    embeddings._recent.clear()
    whole = embeddings.embed(texts)
    embeddings._recent.clear()
    in_slices = embeddings.embed(texts, stop=threading.Event())
    np.testing.assert_allclose(in_slices, whole, atol=1e-6)   # the same batches (bit for bit today)
    embeddings._recent.clear()
    told = threading.Event()
    told.set()
    with pytest.raises(embeddings.EmbeddingStopped):
        embeddings.embed(texts, stop=told)
