"""The app's persistent settings (QSettings) and how they become an engine RunConfig: through
sourcecheckup.config.build_run_config, the CLI's own builder, so both front ends share defaults.

API keys never go into QSettings: they live in the OS keyring through sourcecheckup.llm.secrets,
with the environment variables as the fallback where no keyring exists.
"""
from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from PySide6.QtCore import QSettings, QStandardPaths

from sourcecheckup import config
from sourcecheckup.config import BROWSER_MODES, RunConfig
from sourcecheckup.fetching import FetchOptions
from sourcecheckup.references.model import LookupSettings
from sourcecheckup.store import default_db_path

ORG = "SourceCheckup"
APP = "SourceCheckup"
MAX_RECENT = 8
__all__ = ["AppSettings", "BROWSER_MODES"]


def _as_list(value: Any) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]


class AppSettings:
    """Typed access to QSettings; every value has a default that works offline."""

    def __init__(self, qsettings: QSettings | None = None) -> None:
        self.q = qsettings or QSettings(ORG, APP)

    def _get(self, key: str, default: object) -> Any:
        value = self.q.value(key, default)
        return default if value is None else value

    # -- audit options ------------------------------------------------------------------
    @property
    def judges(self) -> list[str]:
        default = list(config.DEFAULT_JUDGES)
        return [j for j in _as_list(self._get("audit/judges", default)) if j.strip()] or default

    @judges.setter
    def judges(self, value: list[str]) -> None:
        self.q.setValue("audit/judges", [v.strip() for v in value if v.strip()] or list(config.DEFAULT_JUDGES))

    @property
    def parser(self) -> str:
        return str(self._get("audit/parser", config.DEFAULT_PARSER)) or config.DEFAULT_PARSER

    @parser.setter
    def parser(self, value: str) -> None:
        self.q.setValue("audit/parser", value.strip() or config.DEFAULT_PARSER)

    @property
    def consensus(self) -> str:
        rule = str(self._get("audit/consensus", config.DEFAULT_CONSENSUS))
        return rule if rule in config.CONSENSUS_RULES else config.DEFAULT_CONSENSUS

    @consensus.setter
    def consensus(self, value: str) -> None:
        self.q.setValue("audit/consensus", value)

    @property
    def concurrency(self) -> int:
        return max(1, int(self._get("audit/concurrency", config.DEFAULT_JUDGE_CONCURRENCY)))

    @concurrency.setter
    def concurrency(self, value: int) -> None:
        self.q.setValue("audit/concurrency", int(value))

    @property
    def browser(self) -> str:
        """The headless browser mode; unset, the CLI's default (auto, or $SOURCECHECKUP_BROWSER)."""
        default = config.default_browser()
        default = default if default in BROWSER_MODES else "auto"
        mode = str(self._get("fetch/browser", default))
        return mode if mode in BROWSER_MODES else default

    @browser.setter
    def browser(self, value: str) -> None:
        self.q.setValue("fetch/browser", value)

    @property
    def archive_lookup(self) -> bool:
        """Look dead links up in a web archive (on by default, as in the CLI)."""
        return str(self._get("fetch/archive_lookup", "true")).lower() == "true"

    @archive_lookup.setter
    def archive_lookup(self, value: bool) -> None:
        self.q.setValue("fetch/archive_lookup", "true" if value else "false")

    @property
    def allow_hosts(self) -> list[str]:
        return [h for h in _as_list(self._get("fetch/allow_hosts", [])) if h.strip()]

    @allow_hosts.setter
    def allow_hosts(self, value: list[str]) -> None:
        self.q.setValue("fetch/allow_hosts", [v.strip() for v in value if v.strip()])

    @property
    def sources_dir(self) -> str:
        return str(self._get("fetch/sources_dir", ""))

    @sources_dir.setter
    def sources_dir(self, value: str) -> None:
        self.q.setValue("fetch/sources_dir", value)

    # -- reference checks (DOIs, PMIDs, written references) --------------------------------
    @property
    def references(self) -> bool:
        """Check cited references against Crossref, PubMed and OpenAlex (on by default, as LookupSettings)."""
        default = "true" if LookupSettings().enabled else "false"
        return str(self._get("references/enabled", default)).lower() == "true"

    @references.setter
    def references(self, value: bool) -> None:
        self.q.setValue("references/enabled", "true" if value else "false")

    def _endpoint(self, name: str) -> str:
        default = getattr(LookupSettings(), name)
        return str(self._get(f"references/{name}", default)).strip() or default

    @property
    def crossref_endpoint(self) -> str:
        return self._endpoint("crossref_endpoint")

    @crossref_endpoint.setter
    def crossref_endpoint(self, value: str) -> None:
        self.q.setValue("references/crossref_endpoint", value.strip())

    @property
    def pubmed_endpoint(self) -> str:
        return self._endpoint("pubmed_endpoint")

    @pubmed_endpoint.setter
    def pubmed_endpoint(self, value: str) -> None:
        self.q.setValue("references/pubmed_endpoint", value.strip())

    @property
    def openalex_endpoint(self) -> str:
        return self._endpoint("openalex_endpoint")

    @openalex_endpoint.setter
    def openalex_endpoint(self, value: str) -> None:
        self.q.setValue("references/openalex_endpoint", value.strip())

    @property
    def contact_email(self) -> str:
        """The polite identity sent to Crossref (mailto) and NCBI (email)."""
        return str(self._get("references/contact_email", ""))

    @contact_email.setter
    def contact_email(self, value: str) -> None:
        self.q.setValue("references/contact_email", value.strip())

    def _lookup_number(self, key: str, field: str) -> float:
        default = float(getattr(LookupSettings(), field))
        try:
            return float(self._get(f"references/{key}", default))
        except (TypeError, ValueError):
            return default

    @property
    def lookup_timeout_s(self) -> float:
        """Seconds a metadata service is given to answer."""
        return self._lookup_number("lookup_timeout_s", "timeout_s")

    @lookup_timeout_s.setter
    def lookup_timeout_s(self, value: float) -> None:
        self.q.setValue("references/lookup_timeout_s", float(value))

    @property
    def match_threshold(self) -> float:
        """The title match a written reference needs to count as found."""
        return self._lookup_number("match_threshold", "match_threshold")

    @match_threshold.setter
    def match_threshold(self, value: float) -> None:
        self.q.setValue("references/match_threshold", float(value))

    @property
    def lookup_requests_per_second(self) -> float:
        """Requests a second to each metadata service (PubMed is held to 3 whatever this says)."""
        return self._lookup_number("lookup_requests_per_second", "requests_per_second")

    @lookup_requests_per_second.setter
    def lookup_requests_per_second(self, value: float) -> None:
        self.q.setValue("references/lookup_requests_per_second", float(value))

    @property
    def retraction_data(self) -> str:
        """The Retraction Watch CSV (Crossref's layout); "" for none."""
        return str(self._get("references/retraction_data", ""))

    @retraction_data.setter
    def retraction_data(self, value: str) -> None:
        self.q.setValue("references/retraction_data", value.strip())

    @property
    def judge_guide_seen(self) -> bool:
        """The first-launch guide to choosing a judge has been shown (it is shown once)."""
        return str(self._get("guide/judges_seen", "false")).lower() == "true"

    @judge_guide_seen.setter
    def judge_guide_seen(self, value: bool) -> None:
        self.q.setValue("guide/judges_seen", "true" if value else "false")

    # -- places -------------------------------------------------------------------------
    @property
    def default_db(self) -> Path:
        value = str(self._get("paths/default_db", ""))
        return Path(value) if value else default_db_path()

    @default_db.setter
    def default_db(self, value: str | Path) -> None:
        self.q.setValue("paths/default_db", str(value))

    @property
    def reviewer(self) -> str:
        return str(self._get("review/reviewer", ""))

    @reviewer.setter
    def reviewer(self, value: str) -> None:
        self.q.setValue("review/reviewer", value.strip())

    @property
    def export_dir(self) -> Path:
        """Where the next export is offered: the folder of the last one, else Documents (else home)."""
        last = str(self._get("export/last_dir", ""))
        if last and Path(last).is_dir():
            return Path(last)
        docs = QStandardPaths.writableLocation(QStandardPaths.StandardLocation.DocumentsLocation)
        return Path(docs) if docs and Path(docs).is_dir() else Path.home()

    @export_dir.setter
    def export_dir(self, value: str | Path) -> None:
        self.q.setValue("export/last_dir", str(value))

    def recent(self, kind: str) -> list[str]:
        return _as_list(self._get(f"recent/{kind}", []))

    def add_recent(self, kind: str, value: str) -> None:
        items = [value] + [v for v in self.recent(kind) if v != value]
        self.q.setValue(f"recent/{kind}", items[:MAX_RECENT])

    # -- the engine's view of it --------------------------------------------------------
    def fetch_choices(self, batch: bool = False) -> dict[str, Any]:
        """The fetch settings as config.build_fetch_options' keywords (a folder without sources.json
        is no source pack, as before)."""
        pack = self.sources_dir if self.sources_dir and Path(self.sources_dir, "sources.json").is_file() else None
        return {"batch": batch, "browser": self.browser, "archive_lookup": self.archive_lookup,
                "allow_hosts": self.allow_hosts, "sources_dir": pack}

    def fetch_options(self, batch: bool = False) -> FetchOptions:
        return config.build_fetch_options(**self.fetch_choices(batch))

    def reference_choices(self) -> dict[str, Any]:
        """The reference-check settings under build_run_config's keyword names."""
        return {"references": self.references, "crossref_endpoint": self.crossref_endpoint,
                "pubmed_endpoint": self.pubmed_endpoint, "openalex_endpoint": self.openalex_endpoint,
                "contact_email": self.contact_email, "lookup_timeout_s": self.lookup_timeout_s,
                "match_threshold": self.match_threshold,
                "lookup_requests_per_second": self.lookup_requests_per_second,
                "retraction_data": self.retraction_data or None}

    def run_config(self, batch: bool = False) -> RunConfig:
        """The RunConfig of these settings, built as the CLI builds it (``batch``: more than one answer,
        so robots.txt is respected); raises config.ConfigError for a choice that cannot run."""
        return config.build_run_config(judges=self.judges, parser=self.parser, consensus=self.consensus,
                                       judge_concurrency=self.concurrency, **accepted_reference_choices(
                                           self.reference_choices()),
                                       **self.fetch_choices(batch))

    def sync(self) -> None:
        self.q.sync()


def accepted_reference_choices(choices: dict[str, Any]) -> dict[str, Any]:
    """The reference choices build_run_config names as its own parameters (an engine without reference
    checks takes none of them; its ``**fetch_choices`` must not receive them)."""
    params = inspect.signature(config.build_run_config).parameters
    return {k: v for k, v in choices.items()
            if k in params and params[k].kind in (inspect.Parameter.KEYWORD_ONLY,
                                                  inspect.Parameter.POSITIONAL_OR_KEYWORD)}
