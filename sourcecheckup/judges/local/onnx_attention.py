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
(fast.t5_support_logits), CPU time 18.5 -> 17.2 s with int8 feed-forward weights, logits
equal to the last printed digit; the parity tests (tests/judges/test_judge_local_onnx.py) hold the
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


def _view_of(graph: Any, name: str, producers: dict[str, Any]) -> tuple[str, float | None]:
    """(the tensor that ``name`` is a reshaped, transposed or scaled view of, the product of the scalar
    constants it was multiplied by on the way; None: a product by something other than a scalar constant)."""
    scale: float | None = 1.0
    node = producers.get(name)
    while node is not None and node.op_type in PASS_THROUGH:
        if node.op_type == "Mul" and scale is not None:
            value = _constant(graph, node.input[1], producers)
            scale = None if value is None or value.size != 1 else scale * float(value.reshape(()))
        name = node.input[0]
        node = producers.get(name)
    return name, scale


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
        if q is None or k is None or v is None or o is None or scores is None or scores.op_type != "MatMul" \
                or len(after) != 1 or after[0].op_type != "MatMul" or after[0].input[0] != softmax.output[0]:
            continue
        assert add is not None   # scores was found through it
        context = after[0]
        (q_in, scale_q), (k_in, scale_k), (v_in, scale_v), (o_in, scale_o) = (
            _view_of(graph, name, producers) for name in (scores.input[0], scores.input[1], context.input[1], o.input[0]))
        if (q_in, k_in, v_in, o_in) != (q.output[0], k.output[0], v.output[0], context.output[0]) \
                or scale_q is None or scale_k is None or scale_v != 1.0 or scale_o != 1.0:
            continue
        out = f"{block}/MultiHeadAttention_output_0"
        fused.append(helper.make_node(
            "MultiHeadAttention", [q.output[0], k.output[0], v.output[0], "", "", add.input[1]], [out],
            name=f"{block}/MultiHeadAttention", domain="com.microsoft", num_heads=int(num_heads),
            scale=scale_q * scale_k))
        o.input[0] = out
    if not fused:
        return 0
    # each fused node just before the projection that reads it (its inputs all come earlier), then what nothing
    # reads any more goes
    before = {node.output[0]: node for node in fused}
    ordered = []
    for node in graph.node:
        if node.input and node.input[0] in before:
            ordered.append(before[node.input[0]])
        ordered.append(node)
    needed = {o.name for o in graph.output}
    kept = []
    for node in reversed(ordered):
        if any(out in needed for out in node.output):
            kept.append(node)
            needed.update(i for i in node.input if i)
    del graph.node[:]
    graph.node.extend(reversed(kept))
    if not any(op.domain == "com.microsoft" for op in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return len(fused)

