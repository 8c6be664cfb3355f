"""Decide each reference's outcome: verified, mismatch, not found, ambiguous or lookup failed.

A DOI is asked of Crossref (OpenAlex when Crossref fails or has no record), a PMID of PubMed
(OpenAlex likewise), a free-text reference is searched in Crossref, then PubMed, then OpenAlex,
stopping at the first service with a candidate above the match threshold. What the reference wrote
is compared field by field with the record (title after normalising case and punctuation, authors'
family names, year within one, journal with abbreviations understood), and every outcome carries one
sentence of evidence a librarian can check. A service that could not be asked is never a "not found":
only a service's own answer can say that a paper does not exist.
"""
from __future__ import annotations

import dataclasses
import re
import unicodedata
from collections import Counter
from difflib import SequenceMatcher
from typing import Awaitable, Callable

from ..models import utcnow
from .lookup import LookupCache, LookupFailed, MetadataClient
from .model import (
    FieldComparison,
    LookupSettings,
    Notice,
    NoticeKind,
    Record,
    Reference,
    ReferenceCheck,
    ReferenceStatus,
)
from .retractions import RetractionIndex

AMBIGUITY_MARGIN = 0.05        # candidates this close to the best, above the threshold, are a tie
TITLE_AGREES = 0.85            # title similarity from which a cited title is the record's title
WEIGHTS = {"title": 0.6, "authors": 0.2, "year": 0.1, "journal": 0.1}
SERVICE_NAMES = {"crossref": "Crossref", "pubmed": "PubMed", "openalex": "OpenAlex",
                 "retraction_watch": "Retraction Watch"}
_JOURNAL_STOP = {"of", "the", "and", "in", "for", "on", "de", "la", "und", "fur", "a"}
_NOTICE_WORDS = {NoticeKind.RETRACTION: "retraction", NoticeKind.WITHDRAWAL: "withdrawal",
                 NoticeKind.EXPRESSION_OF_CONCERN: "expression of concern", NoticeKind.CORRECTION: "correction"}


# --- comparing what was cited with what a service holds -----------------------------------------------

def normalise_text(text: str) -> str:
    """Lower case, accents off, punctuation to spaces, spaces folded."""
    decomposed = unicodedata.normalize("NFKD", (text or "").lower())
    plain = "".join(c for c in decomposed if not unicodedata.combining(c)).replace("ø", "o").replace("ß", "ss")
    return " ".join(re.sub(r"[^a-z0-9]+", " ", plain).split())


def title_similarity(cited: str, found: str) -> float:
    """0..1: half character-sequence ratio, half shared words; the record's main title (before a colon) counts too."""
    a = normalise_text(cited)
    if not a:
        return 0.0
    variants = {found, found.split(":")[0]} if ":" in found else {found}
    best = 0.0
    for variant in variants:
        b = normalise_text(variant)
        if not b:
            continue
        ratio = SequenceMatcher(None, a, b, autojunk=False).ratio()
        wa, wb = a.split(), b.split()
        dice = 2 * sum((Counter(wa) & Counter(wb)).values()) / (len(wa) + len(wb))
        best = max(best, (ratio + dice) / 2)
    return best


def _family_keys(name: str) -> set[str]:
    words = normalise_text(name).split()
    return {" ".join(words), words[-1]} if words else set()


def cited_authors(ref: Reference) -> list[str]:
    return [a for a in ref.authors if normalise_text(a) not in ("", "et al", "et al.", "others")]


def authors_found(cited: list[str], found: tuple[str, ...]) -> list[bool]:
    """For each cited family name, whether the record lists it (particles and hyphens forgiven)."""
    keys = set().union(*(_family_keys(f) for f in found)) if found else set()
    return [bool(_family_keys(c) & keys) for c in cited]


def _abbreviates(short: list[str], long: list[str]) -> bool:
    """"n engl j med" abbreviates "new england journal of medicine"; "jama" its initials."""
    words = [w for w in long if w not in _JOURNAL_STOP]
    if not words or not short:
        return False
    if len(short) == 1 and len(short[0]) >= 2 and len(words) > 1 and short[0] == "".join(w[0] for w in words):
        return True
    if len(short) != len(words):
        return False
    return all(w.startswith(s) for s, w in zip(short, words))


def _journal_words(name: str) -> list[str]:
    name = re.sub(r"\([^)]*\)", " ", name or "").replace("&", " and ")
    return [w for w in normalise_text(name).split() if w != "the"]


def journal_matches(cited: str, record: Record) -> bool:
    """The cited journal is the record's, full title or abbreviation ("N Engl J Med", "NEJM", "JAMA")."""
    c = _journal_words(cited)
    for name in (record.journal, record.journal_abbrev):
        n = _journal_words(name)
        if n and (c == n or _abbreviates(c, n) or _abbreviates(n, c)):
            return True
    return False


def _year_similarity(cited: int, found: int) -> float:
    return {0: 1.0, 1: 0.75}.get(abs(cited - found), 0.0)


def compare(ref: Reference, record: Record) -> tuple[FieldComparison, ...]:
    """The fields the reference wrote and the record holds, side by side."""
    out = []
    if ref.title and record.title:
        out.append(FieldComparison("title", ref.title, record.title,
                                   title_similarity(ref.title, record.title) >= TITLE_AGREES))
    cited = cited_authors(ref)
    if cited and record.authors:
        found = authors_found(cited, record.authors)
        shown = ", ".join(record.authors[:6]) + (" et al." if len(record.authors) > 6 else "")
        out.append(FieldComparison("authors", ", ".join(cited), shown,
                                   found[0] and sum(found) * 2 >= len(found)))
    if ref.year and record.year:
        out.append(FieldComparison("year", str(ref.year), str(record.year), abs(ref.year - record.year) <= 1))
    if ref.journal and (record.journal or record.journal_abbrev):
        shown = record.journal + (f" ({record.journal_abbrev})" if record.journal_abbrev
                                  and record.journal_abbrev != record.journal else "")
        out.append(FieldComparison("journal", ref.journal, shown or record.journal_abbrev,
                                   journal_matches(ref.journal, record)))
    if ref.pmid and record.pmid and ref.pmid != record.pmid:
        out.append(FieldComparison("pmid", ref.pmid, record.pmid, False))
    return tuple(out)


def match_score(ref: Reference, record: Record) -> float:
    """0..1: how well the record fits what the reference wrote (weighted over the fields it wrote)."""
    parts: dict[str, float] = {}
    if ref.title:
        parts["title"] = title_similarity(ref.title, record.title) if record.title else 0.0
    cited = cited_authors(ref)
    if cited:
        found = authors_found(cited, record.authors)
        parts["authors"] = sum(found) / len(found)
    if ref.year:
        parts["year"] = _year_similarity(ref.year, record.year) if record.year else 0.0
    if ref.journal:
        parts["journal"] = 1.0 if journal_matches(ref.journal, record) else 0.0
    if not parts:   # nothing was read from the string: how much of the record's title it contains
        raw = set(normalise_text(ref.raw).split())
        words = normalise_text(record.title).split()
        return round(sum(w in raw for w in words) / len(words), 3) if words and raw else 0.0
    total = sum(WEIGHTS[k] for k in parts)
    return round(sum(WEIGHTS[k] * v for k, v in parts.items()) / total, 3)


# --- sentences ----------------------------------------------------------------------------------------

def _cut(text: str, limit: int = 140) -> str:
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def describe_record(record: Record, *, with_doi: bool = False) -> str:
    bits = [record.authors[0] if record.authors else "", str(record.year or ""),
            record.journal_abbrev or record.journal]
    if with_doi and record.doi:
        bits.append(record.doi)
    inner = ", ".join(b for b in bits if b)
    return f"'{_cut(record.title)}'" + (f" ({inner})" if inner else "")


def describe_reference(ref: Reference) -> str:
    authors = cited_authors(ref)
    inner = ", ".join(b for b in (authors[0] if authors else "", str(ref.year or ""), ref.journal) if b)
    if ref.title:
        return f"'{_cut(ref.title)}'" + (f" ({inner})" if inner else "")
    return f"({inner})" if inner else f"'{_cut(ref.raw)}'"


def _names(services: list[str]) -> str:
    names = [SERVICE_NAMES.get(s, s) for s in services]
    return names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]


def _failures(failures: list[LookupFailed]) -> str:
    return "; ".join(f"{SERVICE_NAMES.get(f.service, f.service)}: {f.reason}" for f in failures)


def notice_clause(notices: tuple[Notice, ...], retraction_date: str = "") -> str:
    """"; retraction recorded by Crossref (10.1016/…, 2020-06-05) and Retraction Watch (2020-06-05)"."""
    if not notices:
        return ""
    parts = []
    for kind in (NoticeKind.RETRACTION, NoticeKind.WITHDRAWAL, NoticeKind.EXPRESSION_OF_CONCERN,
                 NoticeKind.CORRECTION):
        of_kind = [n for n in notices if n.kind is kind]
        if not of_kind:
            continue
        sources = []
        for n in of_kind:
            data_of = f"data of {retraction_date}" if n.source == "retraction_watch" and retraction_date else ""
            extra = ", ".join(x for x in (n.notice_doi, n.date, data_of) if x)
            sources.append(SERVICE_NAMES.get(n.source, n.source) + (f" ({extra})" if extra else ""))
        parts.append(f"{_NOTICE_WORDS[kind]} recorded by {_names(sources)}")
    return "; " + "; ".join(parts)


def merge_notices(*groups: tuple[Notice, ...]) -> tuple[Notice, ...]:
    seen: dict[tuple[str, str, str, str], Notice] = {}
    for group in groups:
        for n in group:
            seen.setdefault((n.kind.value, n.source, n.notice_doi, n.date), n)
    return tuple(seen.values())


# --- the resolver -------------------------------------------------------------------------------------

class ReferenceResolver:
    """Checks references against the metadata services and the Retraction Watch data."""

    def __init__(self, settings: LookupSettings, *, cache: LookupCache | None = None,
                 retractions: RetractionIndex | None = None, client: MetadataClient | None = None):
        self.settings = settings
        self.client = client if client is not None else MetadataClient(settings, cache)
        self.retractions = retractions

    async def aclose(self) -> None:
        await self.client.aclose()

    async def __aenter__(self) -> "ReferenceResolver":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def check(self, ref: Reference) -> ReferenceCheck:
        """The outcome for one reference; never raises for a service that cannot be asked."""
        if ref.doi:
            doi = ref.doi.strip().lower()
            return await self._by_identifier(ref, f"DOI {doi}", [
                ("crossref", lambda: self.client.crossref_work(doi)),
                ("openalex", lambda: self.client.openalex_work(doi))])
        if ref.pmid:
            pmid = ref.pmid.strip()
            return await self._by_identifier(ref, f"PMID {pmid}", [
                ("pubmed", lambda: self.client.pubmed_summary(pmid)),
                ("openalex", lambda: self.client.openalex_work(pmid=pmid))])
        return await self._by_text(ref)

    async def _by_identifier(self, ref: Reference, label: str,
                             asks: list[tuple[str, Callable[[], Awaitable[Record | None]]]]) -> ReferenceCheck:
        asked: list[str] = []
        answered: list[str] = []
        failures: list[LookupFailed] = []
        for service, ask in asks:
            asked.append(service)
            try:
                record = await ask()
            except LookupFailed as exc:
                failures.append(exc)
                continue
            answered.append(service)
            if record is not None:
                return self._judged(ref, record, asked, label=label)
        if not answered:
            return self._failed(ref, asked, failures)
        also = f" ({_failures(failures)})" if failures else ""
        evidence = f"{_names(answered)} {'has' if len(answered) == 1 else 'have'} no record of {label}{also}"
        if ref.title:   # an invented identifier on a real paper: say which paper the words name
            named = await self._by_text(dataclasses.replace(ref, doi="", pmid=""))
            asked += [s for s in named.services if s not in asked]
            if named.status is ReferenceStatus.VERIFIED and named.matched is not None and named.score is not None:
                return ReferenceCheck(
                    reference=ref, status=ReferenceStatus.NOT_FOUND, candidates=(named.matched,),
                    score=named.score, services=tuple(asked), checked_at=utcnow(),
                    evidence=f"{evidence}, so the identifier is likely fabricated, though the paper the reference "
                             f"names exists as {describe_record(named.matched, with_doi=True)} "
                             f"(score {named.score:.2f}).")
        return ReferenceCheck(reference=ref, status=ReferenceStatus.NOT_FOUND, services=tuple(asked),
                              checked_at=utcnow(), evidence=f"{evidence}: likely fabricated.")

    async def _by_text(self, ref: Reference) -> ReferenceCheck:
        threshold = self.settings.match_threshold
        asked: list[str] = []
        answered: list[str] = []
        failures: list[LookupFailed] = []
        pool: list[tuple[Record, float]] = []
        searches = [("crossref", self.client.crossref_search), ("pubmed", self.client.pubmed_search),
                    ("openalex", self.client.openalex_search)]
        for service, search in searches:
            asked.append(service)
            try:
                records = await search(ref)
            except LookupFailed as exc:
                failures.append(exc)
                continue
            answered.append(service)
            scored = sorted(((r, match_score(ref, r)) for r in _distinct(records)), key=lambda rs: -rs[1])
            pool.extend(scored)
            fitting = [rs for rs in scored if rs[1] >= threshold]
            if not fitting:
                continue
            best_score = fitting[0][1]
            tied = [rs for rs in fitting if best_score - rs[1] <= AMBIGUITY_MARGIN]
            if len(tied) >= 2:
                shown = " and ".join(describe_record(r, with_doi=True) for r, _ in tied[:3])
                return ReferenceCheck(
                    reference=ref, status=ReferenceStatus.AMBIGUOUS, candidates=tuple(r for r, _ in tied),
                    score=best_score, services=tuple(asked), checked_at=utcnow(),
                    evidence=f"{len(tied)} {SERVICE_NAMES[service]} records fit the reference "
                             f"{describe_reference(ref)} about equally well (score {best_score:.2f}): {shown}.")
            return self._judged(ref, fitting[0][0], asked, score=best_score)
        if not answered:
            return self._failed(ref, asked, failures)
        pool.sort(key=lambda rs: -rs[1])
        weak = _distinct_scored(pool)[:3]
        closest = (f"the closest is {describe_record(weak[0][0], with_doi=True)} with score {weak[0][1]:.2f}"
                   if weak else "no service offered any candidate")
        also = f" ({_failures(failures)} could not be asked)" if failures else ""
        return ReferenceCheck(
            reference=ref, status=ReferenceStatus.NOT_FOUND, candidates=tuple(r for r, _ in weak),
            score=weak[0][1] if weak else None, services=tuple(asked), checked_at=utcnow(),
            evidence=f"No record in {_names(answered)}{also} matches {describe_reference(ref)} above the match "
                     f"threshold {threshold:.2f}, so it is likely fabricated; {closest}.")

    def _judged(self, ref: Reference, record: Record, asked: list[str], *, label: str = "",
                score: float | None = None) -> ReferenceCheck:
        """Verified or mismatch, once a record is in hand (by identifier, or the one free-text match)."""
        record = self._with_notices(record)
        comparisons = compare(ref, record)
        if score is None and comparisons:
            score = match_score(ref, record)
        service = SERVICE_NAMES.get(record.service, record.service)
        disagree = [c.field for c in comparisons if not c.agrees]
        notes = notice_clause(record.notices, self.retractions.date if self.retractions else "")
        if label:
            if not comparisons:
                evidence = f"{service} has a record of {label}: {describe_record(record)}{notes}."
            elif not disagree:
                evidence = f"{service} has {label} as {describe_record(record)}, as the reference names it{notes}."
            else:
                evidence = (f"{service} has {label} as {describe_record(record)}; the reference names "
                            f"{describe_reference(ref)} (differs in {', '.join(disagree)}){notes}.")
        elif not disagree:
            evidence = (f"{service} has {describe_record(record, with_doi=True)}, which matches the reference "
                        f"(score {score:.2f}){notes}.")
        else:
            evidence = (f"The closest {service} record, {describe_record(record, with_doi=True)}, matches the "
                        f"reference {describe_reference(ref)} (score {score:.2f}) but differs in "
                        f"{', '.join(disagree)}{notes}.")
        status = ReferenceStatus.MISMATCH if disagree else ReferenceStatus.VERIFIED
        return ReferenceCheck(reference=ref, status=status, evidence=evidence, matched=record,
                              comparisons=comparisons, score=score, services=tuple(asked), checked_at=utcnow())

    def _with_notices(self, record: Record) -> Record:
        extra = self.retractions.notices_for(doi=record.doi, pmid=record.pmid) if self.retractions else ()
        merged = merge_notices(record.notices, extra)
        return dataclasses.replace(record, notices=merged) if merged != record.notices else record

    @staticmethod
    def _failed(ref: Reference, asked: list[str], failures: list[LookupFailed]) -> ReferenceCheck:
        return ReferenceCheck(
            reference=ref, status=ReferenceStatus.LOOKUP_FAILED, services=tuple(asked), checked_at=utcnow(),
            evidence=f"{_names(asked)} could not be asked ({_failures(failures)}), so the reference is unchecked, "
                     f"not counted as not found.")


def _key(record: Record) -> str:
    return record.doi or f"{normalise_text(record.title)}|{record.year}"


def _distinct(records: tuple[Record, ...]) -> list[Record]:
    seen: dict[str, Record] = {}
    for r in records:
        seen.setdefault(_key(r), r)
    return list(seen.values())


def _distinct_scored(pool: list[tuple[Record, float]]) -> list[tuple[Record, float]]:
    seen: dict[str, tuple[Record, float]] = {}
    for rs in pool:
        seen.setdefault(_key(rs[0]), rs)
    return list(seen.values())
