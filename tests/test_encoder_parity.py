"""The built-in judge's fast embedding runtime (sourcecheckup/encoder.py: the model's weights on plain
torch, an LRU per process, source sentences' vectors kept in the database) gives the labels and scores
that sentence-transformers gives, on samples of every suite; and the CLI starts without torch."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from sourcecheckup import embeddings
from sourcecheckup.evidence import SourceText
from sourcecheckup.judges.builtin import BuiltinJudge
from sourcecheckup.store import Store
from sourcecheckup.store.vectors import VectorCache

ROOT = Path(__file__).resolve().parent.parent
CLAIMS = ROOT.parent / "shared" / "data" / "claims"

needs_model = pytest.mark.skipif(not embeddings.available(), reason="the embedding model is not installed")


def _rows(path: Path, step: int, limit: int) -> list[dict]:
    with path.open(encoding="utf-8") as fh:
        rows = [json.loads(line) for line in fh if line.strip()]
    return rows[::step][:limit]


def _suites() -> dict[str, list[dict]]:
    suites = {"clinical": _rows(ROOT / "bench" / "data" / "clinical_pairs.jsonl", 6, 60),
              "heldout": _rows(ROOT / "bench" / "data" / "clinical_heldout.jsonl", 6, 60)}
    wice = CLAIMS / "wice_dev.jsonl"
    if wice.is_file():   # long web pages: the completeness check and the facts' vectors run on them
        suites["wice"] = _rows(wice, 40, 8)
    return suites


def _judge(rows: list[dict], judge: BuiltinJudge | None = None):
    judge = judge or BuiltinJudge(use_embeddings=True)
    return judge.score_pairs([(r["claim"], SourceText.from_text(r["evidence"])) for r in rows])


@needs_model
def test_fast_runtime_gives_the_labels_and_scores_of_sentence_transformers(monkeypatch):
    assert embeddings.runtime() == "torch"
    reference_model = embeddings._open_sentence_transformers(embeddings.model_path())
    for name, rows in _suites().items():
        fast = _judge(rows)
        with monkeypatch.context() as m:
            plain_embed = embeddings.embed
            m.setattr(embeddings, "embed",
                      lambda texts, batch_size=64, stop=None: plain_embed(texts, batch_size=batch_size, model=reference_model))
            reference = _judge(rows)
        assert len(fast) == len(reference) == len(rows)
        for row, a, b in zip(rows, fast, reference):
            assert a.label == b.label, (name, row["id"], a.rationale, b.rationale)
            assert abs(a.score - b.score) <= 1e-3, (name, row["id"], a.score, b.score)
            assert a.flags == b.flags and a.quote == b.quote, (name, row["id"])


@needs_model
def test_fast_vectors_equal_sentence_transformers_vectors():
    texts = ["Amlodipine is usually started at 5 mg once a day.", "  padded text  ", "word " * 400, "x"]
    reference_model = embeddings._open_sentence_transformers(embeddings.model_path())
    fast = embeddings.embed(texts)
    reference = embeddings.embed(texts, model=reference_model)
    assert np.abs(fast - reference).max() < 1e-5
    assert np.allclose(np.linalg.norm(fast, axis=1), 1.0, atol=1e-5)


@needs_model
def test_page_vectors_kept_in_the_database_are_read_back_not_embedded_again(tmp_path, monkeypatch):
    rows = _rows(ROOT / "bench" / "data" / "clinical_pairs.jsonl", 30, 6)
    db = tmp_path / "audit.db"
    Store(db).close()
    cache = VectorCache(db)
    first_judge = BuiltinJudge(use_embeddings=True)
    first_judge.vector_cache = cache
    first = _judge(rows, first_judge)
    # a later process: nothing in memory, the page sentences come from the database
    monkeypatch.setattr(embeddings, "_recent", type(embeddings._recent)())
    embedded: list[str] = []
    plain_embed = embeddings.embed

    def counting(texts, batch_size=embeddings.BATCH_SIZE, stop=None):
        embedded.extend(texts)
        return plain_embed(texts, batch_size=batch_size, stop=stop)
    monkeypatch.setattr(embeddings, "embed", counting)
    later_judge = BuiltinJudge(use_embeddings=True)
    later_judge.vector_cache = VectorCache(db)
    later = _judge(rows, later_judge)
    assert [(v.label, v.score, v.quote) for v in later] == [(v.label, v.score, v.quote) for v in first]
    assert set(embedded) <= {r["claim"] for r in rows}          # only the statements were embedded
    assert embedded                                               # (they are not kept in the database)


def test_the_cli_starts_without_loading_torch():
    code = "import sys, sourcecheckup.cli, sourcecheckup.judges.builtin; print(sorted(m for m in " \
           "('torch', 'transformers', 'sentence_transformers') if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "[]"
