"""builtin:reader's probabilities from a rerank server (issue 45, item 2): a server running the bundled reader
gives the same labels verdict by verdict; a failing or garbled one gives judge errors, never verdicts."""
from __future__ import annotations

import pytest

from tests.judges.test_served_embeddings import _answers, _audit, _verdicts
from tests.support.fake_rerank import FakeRerank, FakeTeiRerank

SERVERS = {"vllm": (FakeRerank, lambda s: f"{s.url}#sourcecheckup-reader"),
           "tei": (FakeTeiRerank, lambda s: f"tei:{s.base}")}


@pytest.mark.parametrize("wire", ["vllm", "tei"])
def test_a_rerank_server_running_the_bundled_reader_gives_the_same_labels(tmp_path, site, wire):
    fake, spec = SERVERS[wire]
    answers = _answers(tmp_path, site, n=3)
    local = _audit(answers, tmp_path / "local.db", "--judge", "builtin:reader")
    assert local.returncode == 0, local.stderr
    with fake() as server:
        served = _audit(answers, tmp_path / "served.db", "--judge", "builtin:reader", "--reader", spec(server))
        assert served.returncode == 0, served.stderr
        assert server.requests
        if wire == "vllm":
            assert all(r["model"] == "sourcecheckup-reader" for r in server.requests)
        else:
            assert all(r["raw_scores"] is False and "texts" in r for r in server.requests)
    a, b = _verdicts(tmp_path / "local.db"), _verdicts(tmp_path / "served.db")
    assert len(a) == len(b) > 0
    assert [(t, u, label) for t, u, label, _, _ in a] == [(t, u, label) for t, u, label, _, _ in b]
    assert {r[2] for r in b} >= {"supported", "not_supported"}
    assert all("@served:" in mv for *_, mv, _ in b)
    assert not any("served:" in mv for *_, mv, _ in a)


@pytest.mark.parametrize("wire", ["vllm", "tei"])
def test_a_window_longer_than_the_reader_reads_is_cut_as_the_bundled_reader_cuts_it(wire):
    """The bundled reader reads 256 word pieces a pair; the servers read up to 512. The client sends what the
    local reader reads, so the served probability is the local one."""
    from sourcecheckup.judges.builtin.reader import Reader
    from sourcecheckup.judges.builtin.served_reader import ServedReader

    statement = "Adults should not take more than 4,000 IU of vitamin D a day."
    window = " ".join(["Vitamin D helps the body absorb calcium and phosphate from food."] * 24
                      + ["Adults should not take more than 100 micrograms (4,000 IU) of vitamin D a day."])
    fake, spec = SERVERS[wire]
    local = Reader().probabilities([(statement, window)])[0]
    with fake() as server:
        served = ServedReader(spec(server))
        try:
            p = served.probabilities([(statement, window)])[0]
        finally:
            served._client.close()
        whole = len(server.counter.encode(statement, window).ids)
        assert server.tokens_seen and max(server.tokens_seen) <= 256 < whole
    assert abs(p - local) < 1e-6


@pytest.mark.parametrize("wire,mode", [("vllm", "garbage"), ("vllm", "error"), ("tei", "garbage"), ("tei", "error")])
def test_a_failing_or_garbled_rerank_server_gives_judge_errors_never_verdicts(tmp_path, site, wire, mode):
    fake, spec = SERVERS[wire]
    answers = _answers(tmp_path, site, n=2)
    with fake(mode=mode) as server:
        _audit(answers, tmp_path / "a.db", "--judge", "builtin:reader", "--reader", spec(server))
    rows = _verdicts(tmp_path / "a.db")
    assert rows and {label for _, _, label, _, _ in rows} == {"judge_error"}, rows
    assert all("rerank server" in why for *_, why in rows)


def test_a_reader_spec_is_checked_before_the_run():
    from sourcecheckup.judges.builtin.served_reader import parse_reader_spec

    assert parse_reader_spec("tei:http://gpu:8080/") == ("tei", "http://gpu:8080", "tei")
    assert parse_reader_spec("http://gpu:8000#r") == ("vllm", "http://gpu:8000/v1", "r")
    for bad in ("tei:gpu:8080", "http://gpu:8000", "tei:http://gpu:8080#r"):
        with pytest.raises(ValueError):
            parse_reader_spec(bad)
