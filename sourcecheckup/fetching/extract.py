"""Turn the bytes of a document into the text a judge reads: HTML, PDF or plain text.

Nothing here touches the network. Every problem is reported in an Extracted record
(kind "error" with a plain-words problem), never raised.
"""
from __future__ import annotations

import codecs
import io
import logging
import re
import threading
from dataclasses import dataclass, field
from typing import Any, Mapping

MAX_PDF_PAGES = 300

HTML_TYPES = ("text/html", "application/xhtml+xml")
PDF_TYPES = ("application/pdf", "application/x-pdf")
TEXT_TYPES = ("text/plain", "text/markdown", "text/x-markdown", "text/csv", "application/json",
              "application/ld+json")
# a generic or missing content type: decide from the bytes
SNIFF_TYPES = ("", "application/octet-stream", "binary/octet-stream", "application/download",
               "application/force-download", "application/unknown")
XML_TYPES = ("application/xml", "text/xml")

_META_CHARSET = re.compile(rb"""<meta[^>]+charset\s*=\s*["']?\s*([A-Za-z0-9_\-:.]+)""", re.I)
_XML_ENCODING = re.compile(rb"""<\?xml[^>]+encoding\s*=\s*["']([A-Za-z0-9_\-.]+)""", re.I)
_TITLE = re.compile(r"<title[^>]*>(.*?)</title\s*>", re.I | re.S)
_WS = re.compile(r"[ \t\r\f\v]+")
_META_TAG = re.compile(r"<meta\s[^>]*>", re.I)
_ATTR = re.compile(r"""([a-zA-Z_:.-]+)\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s>]+))""")
# <meta> names that carry the author or the date when trafilatura finds none
_AUTHOR_META = ("author", "citation_author", "dc.creator", "article:author")
_DATE_META = ("citation_publication_date", "article:published_time", "dc.date", "date", "citation_date")


@dataclass(frozen=True)
class Extracted:
    kind: str                      # "html" | "pdf" | "text" | "unsupported" | "error"
    text: str = ""
    title: str | None = None
    meta: Mapping[str, Any] = field(default_factory=dict)
    problem: str = ""              # plain words, set for "unsupported" and "error"
    encrypted: bool = False        # a PDF we could not open without a password
    outcome: str = ""              # "too_large" when a cap stopped the reading (a decompression bomb)
    # the decoded HTML, kept for the page detectors so the bytes are not decoded a second time
    markup: str = field(default="", repr=False, compare=False)


def media_type(content_type: str | None) -> str:
    return (content_type or "").split(";", 1)[0].strip().lower()


def header_charset(content_type: str | None) -> str | None:
    for part in (content_type or "").split(";")[1:]:
        key, _, value = part.partition("=")
        if key.strip().lower() == "charset" and value.strip():
            return value.strip().strip("\"'")
    return None


def sniff_kind(raw: bytes, content_type: str | None) -> str:
    """'html', 'pdf', 'text' or 'unsupported', from the declared type and the first bytes."""
    mt = media_type(content_type)
    head = raw[:1024].lstrip()
    if raw[:1024].find(b"%PDF-") != -1 and raw[:1024].find(b"%PDF-") < 16:
        return "pdf"
    if mt in PDF_TYPES:
        # an HTML page (a login or error page) served as application/pdf is read as the page it is
        lowered = head[:512].lower()
        if lowered.startswith((b"<!doctype html", b"<html")) or b"<html" in lowered or b"<body" in lowered:
            return "html"
        return "pdf"
    if mt in HTML_TYPES:
        return "html"
    if mt in TEXT_TYPES:
        return "text"
    if mt in SNIFF_TYPES or mt in XML_TYPES or mt.startswith("text/"):
        lowered = head[:512].lower()
        if lowered.startswith((b"<!doctype html", b"<html")) or b"<html" in lowered or b"<body" in lowered:
            return "html"
        if mt.startswith("text/") or mt in XML_TYPES:
            return "text"
        if raw and _looks_textual(raw[:4096]):
            return "text"
    return "unsupported"


def _looks_textual(sample: bytes) -> bool:
    if b"\x00" in sample:
        return False
    try:
        sample.decode("utf-8")
        return True
    except UnicodeDecodeError as exc:
        return exc.start > len(sample) - 4   # a multi-byte character cut at the sample's end


def _valid_codec(name: str | None) -> str | None:
    if not name:
        return None
    try:
        return codecs.lookup(name.strip()).name
    except LookupError:
        return None


def decode_text(raw: bytes, content_type: str | None = None, html: bool = False) -> tuple[str, str]:
    """(text, encoding used): BOM, then the declared charset, then <meta>, then UTF-8, then cp1252."""
    for bom, bom_codec in ((codecs.BOM_UTF8, "utf-8"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16")):
        if raw.startswith(bom):
            return raw.decode(bom_codec, errors="replace").lstrip("\ufeff"), bom_codec
    candidates: list[str | None] = [header_charset(content_type)]
    if html:
        m = _META_CHARSET.search(raw[:4096]) or _XML_ENCODING.search(raw[:1024])
        candidates.append(m.group(1).decode("ascii", "ignore") if m else None)
    for name in candidates:
        enc = _valid_codec(name)
        if enc:
            # browsers read "iso-8859-1" as windows-1252; so do we (curly quotes, dashes)
            if enc in ("latin-1", "iso8859-1", "ascii"):
                enc = "cp1252"
            try:
                return raw.decode(enc), enc
            except UnicodeDecodeError:
                continue
    try:
        return raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        return raw.decode("cp1252", errors="replace"), "cp1252"


# characters XML 1.0 forbids (C0 controls but tab, LF, CR; surrogates; U+FFFE, U+FFFF): the
# extractor's lxml tree drops a whole page that holds one, written raw or as a character reference
_XML_INVALID = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")
_CHAR_REF = re.compile(r"&#(?:[xX]([0-9a-fA-F]{1,8})|([0-9]{1,10}));?")


def _xml_invalid(code: int) -> bool:
    return (code < 0x20 and code not in (0x09, 0x0A, 0x0D)) or 0xD800 <= code <= 0xDFFF or code in (0xFFFE, 0xFFFF) \
        or code > 0x10FFFF


def without_invalid_characters(html: str) -> str:
    """The markup with every XML-invalid character, raw or as a character reference (&#11;, &#x1F;,
    &#xFFFE;), replaced by a space: a browser shows nothing for them, the extractor lost the page."""
    def ref(m: re.Match[str]) -> str:
        code = int(m.group(1), 16) if m.group(1) else int(m.group(2))
        return " " if _xml_invalid(code) else m.group(0)

    if "&#" in html:
        html = _CHAR_REF.sub(ref, html)
    return _XML_INVALID.sub(" ", html)


def _clean_lines(text: str) -> str:
    lines = (_WS.sub(" ", line).strip() for line in text.replace("\r\n", "\n").split("\n"))
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def meta_tags(html: str) -> dict[str, list[str]]:
    """<meta name|property=... content=...> values by lowercased name, in document order."""
    import html as _html

    found: dict[str, list[str]] = {}
    for tag in _META_TAG.findall(html[:300_000]):
        attrs = {m.group(1).lower(): _html.unescape(m.group(2) or m.group(3) or m.group(4) or "")
                 for m in _ATTR.finditer(tag)}
        name = (attrs.get("name") or attrs.get("property") or "").strip().lower()
        content = attrs.get("content", "").strip()
        if name and content:
            found.setdefault(name, []).append(content)
    return found


FAST_PASS_MIN_CHARS = 500
# the fallbacks only run when the page holds at least this much more text than the fast pass
# found: on a script shell ("enable JavaScript") or a near-empty page they cannot find more, and
# jusText alone costs several ms a page
FALLBACK_MIN_GAIN_CHARS = 50


def _body_text_chars(html: str) -> int:
    """Characters of all text in the page body, scripts, styles and footers left out."""
    from trafilatura.baseline import html2txt

    try:
        return len(html2txt(html))
    except Exception:   # only decides whether to try harder: when unsure, try
        return FALLBACK_MIN_GAIN_CHARS * 100
_warm_lock = threading.Lock()
_warmed = False


def warm_up() -> None:
    """Import trafilatura and pypdf and load the public-suffix table, once per process.

    They take a while the first time (pypdf alone about 0.15 s), and threads extracting their first
    pages together would otherwise each parse the table.
    """
    global _warmed
    if _warmed:
        return
    with _warm_lock:
        if _warmed:
            return
        import pypdf  # noqa: F401
        import trafilatura  # noqa: F401

        try:
            from tld.utils import get_tld_names

            get_tld_names()
        except Exception:  # only a speed-up: trafilatura loads it itself when needed
            pass
        _warmed = True


def extract_html(raw: bytes, content_type: str | None = None, url: str | None = None) -> Extracted:
    warm_up()
    import trafilatura

    html, encoding = decode_text(raw, content_type, html=True)
    html = without_invalid_characters(html)
    fallback_title = None
    m = _TITLE.search(html[:200_000])
    if m:
        import html as _html

        fallback_title = _WS.sub(" ", _html.unescape(re.sub(r"<[^>]+>", "", m.group(1)))).strip() or None
    try:
        logging.getLogger("trafilatura").setLevel(logging.ERROR)
        options: dict[str, Any] = dict(url=url, with_metadata=True, include_comments=False, include_tables=True,
                                       include_images=False, as_dict=False)
        # trafilatura's own extractor first (about 4 ms a page); its fallbacks (readability,
        # jusText) cost ten times that, so they run only when the fast pass finds little text
        doc = trafilatura.bare_extraction(html, fast=True, **options)
        found = len((getattr(doc, "text", None) or "").strip()) if doc is not None else 0
        if found < FAST_PASS_MIN_CHARS and _body_text_chars(html) - found >= FALLBACK_MIN_GAIN_CHARS:
            doc = trafilatura.bare_extraction(html, **options)
    except MemoryError:
        raise   # the caller's memory bound: too_large, not an extraction failure
    except Exception as exc:  # trafilatura can fail on pathological markup
        return Extracted("error", title=fallback_title, problem=f"could not extract text from HTML ({exc})",
                         meta={"encoding": encoding})
    meta: dict[str, Any] = {"encoding": encoding}
    if doc is None:
        return Extracted("html", "", fallback_title, meta, markup=html)
    text = _clean_lines(getattr(doc, "text", None) or "")
    for key in ("author", "date", "sitename", "description", "language"):
        value = getattr(doc, key, None)
        if value:
            meta[key] = value
    tags = meta_tags(html)
    if "author" not in meta:
        for name in _AUTHOR_META:
            if tags.get(name):
                meta["author"] = "; ".join(dict.fromkeys(tags[name]))
                break
    if "date" not in meta:
        for name in _DATE_META:
            if tags.get(name):
                meta["date"] = tags[name][0].replace("/", "-")[:10]
                break
    title = fallback_title or getattr(doc, "title", None)
    doc_title = getattr(doc, "title", None)   # as_dict=False: a Document
    if doc_title and doc_title != title:
        meta["headline"] = doc_title
    return Extracted("html", text, title, meta, markup=html)


def extract_pdf(raw: bytes, max_pages: int = MAX_PDF_PAGES) -> Extracted:
    from pypdf import PdfReader
    from pypdf.errors import FileNotDecryptedError, LimitReachedError, PdfReadError

    logging.getLogger("pypdf").setLevel(logging.ERROR)
    try:
        reader = PdfReader(io.BytesIO(raw), strict=False)
        if reader.is_encrypted:
            try:
                opened: int = reader.decrypt("")   # a PasswordType, an IntEnum
            except Exception:
                opened = 0
            if not opened:
                return Extracted("error", problem="the PDF is encrypted and needs a password to open",
                                 encrypted=True)
        n_pages = len(reader.pages)
        parts: list[str] = []
        capped = ""
        for page in reader.pages[:max_pages]:
            try:
                parts.append(page.extract_text() or "")
            except LimitReachedError as exc:
                parts.append("")
                capped = str(exc)
            except MemoryError:
                raise
            except Exception:
                parts.append("")
            if not parts[-1] and not capped:
                capped = _stream_limit(page)
        meta: dict[str, Any] = {"pages": n_pages}
        title = None
        try:
            info = reader.metadata
            if info:
                title = (info.title or "").strip() or None
                if info.author:
                    meta["author"] = str(info.author)
                if info.creation_date:
                    meta["date"] = info.creation_date.isoformat()
        except Exception:
            pass
        if n_pages > max_pages:
            meta["pages_read"] = max_pages
        text = _clean_lines("\n\n".join(parts))
        if not text and capped:
            return Extracted("error", title=title, meta=meta, outcome="too_large",
                             problem="the PDF's page content decompresses past pypdf's limit "
                                     f"({_STREAM_LIMIT_MB} MB a stream): a decompression bomb, not read")
        if not text:
            return Extracted("pdf", "", title, meta,
                             problem="the PDF has no text layer (a scanned document?)")
        return Extracted("pdf", text, title, meta)
    except LimitReachedError as exc:
        return Extracted("error", outcome="too_large",
                         problem=f"the PDF is over one of pypdf's size limits ({exc}): a decompression bomb, not read")
    except MemoryError:
        raise
    except FileNotDecryptedError:
        return Extracted("error", problem="the PDF is encrypted and needs a password to open", encrypted=True)
    except (PdfReadError, ValueError, KeyError, TypeError, IndexError, AttributeError, RecursionError) as exc:
        return Extracted("error", problem=f"the PDF is damaged and could not be read ({type(exc).__name__}: {exc})"[:300])
    except Exception as exc:
        return Extracted("error", problem=f"the PDF could not be read ({type(exc).__name__}: {exc})"[:300])


_STREAM_LIMIT_MB = 75   # pypdf's ZLIB_MAX_OUTPUT_LENGTH


def _stream_limit(page: Any) -> str:
    """Why an empty page's content could not be read, when a pypdf limit stopped it; else ""."""
    from pypdf.errors import LimitReachedError

    try:
        page.get_contents()
    except LimitReachedError as exc:
        return str(exc)
    except Exception:
        return ""
    return ""


def extract_text(raw: bytes, content_type: str | None = None) -> Extracted:
    text, encoding = decode_text(raw, content_type)
    return Extracted("text", _clean_lines(text), None, {"encoding": encoding})


def extract(raw: bytes, content_type: str | None = None, url: str | None = None,
            max_pdf_pages: int = MAX_PDF_PAGES) -> Extracted:
    """Main text, title and metadata of a document, chosen by content type and magic bytes."""
    kind = sniff_kind(raw, content_type)
    if kind == "pdf":
        return extract_pdf(raw, max_pdf_pages)
    if kind == "html":
        return extract_html(raw, content_type, url)
    if kind == "text":
        return extract_text(raw, content_type)
    mt = media_type(content_type) or "unknown"
    return Extracted("unsupported", problem=f"content type {mt} is not a document")


def unsupported_reason(content_type: str | None) -> str | None:
    """A reason to refuse before reading the body, judged from the declared type alone."""
    mt = media_type(content_type)
    if not mt or mt in SNIFF_TYPES:
        return None
    if mt in HTML_TYPES or mt in PDF_TYPES or mt in TEXT_TYPES or mt in XML_TYPES or mt.startswith("text/"):
        return None
    major = mt.split("/", 1)[0]
    if major in ("image", "video", "audio", "font", "model"):
        return f"content type {mt} is not a document"
    if mt in ("application/zip", "application/gzip", "application/x-tar", "application/x-7z-compressed",
              "application/vnd.rar", "application/x-rar-compressed", "application/x-msdownload",
              "application/javascript", "application/wasm"):
        return f"content type {mt} is not a document"
    return f"content type {mt} is not a document we can read"
