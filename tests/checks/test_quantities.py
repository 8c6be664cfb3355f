"""The claim-quantity checker: a statement's numbers against the numbers of its evidence.

Every check has a matched case and a contradicted case (a realistic near miss), so a checker
that called everything "matched", or everything "contradicted", fails here.
"""
from __future__ import annotations

import re

import pytest

from sourcecheckup.checks.quantities import Quantity, QuantityFinding, compare_quantities, describe, extract_quantities

IBUPROFEN_PAGE = ("Adults can take ibuprofen 3 times a day. With a prescription, the maximum is "
                  "3,200mg a day; without a prescription, do not take more than 1,200mg in 24 hours.")
OMEPRAZOLE_PAGE = ("Omeprazole is usually taken once a day, in the morning. The usual adult dose for "
                   "heartburn is 20 mg a day for 4 weeks.")
LISINOPRIL_PAGE = ("The usual starting dose of lisinopril for high blood pressure is 10 mg once a day. "
                   "The maximum dose is 80 mg a day.")
HFE_PAGE = ("Hereditary haemochromatosis is an inherited disorder of iron metabolism. "
            "In a large population cohort, iron-overload-related disease developed in 28.4% of male "
            "C282Y homozygotes and in 1.2% of female C282Y homozygotes.")


def sentences(page: str) -> list[str]:
    return [s for s in re.split(r"(?<=[.!?])\s+", page) if s]


def statuses(statement: str, page: str) -> list[str]:
    return [f.status for f in compare_quantities(statement, sentences(page))]


# (id, statement, evidence page, expected status of every statement quantity)
CASES = [
    # --- the issue's own cases -----------------------------------------------------------
    ("ibuprofen_otc_doubled", "Without a prescription, adults can take up to 2,400mg of ibuprofen "
     "in 24 hours.", IBUPROFEN_PAGE, "contradicted"),
    ("ibuprofen_otc_right", "Without a prescription, adults can take up to 1,200 mg of ibuprofen "
     "a day.", IBUPROFEN_PAGE, "matched"),
    ("ibuprofen_prescription_grams", "up to 2.4 g of ibuprofen a day with a prescription",
     "with a prescription you may take up to 2,400 mg a day", "matched"),
    ("ibuprofen_prescription_grams_wrong", "up to 3.2 g of ibuprofen a day with a prescription",
     "with a prescription you may take up to 2,400 mg a day", "contradicted"),
    ("omeprazole_dose_doubled", "The usual adult dose of omeprazole for heartburn is 40 mg a day.",
     OMEPRAZOLE_PAGE, "contradicted"),
    ("omeprazole_dose_and_duration", "For heartburn, adults usually take 20mg of omeprazole daily "
     "for four weeks.", OMEPRAZOLE_PAGE, "matched"),
    ("omeprazole_duration_wrong", "Adults usually take omeprazole for heartburn for eight weeks.",
     OMEPRAZOLE_PAGE, "contradicted"),
    ("omeprazole_frequency_wrong", "Omeprazole is usually taken three times a day.",
     OMEPRAZOLE_PAGE, "contradicted"),
    ("omeprazole_frequency_once_daily", "Omeprazole is usually taken once daily.",
     OMEPRAZOLE_PAGE, "matched"),
    ("lisinopril_maximum_halved", "The maximum dose of lisinopril is 40 mg a day.",
     LISINOPRIL_PAGE, "contradicted"),
    ("lisinopril_maximum_right", "The maximum dose of lisinopril is 80 mg a day.",
     LISINOPRIL_PAGE, "matched"),
    ("lisinopril_start", "Lisinopril is usually started at 10 mg once daily", LISINOPRIL_PAGE,
     "matched"),
    ("lisinopril_start_wrong", "Lisinopril is usually started at 20 mg a day",
     "The usual starting dose of lisinopril for high blood pressure is 10 mg a day. "
     "The maximum dose is 80 mg a day.", "contradicted"),
    ("sertraline_days_vs_weeks", "Sertraline usually works fully within 3 days.",
     "It can take 4 to 6 weeks to feel the full benefit.", "contradicted"),
    ("sertraline_weeks", "Sertraline can take 4 to 6 weeks to work fully.",
     "It can take 4 to 6 weeks to feel the full benefit.", "matched"),
    ("paracetamol_tablets_not_grams", "Adults can safely take up to 8 g of paracetamol in 24 hours.",
     "Do not take more than 8 tablets (4g) in 24 hours.", "contradicted"),
    ("paracetamol_grams", "Adults can take up to 4 g of paracetamol in 24 hours.",
     "Do not take more than 8 tablets (4g) in 24 hours.", "matched"),
    ("aspree_per_day", "ASPREE gave 100 mg of aspirin daily",
     "participants received 100 mg of enteric-coated aspirin per day", "matched"),
    ("aspree_per_day_wrong", "ASPREE gave 300 mg of aspirin daily",
     "participants received 100 mg of enteric-coated aspirin per day", "contradicted"),
    ("hfe_per_cent", "28.4% of male and 1.2% of female HFE C282Y homozygotes have iron-overload "
     "disease", "In the cohort 28.4 per cent of male and 1.2 per cent of female homozygotes had "
     "iron-overload disease.", "matched"),
    ("hfe_page", "28.4% of male and 1.2% of female HFE C282Y homozygotes have iron-overload "
     "disease", HFE_PAGE, "matched"),
    ("hfe_sexes_swapped", "1.2% of male and 28.4% of female HFE C282Y homozygotes have "
     "iron-overload disease", HFE_PAGE, "contradicted"),
    ("bp_target", "Target blood pressure is below 130/80 mm Hg",
     "aim for a blood pressure under 130/80 mmHg", "matched"),
    ("bp_target_wrong", "Target blood pressure is below 130/80 mm Hg",
     "aim for a blood pressure below 140/90 mmHg", "contradicted"),
    ("levothyroxine_half_hour", "Wait half an hour after taking levothyroxine before breakfast",
     "wait 30 to 60 minutes", "matched"),
    ("levothyroxine_half_hour_too_short", "Wait half an hour after taking levothyroxine before "
     "breakfast", "wait at least 60 minutes", "contradicted"),
    ("one_in_ten_thousand_space", "The condition affects about 1 in 10,000 people",
     "It affects 1 in 10 000 people.", "matched"),
    ("one_in_ten_thousand_vs_thousand", "The condition affects about 1 in 10,000 people",
     "It affects 1 in 1,000 people.", "contradicted"),
    ("amoxicillin_mg_per_kg_day", "80-90 mg/kg/day of amoxicillin", "80 to 90 mg/kg per day",
     "matched"),
    ("amoxicillin_mg_per_kg_day_low", "80-90 mg/kg/day of amoxicillin", "40 to 45 mg/kg/day",
     "contradicted"),
    # --- number forms ----------------------------------------------------------------------
    ("thousands_space", "The trial enrolled 2400 adults.", "In all, 2 400 adults were enrolled.",
     "matched"),
    ("thousands_space_wrong", "The trial enrolled 4200 adults.", "In all, 2 400 adults were "
     "enrolled.", "contradicted"),
    ("thousands_dots_unambiguous", "About 1,200,000 people have it.",
     "Around 1.200.000 people have it.", "matched"),
    ("lancet_decimal", "Mortality was 12.4% with the drug.", "Mortality was 12\u00b74% with the drug.",
     "matched"),
    ("lancet_decimal_wrong", "Mortality was 21.4% with the drug.", "Mortality was 12\u00b74% with "
     "the drug.", "contradicted"),
    ("range_en_dash", "Take 50 to 100 mg of sumatriptan.", "The dose of sumatriptan is 50\u2013100 mg.",
     "matched"),
    ("range_en_dash_wrong", "Take 25 to 50 mg of sumatriptan.", "The dose of sumatriptan is "
     "50\u2013100 mg.", "contradicted"),
    ("between_and", "Symptoms start within 30 to 45 minutes.", "Symptoms start between 30 and 45 "
     "minutes after the dose.", "matched"),
    ("between_and_wrong", "Symptoms start within 10 to 15 minutes.", "Symptoms start between 30 "
     "and 45 minutes after the dose.", "contradicted"),
    ("point_inside_range", "A typical dose of sertraline is 50 mg a day.", "Sertraline is taken "
     "at 25 to 100 mg a day.", "matched"),
    ("point_outside_range", "A typical dose of sertraline is 150 mg a day.", "Sertraline is taken "
     "at 25 to 100 mg a day.", "contradicted"),
    ("words_duration", "A course of antibiotics lasts seven days.", "The antibiotic course lasts "
     "7 days.", "matched"),
    ("words_duration_wrong", "A course of antibiotics lasts five days.", "The antibiotic course "
     "lasts 7 days.", "contradicted"),
    ("a_week_is_seven_days", "Keep taking it for a week.", "Keep taking it for 7 days.", "matched"),
    ("a_week_is_not_three_days", "Keep taking it for a week.", "Keep taking it for 3 days.",
     "contradicted"),
    ("rate_person_years", "Incidence is 3 to 10 per 100,000 person-years.", "The incidence was 3 "
     "to 10 per 100 000 person-years.", "matched"),
    ("rate_per_million_converts", "Incidence is 30 to 100 per million person-years.",
     "The incidence was 3 to 10 per 100,000 person-years.", "matched"),
    ("rate_per_million_wrong", "Incidence is 3 to 10 per million person-years.",
     "The incidence was 3 to 10 per 100,000 person-years.", "contradicted"),
    ("rate_per_thousand_equals", "It occurs in 0.5 per 1,000 live births.", "It occurs in 50 per "
     "100,000 live births.", "matched"),
    ("percent_rounding", "About 28% of men are affected.", "Of the men, 28.4% were affected.",
     "matched"),
    ("percent_rounding_is_not_a_wider_gap", "28% of men are affected.", "Of the men, 29.4% were "
     "affected.", "contradicted"),
    ("percent_word", "Vaccination cut hospital admissions by 25 percent.", "Hospital admissions "
     "fell by 25% after vaccination.", "matched"),
    ("fold", "Smoking raises the risk threefold.", "Smoking raised the risk 3-fold.", "matched"),
    ("fold_wrong", "Smoking raises the risk threefold.", "Smoking raised the risk 2-fold.",
     "contradicted"),
    # --- conversions ---------------------------------------------------------------------
    ("micrograms_to_mg", "Take 0.4 mg of folic acid a day.", "Take 400 micrograms of folic acid "
     "a day.", "matched"),
    ("micrograms_to_mg_wrong", "Take 4 mg of folic acid a day.", "Take 400 micrograms of folic "
     "acid a day.", "contradicted"),
    ("micro_sign", "Adults need 10 mcg of vitamin D a day.", "Adults need 10 \u00b5g of vitamin D "
     "a day.", "matched"),
    ("litres", "Drink 1.5 L of fluid a day.", "Aim to drink 1,500 ml of fluid a day.", "matched"),
    ("litres_wrong", "Drink 2.5 L of fluid a day.", "Aim to drink 1,500 ml of fluid a day.",
     "contradicted"),
    ("hours_in_minutes", "The effect starts after 90 minutes.", "The effect starts after 1.5 hours.",
     "matched"),
    ("weeks_in_days", "Stop 14 days before surgery.", "Stop 2 weeks before surgery.", "matched"),
    ("weeks_in_days_wrong", "Stop 7 days before surgery.", "Stop 2 weeks before surgery.",
     "contradicted"),
    ("year_in_months", "Protection lasts 12 months.", "Protection lasts a year.", "matched"),
    ("iu_given_by_the_source", "Adults should take 400 IU of vitamin D a day.",
     "Vitamin D supplements contain 10 micrograms (400 IU) a dose. Adults should take 10 "
     "micrograms of vitamin D a day.", "matched"),
    ("iu_given_by_the_source_wrong", "Adults should take 1,000 IU of vitamin D a day.",
     "Vitamin D supplements contain 10 micrograms (400 IU) a dose. Adults should take 10 "
     "micrograms of vitamin D a day.", "contradicted"),
    ("mmhg_spelling", "Treat when blood pressure is above 140/90 mmHg.", "Treatment is offered "
     "when blood pressure is over 140/90 mm Hg.", "matched"),
    ("bp_words", "Aim for a blood pressure below 130/80.", "Aim for systolic below 130 and "
     "diastolic below 80 mm Hg.", "matched"),
    ("bp_words_wrong", "Aim for a blood pressure below 120/70.", "Aim for systolic below 130 and "
     "diastolic below 80 mm Hg.", "contradicted"),
    ("mmol", "Fasting glucose of 7.0 mmol/L or more suggests diabetes.", "A fasting glucose of "
     "7.0 mmol/l or more suggests diabetes.", "matched"),
    ("mmol_wrong", "Fasting glucose of 6.0 mmol/L or more suggests diabetes.", "A fasting glucose "
     "of 7.0 mmol/l or more suggests diabetes.", "contradicted"),
    # --- bounds ----------------------------------------------------------------------------
    ("up_to_vs_no_more_than", "Adults can take up to 4 g of paracetamol a day.", "Adults should "
     "take no more than 4 g of paracetamol a day.", "matched"),
    ("up_to_vs_maximum", "Adults can take up to 4 g of paracetamol a day.", "The maximum daily "
     "dose of paracetamol for adults is 4 g.", "matched"),
    ("up_to_doubled", "Adults can take up to 8 g of paracetamol a day.", "Adults can take up to "
     "4 g of paracetamol a day.", "contradicted"),
    ("not_exceed", "Do not exceed 3 g of paracetamol a day.", "Never take more than 3 g of "
     "paracetamol a day.", "matched"),
    ("at_least", "Leave at least 4 hours between doses.", "Leave a minimum of 4 hours between "
     "doses.", "matched"),
    ("at_least_wrong", "Leave at least 2 hours between doses.", "Leave at least 4 hours between "
     "doses.", "contradicted"),
    ("upper_vs_lower", "Exercise for at most 150 minutes a week.", "Exercise for at least 150 "
     "minutes a week.", "contradicted"),
    ("symbols", "Treat if LDL \u2265 4.9 mmol/L.", "Treatment is advised if LDL >= 4.9 mmol/L.",
     "matched"),
    ("symbols_wrong", "Treat if LDL \u2264 4.9 mmol/L.", "Treatment is advised if LDL >= 4.9 mmol/L.",
     "contradicted"),
    ("over_vs_more_than", "It is given to people over 65.", "It is offered to people older than 65.",
     "matched"),
    ("over_vs_under", "It is given to people over 65.", "It is offered to people under 65.",
     "contradicted"),
    ("point_above_maximum", "Adults take 6 g of paracetamol a day.", "Adults should take no more "
     "than 4 g of paracetamol a day.", "contradicted"),
    # --- frequencies and intervals -------------------------------------------------------
    ("once_a_day_spellings", "Take metformin once a day.", "Metformin is taken 1 a day.", "matched"),
    ("twice_vs_every_12_hours", "Take amoxicillin twice a day.", "Take amoxicillin every 12 hours.",
     "matched"),
    ("three_times_vs_every_12_hours", "Take amoxicillin three times a day.", "Take amoxicillin "
     "every 12 hours.", "contradicted"),
    ("weekly", "Alendronate is taken once a week.", "Alendronate is taken once weekly.", "matched"),
    ("weekly_vs_daily", "Alendronate is taken once a week.", "Alendronate is taken once daily.",
     "contradicted"),
    ("interval_in_range", "Take 1 or 2 puffs every 4 to 6 hours.", "Use 1 to 2 puffs every 4 to 6 "
     "hours.", "matched"),
    ("interval_wrong", "Take ibuprofen every 2 hours.", "Take ibuprofen every 4 to 6 hours.",
     "contradicted"),
    # a dose is what is taken each time: "three doses a day" is "three times a day"
    ("doses_a_day_are_times_a_day", "Gabapentin is split into three doses each day.", "Gabapentin is taken "
     "as 300 mg three times a day.", "matched"),
    ("doses_a_day_wrong", "Gabapentin is split into two doses each day.", "Gabapentin is taken as 300 mg "
     "three times a day.", "contradicted"),
    ("times_a_day_are_doses_a_day", "Take the tablets twice a day.", "Take it as two doses a day.", "matched"),
    # "increased by 100 mg every 2 to 4 weeks" follows the start, it is not the starting dose
    ("increased_by_is_later", "Allopurinol doses are usually raised every two to four weeks.", "Allopurinol is "
     "usually started at 100 mg a day and increased by 100 mg every 2 to 4 weeks.", "matched"),
    # a list names its unit once
    ("a_list_names_its_unit_once", "CKD stage 5 means an eGFR below 15 ml/min/1.73 m2.", "Stage 3a is 45 to "
     "59 ml/min/1.73 m2, stage 3b is 30 to 44, stage 4 is 15 to 29, and stage 5 (kidney failure) is below 15.",
     "matched"),
    ("a_list_item_contradicted", "CKD stage 4 means an eGFR of 20 to 29 ml/min.", "Stage 3a is 45 to "
     "59 ml/min, stage 3b is 30 to 44, stage 4 is 15 to 29, and stage 5 is below 15.", "contradicted"),
    # --- qualifiers --------------------------------------------------------------------------
    ("child_dose", "Children can take 10 mg/kg of ibuprofen per dose.", "Adults take 400 mg per dose; "
     "children take 10 mg/kg per dose.", "matched"),
    ("child_given_adult_dose", "Children can take 400 mg of ibuprofen per dose.", "Adults take "
     "400 mg per dose; children take 200 mg per dose.", "contradicted"),
    ("night_dose", "Take 10 mg of amitriptyline at night.", "Take 10 mg of amitriptyline at night.",
     "matched"),
    ("older_people", "Older people should take up to 3 g of paracetamol a day.", "Adults can take "
     "up to 4 g a day. Older people should take up to 3 g a day.", "matched"),
    ("pregnant", "In pregnancy, take 400 micrograms of folic acid a day.", "Women who are not "
     "pregnant need 200 micrograms a day; in pregnancy you need 400 micrograms a day.", "matched"),
]


@pytest.mark.parametrize("statement,page,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_statement_quantities_against_their_evidence(statement, page, expected):
    findings = compare_quantities(statement, sentences(page))
    assert findings, "the statement's quantity was not read at all"
    assert [f.status for f in findings] == [expected] * len(findings), \
        [f.message for f in findings]


def test_every_check_has_a_matched_and_a_contradicted_case():
    expected = {c[3] for c in CASES}
    assert expected == {"matched", "contradicted"}
    assert sum(c[3] == "contradicted" for c in CASES) >= 40
    assert sum(c[3] == "matched" for c in CASES) >= 40


# --- the message a reviewer reads --------------------------------------------------------

def test_contradiction_names_both_figures_and_the_source_qualifier():
    [finding] = compare_quantities(
        "Without a prescription, adults can take up to 2,400mg of ibuprofen in 24 hours.",
        sentences(IBUPROFEN_PAGE))
    assert finding.status == "contradicted"
    assert finding.message == ("statement 2,400 mg/24 h; source 1,200 mg/24 h without a "
                               "prescription")
    assert finding.source.low == 1200 and finding.source.per == "day"
    assert "1,200mg in 24 hours" in finding.sentence
    assert "3,200" not in finding.message  # the with-prescription maximum is another thing


def test_lisinopril_compares_with_the_maximum_not_the_starting_dose():
    [finding] = compare_quantities("The maximum dose of lisinopril is 40 mg a day.",
                                   sentences(LISINOPRIL_PAGE))
    assert finding.status == "contradicted"
    assert finding.source.low == 80
    assert finding.sentence == "The maximum dose is 80 mg a day."


def test_paracetamol_eight_grams_is_compared_with_four_grams_not_eight_tablets():
    [finding] = compare_quantities("Adults can safely take up to 8 g of paracetamol in 24 hours.",
                                   ["Do not take more than 8 tablets (4g) in 24 hours."])
    assert finding.status == "contradicted"
    assert finding.source.unit == "mg" and finding.source.low == 4000
    assert finding.message == "statement 8 g/24 h; source 4 g/24 h"


def test_bounds_are_named_when_they_differ():
    [finding] = compare_quantities("Wait half an hour after taking levothyroxine",
                                   ["wait at least 60 minutes"])
    assert finding.message == "statement 30 min; source at least 60 min"


# --- missing: nothing comparable for the same thing --------------------------------------

@pytest.mark.parametrize("statement,page", [
    ("Adults can take 8 g of paracetamol a day.", "Do not take more than 8 tablets a day."),
    ("Take 400 IU of vitamin D a day.", "Take 10 micrograms of vitamin D a day."),
    ("Take it for 4 weeks.", "Take it for a month."),
    ("With a prescription, adults can take 3,200 mg a day.",
     "Without a prescription, do not take more than 1,200mg in 24 hours."),
    ("Children can take 200 mg of ibuprofen.", "Adults can take 200 mg of ibuprofen."),
    ("The starting dose is 10 mg a day.", "The maximum dose is 10 mg a day."),
    ("Take 20 mg in the morning.", "Take 20 mg at night."),
    ("Adults take 2 g a day.", "Adults should take no more than 4 g a day."),
    ("Omeprazole 20 mg a day helps heartburn.", "The clinic is open from 9 to 5."),
], ids=["tablets_are_not_grams", "iu_needs_the_source_own_equivalence", "weeks_are_not_a_month",
        "other_prescription_status", "other_population", "other_role", "other_time_of_day",
        "consistent_but_not_stated", "unrelated_numbers"])
def test_a_number_attached_to_something_else_is_missing(statement, page):
    findings = compare_quantities(statement, sentences(page))
    assert findings and all(f.status == "missing" for f in findings), [f.message for f in findings]
    assert all(f.source is None and f.sentence == "" for f in findings)
    assert all(f.message.startswith("statement ") for f in findings)


# --- extraction ------------------------------------------------------------------------

def one(sentence: str) -> Quantity:
    found = extract_quantities(sentence)
    assert len(found) == 1, found
    return found[0]


@pytest.mark.parametrize("text", ["COVID-19 patients", "IL-6 levels rose", "people with type 2 "
                                  "diabetes", "SARS-CoV-2 infection", "H1N1 influenza",
                                  "HFE C282Y homozygotes", "a phase 3 trial", "in 2019 the trial",
                                  "Updated 2023 Daily", "only $24.99 per month"])
def test_names_and_dates_are_not_quantities(text):
    assert extract_quantities(text) == []


def test_extraction_reads_value_unit_denominator_bound_and_qualifiers():
    sentence = "Without a prescription, adults can take up to 2,400mg of ibuprofen in 24 hours."
    q = one(sentence)
    assert (q.text, q.low, q.high, q.unit, q.per, q.bound) == ("2,400mg", 2400, 2400, "mg", "day",
                                                               "le")
    assert {"prescription:without", "adult"} <= q.qualifiers
    assert "ibupr" in q.subject
    assert sentence[q.start:q.end] == "2,400mg"


@pytest.mark.parametrize("sentence,low,high,unit,per,bound", [
    ("2.4 g a day", 2400, 2400, "mg", "day", "eq"),
    ("10 micrograms daily", 0.01, 0.01, "mg", "day", "eq"),
    ("80 to 90 mg/kg per day", 80, 90, "mg", "kg/day", "range"),
    ("5 mcg/kg/min", 0.005, 0.005, "mg", "kg/min", "eq"),
    ("half an hour", 30, 30, "min", "", "eq"),
    ("three times a day", 3, 3, "times", "day", "eq"),
    ("once daily", 1, 1, "times", "day", "eq"),
    ("every 4 to 6 hours", 240, 360, "min", "interval", "range"),
    ("at least 4 hours between doses", 240, 240, "min", "interval", "ge"),
    ("about 1 in 10,000", 0.01, 0.01, "%", "", "approx"),
    ("28.4 per cent", 28.4, 28.4, "%", "", "eq"),
    ("no more than 4 g in any 24-hour period", 4000, 4000, "mg", "day", "le"),
    ("at most 20 mg each night", 20, 20, "mg", "day", "le"),
    ("less than 5%", 5, 5, "%", "", "lt"),
    ("greater than 30 kg/m2", 30, 30, "kg/m2", "", "gt"),
    ("> 7.0 mmol/L", 7, 7, "mmol/l", "", "gt"),
    ("\u2264 140 mmHg", 140, 140, "mmhg", "", "le"),
    ("people aged 65 and over", 65, 65, "age", "", "ge"),
    ("2 weeks", 20160, 20160, "min", "", "eq"),
    ("6 months", 6, 6, "month", "", "eq"),
    ("20 units of insulin", 20, 20, "iu", "", "eq"),
])
def test_forms_are_read_into_canonical_values(sentence, low, high, unit, per, bound):
    q = one(sentence)
    assert (q.unit, q.per, q.bound) == (unit, per, bound)
    assert q.low == pytest.approx(low) and q.high == pytest.approx(high)


def test_blood_pressure_pair_is_one_quantity():
    q = one("Target blood pressure is below 130/80 mm Hg")
    assert (q.text, q.low, q.low2, q.unit, q.bound) == ("130/80 mm Hg", 130, 80, "mmhg", "lt")
    q = one("a systolic 130 and diastolic 80")
    assert (q.low, q.low2) == (130, 80)


def test_each_number_keeps_its_own_qualifier():
    male, female = extract_quantities("28.4% of male and 1.2% of female HFE C282Y homozygotes "
                                      "have iron-overload disease")
    assert "male" in male.qualifiers and "female" not in male.qualifiers
    assert "female" in female.qualifiers and "male" not in female.qualifiers


def test_a_dose_and_its_frequency_are_two_quantities():
    dose, freq = extract_quantities("Take 2 tablets three times a day.")
    assert (dose.unit, dose.per) == ("tablet", "dose")
    assert (freq.unit, freq.per, freq.low) == ("times", "day", 3)


def test_describe_uses_the_writers_unit():
    assert describe(one("up to 2.4 g a day")) == "2.4 g/day"
    assert describe(one("up to 2.4 g a day"), with_bound=True) == "up to 2.4 g/day"
    assert describe(one("three times a day")) == "3 times a day"
    assert describe(one("4 to 6 weeks")) == "4 to 6 weeks"


def test_minimum_interval_reads_as_apart():
    [f] = compare_quantities("Take amoxicillin every 2 hours.", ["Leave at least 4 hours between doses."])
    assert f.status == "contradicted"
    assert f.message == "statement every 2 h; source at least 4 h apart"


def test_finding_is_a_frozen_record():
    [f] = compare_quantities("Take 20 mg a day.", ["Take 20 mg a day."])
    assert isinstance(f, QuantityFinding)
    with pytest.raises(AttributeError):
        f.status = "missing"  # type: ignore[misc]


def test_statement_without_quantities_has_no_findings():
    assert compare_quantities("Ibuprofen can upset the stomach.", ["Take 200 mg."]) == []


# how fast a statement is read against a page: bench/checks_speed.py


# --- what a number is attached to: qualifiers added for issue 11 ---------------------------

def _statuses(statement: str, page: str) -> list[str]:
    return [f.status for f in compare_quantities(statement, sentences(page))]


@pytest.mark.parametrize("statement,page,expected", [
    # a titrated ceiling is not where treatment begins
    ("Sertraline is usually started at 200 mg a day.",
     "Sertraline usually starts at 50 mg a day and can be increased to a maximum of 200 mg a day.",
     "contradicted"),
    ("Sertraline is usually started at 50 mg a day.",
     "Sertraline usually starts at 50 mg a day and can be increased to a maximum of 200 mg a day.",
     "matched"),
    # later doses ("then") are not the first dose
    ("The first dose of the antiemetic is 8 mg.",
     "Give 16 mg of the antiemetic at first, then 8 mg every 12 hours.", "contradicted"),
    # treatment and prevention courses differ
    ("To treat the infection, adults take the tablets for 14 days.",
     "Adults take one tablet a day for 7 days to treat the infection, or for 14 days to prevent it.",
     "contradicted"),
    # moderate and vigorous activity targets differ
    ("Adults need at least 150 minutes of vigorous activity a week.",
     "Aim for at least 150 minutes of moderate activity a week, or 75 minutes of vigorous activity.",
     "contradicted"),
    # home and clinic readings have their own thresholds
    ("The home reading threshold is 140/90 mmHg.",
     "The threshold is 140/90 mmHg for clinic readings and 135/85 mmHg for home readings.",
     "contradicted"),
    # the stage a figure belongs to
    ("Grade 2 obesity starts at a BMI of 30 kg/m2.",
     "Grade 1 obesity starts at 30 kg/m2, and grade 2 starts at 35 kg/m2.", "contradicted"),
    # how many doses an effectiveness figure is for
    ("One dose of the vaccine is about 78% effective.",
     "Two doses are about 95% effective, and one dose is about 78% effective.", "matched"),
    ("Two doses of the vaccine are about 78% effective.",
     "Two doses are about 95% effective, and one dose is about 78% effective.", "contradicted"),
    # a wait after an event is not how long a course lasts
    ("The course lasts 6 weeks.",
     "The tablets are taken for 10 days. A check-up is done 6 weeks after the course ends.",
     "contradicted"),
])
def test_a_figure_counts_only_for_what_it_is_attached_to(statement, page, expected):
    # the statement's last figure is the one attached to something
    assert _statuses(statement, page)[-1] == expected


def test_a_source_naming_both_groups_covers_either():
    page = "Adults and teenagers aged 12 and over take 10 mg once a day."
    assert _statuses("Adults take 10 mg once a day.", page)[0] == "matched"


def test_the_comparison_arms_figure_is_not_the_main_arms():
    page = "In the trial, 31% of people on the new drug were in remission at a year, compared with 12% of those on placebo."
    assert "contradicted" in _statuses("In the trial, 12% of people on the new drug were in remission.", page)
    assert _statuses("About 12% of those on placebo were in remission.", page) == ["matched"]


def test_a_subgroups_own_figure_outranks_the_general_one():
    page = ("The usual dose is 500 mg twice a day. People with kidney disease often need 250 mg "
            "twice a day.")
    assert _statuses("People with kidney disease usually take 500 mg twice a day.", page)[0] == "contradicted"


def test_a_figure_for_the_first_day_is_not_a_figure_for_every_day():
    page = "Do not take more than 400 mg on the first day or more than 300 mg on any later day."
    assert "contradicted" in _statuses("Up to 400 mg can be taken every day.", page)
    assert _statuses("After the first day, no more than 300 mg should be taken daily.", page)[0] == "matched"


def test_an_age_group_given_before_a_dose_travels_with_it():
    page = ("Children aged 12 and over take 10 mg, up to 40 mg in 24 hours. Children aged 2 to 11 "
            "take 5 mg, up to 20 mg in 24 hours.")
    assert "contradicted" in _statuses("Children aged 2 to 11 can have up to 40 mg in 24 hours.", page)
    assert "contradicted" not in _statuses("Children aged 2 to 11 can have up to 20 mg in 24 hours.", page)


def test_a_closed_range_does_not_state_an_open_lower_bound():
    page = "Fasting glucose of 7.0 mmol/L or more means diabetes; 6.1 to 6.9 mmol/L means impaired fasting glucose."
    assert _statuses("A fasting glucose of 6.1 mmol/L or more means diabetes.", page) == ["contradicted"]


def test_a_match_about_another_drug_yields_to_the_statements_own_drug():
    page = "Drug Alpha is given as 2 mg tablets. Betazole syrup comes as 40 mg per bottle."
    assert _statuses("Drug Alpha tablets contain 40 mg.", page) == ["contradicted"]


# --- forms read for issue 11 -------------------------------------------------------------

@pytest.mark.parametrize("sentence,low,high,unit,per,bound", [
    ("Lithium levels are checked every month.", 30.4375 * 1440, 30.4375 * 1440, "min", "interval", "eq"),
    ("The iron is taken on alternate days.", 2880, 2880, "min", "interval", "eq"),
    ("Walk for two and a half hours a week.", 150, 150, "min", "", "eq"),
    ("Press on the wound for a quarter of an hour.", 15, 15, "min", "", "eq"),
    ("About a third of patients relapse.", 100 / 3, 100 / 3, "%", "", "approx"),
    ("Stop it by the 36th week of pregnancy.", 36, 36, "ordinal week", "", "eq"),
    ("A rash occurs in about 1 in 2,000 to 5,000 people.", 0.02, 0.05, "%", "", "range"),
    ("Up to 8 mg of the drug can be taken each day.", 8, 8, "mg", "day", "le"),
    ("Take 10 mg just before bedtime.", 10, 10, "mg", "day", "eq"),
    ("No more than 3 g should be taken in one course.", 3000, 3000, "mg", "course", "le"),
    ("The daily maintenance dose of the drug in adults is 2 g.", 2000, 2000, "mg", "day", "eq"),
    ("Use it for no longer than 6 weeks.", 6 * 10080, 6 * 10080, "min", "", "le"),
    ("Doses are raised no more often than every 3 weeks.", 3 * 10080, 3 * 10080, "min", "interval", "ge"),
    ("Girls vaccinated before the age of 15 were protected.", 15, 15, "age", "", "eq"),
])
def test_issue_11_forms_are_read(sentence, low, high, unit, per, bound):
    q = extract_quantities(sentence)[0]
    assert (q.unit, q.per, q.bound) == (unit, per, bound), q
    assert q.low == pytest.approx(low) and q.high == pytest.approx(high)


def test_a_second_limit_joined_by_or_keeps_the_negation():
    qs = extract_quantities("Do not take more than 3 g on the first day or more than 2 g on later days.")
    assert [q.bound for q in qs] == ["le", "le"]


def test_four_times_a_day_is_the_frequency_not_the_dose_denominator():
    q = extract_quantities("Adults can take 500 mg of amoxicillin four times a day.")[0]
    assert q.per == "dose"


def test_about_allows_rounding_only_around_a_round_figure():
    assert _statuses("The vaccine is about 90% effective.", "It is 88% effective.") == ["matched"]
    assert _statuses("The vaccine is about 93% effective.", "It is about 97% effective.") == ["contradicted"]


def test_every_month_and_every_four_weeks_agree_but_every_week_does_not():
    assert _statuses("Bloods are checked every month.", "Blood tests are done every 4 weeks.") == ["matched"]
    assert _statuses("Bloods are checked every month.", "Blood tests are done every week.") == ["contradicted"]


# -- study figures, dates and effect sizes in words ---------------------------------------------------

@pytest.mark.parametrize("statement, evidence, status", [
    # a share stated as a bound or a range is borne out by a point estimate that satisfies it
    ("More than half of adults in the survey had at least one risk factor.",
     "In the survey, 61.5% of adults reported at least one risk factor.", "matched"),
    ("More than half of adults in the survey had at least one risk factor.",
     "In the survey, 38.0% of adults reported at least one risk factor.", "contradicted"),
    ("Between 5 and 10 percent of patients stop the drug because of nausea.",
     "Nausea led 7.2% of patients to stop the drug.", "matched"),
    ("Between 5 and 10 percent of patients stop the drug because of nausea.",
     "Nausea led 14% of patients to stop the drug.", "contradicted"),
    # a dose stated as a range is not borne out by one point inside it
    ("The usual dose is 80 to 90 mg/kg per day.", "The usual dose is 85 mg/kg per day.", "contradicted"),
    # effect sizes in words
    ("Long-haul flights increase the risk of a clot fourfold.",
     "Long-haul flights roughly double the risk of a clot.", "contradicted"),
    ("Long-haul flights double the risk of a clot.",
     "Long-haul flights are linked to a 2-fold risk of a clot.", "matched"),
])
def test_study_figures_and_effect_sizes(statement, evidence, status):
    assert [f.status for f in compare_quantities(statement, [evidence])] == [status]


@pytest.mark.parametrize("text", ["As of May 3, 2020, 54% of deaths", "tested between April 19-28, 2020",
                                  "on 3 May the clinic opened", "by the 12th of March"])
def test_dates_are_not_quantities(text):
    assert all(q.unit == "%" for q in extract_quantities(text))


# issue 11: three ways a figure found somewhere on the page is still the wrong figure

WEIGHT_BANDS_PAGE = ("Apixaban-like tablets come in two strengths. Patients weighing less than 60 kg take "
                     "the 2.5 mg tablet, and patients weighing 60 kg or more take the 5 mg tablet.")


@pytest.mark.parametrize("statement, statuses", [
    # each figure is on the page, but the page ties 5 mg to the heavier band, not the lighter one
    ("The 5 mg tablet is for patients weighing less than 60 kg.", {"contradicted"}),
    ("The 2.5 mg tablet is for patients weighing less than 60 kg.", {"matched"}),
])
def test_two_figures_of_one_clause_must_come_from_one_source_clause(statement, statuses):
    found = compare_quantities(statement, sentences(WEIGHT_BANDS_PAGE))
    assert len(found) == 2
    assert statuses <= {f.status for f in found}
    if statuses == {"matched"}:
        assert all(f.status == "matched" for f in found)


UTI_PAGE = ("Nitrofurantoin for a bladder infection is taken for 3 days. Trimethoprim is another "
            "choice. Amoxicillin is usually taken for 7 days.")


@pytest.mark.parametrize("statement, status, source", [
    # 7 days is on the page, but for amoxicillin; the sentence naming nitrofurantoin says 3 days
    ("Nitrofurantoin for a bladder infection is usually taken for 7 days.", "contradicted", "3 days"),
    ("Nitrofurantoin for a bladder infection is usually taken for 3 days.", "matched", "3 days"),
])
def test_the_clause_naming_the_statements_own_drug_decides(statement, status, source):
    [found] = compare_quantities(statement, sentences(UTI_PAGE))
    assert (found.status, found.source.text) == (status, source)


RENAL_PAGE = ("Older people are usually given 2 mg of the drug a day. Those with kidney disease "
              "are given 1 mg a day.")


@pytest.mark.parametrize("statement, status, source", [
    # "those with kidney disease" follows a sentence about older people: its 1 mg is theirs
    ("Older people with kidney disease take 2 mg of the drug a day.", "contradicted", "1 mg a day"),
    ("Older people with kidney disease take 1 mg of the drug a day.", "matched", "1 mg a day"),
])
def test_a_subgroup_clause_carries_the_subgroup_of_the_sentence_before(statement, status, source):
    [found] = compare_quantities(statement, sentences(RENAL_PAGE))
    assert (found.status, found.source.text) == (status, source)


CLOZAPINE_PAGE = ("Clozapine can cause agranulocytosis, most often in the first 18 weeks. For this reason, blood "
                  "counts are checked every week for the first 18 weeks, then every 2 weeks until one year, and "
                  "every 4 weeks after that.")


@pytest.mark.parametrize("statement, contradicted", [
    # weekly is on the page, and so is one year, but weekly belongs to the first 18 weeks
    ("Weekly blood tests on clozapine continue for the whole first year.", True),
    ("Blood counts on clozapine are checked weekly for the first 18 weeks.", False),
    ("Blood counts are checked every 2 weeks until one year.", False),
])
def test_a_schedule_phase_binds_its_interval_to_its_span(statement, contradicted):
    found = compare_quantities(statement, sentences(CLOZAPINE_PAGE))
    assert found, statement
    assert any(f.status == "contradicted" for f in found) is contradicted, [f.message for f in found]
    if not contradicted:
        assert all(f.status == "matched" for f in found), [f.message for f in found]


# -- "contradicted" only for a value the source states for the same thing (issue 23) ---------------

from sourcecheckup.checks.quantities.compare import NOT_A_CONTRADICTION  # noqa: E402

NOT_A_CONTRADICTION_CASES = {
    "worked out by arithmetic": (
        "Leave at least 4 hours between doses of paracetamol.",
        "The usual dose of paracetamol for adults is one or two 500mg tablets up to 4 times in 24 hours."),
    "a tablet's strength is not a dose": (
        "Adults can take 200 mg to 400 mg of ibuprofen every 4 to 6 hours.",
        "Adults can take one or two 200mg tablets of ibuprofen every 4 to 6 hours."),
    "across a time qualifier": (
        "Before 2017, hypertension was defined as 140/90 mm Hg or higher.",
        "The 2017 guideline defines hypertension as a reading of 130/80 mm Hg or higher."),
    "a need or a usual amount under a maximum": (
        "Adults should not take more than 100 micrograms of vitamin D a day.",
        "Children from the age of 1 year and adults need 10 micrograms of vitamin D a day."),
}


@pytest.mark.parametrize("why", [row[0] for row in NOT_A_CONTRADICTION])
def test_a_figure_not_stated_for_the_same_thing_never_contradicts(why):
    statement, page = NOT_A_CONTRADICTION_CASES[why]
    found = compare_quantities(statement, sentences(page))
    assert found and not any(f.status == "contradicted" for f in found), [f.message for f in found]


def test_an_adverb_is_no_subject_a_clause_about_the_pages_drug_must_name():
    """"Always leave at least 4 hours between doses" is about the page's drug, named two sentences earlier."""
    page = ["Paracetamol is a common painkiller used to treat aches and pain.",
            "It can also be used to reduce a high temperature.",
            "The usual dose for adults is one or two 500mg tablets up to 4 times in 24 hours.",
            "Always leave at least 4 hours between doses."]
    found = compare_quantities("Leave at least 4 hours between paracetamol doses.", page)
    assert [f.status for f in found] == ["matched"], [f.message for f in found]
    found = compare_quantities("Leave at least 1 hour between paracetamol doses.", page)
    assert [f.status for f in found] == ["contradicted"], [f.message for f in found]


def test_a_figure_stated_elsewhere_on_the_page_matches_where_arithmetic_would_have_contradicted():
    page = ("The usual dose of paracetamol for adults is one or two 500mg tablets up to 4 times in 24 hours. "
            "Always leave at least 4 hours between doses.")
    found = compare_quantities("The usual adult dose is one or two 500mg tablets up to 4 times in 24 hours, "
                               "with at least 4 hours between doses", sentences(page))
    assert [f.status for f in found] == ["matched"] * len(found), [f.message for f in found]


def test_the_old_threshold_matches_the_old_figure_not_the_new_one():
    page = ("Until 2017, hypertension was diagnosed at a reading of 140/90 mmHg or more. "
            "The 2017 guideline now defines hypertension as 130/80 mm Hg or higher.")
    [old] = compare_quantities("Before 2017, hypertension was defined as 140/90 mm Hg or higher.", sentences(page))
    assert old.status == "matched" and "140" in old.source.text
    [now] = compare_quantities("Hypertension is defined as 140/90 mm Hg or higher.", sentences(page))
    assert now.status == "contradicted" and "130/80" in now.message


def test_tablet_counts_and_strengths_are_read_apart():
    count, strength, freq = extract_quantities(
        "The usual dose for adults is one or two 500mg tablets up to 4 times in 24 hours.")
    assert (count.unit, count.low, count.high, count.bound) == ("tablet", 1, 2, "range")
    assert strength.unit == "mg" and "strength" in strength.qualifiers and not strength.per
    count, strength = extract_quantities("Never take more than 8 paracetamol tablets of 500mg in 24 hours")
    assert (count.unit, count.low, count.per, count.bound) == ("tablet", 8, "day", "le")
    assert "strength" in strength.qualifiers and not strength.per


def test_an_age_inside_a_source_age_range_belongs_to_that_group():
    page = ("Children aged 6 to 8 years: give 5ml of the 250mg/5ml liquid, up to 4 times in 24 hours. "
            "Children aged 8 to 10 years: give 7.5ml, up to 4 times in 24 hours.")
    found = {f.claim.text: f for f in compare_quantities(
        "A 7-year-old can have 5ml of paracetamol liquid up to 6 times in 24 hours.", sentences(page))}
    assert found["5ml"].status == "matched"
    assert found["6 times in 24 hours"].status == "contradicted"
    assert "4 times a day" in found["6 times in 24 hours"].message


def test_a_limit_and_the_harm_beyond_it_are_one_threshold():
    [f] = compare_quantities("Taking more than 4000 IU of vitamin D a day could be harmful.",
                             ["Do not take more than 100 micrograms (4,000 IU) of vitamin D a day."])
    assert f.status == "matched", f.message
    [g] = compare_quantities("Taking more than 2000 IU of vitamin D a day could be harmful.",
                             ["Do not take more than 100 micrograms (4,000 IU) of vitamin D a day."])
    assert g.status == "contradicted", g.message


def test_the_same_digits_with_the_point_elsewhere_are_named_as_a_different_figure():
    [f] = compare_quantities("The risk of a serious bleed is 11% a year.",
                             ["Major bleeding occurred at a rate of 1.1% per year."])
    assert f.status != "matched" and "11%" in f.message and "1.1%" in f.message


def test_a_bare_number_takes_a_lists_unit_only_inside_the_list():
    from sourcecheckup.checks.quantities import extract_quantities

    listed = extract_quantities("Doses of 10 mg, 20 and 40 are used.")
    assert [(q.low, q.unit) for q in listed][:2] == [(10, "mg"), (20, "mg")]
    counted = extract_quantities("In 2019, 45 people took 20 mg, and 30 did not.")
    assert [q.unit for q in counted if q.low in (45, 30)] == ["count", "count"]
    own = extract_quantities("She took 10 mg, 3 tablets a day.")
    assert [(q.low, q.unit) for q in own] == [(10, "mg"), (3, "tablet")]
