"""The answers of an HTML page as every other format gives them: Responses, the records that could not be
read, and notes saying what the page held and what became of each of its links."""
from __future__ import annotations

from typing import Iterable

from ..models import SkippedRecord
from .answer import build_response
from .html import HtmlPage, LinkFate, ParsedPage, read_html
from .records import IngestError, IngestResult, InputText


def account_for_links(page: ParsedPage, citations: Iterable[str]) -> list[LinkFate]:
    """Every link of the page, kept (its URL is one of the answers' citations) or left out with why."""
    cited = set(citations)
    fates: list[LinkFate] = []
    for _el, (href, text, url, how) in page.links.items():
        if not how:
            how = "left out: not part of the answer text"
        if url is None and how.startswith("marker [") and "footnote" in how:
            fates.append(LinkFate(href, text, None, True, how))   # its footnote's own links are counted
            continue
        kept = url is not None and url in cited
        if url is not None and not kept:
            how = f"left out: {how} whose URL did not become a citation"
        fates.append(LinkFate(href, text, url, kept, how))
    return fates


MAX_LISTED = 20    # left-out links named one by one in the notes; the rest are counted


def link_notes(name: str, fates: list[LinkFate]) -> list[str]:
    """What became of the page's links, for the run's notes: a count, then every link left out and why."""
    kept = sum(f.kept for f in fates)
    notes = [f"{name}: {kept} of {len(fates)} link(s) kept as citations or markers"]
    left = [f for f in fates if not f.kept]
    for f in left[:MAX_LISTED]:
        words = f" ({f.text[:60]})" if f.text else ""
        notes.append(f"{name}: link {f.href[:200]}{words} {f.how}")
    if len(left) > MAX_LISTED:
        notes.append(f"{name}: and {len(left) - MAX_LISTED} more link(s) left out")
    return notes


def load_html(src: InputText, *, whole_page: bool = False) -> tuple[IngestResult, list[LinkFate]]:
    """The answers of an HTML page (a saved chat page: one per assistant turn, each with its question)
    and the fate of every link in it."""
    try:
        page, parsed = read_html(src.text, whole_page=whole_page)
    except ValueError as e:
        return IngestResult(skipped=[SkippedRecord(src.name, str(e))]), []
    except RecursionError:
        return IngestResult(skipped=[SkippedRecord(src.name, "the page nests its elements too deeply to read")]), []
    return answers_of(page, parsed, src)


def answers_of(page: HtmlPage, parsed: ParsedPage, src: InputText) -> tuple[IngestResult, list[LinkFate]]:
    """The Responses of a page read by :func:`read_html`, and the fate of every link in it."""
    result = IngestResult()
    extra = {k: v for k, v in (("page_title", page.title), ("chat_product", page.product)) if v}
    for n, answer in enumerate(page.answers, start=1):
        origin = f"{src.name} answer {n}" if len(page.answers) > 1 else src.name
        try:
            response = build_response(answer.markdown, [], origin=origin, rid=f"{src.stem}-{n}",
                                      question=answer.question or src.question, model=src.model or page.product,
                                      extra=extra)
        except IngestError as e:
            result.skipped.append(SkippedRecord(origin, str(e)))
            continue
        result.responses.append(response)
    if not page.answers:
        result.skipped.append(SkippedRecord(src.name, "no answer text in the page"))
    fates = account_for_links(parsed, [c for r in result.responses for c in r.citations])
    kind = f"a saved {page.product} page" if page.product else "a web page"
    result.notes.append(f"{src.name}: read as {kind}: {len(result.responses)} answer(s)")
    result.notes.extend(link_notes(src.name, fates))
    hidden = parsed.root.xpath("//*[@data-hidden-by]")
    if hidden:
        ways = ", ".join(sorted({str(el.get("data-hidden-by")) for el in hidden}))
        result.notes.append(f"{src.name}: {len(hidden)} element(s) whose text the page's CSS hides ({ways}) "
                            "left out of the answer")
    if parsed.behind_pills:
        result.notes.append(f"{src.name}: {parsed.behind_pills} more source(s) stand behind citation pills (\"+N\") "
                            "and are not in the page; open the answer in the chat app to see them")
    return result, fates
