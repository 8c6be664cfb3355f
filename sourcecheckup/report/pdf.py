"""PDF from the report's HTML: headless Chromium (Playwright ``page.pdf()``), else Qt's PDF writer.

The report is self-contained, so the page runs with JavaScript disabled and every network
request refused; page numbers come from Chromium's footer template and the table of
contents (with links and a PDF outline) from the HTML headings.
"""
from __future__ import annotations

import asyncio
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from ..fetching.browser import CHROMIUM_CANDIDATES, CHROMIUM_ENV, find_chromium
from ..registry import Registry
from .pdf_fonts import describe, mark_unrenderable

CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--host-resolver-rules=MAP * ~NOTFOUND"]
FOOTER = ('<div style="font-size:8px;width:100%;text-align:center;color:#555;">'
          'SourceCheckup report · page <span class="pageNumber"></span> of <span class="totalPages"></span></div>')
PDF_TIMEOUT_MS = 120_000
OUTLINE_MAX_HTML_CHARS = 1_000_000


class PdfError(RuntimeError):
    """No PDF engine could write the report."""


@dataclass(frozen=True)
class PdfResult:
    engine: str                      # "chromium" | a registered writer ("qt")
    problems: tuple[str, ...] = ()   # why a preferred engine was not used
    unrendered: tuple[str, ...] = ()  # characters no installed font has: written as their code points

    @property
    def warnings(self) -> list[str]:
        """What the user should be told about this PDF (the characters it could not show)."""
        if not self.unrendered:
            return []
        return [f"the PDF could not show {len(self.unrendered)} character(s) that no installed font has; "
                f"each is written as its code point (install the Noto fonts: scripts/setup.sh; the HTML "
                f"report shows them): {describe(list(self.unrendered))}"]


def _in_thread(fn: Callable[[], None]) -> None:
    """Run ``fn`` on a fresh thread: Playwright's sync API refuses a thread with a running event loop."""
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        fn()
        return
    errors: list[BaseException] = []

    def target() -> None:
        try:
            fn()
        except BaseException as exc:  # handed back to the caller's thread
            errors.append(exc)

    t = threading.Thread(target=target, name="sourcecheckup-pdf")
    t.start()
    t.join()
    if errors:
        raise errors[0]


def pdf_with_chromium(html: str, path: Path, executable: str) -> None:
    from playwright.sync_api import sync_playwright

    # Chromium builds the PDF outline (bookmarks) from the tagged structure, which doubles the time of a
    # long report; above the limit the PDF keeps the linked table of contents but has no bookmarks
    outline = len(html) <= OUTLINE_MAX_HTML_CHARS

    def render() -> None:
        with sync_playwright() as pw:  # Playwright gives the browser a fresh temporary profile
            browser = pw.chromium.launch(executable_path=executable, args=CHROMIUM_ARGS, headless=True)
            try:
                context = browser.new_context(java_script_enabled=False, offline=True)
                context.route("**/*", lambda route: route.abort())
                page = context.new_page()
                page.set_default_timeout(PDF_TIMEOUT_MS)
                page.emulate_media(media="print")
                page.set_content(html, wait_until="load")
                page.pdf(path=str(path), format="A4", print_background=True, prefer_css_page_size=True,
                         display_header_footer=True, header_template="<div></div>", footer_template=FOOTER,
                         margin={"top": "16mm", "bottom": "18mm", "left": "13mm", "right": "13mm"},
                         outline=outline, tagged=outline)
            finally:
                browser.close()

    _in_thread(render)


# Other PDF writers (the desktop app registers Qt's) are tried when Chromium is missing or fails.
# The engine itself imports no Qt: the app's ui.pdf_qt module registers its writer on import.
FALLBACK_WRITERS: Registry[Callable[[str, Path], None]] = Registry("PDF writer")


def register_pdf_writer(name: str, writer: Callable[[str, Path], None]) -> None:
    FALLBACK_WRITERS.register(name, writer)


def html_to_pdf(html: str, path: str | Path, *, engine: str = "auto") -> PdfResult:
    """Write ``html`` as a PDF with Chromium, else a registered writer; says which wrote it and why."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    problems: list[str] = []
    html, missing = mark_unrenderable(html)
    unrendered = tuple(missing)
    if engine in ("auto", "chromium"):
        exe = find_chromium()
        if exe:
            try:
                pdf_with_chromium(html, path, exe)
                return PdfResult("chromium", unrendered=unrendered)
            except Exception as exc:
                problems.append(f"Chromium ({exe}) failed: {type(exc).__name__}: {str(exc).splitlines()[0]}")
        else:
            named = os.environ.get(CHROMIUM_ENV)
            looked = f"${CHROMIUM_ENV} names {named}" if named else f"looked for {', '.join(CHROMIUM_CANDIDATES)}"
            problems.append(f"no Chromium found ({looked}; set ${CHROMIUM_ENV} to its path)")
    for name in FALLBACK_WRITERS:
        if engine not in ("auto", name) or (writer := FALLBACK_WRITERS.get(name)) is None:
            continue
        try:
            writer(html, path)
            return PdfResult(name, tuple(problems), unrendered)
        except Exception as exc:
            problems.append(f"{name} PDF writer failed: {type(exc).__name__}: {exc}")
    raise PdfError("could not write the PDF report: " + "; ".join(problems)
                   + ". Install Chromium (apt-get install chromium), export from the desktop app, "
                     "or export HTML and print it.")
