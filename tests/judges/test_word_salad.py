"""Issue 42 item 6: a page of the statement's words shuffled into "sentences" supports nothing."""
from __future__ import annotations

import asyncio
import random

import pytest

from sourcecheckup.evidence import SourceText
from sourcecheckup.judges.builtin import BuiltinJudge
from sourcecheckup.judges.builtin.support_gates import WORD_SALAD, word_salad
from sourcecheckup.models import Label
from tests.support.paths import FIXTURES

CLAIM = "Regular venesection lowers ferritin in people with haemochromatosis."
FILLER = "the of and a to in is that it for on with as was at by this".split()
PAGES = FIXTURES / "health_pages"


def salad(seed: int = 1, n: int = 60) -> str:
    rng = random.Random(seed)
    words = CLAIM.rstrip(".").split()
    out = []
    for _ in range(n):
        w = rng.sample(words, k=len(words)) + rng.sample(FILLER, 5)
        rng.shuffle(w)
        out.append(" ".join(w).capitalize() + ".")
    return " ".join(out)


@pytest.mark.parametrize("use_reader", [False, True], ids=["screen", "reader"])
def test_keyword_salad_supports_nothing(use_reader):
    judge = BuiltinJudge(use_reader=use_reader)
    for seed in (1, 2, 3):
        v = asyncio.run(judge.verify(CLAIM, SourceText.from_text(salad(seed), url="https://salad.example/")))
        assert v.label is Label.NOT_SUPPORTED, (seed, v.rationale)
        assert "do not read as text" in v.rationale


def test_the_same_words_as_sentences_still_support():
    page = ("Haemochromatosis is treated by removing blood. " * 2 +
            "Regular venesection lowers ferritin in people with haemochromatosis. "
            "Most people need a session every week at first, then three or four a year. "
            "Your ferritin level is checked before each session. " * 3)
    v = asyncio.run(BuiltinJudge().verify(CLAIM, SourceText.from_text(page, url="https://nhs.example/")))
    assert v.label is Label.SUPPORTED, v.rationale


def test_the_gate_never_fires_on_real_health_pages():
    pages = sorted(PAGES.glob("*"))
    assert pages
    for path in pages:
        sentences = [s for s in path.read_text(encoding="utf-8").replace("\n", " ").split(". ") if s]
        assert word_salad(sentences, [1.0] * len(sentences)) == "", path.name
    sentences = salad().split(". ")
    assert word_salad(sentences, [1.0] * len(sentences)) == WORD_SALAD
