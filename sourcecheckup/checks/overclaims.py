"""Absolute claims ("completely safe", "proven", "just as effective", "permanently") against evidence.

An absolute is backed only by an evidence sentence about the same subject that states the same
absolute, unhedged and not negated ("is safe for all adults", "was proven in a randomised trial").
Evidence that hedges or conditions it ("can still cause bleeding", "with caution", "restart ... if"),
negates it ("not a proven treatment"), tells an anecdote ("I think my legs feel better") or says
nothing of it leaves the statement unbacked. Pure functions, stdlib only, no model.
"""
from __future__ import annotations

import re
from functools import lru_cache
from typing import Sequence

from .polarity import CheckFinding, read_instruction
from .stems import core, stem, stems_of

_I = re.I
# (group, pattern) for the statement's absolute wording; a group is what evidence must also say
_ABSOLUTES = [(g, re.compile(p, _I)) for g, p in [
    ("safety", r"\b(?:completely|totally|entirely|perfectly|absolutely|100%|always|fully)\s+safe\b|"
               r"\bsafe\s+for\s+(?:everyone|everybody|anyone|all(?:\s+\w+)?)\b|\bharmless\b|\brisk[- ]free\b|"
               r"\b(?:no|zero)\s+risks?\b|\bno\s+side[- ]effects?\b|\bwithout\s+(?:any\s+)?(?:risks?|side[- ]effects?)\b|"
               r"\bneeds?\s+no\s+precautions?\b|\bno\s+precautions?\b"),
    ("equivalence", r"\b(?:just|equally|every\s+bit)\s+as\s+(?:effective|good|safe|well)(?:\s+as)?\b|"
                    r"\bequally\s+(?:effective|good|safe|well)\b|\bas\s+effective\s+as\b|\bas\s+good\s+as\b|"
                    r"\bworks?\s+(?:just\s+)?as\s+well\s+as\b|\bno\s+less\s+effective\b|\bequivalent\s+to\b"),
    ("proof", r"\b(?:scientifically\s+|clinically\s+)?prov(?:en|ed|es)\b|\bproof\b"),
    ("cure", r"\bcur(?:es|ed)\b|\b(?:will|can|to)\s+cure\b|\bis\s+a\s+cure\b|\bcurative\b"),
    ("complete", r"\b(?:completely|totally|entirely|fully)\s+(?:prevents?|eliminates?|removes?|stops?|"
                 r"protects?|reverses?|resolves?)\b|\beliminates?\b"),
    ("guarantee", r"\bguarantee(?:s|d)?\b|\bdefinitely\b|\bcertainly\b|\bundoubtedly\b|"
                  r"\bwithout\s+(?:a\s+|any\s+)?doubt\b|\b100\s?%|\b100\s+percent\b"),
    ("permanence", r"\bpermanent(?:ly)?\b|\bforever\b|\bfor\s+good\b|\bfor\s+life\b|\blife-?long\b|"
                   r"\bfor\s+the\s+rest\s+of\s+(?:your|their|his|her)\s+li(?:fe|ves)\b|\bindefinitely\b|"
                   r"\birreversibl[ey]\b"),
    ("no_need", r"\bno\s+need\s+(?:to|for)\b|\bneed\s+not\b|\bneedn't\b|\b(?:do|does)\s*n[o']?t\s+need\s+to\b|"
                r"\b(?:is|are)\s+(?:unnecessary|not\s+necessary)\b|\b(?:unnecessary|not\s+necessary)\s+(?:to|for)\b"),
    ("universal", r"\b(?:in\s+|for\s+)?all\s+(?:\w+\s+)?(?:patients|people|persons|adults|children|women|men|"
                  r"cases|individuals|users|infants|babies)\b|\beveryone\b|\beverybody\b|\banyone\b|"
                  r"\bevery\s+(?!(?:other\s+)?(?:\d|day|days|night|morning|evening|week|month|year|hour|minute|"
                  r"time|few|one|two|three|four|six|eight|twelve|dose|meal)\b)[a-z]+|\bwithout\s+exception\b|"
                  r"\bin\s+every\s+case\b|\bregardless\s+of\b|\balways\b"),
    ("never", r"\bnever\b"),
    # stopping at once: "stopped as soon as the level is normal", "can stop immediately once ..."
    ("immediacy", r"\b(?:stop(?:s|ped|ping)?|discontinu\w+|com(?:e|es|ing)\s+off)\b[^.;]{0,40}?"
                  r"\b(?:as\s+soon\s+as|immediately|right\s+away|straight\s+away)\b"),
    ("only", r"\bthe\s+only\b"),
]]
# what evidence must say to back each group (its own wording counts too)
_BACKING = {g: re.compile(p, _I) for g, p in {
    "proof": r"\bprov(?:en|ed|es)\b|\bproof\b|\bconclusive(?:ly)?\b|\bdefinitive(?:ly)?\b|\bdemonstrated\b|"
             r"\bestablished\b|\bconfirmed\b",
    "cure": r"\bcur(?:es|ed|e|ative)\b|\beradicat\w*",
    "equivalence": r"\bnon-?inferior\b|\bno\s+(?:significant\s+)?difference\s+in\s+(?:effectiveness|efficacy|"
                   r"outcomes?|cure\s+rates?)\b|\bsimilar\s+(?:effectiveness|efficacy)\b|"
                   # "must meet the same standards of quality, safety and effectiveness"
                   r"\b(?:the\s+)?same\s+(?:standards?\s+of\s+|level\s+of\s+)?(?:[\w-]+,?\s+(?:and\s+)?){0,3}?"
                   r"(?:effectiveness|efficacy)\b",
    "permanence": r"\bnever\s+(?:be\s+)?(?:restart|resume|re-?start)\w*",
    "no_need": r"\bnot\s+(?:needed|required)\b|\b(?:isn't|aren't)\s+(?:needed|required)\b",
    "universal": r"\ball\b",
    "never": r"\bin\s+no\s+case\b|\bnot\s+once\b",
    "only": r"\bonly\b",
    "immediacy": r"\bas\s+soon\s+as\b|\bimmediately\b|\bright\s+away\b|\bstraight\s+away\b|\bat\s+once\b",
}.items()}
_NEGATED_BEFORE = re.compile(r"\b(?:not|no|never|without|lack|lacks|neither|nor|cannot|isn't|aren't|wasn't|"
                             r"weren't|hasn't|haven't|hadn't|doesn't|don't|didn't|won't|nothing|little)\b"
                             r"(?:\W+\w+){0,3}\W*$", _I)
_HEDGE_NEAR = re.compile(r"\b(?:may|might|could|some|most|usually|generally|often|likely|probably|appears?|"
                         r"suggests?|possibly|partly|partially|mostly|can\s+still|limited|preliminary|almost|nearly|virtually|"
                         r"practically|largely|relatively)\b", _I)
_CLAUSE_START = re.compile(r"[,;:()]|\bbut\b|\bhowever\b|\balthough\b|\bthough\b|\bwhereas\b", _I)
# "never take X" and "always take X" are instructions (polarity), not claims
_INSTRUCTION_BEFORE = re.compile(r"(?:^|[,;:(]|\b(?:should|must|you|please|we|i|to)\b)\s*$", _I)
# "people who never showed symptoms" describes people; it claims nothing absolute
_RELATIVE_BEFORE = re.compile(r"\b(?:who|that|which|whose)\s*$", _I)
_HEDGED_BEFORE = re.compile(r"\b(?:may|might|could|maybe|perhaps|possibly|some|many|most|appears?|seems?|"
                            r"likely|probably|often|usually|generally|almost|nearly|virtually|practically)\b|"
                            r"(?<![\d.])(?!100\s*(?:%|percent|per\s+cent))\d+(?:\.\d+)?\s*(?:%|percent\b|per\s+cent\b)", _I)
# after "and" / "or" / "then", only when the sentence itself is an instruction ("Take it and never ...")
_JOINED_BEFORE = re.compile(r"\b(?:and|or|so|then|also|but)\s*$", _I)
_INSTRUCTION_WORDS = ("never", "always")

# counter-evidence worth quoting, best first: what a group's absolute is most plainly undone by
_COUNTER_WORDS = {g: ps for g, ps in {
    "permanence": [r"\b(?:restart|resume|re-?start|re-?introduce)\w*", r"\btemporar(?:y|ily)\b", r"\buntil\b",
                   r"\bfor\s+(?:\d+|a\s+few|one|two|three|several)\s+(?:hours?|days?|weeks?)\b",
                   r"\b\d+\s+(?:hours?|days?)\s+after\b", r"\bre-?evaluate\b"],
    "equivalence": [r"\b(?:more|less)\s+effective\b", r"\bbetter\s+than\b", r"\bworse\s+than\b",
                    r"\bsuperior\b", r"\binferior\b", r"\bpreferred\b", r"\bfirst[- ]line\b"],
    "proof": [r"\bnot\s+(?:a\s+)?(?:proven|proved|shown|established|clear)\b",
              r"\b(?:have|has)\s+not\s+(?:shown|proved|proven|demonstrated)\b",
              r"\bno\s+(?:consistent\s+|clear\s+|good\s+|strong\s+)?(?:proof|evidence|benefit)\b",
              r"\bmixed\b", r"\binconsistent\b", r"\banecdot\w*", r"\bswears?\s+by\b",
              r"\bI\s+think\b", r"\bI've\b", r"\bI'm\b", r"\bmy\b", r"\bI\b", r"\blimited\s+evidence\b"],
    "safety": [r"\b(?:can|may|could|might)\s+still\b", r"\bstill\b", r"\bwith\s+caution\b", r"\bcaution\b",
               r"\bsafer\s+than\b", r"\b(?:less|lower)\s+risk\b", r"\breports?\s+of\b",
               r"\b(?:can|may|could|might)\s+(?:cause|increase|raise|lead)\b", r"\brisk\s+of\b",
               r"\bside[- ]effects?\b", r"\b(?:talk|speak|check)\s+(?:to|with)\b"],
    "universal": [r"\bnot\s+(?:all|every)\b", r"\bonly\s+(?:in|if|when|for)\b",
                  r"\bin\s+(?:patients|people|children|adults|those|women|men)\s+(?:with|who|whose|aged)\b",
                  r"\bexcept\b", r"\bunless\b", r"\bsome\b", r"\bmost\b", r"\bif\b"],
    "cure": [r"\bno\s+cure\b", r"\bnot\s+(?:a\s+)?cure\b",
             r"\b(?:helps?|relieves?|manages?|controls?|reduces?|improves?|eases?|lowers?)\b"],
    "complete": [r"\b(?:reduces?|lowers?|helps?|decreases?)\b"],
    "never": [r"\bcommon\b", r"\bside[- ]effects?\b", r"\brare(?:ly)?\b", r"\bsometimes\b", r"\boccasionally\b",
              r"\buncommon\b", r"\b(?:can|may|could|might)\b"],
    "no_need": [r"\b(?:talk|speak|check|ask)\s+(?:to|with)\b", r"\bcaution\b", r"\bprecautions?\b",
                r"\bshould\b", r"\bmust\b", r"\bneed\s+to\b"],
    "guarantee": [],
    "immediacy": [r"\bcontinu\w*\s+(?:for\s+)?(?:\d+|a\s+few|one|two|three|four|six|several)\s+"
                  r"(?:days?|weeks?|months?)\s+after\b", r"\b(?:\d+|one|two|three|six)\s+(?:days?|weeks?|months?)\s+after\b",
                  r"\bcontinu\w*\b", r"\buntil\b"],
    "only": [r"\balternatives?\b", r"\bor\b"],
}.items()}
_GENERIC_WORDS = [p for p in [
    r"\b(?:can|may|could|might)\s+still\b", r"\bwith\s+caution\b", r"\bsafer\s+than\b",
    r"\b(?:talk|speak)\s+to\b", r"\bin\s+some\s+cases\b", r"\banecdot\w*", r"\breports?\s+of\b", r"\breported\b",
    r"\bmay\b", r"\bmight\b", r"\bcould\b", r"\bsome\b", r"\bmost\b", r"\busually\b", r"\bgenerally\b",
    r"\boften\b", r"\bsometimes\b", r"\blikely\b", r"\bprobably\b", r"\bunless\b", r"\bif\b",
    r"\bI\b", r"\bmy\b", r"\blimited\b",
]]
# a quoted phrase ends with its clause, a teaser's ellipsis or its line ("... treatment…\nSubscribe to continue")
_PHRASE_END = re.compile(r"[,;:.()!?\u2026\n]")


def _is_instruction(text: str, start: int, word: str) -> bool:
    if word.lower() not in _INSTRUCTION_WORDS:
        return False
    before = text[:start]
    if _INSTRUCTION_BEFORE.search(before):
        return True
    return bool(_JOINED_BEFORE.search(before)) and read_instruction(text).polarity != 0


def _claimed(text: str, m: re.Match) -> bool:
    """The statement itself asserts the absolute: not negated ("not a proven means"), hedged ("may
    never"), said of a relative clause ("people who never ..."), or asked ("should everyone ...?")."""
    before = _clause_before(text, m.start())
    if _NEGATED_BEFORE.search(before) or _HEDGED_BEFORE.search(before):
        return False
    if m.group(0).lower() in ("never", "always") and _RELATIVE_BEFORE.search(before):
        return False
    end = re.compile(r"[.!?]").search(text, m.end())
    return not (end and end.group(0) == "?")


@lru_cache(maxsize=4096)
def _terms(statement: str) -> tuple[tuple[str, str, int, int], ...]:
    text = (statement or "").replace("\u2019", "'")
    found: list[tuple[str, str, int, int]] = []
    for group, pattern in _ABSOLUTES:
        for m in pattern.finditer(text):
            if any(m.start() < e and s < m.end() for _, _, s, e in found):
                continue
            if _is_instruction(text, m.start(), m.group(0)) or not _claimed(text, m):
                continue
            found.append((group, m.group(0), m.start(), m.end()))
    return tuple(sorted(found, key=lambda t: t[2]))


def absolute_terms(statement: str) -> list[str]:
    """The absolute wording of a statement, as written, in order ("completely safe", "proven")."""
    return [t for _, t, _, _ in _terms(statement)]


def _clause_before(text: str, start: int) -> str:
    before = text[:start]
    cut = 0
    for m in _CLAUSE_START.finditer(before):
        cut = m.end()
    return before[cut:]


def _clause_after(text: str, end: int) -> str:
    m = _CLAUSE_START.search(text, end)
    return text[end: m.start() if m else len(text)]


# "X will not help a cold" states as flatly as "X never helps a cold": a negation with no hedge
_PLAIN_NOT = re.compile(r"\b(?:will|do|does|did|can|would)\s*(?:not|n't)\s+|\b(?:won't|cannot|can't)\s+", _I)
_AFTER_NEVER = re.compile(r"\bnever\s+(?P<verb>[a-z]+)", _I)
_COORDINATE = re.compile(r"\s+(?:or|and|nor)\s+", _I)


def _flat_negation(statement: str, sentence: str) -> str:
    """The words of an evidence sentence that deny, unhedged, what the statement says "never" happens."""
    m = _AFTER_NEVER.search(statement)
    if not m:
        return ""
    verb = stem(m.group("verb"))
    for neg in _PLAIN_NOT.finditer(sentence):
        after = re.match(r"[a-z]+", sentence[neg.end():], _I)
        if not after or stem(after.group(0)) != verb:
            continue
        if _HEDGE_NEAR.search(_clause_before(sentence, neg.start())):
            continue
        # a hedge on another item of a list ("a cold or most sore throats") does not hedge this one
        rest = _COORDINATE.split(_clause_after(sentence, neg.end()), maxsplit=1)[0]
        if _HEDGE_NEAR.search(rest):
            continue
        return sentence[neg.start(): neg.end() + len(after.group(0))].strip()
    return ""


def _backs(group: str, wording: str, sentence: str, statement: str = "") -> str:
    """The words in an evidence sentence that state the same absolute, unhedged and not negated."""
    if group == "never" and statement:
        flat = _flat_negation(statement, sentence)
        if flat:
            return flat
    patterns = [p for g, p in _ABSOLUTES if g == group]
    if group in _BACKING:
        patterns.append(_BACKING[group])
    for pattern in patterns:
        for m in pattern.finditer(sentence):
            if _is_instruction(sentence, m.start(), m.group(0)):
                continue
            before = _clause_before(sentence, m.start())
            if _NEGATED_BEFORE.search(before):
                continue
            if _HEDGE_NEAR.search(before) or _HEDGE_NEAR.search(_clause_after(sentence, m.end())):
                continue
            return m.group(0)
    return ""


_LEAD_IN = re.compile(r"(?:\b(?:is|are|was|were|can|may|could|might|will|has|have|does|do|did|the|a|an|it)\s+){1,2}$", _I)


def _phrase(sentence: str, start: int, words: int = 8) -> str:
    lead_in = _LEAD_IN.search(sentence[:start])        # "still" reads better as "is still", "can still"
    if lead_in:
        start = lead_in.start()
    rest = sentence[start:]
    end = _PHRASE_END.search(rest, 1)
    rest = rest[: end.start()] if end else rest
    return " ".join(rest.split()[:words]).strip()


def _negated_term(group: str, sentence: str) -> str:
    patterns = [p for g, p in _ABSOLUTES if g == group] + ([_BACKING[group]] if group in _BACKING else [])
    for pattern in patterns:
        for m in pattern.finditer(sentence):
            before = _clause_before(sentence, m.start())
            neg = _NEGATED_BEFORE.search(before)
            if neg:
                return _phrase(sentence, m.start() - len(before) + neg.start())
    return ""


_COUNTER = {g: [re.compile(p, _I) for p in ps] for g, ps in _COUNTER_WORDS.items()}
_GENERIC_COUNTER = [re.compile(p, _I) for p in _GENERIC_WORDS]


def _counter(group: str, sentence: str, generic: bool) -> tuple[int, str] | None:
    """(tier, quoted words) of the best counter-evidence in one sentence; lower tier is plainer.

    The group's own counter-evidence and a negated absolute first; the generic hedges (may, some,
    if, ...) only on the second pass, when no sentence had anything plainer.
    """
    if not generic:
        negated = _negated_term(group, sentence)
        if negated:
            return 0, negated
        for i, pattern in enumerate(_COUNTER.get(group, [])):
            m = pattern.search(sentence)
            if m:
                return 1 + i, _phrase(sentence, m.start())
        return None
    for i, pattern in enumerate(_GENERIC_COUNTER):
        m = pattern.search(sentence)
        if m:
            return 50 + i, _phrase(sentence, m.start())
    return None


def _subject(statement: str) -> frozenset[str]:
    chars = list(statement)
    for _, _, s, e in _terms(statement):
        chars[s:e] = " " * (e - s)
    return core(stems_of("".join(chars)))


def compare_overclaim(statement: str, evidence_sentences: Sequence[str]) -> CheckFinding | None:
    """Whether the evidence states the statement's absolutes as absolutely as the statement does.

    None when the statement has no absolute term. "agrees" only when, for every absolute in the
    statement, an evidence sentence about the same subject states the same absolute unhedged and
    not negated. Otherwise "unbacked", quoting the plainest hedge, condition or negation found in
    a sentence that shares the statement's subject (or saying the source says nothing of it).
    """
    terms = _terms(statement)
    if not terms:
        return None
    subject = _subject(statement)
    # read in a normalised form, reported as given (the finding quotes the sentence the caller passed)
    given: dict[str, str] = {}
    for s in evidence_sentences:
        if s and s.strip():
            given.setdefault(" ".join(s.replace("\u2019", "'").split()), s)
    sentences = list(given)
    overlap = {}
    for s in sentences:
        shared = subject & core(stems_of(s))
        overlap[s] = (len(shared) / len(subject) if subject else 1.0, len(shared))
    on_subject = [s for s in sentences
                  if overlap[s][0] >= 0.5 and overlap[s][1] >= min(2, len(subject))]
    backed: list[tuple[str, str, str]] = []          # (term, evidence words, sentence)
    unbacked: list[tuple[str, str]] = []             # (group, term)
    for group, term, _, _ in terms:
        hit = next(((w, s) for s in on_subject if (w := _backs(group, term, s, statement))), None)
        if hit:
            backed.append((term, hit[0], hit[1]))
        else:
            unbacked.append((group, term))
    if not unbacked:
        term, words, sentence = backed[0]
        said = "; ".join(f"'{w}'" for _, w, _ in backed)
        return CheckFinding("agrees", given[sentence],
                            f"the statement says '{term}'; the source says so too ({said})")
    group, term = unbacked[0]
    named = " and ".join(f"'{t}'" for _, t in unbacked)
    related = [s for s in sentences if overlap[s][1] >= 1] or sentences
    best = None
    for generic in (False, True):
        for s in related:
            found = _counter(group, s, generic)
            if found is None:
                continue
            key = (found[0], -overlap[s][0])
            if best is None or key < best[0]:
                best = (key, found[1], s)
        if best:
            break
    if best is None:
        return CheckFinding("unbacked", "", f"the statement says {named}; the source says nothing of it")
    return CheckFinding("unbacked", given[best[2]], f"the statement says {named}; the source says '{best[1]}'")
