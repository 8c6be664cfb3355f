"""Fetching: every cited URL becomes a Source with an explicit outcome (HTTP, browser, archive, source pack).

`base` holds what all fetchers share, the fetchers build on it, and this module (the factory,
`make_fetcher`) sits above them; nothing below imports it.
"""
from __future__ import annotations

from .archive import ArchiveFetcher
from .base import Fetcher, FetchOptions, fetch_settings, fetch_settings_fingerprint
from .browser import BrowserFetcher
from .http import HttpFetcher
from .sourcepack import SourcePackError, SourcePackFetcher

__all__ = ["Fetcher", "FetchOptions", "HttpFetcher", "SourcePackError", "fetch_settings",
           "fetch_settings_fingerprint", "make_fetcher"]


def make_fetcher(options: FetchOptions) -> Fetcher:
    """The fetcher a run uses: HTTP, the browser when options.browser is "auto" or "always",
    all behind a source pack when options.sources_dir is set."""
    if options.browser not in ("auto", "always", "never"):
        raise ValueError(f"browser must be auto, always or never, not {options.browser!r}")
    fetcher: Fetcher = HttpFetcher(options)
    if options.browser != "never":
        fetcher = BrowserFetcher(fetcher, options)  # type: ignore[arg-type]
    if options.archive_lookup or options.use_archive:
        fetcher = ArchiveFetcher(fetcher, options)
    if options.sources_dir is not None:
        fetcher = SourcePackFetcher(options.sources_dir, fetcher, options)
    return fetcher
