"""``verify-report`` for a PDF: what a reader sees on its pages is compared with the report rebuilt
from the database.

A PDF is not written again byte for byte (Chromium's output carries dates and ids), and its digests
only say what the report was when written: anyone can edit the HTML and print it to PDF with the
digests unchanged. So the text of every page is extracted (pypdf) and compared, token by token, with
the visible text of the rebuilt HTML report (what the PDF was printed from). Whitespace is left out
on both sides (the PDF breaks lines where the HTML has none), as are what printing adds: the page
footer and the table headers Chromium repeats at the top of a page. Every figure, word and sign that
does not match is reported, with its page, as not verified: a PDF rendered some other way, or one
whose text cannot be extracted, never verifies as OK.
"""
from __future__ import annotations

import difflib
import re
import unicodedata
from html.parser import HTMLParser
from pathlib import Path

MAX_LISTED = 50
HEADER_WINDOW = 300    # characters of a page before a repeated table header (the end of a row the break cut)
# a figure (digits with their separators), a run of letters, or any other single sign
_TOKEN = re.compile(r"\d+(?:[.,]\d+)*|[^\W\d_]+|\S")
_FIGURE = re.compile(r"\d")
_SPACE = re.compile(r"\s+")
# the footer of every page (report.pdf.FOOTER), as its text comes out of the PDF
_FOOTER = re.compile(r"SourceCheckup\s*report\s*·\s*page\s*\d+\s*of\s*\d+")
_HIDDEN_IN_PRINT = {"toc"}            # the template's @media print hides these classes
_SKIPPED_TAGS = {"head", "style", "script", "title"}
_VOID = {"br", "img", "hr", "meta", "link", "input", "wbr", "col", "source"}


def _squeeze(text: str) -> str:
    return _SPACE.sub("", unicodedata.normalize("NFKC", text))


class _Visible(HTMLParser):
    """The text of an HTML report as printed, and the text of each table header (repeated on new pages)."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.headers: list[str] = []
        self._hidden = 0                  # depth inside elements that do not print
        self._stack: list[bool] = []
        self._thead: list[str] | None = None

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if tag in _VOID:
            return
        classes = set((dict(attrs).get("class") or "").split())
        hides = tag in _SKIPPED_TAGS or bool(classes & _HIDDEN_IN_PRINT)
        self._stack.append(hides)
        self._hidden += hides
        if tag == "thead":
            self._thead = []

    def handle_endtag(self, tag: str) -> None:
        if tag in _VOID or not self._stack:
            return
        self._hidden -= self._stack.pop()
        if tag == "thead" and self._thead is not None:
            self.headers.append(_squeeze("".join(self._thead)))
            self._thead = None

    def handle_data(self, data: str) -> None:
        if self._hidden:
            return
        self.parts.append(data)
        if self._thead is not None:
            self._thead.append(data)


def _page_tokens(pages: list[str], headers: list[str]) -> tuple[list[str], list[int], set[int]]:
    """The tokens of the PDF's pages, the page of each, and which tokens are a table header that
    printing repeated near the top of a page (after the rest of a row cut by the page break, at most)."""
    tokens: list[str] = []
    where: list[int] = []
    repeated: set[int] = set()

    def add(text: str, number: int, is_header: bool = False) -> None:
        found = _TOKEN.findall(text)
        if is_header:
            repeated.update(range(len(tokens), len(tokens) + len(found)))
        tokens.extend(found)
        where.extend([number] * len(found))

    for number, text in enumerate(pages, start=1):
        text = _squeeze(_FOOTER.sub(" ", unicodedata.normalize("NFKC", text)))
        if number > 1:
            for header in sorted((h for h in headers if h), key=len, reverse=True):
                at = text.find(header, 0, HEADER_WINDOW + len(header))
                if at >= 0:
                    add(text[:at], number)
                    add(header, number, is_header=True)
                    text = text[at + len(header):]
                    break
        add(text, number)
    return tokens, where, repeated


def _shown(tokens: list[str], start: int, end: int) -> str:
    text = "".join(tokens[start:end])
    return text if len(text) <= 80 else text[:77] + "..."


def compare_pdf_text(pages: list[str], html: str) -> tuple[list[str], int]:
    """The passages where the PDF's text (one string per page) differs from what ``html`` shows, and
    the number of tokens compared."""
    visible = _Visible()
    visible.feed(html)
    visible.close()
    want = _TOKEN.findall(_squeeze("".join(visible.parts)))
    got, page, repeated = _page_tokens(pages, visible.headers)
    differences: list[str] = []
    matcher = difflib.SequenceMatcher(a=got, b=want, autojunk=False)
    for op, a0, a1, b0, b1 in matcher.get_opcodes():
        if op == "equal":
            continue
        # the same characters cut into tokens another way, with or without a header found near the top of
        # a page (repeated there by printing, or where the table starts): what a reader sees matches
        expected = "".join(want[b0:b1])
        if expected in ("".join(got[a0:a1]), "".join(got[i] for i in range(a0, a1) if i not in repeated)):
            continue
        if len(differences) >= MAX_LISTED:
            differences.append("… more passages differ (the first ones are listed)")
            break
        at = page[a0] if a0 < len(page) else (page[-1] if page else 1)
        context = _shown(got, max(0, a0 - 8), a0)
        kind = "figure" if any(_FIGURE.search(t) for t in got[a0:a1] + want[b0:b1]) else "text"
        if op == "insert":
            differences.append(f"page {at}: {kind} not verified: the PDF leaves out {_shown(want, b0, b1)!r} "
                               f"that the report rebuilt from the database shows after {context!r}")
        elif op == "delete":
            differences.append(f"page {at}: {kind} not verified: the PDF shows {_shown(got, a0, a1)!r} after "
                               f"{context!r}, which the report rebuilt from the database does not")
        else:
            differences.append(f"page {at}: {kind} not verified: the PDF shows {_shown(got, a0, a1)!r} where the "
                               f"report rebuilt from the database gives {_shown(want, b0, b1)!r} "
                               f"(after {context!r})")
    return differences, len(want)


def pdf_pages(path: Path) -> list[str]:
    """The text of each page of a PDF, as a reader's copy and paste would give it."""
    from pypdf import PdfReader

    return [page.extract_text() or "" for page in PdfReader(str(path)).pages]


def pdf_producer(path: Path) -> str:
    """What wrote the PDF, as its metadata says ("Skia/PDF m120" for Chromium), or ""."""
    from pypdf import PdfReader

    try:
        metadata = PdfReader(str(path)).metadata
        return str(metadata.get("/Producer") or "") if metadata is not None else ""
    except Exception:   # damaged metadata: nothing to say about it
        return ""
