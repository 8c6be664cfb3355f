"""all-MiniLM-L6-v2 run on plain torch: the same weights, without the sentence-transformers import chain.

Importing sentence-transformers (and with it transformers) costs seconds of CPU before the first
sentence is embedded; this module reads the unpacked model folder itself: the tokenizer with the
``tokenizers`` library (``tokenizer.json``), the BERT weights with ``safetensors``, and runs the six
encoder layers with ``torch.nn.functional``. It does exactly what the folder's sentence-transformers
configuration says (``modules.json``: Transformer, mean Pooling, Normalize; ``sentence_bert_config.json``:
``max_seq_length``), so the vectors equal sentence-transformers' within float rounding
(tests/judges/test_encoder_parity.py checks the judge's labels and scores on the suites).

``MiniLMEncoder.open(folder)`` raises ``UnsupportedModel`` when the folder is not a BERT model with
that exact configuration; :mod:`sourcecheckup.embeddings` then falls back to sentence-transformers.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Iterator, NamedTuple, Sequence

import numpy as np

# the share of a batch's tokens that may be padding (see MiniLMEncoder.batches)
MAX_PADDING = 0.1
_MODULES = ["sentence_transformers.models.Transformer", "sentence_transformers.models.Pooling",
            "sentence_transformers.models.Normalize"]


class UnsupportedModel(ValueError):
    """The folder is not a model this encoder runs exactly as sentence-transformers would."""


def _read_json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise UnsupportedModel(f"{path.name}: {exc}") from exc


def machine_threads() -> int:
    """The cores this process may run on (the affinity mask, not the whole machine)."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # pragma: no cover - not on Linux
        return max(1, os.cpu_count() or 1)


class ModelSpec(NamedTuple):
    """What a runtime needs of the folder besides the weights."""

    config: dict[str, Any]
    max_seq_length: int
    tokenizer: Any


class MiniLMEncoder:
    """A BERT sentence encoder with mean pooling and L2 normalisation, on the CPU."""

    def __init__(self, folder: Path, config: dict[str, Any], max_seq_length: int, tokenizer: Any,
                 weights: dict[str, Any]) -> None:
        self.folder = folder
        self.config = config
        self.max_seq_length = max_seq_length
        self.tokenizer = tokenizer
        self.w = weights
        self.hidden = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))

    @staticmethod
    def inspect(folder: str | Path) -> "ModelSpec":
        """The folder's configuration and tokenizer, after checking it is a model this encoder runs exactly."""
        folder = Path(folder)
        modules = _read_json(folder / "modules.json")
        if [m.get("type") for m in modules] != _MODULES or modules[0].get("path", "") != "":
            raise UnsupportedModel(f"modules.json is not Transformer + Pooling + Normalize: {modules}")
        pooling = _read_json(folder / modules[1]["path"] / "config.json")
        modes = {k for k, v in pooling.items() if k.startswith("pooling_mode") and v}
        if modes != {"pooling_mode_mean_tokens"}:
            raise UnsupportedModel(f"pooling is not mean pooling: {sorted(modes)}")
        st_config = _read_json(folder / "sentence_bert_config.json")
        if st_config.get("do_lower_case"):
            raise UnsupportedModel("do_lower_case is not supported")
        config = _read_json(folder / "config.json")
        if (config.get("model_type") != "bert" or config.get("hidden_act") != "gelu"
                or config.get("position_embedding_type", "absolute") != "absolute"):
            raise UnsupportedModel("config.json is not an absolute-position BERT with GELU")
        max_seq = min(int(st_config.get("max_seq_length") or 512), int(config["max_position_embeddings"]))
        try:
            from tokenizers import Tokenizer

            tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        except Exception as exc:  # a missing or unreadable file: the caller falls back
            raise UnsupportedModel(f"cannot read the tokenizer: {exc}") from exc
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_seq)
        return ModelSpec(config, max_seq, tokenizer)

    @classmethod
    def open(cls, folder: str | Path) -> "MiniLMEncoder":
        folder = Path(folder)
        spec = cls.inspect(folder)
        config = spec.config
        try:
            from safetensors.torch import load_file

            weights = load_file(str(folder / "model.safetensors"))
        except Exception as exc:  # a missing or unreadable file: the caller falls back
            raise UnsupportedModel(f"cannot read the model folder: {exc}") from exc
        if not any(k.startswith("encoder.layer.") for k in weights):
            weights = {k.removeprefix("bert."): v for k, v in weights.items()}
        needed = ["embeddings.word_embeddings.weight", "embeddings.position_embeddings.weight",
                  "embeddings.token_type_embeddings.weight", "embeddings.LayerNorm.weight",
                  f"encoder.layer.{int(config['num_hidden_layers']) - 1}.output.LayerNorm.bias"]
        missing = [k for k in needed if k not in weights]
        if missing:
            raise UnsupportedModel(f"model.safetensors lacks {missing}")
        return cls(folder, config, spec.max_seq_length, spec.tokenizer, weights)

    @staticmethod
    def batches(tokenizer: Any, texts: Sequence[str], batch_size: int
                ) -> Iterator[tuple[list[int], np.ndarray, np.ndarray]]:
        """(rows of ``texts``, token ids, attention mask) per batch; ids and mask are int64 arrays as wide as
        the batch's longest text. Texts go longest first, and a batch takes the next text only while padding
        stays under ``MAX_PADDING`` of its tokens (and it holds fewer than ``batch_size``): a padded token
        costs what a real one does, and one page's sentences vary too much in length for fixed batches
        (a third of the tokens of batches of 8 were padding on the WiCE pages)."""
        if not texts:
            return
        # sentence-transformers strips each text before tokenising
        encodings = tokenizer.encode_batch([str(t).strip() for t in texts])
        lengths = [len(e.ids) for e in encodings]
        order = sorted(range(len(texts)), key=lambda i: -lengths[i])
        start = 0
        while start < len(order):
            width, real, end = lengths[order[start]], lengths[order[start]], start + 1
            while (end < len(order) and end - start < batch_size
                   and (real + lengths[order[end]]) >= (1 - MAX_PADDING) * width * (end - start + 1)):
                real += lengths[order[end]]
                end += 1
            chunk = order[start:end]
            start = end
            ids = np.zeros((len(chunk), width), dtype=np.int64)
            mask = np.zeros((len(chunk), width), dtype=np.int64)
            for row, i in enumerate(chunk):
                ids[row, :lengths[i]] = encodings[i].ids
                mask[row, :lengths[i]] = 1
            yield chunk, ids, mask

    # -- running ------------------------------------------------------------------------------
    def _forward(self, ids: Any, mask: Any) -> Any:
        import torch
        import torch.nn.functional as F

        w, H, eps = self.w, self.hidden, self.eps
        B, L = ids.shape
        heads, d = self.heads, H // self.heads
        x = (F.embedding(ids, w["embeddings.word_embeddings.weight"])
             + w["embeddings.position_embeddings.weight"][:L]
             + w["embeddings.token_type_embeddings.weight"][0])
        x = F.layer_norm(x, (H,), w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], eps)
        attend = mask.bool()[:, None, None, :]
        for n in range(self.layers):
            p = f"encoder.layer.{n}."

            def lin(name: str, t: Any) -> Any:
                # called only within this layer's iteration, so the loop's p is the right one
                return F.linear(t, w[p + name + ".weight"], w[p + name + ".bias"])  # noqa: B023

            q = lin("attention.self.query", x).view(B, L, heads, d).transpose(1, 2)
            k = lin("attention.self.key", x).view(B, L, heads, d).transpose(1, 2)
            v = lin("attention.self.value", x).view(B, L, heads, d).transpose(1, 2)
            a = F.scaled_dot_product_attention(q, k, v, attn_mask=attend)
            a = a.transpose(1, 2).reshape(B, L, H)
            x = F.layer_norm(lin("attention.output.dense", a) + x, (H,),
                             w[p + "attention.output.LayerNorm.weight"], w[p + "attention.output.LayerNorm.bias"], eps)
            inner = F.gelu(lin("intermediate.dense", x))
            x = F.layer_norm(lin("output.dense", inner) + x, (H,),
                             w[p + "output.LayerNorm.weight"], w[p + "output.LayerNorm.bias"], eps)
        m = mask.to(x.dtype).unsqueeze(-1)
        pooled = (x * m).sum(1) / torch.clamp(m.sum(1), min=1e-9)
        return F.normalize(pooled, p=2, dim=1)

    def encode(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Unit-length float32 vectors, one row per text; batches of texts of similar length."""
        import torch

        out = np.zeros((len(texts), self.hidden), dtype=np.float32)
        with torch.inference_mode():
            for chunk, ids, mask in self.batches(self.tokenizer, texts, batch_size):
                out[chunk] = self._forward(torch.from_numpy(ids), torch.from_numpy(mask)).numpy()
        return out
