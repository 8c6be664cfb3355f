"""A rerank server on 127.0.0.1 in the shape vLLM serves (POST /v1/rerank: ``{"model", "query", "documents"}``
-> ``{"id", "model", "usage", "results": [{"index", "document": {"text"}, "relevance_score"}]}``, results sorted
by score, highest first, as vLLM sends them), scoring with the bundled reader so a served run can be compared
verdict by verdict with a local one. ``mode``: "ok", "garbage" (scores above 1), "error" (HTTP 500)."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sourcecheckup.judges.builtin.reader import Reader


class FakeRerank:
    def __init__(self, mode: str = "ok") -> None:
        self.mode = mode
        self.requests: list[dict[str, Any]] = []
        self.reader = Reader()   # the bundled int8 model, its own session
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> "FakeRerank":
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *a: object) -> None:
                pass

            def _json(self, code: int, body: Any) -> None:
                raw = json.dumps(body).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                fake.requests.append(body)
                if self.path != "/v1/rerank":
                    return self._json(404, {"object": "error", "message": f"Not Found: {self.path}", "code": 404})
                if fake.mode == "error":
                    return self._json(500, {"object": "error", "message": "EngineCore died", "code": 500})
                docs = list(body.get("documents") or [])
                probs = fake.reader.probabilities([(body["query"], d) for d in docs])
                results = [{"index": i, "document": {"text": d},
                            "relevance_score": float(p) + (1.5 if fake.mode == "garbage" else 0.0)}
                           for i, (d, p) in enumerate(zip(docs, probs))]
                results.sort(key=lambda r: -r["relevance_score"])
                self._json(200, {"id": "rerank-1", "model": body.get("model"), "usage": {"total_tokens": 0},
                                 "results": results})

        return Handler
