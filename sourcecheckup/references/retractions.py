"""The Retraction Watch data, in the CSV layout Crossref publishes, as notices per DOI and PMID.

``sourcecheckup references update`` downloads the file (:func:`download`); an offline machine imports
a copy (:meth:`RetractionIndex.from_csv`). The file's date is shown with every notice drawn from it.
"""
from __future__ import annotations

import csv
import datetime as _dt
import io
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from .model import Notice, NoticeKind

DEFAULT_RETRACTION_URL = "https://gitlab.com/crossref/retraction-watch-data/-/raw/main/retraction_watch.csv"
RETRACTIONS_ENV = "SOURCECHECKUP_RETRACTIONS"
REQUIRED_COLUMNS = ("OriginalPaperDOI", "RetractionNature")
# RetractionNature -> the notice it is; "Reinstatement" lifts an earlier notice and is no notice itself
_NATURE = {"retraction": NoticeKind.RETRACTION, "expression of concern": NoticeKind.EXPRESSION_OF_CONCERN,
           "correction": NoticeKind.CORRECTION, "withdrawal": NoticeKind.WITHDRAWAL}
_NO_DOI = {"", "unavailable", "n/a", "na", "none", "0"}


class RetractionDataError(ValueError):
    """The file is not Retraction Watch data in the layout Crossref publishes."""


def default_retraction_path() -> Path:
    """Where ``references update`` keeps the Retraction Watch CSV: the app data folder, beside the database."""
    env = os.environ.get(RETRACTIONS_ENV)
    if env:
        return Path(env)
    import platformdirs

    return Path(platformdirs.user_data_dir("sourcecheckup", appauthor=False)) / "retraction_watch.csv"


def load_retraction_index(path: str | Path | None = None) -> RetractionIndex | None:
    """The index from ``path`` (``--retraction-data``), else from the default file when one was downloaded.

    A named file that cannot be read raises RetractionDataError; no default file means no index (None)."""
    if path:
        return RetractionIndex.from_csv(path)
    default = default_retraction_path()
    return RetractionIndex.from_csv(default) if default.is_file() else None


def normalise_doi(value: str) -> str:
    """Lower case, no resolver prefix; "" for the placeholders the dataset writes for a missing DOI."""
    doi = (value or "").strip().lower()
    for prefix in ("https://doi.org/", "http://doi.org/", "https://dx.doi.org/", "http://dx.doi.org/", "doi:"):
        if doi.startswith(prefix):
            doi = doi[len(prefix):].strip()
    return "" if doi in _NO_DOI else doi


def _pmid(value: str) -> str:
    v = (value or "").strip()
    return v if v.isdigit() and int(v) > 0 else ""


def _iso_date(value: str) -> str:
    """"6/5/2020 0:00" (the dataset's form) -> "2020-06-05"; other forms are kept as written."""
    v = (value or "").strip()
    for fmt in ("%m/%d/%Y %H:%M", "%m/%d/%Y", "%Y-%m-%d", "%Y-%m-%dT%H:%M:%S"):
        try:
            return _dt.datetime.strptime(v, fmt).date().isoformat()
        except ValueError:
            continue
    return v


def _reason(value: str) -> str:
    """"+Concerns/Issues About Data;+Error in Methods;" -> "Concerns/Issues About Data; Error in Methods"."""
    return "; ".join(part.strip().lstrip("+").strip() for part in (value or "").split(";") if part.strip())


@dataclass(frozen=True)
class RetractionRow:
    record_id: str
    doi: str
    pmid: str
    kind: NoticeKind
    date: str
    notice_doi: str
    reason: str
    title: str

    def notice(self) -> Notice:
        detail = f"Retraction Watch record {self.record_id}" if self.record_id else "Retraction Watch"
        if self.reason:
            detail += f": {self.reason}"
        return Notice(kind=self.kind, source="retraction_watch", date=self.date, notice_doi=self.notice_doi,
                      detail=detail)


class RetractionIndex:
    """Notices from the Retraction Watch data, looked up by the original paper's DOI or PMID."""

    def __init__(self, rows: Iterable[RetractionRow], *, date: str = "", path: Path | None = None):
        self.rows: tuple[RetractionRow, ...] = tuple(rows)
        self.date = date              # the file's date (download date or modification date), ISO
        self.path = path
        self._by_doi: dict[str, list[RetractionRow]] = {}
        self._by_pmid: dict[str, list[RetractionRow]] = {}
        for row in self.rows:
            if row.doi:
                self._by_doi.setdefault(row.doi, []).append(row)
            if row.pmid:
                self._by_pmid.setdefault(row.pmid, []).append(row)

    def __len__(self) -> int:
        return len(self.rows)

    @classmethod
    def from_csv(cls, path: str | Path) -> "RetractionIndex":
        """Read the CSV; a file that is not the dataset raises RetractionDataError naming the file and column."""
        path = Path(path)
        try:
            raw = path.read_bytes()
        except OSError as exc:
            raise RetractionDataError(f"cannot read the Retraction Watch file {path}: {exc.strerror or exc}") from exc
        try:
            text = raw.decode("utf-8-sig")
        except UnicodeDecodeError:
            text = raw.decode("cp1252", errors="replace")   # older exports were saved from Excel
        return cls(_parse(text, str(path)), date=_file_date(path), path=path)

    def notices_for(self, doi: str | None = None, pmid: str | None = None) -> tuple[Notice, ...]:
        """The notices on the paper with this DOI or PMID, oldest first (notices a reinstatement lifted are gone)."""
        rows: dict[int, RetractionRow] = {}
        for row in self._by_doi.get(normalise_doi(doi or ""), []) if doi else []:
            rows[id(row)] = row
        for row in self._by_pmid.get(_pmid(pmid or ""), []) if pmid else []:
            rows[id(row)] = row
        return tuple(r.notice() for r in sorted(rows.values(), key=lambda r: r.date))


def _parse(text: str, name: str) -> list[RetractionRow]:
    reader = csv.DictReader(io.StringIO(text))
    header = [h.strip() for h in (reader.fieldnames or [])]
    if not header:
        raise RetractionDataError(f"{name} is empty: expected the Retraction Watch CSV with a header row")
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise RetractionDataError(
            f"{name} is not the Retraction Watch CSV: the column {missing[0]!r} is missing "
            f"(it has {', '.join(header[:8])}{', ...' if len(header) > 8 else ''})")
    reader.fieldnames = header
    rows: list[RetractionRow] = []
    reinstated_on: dict[str, str] = {}      # DOI or PMID -> the latest reinstatement date
    for rec in reader:
        nature = (rec.get("RetractionNature") or "").strip().lower()
        doi, pmid = normalise_doi(rec.get("OriginalPaperDOI") or ""), _pmid(rec.get("OriginalPaperPubMedID") or "")
        date = _iso_date(rec.get("RetractionDate") or "")
        if nature == "reinstatement":
            for key in (doi, pmid):
                if key:
                    reinstated_on[key] = max(reinstated_on.get(key, ""), date)
            continue
        kind = _NATURE.get(nature)
        if kind is None or not (doi or pmid):
            continue
        rows.append(RetractionRow(record_id=(rec.get("Record ID") or "").strip(), doi=doi, pmid=pmid, kind=kind,
                                  date=date, notice_doi=normalise_doi(rec.get("RetractionDOI") or ""),
                                  reason=_reason(rec.get("Reason") or ""), title=(rec.get("Title") or "").strip()))
    def lifted(r: RetractionRow) -> bool:   # a reinstatement lifts the notices dated on or before it
        until = max(reinstated_on.get(r.doi, "") if r.doi else "", reinstated_on.get(r.pmid, "") if r.pmid else "")
        return bool(until) and r.date <= until

    return [r for r in rows if not lifted(r)]


def _sidecar(path: Path) -> Path:
    return path.with_name(path.name + ".json")


def data_date(path: str | Path) -> str:
    """The data's date: the one recorded by :func:`download`, else the file's modification date (ISO)."""
    return _file_date(Path(path))


def _file_date(path: Path) -> str:
    """The date recorded by :func:`download`, else the file's modification date."""
    try:
        meta = json.loads(_sidecar(path).read_text(encoding="utf-8"))
        if meta.get("downloaded_at"):
            return str(meta["downloaded_at"])[:10]
    except (OSError, ValueError, AttributeError):
        pass
    try:
        return _dt.datetime.fromtimestamp(path.stat().st_mtime, _dt.timezone.utc).date().isoformat()
    except OSError:
        return ""


def download(url: str = DEFAULT_RETRACTION_URL, dest: str | Path | None = None, *, timeout_s: float = 120.0,
             contact_email: str = "") -> RetractionIndex:
    """Download the Retraction Watch CSV to ``dest`` (default :func:`default_retraction_path`) and read it.

    The old file is replaced only when the new one reads as the dataset, so a failed or garbled
    download never leaves the app without retraction data. Raises RetractionDataError with the reason.
    """
    import httpx

    from .lookup import user_agent

    dest = Path(dest) if dest is not None else default_retraction_path()
    dest.parent.mkdir(parents=True, exist_ok=True)
    part = dest.with_name(dest.name + ".part")
    try:
        with httpx.stream("GET", url, timeout=timeout_s, follow_redirects=True,
                          headers={"User-Agent": user_agent(contact_email)}) as resp:
            if resp.status_code != 200:
                raise RetractionDataError(f"downloading {url} failed: HTTP {resp.status_code}")
            with part.open("wb") as out:
                for chunk in resp.iter_bytes():
                    out.write(chunk)
    except httpx.HTTPError as exc:
        part.unlink(missing_ok=True)
        raise RetractionDataError(f"downloading {url} failed: {type(exc).__name__}: {exc}") from exc
    try:
        RetractionIndex.from_csv(part)
    except RetractionDataError:
        part.unlink(missing_ok=True)
        raise
    part.replace(dest)
    now = _dt.datetime.now(_dt.timezone.utc).replace(microsecond=0).isoformat()
    _sidecar(dest).write_text(json.dumps({"url": url, "downloaded_at": now}), encoding="utf-8")
    return RetractionIndex.from_csv(dest)
