"""Rerank servers on 127.0.0.1 scoring with the bundled reader, so a served run can be compared verdict by
verdict with a local one. Both read a pair up to the model's 512 positions, as the real servers do (the
local reader reads 256 word pieces), so a client that sends a window uncut gets another score.

- :class:`FakeRerank`, vLLM's shape: POST /v1/rerank ``{"model", "query", "documents"}`` -> ``{"id",
  "model", "usage", "results": [{"index", "document": {"text"}, "relevance_score"}]}``, results sorted by
  score, highest first, as vLLM sends them.
- :class:`FakeTeiRerank`, Hugging Face TEI's: POST /rerank ``{"query", "texts", "raw_scores", "truncate"}``
  -> a bare list ``[{"index", "score"}]`` sorted highest first; the sigmoid unless ``raw_scores``; a pair over
  512 tokens without ``truncate`` is a 422 ``{"error": "Input validation error: ...", "error_type":
  "validation"}`` (router/src/http/server.rs, core/src/tokenization.rs).

``mode``: "ok", "garbage" (scores above 1), "error" (a server failure)."""
from __future__ import annotations

from typing import Any

import numpy as np

from sourcecheckup.judges.builtin.reader import Reader

from .json_server import JsonPostServer

MAX_POSITIONS = 512


class _RerankServer(JsonPostServer):
    """The bundled int8 reader in a session of its own, reading pairs up to MAX_POSITIONS as the servers do,
    and counting each pair's tokens as received (``tokens_seen``)."""

    def __init__(self, mode: str = "ok") -> None:
        from tokenizers import Tokenizer

        self.mode = mode
        self.reader = Reader()
        self.reader.tokenizer.enable_truncation(max_length=MAX_POSITIONS, strategy="only_second")
        self.counter = Tokenizer.from_file(str(self.reader.folder / "tokenizer.json"))
        self.counter.no_truncation()
        self.counter.no_padding()
        self.tokens_seen: list[int] = []
        super().__init__()

    def count(self, pairs: list[tuple[str, str]]) -> list[int]:
        counts = [len(e.ids) for e in self.counter.encode_batch(pairs)]
        self.tokens_seen.extend(counts)
        return counts


class FakeRerank(_RerankServer):
    path = "/v1/rerank"

    def not_found(self, path: str) -> Any:
        return {"object": "error", "message": f"Not Found: {path}", "code": 404}

    def answer(self, body: dict[str, Any]) -> tuple[int, Any]:
        if self.mode == "error":
            return 500, {"object": "error", "message": "EngineCore died", "code": 500}
        docs = list(body.get("documents") or [])
        pairs = [(body["query"], d) for d in docs]
        self.count(pairs)
        probs = self.reader.probabilities(pairs)
        results = [{"index": i, "document": {"text": d},
                    "relevance_score": float(p) + (1.5 if self.mode == "garbage" else 0.0)}
                   for i, (d, p) in enumerate(zip(docs, probs))]
        results.sort(key=lambda r: -r["relevance_score"])
        return 200, {"id": "rerank-1", "model": body.get("model"), "usage": {"total_tokens": 0}, "results": results}


class FakeTeiRerank(_RerankServer):
    path = "/rerank"

    @property
    def base(self) -> str:
        """TEI serves at the root, not under /v1."""
        return self.url.removesuffix("/v1")

    def not_found(self, path: str) -> Any:
        return {"error": f"no route {path}", "error_type": "validation"}

    def answer(self, body: dict[str, Any]) -> tuple[int, Any]:
        if self.mode == "error":
            return 424, {"error": "Backend error: CUDA out of memory", "error_type": "backend"}
        pairs = [(body["query"], t) for t in body.get("texts") or []]
        for n in self.count(pairs):
            if n > MAX_POSITIONS and not body.get("truncate"):
                return 422, {"error": f"Input validation error: `inputs` must have less than {MAX_POSITIONS} "
                                          f"tokens. Given: {n}", "error_type": "validation"}
        probs = np.clip(self.reader.probabilities(pairs), 1e-7, 1 - 1e-7)
        scores = np.log(probs / (1 - probs)) if body.get("raw_scores") else probs   # raw: the logit
        ranks = [{"index": i, "score": float(s) + (1.5 if self.mode == "garbage" else 0.0)}
                 for i, s in enumerate(scores)]
        ranks.sort(key=lambda r: -r["score"])
        return 200, ranks
