"""MiniCheck checkers on ONNX Runtime (CPU): the same forward pass, written once per model.

``local:`` runs a MiniCheck checker on ONNX Runtime when asked (option ``runtime=onnx``) and, by
default (``runtime=auto``), where that was measured faster with the same labels
(bench/local_judge.py, tests/judges/test_judge_local_onnx.py): Flan-T5 in float32 and with int8 weights,
DeBERTa-v3 with int8 weights (``quantize=int8``). ``runtime=torch`` keeps PyTorch. The int8
weights are per-channel (each output column of a weight matrix its own scale) and texts whose int8
score lies near the threshold are scored again in float32 (kinds.score_checked); PyTorch's
per-tensor int8 flipped Flan-T5 labels of the parity set from 0 to 1, which is why Flan-T5 gets
int8 only here, and only in its encoder's feed-forward input matrices (``INT8_SCOPE``).

What is written (once, into the user cache, ``<cache>/minicheck-onnx/<fingerprint>-v<N>/``):
- ``fp32/model.onnx``: the model's own forward as transformers computes it, with fast.py's
  DeBERTa attention and Flan-T5 one-step decoder (``torch.onnx.export`` traces them: the scores
  equal the PyTorch model's within float32 rounding), Flan-T5's encoder attention blocks each as
  one fused MultiHeadAttention node (onnx_attention.py: the same sums), output the classifier's
  logits or the logits of the two answer tokens ("0", "1");
- ``int8/model.onnx``: the same graph with every matrix product by a weight in int8, per-channel
  (``onnxruntime.quantization.quantize_dynamic``; activations are quantised per batch at run time).
The fingerprint hashes the config and every weight, so another model of the same shape never
reads a stale file; each variant is written in a staging folder and renamed into place, so two
processes never see half a model. Any failure (ONNX Runtime or ``onnx`` missing, an export error)
raises :class:`OnnxUnavailable` and the judge runs on PyTorch as before.
"""
from __future__ import annotations

import hashlib
import logging
import os
import shutil
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any, Sequence

from ...run_owner import pid_alive

log = logging.getLogger(__name__)

GRAPH_VERSION = 2     # 2: Flan-T5's encoder attention fused (onnx_attention.py); an older version's folder is removed
OPSET = 17
RUNTIMES = ("auto", "torch", "onnx")
# model types whose export was checked against the PyTorch model (tests/judges/test_judge_local_onnx.py)
MODEL_TYPES = ("deberta-v2", "t5")
# runtime=auto: which model types run on ONNX Runtime, in float32 and with int8 weights (bench/local_judge.py:
# DeBERTa's float32 graph is no faster than fast.py's PyTorch kernels, Flan-T5's is; RoBERTa stays on PyTorch)
AUTO = {"t5": ("none", "int8"), "deberta-v2": ("int8",)}


class OnnxUnavailable(RuntimeError):
    """ONNX Runtime cannot run this model here; the caller runs PyTorch."""


def check_runtime(value: Any) -> str:
    runtime = str(value or "auto").strip().lower()
    if runtime not in RUNTIMES:
        raise ValueError(f"runtime={value} is not one of {', '.join(RUNTIMES)}")
    return runtime


def wanted(runtime: str, model_type: str, quantize: str, device: str) -> bool:
    """Whether this model should run on ONNX Runtime (CPU only)."""
    if device != "cpu" or runtime == "torch" or model_type not in MODEL_TYPES:
        return False
    return runtime == "onnx" or quantize in AUTO.get(model_type, ())


def cache_root() -> Path:
    from ...embeddings import cache_dir

    return cache_dir() / "minicheck-onnx"


def fingerprint(model: Any, answer_ids: Sequence[int] = ()) -> str:
    """A hash of the config, the answer tokens and every weight of ``model`` (a few seconds for a large one)."""
    h = hashlib.blake2b(digest_size=16)
    h.update(model.config.to_json_string().encode())
    h.update(repr(tuple(int(a) for a in answer_ids)).encode())
    for name, tensor in model.state_dict().items():
        h.update(name.encode())
        h.update(str(tuple(tensor.shape)).encode())
        h.update(memoryview(tensor.detach().cpu().contiguous().float().numpy()).cast("B"))
    return h.hexdigest()


def _wrapper(model: Any, answer_ids: Sequence[int]) -> Any:
    """The module that torch.onnx traces: (input_ids, attention_mask) -> logits."""
    import torch

    from .fast import speed_up_deberta, t5_support_logits

    class Classifier(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.model = model

        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return self.model(input_ids=input_ids, attention_mask=attention_mask).logits

    class OneStep(Classifier):
        def forward(self, input_ids: Any, attention_mask: Any) -> Any:
            return t5_support_logits(self.model, input_ids, attention_mask, answer_ids)

    if model.config.model_type == "t5":
        return OneStep().eval()
    speed_up_deberta(model)
    return Classifier().eval()


STALE_STAGING_S = 24 * 3600     # a staging folder whose owner cannot be told alive is removed after this


def _remove_stale_staging(root: Path, variant: str) -> None:
    """Remove the staging folders of exports whose process died (killed mid-export): ``.<variant>-<pid>-*``."""
    for folder in root.glob(f".{variant}-*"):
        pid_text = folder.name[len(variant) + 2:].split("-", 1)[0]
        alive = pid_alive(int(pid_text)) if pid_text.isdigit() else None
        try:
            old = time.time() - folder.stat().st_mtime > STALE_STAGING_S
        except OSError:
            continue
        if alive is False or (alive is None and old):
            log.info("removing %s, left by an export that did not finish", folder)
            shutil.rmtree(folder, ignore_errors=True)


def _write_variant(root: Path, variant: str, build: Any) -> Path:
    """``root/variant/model.onnx``, built by ``build(staging_file)`` when it is not there yet."""
    final = root / variant
    target = final / "model.onnx"
    if target.is_file():
        return target
    root.mkdir(parents=True, exist_ok=True)
    _remove_stale_staging(root, variant)
    staging = Path(tempfile.mkdtemp(prefix=f".{variant}-{os.getpid()}-", dir=root))
    try:
        build(staging / "model.onnx")
        try:
            os.rename(staging, final)
        except OSError:          # another process put it there first
            if not target.is_file():
                raise
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def export_fp32(model: Any, answer_ids: Sequence[int], path: Path) -> None:
    import onnx
    import torch

    wrapper = _wrapper(model, answer_ids)
    ids = torch.full((2, 8), 5, dtype=torch.long)
    mask = torch.ones((2, 8), dtype=torch.long)
    mask[1, 6:] = 0
    traced = path.with_name("traced.onnx")
    with warnings.catch_warnings(), torch.inference_mode():
        warnings.simplefilter("ignore")     # the TorchScript exporter's deprecation and tracer notes
        torch.onnx.export(wrapper, (ids, mask), str(traced), dynamo=False, opset_version=OPSET,
                          input_names=["input_ids", "attention_mask"], output_names=["logits"],
                          dynamic_axes={"input_ids": {0: "batch", 1: "length"},
                                        "attention_mask": {0: "batch", 1: "length"}, "logits": {0: "batch"}})
    # one weights file beside the graph whatever the model's size (a protobuf holds at most 2 GB)
    proto = onnx.load(str(traced))
    if model.config.model_type == "t5":
        from .onnx_attention import fuse_t5_encoder_attention

        fused = fuse_t5_encoder_attention(proto, model.config.num_heads)
        log.info("local judge: %d of %d encoder attention blocks fused", fused, model.config.num_layers)
    onnx.save_model(proto, str(path), save_as_external_data=True, all_tensors_to_one_file=True,
                    location="model.onnx.data", size_threshold=1024)
    for leftover in path.parent.iterdir():
        if leftover.name not in ("model.onnx", "model.onnx.data"):
            leftover.unlink()


# Which weights go int8. Flan-T5: the encoder's feed-forward input matrices (wi_0, wi_1) only: on the
# tiny parity T5 (scores pinned near 0 and 1) int8 attention projections or wo flipped labels from 0 to 1
# (measured again: q and k, v alone, o alone, each with wi, flipped parity labels, all four 6 of 32; on the
# Flan-T5-large-sized model the attention projections would take a 2-text batch of 1,300 tokens from 0.78
# to 0.60 of float32's CPU time); its decoder reads one position and costs little either way.
INT8_SCOPE = {"t5": "encoder-wi"}


def int8_nodes(fp32: Path, scope: str) -> list[str] | None:
    """The MatMul nodes whose weights go int8 (None: every one)."""
    if scope == "all":
        return None
    import onnx

    graph = onnx.load(str(fp32), load_external_data=False).graph
    return [n.name for n in graph.node if n.op_type == "MatMul" and "/encoder/" in n.name
            and "/DenseReluDense/wi" in n.name]


def quantize_int8(fp32: Path, path: Path, scope: str = "all") -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    root = logging.getLogger()    # ONNX Runtime's quantiser advises pre-processing on the root logger: not for users
    root.addFilter(_not_preprocessing_advice)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            quantize_dynamic(str(fp32), str(path), weight_type=QuantType.QInt8, per_channel=True,
                             op_types_to_quantize=["MatMul"], nodes_to_quantize=int8_nodes(fp32, scope),
                             use_external_data_format=True, extra_options={"MatMulConstBOnly": True})
    finally:
        root.removeFilter(_not_preprocessing_advice)


def _not_preprocessing_advice(record: logging.LogRecord) -> bool:
    """Drops onnxruntime.quantization's "Please consider to run pre-processing before quantization" (its
    shape inference is for float32 graphs it will calibrate; dynamic int8 of MatMul weights needs none)."""
    return "pre-processing before quantization" not in record.getMessage()


class OrtChecker:
    """An ONNX Runtime session that stands in for the PyTorch model in kinds.encoded_probabilities."""

    def __init__(self, session: Any, variant: str, path: Path) -> None:
        self.session = session
        self.variant = variant
        self.path = path

    def support_logits(self, input_ids: Any, attention_mask: Any) -> Any:
        """The classifier's logits, or (seq2seq) those of the answer tokens, as a torch tensor."""
        import numpy as np
        import torch

        feed = {"input_ids": np.ascontiguousarray(input_ids.cpu().numpy(), dtype=np.int64),
                "attention_mask": np.ascontiguousarray(attention_mask.cpu().numpy(), dtype=np.int64)}
        return torch.from_numpy(self.session.run(["logits"], feed)[0])


def open_checker(model: Any, answer_ids: Sequence[int], variant: str, threads: int | None) -> OrtChecker:
    """``model`` (float32, PyTorch) on ONNX Runtime, ``variant`` ``fp32`` or ``int8``; written on first use."""
    try:
        import onnx  # noqa: F401
        import onnxruntime as ort
    except ImportError as exc:
        raise OnnxUnavailable(f"ONNX Runtime is not installed ({exc})") from exc
    if model.config.model_type not in MODEL_TYPES:
        raise OnnxUnavailable(f"{model.config.model_type} models are not exported to ONNX here")
    t0 = time.perf_counter()
    key = fingerprint(model, answer_ids)
    root = cache_root() / f"{key}-v{GRAPH_VERSION}"
    for older in range(1, GRAPH_VERSION):     # the same model's export by an earlier version (gigabytes)
        shutil.rmtree(cache_root() / f"{key}-v{older}", ignore_errors=True)
    try:
        path = _write_variant(root, "fp32", lambda p: export_fp32(model, answer_ids, p))
        if variant == "int8":
            path = _write_variant(root, "int8", lambda p: quantize_int8(
                root / "fp32" / "model.onnx", p, INT8_SCOPE.get(model.config.model_type, "all")))
        options = ort.SessionOptions()
        options.intra_op_num_threads = int(threads or 0)      # 0: ONNX Runtime's own choice (the cores)
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")   # idle threads sleep
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:
        raise OnnxUnavailable(f"cannot run the model on ONNX Runtime: {type(exc).__name__}: {exc}") from exc
    log.info("local judge: %s weights on ONNX Runtime from %s (%.0f s)", variant, path, time.perf_counter() - t0)
    return OrtChecker(session, variant, path)


def runtime_model(model: Any, kind: str, answer_ids: Sequence[int], device: str, quantize: str, runtime: str,
                  threads: int | None) -> tuple[Any, bool, str]:
    """What scores the MiniCheck texts: (the model or its ONNX Runtime session, int8 or not, runtime name).

    ``model`` (the float32 PyTorch model) gets fast.py's DeBERTa attention either way: it
    re-checks int8 scores near the threshold and is the fallback."""
    from . import kinds
    from .fast import speed_up_deberta

    speed_up_deberta(model)
    int8 = quantize == "int8" and device == "cpu"
    if wanted(runtime, model.config.model_type, quantize, device):
        try:
            return open_checker(model, answer_ids, "int8" if int8 else "fp32", threads), int8, "onnx"
        except OnnxUnavailable as exc:
            log.warning("local judge: %s; running on PyTorch", exc)
    elif runtime == "onnx":
        log.warning("local judge: runtime=onnx is for %s models (on CPU); running on PyTorch", ", ".join(MODEL_TYPES))
    if not int8:
        return model, False, "torch"
    if kind == "seq2seq":
        raise ValueError("quantize=int8 for a seq2seq checker needs ONNX Runtime (its per-channel int8 kept "
                         "the parity set's labels; PyTorch's per-tensor int8 changed them): install onnxruntime "
                         "and onnx, or leave quantize out")
    quantized = kinds.quantize_int8(model)
    speed_up_deberta(quantized)
    return quantized, True, "torch"
