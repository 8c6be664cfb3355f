"""An answer file's bytes as text: the one place that guesses an input file's encoding.

Every format reads its bytes through here. ``guess`` is the forgiving reader (UTF-8, UTF-16 with or
without a mark, else Windows-1252) that spreadsheet exports and plain text need; JSON and JSON Lines are
read strictly (``decode``), and a bad byte there costs its record or line, never the file (``decode_lines``).
Fetched pages are another matter (a declared charset, then <meta>): ``fetching.extract.decode_text``.
"""
from __future__ import annotations

import re


def decode(data: bytes) -> str:
    """The file's text as UTF-8 (with or without a byte-order mark) or UTF-16 with a mark."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16")  # Excel's "Unicode text" export
    return data.decode("utf-8-sig")


def decode_lines(data: bytes) -> tuple[str, dict[int, str]]:
    """JSON Lines decoded line by line: a line that is not UTF-8 becomes empty and is named."""
    text_lines: list[str] = []
    bad: dict[int, str] = {}
    for lineno, raw in enumerate(data.split(b"\n"), start=1):
        try:
            text_lines.append(raw.decode("utf-8-sig" if lineno == 1 else "utf-8"))
        except UnicodeDecodeError as e:
            text_lines.append("")
            bad[lineno] = (f"not UTF-8 text (byte 0x{raw[e.start]:02x} at column {e.start + 1}; perhaps Latin-1 "
                           "or Windows-1252): this line is skipped, save the file as UTF-8 to audit it")
    return "\n".join(text_lines), bad


def decode_saved_page(data: bytes) -> str:
    """A saved HTML answer that is not UTF-8: a page saved in its own 8-bit encoding, read as browsers
    read Latin-1 (Windows-1252); a byte it lacks becomes U+FFFD, never a lost page."""
    return data.decode("cp1252", errors="replace")


def unreadable(data: bytes, e: UnicodeDecodeError) -> str:
    line = data.count(b"\n", 0, e.start) + 1
    byte = data[e.start] if e.start < len(data) else 0
    return (f"not UTF-8 text (byte 0x{byte:02x} on line {line}; perhaps Latin-1 or Windows-1252); "
            "save the file as UTF-8 and load it again")


def guess(data: bytes) -> tuple[str, str]:
    """A spreadsheet export's text and the encoding's name: UTF-8 (with or without a byte-order
    mark), UTF-16 (with a mark, or without one when every other byte is zero), else Windows-1252,
    which European spreadsheets still write. Raises UnicodeDecodeError when none fits."""
    if data.startswith((b"\xff\xfe", b"\xfe\xff")):
        return data.decode("utf-16"), "UTF-16"
    head = data[:2000]
    if len(head) >= 4 and head.count(0) * 3 > len(head):      # ASCII text in UTF-16 has every other byte zero
        zeros_odd = head[1::2].count(0) > head[0::2].count(0)
        try:
            return data.decode("utf-16-le" if zeros_odd else "utf-16-be"), "UTF-16 (no byte-order mark)"
        except UnicodeDecodeError:
            pass
    bom = data.startswith(b"\xef\xbb\xbf")
    body, name = (data[3:], "UTF-8 with a byte-order mark") if bom else (data, "UTF-8")
    try:
        return body.decode("utf-8"), name
    except UnicodeDecodeError as first:
        text = body.decode("utf-8", "surrogateescape")
        # UTF-8 elsewhere in the file (a mark, or characters of several bytes): a few bad bytes,
        # each costing its row only; else a Windows-1252 export
        if not bom and not _UTF8_CHAR.search(text):
            try:
                return data.decode("cp1252"), "Windows-1252 (not UTF-8)"
            except UnicodeDecodeError:
                pass
        line = data.count(b"\n", 0, first.start) + 1
        return text, f"{name}, with bytes that are not UTF-8 (the first on line {line}): their rows are skipped"


# a character of two or more UTF-8 bytes (a lone surrogate is a byte that was not UTF-8)
_UTF8_CHAR = re.compile("[\u0080-\udc7f\udd00-\U0010ffff]")
