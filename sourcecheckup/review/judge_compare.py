"""Which judge to trust, measured on the user's own reviews.

For each judge of a run, against the reviewers' majority on the pairs they reviewed (review mode
or a review sample): agreement with an exact (Clopper–Pearson) 95% interval, Cohen's kappa (on at
least :data:`sourcecheckup.review.agreement.MIN_KAPPA_PAIRS` pairs, as every agreement table), balanced accuracy
(the mean of the recall of 'supported' and of 'not supported'), and the pairs where the judge
and the reviewers differ. One judge is recommended: the highest balanced accuracy among those
with at least :data:`MIN_PAIRS` compared pairs. A judge error is not a label: the pair is left
out of that judge's figures and counted in ``judge_errors``. Everything comes from stored rows.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..metrics import percent
from ..metrics.intervals import clopper_pearson
from ..models import Label
from ..store import Store
from .agreement import AGREEMENT_CI_METHOD, LABELS, MIN_KAPPA_PAIRS, Pair, _judge_labels, _reviewer_labels, cohen_kappa
from .labels import reviews

MIN_PAIRS = 20          # fewer compared pairs than this and no judge is recommended
S, N = Label.SUPPORTED.value, Label.NOT_SUPPORTED.value
_WORDS = {S: "supported", N: "not supported"}


@dataclass(frozen=True)
class Disagreement:
    """A pair on which a judge's label differs from the reviewers' majority."""

    statement_pk: int
    url: str
    response_id: str
    statement: str
    source_title: str
    judge_label: str
    reviewers_label: str
    reviews: dict[str, str]          # reviewer -> label, as each last labelled the pair

    def as_dict(self) -> dict[str, Any]:
        return {"statement_pk": self.statement_pk, "url": self.url, "response_id": self.response_id,
                "statement": self.statement, "source_title": self.source_title, "judge_label": self.judge_label,
                "reviewers_label": self.reviewers_label, "reviews": dict(self.reviews)}


@dataclass(frozen=True)
class JudgeScore:
    """One judge against the reviewers' majority."""

    judge: str
    pairs: int                                   # pairs with a majority and a decided judge label
    agree: int
    agreement: float | None
    agreement_ci95: tuple[float | None, float | None]
    kappa: float | None                          # None when undefined (one label used throughout) or on too few pairs
    balanced_accuracy: float | None              # None unless the majority holds both labels
    recall_supported: float | None               # of the pairs the reviewers call supported
    recall_not_supported: float | None
    confusion: dict[str, dict[str, int]]         # judge label -> reviewers' label -> pairs
    judge_errors: int                            # majority pairs this judge could not decide
    disagreements: tuple[Disagreement, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        return {"judge": self.judge, "pairs": self.pairs, "agree": self.agree,
                "agreement": {"value": self.agreement, "ci95": list(self.agreement_ci95), "ci_method": AGREEMENT_CI_METHOD},
                "kappa": self.kappa, "balanced_accuracy": self.balanced_accuracy,
                "recall_supported": self.recall_supported, "recall_not_supported": self.recall_not_supported,
                "confusion": self.confusion, "judge_errors": self.judge_errors,
                "disagreements": [d.as_dict() for d in self.disagreements]}


@dataclass(frozen=True)
class JudgeComparison:
    run_id: str
    reviewers: tuple[str, ...]
    reviews: int                      # latest label per (pair, reviewer), 'unsure' included
    pairs_reviewed: int
    pairs_with_majority: int
    judges: tuple[JudgeScore, ...]
    recommended: str | None
    recommendation: str               # one plain sentence: the choice and why, or why none
    min_pairs: int = MIN_PAIRS

    def score(self, judge: str) -> JudgeScore:
        return next(s for s in self.judges if s.judge == judge)

    def as_dict(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "reviewers": list(self.reviewers), "reviews": self.reviews,
                "pairs_reviewed": self.pairs_reviewed, "pairs_with_majority": self.pairs_with_majority,
                "min_pairs": self.min_pairs, "recommended": self.recommended,
                "recommendation": self.recommendation, "judges": [s.as_dict() for s in self.judges]}


def _recall(confusion: dict[str, dict[str, int]], label: str) -> float | None:
    total = sum(confusion[j][label] for j in LABELS)
    return confusion[label][label] / total if total else None


def _score(judge: str, labels: dict[Pair, str], errors: set[Pair], majority: dict[Pair, str],
           texts: dict[int, tuple[str, str]], titles: dict[str, str],
           by_pair: dict[Pair, dict[str, str]]) -> JudgeScore:
    common = sorted(set(labels) & set(majority))
    confusion = {j: {r: 0 for r in LABELS} for j in LABELS}
    for p in common:
        confusion[labels[p]][majority[p]] += 1
    agree = sum(confusion[lab][lab] for lab in LABELS)
    n = len(common)
    ci = clopper_pearson(agree, n) if n else (None, None)
    rs, rn = _recall(confusion, S), _recall(confusion, N)
    disagreements = []
    for p in common:
        if labels[p] != majority[p]:
            rid, text = texts.get(p[0], ("", ""))
            disagreements.append(Disagreement(p[0], p[1], rid, text, titles.get(p[1], ""), labels[p], majority[p],
                                              dict(sorted(by_pair[p].items()))))
    return JudgeScore(
        judge=judge, pairs=n, agree=agree, agreement=agree / n if n else None,
        agreement_ci95=(None, None) if ci[0] is None else (round(ci[0], 6), round(ci[1], 6)),
        kappa=cohen_kappa([labels[p] for p in common], [majority[p] for p in common])
        if n >= MIN_KAPPA_PAIRS else None,
        balanced_accuracy=None if rs is None or rn is None else (rs + rn) / 2,
        recall_supported=rs, recall_not_supported=rn, confusion=confusion,
        judge_errors=len(errors & set(majority)), disagreements=tuple(disagreements))


def _recommend(scores: list[JudgeScore], min_pairs: int) -> tuple[str | None, str]:
    if not scores:
        return None, "The run has no judges to compare."
    if not any(s.pairs for s in scores):
        return None, ("No reviewed pair has both a reviewers' majority and a judge's label yet: review pairs "
                      "(review mode or a review sample) to compare the judges.")
    enough = [s for s in scores if s.pairs >= min_pairs]
    if not enough:
        most = max(scores, key=lambda s: s.pairs)
        return None, (f"Too few reviewed pairs to recommend a judge: at most {most.pairs} per judge "
                      f"({most.judge}); at least {min_pairs} are needed.")
    rated = [s for s in enough if s.balanced_accuracy is not None]
    if not rated:
        return None, ("No recommendation: balanced accuracy needs reviewed pairs of both kinds (supported and "
                      "not supported by the reviewers' majority); review some of the other kind.")
    # ties: kappa, then agreement, then more pairs; the run's own judge order last
    best = max(rated, key=lambda s: (s.balanced_accuracy, s.kappa if s.kappa is not None else -2.0,
                                     s.agreement or 0.0, s.pairs, -scores.index(s)))
    others = [s for s in scores if s is not best]
    why = f"the highest balanced accuracy ({percent(best.balanced_accuracy)})" if others else \
        f"the only judge; balanced accuracy {percent(best.balanced_accuracy)}"
    few = [s.judge for s in others if s.pairs < min_pairs]
    tail = f"; not rated, fewer than {min_pairs} pairs: {', '.join(few)}" if few else ""
    return best.judge, f"Recommended: {best.judge}, {why} on {best.pairs} reviewed pairs{tail}."


def compare_judges(store: Store, run_id: str, *, min_pairs: int = MIN_PAIRS) -> JudgeComparison:
    """Each judge of the run scored against the reviewers' majority, and the judge to trust."""
    data = store.load_run(run_id)
    rows = reviews(store, data.run.id)
    by_reviewer, majority, by_pair = _reviewer_labels(rows)
    judges = _judge_labels(data)
    errors: dict[str, set[Pair]] = {j: set() for j in judges}
    for spk, vs in data.verdicts.items():
        for v in vs:
            if v.verdict.label is Label.JUDGE_ERROR and (spk, v.url) not in judges.get(v.verdict.judge_id, {}):
                errors.setdefault(v.verdict.judge_id, set()).add((spk, v.url))
                judges.setdefault(v.verdict.judge_id, {})
    texts = {row.pk: (resp.response.id, row.statement.text)
             for resp in data.responses for row in data.statements.get(resp.pk, [])}
    titles = {url: s.source.title or "" for url, s in data.sources.items()}
    scores = [_score(j, labels, errors.get(j, set()), majority, texts, titles, by_pair)
              for j, labels in judges.items()]
    recommended, sentence = _recommend(scores, min_pairs)
    return JudgeComparison(run_id=data.run.id, reviewers=tuple(sorted({r.reviewer for r in rows})),
                           reviews=len(rows), pairs_reviewed=len(by_pair), pairs_with_majority=len(majority),
                           judges=tuple(scores), recommended=recommended, recommendation=sentence,
                           min_pairs=min_pairs)


def _plain(text: str) -> str:
    """Untrusted text for a terminal: control characters (escape sequences, line breaks) become spaces."""
    return "".join(ch if ch.isprintable() else " " for ch in text)


def _num(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None else f"{value:.{digits}f}"


def agreement_text(s: JudgeScore) -> str:
    """"83.3% (95% CI 64.1–93.3%)", or n/a."""
    if s.agreement is None:
        return "n/a"
    lo, hi = s.agreement_ci95
    return f"{percent(s.agreement)} (95% CI {percent(lo)}–{percent(hi)})"


def format_comparison(c: JudgeComparison, *, max_disagreements: int = 20) -> str:
    """The terminal view of :func:`compare_judges`: a table, the recommendation, the disagreements."""
    lines = [f"Judges of run {c.run_id} against the reviewers' majority: {c.pairs_reviewed} pairs reviewed by "
             f"{len(c.reviewers)} reviewer(s) ({_plain(', '.join(c.reviewers)) or 'none'}), "
             f"a majority on {c.pairs_with_majority}."]
    if c.judges:
        width = max(len("judge"), *(len(s.judge) for s in c.judges))
        lines.append("")
        lines.append(f"{'judge':<{width}}  {'pairs':>5}  {'agreement (95% CI)':<30}  {'kappa':>5}  "
                     f"{'bal. acc.':>9}  {'errors':>6}  disagrees")
        for s in c.judges:
            kappa = "few" if s.pairs < MIN_KAPPA_PAIRS else _num(s.kappa)
            lines.append(f"{_plain(s.judge):<{width}}  {s.pairs:>5}  {agreement_text(s):<30}  {kappa:>5}  "
                         f"{percent(s.balanced_accuracy):>9}  {s.judge_errors:>6}  {len(s.disagreements)}")
        if any(s.pairs < MIN_KAPPA_PAIRS for s in c.judges):
            lines.append(f"(kappa \"few\": too few pairs to estimate, fewer than {MIN_KAPPA_PAIRS} compared pairs)")
    lines += ["", _plain(c.recommendation)]
    for s in c.judges:
        if not s.disagreements:
            continue
        lines += ["", f"Where {_plain(s.judge)} disagrees with the reviewers ({len(s.disagreements)}):"]
        for d in s.disagreements[:max_disagreements]:
            statement = _plain(d.statement if len(d.statement) <= 100 else d.statement[:99] + "…")
            lines.append(f"  {_plain(d.response_id)}: {statement}")
            lines.append(f"      source {_plain(d.url)} · judge: {_WORDS[d.judge_label]} · "
                         f"reviewers: {_WORDS[d.reviewers_label]}")
        if len(s.disagreements) > max_disagreements:
            lines.append(f"  … and {len(s.disagreements) - max_disagreements} more (--json lists them all)")
    return "\n".join(lines)
