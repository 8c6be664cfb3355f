"""The SQLite store: schema, migrations, WAL, idempotent writes, the source cache."""
from __future__ import annotations

import sqlite3

import pytest

from sourcecheckup import store as store_mod
from sourcecheckup.models import (
    FetchStatus,
    Label,
    Response,
    SkippedRecord,
    Source,
    Statement,
    StatementCategory,
    Verdict,
)
from sourcecheckup.store import Store, StoreError


def _run(store: Store) -> str:
    return store.create_run(input="answers.jsonl", config={"judges": ["builtin"], "api_key": None},
                            judges=["builtin"], parser="builtin", app_version="test")


def test_new_database_is_migrated_to_the_latest_schema_in_wal_mode(tmp_path):
    s = Store(tmp_path / "a.db")
    assert s.schema_version == len(store_mod.MIGRATIONS)
    assert s.db.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert {"runs", "responses", "statements", "sources", "verdicts", "skipped"} <= set(s.db.table_names())
    s.close()
    again = Store(tmp_path / "a.db")  # reopening applies nothing twice
    assert again.db.execute("SELECT COUNT(*) FROM schema_version").fetchone()[0] == len(store_mod.MIGRATIONS)


def test_database_from_a_newer_release_is_refused_with_a_clear_message(tmp_path):
    s = Store(tmp_path / "a.db")
    s.db["schema_version"].insert({"version": 999, "applied_at": "2030-01-01"})
    s.close()
    with pytest.raises(StoreError, match="newer SourceCheckup"):
        Store(tmp_path / "a.db")


def test_a_file_that_is_not_a_database_is_refused(tmp_path):
    bad = tmp_path / "notes.db"
    bad.write_bytes(b"this is a text file, not sqlite" * 50)
    with pytest.raises(StoreError, match="not a usable SourceCheckup database"):
        Store(bad)


def test_responses_round_trip_with_markers_and_skipped_records(tmp_path):
    s = Store(tmp_path / "a.db")
    run = _run(s)
    r = Response(id="q1", text="Metformin is first line [1].", citations=("https://a.example/x",),
                 question="What is first line?", model="gpt-4o", origin="a.jsonl:1", markers={"1": 0},
                 extra={"source": "patients"})
    s.add_responses(run, [r], [SkippedRecord("a.jsonl:2", "invalid JSON")])
    rows = s.responses(run)
    assert rows[0].response == r
    assert s.skipped(run) == [SkippedRecord("a.jsonl:2", "invalid JSON")]
    got = s.get_run(run)
    assert (got.n_records, got.n_skipped) == (2, 1)


def test_statements_are_saved_once_even_if_saved_twice(tmp_path):
    s = Store(tmp_path / "a.db")
    run = _run(s)
    s.add_responses(run, [Response(id="q1", text="A. B.")])
    pk = s.responses(run)[0].pk
    sts = [Statement(0, "A.", StatementCategory.INFORMATIVE, (0,), 0, 2),
           Statement(1, "B.", StatementCategory.DISCLAIMER, (), 3, 5)]
    first = s.save_statements(run, pk, sts)
    second = s.save_statements(run, pk, sts[:1])
    assert [r.statement for r in first] == sts
    assert [r.pk for r in second] == [r.pk for r in first]
    assert s.responses(run)[0].parsed


def test_source_whose_bytes_changed_is_flagged_with_the_earlier_date(tmp_path):
    s = Store(tmp_path / "a.db")
    url = "https://www.example.org/page"
    s.add_source(Source(url, FetchStatus.OK, text="v1", sha256="aaa", fetched_at="2026-01-01T00:00:00+00:00",
                        raw=b"<p>v1</p>"))
    new_id = s.add_source(Source(url, FetchStatus.OK, text="v2", sha256="bbb",
                                 fetched_at="2026-06-01T00:00:00+00:00", raw=b"<p>v2</p>"))
    row = s.get_source(new_id)
    assert "changed" in row.source.flags
    assert row.source.meta["changed_since"] == "2026-01-01T00:00:00+00:00"
    assert s.latest_source(url).id == new_id
    assert s.source_raw(new_id) == b"<p>v2</p>"


def test_a_verdict_is_stored_once_per_pair_and_judge(tmp_path):
    s = Store(tmp_path / "a.db")
    run = _run(s)
    s.add_responses(run, [Response(id="q1", text="A.")])
    spk = s.save_statements(run, s.responses(run)[0].pk, [Statement(0, "A.")])[0].pk
    v = Verdict(Label.SUPPORTED, 0.9, "ok", "A.", True, "builtin", "builtin-1")
    s.save_verdict(run, spk, "https://x.org", None, v)
    s.save_verdict(run, spk, "https://x.org", None, v)
    assert s.db.execute("SELECT COUNT(*) FROM verdicts").fetchone()[0] == 1
    assert s.judged_keys(run) == {(spk, "https://x.org", "builtin")}
    data = s.load_run(run)
    assert data.verdicts[spk][0].verdict == v


def test_run_can_be_found_by_a_unique_part_of_its_id(tmp_path):
    s = Store(tmp_path / "a.db")
    run = _run(s)
    assert s.get_run(run[-6:]).id == run
    with pytest.raises(StoreError, match="sourcecheckup runs"):
        s.get_run("nope")


def test_writes_are_visible_to_a_second_connection_at_once(tmp_path):
    s = Store(tmp_path / "a.db")
    run = _run(s)
    other = sqlite3.connect(tmp_path / "a.db")
    assert other.execute("SELECT status FROM runs WHERE id = ?", [run]).fetchone()[0] == "running"
