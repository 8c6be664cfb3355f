"""The built-in judge's exact checks: the screen that decides before the trained score.

Quantities compared exactly (``sourcecheckup.checks.quantities``), instructions as polarity,
absolute claims against hedges and the credited body; which source sentences they read; which
failed checks decide the label and which are only "review first".
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from ...checks import attribution, overclaims, polarity
from ...checks import quantities as qty
from ...evidence import SourceText, source_sentences


@dataclass
class _Prepared:
    """Per-source data computed once and cached on the SourceText."""

    sentences: list[str]
    passage_sentences: list[list[int]]     # source.passages[i] -> indices into sentences
    sentence_figures: list[frozenset[str]]  # the digits each sentence holds ("2400", "28.4")


def _prepare_source(source: SourceText) -> _Prepared:
    prepared = source.cache.get("builtin")
    if prepared is not None:
        return prepared
    sentences = source_sentences(source.text)
    mapping: list[list[int]] = []
    start = 0
    for passage in source.passages:
        ids: list[int] = []
        j = start
        # passages are windows over the same sentences in order; search a short way ahead
        while j < len(sentences) and j < start + 12:
            if sentences[j] in passage:
                ids.append(j)
            elif ids:
                break
            j += 1
        if ids:
            start = ids[0]
        mapping.append(ids)
    figures = [frozenset(d.replace(",", "") for d in _DIGITS.findall(t)) for t in sentences]
    prepared = _Prepared(sentences, mapping, figures)
    source.cache["builtin"] = prepared
    return prepared


@dataclass(frozen=True)
class CheckOutcome:
    """What one exact check found for a pair."""

    kind: str          # "quantity" | "instruction" | "overclaim" | "attribution"
    status: str        # "matched"/"agrees" (passed) | "contradicted" | "missing" | "unbacked" (failed)
    message: str       # plain words naming both sides
    sentence: str      # the source sentence it rests on ("" when none)
    strict: bool = True  # whether a "missing" result decides: a dose, a rate, a percentage, a decimal

    @property
    def failed(self) -> bool:
        return self.status in ("contradicted", "missing", "unbacked")

    @property
    def decides(self) -> bool:
        return self.failed and (self.status != "missing" or self.strict)


@dataclass(frozen=True)
class Checks:
    """The exact checks of one pair, in the order they decide: quantities, instructions, absolutes."""

    outcomes: tuple[CheckOutcome, ...]

    @property
    def decisive(self) -> CheckOutcome | None:
        """The first failed check: it rules support out, whatever the trained score says."""
        order = {"contradicted": 0, "missing": 1, "unbacked": 2}
        failed = [o for o in self.outcomes if o.decides]
        return min(failed, key=lambda o: order[o.status]) if failed else None

    @property
    def passed(self) -> list[CheckOutcome]:
        return [o for o in self.outcomes if not o.failed]

    @property
    def unsure(self) -> list[CheckOutcome]:
        """Failed checks that do not decide (a plain figure the source does not repeat)."""
        return [o for o in self.outcomes if o.failed and not o.decides]

    @property
    def corroborate(self) -> bool:
        """Two or more exact checks passed and none failed: two figures found as stated, or a figure
        and the same instruction, or the credited body and a figure..."""
        return len(self.outcomes) >= 2 and not any(o.failed for o in self.outcomes)


_DIGITS = re.compile(r"\d+(?:[.,\u00b7]\d+)?")


def check_sentences(statement: str, prep: "_Prepared", passages: Sequence[int], near: Sequence[int]) -> list[str]:
    """The source sentences the exact checks read: the best passages, the sentences nearest the
    statement, and every sentence that holds one of the statement's figures (a dose may sit
    anywhere on a page), in document order."""
    ids: set[int] = set(near)
    for p in passages:
        ids.update(prep.passage_sentences[p])
    figures = {d.replace(",", "") for d in _DIGITS.findall(statement)}
    if figures:
        for i, digits in enumerate(prep.sentence_figures):
            if figures & digits:
                ids.add(i)
    # with the two sentences before each, so that "the maximum ... is 8 tablets (4g)" keeps the drug
    # its paragraph names
    ids |= {j for i in ids for j in (i - 1, i - 2) if j >= 0}
    return [prep.sentences[i] for i in sorted(ids)]


# figures whose absence from the source rules support out: what a clinician doses or measures by, and
# any figure written with decimals or a duration in digits. A head count, an age, a fold change ("twice
# as likely", which a source may give as an odds ratio) or a duration in words that the source does not
# repeat ("over a month" against "37 days") is left to the trained score; a different value still decides.
STRICT_UNITS = frozenset({"mg", "ml", "iu", "mmhg", "mmol/l", "mg/l", "mmol/mol", "kg/m2", "meq/l", "iu/l",
                          "%", "pp", "rate", "tablet", "puff", "drop", "spray", "sachet", "patch"})


def _strict_figure(q: "qty.Quantity") -> bool:
    # a duration written in digits ("every 3 months", "for 4 weeks") is a clinical figure; in words
    # ("over a month", "two to three months") it is usually a reporter's rounding
    timed = q.unit in ("min", "month") and any(c.isdigit() for c in q.text)
    return (q.unit in STRICT_UNITS or q.decimals > 0 or timed
            or q.per in ("day", "week", "dose", "kg", "kg/day", "interval"))


# a different figure is only called a contradiction when its sentence is about the statement: it shares
# at least this share of the statement's words; otherwise the source gives the figure in another context,
# which still rules support out but is not shown as "contradicted: source says ..."
CONTRADICTION_OVERLAP = 0.34
_WORDS = re.compile(r"[a-z]{3,}")


_CLOCK = re.compile(r"\s*(?:[ap]\.?m\b|o'clock|h\b|hrs?\b)", re.I)


def _plain_count(q: "qty.Quantity", text: str = "") -> bool:
    """A bare number (a head count, an age, a score, a year: no unit, no rate), not a time of day ("6 pm")."""
    return q.unit == "count" and not q.per and not (text and _CLOCK.match(text, q.end))


def _year(q: "qty.Quantity") -> bool:
    return _plain_count(q) and q.low == q.high and q.low.is_integer() and 1000 <= q.low <= 2100 and len(q.text) == 4


def _quantity_outcome(statement: str, f: "qty.QuantityFinding") -> CheckOutcome:
    if f.status == "contradicted" and f.source is not None and _year(f.claim) and _year(f.source):
        # "painted in 1616" against "acquired in 1753": two years are two events more often than a conflict
        message = (f"statement {qty.describe(f.claim, True)}: the source gives the year "
                   f"{qty.describe(f.source, True)}, perhaps of another event")
        return CheckOutcome("quantity", "missing", message, f.sentence, False)
    if f.status == "contradicted" and f.source is not None:
        said = {w[:5] for w in _WORDS.findall(statement.lower())}
        there = {w[:5] for w in _WORDS.findall(f.sentence.lower())}
        if said and len(said & there) / len(said) < CONTRADICTION_OVERLAP:
            message = (f"statement {qty.describe(f.claim, True)}: not stated in the source for the same thing "
                       f"(it gives {qty.describe(f.source, True)} in another context)")
            # still decides, as the different figure did: only the reading changes (not "contradicted");
            # a bare number in another context (a score, a count of something else) says nothing of it
            return CheckOutcome("quantity", "missing", message, "", not _plain_count(f.claim, statement))
    return CheckOutcome("quantity", f.status, f.message, f.sentence, _strict_figure(f.claim))


def run_checks(statement: str, sentences: Sequence[str], source: SourceText | None = None) -> Checks:
    """Quantities compared exactly, instructions as polarity, absolute claims against hedges, and
    the body or study the statement credits named anywhere in the source."""
    outcomes: list[CheckOutcome] = []
    if source is not None:
        credit = attribution.compare_attribution(statement, source.text, source.title)
        if credit is not None:
            outcomes.append(CheckOutcome("attribution", credit.status, credit.message, ""))
    if sentences:
        for f in qty.compare_quantities(statement, sentences):
            outcomes.append(_quantity_outcome(statement, f))
        found = polarity.compare_polarity(statement, sentences)
        if found is not None:
            outcomes.append(CheckOutcome("instruction", found.status, found.message, found.sentence))
        found = overclaims.compare_overclaim(statement, sentences)
        if found is not None:
            outcomes.append(CheckOutcome("overclaim", found.status, found.message, found.sentence))
    return Checks(tuple(outcomes))
