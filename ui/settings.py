"""The app's persistent settings (QSettings) and how they become an engine RunConfig.

API keys never go into QSettings: they live in the OS keyring through sourcecheckup.llm.secrets,
with the environment variables as the fallback where no keyring exists.
"""
from __future__ import annotations

import dataclasses
from pathlib import Path

from PySide6.QtCore import QSettings, QStandardPaths

from sourcecheckup.fetching import FetchOptions
from sourcecheckup.pipeline import RunConfig
from sourcecheckup.store import default_db_path

ORG = "SourceCheckup"
APP = "SourceCheckup"
MAX_RECENT = 8
BROWSER_MODES = ("never", "auto", "always")


def _as_list(value: object) -> list[str]:
    if value is None or value == "":
        return []
    if isinstance(value, str):
        return [value]
    return [str(v) for v in value]  # type: ignore[union-attr]


class AppSettings:
    """Typed access to QSettings; every value has a default that works offline."""

    def __init__(self, qsettings: QSettings | None = None) -> None:
        self.q = qsettings or QSettings(ORG, APP)

    def _get(self, key: str, default: object) -> object:
        value = self.q.value(key, default)
        return default if value is None else value

    # -- audit options ------------------------------------------------------------------
    @property
    def judges(self) -> list[str]:
        return [j for j in _as_list(self._get("audit/judges", ["builtin"])) if j.strip()] or ["builtin"]

    @judges.setter
    def judges(self, value: list[str]) -> None:
        self.q.setValue("audit/judges", [v.strip() for v in value if v.strip()] or ["builtin"])

    @property
    def parser(self) -> str:
        return str(self._get("audit/parser", "builtin")) or "builtin"

    @parser.setter
    def parser(self, value: str) -> None:
        self.q.setValue("audit/parser", value.strip() or "builtin")

    @property
    def consensus(self) -> str:
        return str(self._get("audit/consensus", "first"))

    @consensus.setter
    def consensus(self, value: str) -> None:
        self.q.setValue("audit/consensus", value)

    @property
    def concurrency(self) -> int:
        return max(1, int(self._get("audit/concurrency", 8)))

    @concurrency.setter
    def concurrency(self, value: int) -> None:
        self.q.setValue("audit/concurrency", int(value))

    @property
    def browser(self) -> str:
        mode = str(self._get("fetch/browser", "never"))
        return mode if mode in BROWSER_MODES else "never"

    @browser.setter
    def browser(self, value: str) -> None:
        self.q.setValue("fetch/browser", value)

    @property
    def use_archive(self) -> bool:
        return str(self._get("fetch/use_archive", "false")).lower() == "true"

    @use_archive.setter
    def use_archive(self, value: bool) -> None:
        self.q.setValue("fetch/use_archive", "true" if value else "false")

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
    def fetch_options(self) -> FetchOptions:
        names = {f.name for f in dataclasses.fields(FetchOptions)}
        kw: dict[str, object] = {"allow_hosts": tuple(self.allow_hosts), "browser": self.browser}
        if self.sources_dir and Path(self.sources_dir, "sources.json").is_file():
            kw["sources_dir"] = Path(self.sources_dir)
        # archive options exist only once the fetch layer offers them
        for name in ("use_archive", "archive"):
            if name in names:
                kw[name] = self.use_archive
        return FetchOptions(**{k: v for k, v in kw.items() if k in names})

    def run_config(self) -> RunConfig:
        return RunConfig(judges=self.judges, parser=self.parser, consensus=self.consensus,
                         judge_concurrency=self.concurrency, fetch=self.fetch_options())

    def sync(self) -> None:
        self.q.sync()
