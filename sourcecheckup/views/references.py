"""Reference checks in plain words for the screens: badges, the evidence, the Retraction Watch file."""
from __future__ import annotations

import csv
import datetime as _dt
from dataclasses import dataclass
from pathlib import Path

from ..references.metrics import is_retracted
from ..references.model import NoticeKind, Record, ReferenceCheck, ReferenceStatus

NO_CHECK = "—"     # a plain web page: no reference check
RETRACTED_MARK = "⊠"
RETRACTED_ONLY_WORDS = "supported only by retracted papers"
# mark and word of each status, shown together (colour only adds)
REFERENCE_MARK: dict[ReferenceStatus, tuple[str, str]] = {
    ReferenceStatus.VERIFIED: ("✓", "verified"),
    ReferenceStatus.MISMATCH: ("≠", "mismatch"),
    ReferenceStatus.NOT_FOUND: ("✗", "not found"),
    ReferenceStatus.AMBIGUOUS: ("?", "ambiguous"),
    ReferenceStatus.LOOKUP_FAILED: ("⚠", "lookup failed"),
}
_NOTICE_WORDS = {NoticeKind.RETRACTION: "retraction", NoticeKind.WITHDRAWAL: "withdrawal",
                 NoticeKind.EXPRESSION_OF_CONCERN: "expression of concern", NoticeKind.CORRECTION: "correction"}


def reference_badge(check: ReferenceCheck | None) -> str:
    """"✓ verified", "≠ mismatch", "✗ not found", "? ambiguous", "⚠ lookup failed", "⊠ retracted (verified)",
    "✓ verified · corrected"; "—" for a citation with no check (a plain web page)."""
    if check is None:
        return NO_CHECK
    mark, word = REFERENCE_MARK[check.status]
    if is_retracted(check):
        kind = "retracted" if any(n.kind is NoticeKind.RETRACTION for n in check.notices) else "withdrawn"
        text = f"{RETRACTED_MARK} {kind} ({word})"
    else:
        text = f"{mark} {word}"
    kinds = {n.kind for n in check.notices}
    if NoticeKind.EXPRESSION_OF_CONCERN in kinds:
        text += " · expression of concern"
    if NoticeKind.CORRECTION in kinds:
        text += " · corrected"
    return text


def header_badge(check: ReferenceCheck | None) -> str:
    """The badge a matrix column header carries: only for a retracted, not-found or mismatched reference."""
    if check is None:
        return ""
    if is_retracted(check):
        return f"{RETRACTED_MARK} retracted"
    if check.status in (ReferenceStatus.NOT_FOUND, ReferenceStatus.MISMATCH):
        return " ".join(REFERENCE_MARK[check.status])
    return ""


def _record_line(record: Record) -> str:
    parts = [record.title or "(no title)", ", ".join(record.authors), str(record.year or ""), record.journal]
    ids = [f"doi {record.doi}" if record.doi else "", f"PMID {record.pmid}" if record.pmid else ""]
    return " · ".join(p for p in parts + ids if p) + (f" [{record.service}]" if record.service else "")


def reference_detail(check: ReferenceCheck | None) -> str:
    """The evidence of a reference check as plain text lines: what was cited, the outcome and why, what was
    found (side by side for a mismatch), the candidates, and every notice with its source and date."""
    if check is None:
        return "Not a scholarly reference (no DOI, PMID or written reference): not checked."
    ref = check.reference
    lines = [f"Reference: {reference_badge(check)}", f"Cited: {ref.raw}"]
    parsed = [f"{k} {v}" for k, v in (("authors", ", ".join(ref.authors)), ("year", ref.year or ""),
                                       ("title", ref.title), ("journal", ref.journal), ("doi", ref.doi),
                                       ("PMID", ref.pmid)) if v]
    if parsed:
        lines.append("Read as: " + "; ".join(parsed))
    lines.append(f"Why: {check.evidence}" if check.evidence else f"Why: {check.status.plain}")
    if check.comparisons:
        lines.append("Cited vs found:")
        for c in check.comparisons:
            lines.append(f"  {'✓' if c.agrees else '✗'} {c.field}: cited “{c.cited}” · found “{c.found}”")
    if check.matched is not None:
        lines.append(f"Found: {_record_line(check.matched)}")
    if check.candidates and check.status is not ReferenceStatus.VERIFIED:
        head = "Best weak candidate" if check.status is ReferenceStatus.NOT_FOUND else "Candidates"
        score = f" (match {check.score:.2f})" if check.score is not None else ""
        shown = check.candidates[:1] if check.status is ReferenceStatus.NOT_FOUND else check.candidates
        lines.append(f"{head}{score}:")
        lines += [f"  {_record_line(c)}" for c in shown]
    for n in check.notices:
        when = f" of {n.date}" if n.date else ""
        doi = f", notice doi {n.notice_doi}" if n.notice_doi else ""
        detail = f": {n.detail}" if n.detail else ""
        lines.append(f"Notice: {_NOTICE_WORDS[n.kind]}{when} from {n.source.replace('_', ' ')}{doi}{detail}")
    if check.status is ReferenceStatus.LOOKUP_FAILED:
        lines.append("The lookup failed: not counted as not found.")
    if check.services:
        lines.append("Asked: " + ", ".join(check.services))
    return "\n".join(lines)


@dataclass(frozen=True)
class RetractionFile:
    """What a Retraction Watch CSV holds, as Settings shows it."""

    path: str
    rows: int
    date: str            # the file's date (when it was downloaded or copied), YYYY-MM-DD
    problem: str = ""    # why it cannot be used ("" when it can)

    @property
    def text(self) -> str:
        if not self.path:
            return "– none: Crossref and PubMed notices only"
        if self.problem:
            return f"⚠ {self.problem}"
        return f"✓ {self.rows:,} rows, file of {self.date}"


def retraction_file_summary(path: str | Path) -> RetractionFile:
    """Rows and date of a Retraction Watch CSV (the layout Crossref publishes: OriginalPaperDOI,
    RetractionNature); a missing file or one without those columns is said so, never raised."""
    p = Path(path).expanduser()
    if not str(path).strip():
        return RetractionFile("", 0, "", "no file chosen: only Crossref and PubMed notices are used")
    if not p.is_file():
        return RetractionFile(str(p), 0, "", f"no file at {p}")
    try:
        with p.open("r", encoding="utf-8-sig", errors="replace", newline="") as fh:
            reader = csv.reader(fh)
            header = [h.strip() for h in next(reader, [])]
            if "OriginalPaperDOI" not in header or "RetractionNature" not in header:
                return RetractionFile(str(p), 0, "", "not a Retraction Watch file (no OriginalPaperDOI and "
                                                     "RetractionNature columns)")
            rows = sum(1 for row in reader if any(cell.strip() for cell in row))
    except OSError as exc:
        return RetractionFile(str(p), 0, "", f"cannot read {p}: {exc.strerror or exc}")
    date = _dt.datetime.fromtimestamp(p.stat().st_mtime, _dt.timezone.utc).date().isoformat()
    return RetractionFile(str(p), rows, date)
