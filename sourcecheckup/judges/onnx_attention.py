"""T5's encoder self-attention as ONNX Runtime's fused MultiHeadAttention (a graph rewrite, same math).

``torch.onnx.export`` writes each attention of Flan-T5's encoder as a dozen nodes: reshape and
transpose q, k and v into heads, multiply q and k by the square root of the scale (1.0: T5 does
not scale), the scores' matrix product, the position bias and padding mask added (one tensor
computed in the first block and shared by all), softmax, the product with v, and back to one
row a token. Each of them passes over the (batch, heads, n, n) scores in memory; on a 2-core
CPU with 1,300-token texts that is about a third of Flan-T5-large's time outside its matrix
products. ``com.microsoft.MultiHeadAttention`` computes softmax(q k^T x scale + bias) v head by
head in one kernel, and this module puts one in place of each such pattern, reading q, k and v
from the same projections and the bias from the same tensor. Measured on a Flan-T5-large-sized
graph, 2 texts of 1,300 tokens, 2 threads: with the decoder's products as plain MatMuls
(local_fast.t5_support_logits), CPU time 18.5 -> 17.2 s with int8 feed-forward weights, logits
equal to the last printed digit; the parity tests (tests/test_judge_local_onnx.py) hold the
scores to the authors' procedure within 1e-4.

A block whose nodes do not match exactly what is described (another transformers version, a head
mask, dropout) is left as it was: the rewrite never changes what a graph computes."""
from __future__ import annotations

from typing import Any

PASS_THROUGH = ("Reshape", "Transpose", "Mul")


def _constant(graph: Any, name: str, producers: dict[str, Any]) -> Any:
    from onnx import numpy_helper

    node = producers.get(name)
    if node is not None and node.op_type == "Constant" and node.attribute:
        return numpy_helper.to_array(node.attribute[0].t)
    for init in graph.initializer:
        if init.name == name:
            return numpy_helper.to_array(init)
    return None


def _source(name: str, producers: dict[str, Any]) -> str:
    """The tensor that ``name`` is a reshaped, transposed or scaled view of."""
    node = producers.get(name)
    while node is not None and node.op_type in PASS_THROUGH:
        name = node.input[0]
        node = producers.get(name)
    return name


def _scale(graph: Any, name: str, producers: dict[str, Any]) -> float | None:
    """The product of the scalar constants ``name`` was multiplied by on its way from its source (None: not
    a plain chain of reshapes, transposes and scalar products)."""
    scale, node = 1.0, producers.get(name)
    while node is not None and node.op_type in PASS_THROUGH:
        if node.op_type == "Mul":
            value = _constant(graph, node.input[1], producers)
            if value is None or value.size != 1:
                return None
            scale *= float(value.reshape(()))
        node = producers.get(node.input[0])
    return scale


def fuse_t5_encoder_attention(model: Any, num_heads: int) -> int:
    """Rewrite ``model`` (an onnx ModelProto) in place; the number of attention blocks fused."""
    from onnx import helper

    graph = model.graph
    producers = {out: n for n in graph.node for out in n.output}
    readers: dict[str, list[Any]] = {}
    for n in graph.node:
        for name in n.input:
            readers.setdefault(name, []).append(n)
    by_name = {n.name: n for n in graph.node}
    fused = []
    for softmax in graph.node:
        if softmax.op_type != "Softmax" or "/encoder/" not in softmax.name or "/SelfAttention/" not in softmax.name:
            continue
        if any(a.name == "axis" and a.i not in (-1, 3) for a in softmax.attribute):
            continue
        block = softmax.name.rsplit("/", 1)[0]
        q, k, v, o = (by_name.get(f"{block}/{p}/MatMul") for p in "qkvo")
        add = producers.get(softmax.input[0])
        scores = producers.get(add.input[0]) if add is not None and add.op_type == "Add" else None
        after = readers.get(softmax.output[0], [])
        if None in (q, k, v, o, scores) or scores.op_type != "MatMul" or len(after) != 1 \
                or after[0].op_type != "MatMul" or after[0].input[0] != softmax.output[0]:
            continue
        context = after[0]
        scale_q, scale_k = _scale(graph, scores.input[0], producers), _scale(graph, scores.input[1], producers)
        if (_source(scores.input[0], producers) != q.output[0] or _source(scores.input[1], producers) != k.output[0]
                or _source(context.input[1], producers) != v.output[0] or _source(o.input[0], producers)
                != context.output[0] or scale_q is None or scale_k is None
                or _scale(graph, context.input[1], producers) != 1.0 or _scale(graph, o.input[0], producers) != 1.0):
            continue
        out = f"{block}/MultiHeadAttention_output_0"
        fused.append(helper.make_node(
            "MultiHeadAttention", [q.output[0], k.output[0], v.output[0], "", "", add.input[1]], [out],
            name=f"{block}/MultiHeadAttention", domain="com.microsoft", num_heads=int(num_heads),
            scale=scale_q * scale_k))
        o.input[0] = out
    if not fused:
        return 0
    graph.node.extend(fused)
    known = {i.name for i in graph.input} | {i.name for i in graph.initializer}
    ordered = _topological(list(graph.node), known)
    needed = {o.name for o in graph.output}
    kept = []
    for node in reversed(ordered):          # what nothing reads any more goes
        if any(out in needed for out in node.output):
            kept.append(node)
            needed.update(i for i in node.input if i)
    del graph.node[:]
    graph.node.extend(reversed(kept))
    if not any(op.domain == "com.microsoft" for op in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return len(fused)


def _topological(nodes: list[Any], known: set[str]) -> list[Any]:
    available = set(known) | {""}
    ordered: list[Any] = []
    while nodes:
        waiting = []
        for node in nodes:
            if all(i in available for i in node.input):
                ordered.append(node)
                available.update(node.output)
            else:
                waiting.append(node)
        if len(waiting) == len(nodes):
            raise ValueError(f"the graph cannot be ordered at {waiting[0].name}")
        nodes = waiting
    return ordered
