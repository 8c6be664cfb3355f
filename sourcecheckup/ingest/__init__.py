"""INGEST: read the answers to audit from files or pasted text into Responses.

One module per format: :mod:`.jsonl` (the study's answer JSON, a list, JSON Lines), :mod:`.table`
(CSV/TSV through a column mapping), :mod:`.markdown` (Markdown and plain text), :mod:`.html` (a page
copied or saved from a chat app; :mod:`.paste` for the paste box), :mod:`.chat_exports` (ChatGPT's and
Claude's conversations.json), :mod:`.documents` (.docx, PDF), :mod:`.folder`; :mod:`.files` reads one
file by its extension. Every format makes its Response in
:mod:`.answer` (citations in order, markers mapped); :mod:`.records` holds the shared records.
A record that cannot be read becomes a SkippedRecord naming the file, the line or row, and the
problem; the rest of the batch goes on.
"""
from __future__ import annotations

import dataclasses
import json
import re
from pathlib import Path

from ..models import SkippedRecord
from .files import SUPPORTED_EXTENSIONS, load_file
from .folder import load_folder
from .jsonl import load_json, load_jsonl, parse_answer_record
from .markdown import load_markdown, parse_markdown
from .pages import load_html
from .records import IngestError, IngestResult, InputText, unique_ids
from .table import CsvMapping

__all__ = [
    "SUPPORTED_EXTENSIONS",
    "CsvMapping",
    "IngestError",
    "IngestResult",
    "load_path",
    "load_text",
    "parse_answer_record",
    "parse_markdown",
]

TEXT_FORMATS = {"markdown", "md", "text", "txt"}
FORMATS = ("auto", "html", "json", "jsonl", *sorted(TEXT_FORMATS))
# the start of pasted HTML (a browser's clipboard, `xclip -t text/html -o`): read as a rich paste
_HTML_START = re.compile(r"\A\s*(?:Version:\d|<!doctype\s+html|<html[\s>]|<meta[\s>]|<body[\s>]|<div[\s>]|<p[\s>]"
                         r"|<!--StartFragment-->|<(?:span|section|article|ol|ul|h[1-6])[\s>])", re.I)


def load_path(path: str | Path, *, mapping: CsvMapping | None = None, question: str | None = None,
              model: str | None = None) -> IngestResult:
    """Answers from one file or a folder (searched recursively, in sorted order).

    In a folder, files with other extensions are reported as skipped; hidden files and folders
    are passed over. A missing path or an unsupported file named directly raises IngestError.
    """
    p = Path(path).expanduser()
    mapping = mapping or CsvMapping()
    if not p.exists():
        raise IngestError(f"no such file or folder: {p}")
    if p.is_dir():
        result = load_folder(p, mapping, question, model)
    else:
        if p.suffix.lower() not in SUPPORTED_EXTENSIONS:
            raise IngestError(
                f"cannot read {p.name}: unsupported extension '{p.suffix or 'none'}' "
                f"(supported: {' '.join(SUPPORTED_EXTENSIONS)})"
            )
        result = load_file(p, p.name, mapping, question, model)
    _unique(result)
    return result


MAX_RENAME_NOTES = 20


def _unique(result: IngestResult) -> None:
    """Repeated ids renamed (unique_ids), each renaming named in a note: two lines with one id are two
    answers audited and counted apart, which the user should know."""
    before = result.responses
    result.responses = unique_ids(before)
    renamed = [(b, a) for b, a in zip(before, result.responses) if b.id != a.id]
    for b, a in renamed[:MAX_RENAME_NOTES]:
        result.notes.append(f"{a.origin or 'a record'}: its id {b.id!r} is an earlier record's too; "
                            f"audited as {a.id!r}")
    if len(renamed) > MAX_RENAME_NOTES:
        result.notes.append(f"{len(renamed) - MAX_RENAME_NOTES} more records repeat an earlier id and were "
                            "renamed the same way (-2, -3, ...)")


_NAME_NOISE = re.compile(r"https?://\S+|www\.\S+|\[\^?[^\]]{0,16}\]|\([^)]*\)")
NAME_WORDS = 5
NAME_MAX_CHARS = 40


def name_from_first_words(text: str, words: int = NAME_WORDS) -> str:
    """A readable id for an answer that has none: its first words, lower case, joined by "-"
    ("Metformin is contraindicated in patients…" -> "metformin-is-contraindicated-in-patients").
    Links, citation markers and punctuation are left out; "" when the text has no words."""
    found = re.findall(r"[^\W_]+", _NAME_NOISE.sub(" ", text[:2000]))
    name = ""
    for word in found[:words]:
        longer = f"{name}-{word.lower()}" if name else word.lower()
        if len(longer) > NAME_MAX_CHARS:
            break
        name = longer
    return name or (found[0].lower()[:NAME_MAX_CHARS] if found else "")


def load_text(text: str, *, question: str | None = None, model: str | None = None, origin: str = "pasted",
              fmt: str = "auto", name_by_words: bool = False) -> IngestResult:
    """Answers pasted as text: a JSON object or array, JSON Lines, HTML (a rich paste), Markdown or plain text.

    ``fmt="auto"`` reads text starting like an HTML page or fragment as HTML (one answer, its links
    and markers kept), text starting with ``{`` as JSON (or JSON Lines), text starting with
    ``[`` as JSON when it parses (a Markdown link can start an answer too), anything else as
    Markdown / plain text. With ``name_by_words`` an answer that brings no id of its own is named
    by its first words (name_from_first_words) instead of "pasted-1".
    """
    if fmt not in FORMATS:
        raise IngestError(f"unknown format '{fmt}' (use one of: {', '.join(FORMATS)})")
    text = text.lstrip("\ufeff")
    src = InputText(text=text, name=origin, stem=origin, question=question, model=model)
    stripped = text.strip()
    if fmt == "auto":
        if _HTML_START.match(stripped):
            fmt = "html"
        elif stripped.startswith("{"):
            fmt = "json"
        elif stripped.startswith("["):
            try:
                json.loads(stripped)
                fmt = "json"
            except json.JSONDecodeError:
                fmt = "markdown"
        else:
            fmt = "markdown"
    if not stripped:
        return IngestResult(skipped=[SkippedRecord(origin, "empty answer")])
    if fmt == "html":
        result = load_html(src, whole_page=True)[0]
    elif fmt == "json":
        result = load_json(src)
    elif fmt == "jsonl":
        result = load_jsonl(src)
    else:
        result = load_markdown(src)
    if name_by_words:
        generated = re.compile(rf"{re.escape(origin)}-\d+")
        result.responses = [dataclasses.replace(r, id=name_from_first_words(r.text) or r.id)
                            if generated.fullmatch(r.id) else r for r in result.responses]
    _unique(result)
    return result
