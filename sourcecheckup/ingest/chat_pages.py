"""What chat products' pages look like: where a saved page keeps its questions and answers, and which
links are citation pills. Rules as data, one row a product; the shapes come from kepano/defuddle's
extractors (src/extractors/chatgpt.ts, claude.ts, gemini.ts, perplexity.ts) and its test pages.
"""
from __future__ import annotations

from dataclasses import dataclass

from lxml import etree


def _has_class(name: str) -> str:
    return f"contains(concat(' ', normalize-space(@class), ' '), ' {name} ')"


@dataclass(frozen=True)
class ChatPage:
    product: str
    question: str     # XPath of a question (the user's turn)
    answer: str       # XPath of an answer's content (the outermost match counts)


CHAT_PAGES: tuple[ChatPage, ...] = (
    ChatPage("ChatGPT", "//*[@data-message-author-role='user']",
             "//*[@data-message-author-role='assistant']"),
    ChatPage("Claude", "//*[@data-testid='user-message']", f"//*[{_has_class('font-claude-response')}]"),
    ChatPage("Perplexity", f"//span[{_has_class('select-text')}][not(ancestor::aside)]",
             "//*[starts-with(@id, 'markdown-content-')]"),
    ChatPage("Gemini", f"//user-query//*[{_has_class('query-text')}]",
             f"//model-response//*[{_has_class('markdown')}]"),
)

# a link is a citation pill (the source's name beside the sentence, not words of the sentence) when it or
# an element just around it carries one of these
PILL_ATTRIBUTES = ("data-pplx-citation-url", "data-citation-url", "data-state")
PILL_CLASS_WORDS = ("citation", "source-pill", "source-chip")
AROUND = 2        # how many elements up a pill's wrapper may be


def is_pill(el: etree._Element) -> bool:
    """Whether a link is a citation pill: ChatGPT's ``<span data-state><a target=_blank>Site +2</a></span>``,
    Perplexity's ``data-pplx-citation-url``, or an element whose class names a citation."""
    text = " ".join(el.text_content().split())
    if text and text.rsplit(" ", 1)[-1].startswith("+") and text.rsplit(" ", 1)[-1][1:].isdigit():
        return True
    node: etree._Element | None = el
    for _ in range(AROUND + 1):
        if node is None or not isinstance(node.tag, str):
            break
        if any(node.get(a) is not None for a in PILL_ATTRIBUTES):
            return True
        classes = (node.get("class") or "").lower()
        if any(word in classes for word in PILL_CLASS_WORDS):
            return True
        node = node.getparent()
    return False
