"""Reference strings as answers write them (Vancouver, AMA, APA, Harvard, loose LLM forms) are read field by field;
sentences, URLs and advice are not references. Cases: tests/fixtures/references/strings.jsonl."""
from __future__ import annotations

import json

import pytest

from sourcecheckup.references.parse import find_references, parse_reference
from tests.support.paths import FIXTURES

CASES = [json.loads(line) for line in
         (FIXTURES / "references" / "strings.jsonl").read_text(encoding="utf-8").splitlines()
         if line.strip()]
FIELDS = ("style", "authors", "year", "title", "journal", "volume", "issue", "pages", "doi", "pmid")


def test_the_fixture_is_large_and_varied_enough() -> None:
    styles = {c["expect"]["style"] for c in CASES if c["expect"]}
    assert sum(1 for c in CASES if c["expect"]) >= 60 and sum(1 for c in CASES if not c["expect"]) >= 10
    assert {"vancouver", "ama", "apa", "harvard", "loose", "author-year", "doi", "pmid"} <= styles
    assert len({c["id"] for c in CASES}) == len(CASES)


@pytest.mark.parametrize("case", CASES, ids=[c["id"] for c in CASES])
def test_reference_string_yields_its_fields(case: dict) -> None:
    ref = parse_reference(case["text"])
    if case["expect"] is None:
        assert ref is None, f"not a reference, read as {ref}"
        return
    assert ref is not None, "a reference string was not recognised"
    assert ref.raw == case["text"].strip()
    got = {f: list(ref.authors) if f == "authors" else getattr(ref, f) for f in FIELDS}
    assert got == {f: case["expect"][f] for f in FIELDS}


ANSWER = """Metformin is first-line for type 2 diabetes (Davies et al., 2022) and rarely causes lactic acidosis [1].
SGLT2 inhibitors lower heart-failure admissions (Zinman et al., 2015; McMurray & Solomon, 2019).
Statins cut events by about a fifth in 2010 analyses (see the CTT report).

References
1. Inzucchi SE, Lipska KJ, Mayo H, Bailey CJ, McGuire DK. Metformin in patients with type 2 diabetes and kidney disease: a systematic review. JAMA. 2014;312(24):2668-75.
2. Zinman B, Wanner C, Lachin JM, et al. Empagliflozin, cardiovascular outcomes, and mortality in type 2 diabetes. N Engl J Med. 2015;373(22):2117-2128. doi:10.1056/NEJMoa1504720
[3] Baigent C et al. Lancet. 2010;376(9753):1670-81.
- PMID: 21447663
"""


def test_find_references_reads_the_list_and_the_in_text_citations_with_their_spans() -> None:
    found = find_references(ANSWER)
    for start, end, ref in found:
        assert ANSWER[start:end] == ref.raw
    raws = [ref.raw for _, _, ref in found]
    assert raws == [
        "Davies et al., 2022",
        "Zinman et al., 2015",
        " McMurray & Solomon, 2019".strip(),
        ANSWER.splitlines()[5][3:],
        ANSWER.splitlines()[6][3:],
        "Baigent C et al. Lancet. 2010;376(9753):1670-81.",
        "PMID: 21447663",
    ]
    styles = [ref.style for _, _, ref in found]
    assert styles == ["author-year", "author-year", "author-year", "vancouver", "ama", "loose", "pmid"]
    assert found[4][2].doi == "10.1056/nejmoa1504720"
    # "(see the CTT report)" and the sentences are not references
    assert not any("CTT" in r or "Statins" in r for r in raws)


def test_find_references_reads_footnote_definitions_and_continuation_lines() -> None:
    text = ("Phlebotomy is first-line.[^acg]\n\n"
            "[^acg]: Kowdley KV, Brown KE, Ahn J, Sundaram V. ACG Clinical Guideline: Hereditary Hemochromatosis.\n"
            "    Am J Gastroenterol. 2019;114(8):1202-1218. PMID: 31335359\n"
            "[^note]: ask your doctor about it.\n")
    (start, end, ref), = find_references(text)
    assert text[start:end] == ref.raw and ref.raw.startswith("Kowdley KV") and ref.raw.endswith("PMID: 31335359")
    assert (ref.authors[0], ref.journal, ref.year, ref.pmid) == ("Kowdley", "Am J Gastroenterol", 2019, "31335359")


def test_an_answer_without_references_has_none() -> None:
    text = ("According to a 2019 NEJM study by Smith et al., metformin is safe (in most patients).\n\n"
            "Sources:\n- Oily fish such as salmon\n- See your doctor")
    assert find_references(text) == []
