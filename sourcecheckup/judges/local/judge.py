"""``local:MODEL_ID_OR_DIR``: a transformers classifier or seq2seq checker as the judge.

Two procedures (``kinds`` tells them apart):
- NLI (3-label NLI models and any other classifier): each window of the source is the premise,
  the statement is the hypothesis, and the score is the softmax probability of the model's
  entailment / supported label. A long source is pre-ranked with BM25 and only its best
  ``max_windows`` passages are scored; the best window decides.
- MiniCheck (MiniCheck-RoBERTa/DeBERTa/Flan-T5): every chunk of the source, as the authors cut
  and feed it (``kinds``); the best chunk decides, supported above 0.5. All statements of a
  source are scored in one length-sorted batch over its chunks, cut once per source.
Nothing is downloaded unless ``allow_download`` is set, so hospital machines stay offline:
users fetch the model on a machine with internet and pass the folder.
"""
from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import os
import re
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence, cast

from ...evidence import SourceText, quote_in_source, rank_passages, source_sentences, split_passages
from ...models import Label, Verdict
from ..base import JudgeSpecError, JudgeStopped, in_stoppable_thread
from . import kinds, onnx_runtime

log = logging.getLogger(__name__)

PROMPT_VERSION = "nli-window-1"
DEFAULT_THRESHOLD = 0.5
DEFAULT_BATCH_SIZE = 16
DEFAULT_MAX_WINDOWS = 8
FALLBACK_MAX_LENGTH = 512
# Flags of a source that every verdict using it must carry.
_CARRIED_FLAGS = ("possible_injection",)

# Label names (lowercased, letters only) that mean "the premise supports the hypothesis".
SUPPORTED_LABEL_NAMES = frozenset({
    "entailment", "entailed", "entails", "entail", "supported", "supports", "support",
    "consistent", "faithful", "factual", "true", "yes",
})
_GENERIC_LABEL = re.compile(r"^label_?\d+$", re.I)


class LocalModelError(JudgeSpecError):
    """The named local model cannot be found or used as a judge."""


def supported_label_index(id2label: Mapping[int, str], override: str | int | None = None,
                          model: str = "DIR") -> int:
    """Which output of the classifier means "supported".

    The rule, in order:
    1. ``override`` (option ``supported_label``): a label name (any case) or an index;
    2. the one label named like entailment/supported (``entailment``, ``ENTAILMENT``,
       ``supported``, ``SUPPORTS``...; ``not_entailment`` does not count);
    3. a two-class model with generic names (``LABEL_0``/``LABEL_1``): index 1, the
       MiniCheck convention (1 = supported);
    otherwise an error that lists the labels and says how to name the supported one
    (``local:DIR#label=NAME`` or the option ``supported_label``).
    """
    labels = {int(i): str(name) for i, name in id2label.items()}
    shown = ", ".join(f"{i}={name}" for i, name in sorted(labels.items()))
    if override is not None and str(override).strip() != "":
        text = str(override).strip()
        if text.lstrip("-").isdigit():
            index = int(text)
            if index in labels:
                return index
            raise LocalModelError(f"supported_label={index} is not an output of this model (labels: {shown})")
        matches = [i for i, name in labels.items() if name.casefold() == text.casefold()]
        if len(matches) == 1:
            return matches[0]
        raise LocalModelError(f"supported_label='{text}' names no label of this model (labels: {shown})")
    named = [i for i, name in labels.items() if re.sub(r"[^a-z]", "", name.lower()) in SUPPORTED_LABEL_NAMES]
    if len(named) == 1:
        return named[0]
    if len(labels) == 2 and all(_GENERIC_LABEL.match(name) for name in labels.values()):
        return 1
    raise LocalModelError(
        f"cannot tell which label of local model '{model}' means 'supported': its config.json "
        f"(id2label) holds {shown}. Name the supported label in the spec, local:{model}#label=NAME "
        "(a label name or its index), or pass the option supported_label=NAME_OR_INDEX")


@dataclass(frozen=True)
class Window:
    """One premise to score: a passage of the source (or a token-sized piece of one)."""

    pair: int          # index of the (statement, source) pair it belongs to
    text: str          # verbatim text of the source


@dataclass
class _Loaded:
    tokenizer: Any
    model: Any
    device: str
    supported_index: int
    supported_name: str
    max_length: int
    kind: str = "classifier"     # or "seq2seq" (kinds)
    answer_ids: tuple[int, int] = (0, 0)   # seq2seq: the token ids of "1" (supported) and "0"
    minicheck: kinds.MiniCheckModel | None = None   # the MiniCheck procedure's model
    eos: str = ""
    quantized: bool = False


def _as_bool(value: Any) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "yes", "on")
    return bool(value)


def _is_folder_spec(arg: str) -> bool:
    return os.path.isdir(os.path.expanduser(arg))


def _config_bytes(arg: str, allow_download: bool) -> bytes:
    """The model's config.json, read without downloading; a clear error when it is absent."""
    if _is_folder_spec(arg):
        path = Path(os.path.expanduser(arg)) / "config.json"
        if not path.is_file():
            raise LocalModelError(
                f"local model folder '{arg}' has no config.json: pass the folder that "
                "save_pretrained or a Hugging Face download produced")
        return path.read_bytes()
    # a hub id is "name" or "org/name"; anything else that does not exist is a missing folder
    looks_like_path = (arg.startswith((".", "/", "~", "\\")) or arg.count("/") > 1 or "\\" in arg
                       or re.match(r"^[A-Za-z]:", arg) is not None)
    if not looks_like_path:
        try:
            from huggingface_hub import try_to_load_from_cache

            cached = try_to_load_from_cache(arg, "config.json")
        except Exception:  # a malformed repo id is simply "not cached"
            cached = None
        if isinstance(cached, str) and os.path.isfile(cached):
            return Path(cached).read_bytes()
        if allow_download:
            return b""   # the loader will fetch it; hashed after loading
    raise LocalModelError(
        f"local model '{arg}' was not found: no such folder and not in the Hugging Face cache, "
        "and downloads are off. Download the model on a machine with internet access "
        f"(for example `hf download {arg} --local-dir ./{Path(arg).name}`), copy the folder here "
        f"and pass it: --judge local:/path/to/{Path(arg).name}; for a recommended checker, "
        "`sourcecheckup models list` and `models pull NAME` (or `models import DIR --name NAME`)")


class LocalJudge:
    """Scores statement x source pairs with a local NLI / fact-checking classifier."""

    prompt_version = PROMPT_VERSION
    # the pipeline hands over all statements of a source at once: they share one batched pass
    per_source_batching = True

    def __init__(self, model: str, *, threshold: float = DEFAULT_THRESHOLD,
                 supported_label: str | int | None = None, batch_size: int = DEFAULT_BATCH_SIZE,
                 max_windows: int = DEFAULT_MAX_WINDOWS, max_length: int | None = None,
                 device: str | None = None, allow_download: bool = False,
                 config_hash: str = "", procedure: str = "nli", quantize: str = "none",
                 threads: int | None = None, runtime: str = "auto") -> None:
        self.model_ref = model
        self.name = Path(model.rstrip("/\\")).name if _is_folder_spec(model) else model
        self.id = f"local:{self.name}"
        self.threshold = float(threshold)
        self.supported_label = supported_label
        self.batch_size = max(1, int(batch_size))
        self.max_windows = max(1, int(max_windows))
        self.max_length = int(max_length) if max_length else None
        self.device = device
        self.allow_download = allow_download
        self.config_hash = config_hash
        self.procedure = procedure
        if procedure == "minicheck":
            self.prompt_version = kinds.MINICHECK_PROMPT_VERSION
        self.quantize = quantize
        self.threads = threads
        self.runtime = runtime       # auto | torch | onnx (onnx_runtime)
        self.rechecked = 0       # texts scored again in float32 because int8 put them near the threshold
        self._loaded: _Loaded | None = None
        self._load_error: Exception | None = None
        self._load_lock = threading.Lock()
        self._run_lock = threading.Lock()   # one forward pass at a time; torch uses every core
        # verify() calls waiting to be judged together, per event loop
        self._pending: dict[asyncio.AbstractEventLoop, list[tuple[str, SourceText, asyncio.Future[Verdict]]]] = {}
        self._collectors: dict[asyncio.AbstractEventLoop, asyncio.Task[None]] = {}

    # -- identity -------------------------------------------------------------------------

    @property
    def model_version(self) -> str:
        where = os.path.abspath(os.path.expanduser(self.model_ref)) if _is_folder_spec(self.model_ref) else self.model_ref
        return f"{where}@config-sha256:{self.config_hash[:12]}" if self.config_hash else where

    @property
    def loaded(self) -> bool:
        return self._loaded is not None

    # -- loading (once, lazily, in a worker thread) ---------------------------------------

    def _load_sync(self) -> _Loaded:
        with self._load_lock:
            if self._loaded is not None:
                return self._loaded
            if self._load_error is not None:
                raise self._load_error
            try:
                self._loaded = self._load_model()
                if self.threads and self._loaded.device == "cpu":
                    import torch

                    torch.set_num_threads(int(self.threads))   # PyTorch's threads for this machine
            except LocalModelError as exc:
                self._load_error = exc
                raise
            except Exception as exc:
                self._load_error = LocalModelError(
                    f"could not load local model '{self.model_ref}': {type(exc).__name__}: {exc}")
                raise self._load_error from exc
            return self._loaded

    def _load_model(self) -> _Loaded:
        import torch
        from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

        local_only = not self.allow_download
        path = os.path.expanduser(self.model_ref) if _is_folder_spec(self.model_ref) else self.model_ref
        try:
            config = AutoConfig.from_pretrained(path, local_files_only=local_only)
        except OSError as exc:
            raise LocalModelError(
                f"could not load local model '{self.model_ref}' ({exc}). Download it on a machine "
                "with internet access and pass the folder: --judge local:/path/to/model") from exc
        if kinds.config_kind(config.to_dict()) == "seq2seq":
            return self._load_seq2seq(path, local_only, torch)
        try:
            tokenizer = AutoTokenizer.from_pretrained(path, local_files_only=local_only)
            model, info = AutoModelForSequenceClassification.from_pretrained(
                path, local_files_only=local_only, output_loading_info=True)
        except OSError as exc:
            raise LocalModelError(
                f"could not load local model '{self.model_ref}' ({exc}). Download it on a machine "
                "with internet access and pass the folder: --judge local:/path/to/model") from exc
        # A checkpoint without a trained classification head would load with random head
        # weights and give confident nonsense: refuse it.
        prefix = f"{model.base_model_prefix}."
        untrained = sorted(k for k in info.get("missing_keys", ()) if not k.startswith(prefix))
        untrained += sorted(str(k[0] if isinstance(k, tuple) else k) for k in info.get("mismatched_keys", ()))
        if untrained:
            raise LocalModelError(
                f"local model '{self.model_ref}' has no trained classification head "
                f"({', '.join(untrained[:4])} not in the checkpoint): it is not an NLI or "
                "fact-checking classifier. Use a sequence-classification model such as an NLI "
                "cross-encoder or MiniCheck-RoBERTa/DeBERTa")
        index = supported_label_index(model.config.id2label, self.supported_label)
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        model.to(device).eval()
        if not self.config_hash:
            self.config_hash = hashlib.sha256(model.config.to_json_string().encode()).hexdigest()
        max_length = self._max_length(tokenizer, model.config)
        if self.procedure == "minicheck":
            max_length = self.max_length or kinds.minicheck_max_length(model.config.model_type, max_length)
        loaded = _Loaded(tokenizer=tokenizer, model=model, device=device, supported_index=index,
                         supported_name=str(model.config.id2label[index]), max_length=max_length)
        return self._with_minicheck(loaded) if self.procedure == "minicheck" else loaded

    def _with_minicheck(self, m: _Loaded) -> _Loaded:
        """The loaded model set up for the MiniCheck procedure: its EOS token, int8 weights and
        ONNX Runtime if asked (onnx_runtime.runtime_model)."""
        answer_ids = (m.answer_ids[1], m.answer_ids[0])
        try:
            model, m.quantized, runtime = onnx_runtime.runtime_model(m.model, m.kind, answer_ids, m.device,
                                                                     self.quantize, self.runtime, self.threads)
        except ValueError as exc:
            raise LocalModelError(str(exc)) from exc
        m.eos = kinds.eos_of(m.tokenizer)
        m.minicheck = kinds.MiniCheckModel(
            tokenizer=m.tokenizer, model=model, device=m.device, kind=m.kind, max_length=m.max_length,
            answer_ids=answer_ids, supported_index=m.supported_index,
            exact_model=m.model if m.quantized else None, runtime=runtime)
        return m

    def _load_seq2seq(self, path: str, local_only: bool, torch: Any) -> _Loaded:
        try:
            tokenizer, model, yes_id, no_id = kinds.load_seq2seq(path, local_only)
        except (OSError, ValueError) as exc:
            raise LocalModelError(f"could not load local model '{self.model_ref}' as a seq2seq checker: {exc}") from exc
        device = self.device or ("cuda" if torch.cuda.is_available() else "cpu")
        model.to(device).eval()
        if not self.config_hash:
            self.config_hash = hashlib.sha256(model.config.to_json_string().encode()).hexdigest()
        max_length = self.max_length or kinds.minicheck_max_length(model.config.model_type, 2048)
        return self._with_minicheck(_Loaded(
            tokenizer=tokenizer, model=model, device=device, supported_index=1, supported_name="1",
            max_length=max_length, kind="seq2seq", answer_ids=(yes_id, no_id)))

    def _max_length(self, tokenizer: Any, config: Any) -> int:
        limits = []
        if self.max_length:
            limits.append(self.max_length)
        tok_limit = getattr(tokenizer, "model_max_length", None)
        if isinstance(tok_limit, int) and 0 < tok_limit < 100_000:
            limits.append(tok_limit)
        positions = getattr(config, "max_position_embeddings", None)
        if isinstance(positions, int) and positions > 0:
            # RoBERTa-style models offset positions by the padding index
            offset = 2 if getattr(config, "model_type", "") in ("roberta", "xlm-roberta", "camembert") else 0
            if getattr(config, "position_embedding_type", "absolute") == "absolute" or offset:
                limits.append(positions - offset)
        return min(limits) if limits else FALLBACK_MAX_LENGTH

    async def load(self) -> None:
        """Load the tokenizer and model now (otherwise the first verdict does it)."""
        if self._loaded is None:
            await asyncio.to_thread(self._load_sync)

    # -- judging ------------------------------------------------------------------------

    async def verify(self, statement: str, source: SourceText) -> Verdict:
        """One pair; pairs asked for concurrently are gathered into one batched call."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Verdict] = loop.create_future()
        pending = self._pending.setdefault(loop, [])
        pending.append((statement, source, future))
        if len(pending) == 1 and loop not in self._collectors:
            self._collectors[loop] = loop.create_task(self._collect(loop))
        return await future

    async def _collect(self, loop: asyncio.AbstractEventLoop) -> None:
        try:
            await asyncio.sleep(0)   # let every verify() started in this turn join the batch
            while self._pending.get(loop):
                batch, self._pending[loop] = self._pending[loop], []
                live = [(st, src, fut) for st, src, fut in batch if not fut.cancelled()]
                try:
                    verdicts = await self.verify_many([(st, src) for st, src, _ in live])
                except Exception as exc:   # verify_many already turns pair failures into verdicts
                    verdicts = [self._error(_explain(exc)) for _ in live]
                for (_, _, fut), verdict in zip(live, verdicts):
                    if not fut.done():
                        fut.set_result(verdict)
        finally:
            self._collectors.pop(loop, None)
            for _, _, fut in self._pending.pop(loop, []):
                if not fut.done():
                    fut.cancel()

    async def verify_many(self, pairs: Sequence[tuple[str, SourceText]]) -> list[Verdict]:
        if not pairs:
            return []
        try:
            await self.load()
        except Exception as exc:
            return [self._error(f"{exc}") for _ in pairs]
        return await in_stoppable_thread(self._judge_pairs_sync, list(pairs))

    async def aclose(self) -> None:
        loaded, self._loaded = self._loaded, None
        if loaded is not None and loaded.device.startswith("cuda"):
            import torch

            del loaded
            torch.cuda.empty_cache()

    def _error(self, message: str) -> Verdict:
        return Verdict.error(self.id, message, prompt_version=self.prompt_version,
                             model_version=self.model_version)

    def _judge_pairs_sync(self, pairs: list[tuple[str, SourceText]], stop: threading.Event | None = None) -> list[Verdict]:
        """The verdicts of ``pairs`` in a worker thread; JudgeStopped before the next batch once ``stop`` is set."""
        with kinds.stopping_on(stop):
            return self._judge_pairs_now(pairs)

    def _judge_pairs_now(self, pairs: list[tuple[str, SourceText]]) -> list[Verdict]:
        m = self._loaded
        assert m is not None
        if m.minicheck is not None:
            return self._judge_minicheck(pairs, m)
        verdicts: list[Verdict | None] = [None] * len(pairs)
        windows: list[Window] = []
        totals: list[tuple[int, bool]] = []
        for n, (statement, source) in enumerate(pairs):
            try:
                mine, total, ranked = self._windows(n, statement, source, m)
            except Exception as exc:
                verdicts[n] = self._error(f"could not cut the source into windows: {type(exc).__name__}: {exc}")
                totals.append((0, False))
                continue
            if not mine:
                verdicts[n] = self._error("the source has no text to judge")
            windows.extend(mine)
            totals.append((total, ranked))
        scores = self._score_isolated(windows, [pairs[w.pair][0] for w in windows], m)

        by_pair: dict[int, list[tuple[Window, float | Exception]]] = {}
        for window, score in zip(windows, scores):
            by_pair.setdefault(window.pair, []).append((window, score))
        best: dict[int, tuple[Window, float, int]] = {}
        for n, scored in by_pair.items():
            failure = next((s for _, s in scored if isinstance(s, Exception)), None)
            if failure is not None:
                verdicts[n] = self._error(_explain(failure))
                continue
            # first of equals: the best-ranked window (no failure above, so every score is a number)
            window, score = max(cast(list[tuple[Window, float]], scored), key=lambda ws: ws[1])
            best[n] = (window, float(score), len(scored))

        # the quote: the best sentence of the best window, for supported pairs only
        quote_items: list[tuple[int, str]] = []
        for n, (window, score, _) in best.items():
            if score >= self.threshold:
                sentences = source_sentences(window.text)
                if len(sentences) > 1:
                    quote_items.extend((n, s) for s in sentences)
        sentence_scores = self._score_isolated(
            [Window(n, s) for n, s in quote_items], [pairs[n][0] for n, _ in quote_items], m)
        best_sentence: dict[int, tuple[str, float]] = {}
        for (n, sentence), score in zip(quote_items, sentence_scores):
            if isinstance(score, Exception):
                continue   # the window's own verdict stands; its text becomes the quote
            if n not in best_sentence or score > best_sentence[n][1]:
                best_sentence[n] = (sentence, float(score))

        for n, (window, score, n_scored) in best.items():
            statement, source = pairs[n]
            verdicts[n] = self._verdict(score, window, n_scored, totals[n], best_sentence.get(n), source, m)
        return [v if v is not None else self._error("no window was scored") for v in verdicts]

    def _verdict(self, score: float, window: Window, scored: int, total: tuple[int, bool],
                 sentence: tuple[str, float] | None, source: SourceText, m: _Loaded) -> Verdict:
        supported = score >= self.threshold
        if m.supported_name.strip().lower().startswith("entail"):
            what = "Entailment probability"
        else:
            what = f"Support probability (label '{m.supported_name}')"
        rationale = f"{what} {score:.2f} in the best of {scored} passage{'s' * (scored != 1)}"
        passages, ranked = total
        if ranked:
            rationale += f" (the most relevant by BM25 of the source's {passages} passages)"
        rationale += f"; threshold {self.threshold:.2f}."
        quote = ""
        if supported:
            quote = sentence[0] if sentence else window.text.strip()
        return self._labelled(supported, score, rationale, quote, source)

    def _labelled(self, supported: bool, score: float, rationale: str, quote: str, source: SourceText) -> Verdict:
        """The verdict of either procedure, with the quote checked against the source and its flags carried."""
        return Verdict(
            label=Label.SUPPORTED if supported else Label.NOT_SUPPORTED,
            score=score, rationale=rationale, quote=quote,
            quote_found=quote_in_source(quote, source.text) if quote else None,
            judge_id=self.id, prompt_version=self.prompt_version, model_version=self.model_version,
            flags=tuple(f for f in _CARRIED_FLAGS if f in source.flags),
        )

    # -- the MiniCheck procedure --------------------------------------------------------------

    def _judge_minicheck(self, pairs: list[tuple[str, SourceText]], m: _Loaded) -> list[Verdict]:
        assert m.minicheck is not None
        verdicts: list[Verdict | None] = [None] * len(pairs)
        prefix = kinds.MINICHECK_SEQ2SEQ_PREFIX if m.kind == "seq2seq" else ""
        items: list[tuple[int, int]] = []        # (pair, chunk) of each text
        texts: list[str] = []
        chunks_of: dict[int, list[str]] = {}
        for n, (statement, source) in enumerate(pairs):
            try:
                chunks = kinds.cached_chunks(source, m.minicheck)   # cut once per source
            except Exception as exc:
                verdicts[n] = self._error(f"could not cut the source into chunks: {type(exc).__name__}: {exc}")
                continue
            if not chunks:
                verdicts[n] = self._error("the source has no text to judge")
                continue
            chunks_of[n] = chunks
            for i, chunk in enumerate(chunks):
                items.append((n, i))
                texts.append(kinds.minicheck_text(chunk, statement, m.eos, prefix))
        scores = self._minicheck_scores(texts, m)
        per_pair: dict[int, list[float | Exception]] = {}
        best_of: dict[int, tuple[float, str]] = {}
        for (n, _), score in zip(items, scores):
            per_pair.setdefault(n, []).append(score)
        for n, chunk_scores in per_pair.items():
            failure = next((s for s in chunk_scores if isinstance(s, Exception)), None)
            if failure is not None:
                verdicts[n] = self._error(_explain(failure))
                continue
            values = [float(s) for s in chunk_scores]   # type: ignore[arg-type]
            best = max(range(len(values)), key=values.__getitem__)   # Inferencer.inference: max over chunks
            best_of[n] = (values[best], chunks_of[n][best])
        quotes = self._minicheck_quotes(pairs, {n: c for n, (s, c) in best_of.items() if s > self.threshold}, m, prefix)
        for n, (score, _) in best_of.items():
            verdicts[n] = self._minicheck_verdict(pairs[n], score, len(chunks_of[n]), quotes.get(n, ""), m)
        return [v if v is not None else self._error("no chunk was scored") for v in verdicts]

    def _minicheck_quotes(self, pairs: list[tuple[str, SourceText]], best_chunks: dict[int, str], m: _Loaded,
                          prefix: str) -> dict[int, str]:
        """The quote of each supported pair: of the best chunk's sentences that BM25 ranks highest
        for the statement, the one the model scores highest (read the same way as a chunk)."""
        candidates = {n: kinds.quote_candidates(pairs[n][0], chunk) for n, chunk in best_chunks.items()}
        items = [(n, s) for n, found in candidates.items() if len(found) > 1 for s in found]
        scores = self._minicheck_scores([kinds.minicheck_text(s, pairs[n][0], m.eos, prefix)
                                         for n, s in items], m)
        best: dict[int, tuple[str, float]] = {n: (found[0], -1.0) for n, found in candidates.items() if found}
        for (n, sentence), score in zip(items, scores):
            if not isinstance(score, Exception) and score > best[n][1]:
                best[n] = (sentence, score)
        return {n: sentence for n, (sentence, _) in best.items()}

    def _minicheck_scores(self, texts: Sequence[str], m: _Loaded) -> list[float | Exception]:
        import torch

        assert m.minicheck is not None
        with self._run_lock, torch.inference_mode():
            scores, rechecked = kinds.score_checked(m.minicheck, texts, self.batch_size, self.threshold,
                                                    on_failure=lambda: _free_cuda(m))
        self.rechecked += rechecked
        return scores

    def _minicheck_verdict(self, pair: tuple[str, SourceText], score: float, chunks: int, quote: str,
                           m: _Loaded) -> Verdict:
        _, source = pair
        assert m.minicheck is not None
        supported = score > self.threshold    # MiniCheck._score_inferencer: supported when prob > 0.5
        rationale = kinds.minicheck_rationale(m.minicheck, score, chunks, self.threshold,
                                              m.supported_name, m.quantized)
        quote = quote if supported else ""
        return self._labelled(supported, score, rationale, quote, source)

    # -- windows --------------------------------------------------------------------------

    def _windows(self, n: int, statement: str, source: SourceText,
                 m: _Loaded) -> tuple[list[Window], int, bool]:
        """The windows to score for one pair, how many passages the source has, and whether
        more windows existed than ``max_windows`` (then BM25 chose them, best first)."""
        if not source.passages:
            if not (source.text or "").strip():
                return [], 0, False
            # a fresh SourceText so its BM25 cache matches these passages
            source = SourceText(url=source.url, text=source.text, title=source.title,
                                passages=split_passages(source.text))
        passages = source.passages
        hypothesis_len = len(m.tokenizer(statement, add_special_tokens=False)["input_ids"])
        budget = m.max_length - hypothesis_len - m.tokenizer.num_special_tokens_to_add(pair=True)
        budget = max(budget, m.max_length // 2)   # a very long statement gets truncated instead
        pieces = {i: kinds.token_pieces(p, budget, m.tokenizer) for i, p in enumerate(passages)} \
            if len(passages) <= self.max_windows else {}
        if pieces and sum(len(p) for p in pieces.values()) <= self.max_windows:
            return [Window(n, text) for i in range(len(passages)) for text in pieces[i]], len(passages), False
        windows: list[Window] = []
        for i, _ in rank_passages(statement, source, k=self.max_windows):
            texts = pieces.get(i) or kinds.token_pieces(passages[i], budget, m.tokenizer)
            windows.extend(Window(n, text) for text in texts)
        return windows[: self.max_windows], len(passages), True

    # -- inference ------------------------------------------------------------------------

    def _score_isolated(self, windows: Sequence[Window], hypotheses: Sequence[str],
                        m: _Loaded) -> list[float | Exception]:
        """Scores in batches; a failing batch is retried item by item so one bad pair stays alone."""
        if not windows:
            return []
        try:
            return list(self._score(windows, hypotheses, m))
        except JudgeStopped:
            raise
        except Exception as exc:
            log.warning("local judge: batch of %d failed (%s: %s); retrying one by one",
                        len(windows), type(exc).__name__, exc)
            _free_cuda(m)
        out: list[float | Exception] = []
        for window, hypothesis in zip(windows, hypotheses):
            kinds.check_stop()
            try:
                out.extend(self._score([window], [hypothesis], m))
            except Exception as exc:
                _free_cuda(m)
                out.append(exc)
        return out

    def _score(self, windows: Sequence[Window], hypotheses: Sequence[str], m: _Loaded) -> list[float]:
        import torch

        # longest first, so each batch pads to similar lengths
        order = sorted(range(len(windows)), key=lambda i: -(len(windows[i].text) + len(hypotheses[i])))
        scores = [0.0] * len(windows)
        with self._run_lock, torch.inference_mode():
            for start in range(0, len(order), self.batch_size):
                kinds.check_stop()
                chunk = order[start:start + self.batch_size]
                encoded = m.tokenizer([windows[i].text for i in chunk], [hypotheses[i] for i in chunk],
                                      padding=True, truncation="longest_first",
                                      max_length=m.max_length, return_tensors="pt")
                encoded = {k: v.to(m.device) for k, v in encoded.items()}
                logits = m.model(**encoded).logits
                probs = logits.float().softmax(dim=-1)[:, m.supported_index].tolist()
                for i, p in zip(chunk, probs):
                    scores[i] = float(p)
        return scores


def _explain(exc: BaseException) -> str:
    text = f"{type(exc).__name__}: {exc}"
    if "out of memory" in text.lower():
        return f"local model ran out of memory ({text}); lower batch_size or use device=cpu"
    return f"local model failed: {text}"


def _free_cuda(m: _Loaded) -> None:
    if m.device.startswith("cuda"):
        import torch

        torch.cuda.empty_cache()


_OPTIONS = {"threshold", "supported_label", "batch_size", "max_windows", "max_length", "device",
            "allow_download", "procedure", "quantize", "threads", "runtime"}
QUANTIZE = ("none", "int8")


def _check_labels(arg: str, config: bytes, supported_label: str | int | None) -> None:
    """Fail at once, not on the first verdict, when no label can be taken as "supported"."""
    if not config or kinds.config_kind_of_bytes(config) == "seq2seq":
        return
    try:
        id2label = json.loads(config).get("id2label")
    except (ValueError, AttributeError) as exc:
        raise LocalModelError(f"the config.json of local model '{arg}' is not valid JSON: {exc}") from exc
    if isinstance(id2label, dict) and id2label:
        supported_label_index({int(k): v for k, v in id2label.items()}, supported_label, model=arg)


def from_spec(arg: str, **options: Any) -> LocalJudge:
    """``local:MODEL_ID_OR_DIR[#label=NAME]`` -> a LocalJudge; the model itself loads on first use.

    ``MODEL_ID_OR_DIR`` may also be the name of a model pulled or imported with ``sourcecheckup models``.

    Options: ``threshold`` (0.5), ``supported_label`` (name or index), ``batch_size`` (16),
    ``max_windows`` (8), ``max_length`` (the model's), ``device`` (cuda when available),
    ``allow_download`` (False). Other options meant for other judges are ignored.
    """
    arg = (arg or "").strip()
    if not arg:
        raise JudgeSpecError("the local judge needs a model folder or id: --judge local:/path/to/model")
    try:
        arg, spec_options = kinds.split_spec_options(arg)
    except ValueError as exc:
        raise JudgeSpecError(str(exc)) from exc
    options = {**options, **spec_options}
    spec_name = arg
    if not _is_folder_spec(arg):
        from ..models_hub import installed_path

        pulled = installed_path(arg)
        if pulled is not None:
            arg = str(pulled)
    ignored = sorted(set(options) - _OPTIONS)
    if ignored:
        log.debug("local judge ignores options %s", ", ".join(ignored))
    allow_download = _as_bool(options.get("allow_download", False))
    config = _config_bytes(arg, allow_download)
    _check_labels(arg, config, options.get("supported_label"))
    threshold = float(options.get("threshold", DEFAULT_THRESHOLD))
    if not 0.0 < threshold < 1.0:
        raise JudgeSpecError(f"threshold must be between 0 and 1, not {threshold}")
    try:
        procedure = kinds.procedure_for(kinds.config_of_bytes(config),
                                        [spec_name, arg, kinds.pulled_from(arg)], options.get("procedure"))
    except ValueError as exc:
        raise JudgeSpecError(str(exc)) from exc
    quantize = str(options.get("quantize") or "none").strip().lower()
    if quantize not in QUANTIZE:
        raise JudgeSpecError(f"quantize={quantize} is not one of {', '.join(QUANTIZE)}")
    if quantize == "int8" and procedure != "minicheck":
        raise JudgeSpecError("quantize=int8 is for MiniCheck checkers only (its labels were checked there)")
    try:
        runtime = onnx_runtime.check_runtime(options.get("runtime"))
    except ValueError as exc:
        raise JudgeSpecError(str(exc)) from exc
    return LocalJudge(
        arg, threshold=threshold, supported_label=options.get("supported_label"),
        batch_size=int(options.get("batch_size", DEFAULT_BATCH_SIZE)),
        max_windows=int(options.get("max_windows", DEFAULT_MAX_WINDOWS)),
        max_length=int(options["max_length"]) if options.get("max_length") else None,
        device=options.get("device") or None, allow_download=allow_download,
        config_hash=hashlib.sha256(config).hexdigest() if config else "",
        procedure=procedure, quantize=quantize,
        threads=int(options["threads"]) if options.get("threads") else None, runtime=runtime,
    )

