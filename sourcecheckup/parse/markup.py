"""Markdown, URLs and markers in an answer's text, for the segmenter and for statement text.

:func:`mask` hides them (same length, so spans stay spans of the original); :func:`strip_markers`
maps markers to citations and removes them; :func:`clean_markdown` leaves the words a reader sees.
"""
from __future__ import annotations

import re
from typing import Mapping
from urllib.parse import urlsplit

from .markers import MARKER_RE, body_labels, is_marker_body

# any bracket ("[a]" is a marker when the response's marker map knows the label); 【1†source】
_ANY_BRACKET_RE = re.compile(r"\[([^\[\]\n]{1,40})\](?!\()|【([^】]{0,40})】")
LINK_RE = re.compile(r"!?\[([^\[\]\n]*)\]\((\s*<?[^)\s>]+>?)(?:\s+\"[^\"]*\")?\s*\)")
URL_RE = re.compile(r"<?\bhttps?://[^\s<>()\[\]]+(?:\([^\s()]*\)[^\s<>()\[\]]*)*>?|<?\bwww\.[^\s<>()\[\]]+>?")
URL_TRAIL = ".,;:!?'\"”’"


def _lookup(label: str, markers: Mapping[str, int]) -> int | None:
    label = label.strip()
    for candidate in (label, label.lstrip("^"), "^" + label.lstrip("^")):
        if candidate in markers:
            return markers[candidate]
    return None


def _marker_indices(label: str, markers: Mapping[str, int]) -> list[int] | None:
    """Citation indices named by one bracket's label; None when it is not a marker at all."""
    direct = _lookup(label, markers)
    if direct is not None:
        return [direct]
    if label.startswith("^"):
        return []                                    # a footnote we cannot map: still a marker
    labels = body_labels(label)
    if labels is None:
        return None                                  # "[sic]", "[x]": ordinary text
    found: list[int] = []
    for one in labels:
        index = _lookup(one, markers)
        if index is not None:
            found.append(index)
    return found


def tidy(text: str) -> str:
    text = re.sub(r"[ \t]+([.,;:!?)\]])", r"\1", text)
    text = re.sub(r"([(\[])[ \t]+", r"\1", text)
    text = re.sub(r"\(\s*[,;]?\s*\)|\[\s*\]", "", text)
    text = re.sub(r"\s+", " ", text).strip()
    text = re.sub(r"[ \t]+([.,;:!?)\]])", r"\1", text)
    return text


def strip_markers(sentence: str, markers: Mapping[str, int]) -> tuple[str, tuple[int, ...]]:
    """Remove inline citation markers; return the tidied text and the cited indices.

    ``markers`` maps a label as written ("1", "^note") to a 0-based index into
    ``Response.citations``. Indices come in order of appearance, without repeats. Markers
    whose label is unknown are removed but cite nothing; brackets that are not markers
    ("[sic]") stay.
    """
    cited: list[int] = []

    def link(match: re.Match[str]) -> str:
        found = _marker_indices(match.group(1).strip(), markers) if match.group(1).strip() else None
        if found is None:
            return match.group(0)                    # an ordinary link: handled by clean_markdown
        cited.extend(found)
        return " "

    def bracket(match: re.Match[str]) -> str:
        if match.group(2) is not None:               # 【3†source】
            number = re.match(r"\d+", match.group(2))
            if number:
                cited.extend(_marker_indices(number.group(0), markers) or [])
            return " "
        found = _marker_indices(match.group(1).strip(), markers)
        if found is None:
            return match.group(0)
        cited.extend(found)
        return " "

    text = LINK_RE.sub(link, sentence)
    text = _ANY_BRACKET_RE.sub(bracket, text)
    return tidy(text), tuple(dict.fromkeys(cited))


# --------------------------------------------------------------------------------------------
# Markdown and URLs
# --------------------------------------------------------------------------------------------

def _trim_url(url: str) -> str:
    url = url.strip().strip("<>")
    while url and url[-1] in URL_TRAIL:
        url = url[:-1]
    return url


def url_key(url: str) -> str:
    url = _trim_url(url)
    try:
        parts = urlsplit(url if "://" in url else "http://" + url)
        parts.hostname  # noqa: B018  (raises ValueError for a malformed host)
    except ValueError:                      # not a URL after all ("http://[1]"): compare as text
        return url.lower()
    host = (parts.hostname or "").lower()
    host = host[4:] if host.startswith("www.") else host
    key = host + parts.path.rstrip("/")
    return f"{key}?{parts.query}" if parts.query else key


def urls_in(text: str) -> list[str]:
    urls = [_trim_url(m.group(2)) for m in LINK_RE.finditer(text) if URL_RE.match(m.group(2).strip())]
    rest = LINK_RE.sub(" ", text)
    urls += [_trim_url(m.group(0)) for m in URL_RE.finditer(rest)]
    return urls


def _drop_url(match: re.Match[str]) -> str:
    """Remove a URL but keep the sentence punctuation the URL pattern swallowed."""
    found = match.group(0)
    if found.endswith(">"):
        return ""
    return found[len(found.rstrip(URL_TRAIL)):]


_POINTER_BEFORE_URL_RE = re.compile(
    r"[ \t]*[,;:]?[ \t]*(?:\b(?:see(?:\s+also)?|source|sources|ref|via)\b[ \t]*:?[ \t]*)?"
    r"(?=<?https?://\S|<?\bwww\.\S)", re.I)


def _drop_pointer(match: re.Match[str]) -> str:
    before = match.string[:match.start()].rstrip()
    if not match.group(0) or not before or before[-1] in ".!?":
        return match.group(0)     # "See https://..." as a sentence of its own: handled by the parser
    return " "


def clean_markdown(text: str) -> str:
    """Statement text as a reader sees it: links become their words, URLs and emphasis go."""
    def link(match: re.Match[str]) -> str:
        return match.group(1).strip()     # a URL written as the words goes below, with its pointer

    # "(see [the NHS page](https://...))" only points at a source: drop it whole
    text = re.sub(r"\s*(?<!\])\(\s*(?:see|source|sources|via|from|ref)?\s*:?\s*"
                  r"(?:!?\[[^\[\]\n]*\]\([^)\s]*\)|https?://[^\s()]+)\s*\)", "", text, flags=re.I)
    text = LINK_RE.sub(link, text)
    # "..., see https://..." / "this fact sheet: https://...": the pointer goes with the URL
    text = _POINTER_BEFORE_URL_RE.sub(_drop_pointer, text)
    text = URL_RE.sub(_drop_url, text)
    text = re.sub(r"\(\s*(?:see|source|sources|via|ref|from|at)?\s*:?\s*\)", "", text, flags=re.I)
    text = re.sub(r"[ \t]*[,;:]+(?=[ \t]*[.!?])", "", text)   # "sheet: ." once the link has gone
    text = re.sub(r"(\*\*|__)(?=\S)(.+?)(?<=\S)\1", r"\2", text)
    text = re.sub(r"(?<![\w*])\*(?=[^\s*])(.+?)(?<=[^\s*])\*(?![\w*])", r"\1", text)
    text = re.sub(r"(?<![\w])_(?=[^\s_])(.+?)(?<=[^\s_])_(?![\w])", r"\1", text)
    text = re.sub(r"~~(.+?)~~", r"\1", text)
    text = re.sub(r"`([^`]*)`", r"\1", text)
    text = re.sub(r"\*\*|__|(?<!\w)\*(?!\w)", " ", text)   # stray emphasis left by a cut
    return tidy(text)


def mask(text: str) -> str:
    """A copy of ``text`` of the same length where markers, URLs, emphasis and newlines are
    spaces, so the sentence splitter sees prose and every span still fits the original."""
    chars = list(text)

    def blank(start: int, end: int) -> None:
        for i in range(start, end):
            chars[i] = " "

    for match in LINK_RE.finditer(text):
        label = match.group(1).strip()
        if label and is_marker_body(label):
            blank(match.start(), match.end())
        else:                                        # keep the link's words, hide its target
            blank(match.start(), match.start(1))
            blank(match.end(1), match.end())
    for match in MARKER_RE.finditer(text):
        blank(match.start(), match.end())
    for match in URL_RE.finditer(text):
        blank(match.start(), match.start() + len(match.group(0).rstrip(URL_TRAIL)))
    for match in re.finditer(r"\*{1,3}|_{2,3}|`+|~~|\n|\r|\t", text):
        blank(match.start(), match.end())
    return "".join(chars)



def plain_text(text: str) -> str:
    """Marker-free, Markdown-free text of a span, for decisions made before markers are known."""
    return clean_markdown(MARKER_RE.sub(" ", text))

