"""Cited URLs: find them in running text and bring them to one canonical form.

A citation may be written as a full URL, ``www.host/path``, a DOI (``doi:10...``, a bare
``10.1056/...`` or a dx.doi.org link) or a PubMed id (``PMID: 12345678``). Each becomes the
https URL a fetcher can read; so do a scheme-relative ``//host/x`` and, in a citation list, an
address without a scheme (``127.0.0.1:8809/x``, ``[::1]/x``, ``localhost:8809/x``). Non-web
schemes (``javascript:``, ``file:``, ``gopher://``, ``ws://``, ``smb://``, ``data:``) are kept as
written, so that the fetcher refuses them visibly instead of the citation vanishing here.
"""
from __future__ import annotations

import re
from typing import Iterable
from urllib.parse import urlsplit, urlunsplit

__all__ = ["normalise_url", "find_urls", "dedupe", "domain_of"]

# characters that end a sentence or close markup around a URL, never its last character
_TRAILING = ".,;:!?'\"*_~`\u2026\u201d\u2019"
_LEADING = "<([{\"'*_`\u201c\u2018"
_CLOSERS = {")": "(", "]": "[", "}": "{", ">": "<"}
_INVISIBLE = dict.fromkeys(map(ord, "\u200b\u200c\u200d\u2060\ufeff"), None)

_PMID = re.compile(r"PMID\s*:?\s*(\d{1,9})", re.I)
_DOI_PREFIXED = re.compile(r"doi\s*:\s*(10\.\d{4,9}/\S+)", re.I)
_DOI_BARE = re.compile(r"10\.\d{4,9}/\S+")
_SCHEME = re.compile(r"([a-zA-Z][a-zA-Z0-9+.-]*):")
_BARE_HOST = re.compile(
    r"(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+([a-z]{2,24})(?::\d{1,5})?(?:[/?#]\S*)?", re.I
)
# an address with no scheme in a citation list ("127.0.0.1:8809/x", "[::1]/x", "localhost:8809/x"):
# read as https so that the fetcher refuses it with the reason, never dropped here
_BARE_ADDRESS = re.compile(
    r"(?:\d{1,3}(?:\.\d{1,3}){3}|\[[0-9a-z:.%_-]+\]|localhost)(?::\d{1,5})?(?:[/?#]\S*)?", re.I
)
_WEB_SCHEMES = frozenset({"http", "https"})
# schemes that are written without "//"; anything else without "//" is not a URL ("Smith:2020")
_OPAQUE_SCHEMES = frozenset({"javascript", "vbscript", "data", "mailto", "about", "blob", "tel", "urn",
                             "filesystem", "view-source", "jar"})
# "notes.pdf" or "answer.txt" look like host names but are file names
_FILE_SUFFIXES = frozenset(
    "pdf txt md doc docx xls xlsx csv tsv json jsonl png jpg jpeg gif svg htm html xml zip ppt pptx".split()
)
# the hosts of a DOI link (https://doi.org/10.x/y); the one list, the fetcher reads it too
DOI_HOSTS = frozenset({"doi.org", "dx.doi.org", "www.doi.org"})

# Bare URLs, DOIs and PMIDs in prose. Alternatives are tried left to right at each position,
# so a DOI inside https://doi.org/10.x/... is consumed by the URL alternative.
_FIND = re.compile(
    r"""
    (?P<url>\b(?:filesystem|blob|view-source|jar):[a-z][a-z0-9+.-]{0,15}:[^\s<>"`]+
          |(?<![\w+.-])[a-z][a-z0-9+.-]{0,15}://(?:\[[0-9a-z:.%_-]+\][^\s<>"`\[\]{}|\\^]*|[^\s<>"`\[\]{}|\\^]+)
          |\b(?:javascript|about):[^\s<>"`]+
          |\bdata:(?:[a-z]+/[a-z0-9.+-]+)?[;,][^\s<>"`]*)
    |(?P<www>(?<![\w@/.-])www\.[^\s<>"`\[\]{}|\\^]+)
    |(?P<doi>(?<![\w/.])doi\s*:\s*10\.\d{4,9}/[^\s<>"`\[\]{}]+)
    |(?P<bare_doi>(?<![\w/.:-])10\.\d{4,9}/[^\s<>"`\[\]{}]+)
    |(?P<pmid>\bPMID\s*:?\s*\d{1,9}\b)
    """,
    re.I | re.X,
)


def _trim(s: str) -> str:
    """Drop surrounding punctuation and markup, keeping balanced brackets that belong to the URL."""
    s = s.strip().translate(_INVISIBLE)
    s = s.lstrip(_LEADING)
    while s:
        last = s[-1]
        if last in _TRAILING:
            s = s[:-1]
        elif last in _CLOSERS and s.count(last) > s.count(_CLOSERS[last]):
            s = s[:-1]
        else:
            break
    return s


def _doi_url(doi: str) -> str:
    return "https://doi.org/" + doi


def _web_url(scheme: str, rest: str) -> str:
    """An http(s) URL with a lower-case scheme and host, doi.org hosts unified.

    A link that cannot be brought to that form (no host, a broken IPv6 literal) is kept as
    written: it is still a citation, and the fetcher refuses it as unsafe_url with the reason.
    IPv6 literals, dotless and integer hosts are normalised like any other; the fetcher's
    address rule decides whether they may be fetched.
    """
    rest = "//" + rest.lstrip("/")  # "https:/x.org" and "https:x.org" are typing slips
    try:
        parts = urlsplit(scheme + ":" + rest)
        parts.port  # noqa: B018 - raises ValueError for a malformed port
    except ValueError:
        return scheme + ":" + rest
    if not parts.hostname:
        return scheme + ":" + rest
    netloc = parts.netloc.lower()
    if parts.hostname in DOI_HOSTS and parts.path.startswith("/10."):
        return urlunsplit(("https", "doi.org", parts.path, parts.query, parts.fragment))
    return urlunsplit((scheme, netloc, parts.path, parts.query, parts.fragment))


def normalise_url(raw: str) -> str | None:
    """The canonical form of one cited URL, DOI or PMID, or None when it is not one.

    >>> normalise_url("doi:10.1056/NEJMoa2034577.")
    'https://doi.org/10.1056/NEJMoa2034577'
    >>> normalise_url("PMID: 32109013")
    'https://pubmed.ncbi.nlm.nih.gov/32109013/'
    """
    if not isinstance(raw, str):
        return None
    s = raw.strip().translate(_INVISIBLE)
    if s.startswith("[") and _BARE_ADDRESS.fullmatch(s):   # "[::1]:8809/x": its "[" is no markup
        return _web_url("https", s)
    s = _trim(s)
    if not s:
        return None
    if m := _PMID.fullmatch(s):
        return f"https://pubmed.ncbi.nlm.nih.gov/{m.group(1)}/"
    if m := _DOI_PREFIXED.fullmatch(s):
        return _doi_url(_trim(m.group(1)))
    if _DOI_BARE.fullmatch(s):
        return _doi_url(s)
    if any(c.isspace() for c in s):
        return None
    if m := _SCHEME.match(s):
        scheme = m.group(1).lower()
        rest = s[m.end():]
        if scheme in _WEB_SCHEMES:
            return _web_url(scheme, rest)
        if rest.startswith("//") or scheme in _OPAQUE_SCHEMES:
            return s  # kept as written: the fetcher refuses it as unsafe_url, visibly
    if s.startswith("//"):   # scheme-relative ("//example.com/x"): the web's default, https
        return _web_url("https", s)
    if s.lower().startswith("www.") or _BARE_ADDRESS.fullmatch(s):
        return _web_url("https", s)
    if (m := _BARE_HOST.fullmatch(s)) and m.group(1).lower() not in _FILE_SUFFIXES:
        return _web_url("https", s)
    return None


def find_urls(text: str) -> list[tuple[str, int, int]]:
    """Bare URLs, DOIs and PMIDs in ``text``: (normalised URL, start, end) in order of appearance.

    The span covers what was written, without trailing punctuation, so a caller can cut it
    out of the sentence. Repeated URLs are all reported; use :func:`dedupe` for the list.
    """
    found: list[tuple[str, int, int]] = []
    for m in _FIND.finditer(text or ""):
        written = m.group(0)
        trimmed = _trim(written)
        if not trimmed:
            continue
        offset = written.find(trimmed)
        if offset < 0:  # invisible characters were removed from inside the match
            start, end = m.start(), m.end()
        else:
            start = m.start() + offset
            end = start + len(trimmed)
        url = normalise_url(trimmed)
        if url is not None:
            found.append((url, start, end))
    return found


def dedupe(urls: Iterable[str]) -> list[str]:
    """The URLs without repeats, each at the place of its first occurrence."""
    return list(dict.fromkeys(urls))


def domain_of(url: str) -> str:
    """The cited URL's host in lower case without 'www.' ('' when it has none): the one domain rule.

    Domain analysis counts where a citation points, never where its bytes were read from
    (a source pack's local file, an archived copy, a redirect's target).
    """
    try:
        host = (urlsplit(url.strip()).hostname or "").lower()
    except (ValueError, AttributeError):
        return ""
    return host[4:] if host.startswith("www.") else host


def _script(ch: str) -> str:
    """A letter's script as its Unicode name begins ("LATIN", "CYRILLIC", "GREEK"); "" for a non-letter."""
    if not ch.isalpha():
        return ""
    import unicodedata

    return unicodedata.name(ch, "?").split(" ")[0]


def host_note(host: str) -> str:
    """What to show beside a host written in other than ASCII, as browsers do: its punycode (xn--) form,
    and a warning when one of its labels mixes scripts ("www.nhѕ.uk", a Cyrillic ѕ: a lookalike of
    www.nhs.uk); "" for an ASCII host. The one rule every display of a host or URL uses."""
    if not host or host.isascii():
        return ""
    try:
        import idna

        ascii_form = idna.encode(host, uts46=True).decode("ascii")
    except (idna.IDNAError, UnicodeError, ValueError):
        try:
            ascii_form = host.encode("idna").decode("ascii")
        except UnicodeError:
            ascii_form = "not a valid international name"
    mixed = []
    for label in host.split("."):
        scripts = sorted({s for s in map(_script, label) if s})
        if len(scripts) > 1:
            mixed.append(f"'{label}' mixes {' and '.join(s.title() for s in scripts)} letters")
    warning = f"; ⚠ lookalike host: {', '.join(mixed)}" if mixed else ""
    return f"host {ascii_form}{warning}"


def url_with_host_note(url: str) -> str:
    """The URL as written, with :func:`host_note` after it in brackets when its host is not ASCII."""
    try:
        host = urlsplit(url.strip()).hostname or ""
    except (ValueError, AttributeError):
        return url
    note = host_note(host)
    return f"{url} [{note}]" if note else url
