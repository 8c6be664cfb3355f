"""Comparing a statement's quantities with its evidence: candidates, relations between bounds,
plain-words descriptions and messages (`compare_quantities`, `describe`)."""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence, cast

from .extract import _segments, extract_quantities
from .model import CONTRADICTED, MATCHED, MISSING, Quantity, QuantityFinding
from .patterns import _SEPARATOR
from .qualifiers import _CONFLICTS, _NOT_SUBJECT, _QUALIFIER_WORDS, _SUBGROUPS, _family, _qualifiers, _stem, _stems
from .units import _convert, _equal, _normalise

_UPPER, _LOWER, _POINT = ("le", "lt"), ("ge", "gt"), ("eq", "approx")
_COMPARATOR_WORDS = frozenset({"compa", "versu", "again"})


# figures a study reports (shares, rates, counts, ratios), as opposed to what a clinician doses by
_STATISTICS = frozenset({"%", "pp", "x", "rate", "count"})


def _relation_1(cl: float, ch: float, cb: str, sl: float, sh: float, sb: str,
                claim: Quantity, source: Quantity) -> str:
    """"match", "contradict" or "neutral" (consistent but not stated) for one component."""
    def eq(a: float, b: float) -> bool:
        return _equal(a, b, claim, source)

    # a statistic stated as a bound or a range ("more than half", "10 to 20%") is borne out by a
    # source's point estimate that satisfies it ("56.0%", "12.4%"); a dose or an interval is not
    statistic = claim.unit in _STATISTICS and not claim.per
    if statistic and sb in _POINT and cb not in _POINT:
        inside = (cb == "range" and cl <= sl <= ch) or (cb in _LOWER and sl > cl) or (cb in _UPPER and sl < ch)
        if inside or (cb != "range" and eq(cl if cb in _LOWER else ch, sl)):
            return "match"
        return "contradict"
    if cb in _POINT:
        if sb in _POINT:
            return "match" if eq(cl, sl) else "contradict"
        if sb == "range":
            return "match" if (sl <= cl <= sh or eq(cl, sl) or eq(cl, sh)) else "contradict"
        if sb in _UPPER:
            return "match" if eq(cl, sh) else ("neutral" if cl < sh else "contradict")
        return "match" if eq(cl, sl) else ("neutral" if cl > sl else "contradict")
    if cb == "range":
        if sb == "range":
            return "match" if eq(cl, sl) and eq(ch, sh) else "contradict"
        if sb in _POINT:
            return "contradict"
        if sb in _UPPER:
            return "match" if eq(ch, sh) else ("neutral" if ch < sh else "contradict")
        return "match" if eq(cl, sl) else ("neutral" if cl > sl else "contradict")
    if cb in _UPPER:
        if sb in _LOWER:
            # "do not take more than 4,000 IU" is the limit that "more than 4,000 IU could be harmful" names
            return "match" if (cb, sb) in _COMPLEMENTS and eq(ch, sl) else "contradict"
        return "match" if eq(ch, sh) else "contradict"
    # claim is a lower bound
    if sb in _UPPER:
        return "match" if (cb, sb) in _COMPLEMENTS and eq(cl, sh) else "contradict"
    if sb == "range" and eq(cl, sl):
        return "neutral"  # "42 to 47" does not say "42 or above"
    return "match" if eq(cl, sl) else "contradict"


# a bound and its complement at the same value name one threshold from its two sides
_COMPLEMENTS = frozenset({("le", "gt"), ("gt", "le"), ("lt", "ge"), ("ge", "lt")})


def _relation(claim: Quantity, s: Quantity) -> str:
    first = _relation_1(claim.low, claim.high, claim.bound, s.low, s.high, s.bound, claim, s)
    if not claim.is_pair:
        return first
    # a pair is compared only with a pair (_convert keeps the kind), and a pair has both second figures
    second = _relation_1(cast(float, claim.low2), cast(float, claim.high2), claim.bound,
                         cast(float, s.low2), cast(float, s.high2), s.bound, claim, s)
    if "contradict" in (first, second):
        return "contradict"
    return "match" if first == second == "match" else "neutral"


# Source figures that are not a statement of the claim's figure for the same thing: (why, test, example).
# A contradiction needs a value the source states for the same thing in words it has.
NOT_A_CONTRADICTION = (
    ("worked out by arithmetic", lambda c, s: s.derived,
     "'at least 4 hours between doses' against 'up to 4 times in 24 hours' (not '6 h apart')"),
    ("a tablet's strength is not a dose", lambda c, s: "strength" in s.qualifiers and "strength" not in c.qualifiers
     and _whole_tablets(c.low, s.low) and _whole_tablets(c.high, s.low),
     "'200 mg to 400 mg' against 'one or two 200mg tablets'"),
    ("across a time qualifier", lambda c, s: ("past" in c.qualifiers) != ("past" in s.qualifiers),
     "'before 2017, 140/90' against '130/80 since 2017'"),
    ("a need or a usual amount under a maximum", lambda c, s: c.bound in _UPPER and s.bound in _POINT
     and bool(c.per) and c.unit not in _STATISTICS and not s.qualifiers & {"maximum"} and s.high < c.low,
     "'not more than 100 micrograms a day' against 'adults need 10 micrograms a day'"),
)
# source figures that match only a claim that shares their qualifier: (qualifier, example)
MATCH_ONLY_WITHIN = (("past", "'hypertension is defined as 140/90' against 'previously 140/90, now 130/80'"),)


def _whole_tablets(dose: float, strength: float) -> bool:
    """A dose of a few whole tablets of this strength (400 mg of 200mg tablets)."""
    n = dose / strength if strength > 0 else 0.0
    return 1 <= round(n) <= 8 and abs(n - round(n)) < 1e-6


def _as_stated(claim: Quantity, s: Quantity, relation: str) -> str:
    """The relation, as far as the source states the claim's figure for the same thing."""
    if relation == "contradict" and any(test(claim, s) for _, test, _ in NOT_A_CONTRADICTION):
        return "neutral"
    if relation == "match" and any(q in s.qualifiers and q not in claim.qualifiers for q, _ in MATCH_ONLY_WITHIN):
        return "neutral"
    return relation


_AGE = re.compile(r"age:(?P<lo>[\d.]+)-(?P<hi>[\d.]+)(?P<b>[a-z]+)")


def _age_span(q: str) -> tuple[float, float] | None:
    m = _AGE.fullmatch(q)
    if not m:
        return None
    lo, hi, b = float(m.group("lo")), float(m.group("hi")), m.group("b")
    if b in ("ge", "gt"):
        return (lo + (1e-6 if b == "gt" else 0.0), float("inf"))
    if b in ("le", "lt"):
        return (float("-inf"), hi - (1e-6 if b == "lt" else 0.0))
    return (lo, hi)


def _age_within(x: str, y: str) -> bool:
    """The claim's age group lies inside the source's: a 7-year-old is one of "children aged 6 to 8"."""
    a, b = _age_span(x), _age_span(y)
    return a is not None and b is not None and b[0] <= a[0] and a[1] <= b[1]


def _age_words(q: str) -> str:
    """ "age:6-8range" as "aged 6 to 8" (the group a figure is given for), else ""."""
    m = _AGE.fullmatch(q)
    if not m:
        return ""
    lo, hi, b = m.group("lo"), m.group("hi"), m.group("b")
    return {"range": f"aged {lo} to {hi}", "ge": f"aged {lo} or over", "gt": f"over {lo}",
            "le": f"aged {hi} or under", "lt": f"under {hi}"}.get(b, f"aged {lo}")


def _names_other(claim: Quantity, s: Quantity) -> bool:
    """The source quantity's own words name something the statement never mentions."""
    return bool(s.subject - claim.subject) and len(claim.subject & s.subject) < len(claim.subject) / 2


def _conflict(a: frozenset[str], b: frozenset[str]) -> bool:
    """A claim qualifier conflicts with the source quantity's when the source names an exclusive
    alternative and not the claim's own ("adults and children take 10 mg" covers adults)."""
    for x in a:
        if x in b:
            continue
        fam = _family(x)
        for y in b:
            if y in a:
                continue
            if fam == "age" and _age_within(x, y):
                continue
            if frozenset((x, y)) in _CONFLICTS or (fam and _family(y) == fam and y != x
                                                   and not any(_family(z) == fam and z in b
                                                               for z in a - {x})):
                return True
    return False


def _number(v: float, decimals: int) -> str:
    if decimals <= 0:
        if abs(v - round(v)) < 1e-9:
            return f"{int(round(v)):,}"
        text = f"{v:,.4f}".rstrip("0").rstrip(".")
        return text
    return f"{v:,.{decimals}f}"


_BOUND_WORDS = {"le": "up to", "lt": "below", "ge": "at least", "gt": "above", "approx": "about"}


def describe(q: Quantity, with_bound: bool = False) -> str:
    """The quantity in plain words, in the unit its writer used: "2,400 mg/24 h"."""
    d = q.decimals
    if q.unit == "rate" or (q.unit == "%" and q.shown_unit == "in") or q.unit == "count":
        body = q.text
    elif q.is_pair:
        body = f"{_number(q.low, 0)}/{_number(q.low2 or 0, 0)} mm Hg"
    else:
        lo, hi = q.low / q.scale, q.high / q.scale
        if q.unit == "times":
            n = lo if lo == hi else None
            word = {1: "once", 2: "twice"}.get(int(n), None) if n is not None and n == int(n) else None
            per = {"day": "a day", "week": "a week", "month": "a month", "year": "a year",
                   "hour": "an hour"}.get(q.per, "per " + q.per)
            if word:
                body = f"{word} {per}"
            elif lo == hi:
                body = f"{_number(lo, d)} times {per}"
            else:
                body = f"{_number(lo, d)} to {_number(hi, d)} times {per}"
        else:
            num = _number(lo, d) if lo == hi else f"{_number(lo, d)} to {_number(hi, d)}"
            unit = q.shown_unit
            if unit == "%":
                body = f"{num}%"
            elif unit == "x":
                body = f"{num}-fold"
            else:
                if num == "1" and unit in ("days", "weeks", "months", "years", "tablets", "puffs",
                                           "drops", "doses", "sprays", "sachets"):
                    unit = unit[:-1]
                body = f"{num} {unit}".strip()
            if q.per == "interval":
                body = f"every {body}" if q.bound in ("eq", "approx", "range") else f"{body} apart"
            elif q.per_label:
                body = f"{body}/{q.per_label}"
    if with_bound and q.bound in _BOUND_WORDS:
        body = f"{_BOUND_WORDS[q.bound]} {body}"
    return body


def _message(status: str, claim: Quantity, source: Quantity | None) -> str:
    if source is None:
        return f"statement {describe(claim, True)}: not stated in the source for the same thing"
    show_bounds = _bound_class(claim.bound) != _bound_class(source.bound)
    quals = [_QUALIFIER_WORDS.get(q) or _age_words(q) for q in sorted(source.qualifiers)]
    quals = [q for q in quals if q]
    tail = (" " + ", ".join(quals)) if quals else ""
    return f"statement {describe(claim, show_bounds)}; source {describe(source, show_bounds)}{tail}"


def _bound_class(b: str) -> str:
    return "upper" if b in _UPPER else "lower" if b in _LOWER else b


def _iu_per_mg(evidence: Sequence[tuple[str, list[Quantity]]], claim: Quantity) -> float | None:
    """The IU per mg the evidence itself states ("10 micrograms (400 IU)") for the claim's thing."""
    for text, qs in evidence:
        for a, b in zip(qs, qs[1:]):
            if "(" not in text[a.end:b.start] or len(text[a.end:b.start].strip()) > 2:
                continue
            pair = {a.unit: a, b.unit: b}
            if "mg" in pair and "iu" in pair and pair["mg"].low > 0:
                if not claim.subject or claim.subject & (a.subject | _stems(_normalise(text))):
                    return pair["iu"].low / pair["mg"].low
    return None


@lru_cache(maxsize=8192)
def _sentence_stems(sentence: str) -> frozenset[str]:
    return _stems(_normalise(sentence))


@lru_cache(maxsize=8192)
def _sentence_subgroups(sentence: str) -> frozenset[str]:
    return frozenset(_qualifiers(_normalise(sentence)) & _SUBGROUPS)


def _together(text: str, a: Quantity, b: Quantity) -> bool:
    """Two quantities of one sentence stated in one clause: one segment, no separator between."""
    if b.start < a.start:
        a, b = b, a
    t = _normalise(text)
    if any(lo <= a.start < hi and not lo <= b.start < hi for lo, hi in _segments(t)):
        return False
    return not _SEPARATOR.search(t, a.end, b.start)


def _key_stem(statement: str, claim: Quantity, evidence_stems: Sequence[frozenset[str]]) -> str:
    """The statement's most specific subject word (a drug's name, typically): its longest subject
    word, when exactly one evidence sentence names it; else none."""
    words: dict[str, str] = {}
    for w in re.findall(r"[a-z]+", _normalise(statement)):
        st = _stem(w)
        if w not in _NOT_SUBJECT and len(w) > 1 and st in claim.subject and len(w) > len(words.get(st, "")):
            words[st] = w
    if len(claim.subject) < 2 or not words:
        return ""
    key = max(words, key=lambda st: (len(words[st]), st))
    # a word the page names once is specific to it; one it names throughout is its topic
    return key if sum(key in e for e in evidence_stems) == 1 else ""


def compare_quantities(statement: str, evidence_sentences: Sequence[str]) -> list[QuantityFinding]:
    """One finding per quantity of the statement: matched, contradicted or missing.

    A source quantity is a candidate for a statement quantity when it is of the same kind
    (unit dimension and denominator; a frequency and an interval convert), none of their
    qualifiers conflict (with vs without a prescription, child vs adult, starting vs
    maximum, ...) and the statement's subject overlaps the source sentence or the two before
    it (a source clause that names nothing, "do not take more than 4 g a day", is taken to be
    about the page's own subject). Candidates sharing more qualifiers come first; in the first tier that decides, a
    candidate stating the same value means matched, else a different value means
    contradicted. A candidate that is only consistent ("2 g" against "no more than 4 g")
    decides nothing.
    """
    claims = extract_quantities(statement)
    if not claims:
        return []
    evidence = [(s, extract_quantities(s)) for s in evidence_sentences]
    sentence_stems = [_sentence_stems(s) for s, _ in evidence]
    findings = []
    for claim in claims:
        iu_ratio = _iu_per_mg(evidence, claim) if claim.unit in ("iu", "mg") else None
        scored: list[tuple[tuple[int, int], int, str, Quantity, str, int]] = []
        for i, (text, qs) in enumerate(evidence):
            nearby = sentence_stems[i].union(*sentence_stems[max(0, i - 2):i])
            for q in qs:
                s = _convert(q, claim, iu_ratio)
                if s is None or _conflict(claim.qualifiers, s.qualifiers):
                    continue
                # a clause that names nothing is about the page's own subject
                if claim.subject and s.subject and not claim.subject & (s.subject | nearby):
                    continue
                # the other arm's figure counts only for a statement that names that arm
                if "comparator" in s.qualifiers - claim.qualifiers and \
                        not claim.subject & (s.local - _COMPARATOR_WORDS):
                    continue
                # a clause that names no subgroup of its own beyond the statement's is about the
                # subgroup the sentences before it name ("... pregnant ... Those with diabetes: 5 mg")
                inherited: frozenset[str] = frozenset()
                if s.qualifiers & _SUBGROUPS <= claim.qualifiers:
                    inherited = claim.qualifiers & _SUBGROUPS & frozenset().union(
                        *(_sentence_subgroups(e) for e, _ in evidence[max(0, i - 2):i]))
                common = claim.qualifiers & (s.qualifiers | inherited) | {
                    x for x in claim.qualifiers if any(_age_within(x, y) for y in s.qualifiers)}
                shared = (len(common & _SUBGROUPS), len(common))
                overlap = 2 * len(claim.subject & s.subject) + len(claim.subject & sentence_stems[i])
                scored.append((shared, overlap, _as_stated(claim, s, _relation(claim, s)), s, text, i))
        key = _key_stem(statement, claim, sentence_stems)
        status, best, where = MISSING, None, ""
        for tier in sorted({c[0] for c in scored}, reverse=True):
            in_tier = sorted((c for c in scored if c[0] == tier), key=lambda c: -c[1])
            # a figure the source states outranks one worked out from another ("every 6 hours" from "4 times")
            stated = [c for c in in_tier if not c[3].derived]
            if any(c[2] != "neutral" for c in stated):
                in_tier = stated
            hit = next((c for c in in_tier if c[2] == "match"), None)
            against = next((c for c in in_tier if c[2] == "contradict"), None)
            # a match in a clause about another thing ("ulipristal 30 mg") yields to a
            # contradiction in a clause that names more of the statement's own subject
            if hit and against and _names_other(claim, hit[3]) and \
                    len(claim.subject & against[3].subject) > 2 * len(claim.subject & hit[3].subject):
                hit = against
            hit = hit or against
            # a match in a clause that does not name the statement's own subject word (the drug)
            # yields to a contradiction, in any tier, in a clause that does and matches nowhere
            # (and the other way round: a contradiction there yields to a match where it is named)
            if key and hit and hit[2] in ("match", "contradict") and key not in hit[3].subject and \
                    _names_other(claim, hit[3]) and \
                    not any(key in sentence_stems[k] for k in range(max(0, hit[5] - 1), hit[5] + 1)):
                named = [c for c in scored if key in c[3].subject]
                if named and not any(c[2] == hit[2] for c in named):
                    hit = next((c for c in sorted(named, key=lambda c: (c[0], c[1]), reverse=True)
                                if c[2] in ("match", "contradict")), hit)
            if hit:
                status = MATCHED if hit[2] == "match" else CONTRADICTED
                best, where = hit[3], hit[4]
                break
        if status == MISSING and claim.unit == "count":
            # a head count ("19,114 healthy older adults") is the same figure whatever the page calls
            # the people ("19,114 persons"): the exact number anywhere on the page is the match
            same = next(((q, text) for text, qs in evidence for q in qs
                         if q.unit == "count" and not q.is_pair and _equal(claim.low, q.low, claim, q)
                         and _equal(claim.high, q.high, claim, q)), None)
            if same is not None:
                status, best, where = MATCHED, same[0], same[1]
        message = _message(status, claim, best)
        if status == MISSING:
            # "11%" where the page gives "1.1%": the same digits with the point elsewhere, a different figure
            shifted = next((q for _, qs in evidence for q in qs if q.unit == claim.unit and not q.is_pair
                            and _digits(q.text) == _digits(claim.text) and not _equal(claim.low, q.low, claim, q)),
                           None)
            if shifted is not None:
                message += f" (it gives {describe(shifted)}, a different figure)"
        findings.append(QuantityFinding(claim, status, best, where, message))
    return _bind_pairs(statement, findings)


def _digits(text: str) -> str:
    """The significant digits of a figure as written: "1.1%" and "11%" give "11"."""
    return "".join(c for c in text if c.isdigit()).lstrip("0")


def _bind_pairs(statement: str, findings: list[QuantityFinding]) -> list[QuantityFinding]:
    """Two figures a statement states in one clause ("the 150 microgram pen is for those over 30 kg")
    must be borne out together: when each is matched in a different source clause and the clause that
    holds one of them states a different figure of the other's kind, the other is contradicted there."""
    out = list(findings)
    for i, f in enumerate(findings):
        for j, g in enumerate(findings):
            if i == j or f.status != MATCHED or out[j].status != MATCHED:
                continue
            if not _together(statement, f.claim, g.claim):
                continue
            # a match has its source quantity (and out[j] is still g: a replaced one is a contradiction)
            assert f.source is not None and g.source is not None
            if f.sentence == g.sentence and _together(f.sentence, f.source, g.source):
                continue
            for q in extract_quantities(f.sentence):
                if (q.start, q.end) == (f.source.start, f.source.end) or \
                        not _together(f.sentence, f.source, q):
                    continue
                # a figure written like the first one's ("300 microgram" beside "150 microgram")
                # is that one's alternative, not the second's: weights and doses share a dimension
                if q.shown_unit == f.claim.shown_unit != g.claim.shown_unit:
                    continue
                s = _convert(q, g.claim, None)
                if s is None or _conflict(g.claim.qualifiers, s.qualifiers):
                    continue
                if _as_stated(g.claim, s, _relation(g.claim, s)) == "contradict":
                    out[j] = QuantityFinding(g.claim, CONTRADICTED, s, f.sentence,
                                             _message(CONTRADICTED, g.claim, s))
                    break
    return out
