"""MiniCheck checkers on ONNX Runtime (sourcecheckup/judges/local/onnx_runtime.py) keep the authors' procedure:
the float32 graph scores the parity set within 1e-4 of the second implementation of the authors'
procedure (tests/judges/test_judge_local_minicheck.py), its per-channel int8 variant gives every label the
plain float32 procedure gives (DeBERTa-v3 and Flan-T5), the graph is written once into the user
cache and a fresh process reads it, and without ONNX Runtime the judge runs on PyTorch as before.
"""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from sourcecheckup.evidence import SourceText
from sourcecheckup.judges.base import JudgeSpecError
from sourcecheckup.judges.local import from_spec
from sourcecheckup.judges.local import onnx_runtime as local_onnx
from sourcecheckup.models import Label
from tests.judges.test_judge_local_minicheck import PAGE, judged, loaded_model, parity_set, reference_minicheck
from tests.support.minicheck_models import build_minicheck_model
from tests.support.paths import ROOT

pytest.importorskip("onnxruntime", reason="onnxruntime is not installed (pip install -e .)")
pytest.importorskip("onnx", reason="onnx is not installed (pip install -e .)")

ONNX_KINDS = ("deberta", "t5")


@pytest.fixture(scope="module")
def folders(tmp_path_factory: pytest.TempPathFactory) -> dict:
    root = tmp_path_factory.mktemp("minicheck-onnx")
    return {kind: build_minicheck_model(root / f"minicheck-{kind}-tiny", kind) for kind in ONNX_KINDS}


@pytest.fixture(scope="module")
def expected(folders) -> dict:
    """The authors' procedure on the plain float32 model: (score, chunks) of every parity pair."""
    out = {}
    for kind in ONNX_KINDS:
        model, tokenizer = loaded_model(folders[kind], kind)
        out[kind] = [reference_minicheck(model, tokenizer, kind, d, c) for d, claims in parity_set() for c in claims]
    return out


@pytest.fixture(scope="module")
def cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("cache")


@pytest.fixture(autouse=True)
def own_cache(cache: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SOURCECHECKUP_CACHE_DIR", str(cache))


@pytest.mark.parametrize("kind", ONNX_KINDS)
async def test_onnx_runtime_float32_scores_equal_the_authors_procedure(folders, expected, kind):
    verdicts = await judged(from_spec(str(folders[kind]), runtime="onnx"), parity_set())
    for verdict, (score, chunks) in zip(verdicts, expected[kind], strict=True):
        assert verdict.score == pytest.approx(score, abs=1e-4)
        assert verdict.label is (Label.SUPPORTED if score > 0.5 else Label.NOT_SUPPORTED)
        assert f"in the best of {chunks} chunk" in verdict.rationale
    assert all("on ONNX Runtime" in v.rationale and "int8" not in v.rationale for v in verdicts)


@pytest.mark.parametrize("kind", ONNX_KINDS)
async def test_onnx_runtime_int8_keeps_every_label_of_the_parity_set(folders, expected, kind):
    judge = from_spec(str(folders[kind]), quantize="int8")        # runtime=auto: int8 on ONNX Runtime
    verdicts = await judged(judge, parity_set())
    assert [v.label for v in verdicts] == [Label.SUPPORTED if s > 0.5 else Label.NOT_SUPPORTED
                                           for s, _ in expected[kind]]
    assert all("int8 weights on ONNX Runtime" in v.rationale for v in verdicts)
    assert judge._loaded.minicheck.model.variant == "int8"
    texts = sum(n for _, n in expected[kind])
    assert judge.rechecked < texts                  # some int8 scores stood without the float32 re-check
    assert [v.score for v in verdicts] != [s for s, _ in expected[kind]]    # the int8 graph did run


def test_the_export_is_written_once_and_a_fresh_process_reads_it(folders, cache):
    code = ("import asyncio, sys\n"
            "from sourcecheckup.judges.local import onnx_runtime as local_onnx\n"
            "from sourcecheckup.judges.local import from_spec\n"
            "from sourcecheckup.evidence import SourceText\n"
            "def refuse(*a, **k): raise AssertionError('exported again')\n"
            "local_onnx.export_fp32 = local_onnx.quantize_int8 = refuse\n"
            f"judge = from_spec({str(folders['deberta'])!r}, quantize='int8')\n"
            "v = asyncio.run(judge.verify('Iron overload is common.', SourceText.from_text(sys.argv[1])))\n"
            "print(v.label.value, round(v.score, 6), judge._loaded.minicheck.runtime)\n")
    judge = from_spec(str(folders["deberta"]), quantize="int8")
    import asyncio

    here = asyncio.run(judge.verify("Iron overload is common.", SourceText.from_text(PAGE)))
    files = sorted(cache.glob("minicheck-onnx/*/*/model.onnx*"))
    assert {f.parent.name for f in files} == {"fp32", "int8"}
    stamps = [f.stat().st_mtime_ns for f in files]
    env = {**os.environ, "SOURCECHECKUP_CACHE_DIR": str(cache)}
    out = subprocess.run([sys.executable, "-c", code, PAGE], cwd=ROOT, capture_output=True, text=True,
                         timeout=300, env=env)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split() == [here.label.value, str(round(here.score, 6)), "onnx"]
    assert [f.stat().st_mtime_ns for f in files] == stamps
    assert not [p for p in cache.glob("minicheck-onnx/*/.*")]       # no staging folder left behind


def test_another_model_of_the_same_shape_gets_its_own_export(folders, tmp_path):
    other = build_minicheck_model(tmp_path / "other", "deberta", seed=1)
    a, _ = loaded_model(folders["deberta"], "deberta")
    b, _ = loaded_model(other, "deberta")
    assert local_onnx.fingerprint(a) == local_onnx.fingerprint(loaded_model(folders["deberta"], "deberta")[0])
    assert local_onnx.fingerprint(a) != local_onnx.fingerprint(b)


async def test_without_onnx_runtime_the_judge_runs_on_pytorch(folders, monkeypatch):
    monkeypatch.setitem(sys.modules, "onnxruntime", None)         # import onnxruntime raises ImportError
    docs = parity_set()[:4]
    deberta = await judged(from_spec(str(folders["deberta"]), quantize="int8"), docs)
    assert all(v.label is not Label.JUDGE_ERROR for v in deberta)
    assert all("int8 weights" in v.rationale and "ONNX" not in v.rationale for v in deberta)
    plain = await judged(from_spec(str(folders["t5"]), runtime="onnx"), docs)
    assert all(v.label is not Label.JUDGE_ERROR and "ONNX" not in v.rationale for v in plain)
    # PyTorch's per-tensor int8 changed Flan-T5 labels: without ONNX Runtime it is refused, saying why
    refused = await from_spec(str(folders["t5"]), quantize="int8").verify("Iron overload is common.",
                                                                          SourceText.from_text(PAGE))
    assert refused.label is Label.JUDGE_ERROR and "needs ONNX Runtime" in refused.rationale


def test_the_runtime_option_is_checked_in_the_spec(folders):
    assert from_spec(f"{folders['t5']}#runtime=onnx").runtime == "onnx"
    assert from_spec(str(folders["t5"])).runtime == "auto"
    with pytest.raises(JudgeSpecError, match="runtime=gpu is not one of auto, torch, onnx"):
        from_spec(str(folders["t5"]), runtime="gpu")


def test_an_export_killed_midway_leaves_no_staging_folder_behind_the_next_one(tmp_path):
    # a process killed mid-export leaves its staging folder; the next export removes it (its owner is dead)
    # and keeps a folder a live process is still writing
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    left = tmp_path / f".int8-{dead}-abc123"
    left.mkdir()
    (left / "model.onnx").write_bytes(b"half")
    busy = tmp_path / f".int8-{os.getppid()}-def456"
    busy.mkdir()
    built: list[Path] = []
    target = local_onnx._write_variant(tmp_path, "int8", lambda p: built.append(p) or p.write_bytes(b"onnx"))
    assert target.read_bytes() == b"onnx" and target == tmp_path / "int8" / "model.onnx"
    assert not left.exists()
    assert busy.exists()
    assert built[0].parent.name.startswith(f".int8-{os.getpid()}-")
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([busy.name, "int8"])


def test_flan_t5s_encoder_attention_is_one_fused_node_a_block_with_the_same_logits(folders, cache, tmp_path):
    # onnx_attention.py puts com.microsoft.MultiHeadAttention in place of each encoder self-attention that
    # torch.onnx.export writes as a dozen nodes; the logits must be those of the graph as traced
    import numpy as np
    import onnx
    import onnxruntime as ort

    from sourcecheckup.judges.local.onnx_attention import fuse_t5_encoder_attention

    model, tokenizer = loaded_model(folders["t5"], "t5")
    answer_ids = [tokenizer("0").input_ids[0], tokenizer("1").input_ids[0]]
    stale = cache / "minicheck-onnx" / f"{local_onnx.fingerprint(model, answer_ids)}-v1" / "fp32"
    stale.mkdir(parents=True)
    (stale / "model.onnx").write_bytes(b"an export by the previous graph version")
    checker = local_onnx.open_checker(model, answer_ids, "fp32", threads=1)
    assert not stale.parent.exists()                      # the earlier version's export of this model is gone
    graph = onnx.load(str(checker.path), load_external_data=False).graph
    fused = [n for n in graph.node if n.op_type == "MultiHeadAttention"]
    assert len(fused) == model.config.num_layers and all("/encoder/" in n.name for n in fused)
    assert not [n for n in graph.node if n.op_type == "Softmax" and "/encoder/" in n.name]

    traced = tmp_path / "plain" / "model.onnx"
    traced.parent.mkdir()
    import sourcecheckup.judges.local.onnx_attention as attention

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(attention, "fuse_t5_encoder_attention", lambda proto, heads: 0)   # the graph as traced
        local_onnx.export_fp32(model, answer_ids, traced)
    assert fuse_t5_encoder_attention(onnx.load(str(traced)), model.config.num_heads) == model.config.num_layers
    texts = [f"predict: {PAGE[:400 * (i + 1)]}{tokenizer.eos_token}Iron overload is common." for i in range(3)]
    batch = tokenizer(texts, padding=True, return_tensors="np")    # padded rows: the mask reaches the bias
    feed = {"input_ids": batch["input_ids"].astype(np.int64), "attention_mask": batch["attention_mask"].astype(np.int64)}
    plain = ort.InferenceSession(str(traced), providers=["CPUExecutionProvider"]).run(["logits"], feed)[0]
    assert np.allclose(checker.session.run(["logits"], feed)[0], plain, atol=1e-5, rtol=0)


def test_quantising_prints_no_advice_meant_for_calibrated_quantisation(folders, tmp_path, caplog):
    # onnxruntime.quantization logs "Please consider to run pre-processing before quantization" on the root
    # logger, which a user of `local:NAME#quantize=int8` saw on stderr at the first export
    import logging

    model, tokenizer = loaded_model(folders["t5"], "t5")
    fp32 = local_onnx.open_checker(model, [3, 209], "fp32", threads=1).path
    target = tmp_path / "int8" / "model.onnx"
    target.parent.mkdir()
    with caplog.at_level(logging.INFO):
        local_onnx.quantize_int8(fp32, target, "encoder-wi")
    assert target.is_file()
    assert not [r for r in caplog.records if "pre-processing" in r.getMessage()]
    logging.getLogger().warning("Please consider to run pre-processing before quantization")   # the filter is gone
    assert [r for r in caplog.records if "pre-processing" in r.getMessage()]
