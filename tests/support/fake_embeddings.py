"""An embeddings server on 127.0.0.1 in the OpenAI wire format (POST /v1/embeddings), as vLLM, Ollama's
OpenAI-compatible API, llama.cpp's ``--embeddings`` and TEI answer it: ``{"object": "list", "data": [{"object":
"embedding", "index": i, "embedding": [...]}], "model": ..., "usage": {...}}``, errors as ``{"error": {...}}``.

It computes with the bundled all-MiniLM-L6-v2, so a served audit can be compared verdict by verdict with a
local one; its vectors are scaled (not unit length), as a server that does not normalise sends them.
``mode``: "ok", "garbage" (vectors of the wrong width), "error" (HTTP 500 every time), "short" (one vector
fewer than asked)."""
from __future__ import annotations

import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from sourcecheckup import embeddings


class FakeEmbeddings:
    def __init__(self, mode: str = "ok", model: str = "all-minilm") -> None:
        self.mode = mode
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.local = embeddings._load()   # the bundled model, held apart from whatever the process serves
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/v1"

    def __enter__(self) -> "FakeEmbeddings":
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
                if self.path != "/v1/embeddings":
                    return self._json(404, {"error": {"message": f"no route {self.path}", "type": "not_found"}})
                if fake.mode == "error":
                    return self._json(500, {"error": {"message": "CUDA out of memory", "type": "server_error"}})
                texts = body.get("input")
                texts = [texts] if isinstance(texts, str) else list(texts or [])
                vectors = embeddings.embed(texts, model=fake.local) * 2.5
                data = [{"object": "embedding", "index": i,
                         "embedding": (v[:100] if fake.mode == "garbage" else v).tolist()}
                        for i, v in enumerate(vectors)]
                if fake.mode == "short":
                    data = data[:-1]
                tokens = sum(len(t.split()) for t in texts)
                self._json(200, {"object": "list", "data": data, "model": body.get("model"),
                                 "usage": {"prompt_tokens": tokens, "total_tokens": tokens}})

        return Handler
