"""A statement that credits a named body or study needs a source that names it."""
from __future__ import annotations

import pytest

from sourcecheckup.checks.attribution import compare_attribution, credited_names

PAGE = ("The guideline recommends an ACE inhibitor for adults under 55. These recommendations represent the view "
        "of NICE, arrived at after careful consideration of the evidence.")


@pytest.mark.parametrize("statement, names", [
    ("NICE advises against offering vitamin D solely to prevent COVID-19.", ["NICE"]),
    ("The WHO recommends thiazide diuretics as a first-line option.", ["WHO"]),
    ("In the ASPREE trial, aspirin did not prolong disability-free survival.", ["ASPREE"]),
    ("According to the CDC, flu vaccines can be given in any trimester.", ["CDC"]),
    # a quotation is not advice; units, conditions and drug classes are not bodies
    ('"People can definitely transmit the virus before symptoms," says a WHO epidemiologist.', []),
    ("An ACE inhibitor or an ARB is step 1 for adults with type 2 diabetes.", []),
    ("HIV testing is offered to everyone in the UK.", []),
])
def test_the_bodies_and_studies_a_statement_credits(statement, names):
    assert credited_names(statement) == names


def test_a_credited_body_the_source_names_agrees_and_one_it_never_names_is_unbacked():
    agrees = compare_attribution("NICE recommends an ACE inhibitor for adults under 55.", PAGE)
    assert agrees is not None and agrees.status == "agrees"
    unbacked = compare_attribution("The WHO recommends an ACE inhibitor for adults under 55.", PAGE)
    assert unbacked is not None and unbacked.status == "unbacked"
    assert unbacked.message == "the statement credits WHO; the source does not mention WHO"
    # the page's title counts as the source naming it
    titled = compare_attribution("The WHO recommends an ACE inhibitor.", PAGE, "WHO guideline on hypertension")
    assert titled is not None and titled.status == "agrees"
    assert compare_attribution("An ACE inhibitor is recommended for adults under 55.", PAGE) is None
