"""What is kept per source, and re-audits that notice a page changed since an earlier run."""
from __future__ import annotations

from sourcecheckup.fetching import FetchOptions
from sourcecheckup.models import FetchStatus, Response, sha256_bytes
from sourcecheckup.pipeline import Audit, RunConfig
from sourcecheckup.store import Store
from tests.support.fake_judge import KeywordJudge

CLAIM = "Hypertension is now defined as a blood pressure of 130/80 mm Hg or higher."


async def _audit(store: Store, responses: list[Response], refetch: bool) -> str:
    config = RunConfig(judges=["keyword:0"], refetch=refetch,
                       fetch=FetchOptions(allow_hosts=("127.0.0.1",), timeout_s=5.0))
    return await Audit(store, config, judges=[KeywordJudge()]).start(responses, input_label="test")


async def test_reaudit_flags_a_page_whose_content_changed_with_the_earlier_date(tmp_path, site):
    changing, steady = f"{site}/changing/bp-guideline", f"{site}/article/hypertension"
    responses = [Response(id="r1", text=f"{CLAIM} [1] [2]", citations=(changing, steady), markers={"1": 0, "2": 1})]
    store = Store(tmp_path / "audit.db")
    first_run = await _audit(store, responses, refetch=False)
    first = store.get_source(store.run_source_ids(first_run)[changing]).source
    second_run = await _audit(store, responses, refetch=True)
    ids = store.run_source_ids(second_run)
    again, same = store.get_source(ids[changing]).source, store.get_source(ids[steady]).source

    assert first.status is FetchStatus.OK and "changed" not in first.flags
    assert again.status is FetchStatus.OK and again.sha256 != first.sha256
    assert "changed" in again.flags
    assert again.meta["changed_since"] == first.fetched_at and again.meta["previous_sha256"] == first.sha256
    assert "changed" not in same.flags and "changed_since" not in same.meta
    # the headers that say what changed are kept with each fetch
    assert (first.meta["etag"], again.meta["etag"]) == ('"rev-1"', '"rev-2"')
    assert again.meta["last_modified"] == "Wed, 02 Oct 2025 10:00:00 GMT"
    assert again.meta["content_type"] == again.content_type == "text/html; charset=utf-8"
    # the raw bytes are stored (compressed) and hash to the recorded SHA-256
    raw = store.source_raw(ids[changing])
    assert raw is not None and b"Revision 2:" in raw and sha256_bytes(raw) == again.sha256
