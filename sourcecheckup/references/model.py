"""Records of the reference check: what an answer cites, what the metadata services hold, and the outcome.

A *reference* is what the answer wrote (a free-text string, a DOI or a PMID); a *record* is what a
scholarly metadata service (Crossref, PubMed, OpenAlex) holds; a :class:`ReferenceCheck` is the
outcome of comparing the two, with the evidence a librarian needs to agree or disagree.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from enum import Enum
from typing import Any, Mapping


class ReferenceStatus(str, Enum):
    VERIFIED = "verified"            # the identifier exists and its metadata agree with what was cited
    MISMATCH = "mismatch"            # the identifier exists but names another title, authors, journal or year
    NOT_FOUND = "not_found"          # no record for the identifier, or no candidate above the threshold
    AMBIGUOUS = "ambiguous"          # several candidates fit equally well
    LOOKUP_FAILED = "lookup_failed"  # a service could not be asked: never counted as not found

    @property
    def plain(self) -> str:
        return _PLAIN[self]


_PLAIN = {
    ReferenceStatus.VERIFIED: "verified",
    ReferenceStatus.MISMATCH: "mismatch: the identifier names another paper",
    ReferenceStatus.NOT_FOUND: "not found: likely fabricated",
    ReferenceStatus.AMBIGUOUS: "ambiguous: several candidates",
    ReferenceStatus.LOOKUP_FAILED: "lookup failed (service unreachable)",
}


class NoticeKind(str, Enum):
    RETRACTION = "retraction"
    WITHDRAWAL = "withdrawal"
    EXPRESSION_OF_CONCERN = "expression_of_concern"
    CORRECTION = "correction"

    @property
    def serious(self) -> bool:
        """Retractions and withdrawals make a paper unusable as support."""
        return self in (NoticeKind.RETRACTION, NoticeKind.WITHDRAWAL)


@dataclass(frozen=True)
class Reference:
    """A reference as the answer wrote it, and the fields read from it (empty when absent)."""

    raw: str                                  # the string as written, never altered
    authors: tuple[str, ...] = ()             # family names as written ("Smith", "van der Berg")
    year: int | None = None
    title: str = ""
    journal: str = ""
    volume: str = ""
    issue: str = ""
    pages: str = ""
    doi: str = ""                             # lower-case, no "https://doi.org/" prefix
    pmid: str = ""
    style: str = ""                           # "vancouver", "apa", "ama", "loose", "doi", "pmid", "url"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["authors"] = list(self.authors)
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Reference":
        kw = {k: d[k] for k in cls.__dataclass_fields__ if k in d}
        kw["authors"] = tuple(kw.get("authors") or ())
        return cls(**kw)


@dataclass(frozen=True)
class Notice:
    """A retraction, withdrawal, expression of concern or correction that updates a paper."""

    kind: NoticeKind
    source: str                               # "crossref", "retraction_watch", "pubmed"
    date: str = ""                            # ISO date when known
    notice_doi: str = ""                      # the DOI of the notice itself, when known
    detail: str = ""                          # e.g. the Retraction Watch reason

    def to_dict(self) -> dict[str, Any]:
        return {"kind": self.kind.value, "source": self.source, "date": self.date,
                "notice_doi": self.notice_doi, "detail": self.detail}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Notice":
        return cls(kind=NoticeKind(d["kind"]), source=d.get("source", ""), date=d.get("date", ""),
                   notice_doi=d.get("notice_doi", ""), detail=d.get("detail", ""))


@dataclass(frozen=True)
class Record:
    """A paper as a metadata service holds it."""

    service: str                              # "crossref", "pubmed", "openalex"
    title: str = ""
    authors: tuple[str, ...] = ()             # family names
    year: int | None = None
    journal: str = ""
    volume: str = ""
    pages: str = ""
    doi: str = ""
    pmid: str = ""
    url: str = ""                             # where a person can see the record
    notices: tuple[Notice, ...] = ()
    journal_abbrev: str = ""                  # the short title ("N Engl J Med") when the service gives one

    def to_dict(self) -> dict[str, Any]:
        return {"service": self.service, "title": self.title, "authors": list(self.authors),
                "year": self.year, "journal": self.journal, "volume": self.volume, "pages": self.pages,
                "doi": self.doi, "pmid": self.pmid, "url": self.url,
                "notices": [n.to_dict() for n in self.notices], "journal_abbrev": self.journal_abbrev}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "Record":
        return cls(service=d.get("service", ""), title=d.get("title", ""),
                   authors=tuple(d.get("authors") or ()), year=d.get("year"), journal=d.get("journal", ""),
                   volume=d.get("volume", ""), pages=d.get("pages", ""), doi=d.get("doi", ""),
                   pmid=d.get("pmid", ""), url=d.get("url", ""),
                   notices=tuple(Notice.from_dict(n) for n in d.get("notices") or ()),
                   journal_abbrev=d.get("journal_abbrev", ""))


@dataclass(frozen=True)
class FieldComparison:
    """One field of the cited reference against the record: shown side by side."""

    field: str                                # "title", "authors", "year", "journal"
    cited: str
    found: str
    agrees: bool

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "cited": self.cited, "found": self.found, "agrees": self.agrees}


@dataclass(frozen=True)
class ReferenceCheck:
    """The outcome for one reference, with its evidence."""

    reference: Reference
    status: ReferenceStatus
    evidence: str                             # one plain sentence: why this outcome
    matched: Record | None = None             # the record the reference was matched to
    comparisons: tuple[FieldComparison, ...] = ()
    candidates: tuple[Record, ...] = ()       # for ambiguous / weak matches: what was offered
    score: float | None = None                # match score of the best candidate, 0..1
    services: tuple[str, ...] = ()            # the services asked, in order
    checked_at: str = ""

    @property
    def notices(self) -> tuple[Notice, ...]:
        return self.matched.notices if self.matched else ()

    @property
    def retracted(self) -> bool:
        """Retracted or withdrawn (an expression of concern or a correction is shown, not this)."""
        return any(n.kind.serious for n in self.notices)

    def to_dict(self) -> dict[str, Any]:
        return {"reference": self.reference.to_dict(), "status": self.status.value, "evidence": self.evidence,
                "matched": self.matched.to_dict() if self.matched else None,
                "comparisons": [c.to_dict() for c in self.comparisons],
                "candidates": [c.to_dict() for c in self.candidates], "score": self.score,
                "services": list(self.services), "checked_at": self.checked_at,
                "retracted": self.retracted}

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "ReferenceCheck":
        return cls(reference=Reference.from_dict(d["reference"]), status=ReferenceStatus(d["status"]),
                   evidence=d.get("evidence", ""),
                   matched=Record.from_dict(d["matched"]) if d.get("matched") else None,
                   comparisons=tuple(FieldComparison(**c) for c in d.get("comparisons") or ()),
                   candidates=tuple(Record.from_dict(c) for c in d.get("candidates") or ()),
                   score=d.get("score"), services=tuple(d.get("services") or ()),
                   checked_at=d.get("checked_at", ""))


@dataclass(frozen=True)
class LookupSettings:
    """Where and how the metadata services are asked. Every endpoint is the API's base URL."""

    crossref_endpoint: str = "https://api.crossref.org"
    pubmed_endpoint: str = "https://eutils.ncbi.nlm.nih.gov/entrez/eutils"
    openalex_endpoint: str = "https://api.openalex.org"
    contact_email: str = ""                   # the polite identity (Crossref mailto, NCBI email)
    timeout_s: float = 10.0
    match_threshold: float = 0.75             # below it a free-text candidate does not count
    requests_per_second: float = 5.0          # per service; a Retry-After or 429 slows further
    enabled: bool = True

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, Any] | None) -> "LookupSettings":
        d = d or {}
        return cls(**{k: d[k] for k in cls.__dataclass_fields__ if k in d})


REFERENCE_KEY_PREFIX = "ref:"


def reference_key(raw: str) -> str:
    """The citation key of a written reference with no URL, DOI or PMID: ``ref:`` + the text, spaces folded.

    It stands where a URL stands (``Response.citations``, ``run_sources.url``, ``verdicts.url``)."""
    return REFERENCE_KEY_PREFIX + " ".join(raw.split())


def is_reference_key(url: str) -> bool:
    return url.startswith(REFERENCE_KEY_PREFIX)
