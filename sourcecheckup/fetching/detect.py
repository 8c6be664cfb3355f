"""Tell a real article from a soft 404, a paywall teaser, a login wall, an abstract page or a bot wall.

The detectors are data: resources/patterns/*.json, one file per kind of page, each a list of
regular expressions over the page title, its main text or its markup. Every decision records
which pattern matched ("soft 404: title matched 'Page not found'") so a librarian can check it.
"""
from __future__ import annotations

import functools
import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import cast
from urllib.parse import urlsplit

from ..models import FetchStatus, Source
from ..resources import resources_dir

PATTERN_DIR = resources_dir() / "patterns"
# checked in this order: the first detector that matches decides
ORDER = ("captcha", "soft404", "login", "paywall", "abstract", "js_required")
_OUTCOMES = {"blocked": FetchStatus.BLOCKED, "dead": FetchStatus.DEAD, "paywalled": FetchStatus.PAYWALLED,
             "abstract_only": FetchStatus.ABSTRACT_ONLY}
NEEDS_BROWSER = "needs_browser"
_FIELDS = ("title", "text", "html")


class PatternFileError(Exception):
    """A pattern file is missing or malformed; the message names the file and the problem."""


@dataclass(frozen=True)
class Rule:
    field: str
    regex: re.Pattern[str]
    max_text_chars: int | None = None   # this rule only judges pages with at most this much main text
    also: "Rule | None" = None          # a second condition that must hold too
    # the same pattern without IGNORECASE, searched over the lowercased field first: about twice as
    # fast, and nearly every page matches nothing; None where that would not be the same search
    quick: re.Pattern[str] | None = None


# characters that IGNORECASE matches to an ASCII letter but lower() does not turn into it
_FOLD = str.maketrans({"\u0131": "i", "\u017f": "s"})   # dotless i, long s
_ESCAPE = re.compile(r"\\.", re.S)


def _quick_pattern(pattern: str) -> re.Pattern[str] | None:
    """The pattern lowercased (outside its escapes: \\S is not \\s) and compiled case-sensitively,
    where matching it on lowercased text is the same as matching the pattern with IGNORECASE on the
    text: ASCII patterns without character codes."""
    if not pattern.isascii() or re.search(r"\\[xuUN0-7]", pattern):
        return None
    parts, last = [], 0
    for m in _ESCAPE.finditer(pattern):
        parts.append(pattern[last:m.start()].lower())
        parts.append(m.group(0))
        last = m.end()
    parts.append(pattern[last:].lower())
    lowered_pattern = "".join(parts)
    try:
        return re.compile(lowered_pattern, re.M)
    except re.error:
        return None


def lowered(text: str) -> str | None:
    """text for the quick patterns, or None where lowercasing changes its length (then positions and
    bounded gaps like .{0,400} would differ, so only the full patterns are used)."""
    low = text.lower().translate(_FOLD)
    return low if len(low) == len(text) else None


@dataclass(frozen=True)
class Detector:
    name: str                      # file stem: "soft404"
    label: str                     # plain words: "soft 404"
    outcome: str                   # "dead" | "blocked" | "paywalled" | "abstract_only" | "needs_browser"
    rules: tuple[Rule, ...]
    max_text_chars: int            # a page with more main text than this is not judged by this detector
    requires: Rule | None = None   # must also match (e.g. an abstract heading for abstract_only)
    empty_with_script_chars: int = 0


@dataclass(frozen=True)
class Detection:
    detector: str
    outcome: str
    reason: str                    # "soft 404: title matched 'Page not found'"

    @property
    def status(self) -> FetchStatus | None:
        return _OUTCOMES.get(self.outcome)


def _compile(path: Path, raw: object) -> Rule:
    if not isinstance(raw, dict) or raw.get("field") not in _FIELDS or not isinstance(raw.get("pattern"), str):
        raise PatternFileError(f"{path}: each rule needs \"field\" (one of {', '.join(_FIELDS)}) and \"pattern\"")
    try:
        limit = raw.get("max_text_chars")
        also = _compile(path, raw["also"]) if raw.get("also") else None
        return Rule(raw["field"], re.compile(raw["pattern"], re.I | re.M), int(limit) if limit is not None else None,
                    also, _quick_pattern(raw["pattern"]))
    except re.error as exc:
        raise PatternFileError(f"{path}: bad pattern {raw['pattern']!r}: {exc}") from None


def load_detector(path: Path) -> Detector:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, json.JSONDecodeError) as exc:
        raise PatternFileError(f"cannot read pattern file {path}: {exc}") from None
    outcome = data.get("outcome")
    if outcome not in _OUTCOMES and outcome != NEEDS_BROWSER:
        raise PatternFileError(f"{path}: unknown outcome {outcome!r}")
    rules = tuple(_compile(path, r) for r in data.get("rules", []))
    requires = _compile(path, data["requires"]) if data.get("requires") else None
    return Detector(path.stem, data.get("label", path.stem), outcome, rules, int(data.get("max_text_chars", 5000)),
                    requires, int(data.get("empty_with_script_chars", 0)))


@functools.lru_cache(maxsize=8)
def load_detectors(directory: Path = PATTERN_DIR) -> tuple[Detector, ...]:
    """The page detectors, in ORDER (other pattern files in the folder belong to other checks)."""
    missing = [n for n in ORDER if not (Path(directory) / f"{n}.json").is_file()]
    if missing:
        raise PatternFileError(f"pattern folder {directory} lacks {', '.join(m + '.json' for m in missing)}")
    return tuple(load_detector(Path(directory) / f"{n}.json") for n in ORDER)


def _snippet(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()[:80]


class _Fields(dict):
    """title / text / html, with their lowercased forms made on first use (key "low:" + name)."""

    def __missing__(self, key: str) -> str | None:
        if not key.startswith("low:"):
            raise KeyError(key)
        value = lowered(self[key[4:]])
        self[key] = value
        return value


def _match(rule: Rule, fields: dict[str, str]) -> str | None:
    if rule.max_text_chars is not None and len(fields["text"]) > rule.max_text_chars:
        return None
    if rule.quick is not None and isinstance(fields, _Fields):
        low = fields["low:" + rule.field]
        if low is not None and rule.quick.search(low) is None:
            return None
    m = rule.regex.search(fields[rule.field])   # the full pattern on the text as it is: the quoted snippet
    if m is None:
        return None
    if rule.also is not None:
        also = _match(rule.also, fields)
        if also is None:
            return None
        return f"{rule.field} matched '{_snippet(m.group(0))}' and {also}"
    return f"{rule.field} matched '{_snippet(m.group(0))}'"


def detect_page(title: str | None, text: str, html: str = "", *,
                only: tuple[str, ...] | None = None, directory: Path = PATTERN_DIR) -> Detection | None:
    """The first detector whose patterns match this page, or None for an ordinary page."""
    fields = _Fields(title=title or "", text=text or "", html=html[:400_000])
    for det in load_detectors(directory):
        if only is not None and det.name not in only:
            continue
        if len(fields["text"]) > det.max_text_chars:
            continue
        if det.requires is not None and _match(det.requires, fields) is None:
            continue
        for rule in det.rules:
            why = _match(rule, fields)
            if why:
                return Detection(det.name, det.outcome, f"{det.label}: {why}")
        if det.empty_with_script_chars and len(fields["text"].strip()) < det.empty_with_script_chars \
                and "<script" in fields["html"].lower():
            return Detection(det.name, det.outcome,
                             f"{det.label}: almost no text ({len(fields['text'].strip())} characters) and scripts")
    return None


def redirected_home(url: str, final_url: str | None) -> bool:
    """A deep link that ends on the site's home page: the classic soft 404."""
    if not final_url or final_url == url:
        return False
    try:
        a, b = urlsplit(url), urlsplit(final_url)
    except ValueError:
        return False
    deep = a.path.strip("/") != "" or bool(a.query)
    home = b.path.strip("/") in ("", "index.html", "index.php", "home", "en", "en-us") and not b.query
    return deep and home


def classify(source: Source, html: str) -> Source:
    """Re-label an HTML source read with status OK by what the page really is."""
    if source.status is not FetchStatus.OK:
        return source
    if redirected_home(source.url, source.final_url):
        return replace(source, status=FetchStatus.DEAD,
                       reason=f"soft 404: redirected to the home page {source.final_url}")
    found = detect_page(source.title, source.text, html)
    if found is None:
        return source
    if found.outcome == NEEDS_BROWSER:
        # what little text there is ("enable JavaScript") is not the article
        return replace(source, text="", flags=source.flags + ("needs_js",),
                       reason=f"HTTP {source.http_status or 200} OK, but no main text was found; {found.reason}"
                       if source.origin != "local_file" else f"{source.reason}, but {found.reason}",
                       meta={**source.meta, "needs_js": found.reason})
    # every detector's outcome is checked on load: one that is not NEEDS_BROWSER has a status
    return replace(source, status=cast(FetchStatus, found.status), reason=found.reason,
                   meta={**source.meta, "detector": found.detector})


def block_reason(body: bytes, content_type: str | None) -> str | None:
    """Why an error page (401/403/429/503) is a bot wall, if it is one: 'captcha or bot wall: ...'."""
    from .extract import decode_text, extract_html

    if not body:
        return None
    doc = extract_html(body[:300_000], content_type)
    html = doc.markup or decode_text(body[:300_000], content_type, html=True)[0]
    found = detect_page(doc.title, doc.text, html, only=("captcha", "login"))
    return found.reason if found else None
