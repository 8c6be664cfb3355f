"""The built-in judge's sentence embeddings from a served model: an OpenAI-compatible ``/v1/embeddings``
endpoint (vLLM, Ollama, llama.cpp's ``--embeddings``, Hugging Face TEI), asked with the OpenAI SDK.

``--embeddings URL#MODEL`` (RunConfig.embeddings) puts a :class:`ServedEncoder` in the place of the local
model for the run (:func:`sourcecheckup.embeddings.use_served`). Its vectors are normalised here, as the
local model's are, so the judge's similarities read the same; a server running all-MiniLM-L6-v2 gives the
same labels (within float rounding). A server that times out, fails or answers anything but one finite
vector of the model's width per text raises :class:`ServedEmbeddingError`, which the judge turns into a
judge error for the pairs it was embedding: never a verdict.
"""
from __future__ import annotations

import math
from typing import Any, Callable, Sequence

import numpy as np

REQUEST_TEXTS = 64        # texts a request carries (servers cap a batch: llama.cpp by its context, TEI at 32-512)
TIMEOUT_S = 60.0


class ServedEmbeddingError(RuntimeError):
    """The embedding server failed or answered something that is not the vectors asked for."""


def parse_spec(spec: str) -> tuple[str, str]:
    """``URL#MODEL`` as (base URL ending in /v1, model); raises ValueError with what is wrong."""
    url, sep, model = (spec or "").strip().partition("#")
    url = url.rstrip("/")
    if not sep or not model.strip() or not url.startswith(("http://", "https://")):
        raise ValueError(f"{spec!r} is not URL#MODEL: give the embedding server's address and its model, "
                         "e.g. http://127.0.0.1:8080/v1#all-minilm")
    if not url.endswith("/v1"):
        url += "/v1"
    return url, model.strip()


def read_prefix(encoding: Any, text: str, sequence: int = 0) -> str:
    """``text`` cut where a truncating tokenizer stopped reading it: after the last token it kept of
    ``sequence`` (``encoding`` is that tokenizer's; 0: the only or first text, 1: a pair's second). What a
    server reading further is sent, so that it reads what the bundled model reads."""
    if not encoding.overflowing:
        return text
    ends = [end for (_, end), seq in zip(encoding.offsets, encoding.sequence_ids) if seq == sequence]
    return text[:max(ends)] if ends else text


class ServedEncoder:
    """Encodes texts on an embeddings server; quacks like the local encoders (``encode(texts, batch_size)``)."""

    def __init__(self, spec: str, dimensions: int, api_key: str | None = None, timeout_s: float = TIMEOUT_S,
                 max_retries: int = 2, tokenizer: Callable[[], Any] | None = None) -> None:
        from openai import OpenAI

        self.base_url, self.model = parse_spec(spec)
        self.spec = f"{self.base_url}#{self.model}"
        self.dimensions = dimensions
        # the bundled model's tokenizer (``tokenizer()`` reads it on first use; None: texts are sent whole)
        self._load_tokenizer = tokenizer
        self._tokenizer: Any = False
        # a local server takes any key; the SDK insists on one
        self._client = OpenAI(base_url=self.base_url, api_key=api_key or "sourcecheckup", timeout=timeout_s,
                              max_retries=max_retries)

    def record(self) -> dict[str, Any]:
        """The model as a run records it: served, not the bundled files."""
        cut = {"texts_cut_at": "the bundled all-MiniLM-L6-v2's 256 word pieces"} if self.tokenizer() else {}
        return {"name": self.model, "served_at": self.base_url, "wire": "OpenAI /v1/embeddings",
                "dimensions": self.dimensions, **cut}

    def tokenizer(self) -> Any:
        if self._tokenizer is False:
            self._tokenizer = self._load_tokenizer() if self._load_tokenizer else None
        return self._tokenizer

    def encode(self, texts: Sequence[str], batch_size: int = REQUEST_TEXTS) -> np.ndarray:
        out = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        step = max(1, max(batch_size, REQUEST_TEXTS))
        for start in range(0, len(texts), step):
            chunk = [self.as_read(t) for t in texts[start:start + step]]
            out[start:start + len(chunk)] = self._request(chunk)
        return out

    def as_read(self, text: str) -> str:
        """``text`` as the bundled model reads it: cut after its first 256 word pieces. A server would read
        more (llama.cpp up to its context, then it refuses the text with a 400), so a long passage would get
        another vector than the local model gives it, or none."""
        text = str(text).strip()
        tokenizer = self.tokenizer()
        if tokenizer is None:   # the bundled model is not installed: the server reads it all
            return text
        return read_prefix(tokenizer.encode(text), text)

    def _request(self, texts: list[str]) -> np.ndarray:
        import openai

        try:
            # "float": the SDK asks for base64 unless told, which not every server speaks
            reply = self._client.embeddings.create(model=self.model, input=texts, encoding_format="float")
        except openai.APIError as exc:
            raise ServedEmbeddingError(f"the embedding server at {self.base_url} failed: "
                                       f"{type(exc).__name__}: {exc}") from exc
        data = getattr(reply, "data", None)
        if not isinstance(data, list) or len(data) != len(texts):
            raise ServedEmbeddingError(f"the embedding server at {self.base_url} answered "
                                       f"{len(data) if isinstance(data, list) else 'no'} vectors for {len(texts)} texts")
        rows: dict[int, Any] = {}
        for i, item in enumerate(data):
            index = getattr(item, "index", i)
            rows[index if isinstance(index, int) else i] = getattr(item, "embedding", None)
        if sorted(rows) != list(range(len(texts))):
            raise ServedEmbeddingError(f"the embedding server at {self.base_url} answered vectors for the wrong texts")
        vectors = np.zeros((len(texts), self.dimensions), dtype=np.float32)
        for i in range(len(texts)):
            vec = rows[i]
            if (not isinstance(vec, list) or len(vec) != self.dimensions
                    or not all(isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)
                               for x in vec)):
                raise ServedEmbeddingError(
                    f"the embedding server at {self.base_url} answered a vector that is not {self.dimensions} finite "
                    f"numbers (model {self.model!r}: the built-in judge reads all-MiniLM-L6-v2's width)")
            v = np.asarray(vec, dtype=np.float32)
            norm = float(np.linalg.norm(v))
            if norm == 0.0:
                raise ServedEmbeddingError(f"the embedding server at {self.base_url} answered a zero vector")
            vectors[i] = v / norm
        return vectors

