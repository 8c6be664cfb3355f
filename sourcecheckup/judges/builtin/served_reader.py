"""The learned reader served where the GPUs are, asked once per statement with its windows, in one of two
wire shapes:

- ``--reader URL#MODEL``: vLLM's ``POST /v1/rerank`` with ``{"model", "query", "documents"}``, answering
  ``{"results": [{"index", "relevance_score"}]}`` (Jina's and Cohere's APIs share it);
- ``--reader tei:URL``: Hugging Face TEI's ``POST /rerank`` with ``{"query", "texts", "raw_scores": false}``,
  answering a bare list ``[{"index", "score"}]`` (router/src/http/types.rs; the sigmoid is applied to a
  one-label model unless raw_scores, core/src/infer.rs).

Each window is cut where the bundled reader's tokenizer cuts it (256 word pieces for the pair, the window
cut, never the statement): a server reads up to its model's 512 positions, so an uncut window would be
scored on words the local reader never sees.

RunConfig.reader puts a :class:`ServedReader` in the place of the bundled int8 model for
``builtin:reader`` (:func:`use_served_reader`). The card (threshold, review band, read_facts)
stays the bundled one's: the server must run that reader for the card's threshold to mean anything, and
the verdicts say it was served (``…/<name>@served:MODEL@URL/…``). A relevance score is taken as
P(supported) (vLLM applies the sigmoid to a one-label cross-encoder). A server that fails, times out or
answers anything but one score in [0, 1] per window raises :class:`ServedReaderError`: a judge error for
the pairs being read, never a verdict.
"""
from __future__ import annotations

import contextlib
import math
import threading
from typing import Any, Iterator, Sequence

import httpx
import numpy as np

from ...embeddings.served import parse_spec, read_prefix
from . import reader as reader_module
from .reader import Reader, ReaderCard, reader_dir

TIMEOUT_S = 60.0


class ServedReaderError(RuntimeError):
    """The rerank server failed or answered something that is not a score per window."""


def parse_reader_spec(spec: str) -> tuple[str, str, str]:
    """(wire, base URL, model) of ``URL#MODEL`` (vLLM) or ``tei:URL`` (TEI, one model a server); raises
    ValueError with what is wrong."""
    spec = (spec or "").strip()
    if spec.startswith("tei:"):
        url = spec[4:].strip().rstrip("/")
        if not url.startswith(("http://", "https://")) or "#" in url:
            raise ValueError(f"{spec!r} is not tei:URL: give the TEI server's address, e.g. tei:http://127.0.0.1:8080")
        return "tei", url, "tei"
    base, model = parse_spec(spec)
    return "vllm", base, model


class ServedReader(Reader):
    """The reader's probabilities from a rerank server; the bundled card decides."""

    def __init__(self, spec: str, timeout_s: float = TIMEOUT_S) -> None:   # no ONNX session here
        from tokenizers import Tokenizer

        self.wire, self.base_url, self.model = parse_reader_spec(spec)
        self.folder = reader_dir()
        self.card = ReaderCard.load(self.folder)
        self.sha256 = ""
        self.tokenizer = Tokenizer.from_file(str(self.folder / "tokenizer.json"))
        self.tokenizer.enable_truncation(max_length=reader_module.MAX_TOKENS, strategy="only_second")
        self.tokenizer.no_padding()
        self._client = httpx.Client(timeout=timeout_s)

    def record(self) -> dict[str, Any]:
        wire = "rerank (TEI /rerank)" if self.wire == "tei" else "rerank (vLLM /v1/rerank)"
        return {"name": self.card.name, "file": None, "sha256": "", **self.card.thresholds(),
                "served": f"served:{self.model}@{self.base_url}", "wire": wire,
                "windows_cut_at": f"{reader_module.MAX_TOKENS} word pieces a pair, as the bundled reader reads them"}

    def as_read(self, statement: str, window: str) -> str:
        """``window`` as the bundled reader reads it beside ``statement``: cut where its tokenizer cuts."""
        return read_prefix(self.tokenizer.encode(statement, window), window, sequence=1)

    def probabilities(self, pairs: Sequence[tuple[str, str]], stop: threading.Event | None = None) -> np.ndarray:
        out = np.zeros(len(pairs), dtype=np.float32)
        by_statement: dict[str, list[int]] = {}
        for i, (statement, _) in enumerate(pairs):
            by_statement.setdefault(statement, []).append(i)
        for statement, rows in by_statement.items():
            if stop is not None and stop.is_set():
                from ..base import JudgeStopped

                raise JudgeStopped("the run was interrupted")
            out[rows] = self._scores(statement, [self.as_read(statement, pairs[i][1] or ".") for i in rows])
        return out

    def _scores(self, query: str, documents: list[str]) -> list[float]:
        if self.wire == "tei":
            request = {"query": query, "texts": documents, "raw_scores": False, "truncate": False}
        else:
            request = {"model": self.model, "query": query, "documents": documents}
        try:
            reply = self._client.post(f"{self.base_url}/rerank", json=request)
            reply.raise_for_status()
            body = reply.json()
        except (httpx.HTTPError, ValueError) as exc:
            raise ServedReaderError(f"the rerank server at {self.base_url} failed: {type(exc).__name__}: {exc}") from exc
        if self.wire == "tei":
            results, key = body, "score"
        else:
            results, key = body.get("results") if isinstance(body, dict) else None, "relevance_score"
        scores: dict[int, float] = {}
        for item in results if isinstance(results, list) else []:
            index = item.get("index") if isinstance(item, dict) else None
            score = item.get(key) if isinstance(item, dict) else None
            if (isinstance(index, int) and isinstance(score, (int, float)) and not isinstance(score, bool)
                    and math.isfinite(score) and 0.0 <= score <= 1.0):
                scores[index] = float(score)
        if sorted(scores) != list(range(len(documents))):
            raise ServedReaderError(f"the rerank server at {self.base_url} did not answer one score in [0, 1] for "
                                    f"each of the {len(documents)} passages")
        return [scores[i] for i in range(len(documents))]


@contextlib.contextmanager
def use_served_reader(spec: str) -> Iterator[ServedReader]:
    """``builtin:reader`` reads with the served model until the block ends (one audit at a time in a process)."""
    served = ServedReader(spec)
    with reader_module._lock:
        before = reader_module._shared
        reader_module._shared = served
    try:
        yield served
    finally:
        with reader_module._lock:
            reader_module._shared = before
        served._client.close()
