"""The offline PARSE step: what statements a user sees, their classes and their intended sources."""
from __future__ import annotations

import pytest

from sourcecheckup.models import Response, Statement, StatementCategory
from sourcecheckup.parse import (
    BuiltinParser,
    Parser,
    ParserSpecError,
    make_parser,
    register_parser,
    registered_parser_kinds,
)
from sourcecheckup.parse.classify import classify_sentence
from sourcecheckup.parse.markup import strip_markers
from sourcecheckup.parse.segment import split_sentences
from tests.support.paths import FIXTURES as TEST_FIXTURES

FIXTURES = TEST_FIXTURES / "parse"

INF = StatementCategory.INFORMATIVE
ACK = StatementCategory.ACKNOWLEDGEMENT
QUE = StatementCategory.QUESTION
DIS = StatementCategory.DISCLAIMER
REF = StatementCategory.REFUSAL


def parse(text: str, citations: tuple[str, ...] = ("https://a.org/1", "https://b.org/2", "https://c.org/3"),
          markers: dict[str, int] | None = None, **options) -> list[Statement]:
    response = Response(id="r1", text=text, citations=citations, markers=markers or {})
    return BuiltinParser(**options).parse_sync(response)


def seen(statements: list[Statement]) -> list[tuple[str, StatementCategory, tuple[int, ...]]]:
    return [(s.text, s.category, s.cited) for s in statements]


def texts(statements: list[Statement]) -> list[str]:
    return [s.text for s in statements]


def assert_spans_cover_sentences(text: str, statements: list[Statement]) -> None:
    for position, statement in enumerate(statements):
        assert statement.index == position
        assert 0 <= statement.start < statement.end <= len(text)
        span = text[statement.start:statement.end]
        assert span == span.strip(), f"span of {statement.text!r} has untrimmed space"
    ends = [s.end for s in statements]
    assert ends == sorted(ends)


# ------------------------------------------------------------------------------ whole answers

def test_markdown_answer_gives_the_statements_a_user_would_see() -> None:
    text = (FIXTURES / "influenza_markdown.md").read_text()
    citations = ("https://cdc.gov/flu/about/index.html", "https://cdc.gov/flu/about/burden/index.html",
                 "https://nhs.uk/conditions/flu")
    statements = parse(text, citations=citations)
    assert seen(statements) == [
        ("Great question!", ACK, ()),
        ("Influenza (flu) is a contagious respiratory illness caused by influenza viruses.", INF, (0,)),
        ("In the U.S., approx. 8% of the population gets sick each flu season.", INF, (1,)),
        ("Dr. Grohskopf et al. reported similar rates in adults.", INF, (0, 1)),
        ("Common symptoms include: fever or feeling feverish", INF, (0,)),
        ("Common symptoms include: cough and sore throat", INF, ()),
        ("Common symptoms include: muscle aches and fatigue.", INF, ()),
        ("These usually last 3–7 days.", INF, (2,)),
        ("Oseltamivir 75 mg twice daily for 5 days is recommended for adults (e.g., those at high risk).",
         INF, (1, 2)),
        ("For children, the dose is 3.5 mg/kg per dose, max. 75 mg.", INF, (0, 1, 2)),
        ("Seek emergency care if you have chest pain or trouble breathing.", INF, ()),
        ("If your symptoms persist, consult your doctor.", DIS, ()),
        ("This is not medical advice.", DIS, ()),
        ("Would you like to know more about the flu vaccine?", QUE, ()),
    ]
    assert_spans_cover_sentences(text, statements)
    spans = {s.text: text[s.start:s.end] for s in statements}
    assert spans["In the U.S., approx. 8% of the population gets sick each flu season."] == \
        "In the U.S., approx. 8% of the population gets sick each flu season.[2]"
    assert spans["Common symptoms include: fever or feeling feverish"] == "Fever or feeling feverish [1]"


def test_footnote_answer_with_table_and_nested_list() -> None:
    text = (FIXTURES / "metformin_footnotes.md").read_text()
    citations = ("https://accessdata.fda.gov/metformin-label.pdf", "https://nhs.uk/medicines/metformin")
    statements = parse(text, citations=citations, markers={"^label": 0, "^dose": 1})
    assert seen(statements) == [
        ("Sure, here is an overview of metformin:", ACK, ()),
        ("Metformin is a first-line medication for type 2 diabetes mellitus and works mainly by lowering "
         "hepatic glucose production.", INF, (0,)),
        ("The usual starting dose is 500 mg once or twice daily with meals, i.e. with breakfast and dinner.",
         INF, (1,)),
        ("Common side effects include: nausea", INF, ()),
        ("Common side effects include: diarrhoea", INF, ()),
        ("diarrhoea: usually mild and transient", INF, ()),
        ("Common side effects include: vitamin B12 deficiency with long-term use.", INF, (1,)),
        ("Drug: Metformin; Starting dose: 500 mg", INF, (1,)),
        ("Drug: Glipizide; Starting dose: 5 mg", INF, ()),
        ("As an AI, I am not a doctor.", DIS, ()),
        ("I hope this helps!", ACK, ()),
    ]
    assert_spans_cover_sentences(text, statements)


def test_refusal_answer_keeps_its_facts_and_its_bare_url_citation() -> None:
    text = (FIXTURES / "refusal_plain.txt").read_text()
    statements = parse(text, citations=("https://nhs.uk/medicines/paracetamol-for-children",))
    assert seen(statements) == [
        ("I'm sorry, but I can't provide specific dosing advice for your child.", REF, ()),
        ("Dosing of paracetamol in children depends on weight, typically 15 mg/kg every 4–6 hours, "
         "with no more than 4 doses in 24 hours.", INF, (0,)),
        ("Please talk to your pediatrician or pharmacist.", DIS, ()),
    ]
    assert_spans_cover_sentences(text, statements)


def test_answer_that_only_refuses_has_no_informative_statement() -> None:
    statements = parse("I'm unable to help with that. I can't provide medical advice.")
    assert seen(statements) == [("I'm unable to help with that.", REF, ()),
                                ("I can't provide medical advice.", REF, ())]
    assert not any(s.informative for s in statements)


# ------------------------------------------------------------------------------ sentence splitting

def test_abbreviations_do_not_end_a_sentence() -> None:
    text = ("NSAIDs, e.g. ibuprofen, and analgesics, i.e. paracetamol, relieve pain vs. placebo. "
            "Dr. Lee and Smith et al. (2020) found approx. 30% fewer visits in the U.S. population. "
            "Take 1 tab. p.o. with food.")
    assert texts(parse(text)) == [
        "NSAIDs, e.g. ibuprofen, and analgesics, i.e. paracetamol, relieve pain vs. placebo.",
        "Dr. Lee and Smith et al. (2020) found approx. 30% fewer visits in the U.S. population.",
        "Take 1 tab. p.o. with food.",
    ]


def test_decimals_doses_and_percentages_stay_inside_one_sentence() -> None:
    text = ("Give 2.5 mg twice daily, or 0.5 mL/kg (max. 10 mL) in children. "
            "About 28.4% of male and 1.2% of female C282Y homozygotes develop iron overload. "
            "HbA1c ≥ 6.5% confirms diabetes.")
    assert texts(parse(text)) == [
        "Give 2.5 mg twice daily, or 0.5 mL/kg (max. 10 mL) in children.",
        "About 28.4% of male and 1.2% of female C282Y homozygotes develop iron overload.",
        "HbA1c ≥ 6.5% confirms diabetes.",
    ]


def test_capitalised_word_after_eg_stays_in_the_sentence() -> None:
    assert texts(parse("Use an NSAID, e.g. Ibuprofen, for pain. Rest helps.")) == [
        "Use an NSAID, e.g. Ibuprofen, for pain.", "Rest helps."]


def test_species_abbreviation_at_line_start_is_not_a_list_item() -> None:
    assert texts(parse("E. coli infections are common.\nS. aureus causes boils.")) == [
        "E. coli infections are common.", "S. aureus causes boils."]


def test_bullet_item_with_two_sentences_gives_two_statements() -> None:
    text = "- Ibuprofen reduces fever and pain [1]. It can irritate the stomach [2].\n- Paracetamol is gentler."
    assert seen(parse(text)) == [("Ibuprofen reduces fever and pain.", INF, (0,)),
                                 ("It can irritate the stomach.", INF, (1,)),
                                 ("Paracetamol is gentler.", INF, ())]


def test_numbered_list_items_are_statements_without_their_numbers() -> None:
    text = "Steps to take:\n\n1. Rest in bed for several days.\n2) Drink plenty of fluids to avoid dehydration.\n"
    assert texts(parse(text)) == ["Rest in bed for several days.", "Drink plenty of fluids to avoid dehydration."]


def test_headings_are_dropped_and_give_context_to_list_fragments() -> None:
    text = "# Influenza\n\n## Symptoms\n- Fever\n- Cough\n\n**Treatment:**\n\nAntivirals shorten illness by about one day."
    assert texts(parse(text)) == ["Symptoms: fever", "Symptoms: cough", "Antivirals shorten illness by about one day."]


def test_lead_in_is_kept_with_each_fragment_of_its_list_and_not_repeated_alone() -> None:
    text = "Common side effects of metformin include:\n- Nausea\n- Diarrhoea\n- Lactic acidosis, which is rare but serious."
    assert texts(parse(text)) == [
        "Common side effects of metformin include: nausea",
        "Common side effects of metformin include: diarrhoea",
        "Common side effects of metformin include: lactic acidosis, which is rare but serious.",
    ]


def test_full_sentence_items_do_not_get_the_lead_in() -> None:
    text = "Treatment options:\n- Ibuprofen 400 mg every 6 hours reduces fever in adults.\n- Fluids"
    assert texts(parse(text)) == ["Ibuprofen 400 mg every 6 hours reduces fever in adults.",
                                  "Treatment options: fluids"]


def test_lead_in_context_can_be_switched_off() -> None:
    text = "Symptoms include:\n- Fever\n- Cough"
    assert texts(parse(text, lead_in_context=False)) == ["Fever", "Cough"]


def test_list_without_bullets_after_a_lead_in_gives_one_statement_per_line() -> None:
    assert texts(parse("Warning signs:\nConfusion\nBlue lips")) == ["Warning signs: confusion",
                                                                   "Warning signs: blue lips"]


def test_short_lines_without_punctuation_are_separate_statements() -> None:
    assert texts(parse("Fever\nCough\nFatigue")) == ["Fever", "Cough", "Fatigue"]


def test_hard_wrapped_paragraph_is_joined_into_one_sentence() -> None:
    text = ("Hypertension is diagnosed when blood pressure is at least 130/80 mm Hg on two\n"
            "separate occasions [1]. Lifestyle changes come first.")
    statements = parse(text)
    assert seen(statements) == [
        ("Hypertension is diagnosed when blood pressure is at least 130/80 mm Hg on two separate occasions.",
         INF, (0,)),
        ("Lifestyle changes come first.", INF, ())]
    assert text[statements[0].start:statements[0].end].endswith("occasions [1].")


def test_reference_section_and_footnote_definitions_are_not_statements() -> None:
    text = ("Zinc may shorten colds [1].\n\nReferences\n1. https://a.org/1\n2. [NIH](https://b.org/2)\n\n"
            "[^1]: https://a.org/1\n[1]: https://a.org/1")
    assert texts(parse(text)) == ["Zinc may shorten colds."]


def test_markdown_emphasis_links_and_code_are_removed_from_statement_text() -> None:
    text = "**Note:** *Do not* take __two__ NSAIDs together; see the [FDA label](https://c.org/3) for `ibuprofen`."
    assert seen(parse(text)) == [
        ("Note: Do not take two NSAIDs together; see the FDA label for ibuprofen.", INF, (2,))]


def test_horizontal_rules_and_code_fences_are_skipped() -> None:
    text = "Vitamin D supports bone health.\n\n---\n\n```\nprint('x')\n```\nCalcium matters too."
    assert texts(parse(text)) == ["Vitamin D supports bone health.", "Calcium matters too."]


def test_split_sentences_returns_spans_of_sentences_and_items() -> None:
    text = "Hi there. Flu is viral.\n\n# Title\n- one item\n- two items"
    assert [text[a:b] for a, b in split_sentences(text)] == ["Hi there.", "Flu is viral.", "one item", "two items"]


def test_empty_answer_has_no_statements() -> None:
    assert parse("") == []
    assert parse("   \n\n  ") == []
    assert split_sentences("") == []


# ------------------------------------------------------------------------------ markers

@pytest.mark.parametrize("marker", ["[1]", "[2][3]", "[1, 2]", "[1-3]", "[1–3]", "[^note]"])
def test_marker_forms_are_stripped_and_mapped(marker: str) -> None:
    expected = {"[1]": (0,), "[2][3]": (1, 2), "[1, 2]": (0, 1), "[1-3]": (0, 1, 2),
                "[1–3]": (0, 1, 2), "[^note]": (2,)}[marker]
    markers = {"1": 0, "2": 1, "3": 2, "^note": 2}
    assert strip_markers(f"Zinc shortens colds {marker}.", markers) == ("Zinc shortens colds.", expected)


def test_marker_after_the_final_period_belongs_to_the_preceding_sentence() -> None:
    text = "Flu causes fever. [1] It spreads by droplets.[2] Vaccines help [3]."
    statements = parse(text)
    assert seen(statements) == [("Flu causes fever.", INF, (0,)),
                                ("It spreads by droplets.", INF, (1,)),
                                ("Vaccines help.", INF, (2,))]
    assert [text[s.start:s.end] for s in statements] == [
        "Flu causes fever. [1]", "It spreads by droplets.[2]", "Vaccines help [3]."]


def test_marker_on_its_own_line_attaches_to_the_sentence_before() -> None:
    text = "Measles is highly contagious.\n[2]"
    statements = parse(text)
    assert seen(statements) == [("Measles is highly contagious.", INF, (1,))]
    assert text[statements[0].start:statements[0].end] == text


def test_unknown_markers_are_removed_but_cite_nothing() -> None:
    assert seen(parse("Aspirin thins blood [7][^missing].", citations=("https://a.org/1",))) == [
        ("Aspirin thins blood.", INF, ())]


def test_brackets_that_are_not_markers_stay_in_the_text() -> None:
    assert strip_markers("He said it was 'mild' [sic] [1].", {"1": 0}) == ("He said it was 'mild' [sic].", (0,))


def test_repeated_markers_are_cited_once_in_order_of_appearance() -> None:
    assert strip_markers("Both [2] drugs [1][2] work [2].", {"1": 0, "2": 1}) == ("Both drugs work.", (1, 0))


def test_response_markers_decide_what_a_label_means() -> None:
    statements = parse("Statins lower LDL [a]. Exercise helps [1].", citations=("https://a.org/1", "https://b.org/2"),
                       markers={"a": 1, "1": 0})
    assert seen(statements) == [("Statins lower LDL.", INF, (1,)), ("Exercise helps.", INF, (0,))]


def test_numeric_markers_map_to_citation_order_when_the_response_names_none() -> None:
    assert seen(parse("Statins lower LDL [2].", citations=("https://a.org/1", "https://b.org/2"))) == [
        ("Statins lower LDL.", INF, (1,))]


def test_inline_link_to_a_cited_url_counts_as_a_citation() -> None:
    text = "Per the [CDC guidance](https://www.b.org/2/), adults need one dose. See https://c.org/3."
    statements = parse(text)
    assert seen(statements) == [("Per the CDC guidance, adults need one dose.", INF, (1, 2))]
    assert text[statements[0].start:statements[0].end] == text


def test_chatgpt_style_source_markers_are_stripped() -> None:
    assert seen(parse("Zinc shortens colds【2†source】.")) == [("Zinc shortens colds.", INF, (1,))]


# ------------------------------------------------------------------------------ classification

@pytest.mark.parametrize("sentence", [
    "Great question!",
    "Thanks for asking about metformin.",
    "I hope this helps!",
    "Sure, here is what you need to know about type 2 diabetes:",
    "Certainly!",
    "Let me know if you have any other questions.",
    "I'm sorry to hear you are not feeling well.",
    "Stay healthy!",
])
def test_conversational_lines_are_acknowledgements(sentence: str) -> None:
    assert classify_sentence(sentence) is ACK


@pytest.mark.parametrize("sentence", [
    "Would you like to know more?",
    "Is there anything else I can help with?",
])
def test_questions_are_questions(sentence: str) -> None:
    assert classify_sentence(sentence) is QUE


@pytest.mark.parametrize("sentence", [
    "Please consult your doctor.",
    "If your symptoms worsen or do not improve within a few days, consult your doctor.",
    "Always consult your healthcare provider before starting any new medication or supplement.",
    "This information is not a substitute for professional medical advice.",
    "This is not medical advice.",
    "As an AI, I'm not a doctor.",
    "This information is for educational purposes only.",
    "Please seek medical attention right away.",
    "Seek emergency care if your symptoms get worse.",
    "It's important to talk to your doctor about your specific situation and medical history.",
])
def test_pure_referrals_and_caveats_are_disclaimers(sentence: str) -> None:
    assert classify_sentence(sentence) is DIS


@pytest.mark.parametrize("sentence", [
    "I can't provide medical advice.",
    "I'm unable to help with that.",
    "I'm sorry, but I can't help with that request.",
    "I cannot diagnose your condition.",
])
def test_refusals_are_refusals(sentence: str) -> None:
    assert classify_sentence(sentence) is REF


@pytest.mark.parametrize("sentence", [
    "Patients should consult a cardiologist before starting sotalol if they have long QT syndrome.",
    "Seek emergency care if you have chest pain.",
    "Consult your doctor before taking ibuprofen if you have kidney disease.",
    "Your doctor may prescribe metformin 500 mg twice daily.",
    "Metformin is not a substitute for insulin in type 1 diabetes.",
    "I can't diagnose you, but a fever above 38 °C usually indicates an infection.",
    "Of course, metformin lowers blood glucose.",
    "Pregnant women should not take isotretinoin.",
    "Ibuprofen can cause stomach ulcers [1].",
])
def test_referral_or_refusal_words_around_medical_facts_stay_informative(sentence: str) -> None:
    assert classify_sentence(sentence) is INF


# ------------------------------------------------------------------------------ registry

async def test_builtin_parser_parses_asynchronously_and_records_its_version() -> None:
    parser = make_parser()
    assert isinstance(parser, Parser)
    assert (parser.id, parser.version) == ("builtin", "builtin-1")
    statements = await parser.parse(Response(id="r", text="Flu is viral [1].", citations=("https://a.org",)))
    assert seen(statements) == [("Flu is viral.", INF, (0,))]


def test_unknown_parser_spec_lists_the_known_kinds() -> None:
    with pytest.raises(ValueError, match=r"unknown parser 'nonsense:x'.*builtin"):
        make_parser("nonsense:x")
    with pytest.raises(ParserSpecError, match="takes no argument"):
        make_parser("builtin:gpt")
    with pytest.raises(ParserSpecError, match="no option"):
        make_parser("builtin", temperature=0)


def test_registered_parser_is_built_from_its_spec() -> None:
    class EchoParser:
        id = "echo"
        version = "echo-1"

        def __init__(self, model: str, prefix: str = "") -> None:
            self.model, self.prefix = model, prefix

        async def parse(self, response: Response) -> list[Statement]:
            return [Statement(index=0, text=self.prefix + response.text)]

    register_parser("echo-test", lambda argument, **options: EchoParser(argument, **options))
    parser = make_parser("echo-test:tiny-model", prefix="> ")
    assert "echo-test" in registered_parser_kinds()
    assert isinstance(parser, EchoParser) and parser.model == "tiny-model" and parser.prefix == "> "


def test_plain_text_heading_line_is_not_a_statement() -> None:
    text = "Overview\n\nFlu is a viral infection.\n\nTreatment\n- Rest\n\nStay healthy"
    assert seen(parse(text)) == [("Flu is a viral infection.", INF, ()), ("Treatment: rest", INF, ()),
                                 ("Stay healthy", ACK, ())]


def test_one_line_answer_without_punctuation_is_kept() -> None:
    assert texts(parse("No, antibiotics do not treat viral infections")) == [
        "No, antibiotics do not treat viral infections"]


def test_millisecond_unit_ends_a_sentence() -> None:
    assert texts(parse("Stop the drug if the QTc exceeds 500 ms. The risk of torsades rises.")) == [
        "Stop the drug if the QTc exceeds 500 ms.", "The risk of torsades rises."]


@pytest.mark.parametrize("sentence,expected", [
    ("Always consult your doctor or a genetic counsellor before acting on genetic test results.",
     StatementCategory.DISCLAIMER),
    ("Genetic testing for HFE C282Y is recommended for first-degree relatives.",
     StatementCategory.INFORMATIVE),
])
def test_a_referral_about_your_own_test_results_is_a_disclaimer_not_a_claim(sentence, expected):
    assert classify_sentence(sentence) is expected


def test_navigation_and_framing_lines_are_not_claims_and_leave_no_stray_dot() -> None:
    text = ("Short answer: Yes, but with care. Ibuprofen can raise blood pressure in people with hypertension [1].\n\n"
            "See also the [summary page](https://a.org/s) and this fact sheet: https://b.org/f.\n\n"
            "For more information, see the [NHS page](https://nhs.uk/x). "
            "Ibuprofen raises blood pressure, see https://c.org/y. "
            "Summary: ibuprofen raises blood pressure in hypertension.")
    got = seen(parse(text))
    assert ("Short answer: Yes, but with care.", ACK, ()) in got
    assert ("See also the summary page and this fact sheet.", ACK, ()) in got   # no "sheet:."
    assert ("For more information, see the NHS page.", ACK, ()) in got
    assert ("Ibuprofen raises blood pressure.", INF, ()) in got                 # no "pressure, see."
    # a framed line that carries a claim stays a claim
    assert ("Summary: ibuprofen raises blood pressure in hypertension.", INF, ()) in got
