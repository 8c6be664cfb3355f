"""builtin:reader's probabilities from a rerank server (issue 45, item 2): a server running the bundled reader
gives the same labels verdict by verdict; a failing or garbled one gives judge errors, never verdicts."""
from __future__ import annotations

import pytest

from tests.judges.test_served_embeddings import _answers, _audit, _verdicts
from tests.support.fake_rerank import FakeRerank


def test_a_rerank_server_running_the_bundled_reader_gives_the_same_labels(tmp_path, site):
    answers = _answers(tmp_path, site, n=3)
    local = _audit(answers, tmp_path / "local.db", "--judge", "builtin:reader")
    assert local.returncode == 0, local.stderr
    with FakeRerank() as server:
        served = _audit(answers, tmp_path / "served.db", "--judge", "builtin:reader", "--reader",
                        f"{server.url}#sourcecheckup-reader")
        assert served.returncode == 0, served.stderr
        assert server.requests and all(r["model"] == "sourcecheckup-reader" for r in server.requests)
    a, b = _verdicts(tmp_path / "local.db"), _verdicts(tmp_path / "served.db")
    assert len(a) == len(b) > 0
    assert [(t, u, label) for t, u, label, _, _ in a] == [(t, u, label) for t, u, label, _, _ in b]
    assert {r[2] for r in b} >= {"supported", "not_supported"}
    assert all("@served:sourcecheckup-reader@" in mv for *_, mv, _ in b)
    assert not any("served:" in mv for *_, mv, _ in a)


@pytest.mark.parametrize("mode", ["garbage", "error"])
def test_a_failing_or_garbled_rerank_server_gives_judge_errors_never_verdicts(tmp_path, site, mode):
    answers = _answers(tmp_path, site, n=2)
    with FakeRerank(mode=mode) as server:
        _audit(answers, tmp_path / "a.db", "--judge", "builtin:reader", "--reader", f"{server.url}#reader")
    rows = _verdicts(tmp_path / "a.db")
    assert rows and {label for _, _, label, _, _ in rows} == {"judge_error"}, rows
    assert all("rerank server" in why for *_, why in rows)
