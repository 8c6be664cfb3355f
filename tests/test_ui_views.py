"""sourcecheckup.views, the engine side of the app's screens (no Qt): where quotes and statements sit."""
from __future__ import annotations

from sourcecheckup.store import Store
from sourcecheckup.views import load_run_view, locate_quote, review_pairs, support_matrix, word_diff
from tests.support.synth_run import synthesize_run


def test_quote_is_located_despite_curly_quotes_case_and_line_breaks():
    source = "Intro.\n\nThe guideline says “Metformin  remains the preferred\ninitial drug” for most adults."
    start, end = locate_quote('"metformin remains the preferred initial drug"', source)
    assert source[start:end] == "Metformin  remains the preferred\ninitial drug"


def test_quote_shortened_with_an_ellipsis_spans_its_pieces():
    source = "Aspirin lowers the risk of a first heart attack but raises the risk of major bleeding in older adults."
    start, end = locate_quote("Aspirin lowers the risk … major bleeding", source)
    assert source[start:end] == "Aspirin lowers the risk of a first heart attack but raises the risk of major bleeding"
    assert locate_quote("not in the page at all", source) is None


def test_word_diff_marks_removed_and_added_words():
    assert word_diff("Statins always cause muscle pain.", "Statins can cause muscle pain.") == \
        "Statins [-always-] {+can+} cause muscle pain."
    assert word_diff("Drop me.", "") == "[-Drop me.-]"


def test_matrix_and_review_pairs_cover_every_claim_and_readable_source(tmp_path):
    with Store(tmp_path / "v.db") as st:
        run_id = synthesize_run(st, responses=2, statements=3, sources=2)
        view = load_run_view(st, run_id)
    m = support_matrix(view, view.summaries[0].response_pk)
    assert (len(m.statements), len(m.urls)) == (3, 2)
    assert sum(1 for c in m.cells.values() if c.label is not None and c.label.value == "supported") == 3
    assert len(review_pairs(view)) == 2 * 3 * 2
