"""CSV/TSV answers: one answer a row, through a column mapping; the separator and encoding of
spreadsheet exports are detected."""
from __future__ import annotations

import bisect
import csv
import io
from dataclasses import dataclass

from ..models import SkippedRecord
from .answer import build_response
from .citations import citation_entries
from .encoding import guess
from .expert import EXPERT_KEYS, expert_reference
from .records import (
    MAX_EXTRA_FIELDS,
    IngestError,
    IngestResult,
    InputText,
    bad_byte,
    capped_extra,
    extra_note,
    named_columns,
)


@dataclass(frozen=True)
class CsvMapping:
    """Which columns of a CSV/TSV hold what. Unmapped columns go to Response.extra."""

    text_col: str = "response"
    citations_col: str = "citations"
    question_col: str = "question"
    model_col: str = "model"
    id_col: str = "id"
    delimiter: str | None = None   # None: sniffed for .csv (, ; tab |), '\t' for .tsv


DELIMITERS = {",": "commas", ";": "semicolons", "\t": "tabs", "|": "pipes"}

def _column(header: list[str], wanted: str, default: str, aliases: tuple[str, ...] = ()) -> int | None:
    folded = [h.strip().casefold() for h in header]
    names = [wanted] + (list(aliases) if wanted == default else [])
    for name in names:
        if name.strip().casefold() in folded:
            return folded.index(name.strip().casefold())
    return None


def load_table(src: InputText, mapping: CsvMapping, delimiter: str) -> IngestResult:
    """Rows of a CSV/TSV; row numbers are those a spreadsheet shows (the header is row 1)."""
    csv.field_size_limit(max(csv.field_size_limit(), 64 * 1024 * 1024))
    reader = csv.reader(io.StringIO(src.text, newline=""), delimiter=delimiter)
    result = IngestResult()
    try:
        header = next(reader, None)
    except csv.Error as e:
        return IngestResult(skipped=[SkippedRecord(f"{src.name} row 1", f"cannot read the header ({e})")])
    if not header or not any(h.strip() for h in header):
        return IngestResult(skipped=[SkippedRecord(src.name, "empty table: no header row")])
    defaults = CsvMapping()
    text_i = _column(header, mapping.text_col, defaults.text_col, ("answer", "text"))
    if text_i is None:
        raise IngestError(
            f"{src.name} has no column '{mapping.text_col[:80]}' (its columns: {named_columns(header)}); "
            "name the answer column in the column mapping"
        )
    cols = {
        "citations": _column(header, mapping.citations_col, defaults.citations_col),
        "question": _column(header, mapping.question_col, defaults.question_col),
        "model": _column(header, mapping.model_col, defaults.model_col),
        "id": _column(header, mapping.id_col, defaults.id_col),
    }
    cols.update({key: _column(header, key, key) for key in EXPERT_KEYS})   # expert material: one column each
    mapped = {text_i, *(i for i in cols.values() if i is not None)}
    text_name = header[text_i].strip()
    # the unmapped columns an answer may keep as metadata: found once, never more than the cap (+ 1 to count)
    unmapped = [i for i, h in enumerate(header) if i not in mapped and h.strip()]
    left_out = [0, 0]   # metadata fields left out, answers that lost some
    rows = iter(reader)
    n = 0
    while True:
        try:
            row = next(rows, None)
        except csv.Error as e:
            result.skipped.append(SkippedRecord(f"{src.name} row {n + 2}", f"cannot parse the rest of the table ({e})"))
            break
        if row is None:
            break
        n += 1
        origin = f"{src.name} row {n + 1}"
        if not any(cell.strip() for cell in row):
            continue
        if text_i >= len(row):
            result.skipped.append(SkippedRecord(
                origin, f"missing column '{text_name}' (the row has {len(row)} of {len(header)} fields)"))
            continue

        def cell(key: str) -> str | None:
            i = cols[key]
            # called only for this row, within its iteration
            return row[i].strip() if i is not None and i < len(row) and row[i].strip() else None  # noqa: B023

        if problem := next((bad_byte(c) for c in row if bad_byte(c)), None):
            result.skipped.append(SkippedRecord(origin, problem.replace("this record", "this row")))
            continue
        text = row[text_i]
        if not text.strip():
            result.skipped.append(SkippedRecord(origin, f"empty answer in column '{text_name}'"))
            continue
        where = f"citations in column '{header[cols['citations']].strip()}'" if cols["citations"] is not None else ""
        present = bisect.bisect_left(unmapped, len(row))   # unmapped columns this row has
        extra, _ = capped_extra({header[i].strip(): row[i] for i in unmapped[:min(present, MAX_EXTRA_FIELDS)]})
        dropped = present - min(present, MAX_EXTRA_FIELDS)
        if dropped:
            left_out[0] += dropped
            left_out[1] += 1
        try:
            structured = citation_entries(cell("citations"), where)
            expert = expert_reference(cell, lambda key: f"column '{key}'")
            response = build_response(text, structured, origin=origin, rid=cell("id") or f"{src.stem}-{n}",
                              question=cell("question") or src.question, model=cell("model") or src.model,
                              extra=extra, expert=expert)
        except IngestError as e:
            result.skipped.append(SkippedRecord(origin, str(e)))
            continue
        result.responses.append(response)
    if left_out[0]:
        result.notes.append(extra_note(src.name, *left_out))
    if not result.responses and not result.skipped:   # as an empty JSON Lines file is: named, not silent
        result.skipped.append(SkippedRecord(src.name, "no answers: the table has a header row and no data rows"))
    return result


def table_header(data: bytes, suffix: str, mapping: CsvMapping | None = None) -> tuple[list[str], str]:
    """The header row of a CSV/TSV file and its separator, read exactly as :func:`load_file` reads the
    table (same decoding, same separator sniffing), for a column-mapping dialog."""
    mapping = mapping or CsvMapping()
    text, _ = guess(data)
    delimiter = mapping.delimiter or ("\t" if suffix.lower() == ".tsv" else sniff_delimiter(text, mapping))
    try:
        header = next(csv.reader(io.StringIO(text[:65536], newline=""), delimiter=delimiter), [])
    except csv.Error:
        header = []
    return [h.strip() for h in header], delimiter


def sniff_delimiter(text: str, mapping: CsvMapping) -> str:
    """The separator of a CSV: the one whose header row has the answer column, else the most
    columns; a tie keeps the comma. Spreadsheets in much of Europe write ';', some exports tab or '|'."""
    first = text[:20000]
    wanted = {mapping.text_col.strip().casefold()}
    if mapping.text_col == CsvMapping().text_col:
        wanted |= {"answer", "text"}
    best, best_key = ",", (False, 0)
    for d in DELIMITERS:
        try:
            header = next(csv.reader(io.StringIO(first, newline=""), delimiter=d), [])
        except csv.Error:
            continue
        key = (any(h.strip().casefold() in wanted for h in header), len(header))
        if key > best_key:
            best, best_key = d, key
    return best
