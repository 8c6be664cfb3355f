"""A fake ``llama-server`` (llama.cpp) on 127.0.0.1 that answers as the real one does.

What it copies from llama.cpp's server (tools/server: README.md and tests/unit):

- ``/v1/chat/completions`` in OpenAI's wire format, with ``logprobs``/``top_logprobs`` in its
  shape (``choices[0].logprobs.content[i]`` = ``{id, token, bytes, logprob, top_logprobs}``);
- ``response_format`` ``json_schema`` forces the reply into the schema, whatever the model is;
- ``n_slots`` slots sharing one ``n_ctx``-token KV cache (``unified``: what ``llama-server -c N``
  starts with, ``-np`` left at auto: 4 slots, each may use the whole cache, the requests in flight
  together may not) or split into ``n_ctx / n_slots`` tokens a slot (``-c N -np K`` given
  explicitly); a request whose prompt fills a slot gets HTTP 400 ``exceed_context_size_error`` (a
  prompt that fits with a larger ``max_tokens`` is answered, cut at the slot's end with
  finish_reason "length", as llama-server b11434 does);
- requests in flight that together overflow the shared cache: the real server (b11434, checked
  with four concurrent 1,300-token prompts in a 4,096-token cache) fails EVERY request then in
  flight, not only the newest, each with HTTP 500 ``{"error": {"code": 500, "message": "Context
  size has been exceeded.", "type": "server_error"}}``, and frees their slots; so does the fake;
  more requests than slots wait in a queue;
- ``/props`` (``default_generation_settings.n_ctx``, ``total_slots``) and ``/v1/models``
  (``meta.n_ctx``) both report ONE SLOT's context: the whole cache, and whether it is unified, are
  not reported anywhere (so ``-c 4096`` reads 4,096 and 4 slots; ``-c 4096 -np 4`` reads 1,024 and
  4 slots); ``/slots`` lists the slots with their ``n_ctx``; ``/tokenize``, ``/health``;
- a tokenizer that counts like llama's (a token per digit, long words in pieces): number-heavy
  text costs about 2.7 times the 4-characters-a-token estimate, as it does on the real server;
- ``--api-key``: every endpoint but ``/health`` answers 401 "Invalid API Key", ``/v1/models`` included (as a real
  llama-server built from source does: its model list is not public once it has a key).

Models (``model=``): ``"judge"`` (a helpful verifier: supported, quoting the source's first
sentence), ``"checker"`` (a MiniCheck-like model: "Yes"/"No" with logprobs from word overlap
between claim and document), ``"garbage"`` (" The The The…", Yes/No at about 4.5 % among the
top-5 first-token alternatives; under a schema, the schema filled with " The"), ``"random"``
(random words; under a schema, a random label and a quote that is not in the source, often cut
off at ``max_tokens``). ``reject_response_format`` answers any request with a schema with
"Failed to initialize samplers" (status ``reject_status``).
"""
from __future__ import annotations

import json
import math
import random
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_TOKEN = re.compile(r"[^\W\d_]+|\d|[^\w\s]|_")


def count_tokens(text: str) -> int:
    """The fake's tokenizer, counting about as llama's SentencePiece vocabulary does: a token per digit
    and per punctuation mark, a word a token per five letters begun (on the demo's pages 1.08 times
    the 4-characters-a-token estimate, the real one 1.06; on a table of lab values 1.8, the real 2.7)."""
    return sum(1 + (len(t) - 1) // 5 if t[0].isalpha() else 1 for t in _TOKEN.findall(text))


def prompt_tokens(messages: list[dict[str, Any]]) -> int:
    """Tokens of a chat prompt: every message's text plus a chat template's few tokens a message."""
    return sum(count_tokens(str(m.get("content") or "")) + 4 for m in messages) + 3


def checker_yes_probability(document: str, claim: str) -> float:
    """The MiniCheck-like model's P(Yes): how much of the claim's words the document holds, squashed."""
    want = {w.lower() for w in re.findall(r"\w+", claim)}
    have = {w.lower() for w in re.findall(r"\w+", document)}
    share = len(want & have) / (len(want) or 1)
    return 1.0 / (1.0 + math.exp(-12.0 * (share - 0.7)))


def checker_top_logprobs(document: str, claim: str) -> list[tuple[str, float]]:
    """Five first-token alternatives: "Yes", "yes", " Yes" (a leading space: not "yes" to the authors'
    test), "No", "no", their probabilities set by :func:`checker_yes_probability`."""
    p = min(max(checker_yes_probability(document, claim), 1e-6), 1 - 1e-6)
    share = [("Yes", 0.90 * p), ("yes", 0.04 * p), (" Yes", 0.03 * p), ("No", 0.92 * (1 - p)),
             ("no", 0.05 * (1 - p))]
    share.sort(key=lambda t: -t[1])
    return [(t, math.log(v)) for t, v in share]


GARBAGE_TOP = [(" The", math.log(0.80)), (" the", math.log(0.06)), (",", math.log(0.035)),
               ("Yes", math.log(0.025)), ("No", math.log(0.020))]


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]
    status: int = 0
    prompt_tokens: int = 0


@dataclass
class FakeLlamaServer:
    model: str = "judge"
    n_ctx: int = 4096
    n_slots: int = 4
    unified: bool = True
    api_key: str | None = None
    reject_response_format: bool = False
    reject_status: int = 500
    latency_s: float = 0.005
    model_id: str = "model.gguf"
    seed: int = 7
    silent_truncation: int | None = None   # cut longer prompts to this many tokens without a word (as Ollama does)
    requests: list[Recorded] = field(default_factory=list)
    context_errors: int = 0        # requests answered with a context error (400 or 500)
    overflows: int = 0             # times the shared cache overflowed (each fails every request in flight)
    peak_in_flight: int = 0
    peak_tokens: int = 0           # the most tokens the requests in flight held together

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self._slots = threading.Semaphore(self.n_slots)
        self._used = 0
        self._in_flight = 0
        self._running: dict[int, tuple[int, threading.Event]] = {}   # request -> (its tokens, failed)
        self._rng = random.Random(self.seed)
        self._httpd: ThreadingHTTPServer | None = None

    # -- lifecycle ------------------------------------------------------------------------

    def __enter__(self) -> "FakeLlamaServer":
        fake = self

        class Handler(_Handler):
            server_fake = fake

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self._httpd.request_queue_size = 128
        threading.Thread(target=self._httpd.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        assert self._httpd is not None
        self._httpd.shutdown()
        self._httpd.server_close()

    @property
    def port(self) -> int:
        assert self._httpd is not None
        return self._httpd.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def slot_ctx(self) -> int:
        return self.n_ctx if self.unified else self.n_ctx // self.n_slots

    @property
    def chat_requests(self) -> list[Recorded]:
        return [r for r in self.requests if r.path.endswith("/chat/completions")]

    # -- the endpoints ----------------------------------------------------------------------

    def models_body(self) -> dict[str, Any]:
        entry = {"id": self.model_id, "object": "model", "created": 1731000000, "owned_by": "llamacpp",
                 "meta": {"vocab_type": 2, "n_vocab": 151936, "n_ctx_train": 32768, "n_ctx": self.slot_ctx,
                          "n_embd": 896, "n_params": 494032768, "size": 531066880}}
        return {"models": [{"name": self.model_id, "model": self.model_id}], "object": "list", "data": [entry]}

    def props_body(self) -> dict[str, Any]:
        return {"default_generation_settings": {"n_ctx": self.slot_ctx, "params": {"n_predict": -1}},
                "total_slots": self.n_slots, "model_path": f"/models/{self.model_id}",
                "build_info": "b7000-fake"}

    def complete(self, body: dict[str, Any], n_prompt: int) -> tuple[int, dict[str, Any]]:
        """(status, body) of one chat completion; holds a slot and its share of the cache meanwhile."""
        schema = body.get("response_format") or {}
        structured = isinstance(schema, dict) and schema.get("type") in ("json_schema", "json_object")
        if structured and self.reject_response_format:
            return self.reject_status, error(self.reject_status, "Failed to initialize samplers",
                                             "server_error" if self.reject_status >= 500 else "invalid_request_error")
        max_tokens = int(body.get("max_tokens") or body.get("max_completion_tokens") or -1)
        if self.silent_truncation is not None:
            n_prompt = min(n_prompt, self.silent_truncation)
        # the real server (checked against llama-server b11434) refuses only a prompt that fills the
        # slot; a longer max_tokens is accepted and the reply stops at the slot's end ("length")
        budget = min(max_tokens, self.slot_ctx - n_prompt) if max_tokens > 0 else self.slot_ctx - n_prompt
        if n_prompt >= self.slot_ctx:
            with self._lock:
                self.context_errors += 1
            return 400, {"error": {"code": 400, "message": f"request ({n_prompt} tokens) "
                                   f"exceeds the available context size ({self.slot_ctx} tokens), try increasing it",
                                   "type": "exceed_context_size_error", "n_prompt_tokens": n_prompt,
                                   "n_ctx": self.slot_ctx}}
        text, finish, top = self.reply_text(body, budget, structured)
        n_out = min(budget, max(1, count_tokens(text)))
        need = n_prompt + n_out
        failed = threading.Event()
        with self._slots:      # the queue: a request waits for a free slot
            with self._lock:
                if self.unified and self._used + need > self.n_ctx:
                    # llama.cpp's decode finds no room: every request in flight fails with this one
                    self.overflows += 1
                    self.context_errors += 1 + len(self._running)
                    for _, flag in self._running.values():
                        flag.set()
                    self._running.clear()
                    self._used = 0
                    return 500, error(500, "Context size has been exceeded.", "server_error")
                key = id(failed)
                self._running[key] = (need, failed)
                self._used += need
                self._in_flight += 1
                self.peak_in_flight = max(self.peak_in_flight, self._in_flight)
                self.peak_tokens = max(self.peak_tokens, self._used)
            try:
                failed.wait(self.latency_s)
            finally:
                with self._lock:
                    if self._running.pop(key, None) is not None:
                        self._used -= need
                    self._in_flight -= 1
        if failed.is_set():
            return 500, error(500, "Context size has been exceeded.", "server_error")
        choice: dict[str, Any] = {"index": 0, "finish_reason": finish,
                                  "message": {"role": "assistant", "content": text}}
        if body.get("logprobs"):
            choice["logprobs"] = {"content": logprob_content(text, top, int(body.get("top_logprobs") or 1))}
        return 200, {"choices": [choice], "created": int(time.time()), "model": self.model_id,
                     "system_fingerprint": "b7000-fake", "object": "chat.completion",
                     "usage": {"completion_tokens": n_out, "prompt_tokens": n_prompt,
                               "total_tokens": n_prompt + n_out},
                     "id": f"chatcmpl-{len(self.requests)}"}

    def reply_text(self, body: dict[str, Any], budget: int, structured: bool) -> tuple[str, str, list[tuple[str, float]]]:
        """(text, finish_reason, first token's alternatives) the model writes, cut at ``budget`` tokens."""
        messages = body.get("messages") or []
        user = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")
        if self.model == "checker":
            document, _, claim = user.partition("\nClaim: ")
            top = checker_top_logprobs(document.removeprefix("Document: "), claim)
            return _cut(top[0][0], budget) + (top,)
        if self.model == "garbage":
            if structured:
                filler = " The" * (budget + 10)
                return _cut('{"label": "supported", "quote": "' + filler, budget) + (GARBAGE_TOP,)
            return _cut(" The" * (budget + 10), budget) + (GARBAGE_TOP,)
        if self.model == "random":
            with self._lock:
                words = " ".join(self._rng.choice(_WORDS) for _ in range(self._rng.randint(5, 2 * budget)))
                label = self._rng.choice(["supported", "not_supported"])
            top = [(w, math.log(0.2)) for w in _WORDS[:5]]
            if structured:
                return _cut(json.dumps({"label": label, "quote": words, "rationale": words}), budget) + (top,)
            return _cut(words, budget) + (top,)
        block = re.search(r"BEGIN SOURCE (\w+)\n(.*?)\nEND SOURCE \1", user, re.S)
        text = block.group(2) if block else ""
        text = "\n".join(line for line in text.splitlines() if not line.startswith(("Title: ", "URL: ")))
        first = re.split(r"(?<=[.!?])\s", text.strip(), maxsplit=1)[0] if text.strip() else ""
        statements = re.findall(r"^\d+\. (.+)$", user, re.M)
        if "verdicts" in json.dumps(body.get("response_format") or {}) and statements:
            reply = json.dumps({"verdicts": [{"index": i, "label": "supported", "quote": first,
                                              "rationale": "The source states this."}
                                             for i in range(1, len(statements) + 1)]})
        else:
            reply = json.dumps({"label": "supported", "quote": first, "rationale": "The source states this."})
        return _cut(reply, budget) + ([("{", 0.0)],)


_WORDS = ("alpha", "Patients", "dose", "The", "renal", "blue", "of", "trial", "seven", "never")


def _cut(text: str, budget: int) -> tuple[str, str]:
    """``text`` cut after ``budget`` tokens, and the finish reason."""
    pieces = list(re.finditer(r"\s*(?:\w+|[^\w\s])", text))
    if len(pieces) <= budget:
        return text, "stop"
    return text[:pieces[budget - 1].end()], "length"


def logprob_content(text: str, top: list[tuple[str, float]], wanted: int) -> list[dict[str, Any]]:
    """llama.cpp's ``logprobs.content``: the first token with its alternatives (later tokens certain)."""
    def entry(token: str, lp: float) -> dict[str, Any]:
        return {"id": abs(hash(token)) % 150000, "token": token, "bytes": list(token.encode()), "logprob": lp}

    pieces = [m.group(0) for m in re.finditer(r"\s*(?:\w+|[^\w\s])", text)] or [""]
    first_lp = next((lp for t, lp in top if t == pieces[0]), top[0][1] if top else 0.0)
    out = [{**entry(pieces[0], first_lp), "top_logprobs": [entry(t, lp) for t, lp in top[:wanted]]}]
    out += [{**entry(p, 0.0), "top_logprobs": [entry(p, 0.0)]} for p in pieces[1:]]
    return out


def error(code: int, message: str, kind: str) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "type": kind}}


_PUBLIC = {"/health", "/v1/health"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True   # no 40 ms delayed-ACK stall between headers and body
    server_fake: FakeLlamaServer

    def log_message(self, *args: object) -> None:
        return

    def _send(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _authorised(self, path: str) -> bool:
        fake = self.server_fake
        if not fake.api_key or path in _PUBLIC:
            return True
        sent = (self.headers.get("Authorization") or "").removeprefix("Bearer ").strip()
        return sent == fake.api_key

    def _record(self, path: str, body: dict[str, Any]) -> Recorded:
        rec = Recorded(path, {k.lower(): v for k, v in self.headers.items()}, body)
        with self.server_fake._lock:
            self.server_fake.requests.append(rec)
        return rec

    def do_GET(self) -> None:
        fake = self.server_fake
        path = self.path.split("?")[0].rstrip("/")
        rec = self._record(path, {})
        if not self._authorised(path):
            rec.status = 401
            self._send(401, error(401, "Invalid API Key", "authentication_error"))
        elif path in ("/health", "/v1/health"):
            self._send(200, {"status": "ok"})
        elif path in ("/models", "/v1/models"):
            self._send(200, fake.models_body())
        elif path == "/props":
            self._send(200, fake.props_body())
        elif path == "/slots":
            self._send(200, [{"id": i, "n_ctx": fake.slot_ctx, "speculative": False, "is_processing": False}
                             for i in range(fake.n_slots)])
        else:
            self._send(404, error(404, "File Not Found", "not_found_error"))

    def do_POST(self) -> None:
        fake = self.server_fake
        path = self.path.split("?")[0].rstrip("/")
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            self._send(400, error(400, "invalid JSON", "invalid_request_error"))
            return
        rec = self._record(path, body)
        if not self._authorised(path):
            rec.status = 401
            self._send(401, error(401, "Invalid API Key", "authentication_error"))
            return
        if path == "/tokenize":
            self._send(200, {"tokens": list(range(count_tokens(str(body.get("content") or ""))))})
            return
        if path not in ("/v1/chat/completions", "/chat/completions"):
            self._send(404, error(404, "File Not Found", "not_found_error"))
            return
        rec.prompt_tokens = prompt_tokens(body.get("messages") or [])
        status, reply = fake.complete(body, rec.prompt_tokens)
        rec.status = status
        try:
            self._send(status, reply)
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
