"""One answer file: its bytes decoded and read by the format its extension names."""
from __future__ import annotations

from pathlib import Path

from ..models import SkippedRecord
from .chat_exports import load_chat_export, sniff_export
from .documents import load_document
from .encoding import decode, decode_lines, decode_saved_page, guess, unreadable
from .jsonl import load_json, load_jsonl
from .markdown import load_markdown
from .pages import load_html
from .records import IngestResult, InputText
from .table import DELIMITERS, CsvMapping, load_table, sniff_delimiter

SUPPORTED_EXTENSIONS: tuple[str, ...] = (
    ".json", ".jsonl", ".ndjson", ".csv", ".tsv", ".md", ".markdown", ".txt", ".html", ".htm", ".docx", ".pdf",
)
JSON_EXT = {".json"}
JSONL_EXT = {".jsonl", ".ndjson"}
TABLE_EXT = {".csv", ".tsv"}
TEXT_EXT = {".md", ".markdown", ".txt"}
HTML_EXT = {".html", ".htm"}
DOCUMENT_EXT = {".docx", ".pdf"}

def load_file(path: Path, name: str, mapping: CsvMapping, question: str | None, model: str | None) -> IngestResult:
    ext = path.suffix.lower()
    if ext in DOCUMENT_EXT:
        return load_document(path, name, question, model)
    try:
        data = path.read_bytes()
    except OSError as e:
        return IngestResult(skipped=[SkippedRecord(name, f"cannot read the file ({e.strerror or e})")])
    encoding = None
    try:
        if ext in TABLE_EXT:
            text, encoding = guess(data)
        else:
            text = decode(data)
    except UnicodeDecodeError as e:
        if ext in HTML_EXT:     # a page saved in its own 8-bit encoding
            text = decode_saved_page(data)
            return load_html(InputText(text=text, name=name, stem=path.stem, question=question, model=model))[0]
        if ext in JSONL_EXT:   # one bad line costs that line, not the file
            text, bad = decode_lines(data)
            return load_jsonl(InputText(text=text, name=name, stem=path.stem, question=question, model=model), bad)
        if ext in JSON_EXT and not data.startswith((b"\xff\xfe", b"\xfe\xff")):
            # one bad record of an array costs that record: its bad byte is kept, found and named
            text = data.decode("utf-8-sig", "surrogateescape")
            return load_json(InputText(text=text, name=name, stem=path.stem, question=question, model=model))
        if ext not in JSON_EXT | JSONL_EXT:   # Markdown or plain text: detected as a table's text is
            text, encoding = guess(data)
            if encoding.startswith("Windows-1252"):
                result = load_markdown(InputText(text=text, name=name, stem=path.stem, question=question,
                                                 model=model))
                result.notes.append(f"{name}: read as {encoding}")
                return result
        return IngestResult(skipped=[SkippedRecord(name, unreadable(data, e))])
    src = InputText(text=text, name=name, stem=path.stem, question=question, model=model)
    if ext in HTML_EXT:
        return load_html(src)[0]
    if ext in JSON_EXT:
        if (export := sniff_export(text)) is not None:   # ChatGPT's or Claude's conversations.json
            return load_chat_export(export, src)
        return load_json(src)
    if ext in JSONL_EXT:
        return load_jsonl(src)
    if ext in TABLE_EXT:
        delimiter = mapping.delimiter or ("\t" if ext == ".tsv" else sniff_delimiter(text, mapping))
        how = "given" if mapping.delimiter else ("the .tsv default" if ext == ".tsv" else "detected")
        result = load_table(src, mapping, delimiter)
        result.notes.append(f"{name}: read as a table separated by {DELIMITERS.get(delimiter, repr(delimiter))} "
                            f"({how}), encoding {encoding}")
        return result
    return load_markdown(src)
