"""``local:MODEL_ID_OR_DIR``: a transformers classifier or seq2seq checker as the judge.

The package by concept: ``judge`` (LocalJudge, from_spec: NLI windows or the MiniCheck procedure,
the model loaded once per process), ``kinds`` (telling a classifier from a MiniCheck checker, the
authors' chunking and scoring), ``fast`` (the faster CPU forward passes of the same procedure),
``onnx_runtime`` (a checker exported to ONNX Runtime, int8 where asked) and ``onnx_attention``
(Flan-T5's encoder attention fused into one node of that graph).
"""
from __future__ import annotations

from .judge import (
    DEFAULT_BATCH_SIZE,
    DEFAULT_MAX_WINDOWS,
    DEFAULT_THRESHOLD,
    FALLBACK_MAX_LENGTH,
    PROMPT_VERSION,
    QUANTIZE,
    SUPPORTED_LABEL_NAMES,
    LocalJudge,
    LocalModelError,
    Window,
    from_spec,
    supported_label_index,
)

__all__ = [
    "DEFAULT_BATCH_SIZE", "DEFAULT_MAX_WINDOWS", "DEFAULT_THRESHOLD", "FALLBACK_MAX_LENGTH", "PROMPT_VERSION",
    "QUANTIZE", "SUPPORTED_LABEL_NAMES", "LocalJudge", "LocalModelError", "Window", "from_spec",
    "supported_label_index",
]
