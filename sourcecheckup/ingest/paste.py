"""A rich paste: the clipboard's HTML (a chat app's answer selected and copied) as the Markdown answer
the paste box shows, and what was found in it ("12 statements, 7 sources from the pasted page")."""
from __future__ import annotations

from dataclasses import dataclass, field

from lxml import etree

from .html import LinkFate, read_html, strip_clipboard_header
from .pages import answers_of
from .records import IngestResult, InputText


@dataclass
class PastedPage:
    markdown: str                      # what the paste box shows, and the next Audit reads
    result: IngestResult               # the answer as ingest read it (one Response, or why none)
    links: list[LinkFate] = field(default_factory=list)
    statements: int = 0                # the answer's statements to check (informative ones)
    behind_pills: int = 0              # sources a citation pill counts ("NHS +2") that the copy does not hold
    question: str | None = None        # the user's turn of a chat page copied whole

    @property
    def sources(self) -> int:
        return sum(len(r.citations) for r in self.result.responses)

    @property
    def left_out(self) -> list[LinkFate]:
        return [f for f in self.links if not f.kept]

    @property
    def summary(self) -> str:
        text = f"{self.statements} statements, {self.sources} sources from the pasted page"
        if self.left_out:
            text += f"; {len(self.left_out)} link(s) left out"
        if self.behind_pills:
            text += f"; {self.behind_pills} more source(s) behind citation pills were not copied"
        return text

    def left_out_lines(self) -> list[str]:
        return [f"{f.href[:120]}{f' ({f.text[:40]})' if f.text else ''}: {f.how.removeprefix('left out: ')}"
                for f in self.left_out]


def _cites_anything(html: str) -> bool:
    """Whether the HTML brings what its plain-text flavour lacks: a link, a citation pill or a <sup>."""
    try:
        root = etree.HTML(strip_clipboard_header(html))
    except (etree.ParserError, ValueError):
        return False
    return root is not None and bool(root.xpath("//a[@href] | //sup | //*[@data-pplx-citation-url]"))


def read_pasted_html(html: str, *, question: str | None = None, model: str | None = None) -> PastedPage | None:
    """The pasted answer and what was found in it; None when the HTML brings no link, marker or pill (then
    the clipboard's plain text is the better copy)."""
    from ..parse.builtin import BuiltinParser

    if not html or not _cites_anything(html):
        return None
    try:
        page, parsed = read_html(html, whole_page=True)
    except (ValueError, RecursionError):
        return None
    result, links = answers_of(page, parsed, InputText(text=html, name="pasted page", stem="pasted",
                                                        question=question, model=model))
    if not result.responses:
        return PastedPage("", result, links, 0)
    statements = sum(s.informative for s in BuiltinParser().parse_sync(result.responses[0]))
    return PastedPage(page.answers[0].markdown, result, links, statements, parsed.behind_pills,
                      page.answers[0].question)
