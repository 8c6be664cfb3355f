"""Answers kept as documents: Word (.docx, read with python-docx) and PDF (read with pypdf).

Both are written out as the Markdown that :func:`.answer.build_response` reads, one answer a document:

- .docx: hyperlinks (``w:hyperlink`` with an ``r:id`` relationship, and ``HYPERLINK`` fields) keep
  their words and cite their target; footnote and endnote references become footnote markers whose
  notes (with their own links, DOIs, PMIDs) are the sources; headings and list items keep their form.
- PDF: the text of every page; a link annotation (``/Link`` with ``/URI``) cites its target where its
  words stand, URLs, DOIs and PMIDs written in the text are citations as in any text.
"""
from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

from lxml import etree

from ..models import SkippedRecord
from .answer import build_response
from .html import marker_before_stop
from .records import MAX_ANSWER_CHARS, MAX_DOCX_UNCOMPRESSED, IngestError, IngestResult

W = "http://schemas.openxmlformats.org/wordprocessingml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
RT_FOOTNOTES = f"{R}/footnotes"
RT_ENDNOTES = f"{R}/endnotes"
_HYPERLINK_FIELD = re.compile(r'^\s*HYPERLINK\s+"([^"]+)"', re.I)


def _w(tag: str) -> str:
    return f"{{{W}}}{tag}"


def _link(words: str, url: str) -> str:
    words = " ".join(words.split()).replace("[", "(").replace("]", ")")
    return f"[{words}](<{url}>)" if words else f" <{url}>"


class _Docx:
    """One .docx: its paragraphs as Markdown, footnotes and endnotes as footnote definitions."""

    def __init__(self, data: bytes) -> None:
        import docx  # python-docx

        self.doc = docx.Document(io.BytesIO(data))
        self.notes: dict[str, str] = {}          # "^3" / "^e2" -> the note as one line
        self.unresolved = 0

    def _rel_target(self, part: Any, rid: str | None) -> str | None:
        rel = part.rels.get(rid) if rid else None
        if rel is None or not rel.is_external:
            if rid:
                self.unresolved += 1
            return None
        return rel.target_ref

    def paragraph(self, p: etree._Element, part: Any) -> str:
        """One w:p as a line of Markdown."""
        out: list[str] = []
        field: dict[str, Any] | None = None

        def text_of(run: etree._Element) -> str:
            pieces = []
            for child in run:
                if child.tag == _w("t"):
                    pieces.append(child.text or "")
                elif child.tag in (_w("tab"),):
                    pieces.append(" ")
                elif child.tag in (_w("br"), _w("cr")):
                    pieces.append(" ")
                elif child.tag == _w("footnoteReference"):
                    pieces.append(f"[^{child.get(_w('id'))}]")
                elif child.tag == _w("endnoteReference"):
                    pieces.append(f"[^e{child.get(_w('id'))}]")
            return "".join(pieces)

        def walk(el: etree._Element) -> None:
            nonlocal field
            for child in el:
                tag = child.tag
                if tag == _w("r"):
                    for fc in child.iter(_w("fldChar"), _w("instrText")):
                        if fc.tag == _w("fldChar"):
                            kind = fc.get(_w("fldCharType"))
                            if kind == "begin":
                                field = {"instr": "", "words": [], "shown": False}
                            elif kind == "separate" and field is not None:
                                field["shown"] = True
                            elif kind == "end" and field is not None:
                                m = _HYPERLINK_FIELD.match(field["instr"])
                                words = "".join(field["words"])
                                out.append(_link(words, m.group(1)) if m else words)
                                field = None
                        elif field is not None:
                            field["instr"] += fc.text or ""
                    text = text_of(child)
                    if field is not None:
                        if field["shown"]:
                            field["words"].append(text)
                    else:
                        out.append(text)
                elif tag == _w("hyperlink"):
                    inner: list[str] = []
                    for run in child.iter(_w("r")):
                        inner.append(text_of(run))
                    url = self._rel_target(part, child.get(f"{{{R}}}id"))
                    words = "".join(inner)
                    out.append(_link(words, url) if url else words)
                elif tag == _w("fldSimple"):
                    words = "".join(text_of(run) for run in child.iter(_w("r")))
                    m = _HYPERLINK_FIELD.match(child.get(_w("instr")) or "")
                    out.append(_link(words, m.group(1)) if m else words)
                elif tag in (_w("ins"), _w("smartTag"), _w("customXml"), _w("sdt"), _w("sdtContent")):
                    walk(child)          # tracked insertions and content controls hold runs too
        walk(p)
        return " ".join("".join(out).split())

    def _prefix(self, p: etree._Element) -> str:
        style = p.find(f"{_w('pPr')}/{_w('pStyle')}")
        name = (style.get(_w("val")) if style is not None else "") or ""
        if m := re.match(r"(?i)heading\s*(\d)", name):
            return "#" * int(m.group(1)) + " "
        if p.find(f"{_w('pPr')}/{_w('numPr')}") is not None or name.lower().startswith("list"):
            return "- "
        return ""

    def body(self) -> str:
        blocks: list[str] = []
        part = self.doc.part
        for el in self.doc.element.body:
            if el.tag == _w("p"):
                line = self.paragraph(el, part)
                if line:
                    prefix = self._prefix(el)
                    joined = prefix == "- " and blocks and blocks[-1].startswith("- ")
                    blocks.append(("\n" if joined else "\n\n") + prefix + line)
            elif el.tag == _w("tbl"):
                rows = []
                for tr in el.iter(_w("tr")):
                    cells = [" ".join(self.paragraph(p, part) for p in tc.iter(_w("p"))).replace("|", "/")
                             for tc in tr.iter(_w("tc"))]
                    rows.append("| " + " | ".join(cells) + " |")
                    if len(rows) == 1:
                        rows.append("| " + " | ".join("---" for _ in cells) + " |")
                blocks.append("\n\n" + "\n".join(rows))
        return "".join(blocks).strip()

    def read_notes(self) -> None:
        for rel in self.doc.part.rels.values():
            if rel.is_external or rel.reltype not in (RT_FOOTNOTES, RT_ENDNOTES):
                continue
            part = rel.target_part
            prefix, tag = ("^", "footnote") if rel.reltype == RT_FOOTNOTES else ("^e", "endnote")
            root = etree.fromstring(part.blob)
            for note in root.iter(_w(tag)):
                if note.get(_w("type")) in ("separator", "continuationSeparator", "continuationNotice"):
                    continue
                line = " ".join(self.paragraph(p, part) for p in note.iter(_w("p"))).strip()
                if line:
                    self.notes[f"{prefix}{note.get(_w('id'))}"] = line

    def markdown(self) -> str:
        self.read_notes()
        body = self.body()
        definitions = [f"[{label}]: {line}" for label, line in self.notes.items()]
        return body + ("\n\n" + "\n".join(definitions) if definitions else "")


def check_docx_size(data: bytes) -> None:
    """Raise IngestError when the .docx's parts would inflate past MAX_DOCX_UNCOMPRESSED. The sizes are
    those its zip directory declares; zipfile (which python-docx reads through) stops each part at its
    declared size and fails its CRC when it holds more, so a lying directory inflates nothing more."""
    import zipfile

    try:
        with zipfile.ZipFile(io.BytesIO(data)) as z:
            total = sum(max(0, info.file_size) for info in z.infolist())
    except zipfile.BadZipFile:
        return   # python-docx names the damage
    if total > MAX_DOCX_UNCOMPRESSED:
        raise IngestError(f"the Word document inflates to {total / (1024 * 1024):,.0f} MB, over the cap of "
                          f"{MAX_DOCX_UNCOMPRESSED // (1024 * 1024)} MB (MAX_DOCX_UNCOMPRESSED): a zip bomb "
                          "or a document too large to audit as one answer; not read")


def docx_markdown(data: bytes) -> tuple[str, dict[str, str]]:
    """A Word document as Markdown, and what it says about itself (title, author) for Response.extra."""
    check_docx_size(data)
    reader = _Docx(data)
    text = reader.markdown()
    props = reader.doc.core_properties
    about = {k: v for k, v in (("document_title", props.title), ("document_author", props.author)) if v}
    if reader.unresolved:
        about["unresolved_links"] = str(reader.unresolved)
    return text, about


# ------------------------------------------------------------------------------------------ PDF
def _inside(rect: tuple[float, ...], x: float, y: float) -> bool:
    x0, y0, x1, y1 = rect
    return min(x0, x1) - 1 <= x <= max(x0, x1) + 1 and min(y0, y1) - 3 <= y <= max(y0, y1) + 1


def _page_links(page: Any) -> list[tuple[tuple[float, ...], str]]:
    links: list[tuple[tuple[float, ...], str]] = []
    for ref in page.get("/Annots") or []:
        annot = ref.get_object()
        if annot.get("/Subtype") != "/Link":
            continue
        action = annot.get("/A")
        action = action.get_object() if action is not None else None
        uri = action.get("/URI") if action is not None else None
        rect = annot.get("/Rect")
        if uri and rect is not None:
            links.append((tuple(float(v) for v in rect), str(uri)))
    return links


class _PdfTooSlow(Exception):
    """Raised from inside pypdf's operator loop when a PDF answer's time cap is reached."""


def _page_markdown(page: Any, deadline: float | None = None) -> tuple[str, int]:
    """One page's text with each link annotation's target written after its words; and how many link
    annotations found no words under them (their targets are then listed at the end of the page).
    deadline (time.monotonic()): _PdfTooSlow once it passes, checked inside the page's operators too."""
    import time

    links = _page_links(page)
    operators = 0

    def check(*_: Any) -> None:   # every operator: a page of text-less operators can take seconds
        nonlocal operators
        operators += 1
        if deadline is not None and operators % 2000 == 0 and time.monotonic() > deadline:
            raise _PdfTooSlow
    pieces: list[tuple[str, int | None]] = []

    def visit(text: str, cm: Any, tm: Any, _font: Any, _size: Any) -> None:
        if not text:
            return
        x = tm[4] * cm[0] + tm[5] * cm[2] + cm[4]
        y = tm[4] * cm[1] + tm[5] * cm[3] + cm[5]
        hit = next((i for i, (rect, _) in enumerate(links) if _inside(rect, x, y)), None) if text.strip() else None
        pieces.append((text, hit))

    page.extract_text(visitor_text=visit, visitor_operand_before=check)
    out: list[str] = []
    placed: set[int] = set()
    for i, (text, hit) in enumerate(pieces):
        out.append(text)
        nxt = pieces[i + 1][1] if i + 1 < len(pieces) else None
        if hit is not None and nxt != hit:
            uri = links[hit][1]
            if uri not in text:               # a link over a written URL is already a citation
                out[-1] = marker_before_stop(out[-1], f" <{uri}>")
            placed.add(hit)
    missing = [uri for i, (_, uri) in enumerate(links) if i not in placed]
    text = "".join(out)
    if missing:
        text += "\n\n" + "\n".join(f"<{uri}>" for uri in dict.fromkeys(missing))
    return text, len(missing)


# a PDF answer is an answer, not a book: pages read and seconds spent reading them (the text cap,
# MAX_ANSWER_CHARS, never trips on pages of text-less operators: 60 of them took 130 s)
MAX_ANSWER_PDF_PAGES = 200
MAX_ANSWER_PDF_SECONDS = 30.0
# a page's drawing operators, decompressed: pypdf parses them all before the first can be checked
# against the time cap (2 MB took 3 s); a page of answer text is a few KB
MAX_ANSWER_PDF_PAGE_BYTES = 1_000_000


def pdf_markdown(data: bytes, max_pages: int | None = None,
                 max_seconds: float | None = None) -> tuple[str, dict[str, str], list[str]]:
    """A PDF's text with its link annotations, what it says about itself, and notes on what was not placed."""
    import time

    from pypdf import PdfReader

    max_pages = MAX_ANSWER_PDF_PAGES if max_pages is None else max_pages
    max_seconds = MAX_ANSWER_PDF_SECONDS if max_seconds is None else max_seconds
    started = time.monotonic()

    reader = PdfReader(io.BytesIO(data))
    if reader.is_encrypted:
        try:
            reader.decrypt("")
        except Exception:   # noqa: BLE001 - any failure means the same thing to the reader: locked
            raise IngestError("the PDF is encrypted; save an unlocked copy to audit it") from None
    pages, notes = [], []
    read = 0
    if len(reader.pages) > max_pages:
        raise IngestError(f"the PDF has {len(reader.pages):,} pages, over the {max_pages:,}-page limit for one "
                          "answer; save the answer on its own")
    too_slow = ("reading the PDF took longer than the {max_seconds:g}-second limit for one answer "
                "(stopped at page {n} of {pages}); save the answer as text")
    for n, page in enumerate(reader.pages, start=1):
        if time.monotonic() > started + max_seconds:   # before the page's stream is parsed, not after
            raise IngestError(too_slow.format(max_seconds=max_seconds, n=n, pages=len(reader.pages)))
        contents = page.get_contents()
        size = len(contents.get_data()) if contents is not None else 0
        if size > MAX_ANSWER_PDF_PAGE_BYTES:
            raise IngestError(f"page {n} of the PDF holds {size / 1e6:.1f} MB of drawing operators, over the "
                              f"{MAX_ANSWER_PDF_PAGE_BYTES / 1e6:g} MB limit for one page of an answer")
        try:
            text, unplaced = _page_markdown(page, deadline=started + max_seconds)
        except _PdfTooSlow:
            raise IngestError(too_slow.format(max_seconds=max_seconds, n=n, pages=len(reader.pages))) from None
        pages.append(text)
        read += len(text)
        if read > MAX_ANSWER_CHARS:   # a book, not an answer: stop reading before it costs minutes
            raise IngestError(f"the PDF holds more than {MAX_ANSWER_CHARS:,} characters of text by page {n} of "
                              f"{len(reader.pages)}, over the limit for one answer; save the answer on its own")
        if unplaced:
            notes.append(f"page {n}: {unplaced} link(s) had no text under them; their targets are cited "
                         "where the page ends")
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    text = re.sub(r"(\w)-\n(\w)", r"\1\2", text)      # a word hyphenated across lines
    info: dict[str, Any] = reader.metadata or {}
    about = {k: str(v) for k, v in (("document_title", info.get("/Title")), ("document_author", info.get("/Author")))
             if v}
    return text, about, notes


def load_document(path: Path, name: str, question: str | None, model: str | None) -> IngestResult:
    """One .docx or .pdf as one answer."""
    try:
        data = path.read_bytes()
    except OSError as e:
        return IngestResult(skipped=[SkippedRecord(name, f"cannot read the file ({e.strerror or e})")])
    notes: list[str] = []
    try:
        if path.suffix.lower() == ".docx":
            text, about = docx_markdown(data)
            kind = "a Word document"
        else:
            text, about, notes = pdf_markdown(data)
            kind = "a PDF"
    except IngestError as e:
        return IngestResult(skipped=[SkippedRecord(name, str(e))])
    except Exception as e:   # noqa: BLE001 - a damaged file is a skipped record, never a crash of the batch
        what = "Word document" if path.suffix.lower() == ".docx" else "PDF"
        return IngestResult(skipped=[SkippedRecord(name, f"not a readable {what} ({type(e).__name__}: {e})")])
    try:
        response = build_response(text, [], origin=name, rid=f"{path.stem}-1", question=question, model=model,
                                  extra=about)
    except IngestError as e:
        return IngestResult(skipped=[SkippedRecord(name, str(e))])
    result = IngestResult(responses=[response])
    result.notes.append(f"{name}: read as {kind}: {len(response.citations)} citation(s)")
    result.notes.extend(f"{name}: {n}" for n in notes)
    if about.get("unresolved_links"):
        result.notes.append(f"{name}: {about['unresolved_links']} link(s) point inside the document or to a "
                            "missing relationship; their words are kept without a citation")
    return result
