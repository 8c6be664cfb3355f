"""Read-only views of a stored run shaped for a results screen.

The desktop app is a view over these functions (they hold no Qt): which responses a run has
and what is wrong with each, a response's sources in plain words, the support matrix with every
judge's verdict and any reviewer override, the list of pairs a reviewer walks through, where a
statement sits in its answer and a quote in its source, and a suggestion's word diff.
(Suggestions themselves, decisions and the revised answer live in sourcecheckup.cleanup.)
"""
from __future__ import annotations

import csv
import difflib
import io
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Mapping, Sequence

from .evidence import locate_quote, normalised_with_map
from .metrics import (Consensus, MetricSet, Overrides, ResponseAssessment, StatementAssessment,
                      assess_run, compute_metrics, headline, pair_label)
from .models import FetchStatus, Label, Source, StatementStatus, Verdict
from .store import RunData, Store, VerdictRow
from .urls import domain_of  # noqa: F401  (the one domain rule; ui imports it from here too)

# ----------------------------------------------------------------------------- run view


@dataclass(frozen=True)
class ResponseSummary:
    """One row of a run's responses table."""

    response_pk: int
    rid: str
    model: str
    question: str
    statements: int          # all sentences parsed
    claims: int              # informative statements
    supported_claims: int
    decided_claims: int
    sources: int
    valid_sources: int
    supported: bool | None   # every claim supported; None while undecided
    problems: str            # "2 unsupported · 1 dead link", "" when none

    @property
    def support_text(self) -> str:
        if not self.decided_claims:
            return "–"
        return f"{self.supported_claims}/{self.decided_claims}"

    def matches(self, needle: str) -> bool:
        needle = needle.casefold().strip()
        return not needle or any(needle in v.casefold() for v in (self.rid, self.model, self.question,
                                                                    self.problems))


@dataclass
class RunView:
    """Everything a results screen shows for one run, computed off the GUI thread."""

    data: RunData
    assessed: list[ResponseAssessment]
    metrics: MetricSet
    summaries: list[ResponseSummary]
    overrides: Overrides
    with_overrides: bool
    _by_pk: dict[int, ResponseAssessment] = field(default_factory=dict, repr=False)

    def assessment(self, response_pk: int) -> ResponseAssessment | None:
        if not self._by_pk:
            self._by_pk = {a.response_pk: a for a in self.assessed}
        return self._by_pk.get(response_pk)


def load_run_view(store: Store, run_id: str, *, with_overrides: bool = True) -> RunView:
    """Load, assess and measure a run (with or without reviewer overrides) in one call."""
    from .review import overrides as review_overrides

    data = store.load_run(run_id)
    found = review_overrides(store, data.run.id)
    used = found if with_overrides else None
    assessed = assess_run(data, overrides=used)
    metrics = compute_metrics(data, assessed, overrides=used)
    return RunView(data, assessed, metrics, response_summaries(data, assessed), found, with_overrides)


def response_summaries(data: RunData, assessed: Sequence[ResponseAssessment]) -> list[ResponseSummary]:
    by_pk = {r.pk: r for r in data.responses}
    out = []
    for a in assessed:
        resp = by_pk[a.response_pk].response
        claims = [s for s in a.statements if s.row.statement.informative]
        counts: dict[StatementStatus, int] = {}
        for s in claims:
            counts[s.status] = counts.get(s.status, 0) + 1
        problems = []
        for status, word in ((StatementStatus.NOT_SUPPORTED, "unsupported"),
                             (StatementStatus.NO_READABLE_SOURCE, "without a readable source"),
                             (StatementStatus.JUDGE_ERROR, "judge error"),
                             (StatementStatus.PENDING, "pending")):
            if counts.get(status):
                problems.append(f"{counts[status]} {word}")
        outcomes: dict[str, int] = {}
        for url in a.urls:
            src = data.sources.get(url)
            if src is not None and not src.source.valid:
                outcomes[src.source.status.plain] = outcomes.get(src.source.status.plain, 0) + 1
        problems.extend(f"{n} {word}" for word, n in sorted(outcomes.items()))
        if not a.urls:
            problems.append("no citations")
        decided = [s for s in claims if s.status.supported is not None]
        out.append(ResponseSummary(
            response_pk=a.response_pk, rid=resp.id, model=resp.model or "", question=resp.question or "",
            statements=len(a.statements), claims=len(claims),
            supported_claims=sum(1 for s in decided if s.status.supported),
            decided_claims=len(decided), sources=len(a.urls), valid_sources=len(a.valid_urls),
            supported=a.supported, problems=" · ".join(problems)))
    return out


# ----------------------------------------------------------------------------- runs list


@dataclass(frozen=True)
class RunSummary:
    id: str
    created_at: str
    status: str
    input: str
    judges: tuple[str, ...]
    responses: int
    statement_support: float | None
    response_support: float | None
    url_validity: float | None
    message: str
    name: str = ""
    note: str = ""

    @property
    def title(self) -> str:
        """The run's name, else its id."""
        return self.name or self.id

    @property
    def resumable(self) -> bool:
        return self.status in ("cancelled", "failed", "running")


def run_summaries(store: Store, limit: int = 200) -> list[RunSummary]:
    """Past runs, newest first, with their headline metrics (point estimates, no bootstrap)."""
    out = []
    for run in store.list_runs()[:limit]:
        data = store.load_run(run.id)
        m = headline(data, intervals=False)
        out.append(RunSummary(run.id, run.created_at, run.status, run.input, tuple(run.judges), len(data.responses),
                              m.statement_support.value, m.response_support.value, m.url_validity.value,
                              run.message, run.name, run.note))
    return out


# ----------------------------------------------------------------------------- sources


@dataclass(frozen=True)
class SourceSummary:
    url: str
    domain: str
    title: str
    status: FetchStatus | None     # None: not fetched yet
    outcome: str                   # plain words: "full text", "dead link", "archived copy"...
    reason: str
    flags: tuple[str, ...]
    source_id: int | None
    used: bool | None              # supports a statement; None while undecided or unreadable

    notes: tuple[str, ...] = ()    # "changed since 2026-01-05", "archived copy of 2019-03-15", "DOI 10.x/y"

    @property
    def flag_text(self) -> str:
        words = {"possible_injection": "possible injection", "changed": "changed since last audit",
                 "truncated": "truncated", "quote_not_found": "quote not found",
                 "archived": "read from an archived copy", "archived_copy_exists": "archived copy exists"}
        return ", ".join(words.get(f, f.replace("_", " ")) for f in self.flags)

    @property
    def note_text(self) -> str:
        return " · ".join(self.notes)


def source_summaries(view: RunView, response_pk: int) -> list[SourceSummary]:
    a = view.assessment(response_pk)
    if a is None:
        return []
    out = []
    for url in a.urls:
        row = view.data.sources.get(url)
        if row is None:
            out.append(SourceSummary(url, domain_of(url), "", None, "not fetched yet", "", (), None, None))
            continue
        src = row.source
        outcome = src.status.plain
        if src.origin == "archive":
            outcome = f"archived copy ({outcome})"
        elif src.origin == "local_file":
            outcome = f"local file ({outcome})"
        used = None
        if url in a.valid_urls and url not in a.undecided_urls:
            used = url not in a.unused_urls
        out.append(SourceSummary(url, domain_of(url), src.title or "", src.status, outcome, src.reason,
                                 tuple(src.flags), row.id, used, source_notes(src)))
    return out


def _day(value: object) -> str:
    text = str(value or "")
    return text[:10] if len(text) >= 10 and text[4:5] == "-" else text


def source_notes(src: Source) -> tuple[str, ...]:
    """What a reader should know about a source beyond its outcome, in plain words: a page that
    changed since an earlier audit, an archived copy read (or available) instead of a dead page,
    the DOI it was reached through."""
    meta = src.meta if isinstance(src.meta, Mapping) else {}
    notes = []
    if "changed" in src.flags:
        since = _day(meta.get("changed_since"))
        notes.append(f"changed since {since}" if since else "changed since an earlier audit")
    arch = meta.get("archive")
    arch_date = _day(arch.get("date") or arch.get("timestamp")) if isinstance(arch, Mapping) else ""
    if src.origin == "archive":
        notes.append(f"archived copy of {arch_date}" if arch_date else "archived copy")
    elif arch_date and isinstance(arch, Mapping) and arch.get("snapshot_url"):
        notes.append(f"archived copy of {arch_date} exists")
    doi = meta.get("doi")
    if isinstance(doi, str) and doi.strip():
        notes.append(f"DOI {doi.strip()}")
    return tuple(notes)


# ----------------------------------------------------------------------------- support matrix


@dataclass(frozen=True)
class MatrixCell:
    statement_pk: int
    url: str
    label: Label | None            # the label counted (override first, then the judges' consensus)
    judge_label: Label | None      # the judges' consensus alone
    verdicts: tuple[VerdictRow, ...]
    override: Label | None
    disagreement: bool
    readable: bool                 # the source could be read; otherwise no pair exists

    @property
    def primary(self) -> VerdictRow | None:
        return self.verdicts[0] if self.verdicts else None

    @property
    def contradicted(self) -> bool:
        """A judge found the source stating something different (not only silent on the claim)."""
        return any(CONTRADICTED in v.verdict.flags for v in self.verdicts
                   if v.verdict.label is Label.NOT_SUPPORTED)

    @property
    def review_first(self) -> bool:
        """The screening judge is unsure of this pair and no reviewer has labelled it yet."""
        return self.override is None and any(REVIEW_FIRST in v.verdict.flags for v in self.verdicts)


CONTRADICTED = "contradicted"     # Verdict.flags: the source states something different
REVIEW_FIRST = "review_first"     # Verdict.flags: the screening judge is unsure of this pair

SCREENING_JUDGE_NOTE = (
    "Screening judge (built-in): it checks numbers, units, doses, instructions, absolute claims and wording "
    "overlap; it does not understand the text as a reader does. For a stronger judge: Settings → Judges.")


SCREENING_JUDGE_SHORT = ("Screening judge: it checks numbers, units, doses, instructions, absolute claims and "
                         "wording overlap, not meaning. A stronger judge: Settings → Judges.")


def uses_screening_judge(judges: Sequence[str]) -> bool:
    """Whether a run's judges include the built-in screening judge."""
    return any(j.split(":", 1)[0].strip() == "builtin" for j in judges)


def verdict_word(verdict: Verdict) -> str:
    """A verdict's reading in words: "contradicted" where the source says something different."""
    if verdict.label is Label.NOT_SUPPORTED and CONTRADICTED in verdict.flags:
        return "contradicted"
    return {Label.SUPPORTED: "supported", Label.NOT_SUPPORTED: "not supported",
            Label.JUDGE_ERROR: "judge error"}[verdict.label]


@dataclass(frozen=True)
class SupportMatrix:
    statements: list[StatementAssessment]
    urls: list[str]
    cells: dict[tuple[int, str], MatrixCell]
    titles: dict[str, str] = field(default_factory=dict)   # url -> the page's title as fetched, when it had one

    def cell(self, row: int, col: int) -> MatrixCell:
        return self.cells[(self.statements[row].row.pk, self.urls[col])]


def support_matrix(view: RunView, response_pk: int) -> SupportMatrix:
    """Statements x cited sources of one response, with all judges' verdicts per cell."""
    a = view.assessment(response_pk)
    if a is None:
        return SupportMatrix([], [], {})
    rule = Consensus(view.data.run.config.get("consensus", "first"))
    judges = list(view.data.run.judges)
    cells: dict[tuple[int, str], MatrixCell] = {}
    valid = set(a.valid_urls)
    for s in a.statements:
        by_url: dict[str, list[VerdictRow]] = {}
        for v in view.data.verdicts.get(s.row.pk, []):
            by_url.setdefault(v.url, []).append(v)
        for url in a.urls:
            vs = by_url.get(url, [])
            order = judges + [v.verdict.judge_id for v in vs if v.verdict.judge_id not in judges]
            vs = sorted(vs, key=lambda v: order.index(v.verdict.judge_id))
            override = view.overrides.get((s.row.pk, url))
            complete = all(any(v.verdict.judge_id == j for v in vs) for j in judges) if judges else bool(vs)
            judge_label = pair_label([v.verdict.label for v in vs], rule) if vs and complete else None
            label = override if (override is not None and view.with_overrides) else judge_label
            decided = {v.verdict.label for v in vs if v.verdict.label is not Label.JUDGE_ERROR}
            cells[(s.row.pk, url)] = MatrixCell(s.row.pk, url, label, judge_label, tuple(vs), override,
                                                len(decided) > 1, url in valid)
    titles = {url: view.data.sources[url].source.title for url in a.urls
              if url in view.data.sources and view.data.sources[url].source.title}
    return SupportMatrix(list(a.statements), list(a.urls), cells, titles)


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
    out = []
    for a in view.assessed:
        for s in a.statements:
            if not s.row.statement.informative:
                continue
            out.extend(PairRef(a.response_pk, s.row.pk, url) for url in a.valid_urls)
    if review_first:
        unsure = {(v.statement_pk, v.url) for vs in view.data.verdicts.values() for v in vs
                  if REVIEW_FIRST in v.verdict.flags}
        unsure -= set(view.overrides)
        out.sort(key=lambda p: (p.statement_pk, p.url) not in unsure)   # stable: reading order within each
    return out


def review_progress(view: RunView) -> tuple[int, int]:
    """(pairs a reviewer has labelled, judgeable pairs) of a run: how far its review has come."""
    pairs = {(p.statement_pk, p.url) for p in review_pairs(view)}
    return len(pairs & set(view.overrides)), len(pairs)


# ----------------------------------------------------------------------------- text positions


def statement_spans(text: str, statements: Sequence[StatementAssessment]) -> list[tuple[int, int, StatementAssessment]]:
    """Where each statement sits in the answer text: the stored span, else the first match after the
    previous statement; statements that cannot be placed are left out."""
    spans = []
    pos = 0
    for s in statements:
        st = s.row.statement
        if 0 <= st.start < st.end <= len(text):
            start, end = st.start, st.end
        else:
            found = locate_text(st.text, text, pos)
            if found is None:
                continue
            start, end = found
        spans.append((start, end, s))
        pos = max(pos, end)
    return sorted(spans, key=lambda t: t[0])


def locate_text(needle: str, text: str, start: int = 0) -> tuple[int, int] | None:
    """Character span of ``needle`` in ``text`` at or after ``start`` (else anywhere), ignoring case,
    quote styles and whitespace runs: where a statement sits in its answer."""
    hay, starts, ends = normalised_with_map(text)
    n = normalised_with_map(needle)[0].strip(" \"'.\u2026")
    if not n:
        return None
    from_ = next((k for k, i in enumerate(starts) if i >= start), len(starts))
    found = hay.find(n, from_)
    if found < 0 and from_:
        found = hay.find(n)
    if found < 0:
        return None
    return starts[found], ends[found + len(n) - 1]


# ----------------------------------------------------------------------------- inputs


def table_columns(path: str | Path) -> list[str]:
    """The header row of a CSV/TSV file, for a column-mapping dialog."""
    p = Path(path)
    with p.open("r", encoding="utf-8-sig", errors="replace", newline="") as fh:
        head = fh.read(65536)
    delimiter = "\t" if p.suffix.lower() == ".tsv" else ","
    reader = csv.reader(io.StringIO(head), delimiter=delimiter)
    return [c.strip() for c in next(reader, [])]


# ----------------------------------------------------------------------------- suggestions


_ALLOW_HOST_HINT = re.compile(r"add --allow-host (\S+) to fetch it anyway")


def reason_for_app(reason: str) -> str:
    """A fetch reason as the desktop app says it: the CLI's ``--allow-host`` advice becomes the Settings
    field that does the same."""
    return _ALLOW_HOST_HINT.sub(r"add \1 to Settings → Allowed private hosts to fetch it anyway", reason or "")


def word_diff(original: str, suggested: str) -> str:
    """A SourceCleanup suggestion as a word diff: [-removed-] {+added+}; an empty rewrite deletes all."""
    if not suggested.strip():
        return f"[-{original}-]"
    a, b = original.split(), suggested.split()
    out = []
    for op, i1, i2, j1, j2 in difflib.SequenceMatcher(a=a, b=b, autojunk=False).get_opcodes():
        if op == "equal":
            out.append(" ".join(a[i1:i2]))
        if op in ("delete", "replace"):
            out.append("[-" + " ".join(a[i1:i2]) + "-]")
        if op in ("insert", "replace"):
            out.append("{+" + " ".join(b[j1:j2]) + "+}")
    return " ".join(out)


STATUS_WORDS: Mapping[StatementStatus, str] = {
    StatementStatus.SUPPORTED: "supported",
    StatementStatus.NOT_SUPPORTED: "not supported",
    StatementStatus.NO_READABLE_SOURCE: "no readable source",
    StatementStatus.JUDGE_ERROR: "judge error",
    StatementStatus.NOT_A_CLAIM: "not a claim",
    StatementStatus.PENDING: "pending",
}


# ----------------------------------------------------------------------------- shared formatting


def pct_ci(value: float | None, ci95: Sequence[float | None] = (None, None), *, signed: bool = False) -> str:
    """"82.0% (95% CI 70–90)" for a proportion, "+4.0 points (95% CI -2.0 to +9.5)" for a difference."""
    if value is None:
        return "n/a"
    lo, hi = (list(ci95) + [None, None])[:2]
    if signed:
        ci = "" if lo is None or hi is None else f" (95% CI {100 * lo:+.1f} to {100 * hi:+.1f})"
        return f"{100 * value:+.1f} points{ci}"
    ci = "" if lo is None or hi is None else f" (95% CI {100 * lo:.0f}–{100 * hi:.0f})"
    return f"{100 * value:.1f}%{ci}"


def metric_pct(m: object, *, compact: bool = False) -> str:
    """A :class:`~sourcecheckup.metrics.Metric` (or None) as :func:`pct_ci` text with k/n;
    ``compact``: "60.0% (20–100)" for a table whose header says the bracket is the 95% CI."""
    if m is None or getattr(m, "value", None) is None:
        return "n/a"
    if compact:
        lo, hi = m.ci95  # type: ignore[attr-defined]
        ci = "" if lo is None or hi is None else f" ({100 * lo:.0f}–{100 * hi:.0f})"
        return f"{100 * m.value:.1f}%{ci}"  # type: ignore[attr-defined]
    return f"{pct_ci(m.value, m.ci95)} · {m.k}/{m.n}"  # type: ignore[attr-defined]


# ----------------------------------------------------------------------------- benchmark


@dataclass(frozen=True)
class BenchModelRow:
    """One model's line of a benchmark's results table (the study's per-model table)."""

    model: str
    name: str                  # short display name
    answers: int               # answers audited
    answer_status: str         # "ok 3, recovered 1"
    url_validity: str
    statement_support: str
    response_support: str
    accuracy: str              # "not graded" when accuracy was not graded
    accuracy_labels: str       # "exact match 3, missing 2"
    best_of: str               # "K=2: 50.0% -> 100.0% (+50.0 points)", "" without best-of-K
    tokens: str
    cost: str
    statement_support_value: float | None = None


def bench_model_rows(results: object) -> list[BenchModelRow]:
    """:class:`~sourcecheckup.bench_workflow.BenchResults` shaped as table rows (plain text)."""
    from .bench_workflow.records import AnswerStatus
    from .llm.spec import short_name

    out = []
    for name, r in results.models.items():  # type: ignore[attr-defined]
        m = r.metrics
        answered = sum(v for k, v in r.answer_status.items() if AnswerStatus(k).audited)
        best = ""
        if r.best_of is not None:
            b = r.best_of

            def f(v: float | None) -> str:
                return "n/a" if v is None else f"{100 * v:.1f}%"

            gain = "n/a" if b.gain is None else f"{100 * b.gain:+.1f} points"
            best = f"{gain} (K={b.k}: {f(b.first_draw_support)} → {f(b.selected_support)})"
        acc = metric_pct(r.accuracy, compact=True) if r.accuracy is not None else "not graded"
        out.append(BenchModelRow(
            model=name, name=short_name(name), answers=answered,
            answer_status=", ".join(f"{k.replace('_', ' ')} {v}" for k, v in r.answer_status.items()),
            url_validity=metric_pct(m.url_validity if m else None, compact=True),
            statement_support=metric_pct(m.statement_support if m else None, compact=True),
            response_support=metric_pct(m.response_support if m else None, compact=True),
            accuracy=acc, accuracy_labels=", ".join(f"{k.replace('_', ' ')} {v}"
                                                    for k, v in r.accuracy_labels.items()),
            best_of=best, tokens=f"{r.tokens_in:,} in / {r.tokens_out:,} out",
            cost="unknown" if r.cost_usd is None else f"${r.cost_usd:.4f}",
            statement_support_value=m.statement_support.value if m else None))
    return out


def bench_summary(results: object) -> str:
    b = results.bench  # type: ignore[attr-defined]
    text = (f"Benchmark {b.id} ({b.status}): {results.documents} documents, "  # type: ignore[attr-defined]
            f"{results.questions} questions, audit run {b.run_id or '–'}")  # type: ignore[attr-defined]
    return text + (f". {b.message}" if b.message else "")


# ----------------------------------------------------------------------------- run comparison

METRIC_NAMES = {"url_validity": "Source URL validity", "statement_support": "Statement-level support",
                "response_support": "Response-level support", "unused_sources": "Unused sources"}


@dataclass(frozen=True)
class MetricDifference:
    metric: str
    a: str
    b: str
    diff: str            # "+4.0 points (95% CI ...)" or "n/a"
    diff_value: float | None


@dataclass(frozen=True)
class ChangedStatement:
    response_id: str
    statement: str
    status_a: str
    status_b: str
    supported_a: bool | None
    supported_b: bool | None


@dataclass(frozen=True)
class ChangedSource:
    url: str
    change: str          # "content changed", "dead link → full text"
    fetched_a: str
    fetched_b: str


@dataclass(frozen=True)
class ComparisonView:
    run_a: str
    run_b: str
    summary: str
    differences: list[MetricDifference]
    statements: list[ChangedStatement]
    sources: list[ChangedSource]


def _status_words(value: str) -> str:
    try:
        return STATUS_WORDS[StatementStatus(value)]
    except ValueError:
        return value.replace("_", " ")


def _outcome_words(value: str) -> str:
    try:
        return FetchStatus(value).plain
    except ValueError:
        return value.replace("_", " ")


def comparison_view(c: Mapping[str, object]) -> ComparisonView:
    """The dict of :func:`sourcecheckup.compare.compare_runs` shaped for a comparison screen."""
    diffs = []
    for d in c["differences"]:  # type: ignore[union-attr]
        a = "n/a" if d["a"] is None else f"{100 * d['a']:.1f}% (n={d['n_a']})"
        b = "n/a" if d["b"] is None else f"{100 * d['b']:.1f}% (n={d['n_b']})"
        diffs.append(MetricDifference(METRIC_NAMES.get(d["metric"], d["metric"]), a, b,
                                      pct_ci(d["diff"], d["ci95"], signed=True), d["diff"]))
    statements = [ChangedStatement(s["response_id"], s["statement"], _status_words(s["status_a"]),
                                   _status_words(s["status_b"]), s["supported_a"], s["supported_b"])
                  for s in c["changed_statements"]]  # type: ignore[union-attr]
    sources = [ChangedSource(s["url"], "content changed" + ("" if s["status_a"] == s["status_b"] else
                             f"; {_outcome_words(s['status_a'])} → {_outcome_words(s['status_b'])}")
                             if s["content_changed"] else
                             f"{_outcome_words(s['status_a'])} → {_outcome_words(s['status_b'])}",
                             _day(s["fetched_at_a"]), _day(s["fetched_at_b"]))
               for s in c["changed_sources"]]  # type: ignore[union-attr]
    ra, rb = c["run_a"], c["run_b"]
    warnings = " ".join(f"⚠ {w}" for w in c.get("warnings", []))  # type: ignore[union-attr]
    summary = (f"{warnings + chr(10) if warnings else ''}"
               f"A = run {ra['id']} ({str(ra['created_at'])[:16].replace('T', ' ')}), "  # type: ignore[index]
               f"B = run {rb['id']} ({str(rb['created_at'])[:16].replace('T', ' ')}). "  # type: ignore[index]
               f"{c['statements_matched']} statements matched (only in A {c['statements_only_a']}, only in B "
               f"{c['statements_only_b']}); support changed for {len(statements)}. {c['sources_matched']} sources "
               f"matched; {len(sources)} changed."
               + ("" if "with_overrides" not in c else " Reviewer overrides counted." if c["with_overrides"]
                  else " Judges only (reviewer overrides not counted)."))
    return ComparisonView(str(ra["id"]), str(rb["id"]), summary, diffs, statements, sources)  # type: ignore[index]


# ----------------------------------------------------------------------------- review samples & agreement


@dataclass(frozen=True)
class AgreementRow:
    rater_a: str
    rater_b: str
    kind: str
    n: int
    agreement: str
    kappa: str


def agreement_rows(report: Mapping[str, object]) -> list[AgreementRow]:
    """The comparisons of :func:`sourcecheckup.agreement.agreement_report` as plain-text rows."""
    out = []
    for c in report.get("comparisons", []):  # type: ignore[union-attr]
        ag, ka = c["agreement"], c["kappa"]
        kappa = "n/a" if ka["value"] is None else f"{ka['value']:.2f}"
        if ka["value"] is not None and ka["ci95"][0] is not None:
            kappa += f" (95% CI {ka['ci95'][0]:.2f} to {ka['ci95'][1]:.2f})"
        out.append(AgreementRow(c["rater_a"], c["rater_b"], c["kind"].replace("-", " vs "), c["n"],
                                pct_ci(ag["value"], ag["ci95"]), kappa))
    return out


def agreement_summary(report: Mapping[str, object]) -> str:
    return (f"{report['pairs_reviewed']} pairs reviewed by {len(report['reviewers'])} reviewer(s) "  # type: ignore[arg-type]
            f"({report['reviews']} labels, {report['unsure']} unsure); majority on {report['pairs_with_majority']}; "
            f"{len(report['overturned'])} judge verdicts overturned.")  # type: ignore[arg-type]


def sample_labels(store: Store, run_id: str, sample: str, reviewer: str) -> dict[tuple[int, str], str]:
    """(statement_pk, url) -> the reviewer's latest label given within the named review sample."""
    from .review import reviews

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
    pairs: list  # list[review_sample.SamplePair]
    texts: dict[str, str]
    passages: dict[int, str]      # pair_id -> best passage


def load_sample_review(store: Store, run_id: str, name: str) -> SampleReview:
    from .evidence import rank_passages
    from .evidence import SourceText
    from .review_sample import sample_pairs

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
