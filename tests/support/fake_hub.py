"""A fake Hugging Face Hub on 127.0.0.1, reached through ``HF_ENDPOINT``, serving model folders.

It answers what huggingface_hub asks for a download:

- ``GET /api/models/{repo}/revision/{rev}?blobs=true`` (``HfApi.model_info(files_metadata=True)``):
  the commit and every file with its size, git blob id and, for weights, LFS sha256;
- ``GET|HEAD /{repo}/resolve/{rev}/{file}``: the bytes, with ``ETag``, ``X-Repo-Commit``,
  ``Content-Length`` and HTTP Range (206 + ``Content-Range``).

Faults: ``corrupt`` (serve other bytes of the same length), ``drop_after`` (send that many bytes of a
file once, then hang up). Every request is recorded as (method, path, Range header).
"""
from __future__ import annotations

import hashlib
import json
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import unquote, urlsplit

COMMIT = "0123456789abcdef0123456789abcdef01234567"
TINY_REPO = "lab/tiny-checker"   # the repo the tests' fake hub serves the tiny checker under
LFS_SUFFIXES = (".safetensors", ".bin")


class FakeHub:
    def __init__(self) -> None:
        self.repos: dict[str, Path] = {}
        self.requests: list[tuple[str, str, str]] = []
        self.corrupt: set[str] = set()
        self.drop_after: dict[str, int] = {}
        # file name -> (bytes to send first, event): the rest is sent only once the event is set, so a test can
        # act (cancel) while a download is truly mid-file, whatever the machine's speed
        self.hold: dict[str, tuple[int, threading.Event]] = {}
        self.bytes_sent: dict[str, int] = {}
        self._lock = threading.Lock()
        hub = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: object) -> None:
                return None

            def do_HEAD(self) -> None:
                hub._handle(self, body=False)

            def do_GET(self) -> None:
                hub._handle(self, body=True)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.endpoint = f"http://127.0.0.1:{self.server.server_address[1]}"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> "FakeHub":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()

    def add_repo(self, repo: str, folder: Path) -> None:
        self.repos[repo] = Path(folder)

    def file_gets(self, name: str) -> list[str]:
        """The Range header of every GET of ``name`` ("" = the whole file)."""
        return [rng for method, path, rng in self.requests if method == "GET" and path.endswith("/" + name)]

    # -- answers -------------------------------------------------------------------------

    def _handle(self, h: BaseHTTPRequestHandler, body: bool) -> None:
        path = unquote(urlsplit(h.path).path)
        with self._lock:
            self.requests.append((h.command, path, h.headers.get("Range", "")))
        if path.startswith("/api/models/"):
            return self._info(h, path[len("/api/models/"):])
        if "/resolve/" in path:
            repo, _, rest = path.lstrip("/").partition("/resolve/")
            _, _, name = rest.partition("/")
            return self._file(h, repo, name, body)
        self._send(h, 404, b'{"error": "not found"}', {"Content-Type": "application/json"})

    def _info(self, h: BaseHTTPRequestHandler, tail: str) -> None:
        repo, _, _ = tail.partition("/revision/")
        folder = self.repos.get(repo)
        if folder is None:
            return self._send(h, 404, json.dumps({"error": "Repository not found"}).encode(),
                              {"Content-Type": "application/json", "X-Error-Code": "RepoNotFound"})
        siblings = []
        for f in sorted(p for p in folder.iterdir() if p.is_file()):
            data = f.read_bytes()
            item = {"rfilename": f.name, "size": len(data),
                    "blobId": hashlib.sha1(f"blob {len(data)}\0".encode() + data).hexdigest()}
            if f.suffix in LFS_SUFFIXES:
                item["lfs"] = {"sha256": hashlib.sha256(data).hexdigest(), "size": len(data), "pointerSize": 134}
            siblings.append(item)
        info = {"id": repo, "modelId": repo, "sha": COMMIT, "private": False, "siblings": siblings,
                "tags": ["license:mit"], "cardData": {"license": "mit"}}
        self._send(h, 200, json.dumps(info).encode(), {"Content-Type": "application/json"})

    def _file(self, h: BaseHTTPRequestHandler, repo: str, name: str, body: bool) -> None:
        folder = self.repos.get(repo)
        target = folder / name if folder is not None else None
        if target is None or not target.is_file():
            return self._send(h, 404, b"Entry not found", {"X-Error-Code": "EntryNotFound"})
        data = target.read_bytes()
        if name in self.corrupt:
            data = bytes(b ^ 0x5A for b in data)
        headers = {"ETag": f'"{hashlib.sha256(data).hexdigest()}"', "X-Repo-Commit": COMMIT,
                   "Accept-Ranges": "bytes", "Content-Type": "application/octet-stream"}
        status, start = 200, 0
        rng = h.headers.get("Range", "")
        if rng.startswith("bytes="):
            start = int(rng[len("bytes="):].split("-")[0] or 0)
            status = 206
            headers["Content-Range"] = f"bytes {start}-{len(data) - 1}/{len(data)}"
        part = data[start:]
        if not body:
            return self._send(h, status, b"", {**headers, "Content-Length": str(len(part))}, head=True)
        cut = self.drop_after.pop(name, None)
        h.send_response(status)
        for k, v in {**headers, "Content-Length": str(len(part))}.items():
            h.send_header(k, v)
        h.end_headers()
        sent = part if cut is None else part[:cut]
        held = self.hold.pop(name, None)
        if held is not None:
            first, release = held
            h.wfile.write(sent[:first])
            h.wfile.flush()
            with self._lock:
                self.bytes_sent[name] = self.bytes_sent.get(name, 0) + len(sent[:first])
            release.wait(10)
            sent = sent[first:]
        try:
            h.wfile.write(sent)
            h.wfile.flush()
        except (BrokenPipeError, ConnectionResetError):   # the client gave up (a cancelled pull)
            return
        with self._lock:
            self.bytes_sent[name] = self.bytes_sent.get(name, 0) + len(sent)
        if cut is not None:
            h.close_connection = True
            h.connection.shutdown(2)

    @staticmethod
    def _send(h: BaseHTTPRequestHandler, status: int, data: bytes, headers: dict[str, str],
              head: bool = False) -> None:
        h.send_response(status)
        for k, v in headers.items():
            h.send_header(k, v)
        if "Content-Length" not in headers:
            h.send_header("Content-Length", str(len(data)))
        h.end_headers()
        if not head and data:
            h.wfile.write(data)


def build_tiny_checker(folder: Path) -> Path:
    """The model both hub test files serve: a 2-label MiniCheck-style classifier whose LABEL_1 (supported)
    rises by 4 when "phlebotomy" occurs."""
    from tests.support.tiny_model import build_oracle_model

    return build_oracle_model(folder, labels=("LABEL_0", "LABEL_1"), supported_index=1,
                              evidence_words={"phlebotomy": 4.0}, bias=(0.0, -1.0))
