"""Ingest: answers from realistic files and pasted text become Responses, bad records are reported."""
from __future__ import annotations

from pathlib import Path

import pytest

from sourcecheckup.ingest import (
    CsvMapping,
    IngestError,
    load_path,
    load_text,
    parse_answer_record,
    parse_markdown,
)
from tests.support.paths import FIXTURES as TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "ingest"
ED_MAPPING = CsvMapping(text_col="Model answer", citations_col="Cited URLs", question_col="Prompt",
                        model_col="Chatbot", id_col="Case ID")


def messages(result) -> list[str]:
    return [f"{s.origin}: {s.problem}" for s in result.skipped]


# --------------------------------------------------------------------------- Markdown


def test_pasted_markdown_with_footnotes_keeps_each_sentence_pointing_at_its_footnote() -> None:
    result = load_path(FIXTURES / "clinician_answer.md")
    assert result.skipped == []
    (answer,) = result.responses
    assert answer.id == "clinician_answer-1"
    assert answer.origin == "clinician_answer.md"
    # footnotes in the order the answer cites them, then the links in the text
    assert answer.citations == (
        "https://doi.org/10.1056/NEJMoa073286",
        "https://pubmed.ncbi.nlm.nih.gov/31335359/",
        "https://medlineplus.gov/genetics/condition/hereditary-hemochromatosis/",
        "https://www.cdc.gov/hemochromatosis/about/index.html",
        "https://www.nhs.uk/conditions/haemochromatosis/treatment/",
    )
    assert answer.markers == {"^allen": 0, "^acg": 1, "^medline": 2, "4": 3, "5": 4}
    assert "in a large cohort.[^allen]" in answer.text
    assert "genetic testing [^acg][^medline]." in answer.text
    assert "available from the CDC [4] and the NHS [5]." in answer.text
    # footnote and reference definitions are sources, not statements of the answer
    assert "Allen KJ" not in answer.text and "[cdc-hh]" not in answer.text and "http" not in answer.text
    assert answer.text.endswith("I'd recommend discussing this with a hepatologist.")


def test_numbered_sources_list_maps_markers_and_is_removed_from_the_answer() -> None:
    (answer,) = load_path(FIXTURES / "perplexity_sources.md").responses
    assert (answer.id, answer.question, answer.model) == (
        "t2dm-007", "What is the first-line drug for type 2 diabetes?", "perplexity-sonar")
    assert answer.extra["question_source"] == "usmle"
    assert answer.citations == (
        "https://diabetesjournals.org/care/article/47/Supplement_1/S158/153955/9-Pharmacologic-Approaches-to-Glycemic-Treatment",
        "https://www.ncbi.nlm.nih.gov/books/NBK518983/",
        "https://doi.org/10.2337/dc11-1734",
    )
    assert answer.markers == {"1": 0, "2": 1, "3": 2}
    # "[2, 3]" is written out as two markers for the parser
    assert "by about 1–1.5 percentage points [2][3]" in answer.text
    assert "Sources:" not in answer.text and "StatPearls" not in answer.text
    # text after the list is still part of the answer
    assert answer.text.endswith("This answer is for information only and is not medical advice.")
    # source 4 names no URL: it cannot be checked, and says so instead of vanishing
    assert "[4]" in answer.text and "4" not in answer.markers
    assert answer.extra["unusable_citations"] == "American Diabetes Association. Standards of Care in Diabetes (print edition)"


def test_a_link_never_steals_the_number_of_a_written_reference() -> None:
    result = load_path(FIXTURES / "folder" / "cardiology" / "afib_anticoagulation.md")
    (answer,) = result.responses
    aha = answer.citations.index("https://www.ahajournals.org/doi/10.1161/CIR.0000000000001193")
    esc = answer.citations.index("https://academic.oup.com/eurheartj/article/42/5/373/5899003")
    assert answer.markers["2"] == aha
    # the parenthesised link only pointed at its source: its marker stays, its words go
    assert "in women [3]." in answer.text and "ESC 2020 guidelines" not in answer.text and answer.markers["3"] == esc
    assert "eligible patients [2]." in answer.text


def test_reference_links_and_bare_urls_in_plain_text_become_numbered_markers() -> None:
    text = ("Measles spreads by airborne droplets [the CDC][].\n"
            "Two MMR doses are about 97% effective, see [WHO] and www.nhs.uk/conditions/measles/.\n\n"
            "[the cdc]: https://www.cdc.gov/measles/ \"Measles\"\n[who]: <https://www.who.int/news-room/fact-sheets/detail/measles>\n")
    answer = parse_markdown(text, origin="pasted", rid="p-1", question="How does measles spread?")
    assert answer.citations == (
        "https://www.cdc.gov/measles/",
        "https://www.who.int/news-room/fact-sheets/detail/measles",
        "https://www.nhs.uk/conditions/measles/",
    )
    assert answer.text == ("Measles spreads by airborne droplets the CDC [1].\n"
                           "Two MMR doses are about 97% effective, see WHO [2] and [3].")
    assert answer.markers == {"1": 0, "2": 1, "3": 2}
    assert answer.question == "How does measles spread?"


def test_unsafe_link_targets_stay_cited_so_the_fetcher_can_refuse_them() -> None:
    answer = parse_markdown("Click [here](javascript:alert(1)) or open [the leaflet](file:///C:/leaflet.pdf).",
                            origin="pasted", rid="x")
    assert answer.citations == ("javascript:alert(1)", "file:///C:/leaflet.pdf")
    assert answer.text == "Click here [1] or open the leaflet [2]."


def test_markers_without_a_source_are_left_unmapped() -> None:
    answer = parse_markdown("Zinc shortens colds [1][2] and [7].\n\n[1]: https://a.example.org/zinc\n[2]: https://b.example.org/colds",
                            origin="pasted", rid="x")
    assert answer.text == "Zinc shortens colds [1][2] and [7]."
    assert answer.markers == {"1": 0, "2": 1}


def test_an_empty_markdown_answer_is_an_error() -> None:
    with pytest.raises(IngestError, match="empty answer"):
        parse_markdown("  \n\n", origin="pasted", rid="x")
    with pytest.raises(IngestError, match="only a list of sources"):
        parse_markdown("Sources:\n1. https://www.cdc.gov/\n", origin="pasted", rid="x")


# --------------------------------------------------------------------------- JSON


def test_jsonl_batch_skips_the_bad_lines_and_reads_the_rest() -> None:
    result = load_path(FIXTURES / "batch.jsonl")
    assert messages(result) == [
        "batch.jsonl:4: invalid JSON (Expecting ',' delimiter at column 180)",
        "batch.jsonl:6: empty answer in 'response'",
    ]
    assert [r.id for r in result.responses] == ["q001", "q002", "q003", "q006", "q001-2"]
    assert [r.origin for r in result.responses] == [f"batch.jsonl:{n}" for n in (1, 2, 3, 7, 8)]
    first = result.responses[0]
    assert first.model == "gpt-4o-2024-08-06"
    assert first.citations == ("https://journal.chestnet.org/article/S0012-3692(21)01506-3/fulltext",
                               "https://www.ncbi.nlm.nih.gov/books/NBK507708/")
    assert first.markers == {"1": 0, "2": 1}
    assert first.extra == {"question_source": "mayo_clinic"}
    vitamin_d = result.responses[3]
    assert vitamin_d.citations == ("https://ods.od.nih.gov/factsheets/VitaminD-HealthProfessional/",
                                   "https://doi.org/10.1210/jc.2011-0385")


def test_an_answer_without_a_citation_list_cites_the_urls_in_its_text() -> None:
    aspirin = load_path(FIXTURES / "batch.jsonl").responses[2]
    assert aspirin.citations == (
        "https://www.nhs.uk/conditions/reyes-syndrome/",
        "https://www.healthychildren.org/English/health-issues/conditions/fever/Pages/Medications-Used-to-Treat-Fever.aspx",
    )
    assert aspirin.text == ("No. Aspirin should not be given to children or teenagers with a viral illness "
                            "because of the risk of Reye's syndrome [1]. Use paracetamol or ibuprofen instead, see [2].")
    assert aspirin.markers == {"1": 0, "2": 1}


def test_json_array_records_are_located_by_line_and_accept_answer_as_the_text_field() -> None:
    result = load_path(FIXTURES / "answers.json")
    assert [(r.id, r.origin) for r in result.responses] == [("answers-1", "answers.json:2"),
                                                           ("answers-2", "answers.json:11")]
    tetanus = result.responses[1]
    assert tetanus.text.startswith("A booster is advised")
    assert tetanus.citations == ("https://www.cdc.gov/tetanus/hcp/clinical-guidance/",)
    assert messages(result) == ["answers.json:17: 'response' is a list, expected the answer text"]


def test_url_in_text_that_is_also_listed_keeps_the_listed_number() -> None:
    record = {"response": "Use the Wells score [1] (https://www.mdcalc.com/calc/362/wells-criteria-dvt) and D-dimer https://x.org/dd.",
              "citations": ["https://www.mdcalc.com/calc/362/wells-criteria-dvt"]}
    answer = parse_answer_record(record, "pasted:1", "pasted-1")
    assert answer.citations == ("https://www.mdcalc.com/calc/362/wells-criteria-dvt", "https://x.org/dd")
    assert answer.text == "Use the Wells score [1] [1] and D-dimer [2]."
    assert answer.markers == {"1": 0, "2": 1}


@pytest.mark.parametrize(
    ("record", "problem"),
    [
        ({"question": "q"}, "no answer text: expected a 'response', 'answer' or 'text' field (fields: question)"),
        ({"response": 42}, "'response' is a number, expected the answer text"),
        ({"text": "\n \t"}, "empty answer in 'text'"),
        ({"response": "Fine [1].", "citations": 3}, "'citations' are a number, expected a list of URLs"),
        ({"response": "Fine [1].", "citations": ["https://a.org", 17]},
         "citation 2 in 'citations' is a number, expected a URL string"),
        (["response", "citations"], "expected a JSON object, got a list"),
    ],
)
def test_bad_records_say_what_is_wrong(record, problem: str) -> None:
    with pytest.raises(IngestError) as info:
        parse_answer_record(record, "answers.jsonl:3", "answers-3")
    assert str(info.value) == problem


def test_record_id_is_stringified_and_only_scalar_extras_are_kept() -> None:
    answer = parse_answer_record(
        {"id": 12, "response": "Ok [1].", "citations": [{"url": "https://a.org/x", "title": "A"}],
         "question_source": "reddit", "rating": 4, "meta": {"nested": True}, "tags": ["a"]},
        "pasted", "pasted-1")
    assert answer.id == "12"
    assert answer.citations == ("https://a.org/x",)
    assert answer.extra == {"question_source": "reddit", "rating": 4}


# --------------------------------------------------------------------------- CSV / TSV


def test_csv_with_custom_columns_and_semicolon_citations() -> None:
    result = load_path(FIXTURES / "ed_review.csv", mapping=ED_MAPPING)
    assert [r.id for r in result.responses] == ["ED-14", "ED-15", "ED-18"]
    paracetamol, anaphylaxis, sodium = result.responses
    assert paracetamol.origin == "ed_review.csv row 2"
    assert paracetamol.question == "What is the antidote for paracetamol overdose?"
    assert paracetamol.model == "bing-copilot"
    assert paracetamol.citations == (
        "https://www.ncbi.nlm.nih.gov/books/NBK441917/",
        "https://www.rcem.ac.uk/docs/RCEM%20Guidance/Paracetamol%20overdose.pdf",
    )
    assert paracetamol.markers == {"1": 0, "2": 1}
    assert paracetamol.extra == {"Reviewer": "Dr Okafor"}
    # a quoted answer spanning several lines is one row
    assert "\n\nRepeat after 5 minutes" in anaphylaxis.text
    # a cell holding a JSON list, with a PMID in it
    assert sodium.citations == ("https://www.ncbi.nlm.nih.gov/books/NBK470386/",
                                "https://pubmed.ncbi.nlm.nih.gov/28722978/")
    assert sodium.origin == "ed_review.csv row 6"
    assert messages(result) == [
        "ed_review.csv row 4: empty answer in column 'Model answer'",
        "ed_review.csv row 5: missing column 'Model answer' (the row has 3 of 6 fields)",
    ]


def test_csv_without_the_mapped_answer_column_is_a_usage_error_naming_the_columns() -> None:
    with pytest.raises(IngestError) as info:
        load_path(FIXTURES / "ed_review.csv")
    assert str(info.value) == ("ed_review.csv has no column 'response' (its columns: Case ID, Chatbot, Prompt, "
                               "Model answer, Cited URLs, Reviewer); name the answer column in the column mapping")


def test_tsv_citations_separated_by_spaces_or_commas() -> None:
    result = load_path(FIXTURES / "answers.tsv")
    assert result.skipped == []
    cause, treatment = result.responses
    assert cause.citations == ("https://www.niams.nih.gov/health-topics/gout",
                               "https://www.ncbi.nlm.nih.gov/books/NBK546606/")
    assert treatment.citations == ("https://doi.org/10.1002/acr.24180", "https://www.nice.org.uk/guidance/ng219")
    assert (treatment.id, treatment.origin, treatment.extra) == ("d-02", "answers.tsv row 3", {"specialty": "rheumatology"})


def test_csv_cell_with_broken_json_list_skips_that_row_only(tmp_path: Path) -> None:
    sheet = tmp_path / "rows.csv"
    sheet.write_text('response,citations\n"Fine [1].","[""https://a.org"""\n"Also fine [1].",https://b.org\n', encoding="utf-8")
    result = load_path(sheet)
    assert [r.citations for r in result.responses] == [("https://b.org",)]
    assert messages(result) == ["rows.csv row 2: citations in column 'citations' look like a JSON list but "
                                "are not valid JSON (Expecting ',' delimiter at column 17)"]


# --------------------------------------------------------------------------- files and folders


def test_a_folder_is_read_recursively_in_sorted_order_and_reports_what_it_skipped() -> None:
    result = load_path(FIXTURES / "folder")
    assert [r.origin for r in result.responses] == [
        "cardiology/afib_anticoagulation.md",
        "cardiology/statins.txt",
        "endocrinology/more_answers.ndjson:1",
        "endocrinology/more_answers.ndjson:2",
        "endocrinology/thyroid.json",
        "legacy_export_latin1.txt",
    ]
    assert [r.id for r in result.responses] == ["afib_anticoagulation-1", "statins-1", "thy-2", "thy-3", "thy-1",
                                                "legacy_export_latin1-1"]
    statins = result.responses[1]
    assert statins.citations == ("https://www.nhs.uk/conditions/statins/",
                                 "https://doi.org/10.1016/S0140-6736(22)01545-8")
    assert statins.text.startswith("Statins lower LDL cholesterol by 30-50% depending on dose and agent [1].")
    assert messages(result) == [
        "scanned_guideline.pdf: not read as an answer in a folder (.pdf files beside answers are usually "
        "sources; open the file on its own to audit it)",
    ]


def test_a_latin1_file_is_read_as_windows_1252_and_says_so_not_misread() -> None:
    result = load_path(FIXTURES / "folder" / "legacy_export_latin1.txt")
    (answer,) = result.responses
    assert "Ménière's disease" in answer.text and not result.skipped
    assert result.notes == ["legacy_export_latin1.txt: read as Windows-1252 (not UTF-8)"]


def test_text_that_mixes_utf8_with_stray_bytes_is_still_refused_naming_the_byte(tmp_path: Path) -> None:
    path = tmp_path / "mixed.md"
    path.write_bytes("Ménière's disease [1].\n".encode("utf-8") + b"caf\xe9 \n\n[1]: https://www.nidcd.nih.gov/\n")
    result = load_path(path)
    assert result.responses == [] and "byte 0xe9 on line 2" in result.skipped[0].problem


def test_utf8_with_bom_and_excel_utf16_exports_are_read(tmp_path: Path) -> None:
    (tmp_path / "bom.md").write_bytes("\ufeffMénière's disease [1].\n\n[1]: https://www.nidcd.nih.gov/\n".encode("utf-8"))
    (tmp_path / "excel.tsv").write_bytes("response\tcitations\nCafé au lait spots [1].\thttps://a.org\n".encode("utf-16"))
    result = load_path(tmp_path)
    assert [r.text for r in result.responses] == ["Ménière's disease [1].", "Café au lait spots [1]."]
    assert result.skipped == []


def test_duplicate_ids_across_files_get_a_suffix_and_hidden_files_are_passed_over(tmp_path: Path) -> None:
    for folder in ("a", "b"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / "answer.md").write_text("Rest helps [1].\n\n[1]: https://x.org\n", encoding="utf-8")
    # a record whose own id is what the next suffix would be
    (tmp_path / "a" / "zinc.json").write_text('{"id": "answer-1-2", "response": "Zinc may help."}', encoding="utf-8")
    (tmp_path / ".DS_Store").write_bytes(b"\x00\x00\x00\x01Bud1")
    result = load_path(tmp_path)
    assert [r.id for r in result.responses] == ["answer-1", "answer-1-2", "answer-1-3"]
    assert result.skipped == []


def test_defaults_fill_in_a_missing_question_and_model_only() -> None:
    result = load_path(FIXTURES / "folder", question="Shared question?", model="cli-model")
    by_origin = {r.origin: r for r in result.responses}
    assert by_origin["cardiology/statins.txt"].question == "Shared question?"
    assert by_origin["cardiology/statins.txt"].model == "cli-model"
    assert by_origin["endocrinology/thyroid.json"].question == "What TSH level suggests subclinical hypothyroidism?"
    assert by_origin["endocrinology/thyroid.json"].model == "gpt-4-turbo"


def test_missing_path_and_unknown_extension_are_usage_errors(tmp_path: Path) -> None:
    with pytest.raises(IngestError, match="no such file or folder: .*nowhere.jsonl"):
        load_path(tmp_path / "nowhere.jsonl")
    (tmp_path / "answers.xlsx").write_bytes(b"PK\x03\x04")
    with pytest.raises(IngestError, match=r"cannot read answers.xlsx: unsupported extension '.xlsx'"):
        load_path(tmp_path / "answers.xlsx")


# --------------------------------------------------------------------------- pasted text


def test_pasted_json_object_is_read_in_the_study_format() -> None:
    result = load_text('{"response": "Metformin is first-line [1].", "citations": ["doi:10.2337/dc24-S009"]}',
                       question="First-line drug for T2DM?", model="gpt-4o")
    (answer,) = result.responses
    assert (answer.id, answer.origin) == ("pasted-1", "pasted")
    assert answer.citations == ("https://doi.org/10.2337/dc24-S009",)
    assert (answer.question, answer.model) == ("First-line drug for T2DM?", "gpt-4o")


def test_pasted_markdown_that_starts_with_a_link_is_not_taken_for_json() -> None:
    (answer,) = load_text("[NICE](https://www.nice.org.uk/guidance/ng136) recommends a target below 140/90 mmHg.").responses
    assert answer.text == "NICE [1] recommends a target below 140/90 mmHg."
    assert answer.citations == ("https://www.nice.org.uk/guidance/ng136",)


def test_pasted_json_lines_and_broken_json_are_reported_by_line() -> None:
    result = load_text('{"response": "A [1].", "citations": ["https://a.org"]}\n{"response": "B", citations: []}\n')
    assert [r.id for r in result.responses] == ["pasted-1"]
    assert messages(result) == ["pasted:2: invalid JSON (Expecting property name enclosed in double quotes at column 19)"]


def test_pasting_nothing_is_reported_and_an_unknown_format_is_an_error() -> None:
    assert messages(load_text("   \n")) == ["pasted: empty answer"]
    with pytest.raises(IngestError, match="unknown format 'yaml'"):
        load_text("x", fmt="yaml")


def test_lists_and_notes_without_urls_stay_part_of_the_answer() -> None:
    text = ("Good sources of vitamin D:\n\nSources:\n- Oily fish such as salmon\n- Egg yolks\n\n"
            "[Note]: take supplements with food.")
    answer = parse_markdown(text, origin="pasted", rid="x")
    assert answer.text == text
    assert answer.citations == () and answer.extra == {}


def test_html_anchors_in_an_answer_are_citations_too() -> None:
    answer = parse_markdown('Per the <a href="https://www.cdc.gov/flu/" target="_blank"><b>CDC</b></a>, '
                            'vaccinate yearly; see <a href="/local/page">our page</a>.', origin="pasted", rid="x")
    assert answer.text == "Per the CDC [1], vaccinate yearly; see our page."
    assert answer.citations == ("https://www.cdc.gov/flu/",)
    assert answer.extra == {"unusable_citations": "/local/page"}


def test_citation_cells_split_on_separators_but_not_inside_urls(tmp_path: Path) -> None:
    sheet = tmp_path / "rows.csv"
    sheet.write_text('response,citations\n'
                     'Fine [1][2][3].,"https://a.org/x?ids=1,2,https://b.org/y, www.c.org/z"\n', encoding="utf-8")
    (answer,) = load_path(sheet).responses
    assert answer.citations == ("https://a.org/x?ids=1,2", "https://b.org/y", "https://www.c.org/z")


def test_files_without_any_answer_are_reported(tmp_path: Path) -> None:
    (tmp_path / "empty.json").write_text("[]", encoding="utf-8")
    (tmp_path / "blank.jsonl").write_text("\n\n", encoding="utf-8")
    (tmp_path / "notes.md").write_text("", encoding="utf-8")
    assert messages(load_path(tmp_path)) == [
        "blank.jsonl: no answers: the file holds no JSON records",
        "empty.json: no answers: the JSON list is empty",
        "notes.md: empty answer",
    ]


@pytest.mark.parametrize("delimiter, encoding, said", [
    (";", "cp1252", "separated by semicolons (detected), encoding Windows-1252 (not UTF-8)"),
    ("\t", "utf-8-sig", "separated by tabs (detected), encoding UTF-8 with a byte-order mark"),
    ("|", "utf-16", "separated by pipes (detected), encoding UTF-16"),
    (",", "utf-16-le", "separated by commas (detected), encoding UTF-16 (no byte-order mark)"),
    (",", "utf-8", "separated by commas (detected), encoding UTF-8"),
])
def test_csv_separator_and_encoding_of_spreadsheet_exports_are_sniffed_and_named(tmp_path, delimiter, encoding,
                                                                                  said) -> None:
    d = delimiter
    rows = [f"Prompt{d}LLM Output{d}Refs",
            f'Is café au lait harmful?{d}"Café au lait spots, when six or more, suggest NF1 [1]."{d}https://a.org/nf1',
            f"Second?{d}Naïve T cells mature in the thymus [1].{d}https://b.org/t"]
    path = tmp_path / "batch.csv"
    path.write_bytes(("\r\n".join(rows) + "\r\n").encode(encoding))
    result = load_path(path, mapping=CsvMapping(text_col="LLM Output", citations_col="Refs", question_col="Prompt"))
    assert not result.skipped
    assert [r.text for r in result.responses] == [
        "Café au lait spots, when six or more, suggest NF1 [1].", "Naïve T cells mature in the thymus [1]."]
    assert [r.citations for r in result.responses] == [("https://a.org/nf1",), ("https://b.org/t",)]
    assert result.responses[0].question == "Is café au lait harmful?"
    assert result.notes == [f"batch.csv: read as a table {said}"]


def test_a_text_file_in_a_folder_that_cites_nothing_is_skipped_with_a_message(tmp_path: Path) -> None:
    (tmp_path / "answer.md").write_text("Rest helps [1].\n\n[1]: https://x.org\n", encoding="utf-8")
    (tmp_path / "notes.txt").write_text("Call the lab on Tuesday.\nAsk Sam about the slides.\n", encoding="utf-8")
    result = load_path(tmp_path)
    assert [r.origin for r in result.responses] == ["answer.md"]
    assert messages(result) == ["notes.txt: not read as an answer: it cites no URL (open the file on its own to "
                                "audit it anyway)"]
    # named on its own, the same file is audited as an (uncited) answer
    assert len(load_path(tmp_path / "notes.txt").responses) == 1


def test_a_windows_1252_markdown_answer_is_read_as_a_windows_1252_csv_is_and_says_so(tmp_path):
    path = tmp_path / "cafe.md"
    path.write_bytes("Le café contient de la caféine, environ 80 mg par tasse (https://example.org/cafe).\n"
                     .encode("cp1252"))
    result = load_path(path)
    (answer,) = result.responses
    assert "café" in answer.text and "caféine" in answer.text and not result.skipped
    assert answer.citations == ("https://example.org/cafe",)
    assert result.notes == ["cafe.md: read as Windows-1252 (not UTF-8)"]
