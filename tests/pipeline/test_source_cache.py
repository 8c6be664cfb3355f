"""Issue 12 item 1: a cached fetch outcome is reused only under settings that would fetch it the same way."""
from __future__ import annotations

import json
from pathlib import Path

from sourcecheckup.cli import main
from sourcecheckup.fetching import FetchOptions, HttpFetcher
from sourcecheckup.models import FetchStatus, Response
from sourcecheckup.pipeline import Audit, RunConfig, reaudit
from sourcecheckup.store import Store
from tests.support import fake_judge  # noqa: F401  (registers the keyword judge)
from tests.support.fake_judge import KeywordJudge

SUPPORTED = "Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher."


def _answer(tmp_path: Path, site: str) -> Path:
    path = tmp_path / "answer.json"
    path.write_text(json.dumps({"id": "a1", "question": "What counts as high blood pressure?",
                                "response": f"{SUPPORTED} [1]", "citations": [f"{site}/article/hypertension"]}))
    return path


def _source_status(db: Path) -> list[tuple[str, str]]:
    with Store(db) as store:
        run_id = store.latest_run_id()
        data = store.load_run(run_id)
        return [(url, row.source.status.value) for url, row in data.sources.items()]


def test_refused_source_is_fetched_once_the_host_is_allowed(tmp_path, site, capsys):
    answer, db = _answer(tmp_path, site), tmp_path / "a.db"
    common = [str(answer), "--judge", "keyword:0", "--db", str(db), "--browser", "never", "-q"]
    assert main(["audit", *common]) == 0
    assert _source_status(db) == [(f"{site}/article/hypertension", "unsafe_url")]
    # the same database, now allowing the loopback host: the refusal must not come from the cache
    assert main(["audit", *common, "--allow-host", "127.0.0.1"]) == 0
    assert _source_status(db) == [(f"{site}/article/hypertension", "ok")]
    capsys.readouterr()
    assert main(["show", "--db", str(db)]) == 0
    assert "statement-level support  100.0%" in capsys.readouterr().out


async def test_same_settings_reuse_a_dead_link_and_an_ok_page(tmp_path, site):
    store = Store(tmp_path / "a.db")
    urls = (f"{site}/article/hypertension", f"{site}/status/404")
    resp = [Response(id="r1", text=f"{SUPPORTED} [1]", citations=urls, markers={"1": 0})]
    config = RunConfig(judges=["keyword:0"], fetch=FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=5))

    class Counting(HttpFetcher):
        fetched: list[str] = []

        async def fetch(self, url):
            Counting.fetched.append(url)
            return await super().fetch(url)

    await Audit(store, config, judges=[KeywordJudge()], fetcher=Counting(config.fetch)).start(resp)
    assert sorted(Counting.fetched) == sorted(urls)
    Counting.fetched.clear()
    await Audit(store, config, judges=[KeywordJudge()], fetcher=Counting(config.fetch)).start(resp)
    assert Counting.fetched == []            # same settings: both outcomes come from the cache
    other = RunConfig(judges=["keyword:0"], fetch=FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=5,
                                                              max_bytes=1_000_000))
    await Audit(store, other, judges=[KeywordJudge()], fetcher=Counting(other.fetch)).start(resp)
    assert Counting.fetched == [f"{site}/status/404"]   # the ok page is reused; the dead link is tried again


async def test_reaudit_fetches_again_with_corrected_settings(tmp_path, site):
    store = Store(tmp_path / "a.db")
    url = f"{site}/article/hypertension"
    resp = [Response(id="r1", text=f"{SUPPORTED} [1]", citations=(url,), markers={"1": 0}, question="Q?")]
    first = await Audit(store, RunConfig(judges=["keyword:0"], fetch=FetchOptions(timeout_s=5)),
                        judges=[KeywordJudge()]).start(resp, input_label="answer.json")
    assert store.load_run(first).sources[url].source.status is FetchStatus.UNSAFE_URL
    second = await reaudit(store, first, {"fetch": {"allow_hosts": ["127.0.0.1"]}}, judges=[KeywordJudge()])
    data = store.load_run(second)
    assert second != first and data.run.config["refetch"] is True
    assert data.sources[url].source.status is FetchStatus.OK
    assert [r.response.question for r in data.responses] == ["Q?"]
    # and a re-audit with refetch reads the page again even though an ok copy is cached
    third = await reaudit(store, second, judges=[KeywordJudge()])
    assert store.load_run(third).sources[url].id != data.sources[url].id
