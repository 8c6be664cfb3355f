"""The citation-marker grammar: what an inline marker looks like and which labels it names.

Defined once here and used by ingest (which maps markers to citations) and parse (which strips
them from statements): ``[1]``, ``[1, 2]``, ``[1; 2]``, ``[1-3]``, ``[^note]`` and ``【3†source】``.
"""
from __future__ import annotations

import re

NUMBER = r"\d{1,4}"
# what stands between the brackets of a marker: a footnote label, or numbers joined by , ; or a dash
MARKER_BODY = rf"\^[^\[\]\s]+|{NUMBER}(?:\s*[-–—,;]\s*{NUMBER})*"
# a marker in running text; "[1](https://...)" is a link, not a marker
MARKER_RE = re.compile(rf"\[(?:{MARKER_BODY})\](?!\()|【[^】]{{0,40}}】")
MAX_RANGE = 50   # "[1-3]" names 1, 2 and 3; a wider or reversed range ("[1990-2020]") names nothing


def is_marker_body(label: str) -> bool:
    """Whether the text between two brackets is a marker's ("1-3", "^note"), not words ("sic")."""
    return re.fullmatch(MARKER_BODY, label.strip()) is not None


def body_labels(label: str) -> list[str] | None:
    """The labels one marker body names, in order: "1, 3-4" -> ["1", "3", "4"]; "^a" -> ["^a"].
    None when the text is not a marker body at all."""
    label = label.strip()
    if label.startswith("^"):
        return [label] if is_marker_body(label) else None
    if not is_marker_body(label):
        return None
    labels: list[str] = []
    for part in re.split(r"\s*[,;]\s*", label):
        bounds = re.split(r"\s*[-–—]\s*", part)
        if len(bounds) == 2:
            low, high = int(bounds[0]), int(bounds[1])
            if 0 <= high - low <= MAX_RANGE:
                labels.extend(str(n) for n in range(low, high + 1))
        else:
            labels.append(str(int(part)))   # "01" is label "1", as ingest maps it
    return labels


def marker_labels(marker: str) -> list[str]:
    """The labels a whole marker as matched by MARKER_RE names: "[1-2]" -> ["1", "2"];
    "【3†source】" -> ["3"] (its leading number; none when it has no number)."""
    if marker.startswith("【"):
        number = re.match(r"\d+", marker[1:])
        return [str(int(number.group(0)))] if number else []
    return body_labels(marker[1:-1]) or []
