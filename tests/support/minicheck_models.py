"""MiniCheck-shaped models built from a config, for the parity tests and bench/local_judge.py.

Each has the architecture of one MiniCheck model and a tokenizer whose special tokens are those
of the real one (RoBERTa ``<s> … </s>``, DeBERTa-v3 ``[CLS] … [SEP]`` with EOS ``[SEP]``, T5 ``… </s>``
and a word-start piece ``▁`` first in "0" as in T5's vocabulary). The tokenizers are built with the
``tokenizers`` library from a vocabulary of real words (transformers 5 ignores ``vocab_file=``).
Weights are random: the scores move with every change of input, which is what parity needs.
``size="large"`` gives the real models' shapes (RoBERTa-large, DeBERTa-v3-large, Flan-T5-large)
for timing: the cost of a forward pass does not depend on the weights' values.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

import torch
from tokenizers import Tokenizer, decoders, models, normalizers, pre_tokenizers, processors
from transformers import PreTrainedTokenizerFast

from tests.support.tiny_model import BASE_WORDS

KINDS = ("roberta", "deberta", "t5")
CHARS = "abcdefghijklmnopqrstuvwxyz0123456789.,;:!?'\"()-%/"


def _wordpiece(specials: tuple[str, ...], template: str, eos: str, cls: str, pad: str, unk: str,
               max_length: int, vocab_size: int | None) -> PreTrainedTokenizerFast:
    vocab: dict[str, int] = {}
    for token in (*specials, *CHARS, *("##" + c for c in CHARS), *BASE_WORDS):
        vocab.setdefault(token, len(vocab))
    tok = Tokenizer(models.WordPiece(vocab=vocab, unk_token=unk))
    tok.normalizer = normalizers.BertNormalizer(lowercase=True)
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    tok.decoder = decoders.WordPiece()
    tok.post_processor = processors.TemplateProcessing(
        single=template, special_tokens=[(t, vocab[t]) for t in specials if t in template])
    return PreTrainedTokenizerFast(tokenizer_object=tok, bos_token=cls, eos_token=eos, cls_token=cls,
                                   sep_token=eos, pad_token=pad, unk_token=unk, model_max_length=max_length)


def _t5_tokenizer() -> PreTrainedTokenizerFast:
    # T5's first ids: <pad> 0, </s> 1, <unk> 2, then "▁" (3): "0" is "▁" + "0", "1" is one piece "▁1"
    pieces: list[tuple[str, float]] = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("\u2581", -2.0)]
    pieces += [(c, -8.0) for c in CHARS if c != "1"]
    pieces += [("\u25811", -1.0), ("1", -8.0)]
    pieces += [("\u2581" + w, -4.0) for w in dict.fromkeys(BASE_WORDS) if w != "1"]
    tok = Tokenizer(models.Unigram(pieces, unk_id=2))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Metaspace()
    tok.decoder = decoders.Metaspace()
    tok.post_processor = processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, eos_token="</s>", pad_token="<pad>",
                                   unk_token="<unk>", model_max_length=512)


def tokenizer_for(kind: str) -> PreTrainedTokenizerFast:
    if kind == "roberta":
        return _wordpiece(("<s>", "<pad>", "</s>", "<unk>"), "<s> $A </s>", "</s>", "<s>", "<pad>", "<unk>", 512, None)
    if kind == "deberta":
        return _wordpiece(("[PAD]", "[CLS]", "[SEP]", "[UNK]", "[MASK]"), "[CLS] $A [SEP]", "[SEP]", "[CLS]",
                          "[PAD]", "[UNK]", 512, None)
    if kind == "t5":
        return _t5_tokenizer()
    raise ValueError(kind)


def config_for(kind: str, vocab_size: int, size: str = "tiny", pad_id: int = 0) -> Any:
    from transformers import DebertaV2Config, RobertaConfig, T5Config

    large = size == "large"
    if kind == "roberta":   # RoBERTa-large: 24 x 1024, vocab 50,265
        return RobertaConfig(
            vocab_size=50265 if large else vocab_size, hidden_size=1024 if large else 32,
            num_hidden_layers=24 if large else 2, num_attention_heads=16 if large else 2,
            intermediate_size=4096 if large else 64, max_position_embeddings=514, pad_token_id=pad_id,
            bos_token_id=0, eos_token_id=2, num_labels=2, initializer_range=0.02 if large else 0.4,
            hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    if kind == "deberta":   # DeBERTa-v3-large: 24 x 1024, relative positions, vocab 128,100
        return DebertaV2Config(
            vocab_size=128100 if large else vocab_size, hidden_size=1024 if large else 32,
            num_hidden_layers=24 if large else 2, num_attention_heads=16 if large else 2,
            intermediate_size=4096 if large else 64, max_position_embeddings=512, relative_attention=True,
            position_buckets=256, norm_rel_ebd="layer_norm", share_att_key=True, pos_att_type=["p2c", "c2p"],
            position_biased_input=False, type_vocab_size=0, pad_token_id=pad_id, num_labels=2,
            initializer_range=0.02 if large else 0.4, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    if kind == "t5":        # Flan-T5-large: 24 + 24 layers, d_model 1024, gated GELU, vocab 32,128
        return T5Config(
            vocab_size=32128 if large else vocab_size, d_model=1024 if large else 32, d_kv=64 if large else 16,
            d_ff=2816 if large else 64, num_layers=24 if large else 2, num_decoder_layers=24 if large else 2,
            num_heads=16 if large else 2, feed_forward_proj="gated-gelu", tie_word_embeddings=False,
            dropout_rate=0.0, decoder_start_token_id=0, pad_token_id=0, eos_token_id=1,
            initializer_factor=1.0 if large else 8.0)
    raise ValueError(kind)


def build_minicheck_model(folder: Path, kind: str, *, size: str = "tiny", seed: int = 0) -> Path:
    """Save a MiniCheck-shaped model of ``kind`` (roberta, deberta, t5) with random weights."""
    from transformers import (
        DebertaV2ForSequenceClassification,
        RobertaForSequenceClassification,
        T5ForConditionalGeneration,
    )

    tokenizer = tokenizer_for(kind)
    config = config_for(kind, len(tokenizer), size, pad_id=tokenizer.pad_token_id)
    torch.manual_seed(seed)
    cls = {"roberta": RobertaForSequenceClassification, "deberta": DebertaV2ForSequenceClassification,
           "t5": T5ForConditionalGeneration}[kind]
    model = cls(config).eval()
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder
