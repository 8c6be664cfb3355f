"""The built-in judge's embeddings from a served model (issue 45, item 2): an OpenAI-compatible /v1/embeddings
server running the same weights gives the same labels verdict by verdict; a failing or garbled server gives
judge errors, never verdicts."""
from __future__ import annotations

import json

import pytest

from sourcecheckup.store import Store
from tests.store.test_merge import CLAIMS, PAGES
from tests.support.cli import sc
from tests.support.fake_embeddings import FakeEmbeddings


def _answers(tmp_path, site, n: int = 4):
    lines = []
    for i in range(n):
        cites = [f"{site}{PAGES[i % len(PAGES)]}", f"{site}{PAGES[(i + 1) % len(PAGES)]}"]
        lines.append(json.dumps({"id": f"a{i}", "response": f"{CLAIMS[i % len(CLAIMS)]} [1] "
                                 f"{CLAIMS[(i + 2) % len(CLAIMS)]} [2]", "citations": cites}))
    path = tmp_path / "answers.jsonl"
    path.write_text("\n".join(lines) + "\n")
    return path


def _audit(answers, db, *extra):
    return sc("audit", str(answers), "--db", str(db), "--allow-host", "127.0.0.1", "--no-archive", "-q", *extra,
              in_process=True)


def _verdicts(db):
    with Store(db) as st:
        return st.db.execute("SELECT s.text, v.url, v.label, v.model_version, v.rationale FROM verdicts v "
                             "JOIN statements s ON s.pk = v.statement_pk ORDER BY 1, 2").fetchall()


def test_a_server_running_the_same_model_gives_the_same_labels(tmp_path, site):
    answers = _answers(tmp_path, site)
    local = _audit(answers, tmp_path / "local.db")
    assert local.returncode == 0, local.stderr
    with FakeEmbeddings() as server:
        served = _audit(answers, tmp_path / "served.db", "--embeddings", f"{server.url}#all-minilm")
        assert served.returncode == 0, served.stderr
        assert server.requests and all(r["model"] == "all-minilm" and r["encoding_format"] == "float"
                                       for r in server.requests)
    a, b = _verdicts(tmp_path / "local.db"), _verdicts(tmp_path / "served.db")
    assert len(a) == len(b) > 0
    assert [(t, u, label) for t, u, label, _, _ in a] == [(t, u, label) for t, u, label, _, _ in b]
    assert {r[2] for r in b} >= {"supported", "not_supported"}     # a real mix, not all one label
    assert all("served:all-minilm@" in mv for *_, mv, _ in b)        # the verdicts name the served model
    assert not any("served:" in mv for *_, mv, _ in a)
    with Store(tmp_path / "served.db") as st:
        run = st.get_run(st.latest_run_id())
    assert run.config["embeddings"] == f"{server.url}#all-minilm"


@pytest.mark.parametrize("mode", ["garbage", "error", "short"])
def test_a_failing_or_garbled_server_gives_judge_errors_never_verdicts(tmp_path, site, mode):
    answers = _answers(tmp_path, site, n=2)
    with FakeEmbeddings(mode=mode) as server:
        p = _audit(answers, tmp_path / "a.db", "--embeddings", f"{server.url}#all-minilm")
    rows = _verdicts(tmp_path / "a.db")
    assert rows and {label for _, _, label, _, _ in rows} == {"judge_error"}, rows
    assert all("embedding server" in why for *_, why in rows)
    assert p.returncode == 1     # every verdict failed: not a completed audit


def test_a_spec_without_a_model_is_refused_before_any_work(tmp_path, site):
    p = _audit(_answers(tmp_path, site, n=1), tmp_path / "a.db", "--embeddings", "http://127.0.0.1:9/v1")
    assert p.returncode == 2 and "--embeddings" in p.stderr and "URL#MODEL" in p.stderr
    assert not (tmp_path / "a.db").exists()


def test_a_passage_longer_than_the_model_reads_is_cut_as_the_local_model_cuts_it():
    """The local model reads 256 word pieces; llama.cpp reads up to its context and refuses a longer text
    with a 400. The client sends what the local model reads: the same vector, and no refusal."""
    import numpy as np

    from sourcecheckup import embeddings
    from sourcecheckup.embeddings.served import ServedEncoder

    long_text = " ".join(f"Paracetamol dose {i} mg is safe for adults with liver disease." for i in range(120))
    texts = ["The flu vaccine cannot give you flu.", long_text, long_text[:1400]]
    local = embeddings.embed(texts, model=embeddings._load())
    with FakeEmbeddings() as server:
        served = ServedEncoder(f"{server.url}#all-minilm", embeddings.DIMENSIONS,
                               tokenizer=embeddings.bundled_tokenizer).encode(texts)
        assert max(server.tokens_seen) <= 256 < len(server.tokenizer.encode(long_text).ids)
    assert np.abs((local * served).sum(axis=1) - 1).max() < 1e-4
    with FakeEmbeddings() as server:   # without the cut, the server refuses it as llama.cpp does
        import openai

        client = openai.OpenAI(base_url=server.url, api_key="x", max_retries=0)
        with pytest.raises(openai.BadRequestError, match="larger than the max context size"):
            client.embeddings.create(model="all-minilm", input=[long_text], encoding_format="float")
