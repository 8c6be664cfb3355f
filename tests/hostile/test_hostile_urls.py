"""Hostile citations and addresses: every citation-like string is kept and fetched or refused with its
reason, however it is written (no scheme, another scheme, data:, about:, filesystem:), every private or
local address is refused before it is looked up (short numeric hosts, 6to4, IPv6 site-local), and a
lookalike host is shown with its punycode and a warning.

Each test drives the real part: the citation reader on real strings, the fetchers against the fixture
site on 127.0.0.1 (Chromium too where a browser mode is named), the real CLI and report.
"""
from __future__ import annotations

import ipaddress
import json

import pytest

from sourcecheckup.fetching import FetchOptions, HttpFetcher, make_fetcher
from sourcecheckup.fetching.browser import find_chromium
from sourcecheckup.models import FetchStatus
from tests.support.cli import sc_here as cli
from tests.support.hostile_pages import fetch_options

# (where it is written, as written, the citation it becomes, the fetch outcome, a word of the reason);
# None for the outcome: a public address, kept and never fetched here (nothing may leave the machine)
CITATION_FORMS = [
    ("list", "127.0.0.1:8809/x", "https://127.0.0.1:8809/x", "unsafe_url", "loopback"),
    ("list", "10.0.0.5/admin", "https://10.0.0.5/admin", "unsafe_url", "private network"),
    ("list", "[::1]:8809/x", "https://[::1]:8809/x", "unsafe_url", "loopback"),
    ("list", "localhost:8809/x", "https://localhost:8809/x", "unsafe_url", "loopback"),
    ("list", "//127.0.0.1/x", "https://127.0.0.1/x", "unsafe_url", "loopback"),
    ("list", "//example.com/x", "https://example.com/x", None, ""),
    ("list", "example.com/page", "https://example.com/page", None, ""),
    ("prose", "http://[fe80::1%25eth0]/x", "http://[fe80::1%25eth0]/x", "unsafe_url", "link-local"),
    ("prose", "gopher://127.0.0.1:70/1x", "gopher://127.0.0.1:70/1x", "unsafe_url", "'gopher' is not allowed"),
    ("prose", "ws://127.0.0.1:8809/socket", "ws://127.0.0.1:8809/socket", "unsafe_url", "'ws' is not allowed"),
    ("prose", "wss://example.org/socket", "wss://example.org/socket", "unsafe_url", "'wss' is not allowed"),
    ("prose", "sftp://files.example.org/x.pdf", "sftp://files.example.org/x.pdf", "unsafe_url", "'sftp' is not allowed"),
    ("prose", "smb://fileserver/share/x.pdf", "smb://fileserver/share/x.pdf", "unsafe_url", "'smb' is not allowed"),
    ("prose", "data:text/html;base64,PHNjcmlwdD4=", "data:text/html;base64,PHNjcmlwdD4=", "unsafe_url",
     "'data' is not allowed"),
]


async def test_every_citation_like_string_is_kept_and_fetched_or_refused_with_a_reason():
    from sourcecheckup.fetching import FetchOptions, HttpFetcher
    from sourcecheckup.ingest import load_text

    listed = [w for where, w, *_ in CITATION_FORMS if where == "list"]
    (from_list,) = load_text(json.dumps({"response": "Aspirin thins the blood [1].", "citations": listed})).responses
    prose = " ".join(f"Claim {i} is cited ({w})." for i, (where, w, *_) in enumerate(CITATION_FORMS) if where == "prose")
    (from_prose,) = load_text(prose).responses
    kept = list(from_list.citations) + list(from_prose.citations)
    assert kept == [c for _, _, c, _, _ in CITATION_FORMS]
    assert "unusable_citations" not in from_list.extra and "unusable_citations" not in from_prose.extra
    f = HttpFetcher(FetchOptions(timeout_s=5.0, connect_timeout_s=2.0))
    try:
        for _, written, citation, outcome, why in CITATION_FORMS:
            if outcome is None:
                continue
            src = await f.fetch(citation)   # refused before any connection or lookup (how soon: bench/time_caps.py)
            assert (src.status.value, written) == (outcome, written) and why in src.reason, (written, src.reason)
    finally:
        await f.aclose()


def test_a_citation_that_names_no_link_is_named_in_the_run_log(tmp_path):
    from sourcecheckup.ingest import load_text
    from sourcecheckup.pipeline import Audit
    from sourcecheckup.store import Store

    loaded = load_text(json.dumps({"response": "Aspirin thins the blood [1].",
                                   "citations": ["Harrison's Principles, 21st ed.", "https://example.org/a"]}))
    with Store(tmp_path / "a.db") as store:
        run_id = Audit(store).create(loaded.responses, loaded.skipped, "answers.json")
        log = [row["message"] for row in store.run_log(run_id)]
    assert any("not fetched: Harrison's Principles, 21st ed." in m for m in log), log


def test_filesystem_urls_stay_as_written_never_rewritten_to_the_url_inside():
    from sourcecheckup.ingest import load_text

    (r,) = load_text(json.dumps({"response": "Metformin is safe (see filesystem:http://127.0.0.1/x.html).",
                                 "citations": ["filesystem:http://127.0.0.1/y.html"]})).responses
    assert "http://127.0.0.1/x.html" not in r.citations and "http://127.0.0.1/y.html" not in r.citations
    assert "filesystem:http://127.0.0.1/y.html" in r.citations


@pytest.mark.parametrize("listed", [
    "data:text/html,<h1>Metformin, is safe; always</h1>",
    "data:text/html;base64,PGgxPk1ldGZvcm1pbjwvaDE+, https://example.org/a",
])
async def test_a_data_url_in_a_citation_list_is_kept_whole_and_refused_as_one(listed):
    from sourcecheckup.ingest import load_text

    (r,) = load_text(json.dumps({"response": "Metformin is safe [1].", "citations": listed})).responses
    data = [c for c in r.citations if c.startswith("data:")]
    # before the fix: cut at its first comma (or semicolon), the rest read as other citations
    assert data == [listed.split(", https://")[0]], r.citations
    assert len(r.citations) == (2 if "https://" in listed else 1), r.citations
    src = await HttpFetcher(fetch_options()).fetch(data[0])
    assert src.status is FetchStatus.UNSAFE_URL and "a data: URL carries its own content" in src.reason


SELF_CONTAINED = ["data:text/html,<h1>Metformin is safe in every patient</h1>", "about:blank",
                  "filesystem:http://127.0.0.1/temporary/page.html", "blob:http://127.0.0.1/1234-5678",
                  "view-source:http://127.0.0.1/"]


@pytest.mark.browser
@pytest.mark.skipif(find_chromium() is None, reason="Chromium is not installed")
@pytest.mark.parametrize("mode", ["always", "auto", "never"])
async def test_self_contained_urls_are_refused_in_every_browser_mode(mode):
    f = make_fetcher(fetch_options(browser=mode))
    try:
        got = [await f.fetch(url) for url in SELF_CONTAINED]
    finally:
        await f.aclose()
    for url, src in zip(SELF_CONTAINED, got):
        # before the fix (--browser always): "HTTP 200 OK, rendered in the browser", supported
        assert src.status is FetchStatus.UNSAFE_URL and not src.text, (url, src.status, src.reason)
        assert "is not allowed; only http and https are fetched" in src.reason
    assert "a data: URL carries its own content" in got[0].reason
    assert "an about: URL" in got[1].reason and "a filesystem: URL" in got[2].reason
    assert getattr(f, "launches", 0) == 0   # the browser never touched any of them


async def _fetch_local(url: str, **kw):
    from sourcecheckup.fetching import FetchOptions, HttpFetcher

    f = HttpFetcher(FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=6.0, connect_timeout_s=2.0, **kw))
    try:
        return await f.fetch(url)
    finally:
        await f.aclose()


@pytest.mark.parametrize("target", ["http://127.1:9/latest", "http://0x7f.1/latest", "http://0177.0.0.1/latest",
                                    "http://2130706433.0/x"])
async def test_a_redirect_to_a_short_numeric_host_is_unsafe_at_once_never_looked_up(site, target):
    from urllib.parse import quote

    src = await _fetch_local(f"{site}/redirect/to?u={quote(target, safe='')}")
    # refused by its form, never looked up (the system resolver took 11 s to say "dead"): bench/time_caps.py
    assert src.status.value == "unsafe_url", (src.status, src.reason)
    assert "IP address written in a short, octal or hex form" in src.reason and "redirected from" in src.reason


@pytest.mark.parametrize(("address", "embedded"), [("2002:c0a8:0101::1", "192.168.1.1"), ("2002:7f00:1::", "127.0.0.1"),
                                                   ("2002:a9fe:a9fe::", "169.254.169.254")])
async def test_a_6to4_address_embedding_a_private_ipv4_is_refused(site, address, embedded):
    src = await _fetch_local(f"{site}/redirect/to?u=http://[{address}]/latest/meta-data")
    assert src.status.value == "unsafe_url" and f"6to4 address of {embedded}" in src.reason, src.reason


def test_a_6to4_address_of_a_public_ipv4_stays_public():
    import ipaddress

    from sourcecheckup.fetching.safety import address_kind

    assert address_kind(ipaddress.ip_address("2002:0808:0808::1")) is None


@pytest.mark.parametrize("address", ["fec0::1", "fec0:0:0:ffff::1", "feff::1"])
async def test_ipv6_site_local_addresses_are_refused_like_unique_local_ones(address):
    from sourcecheckup.fetching.safety import UnsafeUrlError, address_kind, check_url

    assert address_kind(ipaddress.ip_address(address)) == "a site-local address"
    with pytest.raises(UnsafeUrlError, match="site-local"):
        await check_url(f"http://[{address}]/")
    src = await HttpFetcher(FetchOptions()).fetch(f"http://[{address}]:8809/x")
    assert src.status is FetchStatus.UNSAFE_URL and "site-local" in src.reason


def test_a_lookalike_host_is_shown_with_its_punycode_and_a_warning_in_show_and_the_html_report(tmp_path):
    from sourcecheckup.urls import host_note

    lookalike = "https://www.nh\u0455.uk/conditions/aspirin/"     # a Cyrillic ѕ
    pack = tmp_path / "pack"
    pack.mkdir()
    (pack / "a.txt").write_text("Aspirin thins the blood.")
    (pack / "sources.json").write_text(json.dumps({lookalike: "a.txt"}))
    answers = tmp_path / "a.jsonl"
    answers.write_text(json.dumps({"response": "Aspirin thins the blood [1].", "citations": [lookalike]}) + "\n")
    db = tmp_path / "a.db"
    p = cli("audit", str(answers), "--db", str(db), "--sources", str(pack), "--no-archive", "--browser", "never",
            "-q", "--no-references")
    assert p.returncode == 0, p.stderr
    warning = "host www.xn--nh-foc.uk; ⚠ lookalike host: 'nh\u0455' mixes Cyrillic and Latin letters"
    assert f"S1: {lookalike} [{warning}]" in cli("show", "--db", str(db)).stdout
    report = tmp_path / "r.html"
    assert cli("report", "--db", str(db), "-o", str(report)).returncode == 0
    assert warning.replace("'", "&#39;") in report.read_text(encoding="utf-8")
    assert host_note("www.nhs.uk") == ""                                      # ASCII: nothing to add
    assert host_note("пример.рф") == "host xn--e1afmkfd.xn--p1ai"             # one script: punycode, no warning


def test_the_apps_domain_column_shows_a_lookalike_hosts_punycode_and_warning():
    pytest.importorskip("PySide6")
    from PySide6.QtCore import Qt

    from sourcecheckup.views.sources import SourceSummary
    from ui.models import SourcesModel

    model = SourcesModel()
    model.set_rows([SourceSummary(url, domain, "", None, "not fetched yet", "", (), None, None)
                    for url, domain in (("https://nh\u0455.uk/a", "nh\u0455.uk"), ("https://nhs.uk/a", "nhs.uk"))])
    column = [name for name, _ in SourcesModel.columns].index("Domain")
    shown = [model.data(model.index(row, column), Qt.ItemDataRole.DisplayRole) for row in (0, 1)]
    assert shown == ["nh\u0455.uk [host xn--nh-foc.uk; ⚠ lookalike host: 'nh\u0455' mixes Cyrillic and Latin letters]",
                     "nhs.uk"]
