"""sourcecheckup.views, the engine side of the app's screens (no Qt): where quotes and statements sit."""
from __future__ import annotations

from sourcecheckup.evidence import locate_quote
from sourcecheckup.store import Store
from sourcecheckup.views.matrix import support_matrix
from sourcecheckup.views.results import load_run_view
from sourcecheckup.views.review import review_pairs
from sourcecheckup.views.text import word_diff
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


def test_highlight_and_quote_found_use_one_matcher():
    """A quote whose second piece is not in the page: the engine says "not found", so the app must
    not highlight a partial span (views.locate_quote used to highlight the first piece)."""
    from sourcecheckup.evidence import locate_quote as engine_locate
    from sourcecheckup.evidence import quote_in_source

    source = "Aspirin lowers the risk of a first heart attack. It is safe for everyone."
    quote = "Aspirin lowers the risk … raises the risk of major bleeding"
    assert quote_in_source(quote, source) is False
    assert locate_quote(quote, source) is None
    assert engine_locate is locate_quote
    # pieces out of order are not a match either way
    assert quote_in_source("It is safe … Aspirin lowers", source) is False
    assert locate_quote("It is safe … Aspirin lowers", source) is None
    # a decomposed accent in the page matches a composed one in the quote, and the span covers the mark
    page = "Le me\u0301decin dit: prenez deux comprime\u0301s."
    span = locate_quote("médecin dit", page)
    assert span is not None and page[span[0]:span[1]] == "me\u0301decin dit"
    assert quote_in_source("médecin dit", page) is True
