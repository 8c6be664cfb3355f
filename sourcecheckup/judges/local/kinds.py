"""The kinds of model ``local:`` accepts, told apart by their config, and how each is run.

- ``classifier``: a sequence-classification model. A 3-label NLI model reads each window of the
  source as the premise and the statement as the hypothesis (a sentence pair, as NLI model cards
  prescribe). A MiniCheck classifier (MiniCheck-RoBERTa/DeBERTa, told by its name, the catalogue
  entry it was pulled from or ``#procedure=minicheck``) is run as its authors run it (below).
- ``seq2seq``: an encoder-decoder checker of the MiniCheck-Flan-T5 kind, always run as its
  authors run it.

MiniCheck, as in Liyan06/MiniCheck (minicheck/inference.py, minicheck/minicheck.py):
- the document is cut into sentences per line (NLTK punkt there; SourceCheckup's own sentence
  splitter here, the one deliberate difference), then into chunks of whole sentences of about
  400 tokens counted with the model's tokenizer (classifier) or 500 words (seq2seq);
- each chunk is read with the claim as ONE text, ``chunk + EOS + claim`` (``"predict: "`` first for
  the seq2seq kind), truncated at 512 tokens (RoBERTa), 2,048 (DeBERTa, Flan-T5);
- classifier: softmax over the two logits, index 1 = supported; seq2seq: one decoder step from
  decoder_input_ids [[0]], softmax over the logits of the first token of "0" and of "1";
- the pair's score is the highest chunk score, supported when it is above 0.5.
"""
from __future__ import annotations

import contextlib
import json
import logging
import os
import threading
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterator, Sequence

from ...evidence import source_sentences

log = logging.getLogger(__name__)

# spec option names -> LocalJudge options
SPEC_OPTION_NAMES = {"label": "supported_label", "supported_label": "supported_label",
                     "threshold": "threshold", "device": "device", "max_windows": "max_windows",
                     "batch_size": "batch_size", "max_length": "max_length",
                     "procedure": "procedure", "quantize": "quantize", "threads": "threads",
                     "runtime": "runtime"}
PROCEDURES = ("minicheck", "nli")

# Liyan06/MiniCheck minicheck/minicheck.py, MiniCheck._score_inferencer and Inferencer.__init__
MINICHECK_CHUNK_TOKENS = 400          # classifier: tokens of the model's tokenizer
MINICHECK_CHUNK_WORDS = 500           # seq2seq: whitespace words
MINICHECK_MAX_LENGTH = {"roberta": 512, "deberta-v2": 2048, "deberta": 2048, "t5": 2048}
MINICHECK_SEQ2SEQ_PREFIX = "predict: "
MINICHECK_BATCH_SIZE = 16
MINICHECK_THRESHOLD = 0.5
MINICHECK_PROMPT_VERSION = "minicheck-1"


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
                             "write local:DIR#label=NAME (the config's label that means supported); "
                             f"options: {', '.join(sorted(SPEC_OPTION_NAMES))}")
        options[SPEC_OPTION_NAMES[key]] = value.strip()
    return path.strip(), options


def config_kind(config: dict[str, Any]) -> str:
    """``seq2seq`` for an encoder-decoder config (T5, BART...), else ``classifier``."""
    architectures = [str(a) for a in config.get("architectures") or ()]
    if config.get("is_encoder_decoder") or any(a.endswith("ForConditionalGeneration") for a in architectures):
        return "seq2seq"
    return "classifier"


def config_of_bytes(config: bytes) -> dict[str, Any]:
    try:
        data = json.loads(config) if config else {}
    except ValueError:
        return {}
    return data if isinstance(data, dict) else {}


def config_kind_of_bytes(config: bytes) -> str:
    return config_kind(config_of_bytes(config))


def procedure_for(config: dict[str, Any], names: Sequence[str], override: str | None = None) -> str:
    """``minicheck`` or ``nli``: how a model is run.

    A seq2seq checker is MiniCheck-Flan-T5's kind; a classifier is MiniCheck when its name, the
    repository it was pulled from or its config's ``_name_or_path`` says MiniCheck; ``override``
    (option ``procedure``) decides when given."""
    if override:
        value = str(override).strip().lower()
        if value not in PROCEDURES:
            raise ValueError(f"procedure={override} is not one of {', '.join(PROCEDURES)}")
        if value == "nli" and config_kind(config) == "seq2seq":
            raise ValueError("a seq2seq checker is run only by the MiniCheck procedure: leave procedure out")
        return value
    if config_kind(config) == "seq2seq":
        return "minicheck"
    own = [os.path.basename(os.path.normpath(str(n))) if os.path.isdir(os.path.expanduser(str(n))) else str(n)
           for n in (*names, config.get("_name_or_path") or "")]   # a folder's own name, not its parents'
    text = " ".join(own).lower()
    return "minicheck" if "minicheck" in text else "nli"


def minicheck_max_length(model_type: str, fallback: int) -> int:
    """512 tokens for RoBERTa, 2,048 for DeBERTa and Flan-T5, as the authors' Inferencer sets them."""
    return MINICHECK_MAX_LENGTH.get(model_type, fallback)


def minicheck_sentences(text: str, split: Callable[[str], list[str]] = source_sentences) -> list[str]:
    # Liyan06/MiniCheck minicheck/inference.py, sent_tokenize_with_newlines (punkt -> ``split``)
    out: list[str] = []
    for block in text.split("\n"):
        out.extend(split(block))
        out.append("\n")
    return out[:-1]


def minicheck_chunks(text: str, chunk_size: int, count: Callable[[str], int],
                     split: Callable[[str], list[str]] = source_sentences) -> list[str]:
    """The document's chunks of whole sentences, each at most ``chunk_size`` by ``count`` (a longer
    sentence is a chunk of its own), empty chunks dropped."""
    # Liyan06/MiniCheck minicheck/inference.py, Inferencer.inference_per_example (chunks and the clean-up)
    sentences = minicheck_sentences(text, split) or [""]
    raw: list[str] = []
    current: list[str] = []
    size = 0
    for sentence in sentences:
        n = count(sentence)
        if size + n > chunk_size:
            raw.append(" ".join(current))
            current, size = [sentence], n
        else:
            current.append(sentence)
            size += n
    if current:
        raw.append(" ".join(current))
    chunks = [c.replace(" \n ", "\n").strip() for c in raw]
    return [c for c in chunks if c != ""]


def word_count(text: str) -> int:
    return len(text.split())


def token_counter(tokenizer: Any, max_length: int) -> Callable[[str], int]:
    """Tokens of a sentence as the authors count them (no special tokens, capped at the model's length)."""
    def count(sentence: str) -> int:
        return len(tokenizer(sentence, padding=False, add_special_tokens=False,
                             max_length=max_length, truncation=True)["input_ids"])
    return count


def minicheck_text(chunk: str, claim: str, eos: str, prefix: str = "") -> str:
    # Liyan06/MiniCheck minicheck/inference.py, Inferencer.batch_tokenize: eos_token.join([doc, claim])
    return prefix + eos.join([chunk, claim])


def eos_of(tokenizer: Any) -> str:
    """The tokenizer's EOS token (RoBERTa ``</s>``, DeBERTa-v3 ``[SEP]``, T5 ``</s>``); SEP when it has none."""
    token = getattr(tokenizer, "eos_token", None) or getattr(tokenizer, "sep_token", None)
    if not token:
        raise ValueError("the tokenizer has neither an EOS nor a SEP token to put between chunk and claim")
    return str(token)


@dataclass(frozen=True)
class MiniCheckModel:
    """What scoring needs: the tokenizer, the model, its kind and (seq2seq) the answer tokens."""

    tokenizer: Any
    model: Any
    device: str
    kind: str                      # classifier | seq2seq
    max_length: int
    answer_ids: tuple[int, int] = (0, 0)   # seq2seq: first tokens of "0" and of "1"
    supported_index: int = 1               # MiniCheck: 1 = supported (``#label=`` may name another)
    exact_model: Any = None                # the float32 model when ``model`` has int8 weights
    runtime: str = "torch"                 # or "onnx": ``model`` is an ONNX Runtime session (onnx_runtime)


def minicheck_probabilities(m: MiniCheckModel, texts: Sequence[str]) -> list[float]:
    """P(supported) of each ``chunk + EOS + claim`` text, in one padded batch."""
    # Liyan06/MiniCheck minicheck/inference.py, Inferencer.batch_tokenize and Inferencer.inference
    encoded = m.tokenizer(list(texts), max_length=m.max_length, truncation=True, padding=True,
                          return_tensors="pt")
    return encoded_probabilities(m, encoded)


def encoded_probabilities(m: MiniCheckModel, encoded: Any) -> list[float]:
    """P(supported) of each text of a padded batch (input_ids, attention_mask)."""
    import torch

    from .fast import t5_support_logits

    run = getattr(m.model, "support_logits", None)     # ONNX Runtime: the same pass, exported (onnx_runtime)
    if run is not None:
        logits = run(encoded["input_ids"], encoded["attention_mask"])
        index = 1 if m.kind == "seq2seq" else m.supported_index
        return [float(p) for p in logits.float().softmax(dim=-1)[:, index].tolist()]
    if m.kind == "seq2seq":
        ids, mask = encoded["input_ids"].to(m.device), encoded["attention_mask"].to(m.device)
        if getattr(m.model.config, "model_type", "") == "t5":   # the same step, fewer operations (fast.py)
            logits = t5_support_logits(m.model, ids, mask, m.answer_ids)
        else:
            decoder_input_ids = torch.zeros((ids.size(0), 1), dtype=torch.long, device=m.device)
            logits = m.model(input_ids=ids, attention_mask=mask, decoder_input_ids=decoder_input_ids).logits
            logits = logits.squeeze(1)[:, list(m.answer_ids)]
        probs = logits.float().softmax(dim=-1)[:, 1]
    else:
        inputs = {k: v.to(m.device) for k, v in encoded.items()}
        probs = m.model(**inputs).logits.float().softmax(dim=-1)[:, m.supported_index]
    return [float(p) for p in probs.tolist()]


def answer_token_id(tokenizer: Any, text: str) -> int:
    """The first vocabulary id of ``text`` ("0" or "1"), as the authors take it: for T5 the first
    token of "0" is the word-start piece (id 3) and "1" is one piece (id 209)."""
    ids = tokenizer(text, add_special_tokens=False)["input_ids"]
    if not ids or ids[0] == getattr(tokenizer, "unk_token_id", None):
        raise ValueError(f"the tokenizer has no token for '{text}'")
    return int(ids[0])


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


def quantize_int8(model: Any) -> Any:
    """The model with int8 dynamic quantisation of its linear layers (CPU only)."""
    import warnings

    import torch

    with warnings.catch_warnings():   # torch.ao.quantization is deprecated in favour of torchao, not installed here
        warnings.simplefilter("ignore")
        return torch.ao.quantization.quantize_dynamic(model, {torch.nn.Linear}, dtype=torch.qint8)


def cached_chunks(source: Any, m: MiniCheckModel) -> list[str]:
    """The source's chunks as the authors cut them, kept in ``source.cache`` so every statement reuses them."""
    key = ("minicheck-chunks", m.kind, m.max_length, id(m.tokenizer))
    chunks = source.cache.get(key)
    if chunks is None:
        if m.kind == "seq2seq":
            chunks = minicheck_chunks(source.text or "", MINICHECK_CHUNK_WORDS, word_count)
        else:
            chunks = minicheck_chunks(source.text or "", MINICHECK_CHUNK_TOKENS, token_counter(m.tokenizer, m.max_length))
        source.cache[key] = chunks
    return chunks


_stop = threading.local()     # the stop request of the judging running in this thread (judges.base.in_stoppable_thread)


@contextlib.contextmanager
def stopping_on(event: threading.Event | None) -> Iterator[None]:
    """Within the block, ``event`` is the stop request that :func:`check_stop` looks at in this thread."""
    _stop.event = event
    try:
        yield
    finally:
        _stop.event = None


def check_stop() -> None:
    """Between two batches: raise JudgeStopped when the run no longer waits for this thread's scores (Ctrl-C,
    the app's Cancel), so an interrupted run ends after the batch in progress, not after every batch left."""
    event = getattr(_stop, "event", None)
    if event is not None and event.is_set():
        from ..base import JudgeStopped

        raise JudgeStopped("the run was interrupted")


def score_isolated(m: MiniCheckModel, texts: Sequence[str], batch_size: int,
                   on_failure: Callable[[], None] = lambda: None) -> list[float | Exception]:
    """P(supported) of every text, tokenised once, in batches of similar length (little padding:
    fast.length_batches); a failing batch is retried text by text so one bad pair stays alone."""
    from .fast import length_batches

    out: list[float | Exception] = [0.0] * len(texts)
    if not texts:
        return out
    ids = m.tokenizer(list(texts), max_length=m.max_length, truncation=True)["input_ids"]
    for batch in length_batches([len(i) for i in ids], max(1, batch_size)):
        check_stop()
        probs: list[float | Exception]
        try:
            encoded = m.tokenizer.pad({"input_ids": [ids[i] for i in batch]}, return_tensors="pt")
            probs = list(encoded_probabilities(m, encoded))
        except Exception as exc:
            log.warning("local judge: batch of %d failed (%s: %s); retrying one by one",
                        len(batch), type(exc).__name__, exc)
            on_failure()
            probs = []
            for i in batch:
                check_stop()
                try:
                    probs.extend(minicheck_probabilities(m, [texts[i]]))
                except Exception as one:
                    on_failure()
                    probs.append(one)
        for i, p in zip(batch, probs):
            out[i] = p
    return out


INT8_RECHECK_BAND = 0.25


def score_checked(m: MiniCheckModel, texts: Sequence[str], batch_size: int, threshold: float,
                  on_failure: Callable[[], None] = lambda: None) -> tuple[list[float | Exception], int]:
    """Scores with int8 weights where the label cannot change: a text whose int8 score lies within
    ``INT8_RECHECK_BAND`` of the threshold is scored again in float32 (int8 errors on the parity
    set stayed below that band). Returns the scores and how many texts were scored again."""
    scores = score_isolated(m, texts, batch_size, on_failure)
    if m.exact_model is None:
        return scores, 0
    near = [i for i, s in enumerate(scores)
            if isinstance(s, Exception) or abs(s - threshold) < INT8_RECHECK_BAND]
    exact = replace(m, model=m.exact_model, exact_model=None, runtime="torch")
    for i, s in zip(near, score_isolated(exact, [texts[i] for i in near], batch_size, on_failure)):
        scores[i] = s
    return scores, len(near)


def minicheck_rationale(m: MiniCheckModel, score: float, chunks: int, threshold: float,
                        supported_name: str, quantized: bool) -> str:
    """What the verdict says about the procedure that produced it."""
    plural = "s" * (chunks != 1)
    if m.kind == "seq2seq":
        what = "Support probability ('1' against '0' as the checker's first token)"
        how = f"{chunks} chunk{plural} of ~{MINICHECK_CHUNK_WORDS} words, 'predict: ' + chunk + EOS + statement"
    else:
        what = f"Support probability (label '{supported_name}')"
        how = f"{chunks} chunk{plural} of ~{MINICHECK_CHUNK_TOKENS} tokens, chunk + EOS + statement"
    return (f"{what} {score:.2f} in the best of {chunks} chunk{plural}; MiniCheck procedure: {how} as one "
            f"text truncated at {m.max_length} tokens, max P(support) {score:.2f}"
            f"{', int8 weights' if quantized else ''}{' on ONNX Runtime' if m.runtime == 'onnx' else ''}; "
            f"supported above {threshold:.2f}.")


QUOTE_CANDIDATES = 4


def quote_candidates(statement: str, chunk: str, k: int = QUOTE_CANDIDATES) -> list[str]:
    """The ``k`` sentences of a chunk that BM25 ranks highest for the statement, best first."""
    from ...evidence import SourceText, rank_passages

    sentences = source_sentences(chunk) or [chunk]
    ranked = rank_passages(statement, SourceText(url="", text=chunk, passages=sentences), k=k)
    return [sentences[i] for i, _ in ranked] or sentences[:1]


def pulled_from(folder: str) -> str:
    """The hub repository a pulled or imported model came from (its manifest), or ''."""
    if not os.path.isdir(os.path.expanduser(folder)):
        return ""
    from ..models_hub import MANIFEST

    try:
        data = json.loads((Path(os.path.expanduser(folder)) / MANIFEST).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return ""
    return str(data.get("repo") or "") if isinstance(data, dict) else ""


def token_pieces(text: str, budget: int, tokenizer: Any) -> list[str]:
    """``text`` if it fits ``budget`` tokens, else overlapping verbatim pieces that do."""
    try:
        enc = tokenizer(text, add_special_tokens=False, return_offsets_mapping=True)
        offsets = enc["offset_mapping"]
    except (NotImplementedError, TypeError, ValueError):   # slow tokenizers have no offsets
        approx = budget * 4
        if len(text) <= approx:
            return [text]
        step = max(1, approx * 3 // 4)
        return [text[i:i + approx] for i in range(0, len(text), step) if text[i:i + approx].strip()]
    if len(offsets) <= budget:
        return [text]
    pieces: list[str] = []
    step = max(1, budget * 3 // 4)   # a quarter overlap, so no sentence is only ever cut in two
    for start in range(0, len(offsets), step):
        end = min(start + budget, len(offsets))
        piece = text[offsets[start][0]:offsets[end - 1][1]].strip()
        if piece:
            pieces.append(piece)
        if end == len(offsets):
            break
    return pieces
