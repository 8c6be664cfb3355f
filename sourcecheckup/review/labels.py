"""Human review: a person's label on a statement x source pair, kept with who and when.

Reviews never overwrite verdicts. They become overrides for metrics (majority of the
reviewers' latest decided labels on a pair; "unsure" abstains), so every figure can be
shown with or without them.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from enum import Enum

from ..metrics import Overrides
from ..models import Label
from ..store import Store


class ReviewLabel(str, Enum):
    SUPPORTED = "supported"
    NOT_SUPPORTED = "not_supported"
    UNSURE = "unsure"


@dataclass(frozen=True)
class Review:
    pk: int
    run_id: str
    statement_pk: int
    url: str
    reviewer: str
    label: ReviewLabel
    reason: str
    blind: bool
    sample: str | None
    created_at: str


def add_review(store: Store, run_id: str, statement_pk: int, url: str, reviewer: str,
               label: ReviewLabel | str, reason: str = "", *, blind: bool = False,
               sample: str | None = None) -> int:
    reviewer = reviewer.strip()
    if not reviewer:
        raise ValueError("a review needs the reviewer's name")
    label = ReviewLabel(label)
    return store.add_review(run_id, statement_pk, url, reviewer, label.value, reason, blind=blind, sample=sample)


def reviews(store: Store, run_id: str, *, latest_only: bool = True) -> list[Review]:
    """A run's reviews, oldest first; with ``latest_only`` one per (pair, reviewer)."""
    rows = [Review(r["pk"], r["run_id"], r["statement_pk"], r["url"], r["reviewer"], ReviewLabel(r["label"]),
                   r["reason"] or "", bool(r["blind"]), r["sample"], r["created_at"])
            for r in store.review_rows(run_id)]
    if not latest_only:
        return rows
    latest: dict[tuple[int, str, str], Review] = {}
    for r in rows:
        latest[(r.statement_pk, r.url, r.reviewer)] = r
    return sorted(latest.values(), key=lambda r: r.pk)


def consensus(labels: list[ReviewLabel]) -> Label | None:
    """Majority of decided labels; a tie or only 'unsure' gives no consensus."""
    counts = Counter(label for label in labels if label is not ReviewLabel.UNSURE)
    if not counts:
        return None
    (top, n), *rest = counts.most_common()
    if rest and rest[0][1] == n:
        return None
    return Label(top.value)


def overrides(store: Store, run_id: str) -> Overrides:
    """(statement_pk, url) -> the reviewers' consensus label, for metrics 'with overrides'."""
    by_pair: dict[tuple[int, str], list[ReviewLabel]] = {}
    for r in reviews(store, run_id):
        by_pair.setdefault((r.statement_pk, r.url), []).append(r.label)
    out: dict[tuple[int, str], Label] = {}
    for pair, labels in by_pair.items():
        label = consensus(labels)
        if label is not None:
            out[pair] = label
    return out


UNSURE = "unsure"            # every reviewer of the pair said unsure: reviewed, no label
NO_MAJORITY = "no_majority"  # reviewers split evenly: reviewed, no label


def review_states(store: Store, run_id: str) -> dict[tuple[int, str], str]:
    """(statement_pk, url) -> what the reviewers decided on every pair anyone labelled: the consensus label's
    value, ``UNSURE`` or ``NO_MAJORITY``. A pair labelled "unsure" has been reviewed (review progress counts
    it) but overrides nothing (the figures keep the judge's label)."""
    by_pair: dict[tuple[int, str], list[ReviewLabel]] = {}
    for r in reviews(store, run_id):
        by_pair.setdefault((r.statement_pk, r.url), []).append(r.label)
    out: dict[tuple[int, str], str] = {}
    for pair, labels in by_pair.items():
        label = consensus(labels)
        if label is not None:
            out[pair] = label.value
        else:
            out[pair] = UNSURE if all(lab is ReviewLabel.UNSURE for lab in labels) else NO_MAJORITY
    return out
