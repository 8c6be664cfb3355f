"""Which characters of a report no installed font can draw, so that the PDF names them instead of
drawing blanks.

Chromium draws each character with a font that fontconfig offers for it; a character that no
installed font covers comes out as an empty box, and as ``\\x00`` in the PDF's text (CJK and emoji on
a machine with only DejaVu). ``scripts/setup.sh`` installs Noto for CJK, Arabic and the other scripts
and Noto Color Emoji; where a character is still not covered, the PDF shows its code point
(``[U+10C80]``) with a note at the top, and the writer returns a warning naming each one.
"""
from __future__ import annotations

import bisect
import functools
import html as html_lib
import re
import shutil
import subprocess
import unicodedata

# characters that need no glyph of their own: controls, format characters (ZWJ), spaces, separators
_NO_GLYPH = frozenset({"Cc", "Cf", "Zs", "Zl", "Zp"})
_VARIATION_SELECTORS = ((0xFE00, 0xFE0F), (0xE0100, 0xE01EF))
_BODY_OPEN = re.compile(r"<body\b[^>]*>", re.I)
MAX_NAMED = 40   # characters listed by name in the note and the warning; the rest are counted


@functools.lru_cache(maxsize=1)
def font_coverage() -> tuple[tuple[int, int], ...] | None:
    """The code point ranges covered by any installed font (merged, sorted), or None when fontconfig's
    fc-list cannot say."""
    exe = shutil.which("fc-list")
    if exe is None:
        return None
    try:
        out = subprocess.run([exe, "--format", "%{charset}\n"], capture_output=True, text=True, timeout=60,
                             check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return None
    ranges: list[tuple[int, int]] = []
    for token in out.split():
        first, _, last = token.partition("-")
        try:
            ranges.append((int(first, 16), int(last or first, 16)))
        except ValueError:
            continue
    merged: list[tuple[int, int]] = []
    for start, end in sorted(ranges):
        if merged and start <= merged[-1][1] + 1:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return tuple(merged)


def uncovered_characters(text: str, coverage: tuple[tuple[int, int], ...] | None = None) -> list[str]:
    """The distinct characters of ``text`` that need a glyph and that no range of ``coverage`` (default:
    the installed fonts) holds, in code point order; [] when the coverage is unknown."""
    coverage = font_coverage() if coverage is None else coverage
    if not coverage:
        return []
    starts = [start for start, _ in coverage]
    missing = []
    for ch in sorted(set(text)):
        code = ord(ch)
        if code < 0x80 or unicodedata.category(ch) in _NO_GLYPH:
            continue
        if any(lo <= code <= hi for lo, hi in _VARIATION_SELECTORS):
            continue
        i = bisect.bisect_right(starts, code) - 1
        if i < 0 or coverage[i][1] < code:
            missing.append(ch)
    return missing


def code_point(ch: str) -> str:
    return f"U+{ord(ch):04X}"


def describe(missing: list[str]) -> str:
    """'U+4E2D 中 (CJK UNIFIED IDEOGRAPH-4E2D), ...' for the first MAX_NAMED, then a count."""
    named = [f"{code_point(c)} {c} ({unicodedata.name(c, 'unnamed')})" for c in missing[:MAX_NAMED]]
    more = len(missing) - MAX_NAMED
    return ", ".join(named) + (f" and {more} more" if more > 0 else "")


def mark_unrenderable(html: str, coverage: tuple[tuple[int, int], ...] | None = None) -> tuple[str, list[str]]:
    """The HTML with each character no font covers written as its code point ("[U+10C80]") and a note
    at the top of the body naming them, and the list of those characters ([] leaves the HTML as it is)."""
    missing = uncovered_characters(html, coverage)
    if not missing:
        return html, []
    table = {ord(c): f"[{code_point(c)}]" for c in missing}
    marked = html.translate(table)
    listed = ", ".join(f"{code_point(c)} ({unicodedata.name(c, 'unnamed')})" for c in missing[:MAX_NAMED])
    if len(missing) > MAX_NAMED:
        listed += f" and {len(missing) - MAX_NAMED} more"
    note = ('<div class="pdf-font-note" style="border:1px solid #b45309;background:#fffbeb;padding:6px 10px;'
            'margin:0 0 10px;font-size:10px">'
            "This PDF cannot show some characters: no font installed on the computer that wrote it has them, "
            "so each is written as its code point, e.g. [U+4E2D]. The HTML report shows them. Characters: "
            f"{html_lib.escape(listed)}.</div>")
    m = _BODY_OPEN.search(marked)
    marked = marked[:m.end()] + note + marked[m.end():] if m else note + marked
    return marked, missing
