"""Fake model servers on 127.0.0.1 that answer the listing calls detection makes.

``ollama()`` answers ``/api/tags`` and ``/v1/models`` as Ollama does; ``vllm()`` answers only
``/v1/models`` (``owned_by: vllm``) as vLLM does; ``other_web_app()`` is something else on a
port (an HTML page everywhere); ``silent()`` accepts connections and never answers. Every
request is recorded with its path and Host header.
"""
from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

OLLAMA_TAGS = {"models": [
    {"name": "llama3.1:8b", "model": "llama3.1:8b", "size": 4920753328,
     "details": {"family": "llama", "parameter_size": "8.0B", "quantization_level": "Q4_K_M"}},
    {"name": "bespoke-minicheck:latest", "model": "bespoke-minicheck:latest", "size": 4683072512,
     "details": {"family": "qwen2", "parameter_size": "7.6B", "quantization_level": "Q4_K_M"}}]}
OLLAMA_MODELS = {"object": "list", "data": [
    {"id": "llama3.1:8b", "object": "model", "created": 1731000000, "owned_by": "library"},
    {"id": "bespoke-minicheck:latest", "object": "model", "created": 1731000000, "owned_by": "library"}]}
VLLM_MODELS = {"object": "list", "data": [
    {"id": "bespokelabs/Bespoke-MiniCheck-7B", "object": "model", "created": 1731000000, "owned_by": "vllm",
     "root": "bespokelabs/Bespoke-MiniCheck-7B", "max_model_len": 32768}]}


class FakeModelServer:
    """Answers GET requests from a table ``path -> (status, body)``; anything else is a 404."""

    def __init__(self, routes: dict[str, tuple[int, Any]], *, html: bool = False, silent: bool = False):
        self.routes = routes
        self.html = html
        self.silent = silent
        self.requests: list[tuple[str, str]] = []   # (path, Host header)
        self._httpd: ThreadingHTTPServer | None = None
        self._release = threading.Event()

    @property
    def port(self) -> int:
        assert self._httpd is not None
        return self._httpd.server_address[1]

    def __enter__(self) -> "FakeModelServer":
        fake = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: object) -> None:
                pass

            def do_GET(self) -> None:
                fake.requests.append((self.path, self.headers.get("Host", "")))
                if fake.silent:
                    fake._release.wait(10)
                    return
                if fake.html:
                    body, ctype, status = b"<html><body>Router admin</body></html>", "text/html", 200
                else:
                    status, payload = fake.routes.get(self.path, (404, {"error": f"no route {self.path}"}))
                    body, ctype = json.dumps(payload).encode(), "application/json"
                self.send_response(status)
                self.send_header("Content-Type", ctype)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def do_POST(self) -> None:   # Ollama's /api/show is a POST; the body is not read
                self.rfile.read(int(self.headers.get("Content-Length") or 0))
                self.do_GET()

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._release.set()
        assert self._httpd is not None
        self._httpd.shutdown()
        self._httpd.server_close()


def ollama(tags: dict[str, Any] | None = None) -> FakeModelServer:
    return FakeModelServer({"/api/tags": (200, tags if tags is not None else OLLAMA_TAGS),
                            "/v1/models": (200, OLLAMA_MODELS if tags is None else {"object": "list", "data": []})})


def vllm() -> FakeModelServer:
    return FakeModelServer({"/v1/models": (200, VLLM_MODELS)})


def other_web_app() -> FakeModelServer:
    return FakeModelServer({}, html=True)


def silent() -> FakeModelServer:
    return FakeModelServer({}, silent=True)


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]
