"""The kinds of model ``local:`` accepts, told apart by their config, and what differs between them.

- ``classifier``: a sequence-classification model (3-label NLI, or a 2-label fact checker such as
  MiniCheck-RoBERTa/DeBERTa whose config says only ``LABEL_0``/``LABEL_1``: 1 = supported);
- ``seq2seq``: an encoder-decoder checker of the MiniCheck-Flan-T5 kind. Its input is
  ``premise: {chunk} hypothesis: {claim}`` and its score is the probability of the token "1"
  against "0" at the first decoder step (softmax over those two logits).

A seq2seq checker reads the source in chunks of whole sentences of about 400 words (MiniCheck's
chunking); the pair's score is the highest chunk score. The spec may name the supported label:
``local:DIR#label=NAME`` (or ``#label=INDEX``).
"""
from __future__ import annotations

import json
import os
from typing import Any, Sequence

from ..evidence import source_sentences

CHUNK_WORDS = 400
SEQ2SEQ_MAX_LENGTH = 1024      # T5 has relative positions: a 400-word chunk and its claim fit whole
SEQ2SEQ_PROMPT = "premise: {premise} hypothesis: {hypothesis}"
# spec option names -> LocalJudge options
SPEC_OPTION_NAMES = {"label": "supported_label", "supported_label": "supported_label",
                     "threshold": "threshold", "device": "device", "max_windows": "max_windows",
                     "batch_size": "batch_size", "max_length": "max_length"}


def split_spec_options(arg: str) -> tuple[str, dict[str, str]]:
    """``DIR#label=NAME,threshold=0.6`` -> (``DIR``, {"supported_label": "NAME", "threshold": "0.6"}).

    A folder whose own name holds ``#`` is taken whole; an unknown option is an error that lists the known ones.
    """
    if "#" not in arg or os.path.isdir(os.path.expanduser(arg)):
        return arg, {}
    path, _, tail = arg.rpartition("#")
    options: dict[str, str] = {}
    for part in tail.replace("&", ",").split(","):
        if not part.strip():
            continue
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep or key not in SPEC_OPTION_NAMES:
            raise ValueError(f"'{part.strip()}' in local:{arg} is not an option of the local judge; "
                             "write local:DIR#label=NAME (the config's label that means supported)")
        options[SPEC_OPTION_NAMES[key]] = value.strip()
    return path.strip(), options


def config_kind(config: dict[str, Any]) -> str:
    """``seq2seq`` for an encoder-decoder config (T5, BART...), else ``classifier``."""
    architectures = [str(a) for a in config.get("architectures") or ()]
    if config.get("is_encoder_decoder") or any(a.endswith("ForConditionalGeneration") for a in architectures):
        return "seq2seq"
    return "classifier"


def config_kind_of_bytes(config: bytes) -> str:
    try:
        data = json.loads(config) if config else {}
    except ValueError:
        return "classifier"
    return config_kind(data) if isinstance(data, dict) else "classifier"


def sentence_chunks(text: str, max_words: int = CHUNK_WORDS) -> list[str]:
    """The text cut into chunks of whole sentences of at most ``max_words`` words (a longer
    sentence is a chunk of its own), each chunk verbatim from the text."""
    chunks: list[str] = []
    current: list[str] = []
    words = 0
    for sentence in source_sentences(text):
        n = len(sentence.split())
        if current and words + n > max_words:
            chunks.append(" ".join(current))
            current, words = [], 0
        current.append(sentence)
        words += n
    if current:
        chunks.append(" ".join(current))
    return chunks


def answer_token_id(tokenizer: Any, text: str) -> int:
    """The vocabulary id the decoder emits first for ``text`` ("1" or "0"); ValueError when it has none."""
    ids = [i for i in tokenizer(text, add_special_tokens=False)["input_ids"]
           if i != getattr(tokenizer, "unk_token_id", None)]
    # sentencepiece may put a lone word-start piece first ("▁", "1"): the last piece is the digit
    if not ids:
        raise ValueError(f"the tokenizer has no token for '{text}'")
    return int(ids[-1])


def load_seq2seq(path: str, local_only: bool) -> tuple[Any, Any, int, int]:
    """Tokenizer, model and the ids of "1" (supported) and "0" of a seq2seq checker."""
    from transformers import AutoModelForSeq2SeqLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=local_only)
    model = AutoModelForSeq2SeqLM.from_pretrained(path, local_files_only=local_only)
    try:
        yes_id, no_id = answer_token_id(tokenizer, "1"), answer_token_id(tokenizer, "0")
    except ValueError as exc:
        raise ValueError(f"{exc}: not a checker of the MiniCheck-Flan-T5 kind, which answers 1 or 0") from exc
    return tokenizer, model, yes_id, no_id


def score_seq2seq(tokenizer: Any, model: Any, device: str, premises: Sequence[str],
                  hypotheses: Sequence[str], yes_id: int, no_id: int, max_length: int) -> list[float]:
    """P("1") against "0" at the first decoder step, one per (premise, hypothesis)."""
    import torch

    texts = [SEQ2SEQ_PROMPT.format(premise=p, hypothesis=h) for p, h in zip(premises, hypotheses)]
    encoded = tokenizer(texts, padding=True, truncation=True, max_length=max_length, return_tensors="pt")
    encoded = {k: v.to(device) for k, v in encoded.items() if k in ("input_ids", "attention_mask")}
    start = model.config.decoder_start_token_id
    if start is None:
        start = model.config.pad_token_id or 0
    decoder_input_ids = torch.full((len(texts), 1), int(start), dtype=torch.long, device=device)
    logits = model(**encoded, decoder_input_ids=decoder_input_ids).logits[:, 0, :]
    pair = logits[:, [no_id, yes_id]].float().softmax(dim=-1)
    return [float(p) for p in pair[:, 1].tolist()]
