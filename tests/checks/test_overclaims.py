"""Overclaims: an absolute statement is backed only by evidence that states the same absolute.

Each absolute term has a case the evidence backs and one it hedges, conditions, negates or says
nothing of; the demo's planted claims (issue 11) are among them, read against their pages' words.
"""
from __future__ import annotations

import pytest

from sourcecheckup.checks.overclaims import absolute_terms, compare_overclaim
from tests.support.paths import ROOT

DISTRACTORS = [
    "This page was reviewed by our pharmacist team in February 2024.",
    "Keep all medicines out of the sight and reach of children.",
    "Call 111 if you need medical help fast but it's not an emergency.",
]

WARFARIN_GELS = [
    "NSAID gels, creams and sprays, such as ibuprofen gel or diclofenac gel, put much less of the "
    "medicine into your bloodstream than tablets do.",
    "However, some of the medicine is still absorbed through the skin, and there are reports of raised "
    "INR and bleeding in people using topical NSAIDs with warfarin, especially when large areas of skin "
    "are treated.",
    "Use topical NSAIDs with caution, use the smallest amount for the shortest time, and speak to your "
    "pharmacist or anticoagulant clinic before you start.",
]
METFORMIN_CONTRAST = [
    "Discontinue metformin at the time of or before an iodinated contrast imaging procedure in patients "
    "with an eGFR between 30 and 60 mL/min/1.73 m\u00b2.",
    "Re-evaluate eGFR 48 hours after the imaging procedure; restart metformin if renal function is stable.",
]
COQ10_FORUM = [
    "A friend swears by coenzyme Q10 and says it fixed her statin aches completely.",
    "Honestly I think my legs feel a bit better, but I also switched to taking the statin at night at "
    "the same time, so I can't say which one helped.",
    "It is generally safe to try, but it is not a proven treatment, and it shouldn't replace a "
    "conversation with your GP about changing the dose or the type of statin.",
]
AOM_SUMMARY = [
    "Clinicians should prescribe amoxicillin for AOM when a decision to treat with antibiotics has been made.",
    "High-dose amoxicillin, 80 to 90 mg/kg per day given in 2 divided doses, is the first-line antibiotic.",
]

CASES = [
    # (id, statement, evidence, expected status, words the message must quote from the source)
    # --- the demo's planted overclaims -------------------------------------------------------
    ("demo: topical NSAIDs completely safe with warfarin",
     "Topical NSAID gels are completely safe with warfarin and need no precautions", WARFARIN_GELS,
     "unbacked", "is still absorbed"),
    ("demo: metformin stopped permanently after contrast",
     "Metformin should be stopped permanently in anyone who has a CT scan with iodinated contrast",
     METFORMIN_CONTRAST, "unbacked", "restart metformin if renal function is stable"),
    ("demo: CoQ10 proven, from a forum",
     "Coenzyme Q10 supplements have been proven to prevent statin-related muscle pain", COQ10_FORUM,
     "unbacked", "not a proven treatment"),
    ("demo: ear drops just as effective",
     "Antibiotic ear drops are just as effective as oral amoxicillin for a first ear infection", AOM_SUMMARY,
     "unbacked", "first-line antibiotic"),
    # --- completely safe / totally safe --------------------------------------------------------
    ("completely safe: backed", "The inactivated flu vaccine is completely safe in pregnancy.",
     ["The inactivated flu vaccine is completely safe in pregnancy and can be given at any stage."], "agrees", ""),
    ("totally safe: safer than, can still", "Ibuprofen gel is totally safe with warfarin.",
     ["Ibuprofen gel is safer than ibuprofen tablets for people on warfarin, but it can still cause "
      "bleeding, so talk to a pharmacist."], "unbacked", "can still cause bleeding"),
    ("totally safe: backed", "Emollient creams are totally safe for babies.",
     ["Emollient creams are totally safe for babies and adults alike."], "agrees", ""),
    ("safe for all adults backs completely safe", "Paracetamol is completely safe for adults at the usual dose.",
     ["At the usual dose, paracetamol is safe for all adults, including pregnant women."], "agrees", ""),
    # --- no risk / no side effects ------------------------------------------------------------
    ("no risk: backed", "There is no risk of addiction with paracetamol.",
     ["Paracetamol carries no risk of addiction."], "agrees", ""),
    ("no risk: a risk of", "There is no risk of addiction with codeine.",
     ["Codeine can be addictive, and there is a risk of addiction if you take it for more than 3 days."],
     "unbacked", "risk of addiction"),
    ("no side effects: backed", "Saline nasal spray has no side effects.",
     ["Saline nasal spray is drug-free and has no side effects."], "agrees", ""),
    ("no side effects: common side effects", "Amoxicillin has no side effects in children.",
     ["The most common side effects of amoxicillin in children are diarrhoea and rash."], "unbacked",
     "side effects of amoxicillin"),
    # --- proven / proves ------------------------------------------------------------------------
    ("proven: in a randomised trial", "Coenzyme Q10 was proven to prevent statin muscle pain.",
     ["In a large randomised trial, coenzyme Q10 was proven to prevent statin muscle pain."], "agrees", ""),
    ("proves: backed", "The ASPREE trial proves that aspirin does not prolong healthy life in older adults.",
     ["The ASPREE trial proves that daily aspirin does not prolong healthy life in older adults."], "agrees", ""),
    ("proves: a trial that found, with limits", "The ASPREE trial proves that aspirin harms older adults.",
     ["In the ASPREE trial, major bleeding may have been more common in older adults taking aspirin, "
      "although the trial was not designed to show this."], "unbacked", "may have been"),
    # --- cures ------------------------------------------------------------------------------------
    ("cures: backed", "Surgery cures early-stage colon cancer.",
     ["Surgery alone cures early-stage colon cancer in nine out of ten cases."],
     "agrees", ""),
    ("cures: does not cure", "Phlebotomy cures haemochromatosis.",
     ["Regular phlebotomy prevents organ damage when it is started early, but it does not cure haemochromatosis."],
     "unbacked", "does not cure haemochromatosis"),
    # --- guaranteed / definitely / 100% -------------------------------------------------------------
    ("guaranteed: backed", "A negative result is guaranteed to rule out the infection.",
     ["A negative result is guaranteed to rule out the infection."], "agrees", ""),
    ("guaranteed: does not rule out", "A negative test result is guaranteed to rule out strep throat.",
     ["A negative rapid test result does not rule out strep throat in children, so a throat culture may be needed."],
     "unbacked", "may be needed"),
    ("definitely: backed", "Smoking definitely causes lung cancer.",
     ["Smoking definitely causes lung cancer: it is the biggest cause of the disease."], "agrees", ""),
    ("definitely: trial found no reduction", "Vitamin D definitely prevents COVID-19 infection.",
     ["In the CORONAVIT trial, vitamin D supplements did not reduce the risk of COVID-19 infection.",
      "The researchers said more studies may still be needed."], "unbacked", ""),
    ("100%: backed", "The HPV vaccine gave 100% protection against the targeted strains.",
     ["In the trial, the HPV vaccine gave 100% protection against the targeted strains."], "agrees", ""),
    ("100%: 98% when used correctly", "Condoms are 100% effective at preventing pregnancy.",
     ["Condoms are 98% effective at preventing pregnancy if they are used correctly every time."],
     "unbacked", "if they are used correctly"),
    # --- in all patients / every / always / never ----------------------------------------------------
    ("in all patients: backed", "Obtain an eGFR at least annually in all patients taking metformin.",
     ["Obtain an eGFR at least annually in all patients taking metformin."], "agrees", ""),
    ("in all patients: only some", "Metformin is contraindicated in all patients with kidney disease.",
     ["Metformin is contraindicated in patients with an eGFR below 30 mL/min/1.73 m\u00b2."],
     "unbacked", "in patients with an eGFR below 30"),
    ("every: backed", "Every patient taking warfarin needs regular INR checks.",
     ["Every patient taking warfarin needs regular INR blood tests."], "agrees", ""),
    ("every: not suitable for everyone", "Every patient with type 2 diabetes should take metformin.",
     ["Metformin is the usual first medicine for type 2 diabetes, but it is not suitable for everyone."],
     "unbacked", "not suitable for everyone"),
    ("always: backed", "Untreated, rabies is always fatal once symptoms appear.",
     ["Once symptoms appear, untreated rabies is always fatal."], "agrees", ""),
    ("always: almost always", "Rabies is always fatal once symptoms appear.",
     ["Once symptoms appear, rabies is almost always fatal, although a few people have survived."],
     "unbacked", ""),
    ("always: some people", "Statins always cause muscle pain.",
     ["Some people taking statins get muscle pain, but most do not."], "unbacked", "Some people taking statins"),
    ("never: backed", "Babies are never given the flu vaccine before 6 months of age.",
     ["Babies are never given the flu vaccine before 6 months of age."], "agrees", ""),
    ("never: a common side effect", "Statins never cause muscle pain.",
     ["Muscle pain is a common side effect of statins, but serious muscle damage is rare."], "unbacked",
     "common side effect"),
    # --- just as effective / equally effective / as effective as --------------------------------------
    ("just as effective: backed",
     "A 7-day course is just as effective as a 10-day course for children aged 2 to 5 years.",
     ["A 7-day course is just as effective as a 10-day course for children aged 2 to 5 years with mild AOM."],
     "agrees", ""),
    ("equally effective: backed", "Generic and branded atorvastatin are equally effective.",
     ["Generic atorvastatin contains the same medicine and is equally effective as branded atorvastatin."],
     "agrees", ""),
    ("equally effective: more effective", "Inhaled and oral steroids are equally effective in a severe asthma attack.",
     ["Oral steroids are more effective than inhaled steroids in a severe asthma attack."],
     "unbacked", "more effective than inhaled steroids"),
    ("as effective as: backed", "A single dose of fosfomycin is as effective as a 3-day course of nitrofurantoin.",
     ["In this trial a single dose of fosfomycin was as effective as a 3-day course of nitrofurantoin."],
     "agrees", ""),
    ("as effective as: more effective", "Paracetamol is as effective as ibuprofen for dental pain.",
     ["Ibuprofen is more effective than paracetamol for dental pain."], "unbacked", "more effective"),
    # --- permanently / no need to ---------------------------------------------------------------------
    ("permanently: backed", "Tooth enamel lost to erosion is permanently gone.",
     ["Tooth enamel lost to erosion is permanently gone and does not grow back."], "agrees", ""),
    ("no need to: backed", "There is no need to see a doctor for a mild cold.",
     ["Most colds get better on their own, and there is no need to see a GP for a mild cold."], "agrees", ""),
    ("no need to: let your clinic know", "There is no need to tell your anticoagulant clinic when you take paracetamol.",
     ["If you need to take paracetamol regularly for more than a few days, let your anticoagulant clinic know, "
      "as it can increase the effect of warfarin."], "unbacked", ""),
]


@pytest.mark.parametrize("statement,evidence,expected,quoted", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_absolute_statement_against_evidence(statement, evidence, expected, quoted):
    assert absolute_terms(statement), "the statement's absolute wording was not found"
    finding = compare_overclaim(statement, DISTRACTORS[:1] + list(evidence) + DISTRACTORS[1:])
    assert finding is not None
    assert finding.status == expected, finding.message
    assert f"'{absolute_terms(statement)[0]}'" in finding.message, "the message names the absolute"
    if quoted:
        assert quoted in finding.message, finding.message
        assert finding.sentence in evidence
    if expected == "agrees":
        assert finding.sentence in evidence


def test_demo_warfarin_message_quotes_both_sides():
    f = compare_overclaim("Topical NSAID gels are completely safe with warfarin and need no precautions",
                          WARFARIN_GELS)
    assert f.message == ("the statement says 'completely safe' and 'need no precautions'; "
                         "the source says 'is still absorbed through the skin'")


def test_the_quoted_phrase_stops_at_a_teasers_ellipsis_and_its_line():
    teaser = ("Statin therapy is effective for the prevention of coronary heart disease and stroke but concerns "
              "about muscle symptoms have deterred some patients from starting or continuing treatment\u2026\n"
              "Subscribe to continue reading")
    f = compare_overclaim("Coenzyme Q10 supplements have been proven to prevent statin-related muscle pain.", [teaser])
    assert f.status == "unbacked"
    assert f.message.endswith("the source says 'some patients from starting or continuing treatment'"), f.message


def test_evidence_on_another_subject_says_nothing_of_it():
    f = compare_overclaim("Antibiotic ear drops are just as effective as oral amoxicillin.",
                          ["The clinic is open from Monday to Friday.", "Parking is behind the main building."])
    assert f.status == "unbacked" and f.message.endswith("the source says nothing of it")
    assert f.sentence == ""


def test_an_absolute_about_another_subject_does_not_back_the_statement():
    f = compare_overclaim("Topical NSAIDs are completely safe with warfarin.",
                          ["Saline nasal spray is completely safe for everyone."])
    assert f.status == "unbacked"


@pytest.mark.parametrize("statement,terms", [
    ("Topical NSAID gels are completely safe with warfarin and need no precautions",
     ["completely safe", "need no precautions"]),
    ("It is totally safe and has no side effects.", ["totally safe", "no side effects"]),
    ("There is no risk of bleeding.", ["no risk"]),
    ("This diet cures diabetes, guaranteed.", ["cures", "guaranteed"]),
    ("CoQ10 proves useful; it is proven in all patients.", ["proves", "proven", "in all patients"]),
    ("Statins always work and never fail.", ["always", "never"]),
    ("Every adult needs it.", ["Every adult"]),
    ("Drops are just as effective as tablets.", ["just as effective as"]),
    ("Both are equally effective.", ["equally effective"]),
    ("Paracetamol is as effective as ibuprofen.", ["as effective as"]),
    ("Stop it permanently.", ["permanently"]),
    ("The test is 100% accurate and definitely right.", ["100%", "definitely"]),
    ("There is no need to see a doctor.", ["no need to"]),
    ("Metformin Is Contraindicated In All Patients With Kidney Disease.", ["In All Patients"]),
])
def test_absolute_terms_are_found_as_written(statement, terms):
    assert absolute_terms(statement) == terms


@pytest.mark.parametrize("statement", [
    "Never take more than 8 tablets in 24 hours.",            # an instruction: polarity's job
    "You should never stop taking it suddenly.",
    "Always take it with food.",
    "Take it with a glass of water and never crush it.",
    "Take one tablet every 4 hours.",                          # a frequency, not "every patient"
    "Have your blood pressure checked every year.",
    "Lisinopril lowers blood pressure.",
    "Aspirin reduced the risk by 11%.",
    "Aspirin does not increase the risk of dementia.",
    "Mask usage is not a proven means of reducing transmission.",    # negated in the statement itself
    "Antibodies may last only three months in people who never showed symptoms.",
    "An estimated 40 percent of people with the infection never develop a fever.",
    "Should everyone be wearing N95 masks?",
    "95 percent of all cases could have been avoided.",
    "Delays led to unnecessary deaths.",
])
def test_instructions_frequencies_and_plain_claims_are_not_absolutes(statement):
    assert absolute_terms(statement) == []
    assert compare_overclaim(statement, ["Aspirin was not associated with an increased risk of dementia."]) is None


# --- the bundled demo, read as the pipeline reads it --------------------------------------------

SAMPLES = ROOT / "resources" / "samples"
FDA = "https://www.fda.gov/drugs/drug-safety-and-availability/fda-drug-safety-communication-fda-revises-warnings-regarding-use-diabetes-medicine-metformin-certain"
AAP = "https://downloads.aap.org/AAP/PDF/aom-guideline-summary.pdf"
CDC = "https://www.cdc.gov/flu/highrisk/pregnant.htm"
FORUM = "https://patient.info/forums/discuss/coq10-for-statin-muscle-pain-did-it-help-you--812345"
PHARMACY = "https://www.pharmacyquestions.co.uk/interactions/warfarin-and-nsaids/"
DEMO = [  # (statement as the sample answers write it, cited URL, planted false claim?)
    ("Metformin is contraindicated in patients with an eGFR below 30 mL/min/1.73 m\u00b2.", FDA, False),
    ("Starting metformin is not recommended in patients whose eGFR is between 30 and 45 mL/min/1.73 m\u00b2.",
     FDA, False),
    ("Metformin should be stopped permanently in anyone who has a CT scan with iodinated contrast.", FDA, True),
    ("For acute otitis media in children, the first-line antibiotic is high-dose amoxicillin at 80 to 90 "
     "mg/kg per day, given in 2 divided doses.", AAP, False),
    ("A 7-day course is effective for children aged 2 to 5 years with mild or moderate acute otitis media.",
     AAP, False),
    ("Antibiotic ear drops are just as effective as oral amoxicillin for a first ear infection.", AAP, True),
    ("Flu vaccination is recommended for people who are pregnant during flu season, and flu vaccines can be "
     "given during any trimester of pregnancy.", CDC, False),
    ("A flu vaccine given during pregnancy helps protect the baby from flu for several months after birth.",
     CDC, False),
    ("Pregnant people should get the nasal spray flu vaccine rather than a flu shot.", CDC, True),
    ("Coenzyme Q10 supplements have been proven to prevent statin-related muscle pain.", FORUM, True),
    ("Taking an NSAID such as ibuprofen or naproxen together with warfarin increases the risk of bleeding, "
     "particularly bleeding from the stomach and gut.", PHARMACY, False),
    ("Paracetamol is usually the preferred painkiller for people taking warfarin, although taking it "
     "regularly can increase the effect of warfarin.", PHARMACY, False),
    ("Topical NSAID gels are completely safe with warfarin and need no precautions.", PHARMACY, True),
]


@pytest.fixture(scope="module")
def demo_sentences():
    from sourcecheckup.fetching.extract import extract
    from sourcecheckup.fetching.sourcepack import load_pack, pack_key
    from sourcecheckup.parse.segment import split_sentences

    pack = load_pack(SAMPLES / "sources")
    out = {}
    for url in {u for _, u, _ in DEMO}:
        entry = pack[pack_key(url)]
        text = extract(entry.path.read_bytes(), entry.content_type, url).text
        out[url] = [text[a:b] for a, b in split_sentences(text)]
    return out


@pytest.mark.parametrize("statement,url,planted", DEMO, ids=[d[0][:40] for d in DEMO])
def test_demo_pages_flag_each_planted_claim_and_spare_the_true_ones(demo_sentences, statement, url, planted):
    from sourcecheckup.checks.polarity import compare_polarity

    evidence = demo_sentences[url]
    assert len(evidence) > 5, "the page's text was not read"
    found = [f for f in (compare_polarity(statement, evidence), compare_overclaim(statement, evidence)) if f]
    flagged = [f for f in found if f.status in ("contradicted", "unbacked")]
    if planted:
        assert flagged, f"planted false claim passed: {found}"
        assert all(f.sentence in evidence for f in flagged)
    else:
        assert not flagged, f"true claim flagged: {flagged}"


# --- issue 11: hedged absolutes, flat negations, equal standards ------------------------------
@pytest.mark.parametrize("statement,evidence,expected", [
    # "almost always" is itself hedged: nothing absolute to back
    ("Untreated bacterial meningitis is nearly always fatal.", ["Bacterial meningitis can be fatal."], None),
    # "never" against a flat "will not" of the same verb; a hedge on another list item does not count
    ("Cough syrups never shorten a cold.",
     ["Cough syrups will not shorten a cold or some chest infections."], "agrees"),
    ("Cough syrups never shorten a cold.", ["Cough syrups may not shorten a cold."], "unbacked"),
    ("Cough syrups never shorten a cold.", ["Cough syrups will not cure a cold."], "unbacked"),
    # "just as effective" against meeting the same standards of effectiveness
    ("Biosimilar insulin is just as effective as the original brand.",
     ["Biosimilar insulin must meet the same standards of safety and effectiveness as the original brand."],
     "agrees"),
    ("Biosimilar insulin is just as effective as the original brand.",
     ["Biosimilar insulin must meet the same standards of manufacturing as the original brand."], "unbacked"),
])
def test_issue11_absolutes(statement, evidence, expected):
    finding = compare_overclaim(statement, DISTRACTORS[:1] + evidence + DISTRACTORS[1:])
    assert (finding.status if finding else None) == expected, finding and finding.message


IRON_PAGE = ["Ferrous sulfate tablets are usually taken once a day for iron deficiency anaemia.",
             "Treatment continues for 3 months after the haemoglobin level returns to normal, to refill "
             "the body's iron stores."]


@pytest.mark.parametrize("statement, evidence, status", [
    ("Iron tablets are stopped as soon as the haemoglobin level is back to normal.", IRON_PAGE, "unbacked"),
    ("Stop the tablets immediately if you get a rash.",
     ["If you get a rash, stop the tablets straight away and call your doctor."], "agrees"),
])
def test_stopping_at_once_needs_a_source_that_says_at_once(statement, evidence, status):
    found = compare_overclaim(statement, evidence)
    assert found is not None and found.status == status, found
    if status == "unbacked":
        assert "continues for 3 months after" in found.message
