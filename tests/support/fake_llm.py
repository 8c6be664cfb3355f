"""Local fake LLM servers on 127.0.0.1 that speak the real wire formats.

``FakeLLMServer("openai")`` speaks OpenAI chat-completions (``/v1/chat/completions``, with
``response_format`` and ``seed`` recorded), ``"anthropic"`` speaks Anthropic messages
(``/v1/messages``, structured output through a forced tool call) and ``"ollama"`` speaks
Ollama's OpenAI-compatible ``/v1`` endpoint (no key needed). The real ``openai`` and
``anthropic`` SDKs are pointed at ``server.base_url``.

Replies are scripted per request (:meth:`FakeLLMServer.script`), in order; when the script
is empty a responder answers (by default: "supported", quoting the first sentence of the
source block). Faults: 429 with Retry-After, 5xx, slow replies, malformed JSON, refusals,
an empty body, a truncated body. Every request is recorded.
"""
from __future__ import annotations

import json
import re
import socket
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Literal

Flavor = Literal["openai", "anthropic", "ollama"]


TEST_KEY = "sk-fake-test-7d1a8b6e3c5d0f4f9c2e"   # the key a fake server wants, and the tests send


@dataclass
class Scripted:
    """One reply. ``content`` is the model's text; for Anthropic a JSON object becomes a tool call."""

    content: str | None = None
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0
    refusal: str | None = None
    error_message: str | None = None
    finish: str | None = None          # finish_reason / stop_reason override
    body: bytes | None = None          # raw body override (b"" = empty body)
    truncate: bool = False             # announce more bytes than are sent, then hang up
    usage: tuple[int, int] | None = None
    top_logprobs: list[tuple[str, float]] | None = None   # the first token's alternatives, sent when asked for


def verdict(label: str = "supported", quote: str = "", rationale: str = "The source says so.") -> Scripted:
    return Scripted(json.dumps({"label": label, "quote": quote, "rationale": rationale}))


def batch_verdicts(*items: tuple[str, str]) -> Scripted:
    return Scripted(json.dumps({"verdicts": [
        {"index": i, "label": label, "quote": quote, "rationale": "Checked against the source."}
        for i, (label, quote) in enumerate(items, start=1)]}))


def rate_limited(retry_after_s: float = 0.2) -> Scripted:
    return Scripted(status=429, headers={"retry-after": f"{retry_after_s:g}"},
                    error_message="Rate limit reached for requests. Please try again later.")


def server_error(status: int = 500) -> Scripted:
    return Scripted(status=status, error_message="The server had an error while processing your request.")


def bad_request(message: str) -> Scripted:
    return Scripted(status=400, error_message=message)


def slow(seconds: float, then: Scripted | None = None) -> Scripted:
    reply = then or verdict()
    reply.delay_s = seconds
    return reply


def malformed(text: str = '{"label": "supported", "quote": "unterminated') -> Scripted:
    return Scripted(text)


def refusal(text: str = "I'm sorry, but I can't help with that request.") -> Scripted:
    return Scripted(refusal=text)


def empty_body() -> Scripted:
    return Scripted(body=b"")


def truncated() -> Scripted:
    return Scripted(truncate=True)


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    at: float

    @property
    def messages(self) -> list[dict[str, Any]]:
        return self.body.get("messages", [])

    @property
    def all_text(self) -> str:
        """Every text the model would read: system prompt and all message contents."""
        parts: list[str] = []
        system = self.body.get("system")
        if isinstance(system, str):
            parts.append(system)
        elif isinstance(system, list):
            parts += [b.get("text", "") for b in system if isinstance(b, dict)]
        for message in self.messages:
            parts.append(_content_text(message.get("content")))
        return "\n".join(parts)

    @property
    def user_text(self) -> str:
        users = [m for m in self.messages if m.get("role") == "user"]
        return _content_text(users[0].get("content")) if users else ""

    @property
    def is_batch(self) -> bool:
        return "Statements:" in self.user_text

    def source_block(self) -> tuple[str, str] | None:
        """(boundary, body) of the delimited source block in the first user message."""
        match = re.search(r"^BEGIN SOURCE (\S+)\n(.*?)\nEND SOURCE \1$", self.user_text, re.S | re.M)
        return (match.group(1), match.group(2)) if match else None

    def statement_count(self) -> int:
        head = self.user_text.split("BEGIN SOURCE", 1)[0]
        return len(re.findall(r"^\d+\. ", head, re.M))


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        out = []
        for block in content:
            if isinstance(block, dict):
                if "text" in block:
                    out.append(str(block["text"]))
                elif block.get("type") == "tool_result":
                    out.append(_content_text(block.get("content")))
                elif block.get("type") == "tool_use":
                    out.append(json.dumps(block.get("input")))
        return "\n".join(out)
    return ""


def first_sentence(block_body: str) -> str:
    lines = [ln for ln in block_body.splitlines() if ln.strip() and not ln.startswith(("Title: ", "URL: "))]
    text = " ".join(lines)
    match = re.match(r"(.+?[.!?])(?=\s|$)", text)
    return (match.group(1) if match else text[:200]).strip()


def default_responder(request: RecordedRequest) -> Scripted:
    """Says "supported" and quotes the first sentence of the source block."""
    block = request.source_block()
    quote = first_sentence(block[1]) if block else ""
    if request.is_batch:
        return batch_verdicts(*[("supported", quote)] * max(1, request.statement_count()))
    return verdict("supported", quote, "The source states this.")


def _logprobs(request: RecordedRequest, reply: Scripted) -> dict[str, Any] | None:
    """OpenAI's logprobs object for the first token, when the request asked and the reply has some."""
    if not request.body.get("logprobs") or not reply.top_logprobs:
        return None
    wanted = int(request.body.get("top_logprobs") or 1)
    top = [{"token": t, "logprob": lp, "bytes": list(t.encode())} for t, lp in reply.top_logprobs[:wanted]]
    return {"content": [{**top[0], "top_logprobs": top}], "refusal": None}


def approx_tokens(text: str) -> int:
    return max(1, (len(text) + 3) // 4)


class FakeLLMServer:
    """A threaded HTTP server on 127.0.0.1; use as a context manager or call start()/stop()."""

    def __init__(self, flavor: Flavor = "openai", *, latency_s: float = 0.0,
                 responder: Callable[[RecordedRequest], Scripted] | None = None,
                 model_versions: dict[str, str] | None = None, api_key: str | None = None):
        self.flavor = flavor
        self.latency_s = latency_s
        self.responder = responder or default_responder
        self.model_versions = model_versions or {}
        self.api_key = api_key            # when set, requests without it get 401 (echoing what was sent)
        self.requests: list[RecordedRequest] = []
        self._script: deque[Scripted] = deque()
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------------

    def start(self) -> "FakeLLMServer":
        server = self

        class Handler(_Handler):
            fake = server

        httpd = _Server(("127.0.0.1", 0), Handler)
        httpd.daemon_threads = True
        httpd.block_on_close = False
        self._httpd = httpd
        self._thread = threading.Thread(target=httpd.serve_forever, kwargs={"poll_interval": 0.05},
                                        name=f"fake-{self.flavor}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def __enter__(self) -> "FakeLLMServer":
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._httpd is not None, "start the server first"
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        root = f"http://127.0.0.1:{self.port}"
        return root if self.flavor == "anthropic" else root + "/v1"

    # -- scripting -----------------------------------------------------------------------------

    def script(self, *replies: Scripted) -> None:
        with self._lock:
            self._script.extend(replies)

    def _next(self, request: RecordedRequest) -> Scripted:
        with self._lock:
            self.requests.append(request)
            if self._script:
                return self._script.popleft()
        return self.responder(request)

    def sleep(self, seconds: float) -> None:
        self._stopping.wait(seconds)

    # -- wire formats --------------------------------------------------------------------------

    def reported_model(self, requested: str) -> str:
        return self.model_versions.get(requested, requested)

    def error_body(self, status: int, message: str) -> dict[str, Any]:
        if self.flavor == "anthropic":
            kind = {429: "rate_limit_error", 401: "authentication_error", 400: "invalid_request_error",
                    529: "overloaded_error"}.get(status, "api_error")
            return {"type": "error", "error": {"type": kind, "message": message}}
        kind = {429: "rate_limit_exceeded", 401: "invalid_api_key", 400: "invalid_request_error"}.get(
            status, "server_error")
        return {"error": {"message": message, "type": kind, "param": None, "code": kind}}

    def success_body(self, request: RecordedRequest, reply: Scripted) -> dict[str, Any]:
        model = self.reported_model(str(request.body.get("model", "")))
        tokens_in = approx_tokens(request.all_text)
        content = reply.content or ""
        tokens_out = approx_tokens(content or reply.refusal or "x")
        if reply.usage:
            tokens_in, tokens_out = reply.usage
        if self.flavor == "anthropic":
            return self._anthropic_body(request, reply, model, tokens_in, tokens_out)
        message: dict[str, Any] = {"role": "assistant", "content": None if reply.refusal else content,
                                   "refusal": reply.refusal}
        return {
            "id": f"chatcmpl-{len(self.requests)}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "system_fingerprint": "fp_ollama" if self.flavor == "ollama" else "fp_fake",
            "choices": [{"index": 0, "message": message, "logprobs": _logprobs(request, reply),
                         "finish_reason": reply.finish or "stop"}],
            "usage": {"prompt_tokens": tokens_in, "completion_tokens": tokens_out,
                      "total_tokens": tokens_in + tokens_out},
        }

    def _anthropic_body(self, request: RecordedRequest, reply: Scripted, model: str,
                        tokens_in: int, tokens_out: int) -> dict[str, Any]:
        tools = request.body.get("tools") or []
        blocks: list[dict[str, Any]]
        stop = "end_turn"
        parsed: Any = None
        if reply.content:
            try:
                parsed = json.loads(reply.content)
            except json.JSONDecodeError:
                parsed = None
        if reply.refusal:
            blocks, stop = [{"type": "text", "text": reply.refusal}], "refusal"
        elif isinstance(parsed, dict) and tools:
            blocks = [{"type": "tool_use", "id": f"toolu_{len(self.requests):04d}", "name": tools[0]["name"],
                       "input": parsed}]
            stop = "tool_use"
        else:
            blocks = [{"type": "text", "text": reply.content or ""}]
        return {"id": f"msg_{len(self.requests):04d}", "type": "message", "role": "assistant", "model": model,
                "content": blocks, "stop_reason": reply.finish or stop, "stop_sequence": None,
                "usage": {"input_tokens": tokens_in, "output_tokens": tokens_out}}

    def authorised(self, headers: dict[str, str]) -> tuple[bool, str]:
        if not self.api_key or self.flavor == "ollama":
            return True, ""
        sent = headers.get("authorization", "").removeprefix("Bearer ")
        if self.flavor == "anthropic" and "x-api-key" in headers:  # older SDKs; newer send a Bearer token
            sent = headers["x-api-key"]
        return sent == self.api_key, sent


class _Server(ThreadingHTTPServer):
    request_queue_size = 256   # the default backlog of 5 refuses bursts of 32 concurrent clients


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True   # headers and body go out in two writes; no 40 ms delayed-ACK stall
    fake: FakeLLMServer
    timeout = 10

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        return

    def _send_json(self, status: int, body: dict[str, Any] | bytes, headers: dict[str, str] | None = None,
                   truncate: bool = False) -> None:
        data = body if isinstance(body, bytes) else json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data) + (100 if truncate else 0)))
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.end_headers()
        if truncate:
            self.wfile.write(data[: len(data) // 2])
            self.wfile.flush()
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
            return
        self.wfile.write(data)

    def do_GET(self) -> None:
        if self.fake.flavor == "ollama" and self.path == "/api/version":
            self._send_json(200, {"version": "0.0.0-fake"})
        elif self.path.rstrip("/").endswith("/models"):
            self._send_json(200, {"object": "list", "data": []})
        else:
            self._send_json(404, self.fake.error_body(404, f"no route {self.path}"))

    def do_POST(self) -> None:
        fake = self.fake
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw or b"{}")
        except json.JSONDecodeError:
            self._send_json(400, fake.error_body(400, "request body is not JSON"))
            return
        expected = "/v1/messages" if fake.flavor == "anthropic" else "/v1/chat/completions"
        headers = {k.lower(): v for k, v in self.headers.items()}
        request = RecordedRequest("POST", self.path, headers, body, time.monotonic())
        if self.path.split("?")[0] != expected:
            self._send_json(404, fake.error_body(404, f"no route {self.path}; this server speaks {expected}"))
            return
        ok, sent = fake.authorised(headers)
        if not ok:
            with fake._lock:
                fake.requests.append(request)
            # a careless server echoes the key it was sent: the client must still never show it
            self._send_json(401, fake.error_body(401, f"Incorrect API key provided: {sent}"))
            return
        reply = fake._next(request)
        delay = fake.latency_s + reply.delay_s
        if delay:
            fake.sleep(delay)
        try:
            if reply.status != 200:
                self._send_json(reply.status, fake.error_body(reply.status, reply.error_message or "error"),
                                reply.headers)
            elif reply.body is not None:
                self._send_json(200, reply.body, reply.headers)
            else:
                self._send_json(200, fake.success_body(request, reply), reply.headers, truncate=reply.truncate)
        except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout): fine
            self.close_connection = True
