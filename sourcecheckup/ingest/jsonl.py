"""JSON answers: the study's answer record ``{"response": ..., "citations": [...]}``, one object,
a list of them, or JSON Lines (one record a line; a bad line costs that line only)."""
from __future__ import annotations

import collections
import dataclasses
import json
from typing import Any, Mapping

from ..models import Response, SkippedRecord
from .answer import build_response
from .citations import citation_entries
from .expert import EXPERT_KEYS, expert_reference
from .records import (
    MAX_EXTRA_FIELDS,
    IngestError,
    IngestResult,
    InputText,
    array_items,
    bad_byte,
    capped_extra,
    kind_of,
    parse_json,
)

_TEXT_KEYS = ("response", "answer", "text")

def _scalar(value: Any) -> bool:
    return value is None or isinstance(value, (str, int, float, bool))


def _optional_text(obj: Mapping, key: str) -> str | None:
    value = obj.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, Mapping) or isinstance(value, (list, tuple)):
        raise IngestError(f"'{key}' is {kind_of(value)}, expected text")
    return str(value).strip()


def parse_answer_record(obj: Mapping, origin: str, default_id: str) -> Response:
    """One answer record in the study's format; raises IngestError saying what is wrong with it.

    ``{"response": "... [1] ...", "citations": ["https://..."], "question": ..., "model": ...,
    "id": ...}``; ``answer`` or ``text`` may stand for ``response``. Without a citation list, the
    URLs written in the answer are its citations. Other scalar keys go to Response.extra.
    """
    if not isinstance(obj, Mapping):
        raise IngestError(f"expected a JSON object, got {kind_of(obj)}")
    text_key = next((k for k in _TEXT_KEYS if k in obj), None)
    if text_key is None:
        raise IngestError("no answer text: expected a 'response', 'answer' or 'text' field"
                          + (f" (fields: {', '.join(map(str, obj))})" if obj else ""))
    text = obj[text_key]
    citations = obj.get("citations")
    if isinstance(text, Mapping):
        # {"response": {"answer": ..., "citations": [...]}}: the model's reply as it was parsed
        inner_key = next((k for k in _TEXT_KEYS if k in text), None)
        if inner_key is None:
            raise IngestError(f"'{text_key}' is an object without an 'answer' or 'text' field")
        citations = citations if citations is not None else text.get("citations")
        text, text_key = text[inner_key], f"{text_key}.{inner_key}"
    if not isinstance(text, str):
        raise IngestError(f"'{text_key}' is {kind_of(text)}, expected the answer text")
    if not text.strip():
        raise IngestError(f"empty answer in '{text_key}'")
    structured = citation_entries(citations, "'citations'")
    raw_id = obj.get("id")
    if raw_id is not None and not _scalar(raw_id):
        raise IngestError(f"'id' is {kind_of(raw_id)}, expected text or a number")
    rid = str(raw_id).strip() if raw_id is not None and str(raw_id).strip() else default_id
    used = {text_key.split(".")[0], "citations", "question", "model", "id", *EXPERT_KEYS}
    extra, dropped = capped_extra({k: v for k, v in obj.items() if k not in used and isinstance(k, str) and _scalar(v)})
    if dropped:   # said on the answer itself, with the cap's name
        extra["metadata_left_out"] = f"{dropped:,} field(s) past the first {MAX_EXTRA_FIELDS} (MAX_EXTRA_FIELDS)"
    expert = expert_reference(obj.get, lambda key: f"'{key}'")
    return build_response(text, structured, origin=origin, rid=rid, question=_optional_text(obj, "question"),
                  model=_optional_text(obj, "model"), extra=extra, expert=expert)



def _with_defaults(response: Response, src: InputText) -> Response:
    if (response.question is None and src.question) or (response.model is None and src.model):
        return dataclasses.replace(response, question=response.question or src.question,
                                   model=response.model or src.model)
    return response


def _record(result: IngestResult, src: InputText, obj: Any, origin: str, n: int) -> None:
    try:
        response = parse_answer_record(obj, origin, f"{src.stem}-{n}")
    except IngestError as e:
        result.skipped.append(SkippedRecord(origin, str(e)))
    else:
        result.responses.append(_with_defaults(response, src))


def _json_error(e: json.JSONDecodeError) -> str:
    return f"invalid JSON ({e.msg} at column {e.colno})"


def load_jsonl(src: InputText, unreadable: Mapping[int, str] | None = None) -> IngestResult:
    """One record a line; unreadable maps line numbers that were not UTF-8 to their problem."""
    result = IngestResult()
    unreadable = unreadable or {}
    n = 0
    # "\n" only: a JSON string may hold U+2028 or a form feed, which splitlines() would cut at
    for lineno, line in enumerate(src.text.split("\n"), start=1):
        if lineno in unreadable:
            result.skipped.append(SkippedRecord(f"{src.name}:{lineno}", unreadable[lineno]))
            continue
        if not line.strip():
            continue
        n += 1
        origin = f"{src.name}:{lineno}"
        if problem := bad_byte(line):   # JSON Lines saved as .json, read with its bad bytes kept
            result.skipped.append(SkippedRecord(origin, problem.replace("this record", "this line")))
            continue
        try:
            obj = parse_json(line)
        except json.JSONDecodeError as e:
            result.skipped.append(SkippedRecord(origin, _json_error(e)))
            continue
        except IngestError as e:   # nested past the cap: this line only
            result.skipped.append(SkippedRecord(origin, str(e)))
            continue
        _record(result, src, obj, origin, n)
    if n == 0 and not unreadable:
        result.skipped.append(SkippedRecord(src.name, "no answers: the file holds no JSON records"))
    return result


def load_json(src: InputText) -> IngestResult:
    try:
        value = parse_json(src.text)
    except json.JSONDecodeError as e:
        if e.msg == "Extra data":
            return load_jsonl(src)  # JSON Lines saved with a .json name
        return IngestResult(skipped=[SkippedRecord(f"{src.name}:{e.lineno}", _json_error(e))])
    except IngestError as e:   # nested past the cap: an array loses that record only
        if not src.text.lstrip().startswith("["):
            return IngestResult(skipped=[SkippedRecord(src.name, str(e))])
        value = []
    result = IngestResult()
    if isinstance(value, list):
        try:
            items = list(array_items(src.text))
        except json.JSONDecodeError as e:
            return IngestResult(skipped=[SkippedRecord(f"{src.name}:{e.lineno}", _json_error(e))])
        per_line = collections.Counter(line for _, line, _ in items)
        for n, (obj, line, problem) in enumerate(items, start=1):
            # records that share a line (a one-line array) are told apart by their number
            where = f"{src.name}:{line}" if per_line[line] == 1 else f"{src.name}:{line} (record {n})"
            if problem:
                result.skipped.append(SkippedRecord(f"{where} (record {n})" if "(record" not in where else where,
                                                    problem))
                continue
            _record(result, src, obj, where, n)
        if not items:
            result.skipped.append(SkippedRecord(src.name, "no answers: the JSON list is empty"))
    elif isinstance(value, Mapping):
        if problem := bad_byte(src.text):
            result.skipped.append(SkippedRecord(src.name, problem))
        else:
            _record(result, src, value, src.name, 1)
    else:
        result.skipped.append(SkippedRecord(src.name, f"expected a JSON object or a list of objects, got {kind_of(value)}"))
    return result
