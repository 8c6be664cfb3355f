"""Faster CPU forward passes for the MiniCheck procedure, with the same arithmetic (``kinds``).

Nothing here changes what the model computes, only how (scores equal the plain model's within
float32 rounding, checked by the parity tests):

- ``length_batches``: texts sorted by their token length and cut into batches so that padding
  stays small (the authors pad each pair's chunks to the longest; a short last chunk then costs a
  full one);
- ``speed_up_deberta``: DeBERTa-v2/v3's disentangled attention without its copies. The position
  projections of the relative embeddings do not depend on the input: they are computed once per
  layer and kept (scaled), the query never repeats them per text, and the softmax runs in
  PyTorch's fused ``scaled_dot_product_attention`` with the content-to-position and
  position-to-content terms as its additive bias;
- ``t5_support_logits``: the one decoder step of the seq2seq checker with its cross-attention
  read from the encoder states directly (``q·(Wk·E)ᵀ = (q·Wk)·Eᵀ`` and ``p·(Wv·E) = Wv·(p·E)``),
  instead of projecting every encoder state to keys and values in 24 layers for one query;
  only the logits of the two answer tokens are computed.
"""
from __future__ import annotations

import math
import types
from typing import Any, Sequence

PADDING_SLACK = 1.10          # a batch's padded tokens at most 10% over its texts' own tokens
MAX_BATCH_TOKENS = 8192        # padded tokens a batch (activations stay in cache-friendly sizes)


def length_batches(lengths: Sequence[int], batch_size: int, slack: float = PADDING_SLACK,
                   max_tokens: int = MAX_BATCH_TOKENS) -> list[list[int]]:
    """Indices of ``lengths`` in batches, longest first: at most ``batch_size`` texts, padded to
    the batch's first (longest) text within ``slack`` of their own tokens and ``max_tokens`` in all."""
    order = sorted(range(len(lengths)), key=lambda i: -lengths[i])
    batches: list[list[int]] = []
    current: list[int] = []
    own = 0
    for i in order:
        if current:
            longest = lengths[current[0]]
            padded = longest * (len(current) + 1)
            if len(current) >= batch_size or padded > max_tokens or padded > slack * (own + lengths[i]):
                batches.append(current)
                current, own = [], 0
        current.append(i)
        own += lengths[i]
    if current:
        batches.append(current)
    return batches


# -- DeBERTa-v2/v3 -----------------------------------------------------------------------------

def _deberta_attention(self: Any, hidden_states: Any, attention_mask: Any, output_attentions: bool = False,
                       query_states: Any = None, relative_pos: Any = None, rel_embeddings: Any = None) -> Any:
    """DisentangledSelfAttention.forward (transformers' DeBERTa-v2) with the same result, fewer copies."""
    import torch

    if output_attentions or query_states is not None or not self.relative_attention:
        return self._plain_forward(hidden_states, attention_mask, output_attentions, query_states=query_states,
                                   relative_pos=relative_pos, rel_embeddings=rel_embeddings)
    batch, n, _ = hidden_states.shape
    heads = self.num_attention_heads

    def split(x: Any) -> Any:       # (B, n, H*d) -> (B, H, n, d), a view
        return x.view(x.size(0), x.size(1), heads, -1).transpose(1, 2)

    q, k, v = (split(p(hidden_states)) for p in (self.query_proj, self.key_proj, self.value_proj))
    scale_factor = 1 + ("c2p" in self.pos_att_type) + ("p2c" in self.pos_att_type)
    scale = math.sqrt(q.size(-1) * scale_factor)
    span = self.pos_ebd_size
    pos_key, pos_query = self._positions(rel_embeddings, span, scale, split)
    if relative_pos is None:
        from transformers.models.deberta_v2.modeling_deberta_v2 import build_relative_position

        relative_pos = build_relative_position(q, k, bucket_size=self.position_buckets,
                                               max_position=self.max_relative_positions)
    rel = relative_pos.reshape(n, n).to(device=q.device, dtype=torch.long)
    bias = None
    if "c2p" in self.pos_att_type:
        index = torch.clamp(rel + span, 0, span * 2 - 1).expand(batch, heads, n, n)
        bias = torch.gather(torch.matmul(q, pos_key.transpose(-1, -2)), -1, index)
    if "p2c" in self.pos_att_type:
        index = torch.clamp(-rel + span, 0, span * 2 - 1).expand(batch, heads, n, n)
        p2c = torch.gather(torch.matmul(k, pos_query.transpose(-1, -2)), -1, index).transpose(-1, -2)
        bias = p2c if bias is None else bias.add_(p2c)
    mask = attention_mask.bool()
    if bias is None:
        bias = torch.zeros((batch, 1, n, n), dtype=q.dtype, device=q.device)
    bias = bias.masked_fill_(~mask, torch.finfo(q.dtype).min)
    context = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=bias, scale=1.0 / scale)
    return context.transpose(1, 2).reshape(batch, n, -1), None


def _deberta_positions(self: Any, rel_embeddings: Any, span: int, scale: float, split: Any) -> tuple[Any, Any]:
    """The relative embeddings projected to keys and queries (scaled), once per layer: they do not
    depend on the input (the weights are fixed while judging)."""
    key = (span, rel_embeddings.dtype, str(rel_embeddings.device))
    cached = self.__dict__.get("_sc_positions")
    if cached is not None and cached[0] == key:
        return cached[1]
    rel = rel_embeddings[0: span * 2, :].unsqueeze(0)
    key_proj: Any = self.key_proj if self.share_att_key else getattr(self, "pos_key_proj", None)
    query_proj: Any = self.query_proj if self.share_att_key else getattr(self, "pos_query_proj", None)
    pos_key = split(key_proj(rel)) / scale if "c2p" in self.pos_att_type else None
    pos_query = split(query_proj(rel)) / scale if "p2c" in self.pos_att_type else None
    value = (pos_key, pos_query)
    self.__dict__["_sc_positions"] = (key, value)
    return value


def speed_up_deberta(model: Any) -> int:
    """Give every DeBERTa-v2 attention of ``model`` the copy-free forward; how many were changed."""
    try:
        from transformers.models.deberta_v2.modeling_deberta_v2 import DisentangledSelfAttention
    except ImportError:
        return 0
    changed = 0
    for module in model.modules():
        if isinstance(module, DisentangledSelfAttention) and "_plain_forward" not in module.__dict__:
            patched: Any = module   # new attributes and a replaced method: beyond what the class declares
            patched._plain_forward = patched.forward
            patched._positions = types.MethodType(_deberta_positions, patched)
            patched.forward = types.MethodType(_deberta_attention, patched)
            changed += 1
    return changed


# -- T5 ----------------------------------------------------------------------------------------

def t5_support_logits(model: Any, input_ids: Any, attention_mask: Any, answer_ids: Sequence[int]) -> Any:
    """The logits of ``answer_ids`` at the first decoder step from ``decoder_input_ids`` [[0]], as
    ``model(input_ids, attention_mask, decoder_input_ids=zeros).logits[:, 0, answer_ids]``.

    With one decoder position its self-attention is the value of that position (softmax over one
    score), and cross-attention is computed from the encoder states without projecting them, as batched
    matrix products (ONNX Runtime runs them as MatMuls, faster than the same sums as Einsums)."""
    import torch

    config = model.config
    encoded = model.encoder(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state   # (B, n, d)
    batch = encoded.size(0)
    decoder = model.decoder
    start = torch.full((batch, 1), int(config.decoder_start_token_id or 0), dtype=torch.long, device=encoded.device)
    x = decoder.embed_tokens(start)                                     # (B, 1, d)
    heads, d_kv = config.num_heads, config.d_kv
    keep = attention_mask.to(encoded.dtype)
    masked = (1.0 - keep)[:, None, :] * torch.finfo(encoded.dtype).min   # (B, 1, n)
    for block in decoder.block:
        self_attn = block.layer[0]
        h = self_attn.layer_norm(x)
        attn = self_attn.SelfAttention
        x = x + attn.o(attn.v(h))                                      # softmax over one position is 1
        cross = block.layer[1]
        h = cross.layer_norm(x)
        attn = cross.EncDecAttention
        q = attn.q(h).view(batch, heads, d_kv)                         # (B, H, dk)
        wk = attn.k.weight.view(heads, d_kv, -1)                       # (H, dk, d)
        qk = torch.einsum("bhk,hkd->bhd", q, wk)                       # q·Wk: (B, H, d)
        scores = torch.matmul(qk, encoded.transpose(1, 2)) + masked     # (B, H, n); T5 does not scale scores
        probs = scores.float().softmax(dim=-1).to(encoded.dtype)
        pooled = torch.matmul(probs, encoded)                           # p·E: (B, H, d)
        wv = attn.v.weight.view(heads, d_kv, -1)
        context = torch.einsum("bhd,hkd->bhk", pooled, wv).reshape(batch, 1, heads * d_kv)
        x = x + attn.o(context)
        x = block.layer[2](x)                                          # feed-forward with its own norm and residual
    x = decoder.final_layer_norm(x)
    if getattr(config, "scale_decoder_outputs", getattr(config, "tie_word_embeddings", False)):
        x = x * (config.d_model ** -0.5)
    weight = model.lm_head.weight[list(answer_ids)]                    # (2, d)
    logits = x[:, 0, :] @ weight.t()
    if getattr(model.lm_head, "bias", None) is not None:
        logits = logits + model.lm_head.bias[list(answer_ids)]
    return logits
