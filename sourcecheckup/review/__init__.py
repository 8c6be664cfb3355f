"""Human review and grading around an audit: people's labels, the samples they label, how far they
agree with each other and with the judges.

The package by concept: ``labels`` (a person's label on a statement x source pair; the reviewers'
overrides for the metrics; re-exported here, so ``from sourcecheckup import review`` keeps working),
``sample`` (seeded, stratified samples for review, exported to CSV and imported back), ``agreement``
(percent agreement and kappa between raters), ``answer_grades`` (good / bad grades of whole answers),
``grader`` (a small model trained on those grades) and ``judge_compare`` (each judge against the
reviewers' majority, with a recommendation).
"""
from __future__ import annotations

from .labels import NO_MAJORITY, UNSURE, Review, ReviewLabel, add_review, consensus, overrides, review_states, reviews

__all__ = ["NO_MAJORITY", "UNSURE", "Review", "ReviewLabel", "add_review", "consensus", "overrides",
           "review_states", "reviews"]
