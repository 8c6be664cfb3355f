"""Tracking redirects around a cited link, unwrapped to the page they lead to.

A link copied from a search result, a Facebook post or an Outlook e-mail points at the tracker, which
carries the real address in its query. Each row is a tracker: its host (or the end of its host), its
path ("" for any) and the query keys that may hold the address. A row is added with an example test.
"""
from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import parse_qs, urlsplit

MAX_HOPS = 3   # a redirect inside a redirect (an Outlook safelink around a Google result) is unwrapped too


@dataclass(frozen=True)
class Tracker:
    name: str
    host: str            # the host, or its end after a dot ("safelinks.protection.outlook.com")
    path: str            # the path it answers on ("" for any)
    keys: tuple[str, ...]


TRACKERS: tuple[Tracker, ...] = (
    Tracker("google.com", "google.com", "/url", ("q", "url")),
    Tracker("l.facebook.com", "l.facebook.com", "/l.php", ("u",)),
    Tracker("lm.facebook.com", "lm.facebook.com", "/l.php", ("u",)),
    Tracker("l.messenger.com", "l.messenger.com", "/l.php", ("u",)),
    Tracker("Outlook safelinks", "safelinks.protection.outlook.com", "", ("url",)),
    Tracker("l.instagram.com", "l.instagram.com", "", ("u",)),
    Tracker("YouTube", "youtube.com", "/redirect", ("q",)),
)


def _matches(tracker: Tracker, host: str, path: str) -> bool:
    host = host.lower()
    bare = host[4:] if host.startswith("www.") else host
    on_host = bare == tracker.host or host.endswith("." + tracker.host) or \
        (tracker.host == "google.com" and bare.startswith("google.") and bare.count(".") <= 2)
    return on_host and (not tracker.path or path == tracker.path)


def unwrap_redirect(href: str) -> tuple[str, str | None]:
    """The address a tracking link leads to and the tracker's name; the link itself and None otherwise.

    >>> unwrap_redirect("https://www.google.com/url?q=https://www.nhs.uk/&sa=D")
    ('https://www.nhs.uk/', 'google.com')
    """
    via: str | None = None
    for _ in range(MAX_HOPS):
        try:
            parts = urlsplit(href.strip())
            host = parts.hostname or ""
        except ValueError:
            break
        tracker = next((t for t in TRACKERS if _matches(t, host, parts.path)), None)
        if tracker is None:
            break
        query = parse_qs(parts.query)
        target = next((query[k][0] for k in tracker.keys if query.get(k)), None)
        if not target or not target.lower().startswith(("http://", "https://")):
            break
        href, via = target, via or tracker.name
    return href, via
