"""Records that cross module boundaries: responses, statements, sources, verdicts.

Every outcome is an explicit enum; nothing downstream compares magic strings.
"""
from __future__ import annotations

import datetime as _dt
import hashlib
import secrets
from dataclasses import dataclass, field
from enum import Enum
from typing import Any, Mapping


def utcnow() -> str:
    """ISO-8601 UTC timestamp with seconds precision, the form stored everywhere."""
    return _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()


def new_run_id() -> str:
    """A run's id: the day it was made and six random hex digits (20261129-3fa2c1)."""
    return f"{utcnow()[:10].replace('-', '')}-{secrets.token_hex(3)}"


def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class StatementCategory(str, Enum):
    """ASTRID sentence classes; only INFORMATIVE statements are verified and counted."""

    INFORMATIVE = "informative"
    ACKNOWLEDGEMENT = "acknowledgement"
    QUESTION = "question"
    DISCLAIMER = "disclaimer"
    REFUSAL = "refusal"


class FetchStatus(str, Enum):
    """What happened when a cited URL was retrieved. Exactly one per source."""

    OK = "ok"                              # full text read
    ABSTRACT_ONLY = "abstract_only"        # only an abstract / landing page
    PAYWALLED = "paywalled"                # teaser, subscribe wall, login wall
    DEAD = "dead"                          # 404, 410, DNS failure, soft 404
    BLOCKED = "blocked"                    # 403, captcha, bot wall
    HTTP_ERROR = "http_error"              # other 4xx / 5xx, a reset or malformed connection, TLS errors
    UNREACHABLE = "unreachable"            # the host could not be reached: connection refused, no route
    TIMEOUT = "timeout"
    TOO_LARGE = "too_large"
    UNSUPPORTED_TYPE = "unsupported_type"
    UNSAFE_URL = "unsafe_url"              # non-web scheme or private address
    ERROR = "error"                        # unexpected failure while reading

    @property
    def readable(self) -> bool:
        """Text we can show a judge (possibly partial: an abstract or a teaser)."""
        return self in (FetchStatus.OK, FetchStatus.ABSTRACT_ONLY, FetchStatus.PAYWALLED)

    @property
    def plain(self) -> str:
        return _PLAIN_OUTCOME[self]


_PLAIN_OUTCOME = {
    FetchStatus.OK: "full text",
    FetchStatus.ABSTRACT_ONLY: "abstract only",
    FetchStatus.PAYWALLED: "paywalled (teaser only)",
    FetchStatus.DEAD: "dead link",
    FetchStatus.BLOCKED: "blocked by the site",
    FetchStatus.HTTP_ERROR: "server error",
    FetchStatus.UNREACHABLE: "host unreachable",
    FetchStatus.TIMEOUT: "timed out",
    FetchStatus.TOO_LARGE: "too large",
    FetchStatus.UNSUPPORTED_TYPE: "unsupported file type",
    FetchStatus.UNSAFE_URL: "refused (unsafe address)",
    FetchStatus.ERROR: "could not be read",
}


class Label(str, Enum):
    SUPPORTED = "supported"
    NOT_SUPPORTED = "not_supported"
    JUDGE_ERROR = "judge_error"   # the judge could not decide: never counted as not supported
    # a pair's consensus only, never one judge's verdict: under --consensus majority the judges split with no
    # majority (one supported, one not supported); undecided, never counted as not supported nor as a judge error
    JUDGES_DISAGREE = "judges_disagree"


class StatementStatus(str, Enum):
    """The support status of one statement after all its pairs are judged."""

    SUPPORTED = "supported"
    NOT_SUPPORTED = "not_supported"
    NO_READABLE_SOURCE = "no_readable_source"   # unsupported: no cited source could be read
    JUDGE_ERROR = "judge_error"                  # undecided: judge errors and no support
    JUDGES_DISAGREE = "judges_disagree"          # undecided: the judges split with no majority, and no support
    NOT_A_CLAIM = "not_a_claim"                  # acknowledgement, question, disclaimer, refusal
    PENDING = "pending"                          # not judged yet

    @property
    def supported(self) -> bool | None:
        """True/False for decided informative statements, None when not counted."""
        if self is StatementStatus.SUPPORTED:
            return True
        if self in (StatementStatus.NOT_SUPPORTED, StatementStatus.NO_READABLE_SOURCE):
            return False
        return None


@dataclass(frozen=True)
class ExpertReference:
    """What an expert wrote for an answer's question: a free-text reference answer and the statements a good
    answer must have and may have (OLAPH's MedLFQA must-have / nice-to-have statements)."""

    reference_answer: str = ""
    must_have: tuple[str, ...] = ()
    nice_to_have: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.reference_answer.strip() or self.must_have or self.nice_to_have)


@dataclass(frozen=True)
class Response:
    """One LLM answer to audit, as read from the input."""

    id: str                                   # the record's own id, or one we assign
    text: str                                 # the answer text, inline markers kept
    citations: tuple[str, ...] = ()           # normalised URLs, in order, de-duplicated
    question: str | None = None
    model: str | None = None
    origin: str = ""                          # "answers.jsonl:12" — where it came from
    # marker label as written in the text ("1", "^note") -> index into citations
    markers: Mapping[str, int] = field(default_factory=dict)
    extra: Mapping[str, Any] = field(default_factory=dict)   # grouping columns etc.
    # citation index -> the reference string as written ("Smith J et al. JAMA 2019;321:456"),
    # for citations that came from a written reference rather than a bare URL / DOI / PMID
    references: Mapping[int, str] = field(default_factory=dict)
    expert: ExpertReference | None = None     # the question's reference answer and expert statements


@dataclass(frozen=True)
class SkippedRecord:
    """An input record we could not read; the batch goes on without it."""

    origin: str      # "answers.jsonl:7" or "rows.csv row 12"
    problem: str     # "invalid JSON: Expecting ',' delimiter at column 31"


@dataclass(frozen=True)
class Statement:
    index: int                                 # position within the response
    text: str                                  # markers and URLs stripped
    category: StatementCategory = StatementCategory.INFORMATIVE
    cited: tuple[int, ...] = ()                # indices into Response.citations named by markers
    start: int = -1                            # character span in Response.text, -1 if unknown
    end: int = -1

    @property
    def informative(self) -> bool:
        return self.category is StatementCategory.INFORMATIVE


@dataclass(frozen=True)
class Source:
    """The outcome of retrieving one cited URL, with the text a judge will read."""

    url: str                                   # the URL as cited (normalised)
    status: FetchStatus
    reason: str = ""                           # why this outcome ("HTTP 404", "title matched ...")
    http_status: int | None = None
    final_url: str | None = None
    content_type: str | None = None
    title: str | None = None
    text: str = ""
    sha256: str | None = None                  # of the raw bytes as read
    fetched_at: str = ""
    elapsed_s: float = 0.0
    origin: str = "http"                       # http | browser | local_file | archive
    flags: tuple[str, ...] = ()                # possible_injection, truncated, changed, ...
    meta: Mapping[str, Any] = field(default_factory=dict)   # author, date, headers, archive info
    raw: bytes | None = field(default=None, repr=False, compare=False)

    @property
    def valid(self) -> bool:
        """The paper's valid source: readable with non-empty text."""
        return self.status.readable and bool(self.text.strip())

    @property
    def domain(self) -> str:
        """The cited URL's domain (not the final URL's, nor a local file's)."""
        from .urls import domain_of

        return domain_of(self.url)


# Verdict flags that qualify a label without changing it (the paper's metrics keep the binary label).
CONTRADICTED = "contradicted"       # the source states something different; the label is not_supported
REVIEW_FIRST = "review_first"       # the (screening) judge is unsure: a person should look at it first
CONTRADICTED_PREFIX = "contradicted: "
READING_WORDS = {CONTRADICTED: "contradicted", REVIEW_FIRST: "review first"}
# which step of the judge's procedure decided the label ("decided_by:quantity"); a flag, so stored as flags are
DECIDED_BY = "decided_by:"


def decided_by(flags: "tuple[str, ...] | list[str]") -> str:
    """The step that decided a verdict, as its judge recorded it ("" when it did not)."""
    return next((f[len(DECIDED_BY):] for f in flags if f.startswith(DECIDED_BY)), "")


def verdict_readings(flags: "tuple[str, ...] | list[str]") -> tuple[str, ...]:
    """The plain words for the qualifying flags a verdict carries: ("contradicted", "review first")."""
    return tuple(word for flag, word in READING_WORDS.items() if flag in flags)


def contradicted_rationale(rationale: str) -> str:
    """The rationale of a contradicted verdict, starting "contradicted: " (said once)."""
    text = rationale.strip()
    if text.lower().startswith(CONTRADICTED_PREFIX.strip()):
        text = text[len(CONTRADICTED_PREFIX.strip()):].lstrip(" :")
    return CONTRADICTED_PREFIX + (text or "the source states something different")


@dataclass(frozen=True)
class Verdict:
    """A judge's decision on one statement x source pair."""

    label: Label
    score: float = 0.0                         # confidence that the source supports, in [0, 1]
    rationale: str = ""
    quote: str = ""
    quote_found: bool | None = None            # None when there is no quote to check
    judge_id: str = ""
    prompt_version: str = ""
    model_version: str = ""
    raw: str | None = None                     # the judge's raw reply, kept for errors
    tokens_in: int | None = None
    tokens_out: int | None = None
    flags: tuple[str, ...] = ()

    @property
    def contradicted(self) -> bool:
        return CONTRADICTED in self.flags and self.label is Label.NOT_SUPPORTED

    @property
    def review_first(self) -> bool:
        return REVIEW_FIRST in self.flags

    @classmethod
    def error(cls, judge_id: str, message: str, raw: str | None = None, **kw: Any) -> "Verdict":
        return cls(label=Label.JUDGE_ERROR, score=0.0, rationale=message, judge_id=judge_id, raw=raw, **kw)
