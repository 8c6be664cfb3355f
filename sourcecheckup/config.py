"""One builder of a run's configuration: the CLI's options and the app's Settings become the same
validated :class:`RunConfig` through :func:`build_run_config`.

The defaults are the CLI's: the headless browser when a page needs it (``auto``), dead links looked
up in a web archive, robots.txt respected for batch runs. ``$SOURCECHECKUP_BROWSER`` sets the browser
default and ``SOURCECHECKUP_ARCHIVE=off`` turns archive lookups off (CI and tests opt out this way).
Reference checks (Crossref, PubMed, OpenAlex) are on; ``SOURCECHECKUP_REFERENCES=off`` turns them off.
"""
from __future__ import annotations

import dataclasses
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

from .fetching import FetchOptions
from .references.model import LookupSettings

BROWSER_MODES = ("auto", "always", "never")
CONSENSUS_RULES = ("first", "any", "all", "majority")
BROWSER_ENV = "SOURCECHECKUP_BROWSER"
ARCHIVE_ENV = "SOURCECHECKUP_ARCHIVE"
REFERENCES_ENV = "SOURCECHECKUP_REFERENCES"
ENDPOINTS = ("crossref_endpoint", "pubmed_endpoint", "openalex_endpoint")
DEFAULT_JUDGES = ("builtin",)
DEFAULT_PARSER = "builtin"
DEFAULT_CONSENSUS = "first"
DEFAULT_JUDGE_CONCURRENCY = 8


@dataclass
class RunConfig:
    """Everything that decides a run's results; stored with the run so it can be resumed."""

    judges: list[str] = field(default_factory=lambda: ["builtin"])
    parser: str = "builtin"
    consensus: str = "first"
    judge_concurrency: int = 8
    judge_options: dict[str, Any] = field(default_factory=dict)
    fetch: FetchOptions = field(default_factory=FetchOptions)
    refetch: bool = False
    seed: int = 0
    # reference checks (Crossref, PubMed, OpenAlex): off unless a front end turns them on (build_run_config)
    references: LookupSettings = field(default_factory=lambda: LookupSettings(enabled=False))
    retraction_data: str | None = None   # the Retraction Watch CSV the run reads, when there is one
    # URL#MODEL: the built-in judge's sentence embeddings from a served model (embeddings.served); "" = bundled
    embeddings: str = ""
    reader: str = ""     # URL#MODEL (vLLM) or tei:URL: builtin:reader's probabilities from a rerank server

    def to_dict(self) -> dict[str, Any]:
        d = dataclasses.asdict(self)
        d["fetch"] = {k: (str(v) if isinstance(v, Path) else v) for k, v in d["fetch"].items()}
        d["fetch"] = {k: (list(v) if isinstance(v, tuple) else v) for k, v in d["fetch"].items()}
        # options may hold secrets (api keys): never store them
        d["judge_options"] = {k: v for k, v in d["judge_options"].items() if "key" not in k.lower()}
        return d

    @classmethod
    def from_dict(cls, d: Mapping[str, Any]) -> "RunConfig":
        fetch_fields = {f.name: f for f in dataclasses.fields(FetchOptions)}
        fd: dict[str, Any] = {}
        for k, v in dict(d.get("fetch") or {}).items():
            if k not in fetch_fields:
                continue
            if isinstance(v, list):
                v = tuple(v)
            if k == "sources_dir" and v:
                v = Path(v)
            fd[k] = v
        known = {f.name for f in dataclasses.fields(cls)} - {"fetch"}
        rest = {k: v for k, v in d.items() if k in known}
        if "references" in rest:   # a run stored before reference checks keeps them off
            refs = rest.pop("references")
            if isinstance(refs, Mapping):
                rest["references"] = LookupSettings.from_dict({"enabled": False, **refs})
        return cls(fetch=FetchOptions(**fd), **rest)


class ConfigError(ValueError):
    """A choice that cannot make a run. ``option`` names the setting (``sources_dir``, ``use_archive``...)
    so each front end can say it in its own words; the message says what is wrong."""

    def __init__(self, option: str, problem: str) -> None:
        super().__init__(problem)
        self.option = option
        self.problem = problem


def default_browser(environ: Mapping[str, str] | None = None) -> str:
    """The browser mode when none is chosen: ``$SOURCECHECKUP_BROWSER``, else ``auto``."""
    return (environ if environ is not None else os.environ).get(BROWSER_ENV, "").strip().lower() or "auto"


def archive_allowed(environ: Mapping[str, str] | None = None) -> bool:
    """Archive lookups are on unless ``SOURCECHECKUP_ARCHIVE`` is off, 0 or no."""
    value = (environ if environ is not None else os.environ).get(ARCHIVE_ENV, "on")
    return value.lower() not in ("off", "0", "no")


def references_allowed(environ: Mapping[str, str] | None = None) -> bool:
    """Reference checks are on unless ``SOURCECHECKUP_REFERENCES`` is off, 0 or no."""
    value = (environ if environ is not None else os.environ).get(REFERENCES_ENV, "on")
    return value.lower() not in ("off", "0", "no")


# the limits of a reference lookup a user may set, each (lowest, highest, what it is)
LOOKUP_LIMITS = {"lookup_timeout_s": (1.0, 120.0, "seconds a metadata service is given to answer"),
                 "match_threshold": (0.5, 1.0, "the title match a written reference needs"),
                 "lookup_requests_per_second": (0.2, 20.0, "requests a second to each metadata service")}


def build_lookup_settings(*, references: bool = True, crossref_endpoint: str | None = None,
                          pubmed_endpoint: str | None = None, openalex_endpoint: str | None = None,
                          contact_email: str | None = None, lookup_timeout_s: float | None = None,
                          match_threshold: float | None = None, lookup_requests_per_second: float | None = None,
                          environ: Mapping[str, str] | None = None) -> LookupSettings:
    """How a run asks the metadata services; each endpoint is the API's base URL, and the timeout, the
    match threshold and the rate stay within LOOKUP_LIMITS (None: the default). Raises :class:`ConfigError`."""
    from urllib.parse import urlsplit

    kw: dict[str, Any] = {}
    for option, endpoint in zip(ENDPOINTS, (crossref_endpoint, pubmed_endpoint, openalex_endpoint)):
        if not endpoint or not endpoint.strip():
            continue
        url = endpoint.strip()
        try:
            parts = urlsplit(url)
        except ValueError:
            parts = None
        if parts is None or parts.scheme not in ("http", "https") or not parts.netloc:
            raise ConfigError(option, f"the endpoint is the API's base URL (http:// or https://...), not '{url}'")
        kw[option] = url.rstrip("/")
    if contact_email and contact_email.strip():
        email = contact_email.strip()
        if "@" not in email or any(c.isspace() for c in email):
            raise ConfigError("contact_email", f"'{email}' is not an e-mail address")
        kw["contact_email"] = email
    for option, setting, value in (("lookup_timeout_s", "timeout_s", lookup_timeout_s),
                                   ("match_threshold", "match_threshold", match_threshold),
                                   ("lookup_requests_per_second", "requests_per_second", lookup_requests_per_second)):
        if value is None:
            continue
        low, high, what = LOOKUP_LIMITS[option]
        try:
            number = float(value)
        except (TypeError, ValueError):
            number = float("nan")
        if not low <= number <= high:   # also refuses NaN
            raise ConfigError(option, f"{what} must be between {low:g} and {high:g}, not '{value}'")
        kw[setting] = number
    kw["enabled"] = references_allowed(environ) and bool(references)
    return LookupSettings(**kw)


def check_retraction_data(path: str | Path) -> str:
    """The Retraction Watch CSV a run reads, as an absolute path; a missing or unreadable file is a ConfigError."""
    p = Path(path).expanduser()
    if not p.is_file():
        raise ConfigError("retraction_data", f"{p}: no such file (the Retraction Watch CSV; "
                                             "`sourcecheckup references update` downloads it)")
    try:
        with p.open("r", encoding="utf-8-sig", errors="replace", newline="") as fh:
            header = fh.readline()
    except OSError as exc:
        raise ConfigError("retraction_data", f"{p} cannot be read: {exc.strerror or exc}") from exc
    if "OriginalPaperDOI" not in header:
        raise ConfigError("retraction_data", f"{p} is not the Retraction Watch CSV "
                                             "(its first line has no OriginalPaperDOI column)")
    return str(p.resolve())


def _default_retraction_data() -> str | None:
    """The Retraction Watch CSV saved by `references update`, when there is one."""
    try:
        from .references.retractions import default_retraction_path

        path = Path(default_retraction_path())
    except Exception:   # the retraction reader is not installed, or no data folder: none
        return None
    return str(path) if path.is_file() else None


def build_fetch_options(*, batch: bool = False, browser: str | None = None, archive_lookup: bool = True,
                        use_archive: bool = False, archive_endpoint: str | None = None,
                        allow_hosts: Iterable[str] = (), sources_dir: str | Path | None = None,
                        timeout_s: float | None = None, fetch_concurrency: int | None = None,
                        doi_resolver: str | None = None, respect_robots: bool | None = None,
                        environ: Mapping[str, str] | None = None) -> FetchOptions:
    """How a run fetches its sources. ``None`` means "the default": robots.txt is respected for a
    batch (more than one answer) and ignored for a single answer; raises :class:`ConfigError`."""
    from .fetching.sourcepack import SourcePackError, load_pack

    kw: dict[str, Any] = {}
    hosts = tuple(h.strip() for h in allow_hosts if h and h.strip())
    if hosts:
        kw["allow_hosts"] = hosts
    if sources_dir:
        src = Path(sources_dir)
        if not (src / "sources.json").is_file():
            raise ConfigError("sources_dir", "no sources.json in that folder (it maps each URL to a local file)")
        try:
            load_pack(src)
        except SourcePackError as exc:
            raise ConfigError("sources_dir", str(exc)) from exc
        kw["sources_dir"] = src.resolve()
    if timeout_s:
        kw["timeout_s"] = float(timeout_s)
    if fetch_concurrency:
        kw["total_concurrency"] = int(fetch_concurrency)
    mode = browser or default_browser(environ)
    if mode not in BROWSER_MODES:
        where = "" if browser else f" (from ${BROWSER_ENV})"
        raise ConfigError("browser", f"the browser mode is one of {', '.join(BROWSER_MODES)}, not '{mode}'{where}")
    kw["browser"] = mode
    kw["archive_lookup"] = archive_allowed(environ) and archive_lookup
    kw["use_archive"] = bool(use_archive)
    if archive_endpoint:
        kw["archive_endpoint"] = archive_endpoint
    if doi_resolver:
        kw["doi_resolver"] = doi_resolver
    kw["respect_robots"] = batch if respect_robots is None else bool(respect_robots)
    if kw["use_archive"] and not kw["archive_lookup"]:
        raise ConfigError("use_archive", "reading archived copies needs archive lookups")
    return FetchOptions(**kw)


def build_run_config(*, judges: Sequence[str] | None = None, parser: str | None = None,
                     consensus: str | None = None, judge_concurrency: int | None = None,
                     judge_options: Mapping[str, Any] | None = None, refetch: bool = False, seed: int = 0,
                     fetch: FetchOptions | None = None, references: bool = True,
                     crossref_endpoint: str | None = None, pubmed_endpoint: str | None = None,
                     openalex_endpoint: str | None = None, contact_email: str | None = None,
                     lookup_timeout_s: float | None = None, match_threshold: float | None = None,
                     lookup_requests_per_second: float | None = None,
                     retraction_data: str | Path | None = None, embeddings: str | None = None,
                     reader: str | None = None, **fetch_choices: Any) -> RunConfig:
    """A validated RunConfig from a front end's choices; anything not chosen takes the CLI's default.
    ``fetch_choices`` are :func:`build_fetch_options`'s keywords (or pass a built ``fetch``).
    Reference checks are on unless ``references`` is false or ``$SOURCECHECKUP_REFERENCES`` is off; without
    ``retraction_data`` the file saved by ``sourcecheckup references update`` is read, when there is one."""
    chosen = [j.strip() for j in judges or () if j and j.strip()]
    rule = consensus or DEFAULT_CONSENSUS
    if rule not in CONSENSUS_RULES:
        raise ConfigError("consensus", f"the consensus rule is one of {', '.join(CONSENSUS_RULES)}, not '{rule}'")
    concurrency = DEFAULT_JUDGE_CONCURRENCY if judge_concurrency is None else int(judge_concurrency)
    if concurrency < 1:
        raise ConfigError("judge_concurrency", "judge calls at once must be at least 1")
    if fetch is not None and set(fetch_choices) - {"environ"}:
        raise TypeError("pass either fetch or the fetch choices, not both")
    lookup = build_lookup_settings(references=references, crossref_endpoint=crossref_endpoint,
                                   pubmed_endpoint=pubmed_endpoint, openalex_endpoint=openalex_endpoint,
                                   contact_email=contact_email, lookup_timeout_s=lookup_timeout_s,
                                   match_threshold=match_threshold,
                                   lookup_requests_per_second=lookup_requests_per_second,
                                   environ=fetch_choices.get("environ"))
    retractions = check_retraction_data(retraction_data) if retraction_data else None
    if retractions is None and lookup.enabled:
        retractions = _default_retraction_data()
    if fetch is not None:
        fetch_choices.pop("environ", None)
    served, served_reader = (embeddings or "").strip(), (reader or "").strip()
    for option, spec in (("embeddings", served), ("reader", served_reader)):
        if spec:
            from .embeddings.served import parse_spec
            from .judges.builtin.served_reader import parse_reader_spec

            try:
                (parse_reader_spec if option == "reader" else parse_spec)(spec)
            except ValueError as exc:
                raise ConfigError(option, str(exc)) from exc
    return RunConfig(judges=chosen or list(DEFAULT_JUDGES), parser=(parser or "").strip() or DEFAULT_PARSER,
                     consensus=rule, judge_concurrency=concurrency, judge_options=dict(judge_options or {}),
                     fetch=fetch if fetch is not None else build_fetch_options(**fetch_choices),
                     refetch=bool(refetch), seed=int(seed), references=lookup, retraction_data=retractions,
                     embeddings=served, reader=served_reader)
