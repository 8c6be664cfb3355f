"""Instruction polarity: "Avoid X" agrees with "Do not take X"; "You can take X freely" does not.

Each case is a statement against leaflet-like evidence with distractor sentences around it, in the
way the judge hands the check the sentences of its best passages.
"""
from __future__ import annotations

import pytest

from sourcecheckup.checks.polarity import CheckFinding, clauses, compare_polarity, read_instruction, stem

# sentences from a patient leaflet that must not sway any case: some are instructions about
# other things, some are descriptive sentences with "do not" or "can" in them
DISTRACTORS = [
    "Keep this medicine out of the sight and reach of children.",
    "Store below 25\u00b0C in the original package to protect from moisture.",
    "Most people do not get side effects from this medicine.",
    "Like all medicines, it can cause side effects, although not everybody gets them.",
    "Contact your doctor straight away if you get a rash or your lips start to swell.",
    "In the trial, the medicine reduced the risk of a heart attack by 11%.",
    "This leaflet was last revised in March 2024.",
]

LEVO_PAGE = [
    "Levothyroxine is a thyroid hormone used to treat an underactive thyroid.",
    "Do not take calcium or iron within 4 hours of taking levothyroxine.",
    "Take levothyroxine in the morning, at least 30 minutes before breakfast.",
]
POTASSIUM_PAGE = [
    "Lisinopril lowers blood pressure by relaxing the blood vessels.",
    "Do not take potassium supplements unless your doctor tells you to.",
    "You can take lisinopril with or without food.",
]
SERTRALINE_PAGE = [
    "Sertraline is an antidepressant known as an SSRI.",
    "Do not stop taking it suddenly.",
    "You may get withdrawal side effects if you stop taking it suddenly.",
]
PREDNISOLONE_PAGE = [
    "Prednisolone is a steroid that reduces inflammation.",
    "Prednisolone tablets should be taken in the morning with breakfast.",
    "If you take it for more than 3 weeks, do not stop it suddenly.",
]
FLU_PAGE = [
    "Flu vaccination is recommended for people who are or will be pregnant during flu season.",
    "Pregnant people should get a flu shot.",
    "The nasal spray flu vaccine (live attenuated influenza vaccine, or LAIV) is not recommended "
    "during pregnancy, because it contains a weakened live virus.",
    "The nasal spray vaccine can be given to people who are breastfeeding.",
]
WARFARIN_PAGE = [
    "Taking an NSAID together with warfarin increases the risk of bleeding.",
    "For these reasons, you should not take ibuprofen or other NSAIDs with warfarin unless your "
    "doctor or anticoagulant clinic has advised it.",
    "Paracetamol is usually the preferred painkiller for people taking warfarin.",
]
METFORMIN_PAGE = [
    "Before starting metformin, obtain the patient's eGFR.",
    "Metformin is contraindicated in patients with an eGFR below 30 mL/min/1.73 m\u00b2.",
    "Starting metformin in patients with an eGFR between 30 and 45 mL/min/1.73 m\u00b2 is not recommended.",
    "Do not stop taking your metformin without first talking to your health care professional.",
]
METRONIDAZOLE_PAGE = [
    "Metronidazole is an antibiotic used to treat infections.",
    "Avoid alcohol while you are taking metronidazole and for 48 hours after you finish.",
]
SIMVASTATIN_PAGE = [
    "Simvastatin lowers cholesterol.",
    "Simvastatin should be taken in the evening or at bedtime.",
]
ALENDRONIC_PAGE = [
    "Alendronic acid strengthens bones.",
    "Take alendronic acid first thing in the morning, at least 30 minutes before breakfast, on an empty stomach.",
]
LEVO_PREGNANCY = ["Do not stop taking levothyroxine if you become pregnant."]


FLU_PAGE = [
    "The flu vaccine is recommended for adults aged 65 and over, people with certain long-term health conditions, "
    "and pregnant women.",
    "Pregnant women should have the injected flu vaccine at any stage of pregnancy.",
    "The nasal spray vaccine is not given in pregnancy.",
    "Do not take iron tablets with tea or coffee, milk, or antacids, as these can stop your body absorbing the iron.",
]

CASES = [
    # a clause about another thing (the injected vaccine) does not outvote the one that names the statement's
    ("smoke: nasal spray not in pregnancy",
     "Pregnant women can have the nasal spray flu vaccine at any stage of pregnancy.", FLU_PAGE, "contradicted"),
    ("smoke: injected vaccine at any stage",
     "Pregnant women can have the injected flu vaccine at any stage of pregnancy.", FLU_PAGE, "agrees"),
    # "stop" later in the clause is not its verb
    ("iron not with tea", "Do not take iron tablets with tea or coffee.", FLU_PAGE, "agrees"),
    ("iron with tea", "Take iron tablets with tea or coffee.", FLU_PAGE, "contradicted"),
    # --- the issue's cases ---------------------------------------------------------------
    ("issue: avoid == do not take", "Avoid calcium or iron within 4 hours of levothyroxine", LEVO_PAGE, "agrees"),
    ("issue: can take freely vs do not unless doctor",
     "You can take potassium supplements freely with lisinopril", POTASSIUM_PAGE, "contradicted"),
    ("issue: avoid unless doctor == do not unless doctor",
     "Avoid potassium supplements with lisinopril unless your doctor advises them", POTASSIUM_PAGE, "agrees"),
    ("issue: safe to stop suddenly", "It is safe to stop sertraline suddenly.", SERTRALINE_PAGE, "contradicted"),
    ("issue: not stopped suddenly after three weeks",
     "After more than three weeks, prednisolone should not be stopped suddenly.", PREDNISOLONE_PAGE, "agrees"),
    ("issue: night on an empty stomach vs morning with breakfast",
     "Prednisolone should be taken at night on an empty stomach.", PREDNISOLONE_PAGE, "contradicted"),
    ("issue: nasal spray rather than a flu shot in pregnancy",
     "Pregnant people should get the nasal spray flu vaccine rather than a flu shot", FLU_PAGE, "contradicted"),
    # --- avoid ---------------------------------------------------------------------------
    ("avoid: can take at the same time",
     "You can take calcium or iron at the same time as levothyroxine.", LEVO_PAGE, "contradicted"),
    ("avoid (source) == do not (statement)",
     "Do not drink alcohol while taking metronidazole.", METRONIDAZOLE_PAGE, "agrees"),
    ("avoid (source) vs it's fine to",
     "It's fine to drink alcohol with metronidazole.", METRONIDAZOLE_PAGE, "contradicted"),
    # --- don't ---------------------------------------------------------------------------
    ("don't == do not after a semicolon", "Don't crush or chew the tablets.",
     ["Swallow the tablets whole with a glass of water; do not crush or chew them."], "agrees"),
    ("don't vs can", "You can crush or chew the tablets.",
     ["Swallow the tablets whole with a glass of water; do not crush or chew them."], "contradicted"),
    # --- should not ----------------------------------------------------------------------
    ("should not vs take with food", "Ibuprofen should not be taken with food.",
     ["Ibuprofen reduces pain and swelling.", "Take ibuprofen tablets with food or milk."], "contradicted"),
    ("should not == avoid", "You should not take ibuprofen with warfarin.",
     ["Avoid ibuprofen and other NSAIDs if you take warfarin, as they increase the risk of bleeding."], "agrees"),
    # --- never ---------------------------------------------------------------------------
    ("never == do not", "Never take more than 8 tablets in 24 hours.",
     ["Adults can take 1 or 2 tablets every 4 to 6 hours.", "Do not take more than 8 tablets in 24 hours."], "agrees"),
    ("never (source) vs safe to", "It is safe to take more than 8 tablets in 24 hours.",
     ["Adults can take 1 or 2 tablets every 4 to 6 hours.", "Never take more than 8 tablets in 24 hours."],
     "contradicted"),
    # --- must not ------------------------------------------------------------------------
    ("must not == do not", "You must not drive if the medicine makes you sleepy.",
     ["Do not drive or use machines if this medicine makes you feel sleepy."], "agrees"),
    ("must not (source) vs can", "You can drive even if this medicine makes you sleepy.",
     ["You must not drive if this medicine makes you feel sleepy."], "contradicted"),
    # --- contraindicated / not recommended -----------------------------------------------
    ("contraindicated == contraindicated",
     "Metformin is contraindicated in patients with an eGFR below 30 mL/min/1.73 m\u00b2.", METFORMIN_PAGE, "agrees"),
    ("contraindicated vs can be used safely",
     "Metformin can be used safely in patients with an eGFR below 30 mL/min/1.73 m\u00b2.", METFORMIN_PAGE,
     "contradicted"),
    ("not recommended == not recommended",
     "Starting metformin is not recommended in patients whose eGFR is between 30 and 45 mL/min/1.73 m\u00b2.",
     METFORMIN_PAGE, "agrees"),
    ("not recommended vs safe to start",
     "It is safe to start metformin in patients with an eGFR between 30 and 45 mL/min/1.73 m\u00b2.",
     METFORMIN_PAGE, "contradicted"),
    # --- rather than / instead of --------------------------------------------------------
    ("rather than: the source's own preference",
     "Pregnant people should get a flu shot rather than the nasal spray vaccine.", FLU_PAGE, "agrees"),
    ("instead of: the preferred painkiller",
     "People taking warfarin should use paracetamol instead of ibuprofen for pain.", WARFARIN_PAGE, "agrees"),
    ("instead of: the wrong way round",
     "People taking warfarin should use ibuprofen instead of paracetamol for pain.", WARFARIN_PAGE, "contradicted"),
    # --- can / may / is safe to / it's fine to / freely ----------------------------------
    ("can == can be taken", "You can take paracetamol with warfarin.",
     ["Paracetamol can be taken with warfarin, but tell your anticoagulant clinic if you take it regularly."],
     "agrees"),
    ("may == can, with or without food", "Amlodipine may be taken with or without food.",
     ["Amlodipine lowers blood pressure.", "You can take amlodipine with or without food."], "agrees"),
    ("may vs avoid", "Amlodipine may be taken with grapefruit juice.",
     ["Amlodipine lowers blood pressure.", "Avoid grapefruit juice while taking amlodipine."], "contradicted"),
    ("is safe to == can be given safely", "It is safe to have the flu vaccine during pregnancy.",
     ["Flu vaccines can be given safely during pregnancy."], "agrees"),
    ("it's fine to == can take together", "It's fine to take ibuprofen with paracetamol.",
     ["You can take ibuprofen and paracetamol together."], "agrees"),
    ("freely == freely", "You can use the moisturiser freely.",
     ["Apply the moisturiser freely and as often as you like."], "agrees"),
    ("freely vs a pharmacist's say-so", "You can use the cream freely.",
     ["You can use the cream if your pharmacist says it is suitable for you."], "contradicted"),
    # --- time of day and food ------------------------------------------------------------
    ("morning with breakfast == morning with breakfast",
     "Prednisolone should be taken in the morning with breakfast.", PREDNISOLONE_PAGE, "agrees"),
    ("at night == evening or bedtime", "Take simvastatin at night.", SIMVASTATIN_PAGE, "agrees"),
    ("morning vs evening or bedtime", "Take simvastatin in the morning.", SIMVASTATIN_PAGE, "contradicted"),
    ("empty stomach == empty stomach", "Alendronic acid should be taken on an empty stomach.",
     ALENDRONIC_PAGE, "agrees"),
    ("with breakfast vs before breakfast on an empty stomach",
     "Alendronic acid should be taken with breakfast.", ALENDRONIC_PAGE, "contradicted"),
    ("with food == with food or milk", "Take ibuprofen with food.",
     ["Take ibuprofen tablets with food or milk."], "agrees"),
    # --- unless your doctor / only if your doctor ----------------------------------------
    ("only if your doctor == not unless your doctor",
     "Only take aspirin with warfarin if your doctor tells you to.",
     ["Do not take aspirin with warfarin unless your doctor advises it."], "agrees"),
    ("without asking your doctor vs not unless your doctor",
     "You can take aspirin with warfarin without asking your doctor.",
     ["Do not take aspirin with warfarin unless your doctor advises it."], "contradicted"),
    ("do not stop without talking to your doctor",
     "Do not stop taking metformin without talking to your doctor.", METFORMIN_PAGE, "agrees"),
    ("stop at any time without asking", "You can stop metformin at any time without asking your doctor.",
     METFORMIN_PAGE, "contradicted"),
    # --- manner, and "stop" against "do not take" ----------------------------------------
    ("stop gradually == do not stop suddenly", "Sertraline should be stopped gradually.",
     ["Do not stop taking sertraline suddenly."], "agrees"),
    ("can stop suddenly vs do not stop suddenly", "Sertraline can be stopped suddenly.",
     ["Do not stop taking sertraline suddenly."], "contradicted"),
    ("continue == do not stop", "Continue taking levothyroxine during pregnancy.", LEVO_PREGNANCY, "agrees"),
    ("stop vs do not stop", "Stop taking levothyroxine if you become pregnant.", LEVO_PREGNANCY, "contradicted"),
    ("safe to stop suddenly vs do not, after 3 weeks",
     "It is safe to stop prednisolone suddenly.", PREDNISOLONE_PAGE, "contradicted"),
]


@pytest.mark.parametrize("statement,evidence,expected", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_statement_against_leaflet(statement, evidence, expected):
    finding = compare_polarity(statement, DISTRACTORS[:3] + list(evidence) + DISTRACTORS[3:])
    assert finding is not None, "no evidence sentence was read as the same instruction"
    assert finding.status == expected, finding.message
    assert finding.sentence in evidence, "the finding must rest on the sentence that decides it"
    assert finding.sentence[:20] in finding.message, "the message quotes the source's words"


# --- no false alarms -------------------------------------------------------------------------

@pytest.mark.parametrize("statement,evidence", [
    ("Lisinopril lowers blood pressure.", POTASSIUM_PAGE + DISTRACTORS),
    ("Aspirin reduced the risk of a first heart attack by 11%.",
     ["Aspirin reduced the risk of a first heart attack by 11% but increased major bleeding."] + DISTRACTORS),
    ("Aspirin does not increase the risk of dementia.",
     ["Aspirin was not associated with an increased risk of dementia."] + DISTRACTORS),
    ("Most people do not get side effects from amlodipine.",
     ["Like all medicines, amlodipine can cause side effects, although not everybody gets them."]),
    ("NSAIDs can irritate the lining of the stomach.", WARFARIN_PAGE),
], ids=["lowers", "reduced by", "does not increase", "descriptive do not", "descriptive can"])
def test_descriptive_statements_give_no_finding(statement, evidence):
    assert read_instruction(statement).polarity == 0
    assert compare_polarity(statement, evidence) is None


def test_do_not_inside_a_relative_clause_is_not_a_prohibition():
    # NICE's step 1: the "do not" describes the adults, it does not forbid the calcium-channel blocker
    evidence = ["Offer a calcium-channel blocker (CCB) to adults starting step 1 antihypertensive treatment "
                "who are aged 55 or over and do not have type 2 diabetes."]
    assert read_instruction(evidence[0]).polarity == 1
    f = compare_polarity("For adults aged 55 or over who do not have type 2 diabetes, NICE recommends a "
                         "calcium-channel blocker (CCB) as first-line treatment.", evidence)
    assert f is not None and f.status == "agrees", f


def test_can_increase_the_effect_is_not_a_permission():
    assert read_instruction("Paracetamol can increase the effect of warfarin.").polarity == 0


def test_instruction_about_another_drug_gives_no_finding():
    assert compare_polarity("Do not take ibuprofen with warfarin.",
                            ["You can take paracetamol with warfarin."] + DISTRACTORS) is None


def test_a_prohibition_for_another_situation_does_not_contradict_a_plain_permission():
    # the source forbids it only with a stomach ulcer, which the statement never mentions
    assert compare_polarity("You can take ibuprofen with food.",
                            ["Do not take ibuprofen if you have a stomach ulcer."] + DISTRACTORS) is None


def test_purpose_avoid_is_not_a_prohibition():
    instr = read_instruction("Take ibuprofen with food to avoid stomach upset.")
    assert instr.polarity == 1 and instr.cue == "Take"
    assert "food:with" in instr.attributes


# --- what read_instruction reports ------------------------------------------------------------

@pytest.mark.parametrize("sentence,polarity,cue", [
    ("Avoid potassium supplements.", -1, "Avoid"),
    ("Do not take potassium supplements unless your doctor tells you to.", -1, "Do not"),
    ("If you forget a dose, don't take two doses together.", -1, "don't"),
    ("Prednisolone should not be stopped suddenly.", -1, "should not"),
    ("Never take more than 8 tablets in 24 hours.", -1, "Never"),
    ("Pregnant women must not take isotretinoin.", -1, "must not"),
    ("Metformin is contraindicated in severe kidney disease.", -1, "contraindicated"),
    ("Starting metformin is not recommended in these patients.", -1, "not recommended"),
    ("The nasal spray vaccine is not for pregnant women.", -1, "not for"),
    ("It is unsafe to drink alcohol with metronidazole.", -1, "unsafe"),
    ("You can take potassium supplements freely.", 1, "can take"),
    ("Amlodipine may be taken with or without food.", 1, "may be taken"),
    ("It is safe to stop sertraline suddenly.", 1, "is safe to"),
    ("It's fine to drink coffee with it.", 1, "It's fine to"),
    ("Flu vaccination is recommended for pregnant people.", 1, "is recommended"),
    ("Take one tablet each morning.", 1, "Take"),
    ("You don't need to take it with food.", 0, "don't need to"),
    ("Take it with a glass of water and never crush it.", -1, "never"),
    ("Statins always work and never fail.", 0, ""),
])
def test_cues_set_polarity_and_are_quoted_as_written(sentence, polarity, cue):
    instr = read_instruction(sentence)
    assert instr.polarity == polarity
    assert instr.cue == cue


def test_action_attributes_and_condition_are_read_apart():
    instr = read_instruction("Do not take potassium supplements unless your doctor tells you to.")
    assert {stem("take"), stem("potassium"), stem("supplements")} <= instr.action
    assert "doctor" not in " ".join(instr.action)
    assert instr.attributes == {"unless:doctor"}
    assert ("unless:doctor", "unless your doctor tells you to") in instr.attribute_text

    instr = read_instruction("Prednisolone should be taken at night on an empty stomach.")
    assert {"time:night", "food:empty"} <= instr.attributes
    assert stem("night") not in instr.action and stem("stomach") not in instr.action

    instr = read_instruction("If you take it for more than 3 weeks, do not stop it suddenly.")
    assert instr.polarity == -1 and {"3", stem("weeks")} <= instr.condition
    assert "manner:sudden" in instr.attributes and stem("stop") in instr.action

    instr = read_instruction("Pregnant people should get the nasal spray flu vaccine rather than a flu shot.")
    assert instr.alternative_text == "a flu shot" and stem("shot") in instr.alternative
    assert instr.strong


def test_without_asking_your_doctor_depends_on_polarity():
    assert "unless:doctor" in read_instruction(
        "Do not stop taking it without talking to your doctor.").attributes
    assert "condition:none" in read_instruction(
        "You can stop taking it without talking to your doctor.").attributes


def test_clauses_split_where_the_instruction_changes():
    parts = clauses("You can take paracetamol with warfarin, but do not take more than 8 tablets in 24 hours.")
    assert len(parts) == 2 and parts[1].startswith("do not")
    assert read_instruction(parts[0]).polarity == 1 and read_instruction(parts[1]).polarity == -1


def test_messages_name_both_sides():
    f = compare_polarity("You can take potassium supplements freely with lisinopril", POTASSIUM_PAGE)
    assert f == CheckFinding(
        "contradicted", "Do not take potassium supplements unless your doctor tells you to.",
        'the source says not to ("Do not take potassium supplements unless your doctor tells you to."); '
        'the statement says you can ("can take")')
    f = compare_polarity("Prednisolone should be taken at night on an empty stomach.", PREDNISOLONE_PAGE)
    assert '"in the morning"' in f.message and '"with breakfast"' in f.message
    assert '"at night"' in f.message and '"on an empty stomach"' in f.message


# how fast a pair is read (the 1 ms budget): bench/checks_speed.py


# --- issue 11: time-of-day, food, day and end attributes; limits; population negations ---------
# (the evidence reads like a prescribing leaflet; the drugs and words are not those of the suite)
STATIN_PASSIVE = [
    "Atorvastatin is a statin used to lower cholesterol.",
    "Pravastatin is usually taken at night, at the same time each day.",
]
METFORMIN_MEALS = [
    "Metformin standard-release tablets are usually taken with the evening meal.",
]
LORATADINE = ["Loratadine can be taken with or without food."]
ISSUE11_CASES = [
    ("leaflet passive with a time == the same time", "Pravastatin is normally taken at bedtime.",
     STATIN_PASSIVE, "agrees"),
    ("leaflet passive with a time vs another time", "Pravastatin is best taken in the morning.",
     STATIN_PASSIVE, "contradicted"),
    ("with breakfast vs with the evening meal (a meal is a time of day)",
     "Metformin standard-release tablets are taken with breakfast.", METFORMIN_MEALS, "contradicted"),
    ("with the evening meal == with food", "Metformin tablets should be taken with food.",
     METFORMIN_MEALS, "agrees"),
    ("empty stomach vs with the evening meal", "Metformin tablets are best taken on an empty stomach.",
     METFORMIN_MEALS, "contradicted"),
    ("a reason names no attribute", "Take lansoprazole capsules with water.",
     ["Swallow lansoprazole capsules whole with water, because the capsule does not work if taken "
      "with food."], "agrees"),
    ("must be empty stomach vs with or without food", "Loratadine must be taken on an empty stomach.",
     LORATADINE, "contradicted"),
    ("can take with food == with or without food", "Loratadine can be taken with food.",
     LORATADINE, "agrees"),
    ("same day as vs a different day", "Calcium should be taken on the same day as alendronic acid.",
     ["Calcium supplements are taken on a different day from alendronic acid."], "contradicted"),
    ("stop at once vs until a period after", "Antiviral cover can stop on the day chemotherapy ends.",
     ["Patients should continue antiviral cover until 6 months after stopping chemotherapy."], "contradicted"),
    ("no more than ... should == do not take more than", "No more than 4 g of paracetamol should be taken in a day.",
     ["Do not take more than 4 g of paracetamol in any 24 hours."], "agrees"),
    ("a limit clause does not swallow the instruction joined to it",
     "Wait at least 4 hours between doses of paracetamol.",
     ["Do not take more than 8 tablets in 24 hours, and wait at least 4 hours between doses."], "agrees"),
    ("usual choice vs not usually given to a group",
     "Aspirin is the usual choice for fever in children under 16.",
     ["Aspirin is not usually given to children under 16 because of the risk of Reye's syndrome."],
     "contradicted"),
    ("never (source) reaches a statement limited to a situation",
     "It is fine to double the dose of warfarin when a dose is missed.",
     ["Never double the dose of warfarin."], "contradicted"),
]


@pytest.mark.parametrize("statement,evidence,expected", [c[1:] for c in ISSUE11_CASES],
                         ids=[c[0] for c in ISSUE11_CASES])
def test_issue11_attribute_and_limit_forms(statement, evidence, expected):
    finding = compare_polarity(statement, DISTRACTORS[:3] + list(evidence) + DISTRACTORS[3:])
    assert finding is not None, "no evidence sentence was read as the same instruction"
    assert finding.status == expected, finding.message
    assert finding.sentence in evidence


@pytest.mark.parametrize("sentence,polarity,attributes", [
    ("Furosemide is usually taken in the morning.", 1, {"time:morning"}),
    ("Furosemide is taken by many people with heart failure.", 0, set()),     # no attribute: descriptive
    ("Take it with breakfast.", 1, {"food:with", "time:morning"}),
    ("Take it in the evening with breakfast cereal.", 1, {"time:evening", "food:with"}),  # said outright wins
    ("Take it with food, since it is absorbed less well on an empty stomach.", 1, {"food:with"}),
    ("It does not have to be taken with food.", 0, {"food:with"}),
    ("You should take no more than 2 tablets.", -1, set()),
    ("Codeine is not usually given to children under 12.", -1, set()),
])
def test_issue11_reading_of_one_sentence(sentence, polarity, attributes):
    instr = read_instruction(sentence)
    assert instr.polarity == polarity
    assert set(instr.attributes) == attributes


# -- softened instructions and limits (issue 23): rows of checks/instruction_wording.py -------------

from sourcecheckup.checks.instruction_wording import LIMITS, SOFTENED  # noqa: E402
from sourcecheckup.checks.polarity import limit_polarity  # noqa: E402


@pytest.mark.parametrize("pattern, plain, example", SOFTENED, ids=[row[2] for row in SOFTENED])
def test_a_softened_instruction_reads_with_its_plain_forms_polarity(pattern, plain, example):
    instruction = read_instruction(example)
    assert instruction.polarity == (-1 if plain in ("do not", "avoid") else 1), instruction
    # the softener's own words are not what is done
    assert not instruction.action & {stem(w) for w in ("best", "want", "try", "ideally", "preferably", "better")}


def test_a_softened_instruction_is_contradicted_as_its_plain_form_is():
    page = ["Take ibuprofen with or just after food or a drink of milk.", "Do not take it on an empty stomach."]
    for statement in ("Take ibuprofen on an empty stomach.",
                      "It is best to take ibuprofen on an empty stomach so it works faster.",
                      "You may want to take ibuprofen on an empty stomach."):
        found = compare_polarity(statement, page)
        assert found is not None and found.status == "contradicted", (statement, found)


@pytest.mark.parametrize("pattern, kind, where, example", LIMITS, ids=[row[3] for row in LIMITS])
def test_each_limit_row_reads_its_example_as_do_not_exceed(pattern, kind, where, example):
    instruction = read_instruction(example)
    assert instruction.limit == kind and limit_polarity(instruction) == -1, instruction


def test_a_statements_limit_against_a_plain_instruction_keeps_its_own_polarity():
    found = compare_polarity("The first rotavirus vaccine dose can be given up to 24 weeks of age.",
                             ["The first dose should not be given after 15 weeks of age, and the course must be "
                              "completed before 24 weeks."])
    assert found is not None and found.status == "contradicted", found


def test_a_maximum_dose_is_not_a_prohibition_of_the_usual_dose():
    page = ["The usual dose for adults is one or two 200mg tablets every 4 to 6 hours.",
            "Do not take more than 1,200mg (six 200mg tablets) in 24 hours."]
    found = compare_polarity("Adults can take one or two 200mg tablets every 4 to 6 hours.", page)
    assert found is None or found.status == "agrees", found
    # "adults over 65 should not ..." names an age, not a limit
    assert not read_instruction("Adults over 65 should not take it.").limit


def test_limits_compare_with_limits_by_direction():
    agree = compare_polarity("Never take more than 8 paracetamol tablets in 24 hours.",
                             ["The maximum amount an adult can take is 8 tablets (4g) in 24 hours."])
    assert agree is not None and agree.status == "agrees", agree
    exceed = compare_polarity("You can take more than 8 paracetamol tablets in 24 hours.",
                              ["Do not take more than 8 tablets (4g) in 24 hours."])
    assert exceed is not None and exceed.status == "contradicted", exceed
    assert "not to exceed it" in exceed.message and "you can exceed it" in exceed.message


def test_a_heading_on_its_own_line_does_not_hide_the_instruction_after_it():
    found = compare_polarity("Take ibuprofen on an empty stomach.",
                             ["How to take it\nTake ibuprofen with or just after food or a drink of milk."])
    assert found is not None and found.status == "contradicted", found
