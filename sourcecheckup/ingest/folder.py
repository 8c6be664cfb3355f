"""A folder of answer files, searched recursively in sorted order; other files are named as skipped."""
from __future__ import annotations

from pathlib import Path

from ..models import SkippedRecord
from .files import DOCUMENT_EXT, HTML_EXT, SUPPORTED_EXTENSIONS, TEXT_EXT, load_file
from .records import IngestError, IngestResult
from .table import CsvMapping

NOT_AN_ANSWER = ("not read as an answer: it cites no URL (open the file on its own to audit it anyway)")


def load_folder(folder: Path, mapping: CsvMapping, question: str | None, model: str | None) -> IngestResult:
    """Every answer file under ``folder``; hidden files and folders are passed over."""
    result = IngestResult()
    files = sorted((f for f in folder.rglob("*") if f.is_file()), key=lambda f: f.relative_to(folder).as_posix())
    for f in files:
        rel = f.relative_to(folder)
        if any(part.startswith(".") for part in rel.parts):
            continue
        name = rel.as_posix()
        if f.suffix.lower() in DOCUMENT_EXT | HTML_EXT:
            result.skipped.append(SkippedRecord(
                name, f"not read as an answer in a folder ({f.suffix.lower()} files beside answers are usually "
                      "sources; open the file on its own to audit it)"))
            continue
        if f.suffix.lower() not in SUPPORTED_EXTENSIONS:
            result.skipped.append(SkippedRecord(
                name, f"not an answer file (extension '{f.suffix or 'none'}'; "
                      f"supported: {' '.join(SUPPORTED_EXTENSIONS)})"))
            continue
        try:
            part = load_file(f, name, mapping, question, model)
        except IngestError as e:  # a table without the mapped column: skip that file only
            result.skipped.append(SkippedRecord(name, str(e).removeprefix(f"{name} ")))
            continue
        if f.suffix.lower() in TEXT_EXT:
            # notes and READMEs sit beside answers in folders: a text file that cites nothing is not
            # taken for an answer (named on its own, it is audited as one)
            for r in [r for r in part.responses if not r.citations]:
                part.responses.remove(r)
                part.skipped.append(SkippedRecord(name, NOT_AN_ANSWER))
        result.extend(part)
    return result
