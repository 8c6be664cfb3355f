"""all-MiniLM-L6-v2 on ONNX Runtime: the same weights and arithmetic as :mod:`.encoder`, without torch.

Importing torch costs seconds before the first sentence is embedded, and its kernels spend more CPU on
this small model than ONNX Runtime's. This module writes the BERT encoder as an ONNX graph straight from
the model folder's ``model.safetensors`` (read as numpy arrays; no exporter, no torch), once, into the
cache folder next to the unpacked model (``model-fp32-v1.onnx``, renamed into place so two processes
never see half a file); later processes load that file. The graph is the encoder's ``_forward``
op for op: embeddings and LayerNorm, six layers of self-attention (padding masked out) and GELU
(erf), mean pooling over the real tokens, L2 normalisation. Tokenising is the same ``tokenizers`` call.

``OnnxMiniLM.open(folder)`` raises :class:`.encoder.UnsupportedModel` when ONNX Runtime or the
``onnx`` package is missing or the folder is not a model :class:`.encoder.MiniLMEncoder` accepts;
:mod:`sourcecheckup.embeddings` then runs the torch encoder.
"""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from .encoder import MiniLMEncoder, UnsupportedModel

# bumped whenever the graph below changes: a cached file of another version is rebuilt
GRAPH_VERSION = 2   # 2: the last hidden states as a second output (token vectors for expert/similarity.py)
_OPSET = 18


def onnx_file(folder: Path) -> Path:
    return folder / f"model-fp32-v{GRAPH_VERSION}.onnx"


def _build(config: dict[str, Any], weights: dict[str, np.ndarray]) -> bytes:
    """The serialised ONNX model: inputs ``input_ids`` and ``attention_mask`` (int64, batch x length),
    outputs ``embeddings`` (float32, batch x hidden, unit length) and ``token_states`` (float32, batch x
    length x hidden: the last layer's output before pooling)."""
    from onnx import TensorProto, helper, numpy_helper

    H, heads = int(config["hidden_size"]), int(config["num_attention_heads"])
    d, eps = H // heads, float(config.get("layer_norm_eps", 1e-12))
    inits: list[Any] = []
    nodes: list[Any] = []
    count = [0]

    named: set[str] = set()

    def const(name: str, value: Any) -> str:
        if name not in named:
            named.add(name)
            inits.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def node(op: str, inputs: list[str], **attrs: Any) -> str:
        count[0] += 1
        out = f"{op.lower()}_{count[0]}"
        nodes.append(helper.make_node(op, inputs, [out], **attrs))
        return out

    def w(name: str) -> np.ndarray:
        return np.asarray(weights[name], dtype=np.float32)

    def linear(x: str, name: str) -> str:
        # F.linear: x @ W.T + b
        weight = const(name + ".weight.T", w(name + ".weight").T)
        return node("Add", [node("MatMul", [x, weight]), const(name + ".bias", w(name + ".bias"))])

    def layer_norm(x: str, name: str) -> str:
        return node("LayerNormalization", [x, const(name + ".weight", w(name + ".weight")),
                                           const(name + ".bias", w(name + ".bias"))], axis=-1, epsilon=eps)

    # embeddings: word + position (the first L rows) + token type 0
    length = node("Shape", ["input_ids"], start=1, end=2)      # [L]
    positions = node("Slice", [const("embeddings.position_embeddings.weight", w("embeddings.position_embeddings.weight")),
                               const("zero_1d", np.array([0], dtype=np.int64)),
                               length,
                               const("zero_1d_axis", np.array([0], dtype=np.int64))])
    x = node("Gather", [const("embeddings.word_embeddings.weight", w("embeddings.word_embeddings.weight")), "input_ids"])
    x = node("Add", [node("Add", [x, positions]),
                     const("token_type_0", w("embeddings.token_type_embeddings.weight")[0])])
    x = layer_norm(x, "embeddings.LayerNorm")
    # padding: a large negative number added to the attention scores of masked keys (exp() of it is 0)
    mask = node("Cast", ["attention_mask"], to=TensorProto.FLOAT)
    bias = node("Mul", [node("Sub", [const("one_f", np.array(1.0, dtype=np.float32)), mask]),
                        const("masked_score", np.array(-1e9, dtype=np.float32))])
    bias = node("Unsqueeze", [bias, const("axes_1_2", np.array([1, 2], dtype=np.int64))])   # B x 1 x 1 x L
    split_heads = const("split_heads", np.array([0, 0, heads, d], dtype=np.int64))
    merge_heads = const("merge_heads", np.array([0, 0, H], dtype=np.int64))
    scale = const("scale", np.array(1.0 / np.sqrt(d), dtype=np.float32))
    for n in range(int(config["num_hidden_layers"])):
        p = f"encoder.layer.{n}."
        q = node("Transpose", [node("Reshape", [linear(x, p + "attention.self.query"), split_heads])], perm=[0, 2, 1, 3])
        k = node("Transpose", [node("Reshape", [linear(x, p + "attention.self.key"), split_heads])], perm=[0, 2, 3, 1])
        v = node("Transpose", [node("Reshape", [linear(x, p + "attention.self.value"), split_heads])], perm=[0, 2, 1, 3])
        scores = node("Add", [node("Mul", [node("MatMul", [q, k]), scale]), bias])
        a = node("MatMul", [node("Softmax", [scores], axis=-1), v])
        a = node("Reshape", [node("Transpose", [a], perm=[0, 2, 1, 3]), merge_heads])
        x = layer_norm(node("Add", [linear(a, p + "attention.output.dense"), x]), p + "attention.output.LayerNorm")
        h = linear(x, p + "intermediate.dense")
        # exact GELU: 0.5 * h * (1 + erf(h / sqrt 2))
        g = node("Mul", [node("Mul", [h, const("half", np.array(0.5, dtype=np.float32))]),
                         node("Add", [node("Erf", [node("Div", [h, const("sqrt2", np.array(np.sqrt(2.0),
                                                                                           dtype=np.float32))])]),
                                      const("one_f_g", np.array(1.0, dtype=np.float32))])])
        x = layer_norm(node("Add", [linear(g, p + "output.dense"), x]), p + "output.LayerNorm")
    nodes.append(helper.make_node("Identity", [x], ["token_states"]))
    # mean pooling over real tokens, then L2 normalisation (F.normalize: eps 1e-12)
    m = node("Unsqueeze", [mask, const("axes_last", np.array([-1], dtype=np.int64))])
    axes_1 = const("axes_1", np.array([1], dtype=np.int64))
    total = node("ReduceSum", [node("Mul", [x, m]), axes_1], keepdims=0)
    tokens = node("Max", [node("ReduceSum", [m, axes_1], keepdims=0), const("min_count", np.array(1e-9, dtype=np.float32))])
    pooled = node("Div", [total, tokens])
    norm = node("Max", [node("ReduceL2", [pooled, axes_1], keepdims=1),
                        const("min_norm", np.array(1e-12, dtype=np.float32))])
    nodes.append(helper.make_node("Div", [pooled, norm], ["embeddings"]))
    graph = helper.make_graph(
        nodes, "all-MiniLM-L6-v2",
        [helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "length"]),
         helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", "length"])],
        [helper.make_tensor_value_info("embeddings", TensorProto.FLOAT, ["batch", H]),
         helper.make_tensor_value_info("token_states", TensorProto.FLOAT, ["batch", "length", H])], inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", _OPSET)],
                              producer_name="sourcecheckup")
    model.ir_version = 8
    return model.SerializeToString()


def export(folder: Path, config: dict[str, Any]) -> Path:
    """The folder's ONNX file, written from its weights when it is not there yet."""
    target = onnx_file(folder)
    if target.is_file():
        return target
    try:
        from safetensors.numpy import load_file

        weights = load_file(str(folder / "model.safetensors"))
        if not any(k.startswith("encoder.layer.") for k in weights):
            weights = {k.removeprefix("bert."): v for k, v in weights.items()}
        data = _build(config, weights)
    except ImportError as exc:
        raise UnsupportedModel(f"cannot write the ONNX model: {exc}") from exc
    fd, staging = tempfile.mkstemp(prefix=f".{target.name}-", dir=folder)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.chmod(staging, 0o644)
        os.replace(staging, target)
        for old in folder.glob("model-fp32-v*.onnx"):   # an earlier version's graph: never read again
            if old != target:
                old.unlink(missing_ok=True)
    finally:
        if os.path.exists(staging):
            os.unlink(staging)
    return target


class OnnxMiniLM:
    """The encoder of :class:`.encoder.MiniLMEncoder` run by ONNX Runtime (CPU)."""

    def __init__(self, folder: Path, tokenizer: Any, hidden: int, session: Any) -> None:
        self.folder = folder
        self.tokenizer = tokenizer
        self.hidden = hidden
        self.session = session

    @classmethod
    def open(cls, folder: str | Path, threads: int = 1) -> "OnnxMiniLM":
        folder = Path(folder)
        try:
            import onnxruntime as ort
        except ImportError as exc:
            raise UnsupportedModel(f"onnxruntime is not installed: {exc}") from exc
        # the same checks as the torch encoder: the folder is Transformer + mean Pooling + Normalize BERT
        spec = MiniLMEncoder.inspect(folder)
        path = export(folder, spec.config)
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        options.inter_op_num_threads = 1
        options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
        options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # idle threads sleep instead of spinning: the machine's other work gets the cores
        options.add_session_config_entry("session.intra_op.allow_spinning", "0")
        try:
            session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
        except Exception as exc:  # a damaged cached file: write it again once
            path.unlink(missing_ok=True)
            try:
                session = ort.InferenceSession(str(export(folder, spec.config)), options,
                                               providers=["CPUExecutionProvider"])
            except Exception:
                raise UnsupportedModel(f"ONNX Runtime cannot load the model: {exc}") from exc
        return cls(folder, spec.tokenizer, int(spec.config["hidden_size"]), session)

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Unit-length float32 vectors, one row per text; batches of texts of similar length."""
        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        for chunk, ids, mask in MiniLMEncoder.batches(self.tokenizer, texts, batch_size):
            out[chunk] = self.session.run(["embeddings"], {"input_ids": ids, "attention_mask": mask})[0]
        return out

    def token_states(self, text: str) -> np.ndarray:
        """The last hidden state of every token of ``text``, [CLS] and [SEP] included: (tokens, hidden)."""
        ids = np.asarray([self.tokenizer.encode(str(text).strip()).ids], dtype=np.int64)
        return self.session.run(["token_states"], {"input_ids": ids, "attention_mask": np.ones_like(ids)})[0][0]
