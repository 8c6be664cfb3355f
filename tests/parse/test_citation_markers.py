"""One citation-marker grammar: what ingest maps to a citation, parse strips and cites the same way."""
from __future__ import annotations

import pytest

from sourcecheckup.ingest import load_text
from sourcecheckup.parse import BuiltinParser

SOURCES = ("[1]: https://a.example.org/one\n[2]: https://b.example.org/two\n[3]: https://c.example.org/three")
A, B, C = "https://a.example.org/one", "https://b.example.org/two", "https://c.example.org/three"


@pytest.mark.parametrize("marker, cited", [
    ("[2]", [B]),
    ("[1][3]", [A, C]),
    ("[1, 3]", [A, C]),
    ("[1; 3]", [A, C]),
    ("[1-3]", [A, B, C]),
    ("[1–2]", [A, B]),
    ("[02]", [B]),
    ("【2†source】", [B]),
    ("【3:0†guide.pdf】", [C]),
])
def test_a_marker_ingest_maps_is_the_marker_parse_cites(marker, cited):
    text = f"Warfarin interacts with many antibiotics {marker}.\n\nIt needs regular INR checks [1].\n\n{SOURCES}"
    response = load_text(text).responses[0]
    first = BuiltinParser().parse_sync(response)[0]
    assert [response.citations[i] for i in first.cited] == cited
    assert first.text == "Warfarin interacts with many antibiotics."


@pytest.mark.parametrize("written", ["[sic]", "[1990-2020]", "[3-1]"])
def test_brackets_that_name_no_citation_cite_nothing_on_both_sides(written):
    text = f"The trial ran for years {written} and was stopped early [1].\n\n{SOURCES}"
    response = load_text(text).responses[0]
    statement = BuiltinParser().parse_sync(response)[0]
    assert [response.citations[i] for i in statement.cited] == [A]
    assert not any(label in response.markers for label in ("1990", "2020", "3-1", "sic"))
