"""A rerank server on 127.0.0.1 in the shape vLLM serves (POST /v1/rerank: ``{"model", "query", "documents"}``
-> ``{"id", "model", "usage", "results": [{"index", "document": {"text"}, "relevance_score"}]}``, results sorted
by score, highest first, as vLLM sends them), scoring with the bundled reader so a served run can be compared
verdict by verdict with a local one. ``mode``: "ok", "garbage" (scores above 1), "error" (HTTP 500)."""
from __future__ import annotations

from typing import Any

from sourcecheckup.judges.builtin.reader import Reader

from .json_server import JsonPostServer


class FakeRerank(JsonPostServer):
    path = "/v1/rerank"

    def __init__(self, mode: str = "ok") -> None:
        self.mode = mode
        self.reader = Reader()   # the bundled int8 model, its own session
        super().__init__()

    def not_found(self, path: str) -> Any:
        return {"object": "error", "message": f"Not Found: {path}", "code": 404}

    def answer(self, body: dict[str, Any]) -> tuple[int, Any]:
        if self.mode == "error":
            return 500, {"object": "error", "message": "EngineCore died", "code": 500}
        docs = list(body.get("documents") or [])
        probs = self.reader.probabilities([(body["query"], d) for d in docs])
        results = [{"index": i, "document": {"text": d},
                    "relevance_score": float(p) + (1.5 if self.mode == "garbage" else 0.0)}
                   for i, (d, p) in enumerate(zip(docs, probs))]
        results.sort(key=lambda r: -r["relevance_score"])
        return 200, {"id": "rerank-1", "model": body.get("model"), "usage": {"total_tokens": 0}, "results": results}
