"""Evidence: cut a source into passages and find the ones that bear on a statement.

A judge reads the relevant part of a long page, not the whole of it. Passages are
overlapping sentence windows; ranking is BM25 (rank-bm25) over lowercase word tokens.
"""
from __future__ import annotations

import functools
import re
import unicodedata
from array import array
from dataclasses import dataclass, field
from typing import Any, Sequence

from rank_bm25 import BM25Okapi

from .models import Source

_WORD = re.compile(r"[a-z0-9]+(?:[.,][0-9]+)?", re.I)
_STOP = frozenset(
    "a an and are as at be by for from has have in is it its of on or that the this to was were "
    "with which who will can may than then there these those their they been being also not no".split()
)
# a cheap splitter for source text; statement splitting uses parse.segment.split_sentences
_SENT_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[A-Z0-9\"'(\[])|\n{2,}|\n(?=\s*[-*\u2022]\s)")


def tokens(text: str) -> list[str]:
    """Lowercase word tokens without stop words; numbers keep their decimal part."""
    return [t for t in (m.group(0).lower() for m in _WORD.finditer(text)) if t not in _STOP]


def source_sentences(text: str) -> list[str]:
    parts = [p.strip() for p in _SENT_END.split(text or "")]
    return [p for p in parts if p]


def split_passages(text: str, window: int = 3, stride: int = 2, max_chars: int = 1200) -> list[str]:
    """Overlapping windows of ``window`` sentences, advancing ``stride`` sentences."""
    sentences = source_sentences(text)
    if not sentences:
        return []
    passages: list[str] = []
    i = 0
    while True:
        chunk = " ".join(sentences[i:i + window])
        if len(chunk) > max_chars:  # one giant "sentence" (a table, a list without stops)
            for j in range(0, len(chunk), max_chars):
                passages.append(chunk[j:j + max_chars])
        else:
            passages.append(chunk)
        if i + window >= len(sentences):
            break
        i += stride
    return passages


@dataclass
class SourceText:
    """What a judge reads: one source's text with its passages prepared once per run.

    ``passages`` are sentence windows cut by :func:`split_passages`; the BM25
    index over them is built lazily and cached here so every statement reuses it.
    """

    url: str
    text: str
    title: str | None = None
    flags: tuple[str, ...] = ()
    passages: list[str] = field(default_factory=list)
    cache: dict[str, Any] = field(default_factory=dict, repr=False)

    @classmethod
    def from_source(cls, source: Source) -> "SourceText":
        return cls(url=source.url, text=source.text, title=source.title, flags=tuple(source.flags),
                   passages=split_passages(source.text))

    @classmethod
    def from_text(cls, text: str, url: str = "", title: str | None = None) -> "SourceText":
        return cls(url=url, text=text, title=title, passages=split_passages(text))


def _bm25(source: SourceText) -> BM25Okapi | None:
    index = source.cache.get("bm25")
    if index is None and source.passages:
        corpus = [tokens(p) or ["_"] for p in source.passages]
        index = BM25Okapi(corpus)
        source.cache["bm25"] = index
    return index


def rank_passages(statement: str, source: SourceText, k: int = 5) -> list[tuple[int, float]]:
    """Indices of the ``k`` best passages for ``statement`` with their BM25 scores, best first."""
    index = _bm25(source)
    if index is None:
        return []
    query = tokens(statement)
    if not query:
        return [(i, 0.0) for i in range(min(k, len(source.passages)))]
    scores = index.get_scores(query)
    order = sorted(range(len(scores)), key=lambda i: (-scores[i], i))[:k]
    return [(i, float(scores[i])) for i in order]


def approx_tokens(text: str) -> int:
    """A model-agnostic token estimate (about 4 characters a token for English)."""
    return max(1, (len(text) + 3) // 4)


def select_passages(statement: str, source: SourceText, token_budget: int = 1500,
                    extra_scores: Sequence[float] | None = None) -> list[str]:
    """The best passages up to ``token_budget`` tokens, returned in document order.

    ``extra_scores`` (one per passage, e.g. embedding similarity) are added to the
    normalised BM25 scores when given.
    """
    ranked = rank_passages(statement, source, k=len(source.passages))
    if not ranked:
        return []
    top = max(s for _, s in ranked) or 1.0
    combined = {i: s / top for i, s in ranked}
    if extra_scores is not None:
        for i, e in enumerate(extra_scores):
            combined[i] = combined.get(i, 0.0) + float(e)
    chosen: list[int] = []
    used = 0
    for i in sorted(combined, key=lambda i: (-combined[i], i)):
        cost = approx_tokens(source.passages[i])
        if chosen and used + cost > token_budget:
            continue
        chosen.append(i)
        used += cost
        if used >= token_budget:
            break
    return [source.passages[i] for i in sorted(chosen)]


def normalise_for_match(text: str) -> str:
    """Case-fold, unify quotes and dashes, collapse whitespace: how quotes are compared."""
    return normalised_with_map(text)[0]


_QUOTE_MAP = {"\u2018": "'", "\u2019": "'", "\u201c": '"', "\u201d": '"', "\u2013": "-", "\u2014": "-"}
_TOKEN = re.compile(r"\s+|[^\s]+")


def normalised_with_map(text: str) -> tuple[str, array, array]:
    """normalise_for_match, keeping for each output character where it came from in ``text``:
    (normalised, starts, ends), so a match in the normalised text maps back to a span of ``text``."""
    out: list[str] = []
    starts, ends = array("l"), array("l")
    space = False
    for m in _TOKEN.finditer(text or ""):
        tok, at = m.group(0), m.start()
        if tok[0].isspace():
            space = bool(out)
            continue
        if space:
            out.append(" ")
            starts.append(at)
            ends.append(at)
            space = False
        if tok.isascii():   # the common case: casefold is lower, NFKC changes nothing
            out.append(tok.lower())
            starts.extend(range(at, at + len(tok)))
            ends.extend(range(at + 1, at + len(tok) + 1))
            continue
        i = 0
        while i < len(tok):   # a base character with its combining marks is normalised together
            j = i + 1
            while j < len(tok) and unicodedata.combining(tok[j]):
                j += 1
            cluster = "".join(_QUOTE_MAP.get(c, c) for c in tok[i:j] if c != "\u00ad")
            piece = unicodedata.normalize("NFKC", cluster).casefold()
            out.append(piece)
            starts.extend([at + i] * len(piece))
            ends.extend([at + j] * len(piece))
            i = j
    return "".join(out), starts, ends


@functools.lru_cache(maxsize=32)
def _normalised_source(text: str) -> tuple[str, array, array]:
    # each verdict's quote is checked against its source, by the judge and again by the pipeline:
    # a source is normalised once, not once per pair (a str caches its hash, so a hit is cheap)
    return normalised_with_map(text)


def _quote_pieces(quote: str) -> list[str]:
    q = normalised_with_map(quote)[0].strip(" \"'.\u2026")
    return [p.strip(" \"'") for p in re.split(r"\s*(?:\.\.\.|\u2026)\s*", q) if p.strip(" \"'")]


def locate_quote(quote: str, text: str) -> tuple[int, int] | None:
    """The span of an evidence quote in the source text, or None when it does not occur.

    The one quote matcher: the engine's ``quote_found`` and the app's highlight both use it.
    Case, quote styles, dashes and whitespace runs are ignored, as are leading/trailing ellipses
    and quotation marks a model adds; a quote shortened with an inner ellipsis must match piece
    by piece, in order, and then spans from its first piece to its last.
    """
    return _locate_pieces(_quote_pieces(quote), text)


def _locate_pieces(pieces: list[str], text: str) -> tuple[int, int] | None:
    if not pieces:
        return None
    haystack, starts, ends = _normalised_source(text or "")
    pos, first = 0, -1
    for piece in pieces:
        found = haystack.find(piece, pos)
        if found < 0:
            return None
        if first < 0:
            first = found
        pos = found + len(piece)
    return starts[first], ends[pos - 1]


def quote_in_source(quote: str, text: str) -> bool | None:
    """Whether an evidence quote occurs in the source text (see locate_quote); None when there is no quote."""
    pieces = _quote_pieces(quote)   # normalised once: this runs for every verdict of a run
    if not pieces:
        return None
    return _locate_pieces(pieces, text) is not None
