"""The default built-in judge (``builtin``, procedure builtin-6): the learned reader decides on a whole page, the
screen on a short source; ``builtin:screen`` and a threshold are the screen everywhere, and so is the judge
without the embedding model. Each verdict names the procedure that gave it."""
from __future__ import annotations

import json

import pytest

from sourcecheckup import embeddings
from sourcecheckup.evidence import SourceText
from sourcecheckup.judges import make_judge
from sourcecheckup.judges.builtin import HYBRID_VERSION, MODEL_FULL, PROMPT_VERSION, READER_VERSION, reader
from sourcecheckup.models import Label, decided_by
from sourcecheckup.views.matrix import (
    BUILTIN_JUDGE_NOTE,
    READER_JUDGE_NOTE,
    SCREENING_JUDGE_NOTE,
    builtin_judge_note,
    is_reader_verdict,
)
from tests.judges.test_reader_gate import PAGE, SAID
from tests.support.paths import ROOT

SHORT = "The usual dose for adults is one or two 500mg tablets up to 4 times in 24 hours."

pytestmark = pytest.mark.skipif(not (embeddings.available() and reader.available()),
                                reason="the embedding model or the reader is not installed")


def test_the_reader_decides_a_whole_page_and_the_screen_a_short_source():
    judge = make_judge("builtin")
    assert judge.prompt_version == HYBRID_VERSION and judge.pages_only
    page, short = judge.score_pairs([(SAID, SourceText.from_text(PAGE)),
                                     ("Adults can take two 500mg tablets up to 4 times in 24 hours.",
                                      SourceText.from_text(SHORT))])
    assert page.label is Label.SUPPORTED and decided_by(page.flags) == "reader_page", page.rationale
    assert page.model_version.startswith(f"{READER_VERSION}/") and is_reader_verdict(page)
    assert short.label is Label.SUPPORTED and decided_by(short.flags) not in ("reader", "reader_page")
    assert short.model_version == MODEL_FULL and not is_reader_verdict(short)
    assert {page.prompt_version, short.prompt_version} == {HYBRID_VERSION}
    record = judge.provenance()
    assert record["reader_decides"] == "whole pages" and record["screen_model_version"] == MODEL_FULL
    assert record["reader"]["sha256"] == judge.reader.sha256
    # what each procedure reads: the reader's windows only for the page
    a_page, a_short = judge.analyse_pairs([(SAID, SourceText.from_text(PAGE)), (SAID, SourceText.from_text(SHORT))])
    assert a_page.windows and a_page.reader is not None and not a_short.windows and a_short.reader is None


@pytest.mark.parametrize("spec, options", [("builtin:screen", {}), ("builtin:0.5", {}),
                                           ("builtin", {"use_embeddings": False})])
def test_the_screen_decides_everywhere_when_asked_or_without_the_embedding_model(spec, options):
    judge = make_judge(spec, **options)
    assert not judge.use_reader and judge.prompt_version == PROMPT_VERSION
    (v,) = judge.score_pairs([(SAID, SourceText.from_text(PAGE))])
    assert v.label is Label.SUPPORTED and decided_by(v.flags) not in ("reader", "reader_page")
    assert v.model_version.startswith(f"{PROMPT_VERSION}/") and not is_reader_verdict(v)


def test_the_reader_everywhere_is_still_builtin_reader():
    judge = make_judge("builtin:reader")
    assert judge.use_reader and not judge.pages_only and judge.prompt_version == READER_VERSION
    (v,) = judge.score_pairs([(SAID, SourceText.from_text(SHORT))])
    assert decided_by(v.flags) == "reader" or v.label is Label.NOT_SUPPORTED
    assert is_reader_verdict(v)


def test_the_apps_note_follows_the_procedures_that_gave_a_runs_verdicts():
    reader_version = make_judge("builtin:reader").model_version
    assert builtin_judge_note(f"builtin ({MODEL_FULL})") == SCREENING_JUDGE_NOTE
    assert builtin_judge_note(f"builtin ({reader_version})") == READER_JUDGE_NOTE
    both = builtin_judge_note(f"builtin ({MODEL_FULL}, {reader_version})")
    assert both == BUILTIN_JUDGE_NOTE and "whole pages" in both and "short passages" in both


CLAIMS = ROOT.parent / "shared" / "data" / "claims"


@pytest.mark.parametrize("name", ["check_covid_dev.jsonl", "healthver_dev.jsonl"])
def test_review_first_marks_at_most_a_quarter_of_real_claims_on_short_sources(name):
    """Issue 40's bound, on claims no one here wrote and the screen never trained on: with the screen's old
    band (0.12) these were 34% and 37%."""
    if not (CLAIMS / name).is_file():
        pytest.skip(f"no ../shared/data/claims/{name} next to this checkout")
    rows = [json.loads(line) for line in (CLAIMS / name).read_text(encoding="utf-8").splitlines() if line.strip()]
    verdicts = make_judge("builtin").score_pairs([(r["claim"], SourceText.from_text(r["evidence"])) for r in rows])
    marked = sum(v.review_first for v in verdicts) / len(verdicts)
    assert marked <= 0.25, f"{marked:.1%} of {name} marked review first"
    assert all(v.label in (Label.SUPPORTED, Label.NOT_SUPPORTED) for v in verdicts)
