"""The study's metrics, computed from stored rows, with 95% intervals honest at small n.

- source URL validity = fetched cited URLs with readable text (full text, an abstract or a paywall teaser)
  / fetched cited URLs
- full-text validity = fetched cited URLs read in full (status ok) / fetched cited URLs
- statement-level support = claims supported by >= 1 source / decided claims
- response-level support = responses all of whose claims are supported / decided responses
- unused sources = valid sources that support no claim / valid sources every claim's pair decided

Decided: a claim with no readable source IS decided, and unsupported (the study's definition; status
``no_readable_source``). A claim is undecided, and left out of statement support, when no pair supports it
and a pair is a judge error (``judge_error``), the judges split with no majority (``judges_disagree``,
``--consensus majority``) or a pair is not judged yet (``pending``). A response is left out of response
support when it was not read, has no claims, or has an undecided claim and no unsupported one.
``counts["excluded"]`` names how many units each figure leaves out, and why.

Intervals (:mod:`.intervals`): Clopper–Pearson for URLs, sources and responses (independent units);
Korn–Graubard for statements (clustered by response). Each metric records its method (``ci_method``).
"""
from __future__ import annotations

from array import array
from collections import Counter
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Callable, Iterable, Mapping, Sequence

from ..models import FetchStatus, Label, StatementStatus
from ..references.model import is_reference_key
from ..store import RunData, StatementRow, VerdictRow
from .intervals import Z95, clopper_pearson, korn_graubard, wilson_interval  # noqa: F401  (wilson_interval, Z95: re-exported)

BOOTSTRAP_RESAMPLES = 1000


class Consensus(str, Enum):
    """How several judges' verdicts on one pair combine."""

    FIRST = "first"        # the first judge named decides; the others are shown
    ANY = "any"
    ALL = "all"
    MAJORITY = "majority"


# How a metric's interval was computed (recorded with every metric and in the report's audit trail).
CI_EXACT = "clopper_pearson"                  # Clopper–Pearson exact interval of k/n (independent units)
CI_CLUSTERED = "korn_graubard"                # Korn–Graubard: exact interval on the design-effect sample size
CI_WILSON = "wilson"                          # Wilson score interval of k/n (reference checks, comparisons)
CI_BOOTSTRAP = "bootstrap_responses"          # reports written before 25: percentile bootstrap over responses
CI_WILSON_FALLBACK = "wilson_fallback"        # reports written before 25: the bootstrap gave a zero-width interval
CI_METHODS = {
    CI_EXACT: "Clopper-Pearson exact interval (independent units)",
    CI_CLUSTERED: ("Korn-Graubard interval: Clopper-Pearson on the effective sample size n / design effect, "
                   "the design effect from the cluster-robust variance over responses (at least 1), "
                   "t quantile on Satterthwaite's degrees of freedom for that variance (at most responses - 1)"),
    CI_WILSON: "Wilson score interval",
    CI_BOOTSTRAP: f"percentile bootstrap over responses ({BOOTSTRAP_RESAMPLES} resamples, seeded)",
    CI_WILSON_FALLBACK: "Wilson score interval (the bootstrap over responses gave a zero-width interval)",
}
# each headline metric's name as a report shows it
METRIC_NAMES = {"url_validity": "Source URL validity", "full_text_validity": "Full-text validity",
                "statement_support": "Statement-level support",
                "response_support": "Response-level support", "unused_sources": "Unused sources",
                "answer_citation_validity": "Per-answer citation validity"}


def percent(value: float | None, digits: int = 1, *, missing: str = "n/a", signed: bool = False) -> str:
    """A rate as every front end writes it: 0.825 -> "82.5%"; ``signed`` for a difference ("+4.0%")."""
    if value is None:
        return missing
    return f"{100 * value:{'+' if signed else ''}.{digits}f}%"


@dataclass(frozen=True)
class Metric:
    value: float | None
    ci95: tuple[float | None, float | None]
    n: int           # denominator: decided units
    k: int           # numerator
    method: str = CI_EXACT
    design_effect: float | None = None    # Korn–Graubard: the design effect used (None: not estimable, 1 taken)
    n_eff: float | None = None            # Korn–Graubard: the effective sample size

    def as_dict(self) -> dict[str, Any]:
        d = {"value": self.value, "ci95": list(self.ci95), "n": self.n, "k": self.k, "ci_method": self.method}
        if self.method == CI_CLUSTERED:
            d["design_effect"] = self.design_effect
            d["n_eff"] = self.n_eff
        return d


def _exact_metric(k: int, n: int) -> Metric:
    lo, hi = clopper_pearson(k, n)
    return Metric(k / n, (round(lo, 6), round(hi, 6)), n, k, CI_EXACT)


def proportion(outcomes: Sequence[bool], seed: int = 0, resamples: int = BOOTSTRAP_RESAMPLES) -> Metric:
    """A rate k/n over independent units with its Clopper–Pearson 95% interval (``seed``, ``resamples`` are
    kept for callers)."""
    return proportion_of(sum(1 for o in outcomes if o), len(outcomes))


def clustered_proportion(clusters: Sequence[Sequence[bool]], seed: int = 0,
                         resamples: int = BOOTSTRAP_RESAMPLES) -> Metric:
    """A proportion over units grouped by response (statements of one answer are not independent), with the
    Korn–Graubard 95% interval (:mod:`sourcecheckup.metrics.intervals`); ``seed``, ``resamples`` are kept for callers."""
    groups = [c for c in clusters if len(c)]
    return clustered_counts([sum(1 for o in c if o) for c in groups], [len(c) for c in groups], seed, resamples)


def clustered_counts(ks_per_group: Sequence[int], ns_per_group: Sequence[int], seed: int = 0,
                     resamples: int = BOOTSTRAP_RESAMPLES) -> Metric:
    """:func:`clustered_proportion` from each non-empty group's (supported, decided) counts."""
    n, k = int(sum(ns_per_group)), int(sum(ks_per_group))
    if n == 0:
        return Metric(None, (None, None), 0, 0, CI_CLUSTERED)
    lo, hi, n_eff, deff = korn_graubard(ks_per_group, ns_per_group)
    return Metric(k / n, (round(lo, 6), round(hi, 6)), n, k, CI_CLUSTERED,
                  None if deff is None else round(deff, 6), round(n_eff, 6))


# ------------------------------------------------------------------------- pair / statement

def pair_label(labels: Sequence[Label], rule: Consensus = Consensus.FIRST) -> Label | None:
    """Combine the verdicts of several judges (in judge order) on one pair; None if none yet."""
    if not labels:
        return None
    if rule is Consensus.FIRST:
        return labels[0]
    sup = sum(1 for lab in labels if lab is Label.SUPPORTED)
    nots = sum(1 for lab in labels if lab is Label.NOT_SUPPORTED)
    err = len(labels) - sup - nots
    if rule is Consensus.ANY:
        return Label.SUPPORTED if sup else (Label.JUDGE_ERROR if err else Label.NOT_SUPPORTED)
    if rule is Consensus.ALL:
        if nots:
            return Label.NOT_SUPPORTED
        return Label.JUDGE_ERROR if err else Label.SUPPORTED
    half = len(labels) / 2
    if sup > half:
        return Label.SUPPORTED
    if nots > half:
        return Label.NOT_SUPPORTED
    # no majority: the judges that decided split (a disagreement), or too many failed (a judge error)
    return Label.JUDGES_DISAGREE if sup and nots else Label.JUDGE_ERROR


@dataclass(frozen=True)
class StatementAssessment:
    row: StatementRow
    status: StatementStatus
    supporting_urls: tuple[str, ...]
    # url -> combined label for this pair (None while pending)
    pair_labels: Mapping[str, Label | None]
    disagreement: bool          # judges disagree on at least one pair


@dataclass
class ResponseAssessment:
    response_pk: int
    rid: str
    model: str | None
    statements: list[StatementAssessment]
    urls: list[str]
    valid_urls: list[str]
    supported: bool | None        # every informative statement supported; None if undecided / no claims
    unused_urls: list[str]
    undecided_urls: list[str]


# a pair's combined label that decides nothing: it leaves the pair out of every figure
UNDECIDED_LABELS = frozenset({Label.JUDGE_ERROR, Label.JUDGES_DISAGREE})
# why a response has no response-level verdict, in the order one reason is named for it
RESPONSE_EXCLUSIONS = ("not_read", "no_claims", "pending", "judges_disagree", "judge_error")


def response_exclusion(r: "ResponseAssessment", parsed: bool = True) -> str | None:
    """Why response-level support leaves a response out (a key of ``RESPONSE_EXCLUSIONS``), None if it counts."""
    if r.supported is not None:
        return None
    if not parsed:
        return "not_read"
    statuses = {s.status for s in r.statements if s.row.statement.informative}
    if not statuses:
        return "no_claims"
    for reason in ("pending", "judges_disagree", "judge_error"):
        if StatementStatus(reason) in statuses:
            return reason
    return "pending"


# An override source: (statement_pk, url) -> Label decided by a person. Reviews plug in here.
Overrides = Mapping[tuple[int, str], Label]


def _judge_order(judges: Sequence[str], verdicts: Iterable[VerdictRow]) -> list[str]:
    order = list(judges)
    for v in verdicts:
        if v.verdict.judge_id not in order:
            order.append(v.verdict.judge_id)
    return order


def assess_statement(row: StatementRow, valid_urls: Sequence[str], verdicts: Sequence[VerdictRow],
                     judges: Sequence[str], rule: Consensus, overrides: Overrides | None = None,
                     unfetched_urls: Sequence[str] = ()) -> StatementAssessment:
    """``unfetched_urls``: cited sources not fetched yet (a run in flight or cancelled); while any
    is left, a statement no fetched source supports is pending, not unsupported."""
    if not row.statement.informative:
        return StatementAssessment(row, StatementStatus.NOT_A_CLAIM, (), {}, False)
    if not valid_urls:
        status = StatementStatus.PENDING if unfetched_urls else StatementStatus.NO_READABLE_SOURCE
        return StatementAssessment(row, status, (), {}, False)
    order = _judge_order(judges, verdicts)
    by_url: dict[str, dict[str, Label]] = {}
    for v in verdicts:
        by_url.setdefault(v.url, {})[v.verdict.judge_id] = v.verdict.label
    pair_labels: dict[str, Label | None] = {}
    disagreement = False
    for url in valid_urls:
        per_judge = by_url.get(url, {})
        if overrides and (row.pk, url) in overrides:
            pair_labels[url] = overrides[(row.pk, url)]
        else:
            present = [per_judge[j] for j in order if j in per_judge]
            # a pair is complete once every judge of the run has spoken
            complete = all(j in per_judge for j in judges) if judges else bool(present)
            pair_labels[url] = pair_label(present, rule) if complete else None
        decided = {lab for lab in per_judge.values() if lab is not Label.JUDGE_ERROR}
        disagreement = disagreement or len(decided) > 1
    supporting = tuple(u for u, lab in pair_labels.items() if lab is Label.SUPPORTED)
    if supporting:
        status = StatementStatus.SUPPORTED
    elif unfetched_urls or any(lab is None for lab in pair_labels.values()):
        status = StatementStatus.PENDING
    elif any(lab is Label.JUDGES_DISAGREE for lab in pair_labels.values()):
        status = StatementStatus.JUDGES_DISAGREE
    elif any(lab is Label.JUDGE_ERROR for lab in pair_labels.values()):
        status = StatementStatus.JUDGE_ERROR
    else:
        status = StatementStatus.NOT_SUPPORTED
    return StatementAssessment(row, status, supporting, pair_labels, disagreement)


def assess_run(data: RunData, rule: Consensus | str | None = None,
               overrides: Overrides | None = None) -> list[ResponseAssessment]:
    rule = Consensus(rule or data.run.config.get("consensus", "first"))
    judges = data.run.judges
    out: list[ResponseAssessment] = []
    for resp in data.responses:
        urls = list(resp.response.citations)
        valid = [u for u in urls if u in data.sources and data.sources[u].source.valid]
        unfetched = [u for u in urls if u not in data.sources]
        statements = [assess_statement(s, valid, data.verdicts.get(s.pk, []), judges, rule, overrides, unfetched)
                      for s in data.statements.get(resp.pk, [])]
        informative = [s for s in statements if s.row.statement.informative]
        if not resp.parsed or not informative:
            supported = None
        elif any(s.status.supported is False for s in informative):
            supported = False
        elif all(s.status.supported is True for s in informative):
            supported = True
        else:
            supported = None
        unused: list[str] = []
        undecided: list[str] = []
        for url in valid:
            labels = [s.pair_labels.get(url) for s in informative]
            if any(lab is Label.SUPPORTED for lab in labels):
                continue
            if any(lab is None or lab in UNDECIDED_LABELS for lab in labels):
                undecided.append(url)
            else:
                unused.append(url)
        out.append(ResponseAssessment(resp.pk, resp.response.id, resp.response.model, statements,
                                      urls, valid, supported, unused, undecided))
    return out


# ------------------------------------------------------------------------- metrics

def partial_run_note(counts: Mapping[str, Any]) -> str:
    """"partial run: 12 of 40 pairs judged" (and what else is pending), or "" when nothing is."""
    if not counts.get("partial"):
        return ""
    parts = [f"partial run: {counts.get('pairs_judged', 0)} of {counts.get('pairs', 0)} pairs judged"]
    if counts.get("urls_pending"):
        parts.append(f"{counts['urls_pending']} cited URLs not fetched yet")
    if counts.get("responses_unparsed"):
        parts.append(f"{counts['responses_unparsed']} responses not read yet")
    return "; ".join(parts) + " (pending work is left out of every figure)"


def judge_error_note(counts: Mapping[str, Any]) -> str:
    """A loud sentence when most of a run's verdicts are judge errors (every one, or more than half), else ""."""
    total, errors = counts.get("verdicts", 0), counts.get("judge_errors", 0)
    if not total or errors * 2 <= total:
        return ""
    share = f"{errors} of {total} verdicts ({100 * errors / total:.0f}%) are judge errors"
    if errors == total:
        return (f"every verdict is a judge error ({share.split(' (')[0]}): the judge decided nothing, so no "
                "support figure rests on a judgement; read the errors (`sourcecheckup show`) and fix the judge")
    return (f"{share}: the judge could not decide most pairs, so the support figures rest on the few it "
            "decided; read the errors (`sourcecheckup show`) and fix the judge")


@dataclass
class MetricSet:
    url_validity: Metric
    statement_support: Metric
    response_support: Metric
    unused_sources: Metric
    counts: dict[str, Any] = field(default_factory=dict)
    # URLs read in full (status ok, not a paywall teaser nor an abstract) / fetched URLs: URL validity counts those too
    full_text_validity: Metric = field(default_factory=lambda: Metric(None, (None, None), 0, 0))
    # answers whose every cited URL is valid / answers citing a URL, all of them fetched (Almanac: Zakka et al.,
    # NEJM AI 2024, citation validity scored 1 per answer only when every citation is valid)
    answer_citation_validity: Metric = field(default_factory=lambda: Metric(None, (None, None), 0, 0))

    def as_dict(self) -> dict[str, Any]:
        return {"url_validity": self.url_validity.as_dict(),
                "full_text_validity": self.full_text_validity.as_dict(),
                "statement_support": self.statement_support.as_dict(),
                "response_support": self.response_support.as_dict(),
                "unused_sources": self.unused_sources.as_dict(),
                "answer_citation_validity": self.answer_citation_validity.as_dict()}


class MetricsTally:
    """The counts behind the four metrics, added a page of responses at a time (a 100,000-answer run
    is never loaded whole); :func:`compute_metrics` is one tally over the whole run."""

    def __init__(self) -> None:
        self.url_k = self.url_n = self.unused_k = self.unused_n = self.full_text_k = 0
        self.response_excluded: Counter[str] = Counter()
        self.statement_k: array[int] = array("q")   # per response with a decided statement: supported, decided
        self.statement_n: array[int] = array("q")
        self.response_ok = bytearray()               # per decided response: 1 supported, 0 not
        self.status_counts: Counter[str] = Counter()
        self.outcome_counts: Counter[str] = Counter()
        self.pairs_total = self.pairs_judged = self.responses = self.responses_undecided = 0
        self.statements = self.responses_unparsed = self.verdicts = self.judge_errors = 0
        self.unused_undecided = 0
        self.written_references = 0                  # citations of written references without a URL
        self.answers_all_valid = self.answers_cited = 0   # per-answer citation validity: k, n
        self.answers_no_url = self.answers_url_pending = 0

    def add(self, data: RunData, assessed: Sequence[ResponseAssessment]) -> "MetricsTally":
        """Add responses (``assessed``, with their rows in ``data``)."""
        unparsed = {resp.pk for resp in data.responses if not resp.parsed}
        for r in assessed:
            for url in r.urls:
                if is_reference_key(url):      # a written reference with no URL: checked as a reference, never
                    self.written_references += 1   # a cited URL (its failed "fetch" is no dead link)
                    continue
                src = data.sources.get(url)
                self.outcome_counts[src.source.status.value if src else "not_fetched"] += 1
                if src is not None:            # a source not fetched yet is pending, not a failure
                    self.url_n += 1
                    self.url_k += bool(src.source.valid)
                    self.full_text_k += bool(src.source.valid and src.source.status is FetchStatus.OK)
            self._add_answer_validity(data, r)
            open_urls = [u for u in r.urls if u in r.valid_urls or u not in data.sources]
            for s in r.statements:
                if s.row.statement.informative:
                    self.pairs_total += len(open_urls)
                    self.pairs_judged += sum(1 for u in open_urls if s.pair_labels.get(u) is not None)
            k = n = 0
            for s in r.statements:
                self.status_counts[s.status.value] += 1
                if s.status.supported is not None:
                    n += 1
                    k += bool(s.status.supported)
            if n:
                self.statement_k.append(k)
                self.statement_n.append(n)
            if r.supported is not None:
                self.response_ok.append(1 if r.supported else 0)
            else:
                self.response_excluded[response_exclusion(r, r.response_pk not in unparsed) or "pending"] += 1
            self.unused_k += len(r.unused_urls)
            self.unused_n += len(r.valid_urls) - len(r.undecided_urls)
            self.unused_undecided += len(r.undecided_urls)
            self.responses += 1
            self.responses_undecided += r.supported is None
            self.statements += len(r.statements)
        # unparsed responses and verdicts of the responses added (all of ``data``'s when it is their run or group)
        for r in assessed:
            self.responses_unparsed += r.response_pk in unparsed
            for s in r.statements:
                vs = data.verdicts.get(s.row.pk, ())
                self.verdicts += len(vs)
                self.judge_errors += sum(1 for v in vs if v.verdict.label is Label.JUDGE_ERROR)
        return self

    def _add_answer_validity(self, data: RunData, r: ResponseAssessment) -> None:
        """One answer in per-answer citation validity: 1 only when every cited URL is valid; an answer citing
        no URL, or with a cited URL not fetched yet, is left out (and counted apart)."""
        urls = [u for u in r.urls if not is_reference_key(u)]
        if not urls:
            self.answers_no_url += 1
        elif any(u not in data.sources for u in urls):
            self.answers_url_pending += 1
        else:
            self.answers_cited += 1
            self.answers_all_valid += all(data.sources[u].source.valid for u in urls)

    def result(self, seed: int = 0, *, skipped: int = 0, bootstrap: bool = True) -> "MetricSet":
        """The metrics from the counts (``seed`` and ``bootstrap`` are kept for callers: no interval resamples)."""
        status_counts, outcome_counts = self.status_counts, self.outcome_counts
        counts = {
            "responses": self.responses,
            "responses_undecided": self.responses_undecided,
            "statements": self.statements,
            "informative_statements": sum(v for k, v in status_counts.items()
                                          if k != StatementStatus.NOT_A_CLAIM.value),
            "statement_status": dict(sorted(status_counts.items())),
            "urls": self.url_n,
            "fetch_outcomes": dict(sorted(outcome_counts.items())),
            "fetch_failures": sum(v for k, v in outcome_counts.items()
                                  if k not in ("ok", "abstract_only", "paywalled", "not_fetched")),
            "urls_pending": outcome_counts.get("not_fetched", 0),
            "pairs": self.pairs_total,
            "pairs_judged": self.pairs_judged,
            "responses_unparsed": self.responses_unparsed,
            "statements_pending": status_counts.get(StatementStatus.PENDING.value, 0),
            "verdicts": self.verdicts,
            "judge_errors": self.judge_errors,
            "skipped_records": skipped,
        }
        counts["judges_disagree"] = status_counts.get(StatementStatus.JUDGES_DISAGREE.value, 0)
        counts["full_text_urls"] = self.full_text_k
        counts["answers_all_citations_valid"] = self.answers_all_valid
        # what each figure leaves out of its denominator, and why (every summary names these)
        # written references without a URL are no cited URLs: URL validity leaves them out, and says so
        written = {"written_reference": self.written_references} if self.written_references else {}
        if written:
            counts["written_references"] = self.written_references
        counts["excluded"] = {
            "url_validity": {"not_fetched": outcome_counts.get("not_fetched", 0), **written},
            "full_text_validity": {"not_fetched": outcome_counts.get("not_fetched", 0), **written},
            "statement_support": {k: status_counts.get(k, 0) for k in ("judges_disagree", "judge_error", "pending")},
            "response_support": {k: self.response_excluded.get(k, 0) for k in RESPONSE_EXCLUSIONS},
            "unused_sources": {"undecided": self.unused_undecided},
            "answer_citation_validity": {"no_url": self.answers_no_url, "not_fetched": self.answers_url_pending},
        }
        counts["partial"] = bool(counts["urls_pending"] or counts["responses_unparsed"]
                                 or self.pairs_judged < self.pairs_total or counts["statements_pending"])
        # statements are clustered by response (Korn–Graubard); responses, URLs and sources are independent units
        statements = clustered_counts(self.statement_k, self.statement_n)
        responses = proportion_of(sum(self.response_ok), len(self.response_ok))
        return MetricSet(proportion_of(self.url_k, self.url_n), statements, responses,
                         proportion_of(self.unused_k, self.unused_n), counts,
                         proportion_of(self.full_text_k, self.url_n),
                         proportion_of(self.answers_all_valid, self.answers_cited))


def proportion_of(k: int, n: int) -> Metric:
    """:func:`proportion` from its counts (k of n)."""
    return Metric(None, (None, None), 0, 0, CI_EXACT) if n == 0 else _exact_metric(k, n)


def compute_metrics(data: RunData, assessed: Sequence[ResponseAssessment] | None = None, *,
                    seed: int | None = None, rule: Consensus | str | None = None,
                    overrides: Overrides | None = None, bootstrap: bool = True) -> MetricSet:
    """The metrics and the counts behind them (``bootstrap`` is kept for callers: every interval is now
    computed in closed form, none resamples)."""
    assessed = assess_run(data, rule, overrides) if assessed is None else assessed
    seed = int(data.run.config.get("seed", 0)) if seed is None else seed
    return MetricsTally().add(data, assessed).result(seed, skipped=len(data.skipped), bootstrap=bootstrap)


def headline(data: RunData, *, intervals: bool = True) -> MetricSet:
    """A run's headline metrics as the run list shows them (`sourcecheckup runs`, the app's Runs
    panel): the run's own consensus rule and seed, no reviewer overrides. ``intervals=False``
    skips the bootstrap when only the values are shown."""
    return compute_metrics(data, bootstrap=intervals)


def metrics_by(data: RunData, key: Callable[[ResponseAssessment], str | None],
               assessed: Sequence[ResponseAssessment] | None = None, **kw: Any) -> dict[str, MetricSet]:
    """Metrics per group (model, question source...) over the same stored rows."""
    assessed = assess_run(data, kw.get("rule"), kw.get("overrides")) if assessed is None else assessed
    groups: dict[str, list[ResponseAssessment]] = {}
    for r in assessed:
        groups.setdefault(key(r) or "(none)", []).append(r)
    out: dict[str, MetricSet] = {}
    for name, members in sorted(groups.items()):
        pks = {m.response_pk for m in members}
        statements = {k: v for k, v in data.statements.items() if k in pks}
        spks = {row.pk for rows in statements.values() for row in rows}
        sub = RunData(run=data.run, responses=[r for r in data.responses if r.pk in pks],
                      statements=statements, sources=data.sources,
                      verdicts={k: v for k, v in data.verdicts.items() if k in spks}, skipped=[])
        out[name] = compute_metrics(sub, members, seed=kw.get("seed"))
    return out


# the two bases of every figure: the judges' verdicts alone (the default everywhere: CLI, app, report), or with
# the reviewers' overrides in their place (`report --with-reviews`, the app's "With reviewer overrides")
JUDGES_ONLY = "judges only"
WITH_REVIEWS = "with reviewer overrides"


def figure_basis(with_overrides: bool, *, short: bool = False) -> str:
    """The words named beside a figure for its basis (``short``: "with reviews", for a metric card)."""
    if with_overrides:
        return "with reviews" if short else WITH_REVIEWS
    return JUDGES_ONLY


def overrides_words(n: int, applied: bool) -> str:
    """"3 overrides (not applied)" / "3 overrides applied" / "no reviewer overrides": the count line's words."""
    if not n:
        return "no reviewer overrides"
    noun = "override" if n == 1 else "overrides"
    return f"{n} {noun} applied" if applied else f"{n} {noun} (not applied)"


# what each figure leaves out, in words: (unit singular, plural) and each reason's words
_EXCLUDED_UNITS = {"url_validity": ("cited URL", "cited URLs"), "full_text_validity": ("cited URL", "cited URLs"),
                   "statement_support": ("claim", "claims"), "response_support": ("response", "responses"),
                   "unused_sources": ("valid source", "valid sources"),
                   "answer_citation_validity": ("answer", "answers")}
EXCLUSION_WORDS = {"not_fetched": "not fetched yet", "judge_error": "judge error", "judges_disagree": "judges disagree",
                   "pending": "not judged yet", "not_read": "not read yet", "no_claims": "no claims",
                   "undecided": "with an undecided pair", "no_url": "citing no URL",
                   "written_reference": "written reference without a URL, checked as a reference"}


def exclusion_notes(counts: Mapping[str, Any]) -> dict[str, str]:
    """Per figure, what its denominator leaves out and why: {"statement_support": "leaves out 3 claims
    (2 judges disagree, 1 judge error)"}; "leaves out nothing" when it counts every unit."""
    out: dict[str, str] = {}
    for key, reasons in (counts.get("excluded") or {}).items():
        one, many = _EXCLUDED_UNITS.get(key, ("unit", "units"))
        total = sum(reasons.values())
        if not total:
            out[key] = "leaves out nothing"
            continue
        parts = ", ".join(f"{n} {EXCLUSION_WORDS.get(reason, reason.replace('_', ' '))}"
                          for reason, n in reasons.items() if n)
        out[key] = f"leaves out {total} {one if total == 1 else many} ({parts})"
    return out
