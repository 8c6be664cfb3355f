"""Written references in answers become citations: a DOI link, a PubMed link or a ``ref:`` key, with the
string as written kept in Response.references so its title, authors and year can be checked."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from sourcecheckup.ingest import CsvMapping, load_path, load_text, parse_markdown
from sourcecheckup.references.model import reference_key
from sourcecheckup.references.parse import parse_reference
from sourcecheckup.store import Store
from tests.support.paths import FIXTURES

ANSWERS = FIXTURES / "references" / "answers"
INGEST = FIXTURES / "ingest"

ZINMAN = ("Zinman B, Wanner C, Lachin JM, et al. Empagliflozin, cardiovascular outcomes, and mortality in type 2 "
          "diabetes. N Engl J Med. 2015;373(22):2117-2128. doi:10.1056/NEJMoa1504720")
LEWIS = ("Lewis JD, Ferrara A, Peng T, et al. Risk of bladder cancer among diabetic patients treated with "
         "pioglitazone: interim report of a longitudinal cohort study. Diabetes Care. 2011;34(4):916-22. PMID: 21447663")
INZUCCHI = ("Inzucchi SE, Lipska KJ, Mayo H, Bailey CJ, McGuire DK. Metformin in patients with type 2 diabetes and "
            "kidney disease: a systematic review. JAMA. 2014;312(24):2668-75.")
CITATIONS = ("https://doi.org/10.1056/NEJMoa1504720", "https://pubmed.ncbi.nlm.nih.gov/21447663/",
             reference_key(INZUCCHI))


def assert_three_references(answer, zinman: str = ZINMAN) -> None:
    assert answer.citations == CITATIONS
    assert answer.markers == {"1": 0, "2": 1, "3": 2}
    assert answer.references == {0: zinman, 1: LEWIS, 2: INZUCCHI}
    assert "unusable_citations" not in answer.extra
    assert "Zinman" not in answer.text and "PMID" not in answer.text and "References" not in answer.text
    assert "Sources" not in answer.text


@pytest.mark.parametrize("name", ["ckd_metformin.json", "ckd_metformin.txt"])
def test_a_doi_a_pmid_and_a_free_text_reference_become_three_citations_from_a_file(name: str) -> None:
    result = load_path(ANSWERS / name)
    assert result.skipped == []
    (answer,) = result.responses
    assert_three_references(answer)
    assert "bladder cancer in an interim cohort report [2]." in answer.text
    assert answer.text.endswith("rare in chronic kidney disease [3].")


def test_markdown_reference_list_and_an_in_text_author_year_citation_point_at_the_listed_reference() -> None:
    (answer,) = load_path(ANSWERS / "ckd_metformin.md").responses
    assert (answer.id, answer.model) == ("ckd-01", "gpt-4o")
    # the list item keeps its Markdown emphasis: the string as written
    assert_three_references(answer, ZINMAN.replace("N Engl J Med.", "*N Engl J Med*."))
    # "(Inzucchi et al., 2014)" names reference 3 of the list: it becomes its marker
    assert "lactic acidosis on metformin is rare [3]." in answer.text and "Inzucchi" not in answer.text
    assert answer.text.endswith("Please discuss any change with your nephrologist.")


def test_pasted_text_json_and_markdown_read_alike() -> None:
    for name in ("ckd_metformin.json", "ckd_metformin.txt", "ckd_metformin.md"):
        (answer,) = load_text((ANSWERS / name).read_text(encoding="utf-8")).responses
        assert answer.citations == CITATIONS and answer.markers == {"1": 0, "2": 1, "3": 2}
        assert answer.references[1] == LEWIS and answer.references[2] == INZUCCHI


def test_a_folder_of_answers_in_three_formats() -> None:
    result = load_path(ANSWERS)
    assert result.skipped == [] and len(result.responses) == 3
    for answer in result.responses:
        assert answer.citations == CITATIONS and set(answer.references) == {0, 1, 2}


def test_jsonl_answers_with_reference_strings_as_citations(tmp_path: Path) -> None:
    lines = tmp_path / "answers.jsonl"
    lines.write_text("\n".join(json.dumps(rec) for rec in (
        {"id": "a", "response": "Empagliflozin lowers cardiovascular death [1].", "citations": [ZINMAN]},
        {"id": "b", "response": "Statins prevent strokes [1].", "citations": ["https://www.nhs.uk/conditions/statins/"]},
    )), encoding="utf-8")
    a, b = load_path(lines).responses
    assert a.citations == ("https://doi.org/10.1056/NEJMoa1504720",) and a.references == {0: ZINMAN}
    assert b.citations == ("https://www.nhs.uk/conditions/statins/",) and b.references == {}


def test_a_csv_cell_of_written_references_is_not_split_at_their_commas(tmp_path: Path) -> None:
    sheet = tmp_path / "answers.csv"
    cell = f"{INZUCCHI}\n{LEWIS}"
    sheet.write_text("id,response,citations\n" + f'c1,"Metformin is safe in CKD [1] [2].","{cell}"\n', encoding="utf-8")
    (answer,) = load_path(sheet, mapping=CsvMapping()).responses
    assert answer.citations == (reference_key(INZUCCHI), "https://pubmed.ncbi.nlm.nih.gov/21447663/")
    assert answer.references == {0: INZUCCHI, 1: LEWIS}


def test_named_footnotes_and_reference_definitions_that_are_written_references() -> None:
    text = (f"Empagliflozin lowered cardiovascular death.[^zinman] Metformin rarely causes lactic acidosis [ckd].\n\n"
            f"[^zinman]: {ZINMAN}\n[ckd]: {INZUCCHI}\n")
    answer = parse_markdown(text, origin="pasted", rid="x")
    assert answer.citations == ("https://doi.org/10.1056/NEJMoa1504720", reference_key(INZUCCHI))
    assert answer.markers == {"^zinman": 0, "2": 1}
    assert answer.text == "Empagliflozin lowered cardiovascular death.[^zinman] Metformin rarely causes lactic acidosis ckd [2]."
    assert answer.references == {0: ZINMAN, 1: INZUCCHI}


def test_an_in_text_citation_with_no_listed_reference_is_a_citation_of_its_own() -> None:
    answer = parse_markdown("SGLT2 inhibitors cut heart-failure admissions (McMurray et al., 2019; Zinman et al., 2015).\n\n"
                            f"Sources:\n1. {ZINMAN}", origin="pasted", rid="x")
    assert answer.citations == ("https://doi.org/10.1056/NEJMoa1504720", reference_key("McMurray et al., 2019"))
    assert answer.text == "SGLT2 inhibitors cut heart-failure admissions [2][1]."
    assert answer.markers == {"2": 1, "1": 0}
    assert answer.references == {0: ZINMAN, 1: "McMurray et al., 2019"}
    assert parse_reference(answer.references[1]).authors == ("McMurray",)


def test_an_answer_citing_only_urls_is_unchanged() -> None:
    text = ("Measles spreads by airborne droplets [1]. Two MMR doses are about 97% effective (CDC, 2023) [2].\n\n"
            "Sources:\n1. https://www.cdc.gov/measles/\n2. [WHO fact sheet](https://www.who.int/news-room/fact-sheets/detail/measles)")
    answer = parse_markdown(text, origin="pasted", rid="x")
    assert answer.citations == ("https://www.cdc.gov/measles/", "https://www.who.int/news-room/fact-sheets/detail/measles")
    assert answer.text == "Measles spreads by airborne droplets [1]. Two MMR doses are about 97% effective (CDC, 2023) [2]."
    assert answer.references == {} and answer.extra == {}


def test_bare_identifiers_and_web_pages_carry_no_written_reference() -> None:
    (answer,) = load_text(json.dumps({"response": "Metformin is first line [1][2][3].", "citations": [
        "doi:10.1056/NEJMoa1504720", "PMID: 21447663",
        "Centers for Disease Control and Prevention. Type 2 diabetes. 2024. https://www.cdc.gov/diabetes/about/"]})).responses
    assert answer.citations == ("https://doi.org/10.1056/NEJMoa1504720", "https://pubmed.ncbi.nlm.nih.gov/21447663/",
                                "https://www.cdc.gov/diabetes/about/")
    assert answer.references == {}


def test_a_journal_article_cited_with_its_publisher_link_keeps_its_reference_for_the_check() -> None:
    written = ("Inzucchi SE, Lipska KJ, Mayo H, et al. Metformin in patients with type 2 diabetes and kidney disease. "
               "JAMA. 2014;312(24):2668-75. https://jamanetwork.com/journals/jama/fullarticle/2088855")
    (answer,) = load_text(json.dumps({"response": "Metformin is safe in CKD [1].", "citations": [written]})).responses
    assert answer.citations == ("https://jamanetwork.com/journals/jama/fullarticle/2088855",)
    assert answer.references == {0: written}


def test_existing_source_lists_keep_their_meaning() -> None:
    (answer,) = load_path(INGEST / "perplexity_sources.md").responses
    # the Hirst entry names its DOI: the DOI is the citation, the written reference is kept for the check
    hirst = answer.citations.index("https://doi.org/10.2337/dc11-1734")
    assert answer.references == {hirst: "Hirst JA et al. Quantifying the effect of metformin treatment and dose on "
                                        "glycemic control. Diabetes Care. 2012. https://doi.org/10.2337/dc11-1734"}
    # a print edition with no year is not a reference that can be looked up: still unusable, still visible
    assert answer.extra["unusable_citations"] == "American Diabetes Association. Standards of Care in Diabetes (print edition)"
    sentence = parse_markdown("References: none were needed for this answer.\n\nDrink water.", origin="p", rid="x")
    assert sentence.citations == () and sentence.text.startswith("References: none were needed")


def test_references_survive_a_round_trip_through_the_store(tmp_path: Path) -> None:
    store = Store(tmp_path / "audit.db")
    run = store.create_run(input="ckd_metformin.md", config={"judges": ["builtin"]}, judges=["builtin"],
                           parser="builtin", app_version="test")
    answers = load_path(ANSWERS).responses
    store.add_responses(run, answers)
    reopened = Store(tmp_path / "audit.db")
    stored = [row.response for row in reopened.responses(run)]
    assert stored == answers
    assert [r.references for r in stored] == [a.references for a in answers]
    assert stored[0].references[2] == INZUCCHI and stored[0].citations[2] == reference_key(INZUCCHI)


def test_an_in_text_citation_names_a_footnote_that_is_never_marked() -> None:
    answer = parse_markdown(f"Empagliflozin lowered cardiovascular death (Zinman et al., 2015).\n\n[^trial]: {ZINMAN}\n",
                            origin="pasted", rid="x")
    assert answer.citations == ("https://doi.org/10.1056/NEJMoa1504720",)
    assert answer.text == "Empagliflozin lowered cardiovascular death [1]."
    assert answer.markers == {"1": 0} and answer.references == {0: ZINMAN}
