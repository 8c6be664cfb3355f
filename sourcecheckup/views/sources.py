"""A response's sources in plain words: outcome, notes, archive and change dates."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from ..models import FetchStatus, Source
from ..references.model import ReferenceCheck
from ..references.step import unread_reference_outcome
from ..urls import domain_of
from .references import reference_badge, reference_detail
from .results import RunView
from .text import day_of

# ----------------------------------------------------------------------------- sources


@dataclass(frozen=True)
class SourceSummary:
    url: str
    domain: str
    title: str
    status: FetchStatus | None     # None: not fetched yet
    outcome: str                   # plain words: "full text", "dead link", "archived copy"...
    reason: str
    flags: tuple[str, ...]
    source_id: int | None
    used: bool | None              # supports a statement; None while undecided or unreadable

    notes: tuple[str, ...] = ()    # "changed since 2026-01-05", "archived copy of 2019-03-15", "DOI 10.x/y"
    reference: ReferenceCheck | None = None   # the reference check; None for a plain web page

    @property
    def reference_badge(self) -> str:
        """"✓ verified", "⊠ retracted (verified)", "✗ not found"…; "—" for a plain web page."""
        return reference_badge(self.reference)

    @property
    def reference_detail(self) -> str:
        """The reference check's evidence, as the tooltip and the detail pane show it."""
        return reference_detail(self.reference)

    @property
    def flag_text(self) -> str:
        words = {"possible_injection": "possible injection", "changed": "changed since last audit",
                 "truncated": "truncated", "quote_not_found": "quote not found",
                 "archived": "read from an archived copy", "archived_copy_exists": "archived copy exists"}
        return ", ".join(words.get(f, f.replace("_", " ")) for f in self.flags)

    @property
    def note_text(self) -> str:
        return " · ".join(self.notes)


def source_summaries(view: RunView, response_pk: int) -> list[SourceSummary]:
    a = view.assessment(response_pk)
    if a is None:
        return []
    out = []
    for url in a.urls:
        row = view.data.sources.get(url)
        if row is None:
            out.append(SourceSummary(url, domain_of(url), "", None, "not fetched yet", "", (), None, None,
                                     reference=view.references.get(url)))
            continue
        src = row.source
        outcome = src.status.plain
        if src.origin == "archive":
            outcome = f"archived copy ({outcome})"
        elif src.origin == "local_file":
            outcome = f"local file ({outcome})"
        elif src.origin == "reference":
            outcome = unread_reference_outcome(src)
        used = None
        if url in a.valid_urls and url not in a.undecided_urls:
            used = url not in a.unused_urls
        out.append(SourceSummary(url, domain_of(url), src.title or "", src.status, outcome, src.reason,
                                 tuple(src.flags), row.id, used, source_notes(src), view.references.get(url)))
    return out


def source_notes(src: Source) -> tuple[str, ...]:
    """What a reader should know about a source beyond its outcome, in plain words: a page that
    changed since an earlier audit, an archived copy read (or available) instead of a dead page,
    the DOI it was reached through."""
    meta = src.meta if isinstance(src.meta, Mapping) else {}
    notes = []
    if "changed" in src.flags:
        since = day_of(meta.get("changed_since"))
        notes.append(f"changed since {since}" if since else "changed since an earlier audit")
    arch = meta.get("archive")
    arch_date = day_of(arch.get("date") or arch.get("timestamp")) if isinstance(arch, Mapping) else ""
    if src.origin == "archive":
        notes.append(f"archived copy of {arch_date}" if arch_date else "archived copy")
    elif arch_date and isinstance(arch, Mapping) and arch.get("snapshot_url"):
        notes.append(f"archived copy of {arch_date} exists")
    doi = meta.get("doi")
    if isinstance(doi, str) and doi.strip():
        notes.append(f"DOI {doi.strip()}")
    return tuple(notes)
