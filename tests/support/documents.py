"""Word and PDF answers for the tests, built from readable parts: a .docx zipped from the XML parts in
tests/fixtures/documents/<name>_docx/, a PDF whose text segments may carry link annotations."""
from __future__ import annotations

import io
import zipfile
from pathlib import Path

DOCUMENTS = Path(__file__).resolve().parents[1] / "fixtures" / "documents"
CHAR_WIDTH = 5.5       # Helvetica at 11 pt, near enough to place a link's rectangle over its words
LINE_HEIGHT = 16


def build_docx(name: str, out: Path, replace: dict[str, str] | None = None) -> Path:
    """tests/fixtures/documents/<name>_docx/ zipped as a .docx; ``replace`` rewrites text in its parts
    (e.g. a real address to the fixture site's)."""
    folder = DOCUMENTS / f"{name}_docx"
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:
        for part in sorted(p for p in folder.rglob("*") if p.is_file()):
            text = part.read_text(encoding="utf-8")
            for old, new in (replace or {}).items():
                text = text.replace(old, new)
            z.writestr(part.relative_to(folder).as_posix(), text)
    return out


def build_pdf(lines: list[list[tuple[str, str | None]]], out: Path, title: str = "") -> Path:
    """A one-page PDF: each line a list of (words, link or None) segments; a linked segment gets a /Link
    annotation with that /URI over its words, as a browser's "Save as PDF" writes them."""
    from pypdf import PdfReader, PdfWriter
    from pypdf.annotations import Link

    def esc(s: str) -> str:
        return s.replace("\\", "\\\\").replace("(", "\\(").replace(")", "\\)")

    ops, rects = [], []
    y = 760
    for line in lines:
        x = 72.0
        for words, url in line:
            ops.append(f"BT /F1 11 Tf 1 0 0 1 {x:.1f} {y} Tm ({esc(words)}) Tj ET")
            width = len(words) * CHAR_WIDTH
            if url:
                rects.append(((x, y - 3, x + width, y + 9), url))
            x += width
        y -= LINE_HEIGHT
    stream = "\n".join(ops).encode("latin-1")
    objects = [
        b"<< /Type /Catalog /Pages 2 0 R >>",
        b"<< /Type /Pages /Kids [3 0 R] /Count 1 >>",
        b"<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents 4 0 R "
        b"/Resources << /Font << /F1 5 0 R >> >> >>",
        b"<< /Length %d >>\nstream\n" % len(stream) + stream + b"\nendstream",
        b"<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /Encoding /WinAnsiEncoding >>",
    ]
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf_file(objects))))
    for rect, url in rects:
        writer.add_annotation(page_number=0, annotation=Link(rect=rect, url=url))
    if title:
        writer.add_metadata({"/Title": title})
    with out.open("wb") as f:
        writer.write(f)
    return out


def pdf_file(objects: list[bytes], *, header: bytes = b"%PDF-1.4\n", trailer: bytes = b"") -> bytes:
    """A PDF of ``objects`` (numbered from 1; the first is the catalogue) with its cross-reference table;
    ``trailer``: more trailer entries (e.g. b" /Info 6 0 R")."""
    out = io.BytesIO()
    out.write(header)
    offsets = []
    for number, body in enumerate(objects, start=1):
        offsets.append(out.tell())
        out.write(b"%d 0 obj\n" % number + body + b"\nendobj\n")
    xref = out.tell()
    out.write(b"xref\n0 %d\n0000000000 65535 f \n" % (len(objects) + 1))
    for off in offsets:
        out.write(b"%010d 00000 n \n" % off)
    out.write(b"trailer\n<< /Size %d /Root 1 0 R%s >>\nstartxref\n%d\n%%%%EOF\n" % (len(objects) + 1, trailer, xref))
    return out.getvalue()
