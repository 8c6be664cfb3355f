"""Answers copied from a web page: the clipboard's HTML, or a chat page saved as HTML.

The page is read with lxml (never with regular expressions) and written out as the Markdown that
:func:`.answer.build_response` reads, so a pasted answer and its Markdown form make the same
statements and the same statement-to-source links:

- an inline link keeps its words and cites its URL (``[words](url)``);
- a numbered marker (``<sup>1</sup>``, ``<a href="#fn1">[1]</a>``, a link whose text is "2") stays a
  marker bound to its URL: a marker that points into the page brings in the footnote or reference it
  points at (written out as ``[1]: ...``), a marker that links out cites its own URL;
- a citation pill (a source's name beside the sentence) becomes a bare marker, a link card (a link
  around a block: title, site, picture) is listed as a source;
- a reference list after "References" / "Sources" keeps its DOIs, PMIDs and written references;
- scripts, styles and hidden elements are dropped, and tracking redirects are unwrapped
  (:mod:`.redirects`).

Every link of the page is accounted for (:class:`LinkFate`): kept as a citation, or left out with a
reason the import reports (:mod:`.pages` makes the page's Responses and says which).
"""
from __future__ import annotations

import builtins
import re
from dataclasses import dataclass, field
from typing import Iterable
from urllib.parse import unquote, urljoin

import lxml.html
from lxml import etree

from ..urls import normalise_url
from .chat_pages import CHAT_PAGES, ChatPage, is_pill
from .citations import cites_something
from .hidden_text import mark_hidden_text
from .redirects import unwrap_redirect

# elements whose content is never part of the answer as a reader sees it
DROPPED_TAGS = frozenset("script style noscript template head svg button input select textarea iframe canvas "
                         "video audio object embed title meta link".split())
HIDDEN_CLASSES = frozenset({"sr-only", "visually-hidden", "screen-reader-text", "hidden-visually"})
BLOCK_TAGS = frozenset("p div section article main header footer aside nav blockquote figure figcaption "
                       "address details summary dl dt dd center body html".split())
HEADINGS = {f"h{n}": n for n in range(1, 7)}
LIST_TAGS = frozenset({"ul", "ol"})
# a link's text that is a citation number: "1", "[2]", "(3)", "1, 4", "2-3"
MARKER_TEXT = re.compile(r"^\s*[\[(]?\s*(\d{1,3}(?:\s*[,;\u2013-]\s*\d{1,3})*)\s*[\])]?\s*$")
SOURCES_WORDS = r"sources|references|citations|bibliography|works cited|footnotes|notes|learn more|read more|see also"
SOURCES_HEADING = re.compile(rf"^\s*(?:{SOURCES_WORDS})\s*:?\s*$", re.I)
# what may stand beside the links of a block that only lists sources: a label, numbers, separators
ONLY_LINKS_REST = re.compile(rf"^\s*(?:(?:{SOURCES_WORDS})\s*:?)?[\s\d.,;:|\u00b7\u2022()\[\]\u2013\u2014-]*$", re.I)
PARA, LINE = "\x00P", "\x00L"     # paragraph and line breaks while a block is written


@dataclass(frozen=True)
class LinkFate:
    """One link of the page and what became of it."""

    href: str                  # as written in the page
    text: str                  # its words ("" for a picture or a bare marker)
    url: str | None            # the citation it names (redirects unwrapped), None when it names none
    kept: bool                 # True when ``url`` is one of the answer's citations
    how: str                   # "inline link", "marker [2]", "footnote [1]", "link card", or why it was left out


@dataclass
class HtmlAnswer:
    """One answer of the page as Markdown, with its question when the page shows one."""

    markdown: str
    question: str | None = None


@dataclass
class HtmlPage:
    answers: list[HtmlAnswer]
    title: str | None
    product: str | None                       # "ChatGPT", ... when a saved chat page was recognised
    links: list[LinkFate] = field(default_factory=list)   # filled by account_for_links


def strip_clipboard_header(html: str) -> str:
    """The HTML of a Windows clipboard "HTML Format" (``Version:0.9 StartHTML:...``) without its header."""
    head = html.lstrip()[:400]
    if head.startswith("Version:") and "StartHTML:" in head:
        start = html.find("<")
        return html[start:] if start >= 0 else ""
    return html


def _tag(el: etree._Element) -> str | None:
    return el.tag.lower() if isinstance(el.tag, str) else None


def _words(text: str) -> str:
    return " ".join(text.split())


def is_hidden(el: etree._Element) -> bool:
    if el.get("hidden") is not None or (el.get("aria-hidden") == "true" and not el.xpath(".//a[@href]")):
        return True
    style = (el.get("style") or "").replace(" ", "").lower()
    if "display:none" in style or "visibility:hidden" in style:
        return True
    return bool(HIDDEN_CLASSES & set((el.get("class") or "").split()))


def dropped(el: etree._Element) -> bool:
    tag = _tag(el)
    return tag is None or tag in DROPPED_TAGS or is_hidden(el)


def _link_url(el: etree._Element) -> str | None:
    """The URL a link or a citation pill points at, as written."""
    if _tag(el) == "a" and el.get("href") is not None:
        return el.get("href", "").strip()
    for attr in ("data-pplx-citation-url", "data-citation-url"):
        if el.get(attr):
            return el.get(attr, "").strip()
    return None


class ParsedPage:
    """One parsed page: its ids (for in-page markers), its base address and the fate of every link."""

    def __init__(self, root: etree._Element) -> None:
        self.root = root
        self.ids: dict[str, etree._Element] = {}
        for el in root.iter():
            if not isinstance(el.tag, str):
                continue
            for key in (el.get("id"), el.get("name") if _tag(el) == "a" else None):
                if key and key not in self.ids:
                    self.ids[key] = el
        base = root.xpath("//base[@href]/@href") or root.xpath("//link[@rel='canonical']/@href") \
            or root.xpath("//meta[@property='og:url']/@content")
        self.base = str(base[0]).strip() if base else None
        self.links: dict[etree._Element, tuple[str, str, str | None, str]] = {}   # el -> (href, text, url, how)
        for el in root.iter():
            if isinstance(el.tag, str) and _link_url(el) is not None:
                self.links[el] = (_link_url(el) or "", _words(el.text_content()), None, "")
        self.consumed: set[etree._Element] = set()
        self.behind_pills = 0      # sources a pill counts ("+2") whose addresses the page does not hold

    def note(self, el: etree._Element, url: str | None, how: str) -> None:
        href, text, _, _ = self.links.get(el, (_link_url(el) or "", _words(el.text_content()), None, ""))
        self.links[el] = (href, text, url, how)

    def resolve(self, href: str) -> tuple[str | None, str]:
        """The citation a link's address names (a redirect unwrapped), or None and why not."""
        unwrapped, via = unwrap_redirect(href)
        address = unwrapped
        if not re.match(r"^[a-zA-Z][a-zA-Z0-9+.-]*:", address) and not address.startswith("//"):
            if re.match(r"^(?:www\.|doi:|10\.\d)", address, re.I):
                pass
            elif self.base:
                address = urljoin(self.base, address)
            else:
                return None, "a relative link with no page address to read it against"
        scheme = address.split(":", 1)[0].lower()
        if scheme in ("mailto", "tel", "javascript", "data", "about", "blob", "chrome", "file"):
            return None, f"not a web address ({scheme}:)"
        url = normalise_url(address)
        if url is None:
            return None, "not a web address"
        return url, f"unwrapped from a {via} redirect" if via else ""

    def target(self, href: str) -> etree._Element | None:
        """The element an in-page link points at: the footnote or reference around its anchor."""
        key = unquote(href[1:])
        el = self.ids.get(key)
        if el is None:
            return None
        # an empty anchor point (<a name="fn1"></a>, <span id="ref-1"/>) stands for the block around it
        while _tag(el) in ("a", "span", "sup", "b", "strong", "cite") and not _words(el.text_content()) \
                and el.getparent() is not None:
            el = el.getparent()
        return el


class _Writer:
    """Writes one answer's element as Markdown, recording what each link became."""

    def __init__(self, page: ParsedPage, follow_in_page: bool = True) -> None:
        self.page = page
        self.follow_in_page = follow_in_page     # False inside a footnote: its back-link leads into the text
        # a footnote's id(target), or ("url", url) for a marker that links out -> (label, its definition's text)
        self.definitions: dict[object, tuple[str, str]] = {}
        self.cards: list[str] = []
        self.used_labels: set[str] = set()

    # ------------------------------------------------------------------ the walk
    def markdown(self, *parts: etree._Element) -> str:
        """The answer written in ``parts`` (a turn may be written in several), then its footnotes and cards."""
        bodies = []
        for el in parts:
            out: list[str] = []
            self.children(el, out)
            bodies.append(_join(out))
        body = "\n\n".join(b for b in bodies if b)
        tail = [f"[{label}]: {line}" for label, line in
                sorted(self.definitions.values(), key=lambda d: (not d[0].isdigit(), int(d[0]) if d[0].isdigit() else 0))]
        written = body + "\n".join(tail)
        # a card for a source the answer already cites (Copilot's "Learn more" under its numbered links) adds nothing
        cards = [c for c in dict.fromkeys(self.cards) if c[c.rindex("](") + 2:-1].strip("<>") not in written]
        if cards:
            tail += ["", "Sources:", *(f"- {card}" for card in cards)]
        return re.sub(r"\n{3,}", "\n\n", body + ("\n\n" + "\n".join(tail) if tail else "")).strip()

    def children(self, el: etree._Element, out: list[str], pre: bool = False) -> None:
        if el.text:
            out.append(el.text if pre else _space(el.text))
        for child in el:
            self.node(child, out, pre)
            if child.tail:
                out.append(child.tail if pre else _space(child.tail))

    def node(self, el: etree._Element, out: list[str], pre: bool = False) -> None:
        tag = _tag(el)
        if tag is None:
            return                                   # a comment (<!--StartFragment-->) or processing instruction
        if dropped(el):
            self.drop(el, "inside a hidden element, a script or a button")
            return
        if el in self.page.consumed:
            return
        if _link_url(el) is not None:
            self.link(el, out)
            return
        if tag == "sup" and not el.xpath(".//a[@href]"):
            if m := MARKER_TEXT.match(_join(self.inline_text(el))):
                self.used_labels.update(re.findall(r"\d+", m.group(1)))   # they name a written reference list
                _attach(out, f" [{m.group(1)}]")
                return
        if tag in BLOCK_TAGS | {"li", "ul", "ol"} and self.only_links(el):
            for link in el.iter():
                if isinstance(link.tag, str) and _link_url(link) is not None and not self.inside_dropped(link, el):
                    self.card(link)
            return
        if (tag in HEADINGS or tag in BLOCK_TAGS) and SOURCES_HEADING.match(_words(el.text_content())) \
                and self.nothing_follows(el):
            return                                   # "References" over a list written out as footnotes or cards
        if tag == "br":
            out.append(LINE)
        elif tag == "hr":
            out.append(PARA)
        elif tag == "img":
            return
        elif tag in HEADINGS:
            text = _join(self.inline(el))
            out += [PARA, "#" * HEADINGS[tag] + " " + text, PARA]
        elif tag in LIST_TAGS:
            self.list(el, out)
        elif tag == "li":
            out += [LINE, "- "]
            self.children(el, out)
            out.append(LINE)
        elif tag == "pre":
            out += [PARA, "```", LINE, el.text_content().strip("\n"), LINE, "```", PARA]
        elif tag == "table":
            self.table(el, out)
        elif tag in BLOCK_TAGS:
            out.append(PARA)
            self.children(el, out, pre)
            out.append(PARA)
        else:
            self.children(el, out, pre)

    def inside_dropped(self, el: etree._Element, top: etree._Element) -> bool:
        """Whether ``el`` is hidden, or already written out as a footnote, below ``top``."""
        node = el
        while node is not None and node is not top:
            if dropped(node) or node in self.page.consumed:
                return True
            node = node.getparent()
        return False

    def only_links(self, el: etree._Element) -> bool:
        """Whether a block only lists sources (links, their numbers, a "Learn more" label): a list of cards,
        not sentences of the answer."""
        links = [a for a in el.iter() if isinstance(a.tag, str) and _link_url(a) is not None
                 and not (_link_url(a) or "").startswith("#") and not self.inside_dropped(a, el)]
        if not links:
            return False
        rest: list[str] = []

        def collect(node: etree._Element) -> None:
            if node.text:
                rest.append(node.text)
            for child in node:
                if isinstance(child.tag, str) and _link_url(child) is None and not dropped(child):
                    collect(child)
                if child.tail:
                    rest.append(child.tail)
        collect(el)
        return bool(ONLY_LINKS_REST.match(" ".join(rest)))

    def card(self, el: etree._Element) -> None:
        """A link that lists a source (a card, an entry of "Learn more"): a source of the answer, not its text."""
        url, why = self.page.resolve(_link_url(el) or "")
        if url is None:
            self.page.note(el, None, f"left out: {why}")
            return
        text = _words(_join(self.inline_text(el)))
        text = re.sub(r"^\d{1,3}[.)]?\s+", "", text)
        self.cards.append(f"[{_bracket_safe(text) or url}]({_md_url(url)})")
        self.page.note(el, url, "link card" + (f" ({why})" if why else ""))

    def inline(self, el: etree._Element) -> list[str]:
        out: list[str] = []
        self.children(el, out)
        return out

    def nothing_follows(self, heading: etree._Element) -> bool:
        """Whether a "References" heading heads nothing left to write (its list became footnotes)."""
        sibling = heading.getnext()
        while sibling is not None and not isinstance(sibling.tag, str):
            sibling = sibling.getnext()
        if sibling is None:
            return True
        if sibling in self.page.consumed or (isinstance(sibling.tag, str) and self.only_links(sibling)):
            return True
        items = [li for li in sibling.iter() if _tag(li) == "li"]
        return bool(items) and all(li in self.page.consumed for li in items)

    def list(self, el: etree._Element, out: list[str]) -> None:
        ordered = _tag(el) == "ol"
        try:
            n = int(el.get("start", "1"))
        except ValueError:
            n = 1
        out.append(PARA)
        for child in el:
            if _tag(child) != "li":
                self.node(child, out)
                continue
            if dropped(child):
                self.drop(child, "inside a hidden element")
                continue
            if child in self.page.consumed:
                n += 1
                continue
            try:
                n = int(child.get("value", n))
            except ValueError:
                pass
            out += [LINE, f"{n}. " if ordered else "- "]
            self.children(child, out)
            out.append(LINE)
            n += 1
        out.append(PARA)

    def table(self, el: etree._Element, out: builtins.list[str]) -> None:
        rows = [r for r in el.iter() if _tag(r) == "tr"]
        out.append(PARA)
        for i, row in enumerate(rows):
            cells = [_join(self.inline(c)).replace("|", "/").replace("\n", " ") for c in row if _tag(c) in ("td", "th")]
            out += [LINE, "| " + " | ".join(cells) + " |", LINE]
            if i == 0:
                out += ["| " + " | ".join("---" for _ in cells) + " |", LINE]
        out.append(PARA)

    # ------------------------------------------------------------------ links
    def drop(self, el: etree._Element, why: str) -> None:
        for link in [el, *el.iter()]:
            if isinstance(link.tag, str) and _link_url(link) is not None and link in self.page.links \
                    and not self.page.links[link][3]:
                self.page.note(link, None, f"left out: {why}")

    def link(self, el: etree._Element, out: builtins.list[str]) -> None:
        href = _link_url(el) or ""
        text = _words(_join(self.inline_text(el)))
        if href.startswith("#"):
            if self.follow_in_page:
                self.in_page(el, href, text, out)
            else:
                self.page.note(el, None, "left out: a link inside a footnote back into the page")
            return
        url, why = self.page.resolve(href)
        if url is None:
            self.page.note(el, None, f"left out: {why}")
            out.append(_space(text))
            return
        via = f" ({why})" if why else ""
        marker = MARKER_TEXT.match(text) if text else None
        if marker or is_pill(el):
            label = self.marker_label(url, marker.group(1) if marker else None)
            _attach(out, f" [{label}]")
            more = re.search(r"\+(\d{1,2})$", text)     # "NHS +2": the pill stands for more sources than it links
            if more:
                self.page.behind_pills += int(more.group(1))
                via += f"; the pill names {more.group(1)} more source(s) the copied page does not hold"
            self.page.note(el, url, f"marker [{label}]" + via)
            for inner in el.iterdescendants():   # the pill's own <a> around the site's name
                if isinstance(inner.tag, str) and _link_url(inner) is not None:
                    self.page.note(inner, self.page.resolve(_link_url(inner) or "")[0], "inside a citation pill")
            return
        if el.xpath(".//*[self::div or self::p or self::img or self::h1 or self::h2 or self::h3 or self::h4 "
                    "or self::li or self::picture]"):
            self.card(el)
            return
        self.page.note(el, url, ("inline link" if self.follow_in_page else "a link in a footnote") + via)
        if not self.follow_in_page and (normalise_url(text) == url or (text.isdigit() and url.rstrip("/").endswith(text))):
            out.append(text)       # "doi:10.1056/..." or a PMID written as its own link: a reference as written
            return
        out.append(f"[{_bracket_safe(text)}]({_md_url(url)})" if text else f" <{url}>")

    def inline_text(self, el: etree._Element) -> builtins.list[str]:
        """A link's own words: its visible text, hidden parts and pictures left out."""
        out: list[str] = []
        if el.text:
            out.append(_space(el.text))
        for child in el:
            if not dropped(child) and _tag(child) != "img":
                block = _tag(child) in BLOCK_TAGS or _tag(child) in HEADINGS or _tag(child) == "li"
                out += [" "] * block + self.inline_text(child) + [" "] * block
            if child.tail:
                out.append(_space(child.tail))
        return out

    def in_page(self, el: etree._Element, href: str, text: str, out: builtins.list[str]) -> None:
        target = self.page.target(href)
        if target is None:
            self.page.note(el, None, f"left out: it points at {href} in the page, which is not there")
            if text and not MARKER_TEXT.match(text):
                out.append(text)
            return
        key = id(target)
        if key not in self.definitions:
            if el in target.iter() or any(a is target for a in el.iterancestors()):
                self.page.note(el, None, "left out: a link to itself")
                return
            line = self.footnote_line(target)
            if not line:
                self.page.note(el, None, f"left out: it points at {href}, which names no source")
                if text and not MARKER_TEXT.match(text):
                    out.append(text)
                return
            marker = MARKER_TEXT.match(text)
            wanted = marker.group(1) if marker and marker.group(1).isdigit() else None
            label = wanted if wanted and wanted not in self.used_labels else self.free_label()
            self.used_labels.add(label)
            self.definitions[key] = (label, line)
            self.page.consumed.add(target)
        label = self.definitions[key][0]
        self.page.note(el, None, f"marker [{label}] for the footnote at {href}")
        _attach(out, f" [{label}]")

    def marker_label(self, url: str, wanted: str | None) -> str:
        """The label of a marker that links out: the number it shows when that number is free (or already
        stands for this URL), else the next free one; its definition ``[n]: url`` follows the answer."""
        key = ("url", url)
        if key in self.definitions:
            return self.definitions[key][0]
        label = wanted if wanted and wanted.isdigit() and wanted not in self.used_labels else self.free_label()
        self.used_labels.add(label)
        self.definitions[key] = (label, _md_url(url))
        return label

    def free_label(self) -> str:
        n = 1
        while str(n) in self.used_labels:
            n += 1
        return str(n)

    def footnote_line(self, target: etree._Element) -> str:
        """A footnote or reference as one line of Markdown (links written ``[words](url)``), or "" when it
        names no source (a back-link, a note without a reference)."""
        sub = _Writer(self.page, follow_in_page=False)
        out: list[str] = []
        sub.children(target, out)
        line = _words(_join(out).replace("\n", " "))
        line = re.sub(r"^\s*(?:\^|\d{1,3}[.)]?\s+(?=\S))", "", line) if line else line
        return line if cites_something(line) else ""


_STOP = re.compile(r"([.!?])([\"'\u201d\u2019)]?)(\s*)$")


def marker_before_stop(text: str, marker: str) -> str:
    """``text`` with a citation marker added where a Markdown answer writes it: before the sentence's full
    stop ("vitamin D [1]." rather than "vitamin D. [1]", which a sentence splitter may read as an initial)."""
    if m := _STOP.search(text):
        before = text[:m.start()]
        return before + (marker.lstrip() if before.endswith(" ") else marker) + m.group(1) + m.group(2) + m.group(3)
    return text + (marker.lstrip() if text.endswith(" ") else marker)


def _attach(out: list[str], marker: str) -> None:
    """Write a marker after the words before it, inside their sentence's full stop."""
    for k in range(len(out) - 1, -1, -1):
        if out[k] in (PARA, LINE):
            break
        if out[k].strip():
            out[k] = marker_before_stop(out[k], marker)
            return
    out.append(marker)


def _space(text: str) -> str:
    return re.sub(r"[ \t\r\n\f\v\u00a0\u200b]+", " ", text)


def _md_url(url: str) -> str:
    """A link destination as Markdown writes it: in angle brackets only when it needs them."""
    return url if re.fullmatch(r"[^\s()<>]*(?:\([^\s()<>]*\)[^\s()<>]*)*", url) else f"<{url}>"


def _bracket_safe(text: str) -> str:
    return text.replace("[", "(").replace("]", ")")


def _join(pieces: Iterable[str]) -> str:
    """The written pieces as text: paragraph and line breaks resolved, spaces tidied line by line."""
    text = re.sub(r"\x00L[ ]*(?=\x00L)", "", "".join(pieces))      # list items: one line break between them
    text = text.replace(PARA, "\n\n").replace(LINE, "\n")
    lines = [re.sub(r" {2,}", " ", line).strip() for line in text.split("\n")]
    text = "\n".join(lines)
    text = re.sub(r"\n{3,}", "\n\n", text)
    # one space before a marker, as Markdown answers write it
    text = re.sub(r"(\S) +(\[\d{1,3}\](?!\())", r"\1 \2", text)
    return text.strip()


def _parse(html: str) -> etree._Element:
    html = strip_clipboard_header(html)
    if not html.strip():
        raise ValueError("the page is empty")
    try:
        root = lxml.html.document_fromstring(html)
    except (etree.ParserError, ValueError) as e:
        raise ValueError(f"the page could not be read as HTML ({e})") from None
    mark_hidden_text(root)   # text its CSS hides (a <style> class, font-size:0, white on white) is no answer
    return root


def _page_title(root: etree._Element) -> str | None:
    titles = root.xpath("//title")
    return _words(titles[0].text_content()) or None if titles else None


def _chat_turns(page: ParsedPage, rule: ChatPage) -> list[tuple[etree._Element | None, list[etree._Element]]]:
    """The (question, answer elements) turns of a saved chat page, in page order."""
    questions = set(page.root.xpath(rule.question))
    answers = page.root.xpath(rule.answer)
    chosen = set(answers)
    answers = [a for a in answers if not any(up in chosen for up in a.iterancestors())]
    wanted = set(answers)
    turns: list[tuple[etree._Element | None, list[etree._Element]]] = []
    last_question: etree._Element | None = None
    asked_since_answer = True
    for el in page.root.iter():
        if el in questions:
            last_question, asked_since_answer = el, True
        elif el in wanted:
            if turns and not asked_since_answer:
                turns[-1][1].append(el)                   # one turn written in several parts
            else:
                turns.append((last_question, [el]))
            asked_since_answer = False
    return turns


def _take_user_turns(root: etree._Element) -> tuple[str | None, str | None]:
    """A chat page copied whole carries the user's own messages: they are the question, not claims of the
    answer. Takes them out of the tree; their words (several joined by " / ") and the product."""
    for rule in CHAT_PAGES:
        found = [el for el in root.xpath(rule.question) if isinstance(el.tag, str)]
        if not found:
            continue
        asked = list(dict.fromkeys(w for w in (_words(el.text_content()) for el in found) if w))
        for el in found:
            parent = el.getparent()
            if parent is None:
                continue
            if el.tail:    # the text after the element stays where it was
                prev = el.getprevious()
                if prev is not None:
                    prev.tail = (prev.tail or "") + el.tail
                else:
                    parent.text = (parent.text or "") + el.tail
            parent.remove(el)
        return " / ".join(asked) or None, rule.product
    return None, None


def read_html(html: str, *, whole_page: bool = False) -> tuple[HtmlPage, ParsedPage]:
    """The answers of a page: one per assistant turn of a recognised saved chat page, else the page's
    body as one answer. ``whole_page`` (a paste) always reads the whole fragment as one answer; the user's
    turns of a chat page copied whole are its question."""
    root = _parse(html)
    asked, product = _take_user_turns(root) if whole_page else (None, None)
    page = ParsedPage(root)
    title = _page_title(root)
    if not whole_page:
        for rule in CHAT_PAGES:
            turns = _chat_turns(page, rule)
            if not turns:
                continue
            answers: list[HtmlAnswer] = []
            inside: set[etree._Element] = set()
            for question, parts in turns:
                text = _Writer(page).markdown(*parts)
                asked = _words(question.text_content()) if question is not None else None
                answers.append(HtmlAnswer(text, asked or None))
                for p in parts:
                    inside.update(p.iter())
            for el, (_href, _text, _url, how) in list(page.links.items()):
                if not how and el not in inside:
                    page.note(el, None, "left out: outside the answers (the page's navigation, sidebar or questions)")
            return HtmlPage(answers, title, rule.product), page
    body = root.find("body")
    writer = _Writer(page)
    text = writer.markdown(body if body is not None else root)
    return HtmlPage([HtmlAnswer(text, asked)] if text else [], title, product), page
