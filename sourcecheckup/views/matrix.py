"""The support matrix: each statement x source cell with every judge's verdict and any override."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

from ..metrics import Consensus, StatementAssessment, pair_label
from ..models import Label, Verdict, decided_by
from ..references.model import ReferenceCheck
from ..store import VerdictRow
from .references import header_badge
from .results import RunView

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
    review_state: str | None = None   # a reviewer labelled it: the consensus label's value, "unsure", "no_majority"

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
        return self.override is None and self.review_state is None and any(
            REVIEW_FIRST in v.verdict.flags for v in self.verdicts)

    @property
    def reviewed_without_label(self) -> str | None:
        """"unsure" or "no majority" when reviewers looked at the pair and their label overrides nothing."""
        if self.override is not None or self.review_state is None:
            return None
        return self.review_state.replace("_", " ")


CONTRADICTED = "contradicted"     # Verdict.flags: the source states something different
REVIEW_FIRST = "review_first"     # Verdict.flags: the screening judge is unsure of this pair

SCREENING_JUDGE_NOTE = (
    "Screening judge (built-in): it checks numbers, units, doses, instructions, absolute claims and wording "
    "overlap; it does not understand the text as a reader does. For a stronger judge: Settings → Judges.")


SCREENING_JUDGE_SHORT = ("Screening judge: it checks numbers, units, doses, instructions, absolute claims and "
                         "wording overlap, not meaning. A stronger judge: Settings → Judges.")

# the learned reader's verdicts: the same judge id, their own model version (``builtin-5/<reader>``, judges/builtin/
# judge.py READER_VERSION). The default judge reads whole pages and screens short sources, so a run may hold both.
READER_JUDGE_NOTE = (
    "Learned reader (built-in): a small model trained here read each source and exact checks veto; weaker than "
    "an LLM judge on most measured sets (docs/reader.md). For a stronger judge: Settings → Judges.")
READER_JUDGE_SHORT = ("Learned reader: a small model trained here reads the source, exact checks veto. A "
                      "stronger judge: Settings → Judges.")
BUILTIN_JUDGE_NOTE = (
    "Built-in judge: a small model trained here read the whole pages (exact checks veto); the short passages were "
    "screened by numbers, units, doses, instructions and wording overlap, not read. For a stronger judge: "
    "Settings → Judges.")


def is_reader_verdict(verdict: Verdict) -> bool:
    """Whether the built-in judge's learned reader gave this verdict (its model version names the reader)."""
    from ..judges.builtin.judge import READER_VERSION

    return uses_screening_judge([verdict.judge_id]) and (verdict.model_version or "").startswith(f"{READER_VERSION}/")


def builtin_judge_note(judge_versions: str) -> str:
    """The note beside a run's figures for the built-in judge, by which of its procedures gave the verdicts
    (the run's judge versions): the reader's (``builtin-5/<reader>``), the screen's, or both."""
    from ..judges.builtin.judge import PROMPT_VERSION, READER_VERSION

    read, screened = f"{READER_VERSION}/" in judge_versions, f"{PROMPT_VERSION}/" in judge_versions
    if read and screened:
        return BUILTIN_JUDGE_NOTE
    return READER_JUDGE_NOTE if read else SCREENING_JUDGE_NOTE


def uses_screening_judge(judges: Sequence[str]) -> bool:
    """Whether a run's judges include the built-in screening judge."""
    return any(j.split(":", 1)[0].strip() == "builtin" for j in judges)


# the built-in judge's steps, as its verdicts record them (judges/builtin/judge.py), in words
BUILTIN_DECIDERS = {
    "quantity": "the exact quantity/dose check",
    "instruction": "the instruction-wording check",
    "overclaim": "the absolute-claim check (does the source state it as firmly?)",
    "attribution": "the credited-body check (does the source name who the statement credits?)",
    "negation": "the negation/polarity check",
    "closest_text": "the closest-text gate (its closest text is a heading or about something else)",
    "subject": "the subject check (the source never names the statement's subject)",
    "outright": "the source sentence states it outright (every key term, the same negation)",
    "completeness": "the completeness gate (is every part of the statement on the page?)",
    "score": "the trained score",
    "figure": "the figure check (a year or count of the statement that the whole page never gives)",
    "reader": "the learned reader",
    "reader_page": "the learned reader with the page's completeness gate (a whole page)",
}


def how_decided(verdict: Verdict) -> str:
    """Which check or procedure decided a verdict, in words ("" for a judge error: nothing was decided).
    The built-in judge records its step in the verdict's flags; another judge's verdict is its own
    procedure, named by its prompt or procedure version and model."""
    if verdict.label is Label.JUDGE_ERROR:
        return ""
    step = decided_by(verdict.flags)
    if step:
        return BUILTIN_DECIDERS.get(step, step.replace("_", " "))
    if uses_screening_judge([verdict.judge_id]):
        return "the screening judge's checks and trained score (this verdict does not record which decided)"
    procedure = verdict.prompt_version or "its own procedure"
    model = f", model {verdict.model_version}" if verdict.model_version else ""
    return f"{verdict.judge_id}'s own procedure ({procedure}{model})"


def verdict_word(verdict: Verdict) -> str:
    """A verdict's reading in words: "contradicted" where the source says something different."""
    if verdict.label is Label.NOT_SUPPORTED and CONTRADICTED in verdict.flags:
        return "contradicted"
    return {Label.SUPPORTED: "supported", Label.NOT_SUPPORTED: "not supported",
            Label.JUDGE_ERROR: "judge error", Label.JUDGES_DISAGREE: "judges disagree"}[verdict.label]


@dataclass(frozen=True)
class SupportMatrix:
    statements: list[StatementAssessment]
    urls: list[str]
    cells: dict[tuple[int, str], MatrixCell]
    titles: dict[str, str] = field(default_factory=dict)   # url -> the page's title as fetched, when it had one
    references: dict[str, ReferenceCheck] = field(default_factory=dict)   # url -> its reference check
    retracted_only: frozenset[int] = frozenset()   # statement pks supported only by retracted papers

    def header_badge(self, col: int) -> str:
        """"⊠ retracted", "✗ not found", "≠ mismatch" for a column's reference, else ""."""
        return header_badge(self.references.get(self.urls[col]))

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
                                                len(decided) > 1, url in valid,
                                                view.review_states.get((s.row.pk, url)))
    titles = {url: title for url in a.urls
              if url in view.data.sources and (title := view.data.sources[url].source.title)}
    references = {url: view.references[url] for url in a.urls if url in view.references}
    return SupportMatrix(list(a.statements), list(a.urls), cells, titles, references,
                         frozenset(s.row.pk for s in a.statements if s.row.pk in view.retracted_only))
