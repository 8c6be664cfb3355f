"""Text an HTML answer hides with CSS: what a reader of the page never sees is not audited.

Inline ``display:none`` and ``hidden`` were already left out (html.is_hidden); this reads the
page's own ``<style>`` rules (simple selectors: tag, .class, #id, tag.class, lists of them) and
inline styles for the other common ways to hide text: ``display:none``, ``visibility:hidden``,
``font-size:0``, ``opacity:0``, a zero-sized box with ``overflow:hidden``, positioning far off
screen, and text the colour of its background (white on white). Each such element is marked
``hidden`` so the answer's reader drops it like any hidden element. No full CSS engine: rules
inside ``@media`` and other at-rules, and complex selectors, are not applied.
"""
from __future__ import annotations

import re

from lxml import etree

MAX_STYLE_CHARS = 200_000          # stylesheet text read from one page (more is ignored)
MAX_RULES = 5_000                  # rules applied from one page

_COMMENT = re.compile(r"/\*.*?\*/", re.S)
_RULE = re.compile(r"([^{}@]+)\{([^{}]*)\}")
_AT_BLOCK = re.compile(r"@[^{};]*\{(?:[^{}]*\{[^{}]*\})*[^{}]*\}|@[^{};]*;")
_SIMPLE_SELECTOR = re.compile(r"^([a-z][a-z0-9]*)?((?:[.#][\w-]+)*)$", re.I)
_DECL = re.compile(r"([a-z-]+)\s*:\s*([^;]+)", re.I)
_LENGTH = re.compile(r"^(-?\d*\.?\d+)\s*(px|em|rem|pt|%|vw|vh)?$")
_NAMED = {"white": (255, 255, 255), "black": (0, 0, 0), "snow": (255, 250, 250), "ivory": (255, 255, 240),
          "whitesmoke": (245, 245, 245), "ghostwhite": (248, 248, 255)}


def _declarations(text: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for m in _DECL.finditer(text):
        out[m.group(1).lower()] = m.group(2).replace("!important", "").strip().lower()
    return out


def _rules(root: etree._Element) -> list[tuple[str | None, tuple[str, ...], str | None, dict[str, str]]]:
    """(tag, classes, id, declarations) of each simple rule of the page's <style> elements."""
    css = "".join(el.text or "" for el in root.iter("style"))[:MAX_STYLE_CHARS]
    css = _AT_BLOCK.sub(" ", _COMMENT.sub(" ", css))
    rules = []
    for m in _RULE.finditer(css):
        decls = _declarations(m.group(2))
        if not decls:
            continue
        for selector in m.group(1).split(","):
            s = _SIMPLE_SELECTOR.match(selector.strip())
            if not s or not selector.strip():
                continue
            parts = re.findall(r"[.#][\w-]+", s.group(2) or "")
            classes = tuple(p[1:] for p in parts if p[0] == ".")
            ids = [p[1:] for p in parts if p[0] == "#"]
            rules.append(((s.group(1) or "").lower() or None, classes, ids[0] if ids else None, decls))
            if len(rules) >= MAX_RULES:
                return rules
    return rules


class _Sheet:
    """The rules indexed by the tag, class or id each needs, so an element meets only its candidates."""

    def __init__(self, rules: list) -> None:
        self.by_key: dict[str, list[int]] = {}
        self.rules = rules
        for n, (tag, classes, ident, _) in enumerate(rules):
            key = f"#{ident}" if ident else f".{classes[0]}" if classes else tag or "*"
            self.by_key.setdefault(key, []).append(n)

    def __bool__(self) -> bool:
        return bool(self.rules)


def _style(el: etree._Element, sheet: _Sheet) -> dict[str, str]:
    """The declarations that apply to el: its matching rules in order, then its inline style."""
    tag = el.tag.lower()
    classes = set((el.get("class") or "").split())
    ident = el.get("id")
    out: dict[str, str] = {}
    if sheet:
        keys = [tag, "*", *(f".{c}" for c in classes), *([f"#{ident}"] if ident else [])]
        for n in sorted({n for k in keys for n in sheet.by_key.get(k, ())}):
            r_tag, r_classes, r_id, decls = sheet.rules[n]
            if (r_tag is None or r_tag == tag) and set(r_classes) <= classes and (r_id is None or r_id == ident):
                out.update(decls)
    out.update(_declarations(el.get("style") or ""))
    return out


def _length(value: str) -> tuple[float, str] | None:
    m = _LENGTH.match(value.strip())
    return (float(m.group(1)), m.group(2) or "px") if m else None


def _far_off(value: str | None) -> bool:
    got = _length(value) if value else None
    if got is None:
        return False
    number, unit = got
    return number <= (-500 if unit in ("px", "pt") else -50 if unit in ("em", "rem") else -90)


def _zero(value: str | None) -> bool:
    got = _length(value) if value else None
    return got is not None and got[0] == 0


def _colour(value: str | None) -> tuple[int, int, int] | None:
    if not value:
        return None
    value = value.strip()
    if value in _NAMED:
        return _NAMED[value]
    m = re.fullmatch(r"#([0-9a-f]{3}|[0-9a-f]{6})", value)
    if m:
        h = m.group(1)
        h = "".join(c * 2 for c in h) if len(h) == 3 else h
        return int(h[0:2], 16), int(h[2:4], 16), int(h[4:6], 16)
    m = re.fullmatch(r"rgba?\(\s*(\d+)\s*,\s*(\d+)\s*,\s*(\d+)\s*(?:,\s*[\d.]+\s*)?\)", value)
    return (int(m.group(1)), int(m.group(2)), int(m.group(3))) if m else None


def _background(style: dict[str, str]) -> tuple[int, int, int] | None:
    for key in ("background-color", "background"):
        if key in style:
            return _colour(style[key].split()[0]) if style[key] else None
    return None


def _close(a: tuple[int, int, int], b: tuple[int, int, int]) -> bool:
    return sum(abs(x - y) for x, y in zip(a, b)) <= 24


_INLINE_ALREADY = "display:none or visibility:hidden"


def hides(style: dict[str, str]) -> str | None:
    """Why these declarations hide their element's text, or None (the colour rule is separate)."""
    if style.get("display") == "none" or style.get("visibility") in ("hidden", "collapse"):
        return "display:none or visibility:hidden"
    if _zero(style.get("font-size")):
        return "font-size:0"
    if _zero(style.get("opacity")):
        return "opacity:0"
    if style.get("overflow") == "hidden" and any(_zero(style.get(k)) for k in ("width", "height", "max-height")):
        return "a zero-sized box"
    if any(_far_off(style.get(k)) for k in ("left", "top", "right", "text-indent", "margin-left", "margin-top")):
        return "positioned off screen"
    if style.get("color") == "transparent":
        return "transparent text"
    return None


def mark_hidden_text(root: etree._Element) -> int:
    """Mark (hidden="") every element whose text the page's CSS hides; the number marked."""
    rules = _Sheet(_rules(root))
    marked = 0
    # the background behind each element: inherited down the tree, white where none is declared
    backgrounds: dict[etree._Element, tuple[int, int, int]] = {}
    for el in root.iter():
        if not isinstance(el.tag, str):
            continue
        parent = el.getparent()
        style = _style(el, rules) if (rules or el.get("style")) else {}
        behind = _background(style) or (backgrounds.get(parent) if parent is not None else None) or (255, 255, 255)
        backgrounds[el] = behind
        if el.get("hidden") is not None or el.tag.lower() in ("style", "script", "head", "html"):
            continue
        why = hides(style)
        inline = hides(_declarations(el.get("style") or ""))
        if why is not None and inline == why == _INLINE_ALREADY:
            continue   # html.is_hidden already leaves inline display:none out, as it always did
        if why is not None and inline is None and any(":" in c for c in (el.get("class") or "").split()):
            continue   # "hidden md:block": shown on a wide screen by an @media rule, which is not read here
        colour = _colour(style.get("color"))
        if why is None and colour is not None and _close(colour, behind) and not _declares_colour_below(el, rules):
            why = "text the colour of its background"
        if why is not None:
            el.set("hidden", "")
            el.set("data-hidden-by", why)
            marked += 1
    return marked


def _declares_colour_below(el: etree._Element, rules: _Sheet) -> bool:
    """Whether something inside el sets its own colour or background (its text may then be seen)."""
    for child in el.iterdescendants():
        if isinstance(child.tag, str):
            style = _style(child, rules)
            if "color" in style or _background(style) is not None:
                return True
    return False
