"""One answer's citation list: URLs in order, de-duplicated, and the marker labels that point into it.

A written reference ("Smith J et al. Lancet. 2020;395:1054") is a citation too: its DOI link or PubMed
link when it names one, else the key ``ref:<text>``; the string as written is kept by citation index
(``Response.references``) so its title, authors and year can be checked against the paper's record.
"""
from __future__ import annotations

import json
import re
from typing import Any, Mapping
from urllib.parse import urlsplit

from ..references.model import Reference, is_reference_key, reference_key
from ..references.parse import parse_reference
from ..urls import DOI_HOSTS, dedupe, find_urls, normalise_url
from .records import IngestError, kind_of, parse_json

_URL_KEYS = ("url", "href", "link", "uri")
_CITATION_SEPARATOR = re.compile(r"\s*;\s*|\n+|,\s+|,(?=(?:https?://|www\.|doi:|10\.\d))", re.I)
# a data: URL runs to the end of its line, or to a separator before the next web link
_DATA_URL = re.compile(r"\bdata:.*?(?=[,;]?\s*(?:https?://|www\.|doi:)|$)", re.I)
MD_INLINE_DEST = re.compile(
    r"\[(?:[^\[\]\n]|\[[^\[\]\n]*\])*\]\(\s*(?P<dest><[^<>\n]*>|[^\s()]*(?:\([^\s()]*\)[^\s()]*)*)"
    r"(?:\s+(?:\"[^\"\n]*\"|'[^'\n]*'|\([^()\n]*\)))?\s*\)"
)

class Citations:
    """The growing citation list of one answer and the labels that point into it."""

    def __init__(self) -> None:
        self.urls: list[str] = []
        self._index: dict[str, int] = {}
        self.labels: dict[str, int] = {}         # marker label as written -> index
        self.refs: dict[str, int] = {}           # reference-link label (case-folded) -> index
        self.defined_without_url: set[str] = set()
        self.reserved: set[str] = set()          # labels already written in the text
        self.unusable: list[str] = []
        self.references: dict[int, str] = {}     # citation index -> the reference string as written
        self._by_work: dict[tuple[str, int], int] = {}   # (first author, year) -> the first such citation

    def add(self, url: str) -> int:
        if url not in self._index:
            self._index[url] = len(self.urls)
            self.urls.append(url)
        return self._index[url]

    def define(self, label: str | None, urls: list[str], written: str) -> None:
        indices = [self.add(u) for u in urls]
        ref = written_reference(written)
        if not indices and ref is not None:
            indices = [self.add(reference_key(ref.raw))]
        if ref is not None and indices and (work := work_key(ref)) is not None:
            self._by_work.setdefault(work, indices[0])
        if ref is not None and (ref.title or ref.authors or ref.journal):
            checked = [i for i in indices if _names_a_paper(self.urls[i])]
            if not checked and indices and ref.journal and ref.authors:
                checked = indices[:1]  # a journal article cited with its publisher's link
            for i in checked:
                self.references.setdefault(i, ref.raw)
        if not indices:
            self.unusable.append(written.strip())
        if label is None:
            return
        if not indices:
            self.defined_without_url.add(label)
            return
        self.labels.setdefault(label, indices[0])
        if not label.startswith("^"):
            self.refs.setdefault(fold(label), indices[0])

    def cited_by_author_year(self, ref: Reference) -> int:
        """The citation an in-text "(Smith et al., 2019)" names: the listed reference with that first
        author and year, else a citation of its own (its key, the string kept for the check)."""
        work = work_key(ref)
        if work is not None and work in self._by_work:
            return self._by_work[work]
        idx = self.add(reference_key(ref.raw))
        if work is not None:
            self._by_work[work] = idx
        self.references.setdefault(idx, ref.raw)
        return idx

    def _free(self, label: str, idx: int) -> bool:
        current = self.labels.get(label)
        if current is not None:
            return current == idx
        if label in self.defined_without_url:
            return False
        if label in self.reserved:
            # a marker already in the text keeps its study meaning: [n] is citation n-1
            return label.isdigit() and int(label) - 1 == idx
        return True

    def label_for(self, idx: int, preferred: str | None = None) -> str:
        """A marker label for citation ``idx``: the preferred one, else n = idx + 1, else a free one."""
        for candidate in (preferred, str(idx + 1)):
            if candidate and self._free(candidate, idx):
                self.labels[candidate] = idx
                return candidate
        for label, i in self.labels.items():
            if i == idx and label.isdigit():
                return label
        n = len(self.urls) + 1
        while not self._free(str(n), idx):
            n += 1
        self.labels[str(n)] = idx
        return str(n)

    def resolve(self, label: str) -> int | None:
        if label in self.labels:
            return self.labels[label]
        for written, idx in self.labels.items():
            if fold(written) == fold(label):
                return idx
        if label in self.defined_without_url:
            return None
        number = label[1:] if label.startswith("^") else label
        if number.isdigit() and 1 <= int(number) <= len(self.urls):
            return int(number) - 1  # the study's convention: [1] is the first citation
        return None


def written_reference(fragment: str) -> Reference | None:
    """The reference written in one citation entry ("Smith J et al. Lancet. 2020;395:1054"), or None.

    Its ``raw`` is the entry with runs of whitespace folded (a list item may run over several lines)."""
    return parse_reference(" ".join(fragment.split()))


def work_key(ref: Reference) -> tuple[str, int] | None:
    """What an in-text "(Smith et al., 2019)" and a listed reference share when one names the other:
    the first author's family name and the year."""
    return (ref.authors[0].casefold(), ref.year) if ref.authors and ref.year is not None else None


def names_the_same_work(cited: Reference, listed: Reference) -> bool:
    return work_key(cited) is not None and work_key(cited) == work_key(listed)


def cites_something(fragment: str) -> bool:
    """Whether a citation entry names a source: a URL, DOI or PMID, or a written reference."""
    return bool(urls_in_fragment(fragment)) or written_reference(fragment) is not None


def _names_a_paper(citation: str) -> bool:
    """A DOI link, a PubMed link or a written reference's key: the citations whose metadata are checked."""
    if is_reference_key(citation):
        return True
    try:
        host = urlsplit(citation).hostname or ""
    except ValueError:
        return False
    return host in DOI_HOSTS or host == "pubmed.ncbi.nlm.nih.gov"


def fold(label: str) -> str:
    return " ".join(label.split()).casefold()


def urls_in_fragment(fragment: str) -> list[str]:
    """Every URL in one citation entry: Markdown links first, then bare URLs, DOIs, PMIDs."""
    if fragment.strip().lower().startswith("data:"):   # kept whole (see citation_entries): refused as one
        return [fragment.strip()]
    urls: list[str] = []
    for m in MD_INLINE_DEST.finditer(fragment):
        if url := normalise_url(m.group("dest").strip("<>")):
            urls.append(url)
    rest = MD_INLINE_DEST.sub(" ", fragment)
    whole = normalise_url(rest)
    if whole is not None and not urls:
        return [whole]
    urls.extend(u for u, _, _ in find_urls(rest))
    return dedupe(urls)


def citation_entries(value: Any, where: str) -> list[str]:
    """The entries of a citations field: a list, a JSON list in a string, or a separated string."""
    if value is None:
        return []
    if isinstance(value, str):
        stripped = value.strip()
        if stripped.startswith("["):
            try:
                value = parse_json(stripped)
            except json.JSONDecodeError as e:
                raise IngestError(f"{where} look like a JSON list but are not valid JSON "
                                  f"({e.msg} at column {e.colno})") from None
        else:
            # URLs may contain commas: a comma separates only before a space or another URL;
            # a line that is one written reference ("Smith J, Jones K. Title. JAMA. 2019;321:11") stays whole
            entries: list[str] = []
            for line in (ln for ln in stripped.splitlines() if ln.strip()):
                if data := _DATA_URL.search(line):
                    # a data: URL holds its own commas and semicolons: kept whole, so the fetcher refuses
                    # all of it by name instead of reading its pieces as other citations
                    entries.extend(p for p in _CITATION_SEPARATOR.split(line[:data.start()]) if p.strip())
                    entries.append(data.group(0).strip())
                    line = line[data.end():]
                    if not line.strip(" ,;"):
                        continue
                if written_reference(line) is not None:
                    entries.append(line.strip())
                else:
                    entries.extend(p for p in _CITATION_SEPARATOR.split(line) if p.strip())
            return entries
    if isinstance(value, Mapping):
        value = [value]
    if not isinstance(value, list):
        raise IngestError(f"{where} are {kind_of(value)}, expected a list of URLs")
    entries = []
    for n, item in enumerate(value, start=1):
        if item is None:
            continue
        if isinstance(item, str):
            entries.append(item)
        elif isinstance(item, Mapping) and any(isinstance(item.get(k), str) for k in _URL_KEYS):
            entries.append(next(item[k] for k in _URL_KEYS if isinstance(item.get(k), str)))
        else:
            raise IngestError(f"citation {n} in {where} is {kind_of(item)}, expected a URL string")
    return entries
