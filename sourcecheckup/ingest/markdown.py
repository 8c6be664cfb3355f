"""Markdown and plain-text answers (plain text is Markdown without markup): one answer a file,
with optional front matter (question, model, id)."""
from __future__ import annotations

import re
from typing import Any

from ..models import Response, SkippedRecord
from .answer import build_response
from .records import IngestError, IngestResult, InputText

_FRONT_MATTER = re.compile(r"\A---[ \t]*\n((?:[A-Za-z_][\w-]*[ \t]*:[^\n]*\n)+)---[ \t]*(?:\n|\Z)")

def parse_markdown(text: str, *, origin: str, rid: str, question: str | None = None,
                   model: str | None = None) -> Response:
    """One answer written in Markdown or plain text.

    Optional front matter (``---`` / ``question: ...`` / ``---``) sets question, model and id;
    its other keys go to Response.extra. Raises IngestError for an empty answer.
    """
    text = text.lstrip("\ufeff")
    extra: dict[str, Any] = {}
    if m := _FRONT_MATTER.match(text.replace("\r\n", "\n")):
        for line in m.group(1).splitlines():
            key, _, value = line.partition(":")
            key, value = key.strip().lower(), value.strip().strip("\"'")
            if key == "question" and value:
                question = value
            elif key == "model" and value:
                model = value
            elif key == "id" and value:
                rid = value
            else:
                extra[key] = value
        text = text.replace("\r\n", "\n")[m.end():]
    if not text.strip():
        raise IngestError("empty answer")
    return build_response(text, [], origin=origin, rid=rid, question=question, model=model, extra=extra)


def load_markdown(src: InputText) -> IngestResult:
    try:
        response = parse_markdown(src.text, origin=src.name, rid=f"{src.stem}-1",
                                  question=src.question, model=src.model)
    except IngestError as e:
        return IngestResult(skipped=[SkippedRecord(src.name, str(e))])
    return IngestResult(responses=[response])
