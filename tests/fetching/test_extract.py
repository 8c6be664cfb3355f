"""Text extraction from HTML, PDF and plain text, with charsets and damaged files."""
from __future__ import annotations

from sourcecheckup.fetching.extract import decode_text, extract, sniff_kind
from tests.support.paths import FIXTURES
from tests.support.site import GUIDELINE_PDF_LINES, _broken_pdf, _encrypted_pdf, minimal_pdf

SITE = FIXTURES / "site"


def test_news_article_keeps_title_author_date_and_drops_boilerplate():
    doc = extract((SITE / "article/hypertension.html").read_bytes(), "text/html; charset=utf-8")
    assert doc.kind == "html"
    assert doc.title == "High blood pressure: what the new thresholds mean for you - Daily Health News"
    assert doc.meta["author"] == "Maria Okafor" and doc.meta["date"] == "2023-11-02"
    assert "The DASH diet alone can lower systolic blood pressure by about 11 mm Hg" in doc.text
    assert "Get our weekly health newsletter" not in doc.text and "Advertisement" not in doc.text


def test_journal_article_reads_abstract_and_body_with_entities_decoded():
    doc = extract((SITE / "article/hfe-hemochromatosis.html").read_bytes(), "text/html")
    assert "28.4% of male C282Y homozygotes and in 1.2% of female" in doc.text
    assert "1000 µg per litre" in doc.text
    assert doc.meta["date"] == "2008-01-17"


def test_windows_1252_page_declared_in_meta_is_decoded():
    html = ('<html><head><meta charset="windows-1252"><title>Caf\xe9 au lait spots</title></head><body><article>'
            '<p>Caf\xe9-au-lait macules \u2013 six or more larger than 15 mm \u2013 suggest neurofibromatosis type 1 '
            'in adults, according to the diagnostic criteria used in clinics.</p></article></body></html>')
    doc = extract(html.encode("cp1252"), "text/html")
    assert doc.title == "Café au lait spots"
    assert "Café-au-lait macules – six or more" in doc.text and doc.meta["encoding"] == "cp1252"


def test_header_charset_wins_and_bad_bytes_never_raise():
    assert decode_text("Ménière".encode("latin-1"), "text/plain; charset=ISO-8859-1")[0] == "Ménière"
    text, enc = decode_text(b"caf\xe9 \xff\xfe broken", None)
    assert text.startswith("café") and enc == "cp1252"
    assert decode_text(b"\xef\xbb\xbfHFE", None) == ("HFE", "utf-8")


def test_pdf_text_title_and_page_count():
    doc = extract(minimal_pdf(GUIDELINE_PDF_LINES, title="Diabetes guideline"), "application/pdf")
    assert doc.kind == "pdf" and doc.title == "Diabetes guideline" and doc.meta["pages"] == 1
    assert "Lactic acidosis associated with metformin is rare" in doc.text


def test_pdf_page_cap_is_recorded():
    from io import BytesIO

    from pypdf import PdfReader, PdfWriter

    page = minimal_pdf(["Page text about ferritin."])
    writer = PdfWriter()
    for _ in range(3):
        writer.add_page(PdfReader(BytesIO(page)).pages[0])
    buf = BytesIO()
    writer.write(buf)
    doc = extract(buf.getvalue(), "application/pdf", max_pdf_pages=2)
    assert doc.meta["pages"] == 3 and doc.meta["pages_read"] == 2
    assert doc.text.count("ferritin") == 2


def test_encrypted_and_broken_pdfs_are_errors_not_crashes():
    enc = extract(_encrypted_pdf(), "application/pdf")
    assert enc.kind == "error" and enc.encrypted and "needs a password" in enc.problem
    broken = extract(_broken_pdf(), "application/pdf")
    assert broken.kind == "error" and "damaged" in broken.problem
    assert extract(b"%PDF-1.4\n", None).kind == "error"


def test_kind_is_sniffed_when_the_type_is_generic_or_missing():
    assert sniff_kind(b"%PDF-1.7 ...", "application/octet-stream") == "pdf"
    assert sniff_kind(b"<!DOCTYPE html><html>", None) == "html"
    assert sniff_kind(b"Plain notes on iron.", "") == "text"
    assert sniff_kind(b"\x89PNG\r\n\x1a\n\0\0", "application/octet-stream") == "unsupported"
    assert extract(b"PK\x03\x04\0\0", "application/zip").problem == "content type application/zip is not a document"
