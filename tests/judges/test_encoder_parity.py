"""The built-in judge's fast embedding runtimes (sourcecheckup/embeddings/encoder_onnx.py: the model's weights on ONNX
Runtime; sourcecheckup/embeddings/encoder.py: on plain torch; an LRU per process, source sentences' vectors kept in
the database) give the labels and scores that sentence-transformers gives, on samples of every suite; the
CLI starts without torch, and the ONNX runtime judges without ever importing it."""
from __future__ import annotations

import json
import os
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
from tests.support.paths import ROOT

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


def _runtime(name: str):
    """The encoder of one runtime, opened as embeddings opens it."""
    if name == "onnx":
        pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (pip install -e .)")
        from sourcecheckup.embeddings.encoder_onnx import OnnxMiniLM

        return OnnxMiniLM.open(embeddings.model_path(), threads=2)
    from sourcecheckup.embeddings.encoder import MiniLMEncoder

    return MiniLMEncoder.open(embeddings.model_path())


@needs_model
def test_the_process_runs_the_first_runtime_that_can_run_the_model():
    import importlib.util

    expected = "onnx" if importlib.util.find_spec("onnxruntime") and os.environ.get(
        "SOURCECHECKUP_EMBEDDING_RUNTIME", "onnx") == "onnx" else "torch"
    assert embeddings.runtime() == expected


def _judged_with(model, rows: list[dict], monkeypatch) -> list:
    with monkeypatch.context() as m:
        plain_embed = embeddings.embed
        m.setattr(embeddings, "embed",
                  lambda texts, batch_size=embeddings.BATCH_SIZE, stop=None: plain_embed(texts, batch_size=batch_size,
                                                                              model=model))
        return _judge(rows)


@needs_model
def test_fast_runtimes_give_the_labels_and_scores_of_sentence_transformers(monkeypatch):
    """Both fast runtimes (ONNX, the default; torch, its fallback) against sentence-transformers' verdicts, which
    are computed once."""
    reference_model = embeddings._open_sentence_transformers(embeddings.model_path())
    fast_models = {runtime: _runtime(runtime) for runtime in ("onnx", "torch")}
    for name, rows in _suites().items():
        reference = _judged_with(reference_model, rows, monkeypatch)
        for runtime, fast_model in fast_models.items():
            fast = _judged_with(fast_model, rows, monkeypatch)
            assert len(fast) == len(reference) == len(rows)
            for row, a, b in zip(rows, fast, reference):
                assert a.label == b.label, (runtime, name, row["id"], a.rationale, b.rationale)
                assert abs(a.score - b.score) <= 1e-3, (runtime, name, row["id"], a.score, b.score)
                assert a.flags == b.flags and a.quote == b.quote, (runtime, name, row["id"])


@needs_model
@pytest.mark.parametrize("runtime", ["onnx", "torch"])
def test_fast_vectors_equal_sentence_transformers_vectors(runtime):
    texts = ["Amlodipine is usually started at 5 mg once a day.", "  padded text  ", "word " * 400, "x",
             "a shorter one", "Two sentences of different lengths in one batch pad the shorter one."]
    reference_model = embeddings._open_sentence_transformers(embeddings.model_path())
    fast = embeddings.embed(texts, batch_size=4, model=_runtime(runtime))
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


@needs_model
def test_the_onnx_runtime_judges_without_importing_torch(tmp_path):
    pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (pip install -e .)")
    code = ("import sys\nfrom sourcecheckup import embeddings\nfrom sourcecheckup.evidence import SourceText\n"
            "from sourcecheckup.judges.builtin import BuiltinJudge\n"
            "v = BuiltinJudge(use_embeddings=True).score_pairs([('Amlodipine is started at 5 mg once a day.', "
            "SourceText.from_text('The usual starting dose of amlodipine is 5 mg once a day.'))])[0]\n"
            "print(embeddings.runtime(), v.label.value, sorted(m for m in ('torch', 'transformers', "
            "'sentence_transformers') if m in sys.modules))")
    # a fresh cache folder: the ONNX graph is written from the weights on first use, without torch too
    env = {**os.environ, "SOURCECHECKUP_CACHE_DIR": str(tmp_path), "SOURCECHECKUP_EMBEDDING_RUNTIME": "onnx"}
    for _ in range(2):   # the first process writes the graph, the second reads it
        out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300,
                             env=env)
        assert out.returncode == 0, out.stderr
        assert out.stdout.split()[0] == "onnx" and out.stdout.strip().endswith("[]"), out.stdout
    assert list(tmp_path.glob("models/*/model-fp32-v*.onnx"))
