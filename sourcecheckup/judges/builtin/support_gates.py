"""What the text a verdict rests on must be before it supports a statement (issue 23).

A page's furniture (its title, a heading, a navigation or subscription line) supports nothing; a
closest sentence about another subject supports nothing; a sentence that states the statement
outright supports it whatever a negation elsewhere in its passage did to the trained score. And a
rationale says which side is negated as the words have it ("advises against" is a negation).
Rules as rows, each with the example its test reads (tests/judges/test_screen_real_pages.py).
"""
from __future__ import annotations

import json
import re
from functools import lru_cache
from typing import Sequence

from ...checks.polarity import read_instruction
from .features import _coverage, _Idf, _stem_set, content_stems, has_negation, words

# lines that are only a page's furniture, not something it says: (pattern, example)
FURNITURE: tuple[tuple[str, str], ...] = (
    (r"skip to (?:main )?content|back to top|main menu|^menu$|^search$|^home\b.*[>/\u203a\u00bb]", "Skip to content"),
    (r"subscribe|log ?in\b|sign ?in\b|already a subscriber|purchase this article|access through your institution|"
     r"full archive|cookies?\b", "Subscribe to continue reading"),
    (r"^(?:share|print|email|tweet|save|download(?: pdf)?|cite|permalink|related articles?|similar articles|"
     r"references|article information|abstract|summary|background|methods|results|conclusions?)$", "Summary"),
    (r"^page last reviewed|^next review due|^published:?|^updated:?|^copyright|\u00a9",
     "Page last reviewed: 17 January 2023"),
)
_FURNITURE = [re.compile(p, re.I) for p, _ in FURNITURE]
# a line without a sentence's end, this short, is a heading ("Serious side effects", "Articles",
# "The Lancet, Volume 400, Issue 10355, P832-845")
HEADING_MAX_WORDS = 12
_SENTENCE_END = re.compile(r"[.!?\u2026:;\"')\]]\s*$")


def _is_furniture(line: str, title: str) -> bool:
    text = line.strip().lstrip("-*\u2022 ").strip()
    if not text:
        return True
    low = text.lower()
    if title and (low == title or (len(low) > 20 and title.startswith(low))):
        return True
    if any(p.search(low) for p in _FURNITURE):
        return True
    return not _SENTENCE_END.search(text) and len(text.split()) <= HEADING_MAX_WORDS


def _title(title: str | None) -> str:
    """The page title without its site name ("Effect of ... trials - The Lancet")."""
    t = (title or "").strip().lower()
    return re.split(r"\s+[-|\u2013\u2014]\s+(?=[^-|\u2013\u2014]*$)", t)[0] if t else ""


def content_of(quote: str, title: str | None = None) -> str:
    """The quote without its lines that are only a title, a heading or navigation ("" when nothing is left)."""
    t = _title(title)
    lines: list[str] = []
    for line in (x.strip() for x in quote.splitlines()):
        if not line:
            continue
        # a line wrapped inside a sentence (a PDF's "... children aged 2 to" / "5 years ...") is joined
        if lines and not _SENTENCE_END.search(lines[-1]) and (line[0].islower() or line[0].isdigit()):
            lines[-1] += " " + line
        else:
            lines.append(line)
    if len(lines) == 1:     # one line: only a title or a navigation line is furniture, not a short sentence
        low = lines[0].lower()
        return "" if (t and low == t) or any(p.search(low) for p in _FURNITURE) else lines[0]
    return " ".join(line for line in lines if not _is_furniture(line, t))


# on a page of this many sentences and lines, the closest sentence is about another subject when it is this far
# from the statement in meaning and shares this little of its key terms (the forum's CoQ10 sentence
# against "rhabdomyolysis is very rare"). A short evidence snippet was chosen for the statement, and a
# paraphrase there can share few words; on a whole page, the best of many sentences being this far means
# the page does not discuss it
OFF_SUBJECT_MIN_SENTENCES = 8
OFF_SUBJECT_SIMILARITY = 0.62
OFF_SUBJECT_COVERAGE = 0.35
# a sentence states the statement outright when it holds every key term and means the same
OUTRIGHT_SIMILARITY = 0.9


OFF_SUBJECT = "its closest sentence is about something else"


def unfit_to_support(statement: str, quote: str, title: str | None, similarity: float | None, coverage_idf: float,
                     idf: _Idf, checks_passed: bool, page_sentences: int) -> str:
    """Why the closest text cannot support the statement, whatever the trained score ("" when it can)."""
    if checks_passed:
        return ""       # the exact checks found the statement's figures or instruction somewhere on the page
    content = content_of(quote, title)
    if not content:
        return "its closest text is only the page's title or a heading"
    if page_sentences >= OFF_SUBJECT_MIN_SENTENCES and similarity is not None and similarity < OFF_SUBJECT_SIMILARITY:
        own = _coverage(content_stems(statement), _stem_set(content), idf)[1]
        if max(own, 0.0) < OFF_SUBJECT_COVERAGE and coverage_idf < OFF_SUBJECT_COVERAGE + 0.1:
            return OFF_SUBJECT
    return ""


def stated_outright(statement: str, quote: str, title: str | None, similarity: float | None, idf: _Idf) -> bool:
    """The closest sentence says the statement, every key term and the same negation."""
    content = content_of(quote, title)
    if not content or similarity is None or similarity < OUTRIGHT_SIMILARITY:
        return False
    if _coverage(content_stems(statement), _stem_set(content), idf)[1] < 0.999:
        return False
    return negated(statement) == negated(content)


def negated(text: str) -> bool:
    """A negation word, or an instruction not to ("advises against", "avoid")."""
    return has_negation(words(text)) or read_instruction(text).polarity < 0


def negation_sides(statement: str, quote: str, title: str | None = None) -> str:
    """Which side is negated, in words for a rationale ("" when both or neither are)."""
    s, q = negated(statement), negated(content_of(quote, title) or quote)
    if s == q:
        return ""
    return ("the statement is negated but its closest sentence is not" if s
            else "its closest sentence is negated but the statement is not")


def page_units(sentences: Sequence[str]) -> int:
    """How many sentences and lines a page has (a teaser's title, headings and lines count)."""
    return sum(len([line for line in s.splitlines() if line.strip()]) for s in sentences)


def corroborating(kinds: Sequence[str]) -> bool:
    return any(k in ("quantity", "instruction", "overclaim") for k in kinds)


_NEGATORS = frozenset({"not", "no", "never", "cannot", "n't", "nor", "without"})
_PHRASE = re.compile(r"[a-z0-9]+(?:'[a-z]+)?|n't")
# "not only X but also Y" says X; a run of these words alone is too common to read a negation off
_NOT_A_NEGATION = ("only", "just", "least", "more", "less", "fewer", "later", "earlier", "longer", "than", "over")
_LIGHT_RUN = frozenset({"the", "a", "an", "of", "to", "in", "on", "and", "or", "is", "are", "be", "it", "this",
                        "that", "with", "for", "as", "at", "by", "you", "your", "can", "may", "will", "should"})


def negated_phrase(statement: str, sentence: str) -> str:
    """The statement's own words found in the sentence with a negation just before them on one side only
    ("your asthma is well controlled" against "your asthma is not well controlled"): in words for the
    rationale, or "". Words that run on for at least two, one of them not a light word, count."""
    s = _PHRASE.findall(statement.lower().replace("n't", " n't"))
    e = _PHRASE.findall(sentence.lower().replace("n't", " n't"))
    for i in range(len(e)):
        for j in range(len(s)):
            n = 0
            while i + n < len(e) and j + n < len(s) and e[i + n] == s[j + n]:
                n += 1
            if n < 2 or not set(e[i:i + n]) - _LIGHT_RUN or set(e[i:i + n]) & _NEGATORS:
                continue
            before_e = e[i - 1] if i else ""
            before_s = s[j - 1] if j else ""
            if (before_e in _NEGATORS) == (before_s in _NEGATORS) or e[i] in _NOT_A_NEGATION:
                continue
            if any(w[0].isdigit() for w in e[i:i + n]):
                continue                      # "no more than 6 mg": a bound, the quantity check's to read
            # the other side must negate nothing before the words ("not completely risk free", "no medicine
            # has been shown to be effective"): only a plain flip is read
            plain = s[:j] if before_e in _NEGATORS else e[:i]
            if set(plain) & _NEGATORS:
                continue
            phrase = " ".join(e[i:i + n])
            if before_e in _NEGATORS:
                return f"its closest sentence says '{before_e} {phrase}' where the statement says '{phrase}'"
            return f"the statement says '{before_s} {phrase}' where its closest sentence says '{phrase}'"
    return ""


# ---- word salad (issue 42): the statement's words shuffled into 60 "sentences" share every key term with it.
# Real text puts only some function words side by side ("of the", never "the of"); scripts/function_bigrams.py
# lists the pairs the training files write. Read over the 20 sentences closest to a statement (10 at least): no
# window of 10 or 20 sentences of WiCE dev, HealthVer, Check-COVID dev, VitaminC, SciFact or Fool Me Twice
# (4,852 windows of 100 word pairs or more) passes both rates; every 20-sentence window of salad does.
FUNCTION_WORDS = frozenset(
    "the a an of and to in is that it for on with as was at by this from or be are were has have had not but which "
    "their its his her they he she we you i can will would may also been more than other such these those into "
    "about after before between during under over if so no all any some most".split())
_ARTICLES = frozenset({"the", "a", "an"})
_SALAD_TOKEN = re.compile(r"[a-z]+|[.!?]")
SALAD_SENTENCES = 20
SALAD_MIN_SENTENCES = SALAD_SENTENCES // 2   # fewer sentences than this are never read as salad
SALAD_MIN_PAIRS = 100
SALAD_RATE = 0.02       # share of adjacent pairs that are function words real text never pairs
SALAD_ARTICLES = 0.2    # share of articles followed by a function word or a sentence's end
WORD_SALAD = "the sentences closest to it do not read as text (its words in no grammatical order)"


def salad_tokens(text: str) -> list[str]:
    return _SALAD_TOKEN.findall(text.lower())


@lru_cache(maxsize=1)
def _plausible_pairs() -> frozenset[tuple[str, str]]:
    from ...resources import resources_dir

    data = json.loads((resources_dir() / "judges" / "function_bigrams.json").read_text(encoding="utf-8"))
    return frozenset(tuple(p.split(" ", 1)) for p in data["pairs"])  # type: ignore[misc]


def word_salad(sentences: Sequence[str], closeness: Sequence[float]) -> str:
    """:data:`WORD_SALAD` when the sentences closest to the statement are words in no grammatical order."""
    if len(sentences) < SALAD_MIN_SENTENCES:
        return ""
    near = sorted(range(len(sentences)), key=lambda i: (-closeness[i], i))[:SALAD_SENTENCES]
    tokens = salad_tokens(" ".join(sentences[i] for i in sorted(near)))
    pairs = list(zip(tokens, tokens[1:]))
    if len(pairs) < SALAD_MIN_PAIRS:
        return ""
    plausible = _plausible_pairs()
    odd = sum(1 for p in pairs if p[0] in FUNCTION_WORDS and p[1] in FUNCTION_WORDS and p not in plausible)
    articles = [b for a, b in pairs if a in _ARTICLES]
    stray = sum(1 for b in articles if b in FUNCTION_WORDS or b in ".!?")
    if len(articles) >= 3 and odd / len(pairs) >= SALAD_RATE and stray / len(articles) >= SALAD_ARTICLES:
        return WORD_SALAD
    return ""
