"""The offline parser: sentence splitting, marker mapping and pattern classification."""
from __future__ import annotations

import re
from dataclasses import replace
from typing import Mapping, Sequence

from ..models import Response, Statement
from .classify import classify_sentence
from .markup import clean_markdown, strip_markers, url_key, urls_in
from .segment import segments

# What is left of a "Source: https://..." line once its URL is gone.
_LEFTOVER_RE = re.compile(r"^(?:sources?|references?|see|ref|link|citations?)\s*[:.]?$", re.I)


def _lower_first(text: str) -> str:
    if len(text) >= 2 and text[0].isupper() and text[1].islower():
        return text[0].lower() + text[1:]
    return text


class BuiltinParser:
    """The offline parser: sentence splitting, marker mapping and pattern classification.

    ``lead_in_context``: prefix a list fragment ("- Fever") with the heading or lead-in it
    hangs from ("Common symptoms include: fever"), so each statement reads on its own.
    """

    id = "builtin"
    version = "builtin-1"
    parse_in_worker = True   # parse_sync is pure CPU and the parser pickles: a run's CpuPool may run it

    def __init__(self, lead_in_context: bool = True) -> None:
        self.lead_in_context = lead_in_context

    def parse_sync(self, response: Response) -> list[Statement]:
        text = response.text or ""
        markers: Mapping[str, int] = response.markers or {
            str(i + 1): i for i in range(len(response.citations))}
        by_url: dict[str, int] = {}
        for i, url in enumerate(response.citations):
            by_url.setdefault(url_key(url), i)

        statements: list[Statement] = []
        for segment in segments(text):
            raw = text[segment.start:segment.end]
            if segment.row_headers:
                body, cited = self._row(raw, segment.row_headers, markers)
            else:
                body, cited = strip_markers(raw, markers)
                body = clean_markdown(body)
            cited = cited + tuple(by_url[k] for k in (url_key(u) for u in urls_in(raw)) if k in by_url)
            if segment.lead is not None and self.lead_in_context:
                lead_body, lead_cited = strip_markers(text[segment.lead[0]:segment.lead[1]], markers)
                lead_body = clean_markdown(lead_body).rstrip(" :")
                if lead_body:
                    body = f"{lead_body}: {_lower_first(body)}"
                cited = cited or lead_cited
            if not re.search(r"\w", body) or _LEFTOVER_RE.match(body):
                # "See https://..." after a claim: its source is the claim's source
                previous = statements[-1] if statements else None
                if cited and previous is not None and "\n\n" not in text[previous.end:segment.start]:
                    statements[-1] = replace(previous, cited=tuple(dict.fromkeys(previous.cited + cited)),
                                             end=segment.end)
                continue
            statements.append(Statement(
                index=len(statements), text=body, category=classify_sentence(body),
                cited=tuple(dict.fromkeys(cited)), start=segment.start, end=segment.end))
        return statements

    @staticmethod
    def _row(raw: str, headers: Sequence[str], markers: Mapping[str, int]) -> tuple[str, tuple[int, ...]]:
        parts: list[str] = []
        cited: list[int] = []
        for k, cell in enumerate(raw.split("|")):
            clean, found = strip_markers(cell, markers)
            clean = clean_markdown(clean)
            cited.extend(found)
            if not clean:
                continue
            header = headers[k] if k < len(headers) else ""
            parts.append(f"{header}: {clean}" if header else clean)
        return "; ".join(parts), tuple(cited)

    async def parse(self, response: Response) -> list[Statement]:
        return self.parse_sync(response)
