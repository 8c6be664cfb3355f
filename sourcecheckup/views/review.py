"""What a reviewer walks through: the pairs to label, review progress, samples and agreement."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from ..review.agreement import kappa_words
from ..review.labels import UNSURE
from ..store import Store
from .matrix import REVIEW_FIRST
from .results import RunView
from .text import count_noun, pct_ci

# ----------------------------------------------------------------------------- review pairs


@dataclass(frozen=True)
class PairRef:
    """One statement x source pair a reviewer can label."""

    response_pk: int
    statement_pk: int
    url: str


def review_pairs(view: RunView, *, review_first: bool = False) -> list[PairRef]:
    """Every judgeable pair of a run (claims x readable sources), in reading order; with
    ``review_first`` the pairs the screening judge is unsure of (and no reviewer labelled) come first."""
    out: list[PairRef] = []
    for a in view.assessed:
        for s in a.statements:
            if not s.row.statement.informative:
                continue
            out.extend(PairRef(a.response_pk, s.row.pk, url) for url in a.valid_urls)
    if review_first:
        unsure = {(v.statement_pk, v.url) for vs in view.data.verdicts.values() for v in vs
                  if REVIEW_FIRST in v.verdict.flags}
        unsure -= set(view.overrides) | set(view.review_states)   # a reviewer has looked at these
        out.sort(key=lambda p: (p.statement_pk, p.url) not in unsure)   # stable: reading order within each
    return out


def review_progress(view: RunView) -> tuple[int, int, int]:
    """(pairs a reviewer has labelled, judgeable pairs, of the labelled those called "unsure") of a run: how
    far its review has come. An "unsure" label counts as reviewed (the reviewer looked, so progress can reach
    n/n) though it overrides nothing; the Review sample page's "pairs reviewed" counts the same pairs."""
    pairs = {(p.statement_pk, p.url) for p in review_pairs(view)}
    reviewed = pairs & (set(view.overrides) | set(view.review_states))
    unsure = sum(1 for p in reviewed if view.review_states.get(p) == UNSURE)
    return len(reviewed), len(pairs), unsure


# ----------------------------------------------------------------------------- review samples & agreement


@dataclass(frozen=True)
class AgreementRow:
    rater_a: str
    rater_b: str
    kind: str
    n: int
    agreement: str
    kappa: str


def agreement_rows(report: Mapping[str, Any]) -> list[AgreementRow]:
    """The comparisons of :func:`sourcecheckup.review.agreement.agreement_report` as plain-text rows."""
    out: list[AgreementRow] = []
    for c in report.get("comparisons", []):
        ag, ka = c["agreement"], c["kappa"]
        kappa = kappa_words(ka["value"], c["n"])
        if ka["value"] is not None and ka["ci95"][0] is not None:
            kappa += f" (95% CI {ka['ci95'][0]:.2f} to {ka['ci95'][1]:.2f})"
        # the count beside the share: "3/3 · 100.0% (95% CI 29–100)" says how little three pairs show
        alike = sum(row.get(label, 0) for label, row in c["confusion"].items())
        agreement = "n/a" if not c["n"] else f"{alike}/{c['n']} · {pct_ci(ag['value'], ag['ci95'])}"
        out.append(AgreementRow(c["rater_a"], c["rater_b"], c["kind"].replace("-", " vs "), c["n"],
                                agreement, kappa))
    return out


def agreement_summary(report: Mapping[str, Any]) -> str:
    return (f"{count_noun(report['pairs_reviewed'], 'pair')} reviewed by "
            f"{count_noun(len(report['reviewers']), 'reviewer')} "
            f"({report['reviews']} labels, {report['unsure']} unsure); majority on {report['pairs_with_majority']}; "
            f"{len(report['overturned'])} judge verdicts overturned.")


def sample_labels(store: Store, run_id: str, sample: str, reviewer: str) -> dict[tuple[int, str], str]:
    """(statement_pk, url) -> the reviewer's latest label given within the named review sample."""
    from ..review.labels import reviews

    out: dict[tuple[int, str], str] = {}
    for r in reviews(store, run_id, latest_only=False):
        if r.sample == sample and r.reviewer == reviewer:
            out[(r.statement_pk, r.url)] = r.label.value
    return out


@dataclass(frozen=True)
class SampleReview:
    """A review sample ready to label: its pairs, each source's text, and for each pair the passage
    that best matches the statement (BM25, the judge's verdict plays no part: safe in blind mode)."""

    run_id: str
    name: str
    pairs: list  # list[review.sample.SamplePair]
    texts: dict[str, str]
    passages: dict[int, str]      # pair_id -> best passage


def load_sample_review(store: Store, run_id: str, name: str) -> SampleReview:
    from ..evidence import SourceText, rank_passages
    from ..review.sample import sample_pairs

    pairs = sample_pairs(store, run_id, name)
    data = store.load_run(run_id)
    texts = {p.url: data.sources[p.url].source.text for p in pairs if p.url in data.sources}
    prepared: dict[str, SourceText] = {}
    passages: dict[int, str] = {}
    for p in pairs:
        text = texts.get(p.url, "")
        if not text:
            continue
        st = prepared.get(p.url) or prepared.setdefault(p.url, SourceText.from_text(text, p.url))
        best = rank_passages(p.statement, st, k=1)
        if best:
            passages[p.pair_id] = st.passages[best[0][0]]
    return SampleReview(run_id, name, pairs, texts, passages)
