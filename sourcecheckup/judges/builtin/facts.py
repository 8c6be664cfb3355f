"""Every fact of a statement must be found: the completeness check of the built-in judge.

Real statements carry several facts ("Arnold is the publisher and editorial director of Media Play
News, one of five Hollywood trades"), and a page that backs one of them is partial support, which the
study counts as not supported. The statement is split into the facts it asserts (clauses, coordinated
predicates, appositions, parentheticals: ``FACT_BREAKS``, one row a rule with its example), and each
fact is looked for in the source: its key words within a window of three sentences and anywhere on
the page, its closest sentence by embedding; the statement's names and figures anywhere on the page
(a figure the exact quantity check matched counts as found, in whatever unit the page gives it).

A small logistic model (``models.facts`` in resources/judges/builtin.json, trained on WiCE's real
Wikipedia citations by scripts/train_facts.py) turns these features into the probability that the page
holds the whole statement. It reads whole pages: on a short excerpt (fewer than ``PAGE_SENTENCES``
sentences, the claim files' 1-3 evidence sentences) the trained score already weighs the same coverage,
and the gate is not applied.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from ...checks import quantities as qty
from .features import _NEGATIONS, _STOP, _Idf, stem, words

# the completeness gate applies to sources of at least this many sentences (a page, not an excerpt)
PAGE_SENTENCES = 8
# a fact whose key words fill less than this share of its best three-sentence window is "weak"
WEAK_FACT = 0.6
# windows of this many consecutive sentences (the sentence before and after)
_WINDOW = 1
# sentences holding the statement's figures that the quantity comparison reads
_FIGURE_SENTENCES = 40


@dataclass(frozen=True)
class FactBreak:
    """One rule of the splitter: where a new fact begins, what kind it is, and an example it splits."""

    pattern: str
    kind: str
    example: str


FACT_BREAKS: tuple[FactBreak, ...] = (
    FactBreak(r";\s+", "clause", "He left the band in 1990; his brother stayed until 1995."),
    FactBreak(r",?\s+(?:but|while|whereas|although|though|however)\s+", "clause",
              "The album sold well, but the tour was cancelled."),
    FactBreak(r",\s+(?:and|or|which|who|whom|whose|where|when|including|includes|such as|as well as|after|"
              r"before|with|becoming|making|being)\s+", "clause",
              "She joined the club in 2010, where she won two titles."),
    FactBreak(r"\s+(?:and|as well as)\s+(?=(?:[a-z]+ ){0,1}(?:was|were|is|are|has|had|have|became|won|received|"
              r"served|played|released|appeared|made|took|went|left|joined|later|also)\b)", "predicate",
              "He founded the company and later became its chairman."),
    FactBreak(r"\s*\(\s*|\s*\)\s*", "parenthetical", "Brian Pendleton (13 April 1944) was a guitarist."),
    FactBreak(r"\s+[\u2013\u2014-]{1,2}\s+", "apposition", "The trial \u2013 the largest yet \u2013 ended in 2019."),
    FactBreak(r",\s+", "apposition", "Media Play News, one of five Hollywood trades, covers home entertainment."),
)
_BREAK = re.compile("|".join(f"(?:{b.pattern})" for b in FACT_BREAKS))
# number words read as digits ("three players" is "3 players"); larger ones are rarely written in words
_DIGITS = {"one": "1", "two": "2", "three": "3", "four": "4", "five": "5", "six": "6", "seven": "7",
           "eight": "8", "nine": "9", "ten": "10", "eleven": "11", "twelve": "12"}
_THOUSANDS = re.compile(r"(?<=\d),(?=\d{3})")
_NUMBER = re.compile(r"\d+(?:\.\d+)?")
# "2018–19": the 19 ends a year range that a page writes "2018-2019"
_YEAR_RANGE_END = re.compile(r"\b\d{4}\s*[\u2013\u2014-]\s*(\d{1,2})\b")
_NAME = re.compile(r"\b[A-Z][a-zA-Z]+|\b[A-Z]{2,}\b")

# what the completeness model reads: the facts' shares of key words in their best window ("win") and on
# the whole page, the statement's in its best window, names and figures found nowhere on the page, the
# facts under WEAK_FACT, the judge's own score ("base"), and with embeddings each fact's closest sentence
FEATURES_LEXICAL = (
    "f_min_win", "f_mean_win", "f_min_page", "c_win", "miss_names", "miss_names_frac", "miss_numbers",
    "weak_facts", "base", "off_subject",
)
FEATURES_EMBEDDING = ("f_min_emb", "f_mean_emb")


def split_facts(statement: str) -> list[str]:
    """The facts a statement asserts, as text pieces; a piece without a content word joins the one before,
    and a short one with no name or figure too ("their son" is part of the clause it sits in)."""
    facts: list[str] = []
    for piece in _BREAK.split(statement or ""):
        piece = (piece or "").strip(" ,.;:\"'")
        stems = _stems(piece)
        if not stems:
            continue
        if facts and len(stems) < 2 and not re.search(r"\d|[A-Z]", piece):
            facts[-1] = f"{facts[-1]} {piece}"
            continue
        facts.append(piece)
    return facts or [statement]


def _normalised_words(text: str) -> list[str]:
    return [_DIGITS.get(w, w) for w in words(_THOUSANDS.sub("", text or ""))]


def _stems(text: str) -> list[str]:
    seen: dict[str, None] = {}
    for w in _normalised_words(text):
        if w in _STOP or w in _NEGATIONS or len(w) < 2:
            continue
        seen.setdefault(stem(w), None)
    return list(seen)


def _weighted(stems: Sequence[str], have: set[str], idf: _Idf) -> float:
    if not stems:
        return 1.0
    total = sum(idf(s) for s in stems) or 1.0
    return sum(idf(s) for s in stems if s in have) / total


@dataclass
class _PageIndex:
    """What the check reads of a page, computed once per source: stems per sentence and per window."""

    sentence_stems: list[set[str]]
    windows: list[set[str]]
    page: set[str]
    words: set[str]
    numbers: set[str]


def page_index(sentences: Sequence[str], cache: dict) -> _PageIndex:
    found = cache.get("facts_index")
    if found is not None:
        return found
    stems = [set(_stems(s)) for s in sentences]
    n = len(stems)
    windows = [set().union(*stems[max(0, i - _WINDOW):i + _WINDOW + 1]) for i in range(n)]
    text = " ".join(sentences)
    index = _PageIndex(stems, windows, set().union(*stems) if stems else set(), set(_normalised_words(text)),
                       set(_NUMBER.findall(_THOUSANDS.sub("", text))))
    cache["facts_index"] = index
    return index


@dataclass
class FactsFinding:
    """The completeness features of one pair and what a rationale names."""

    features: dict[str, float]
    facts: list[str]
    coverage: list[float]            # each fact's best-window share of key words
    missing: list[list[str]]         # each fact's key words found nowhere on the page
    missing_names: list[str]
    missing_numbers: list[str]
    incomplete: bool = False         # the gate found the page does not hold every fact
    unsure: bool = False             # its probability is close to the threshold

    def weakest(self) -> int:
        """The fact least found: lowest window share, then most missing words."""
        return min(range(len(self.facts)), key=lambda i: (self.coverage[i], -len(self.missing[i]), i))

    def absent_figures(self, statement: str) -> list[str]:
        """The statement's figures found nowhere on the page, less the end of a year range ("2018–19")."""
        ends = set(_YEAR_RANGE_END.findall(statement))
        return [n for n in self.missing_numbers if n not in ends]

    def unsure_part(self) -> str:
        """The part a supported verdict leaves to a person: "'later won an Oscar' (Oscar found nowhere on the
        page)"; the fact that names what the page lacks, else the weakest."""
        absent = self.missing_names or self.missing_numbers
        i = next((k for k, f in enumerate(self.facts) if any(a in f for a in absent)), self.weakest())
        words = absent or self.missing[i]
        return f"'{_shortened(self.facts[i])}'" + (f" ({', '.join(words[:3])} found nowhere on the page)" if words else "")

    def missing_part(self) -> str:
        """The words a rationale names: "'with 17 hours left' is not in the source"."""
        i = self.weakest()
        fact = _shortened(self.facts[i])
        absent = self.missing_names or self.missing_numbers or self.missing[i]
        if absent and len(self.facts) == 1:
            return f"{', '.join(repr(a) for a in absent[:3])} {'is' if len(absent) == 1 else 'are'} not in the source"
        detail = f" ({', '.join(absent[:3])} not found)" if absent else ""
        return f"'{fact}' is not in the source as stated{detail}"


def _shortened(fact: str, limit: int = 90) -> str:
    """A fact as a rationale quotes it: at most ``limit`` characters, cut at a word."""
    return fact if len(fact) <= limit else fact[:limit].rsplit(" ", 1)[0] + "…"


def _matched_figures(statement: str, numbers: set[str], sentences: Sequence[str]) -> set[str]:
    """The statement's figures that the exact quantity check finds as stated (2,400 micrograms = 2.4 mg)."""
    if not numbers:
        return set()
    near = [s for s in sentences if any(n in _THOUSANDS.sub("", s) for n in numbers)][:_FIGURE_SENTENCES]
    found: set[str] = set()
    for finding in qty.compare_quantities(statement, near or list(sentences[:_FIGURE_SENTENCES])):
        if finding.status == qty.MATCHED:
            found |= set(_NUMBER.findall(_THOUSANDS.sub("", finding.claim.text)))
    return found


def check_facts(statement: str, sentences: Sequence[str], cache: dict, idf: _Idf, base: float,
                fact_vectors: Sequence[np.ndarray] | None = None,
                sentence_vectors: dict[int, np.ndarray] | None = None) -> FactsFinding:
    """The completeness features of ``statement`` against a page's ``sentences``."""
    index = page_index(sentences, cache)
    facts = split_facts(statement)
    fact_stems = [_stems(f) for f in facts]
    window = [max((_weighted(st, w, idf) for w in index.windows), default=0.0) for st in fact_stems]
    on_page = [_weighted(st, index.page, idf) for st in fact_stems]
    all_stems = _stems(statement)
    names = [m.group(0) for m in _NAME.finditer(statement) if m.start() > 0]
    missing_names = [n for n in dict.fromkeys(names) if n.lower() not in index.words and n.lower() not in _STOP]
    numbers = set(_NUMBER.findall(_THOUSANDS.sub("", statement)))
    absent_numbers = {n for n in numbers if n not in index.numbers}
    if absent_numbers:
        absent_numbers -= _matched_figures(statement, absent_numbers, sentences)
    missing = [[w for w in _words_of(f, st, index.page) if idf(stem(w)) >= idf.key]
               for f, st in zip(facts, fact_stems)]
    features = {
        "f_min_win": min(window), "f_mean_win": float(np.mean(window)), "f_min_page": min(on_page),
        "c_win": max((_weighted(all_stems, w, idf) for w in index.windows), default=0.0),
        "miss_names": float(min(len(missing_names), 4)),
        "miss_names_frac": len(missing_names) / max(1, len(set(names))),
        "miss_numbers": float(min(len(absent_numbers), 3)),
        "weak_facts": float(sum(c < WEAK_FACT for c in window)),
        "base": base,
    }
    if fact_vectors is not None and sentence_vectors:
        ids = sorted(sentence_vectors)
        matrix = np.stack([sentence_vectors[i] for i in ids])
        best = [float((matrix @ v).max()) for v in fact_vectors]
        features.update(f_min_emb=min(best), f_mean_emb=float(np.mean(best)))
    return FactsFinding(features, facts, window, missing, missing_names,
                        sorted(absent_numbers, key=lambda n: statement.find(n)))


def _words_of(fact: str, stems: Sequence[str], page: set[str]) -> list[str]:
    """The fact's words whose stems the page never uses, as written in the fact."""
    absent = {s for s in stems if s not in page}
    out: dict[str, None] = {}
    for w in _normalised_words(fact):
        if stem(w) in absent:
            out.setdefault(w, None)
    return list(out)
