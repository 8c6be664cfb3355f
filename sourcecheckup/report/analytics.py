"""Which sources a run cites: domains, domain types, countries, fetch outcome rates and flagged sources.

Counts are per citation (one cited URL in one response), as the study counted them, so a
domain cited by 40 answers weighs 40 times. Lists (dead links, changed and flagged sources)
name each URL once. Country comes from the top-level domain; generic TLDs (.com, .org,
.gov, .edu, .net, .info) are counted as the United States, as the study did without whois.
With a whois lookup (off by default; see :mod:`whois`) the registrant country wins where
whois answered, and each domain says which rule decided it.
"""
from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from ..metrics import Metric, ResponseAssessment, proportion_of
from ..models import FetchStatus, Source
from ..references.model import is_reference_key
from ..store import RunData
from ..urls import domain_of

if TYPE_CHECKING:
    from .whois import WhoisAnswer

TOP_DOMAINS = 10
DOMAIN_TYPES = ("gov", "org", "edu", "com", "other")
# second-level labels under a country code that mean the same as a generic TLD (nhs.uk stays 'other')
_SECOND_LEVEL = {"gov": "gov", "govt": "gov", "gouv": "gov", "gob": "gov", "org": "org", "edu": "edu",
                 "ac": "edu", "com": "com", "co": "com"}
# (unreachable last: each rate's interval is seeded by its place, and the earlier ones keep theirs)
RATE_OUTCOMES = (FetchStatus.PAYWALLED, FetchStatus.ABSTRACT_ONLY, FetchStatus.DEAD, FetchStatus.BLOCKED,
                 FetchStatus.UNREACHABLE)
COUNTRY_NOTE = ("Country is read from the top-level domain; .com, .org, .gov, .edu, .net and .info are "
                "counted as United States, as the SourceCheckup study did when whois gave no country. "
                "Domains under other generic TLDs are 'unknown'.")
WHOIS_COUNTRY_NOTE = ("Country by whois (registrant country) where it answered, else by top-level domain: "
                      "whois gave a country for {answered} of {asked} domains asked (server {server}). "
                      "For the rest, .com, .org, .gov, .edu, .net and .info are counted as United States, "
                      "as the SourceCheckup study did; other generic TLDs are 'unknown'.")


@lru_cache(maxsize=1)
def _tld_table() -> tuple[frozenset[str], Mapping[str, str]]:
    from ..resources import resources_dir

    data = json.loads((resources_dir() / "analytics" / "tld_countries.json").read_text(encoding="utf-8"))
    return frozenset(data["us_generic"]), dict(data["country_codes"])


def domain_type(domain: str) -> str:
    """'gov' | 'org' | 'edu' | 'com' | 'other', from the TLD or a country's second-level label."""
    labels = [p for p in domain.lower().rstrip(".").split(".") if p]
    if not labels:
        return "other"
    if labels[-1] in ("gov", "org", "edu", "com", "mil"):
        return "gov" if labels[-1] == "mil" else labels[-1]
    if len(labels) >= 3 and len(labels[-1]) == 2 and labels[-2] in _SECOND_LEVEL:
        return _SECOND_LEVEL[labels[-2]]
    return "other"


def country_of(domain: str) -> str:
    """A country name from the TLD, 'United States' for the generic TLDs the study counted so, else 'unknown'."""
    us_generic, codes = _tld_table()
    tld = domain.lower().rstrip(".").rsplit(".", 1)[-1] if domain else ""
    if tld in us_generic:
        return "United States"
    return codes.get(tld, "unknown")


def country_name(code: str) -> str:
    """An ISO 3166 alpha-2 code as a country name where the TLD table knows it ('GB' -> 'United Kingdom'),
    else the code itself, so the same country reads the same whichever rule decided it."""
    _, codes = _tld_table()
    low = code.lower()
    if low == "us":
        return "United States"
    return codes.get(low) or codes.get("uk" if low == "gb" else low) or code.upper()


def archive_lookups(data: RunData, urls: set[str]) -> dict[str, Any]:
    """What the web-archive lookups of this run's dead links did: off, found, none found, or failed
    (with the recorded reason), so a report never blames the option for a lookup that failed."""
    tally = ArchiveTally(data.run.config)
    for url in sorted(urls):
        tally.add(url, data.sources.get(url))
    return tally.result()


class ArchiveTally:
    """:func:`archive_lookups` one source at a time (URLs added in sorted order)."""

    def __init__(self, config: Any) -> None:
        fetch = config.get("fetch") if isinstance(config, Mapping) else None
        self.enabled = bool(fetch.get("archive_lookup")) if isinstance(fetch, Mapping) else False
        self.found = self.none = 0
        self.failed: list[dict[str, str]] = []

    def add(self, url: str, row: Any) -> None:
        meta = row.source.meta if row is not None and isinstance(row.source.meta, Mapping) else {}
        arch = meta.get("archive")
        if not isinstance(arch, Mapping):
            return
        if arch.get("error"):
            self.failed.append({"url": url, "error": str(arch["error"])})
        elif arch.get("snapshot_url") or arch.get("url"):
            self.found += 1
        else:
            self.none += 1

    def result(self) -> dict[str, Any]:
        return {"enabled": self.enabled, "looked_up": self.found + self.none + len(self.failed), "found": self.found,
                "none_found": self.none, "failed": self.failed}


def archive_info(source: Source) -> dict[str, Any] | None:
    """The archived copy recorded for a source (by the archive fetcher), or None. Read defensively."""
    meta = source.meta if isinstance(source.meta, Mapping) else {}
    arch = meta.get("archive")
    url = ts = date = None
    if isinstance(arch, Mapping):
        url = arch.get("snapshot_url") or arch.get("url")
        ts = arch.get("timestamp")
        date = arch.get("date")
    url = url or meta.get("archive_url")
    ts = ts or meta.get("archive_timestamp")
    if not isinstance(url, str) or not url:
        return None
    ts = str(ts) if ts is not None else ""
    if not date and len(ts) >= 8 and ts[:8].isdigit():
        date = f"{ts[0:4]}-{ts[4:6]}-{ts[6:8]}"
    return {"archive_url": url, "timestamp": ts, "date": str(date or "")}


WRITTEN_REFERENCE = "written_reference"   # a Citation of a written reference with no URL (no link outcome)


@dataclass(frozen=True, slots=True)   # a large run counts hundreds of thousands
class Citation:
    """One cited URL in one response, with what its fetch found."""

    model: str
    url: str
    domain: str
    status: str          # FetchStatus value, "not_fetched" or WRITTEN_REFERENCE


def citation_status(url: str, row: Any) -> str:
    """A citation's outcome: its fetch status, "not_fetched", or WRITTEN_REFERENCE (no link to have one)."""
    if is_reference_key(url):
        return WRITTEN_REFERENCE
    return row.source.status.value if row is not None else "not_fetched"


def citations(data: RunData) -> list[Citation]:
    out: list[Citation] = []
    for resp in data.responses:
        model = resp.response.model or "(none)"
        for url in resp.response.citations:
            row = data.sources.get(url)
            out.append(Citation(model, url, domain_of(url), citation_status(url, row)))
    return out


def _total(cites: Mapping[Citation, int]) -> int:
    return sum(cites.values())


def _shares(counter: Counter[str], keys: Sequence[str]) -> dict[str, dict[str, Any]]:
    total = sum(counter.values())
    return {k: {"count": counter.get(k, 0), "share": (counter.get(k, 0) / total) if total else None}
            for k in keys}


def _rate(cites: Mapping[Citation, int], outcome: FetchStatus, seed: int) -> dict[str, Any]:
    # a citation whose source is not fetched yet is pending, and a written reference without a URL is no link:
    # neither is in a link outcome's denominator
    n = sum(w for c, w in cites.items() if c.status not in ("not_fetched", WRITTEN_REFERENCE))
    k = sum(w for c, w in cites.items() if c.status == outcome.value)
    m: Metric = proportion_of(k, n)
    return m.as_dict()


def _countries_by_domain(domains: Sequence[str],
                         lookup: Callable[[Sequence[str]], Mapping[str, "WhoisAnswer"]] | None
                         ) -> dict[str, dict[str, Any]]:
    """domain -> {country, rule ('whois' | 'tld'), ...}: whois where it answered, else the TLD rule."""
    answers = lookup(domains) if lookup is not None else {}
    out: dict[str, dict[str, Any]] = {}
    for d in domains:
        ans = answers.get(d)
        if ans is not None and ans.country:
            out[d] = {"domain": d, "country": country_name(ans.country), "rule": "whois", "code": ans.country,
                      "whois_server": ans.server}
        else:
            row: dict[str, Any] = {"domain": d, "country": country_of(d), "rule": "tld"}
            if ans is not None:
                row["whois_problem"] = ans.problem
            out[d] = row
    return out


def analyse_sources(data: RunData, assessed: Sequence[ResponseAssessment] | None = None, *,
                    seed: int = 0, top: int = TOP_DOMAINS,
                    country_lookup: Callable[[Sequence[str]], Mapping[str, "WhoisAnswer"]] | None = None,
                    whois_server: str | None = None) -> dict[str, Any]:
    """The Sources section of the report as a JSON-ready dict. ``country_lookup`` (whois) is called once
    with every cited domain; without it, country comes from the top-level domain alone."""
    return analyse_citations(Counter(citations(data)), lambda urls: data.sources, data.run.config, seed=seed,
                             top=top, country_lookup=country_lookup, whois_server=whois_server)


def analyse_citations(cites: Mapping[Citation, int], sources_for: Callable[[list[str]], Mapping[str, Any]],
                      config: Any, *, seed: int = 0, top: int = TOP_DOMAINS,
                      country_lookup: Callable[[Sequence[str]], Mapping[str, "WhoisAnswer"]] | None = None,
                      whois_server: str | None = None) -> dict[str, Any]:
    """:func:`analyse_sources` from the run's citations counted (citation -> how often it occurs), which a
    large run adds up a page at a time; ``sources_for(urls)`` gives the SourceRow of each fetched URL."""
    total = _total(cites)
    models = sorted({c.model for c in cites})
    by_model: dict[str, Any] = {}
    for model in models:
        mine = {c: w for c, w in cites.items() if c.model == model}
        n_mine = _total(mine)
        domains: Counter[str] = Counter()
        types: Counter[str] = Counter()
        for c, w in mine.items():
            domains[c.domain] += w
            types[domain_type(c.domain)] += w
        by_model[model] = {
            "citations": n_mine,
            "top_domains": [{"domain": d, "count": n, "share": n / n_mine}
                            for d, n in sorted(domains.items(), key=lambda kv: (-kv[1], kv[0]))[:top]],
            "domain_types": _shares(types, DOMAIN_TYPES),
            "rates": {o.value: _rate(mine, o, seed + i) for i, o in enumerate(RATE_OUTCOMES)},
        }
    by_domain = _countries_by_domain(sorted({c.domain for c in cites}), country_lookup)
    countries: Counter[str] = Counter()
    all_domains: Counter[str] = Counter()
    all_types: Counter[str] = Counter()
    for c, w in cites.items():
        countries[by_domain[c.domain]["country"]] += w
        all_domains[c.domain] += w
        all_types[domain_type(c.domain)] += w
    if country_lookup is None:
        country_note = COUNTRY_NOTE
    else:
        asked = sum(1 for v in by_domain.values() if v["rule"] == "whois" or "whois_problem" in v)
        country_note = WHOIS_COUNTRY_NOTE.format(
            answered=sum(1 for v in by_domain.values() if v["rule"] == "whois"), asked=asked,
            server=whois_server or "default")

    dead_archived = []
    changed = []
    injection = []
    archive = ArchiveTally(config)
    urls = sorted({c.url for c in cites})
    for i in range(0, len(urls), 500):
        chunk = urls[i:i + 500]
        rows = sources_for(chunk)
        for url in chunk:
            row = rows.get(url)
            archive.add(url, row)
            if row is None:
                continue
            src = row.source
            arch = archive_info(src)
            if arch and (src.status is FetchStatus.DEAD or src.origin == "archive" or "archived" in src.flags
                         or "archived_copy_exists" in src.flags or not src.valid):
                live = src.meta.get("live") if isinstance(src.meta, Mapping) else None
                dead_archived.append({"url": url, "status": src.status.value, "reason": src.reason, **arch,
                                      "read_from_archive": src.origin == "archive",
                                      "live_status": live.get("status") if isinstance(live, Mapping) else None})
            if "changed" in src.flags:
                meta = src.meta if isinstance(src.meta, Mapping) else {}
                changed.append({"url": url, "sha256": src.sha256, "previous_sha256": meta.get("previous_sha256"),
                                "changed_since": meta.get("changed_since"), "fetched_at": src.fetched_at})
            if "possible_injection" in src.flags:
                meta = src.meta if isinstance(src.meta, Mapping) else {}
                reasons = meta.get("injection_reasons")
                reasons = [str(r) for r in reasons] if isinstance(reasons, (list, tuple)) else []
                injection.append({"url": url, "title": src.title, "reasons": reasons})
    return {
        "unit": "citation",
        "citations": total,
        "unique_urls": len(urls),
        "models": models,
        "by_model": by_model,
        "top_domains": [{"domain": d, "count": n, "share": n / total}
                        for d, n in sorted(all_domains.items(), key=lambda kv: (-kv[1], kv[0]))[:top]],
        "domain_types": _shares(all_types, DOMAIN_TYPES),
        "countries": [{"country": k, "count": v, "share": v / total}
                      for k, v in sorted(countries.items(), key=lambda kv: (-kv[1], kv[0]))],
        "country_note": country_note,
        "country_rule": "whois_then_tld" if country_lookup is not None else "tld",
        "country_by_domain": list(by_domain.values()),
        "rates": {o.value: _rate(cites, o, seed + i) for i, o in enumerate(RATE_OUTCOMES)},
        "dead_with_archive": dead_archived,
        "archive_lookups": archive.result(),
        "changed_sources": changed,
        "injection_flagged": injection,
    }
