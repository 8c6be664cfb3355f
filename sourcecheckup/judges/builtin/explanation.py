"""The rationale of a verdict the built-in judge's score path gives, in one plain sentence, and the test
that a rationale never says the opposite of its label.

A failed exact check is the whole rationale; otherwise it says how well the best passage matches, the
checks that passed and, for an unsupported verdict, the main problems (``judge`` calls :func:`rationale`;
the reader's own rationale is ``reader.rationale``).
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ...models import Label, contradicted_rationale
from .support_gates import OFF_SUBJECT

if TYPE_CHECKING:
    from .judge import PairAnalysis


def _pct(x: float) -> str:
    return f"{round(100 * x)}%"


def rationale(a: PairAnalysis, supported: bool) -> str:
    """One plain sentence that never contradicts the label.

    A failed exact check decides the label and is the whole rationale ("contradicted: statement
    2,400 mg/24 h; source 1,200 mg/24 h without a prescription"). Otherwise: how well the best
    passage matches, the checks that passed, and for an unsupported verdict the main problems.
    """
    decisive = a.checks.decisive if a.checks else None
    if decisive is not None:
        if decisive.status == "contradicted":
            return contradicted_rationale(decisive.message.rstrip(".") + ".")
        return "not supported: " + decisive.message.rstrip(".") + "."
    head = f"Best passage shares {_pct(a.coverage)} of the statement's key terms"
    if a.similarity is not None:
        head += f" (similarity {a.similarity:.2f})"
    passed = passed_checks(a)
    unsure = [o for o in a.checks.unsure] if a.checks else []
    figures = [o.message.split(":")[0].removeprefix("statement ") for o in unsure if o.kind == "quantity"]
    if supported:
        tail = f"; {passed}" if passed else ""
        if a.facts is not None and a.facts.unsure:
            return head + tail + f"; review first: the page may not hold every part of it ({a.facts.missing_part()})."
        if figures:
            # a plain figure (a count, an age, a duration) the source words another way: left to a reader
            return head + tail + f"; review first: the source does not repeat {', '.join(figures[:2])} as written."
        return head + tail + "; no inconsistency found."
    if a.facts is not None and a.facts.incomplete and not a.veto:
        # the completeness check ruled support out: name the part the page does not hold
        other = f"{OFF_SUBJECT}, and " if a.facts.features.get("off_subject") else ""
        return f"not supported: {other}the page does not hold every part of the statement: {a.facts.missing_part()}."
    problems: list[str] = [a.veto] if a.veto else []
    if figures:
        problems.append(f"{', '.join(figures[:2])} {'is' if len(figures) == 1 else 'are'} not in the source as written")
    if a.wrong_units:
        problems.append(f"{', '.join(a.wrong_units[:2])} appears with a different unit")
    if a.negation_mismatch and not a.veto.startswith("it"):
        problems.append(a.negation_mismatch)
    if a.flips:
        s, e = a.flips[0]
        problems.append(f"the statement says '{s}' where the passage says '{e}'")
    if a.missing_terms:
        terms = ", ".join(f"'{t}'" for t in a.missing_terms[:3])
        problems.append(f"key term{'s' if len(a.missing_terms) > 1 else ''} {terms} "
                        f"{'are' if len(a.missing_terms) > 1 else 'is'} missing from it")
    if problems:
        return head + "; " + "; ".join(problems[:2]) + "."
    return head + "; the match is too weak to count as support."


# what a rationale of each label must never say (a test and bench/judge_accuracy.py read every verdict with it)
_REFUSING = ("not supported", "contradicted", "the page does not hold every part")
_ACCEPTING = ("no inconsistency found",)


def rationale_contradicts_label(label: Label, text: str) -> bool:
    """Whether a verdict's rationale says the opposite of its label ("supported" with "not supported: ...")."""
    lowered = (text or "").strip().lower()
    if label is Label.SUPPORTED:
        return lowered.startswith(_REFUSING) or _REFUSING[2] in lowered
    if label is Label.NOT_SUPPORTED:
        return any(lowered.rstrip(".").endswith(phrase) for phrase in _ACCEPTING)
    return False


def passed_checks(a: PairAnalysis) -> str:
    """The exact checks that passed, in a few words ("figures 20 mg/day, 4 weeks found")."""
    if a.checks is None:
        return ""
    figures = [o for o in a.checks.passed if o.kind == "quantity"]
    parts: list[str] = []
    if figures:
        parts.append(f"figure{'s' if len(figures) > 1 else ''} checked in the source")
    if any(o.kind == "instruction" for o in a.checks.passed):
        parts.append("the source gives the same instruction")
    if any(o.kind == "overclaim" for o in a.checks.passed):
        parts.append("the source states it as firmly")
    return ", ".join(parts)
