"""Embeddings of source sentences kept in the database (table ``embedding_cache``, migration 7).

The built-in judge runs on worker threads while the pipeline's Store belongs to the event loop's
thread, so the cache opens its own connection to the same file (WAL: readers never wait, a write
waits its turn like any other). Keys are the sha256 of the sentence text and the model's id; a
vector is the float32 bytes of a unit-length embedding.
"""
from __future__ import annotations

import hashlib
import threading
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np

from .wal import connect

BUSY_TIMEOUT_S = 30.0
_CHUNK = 500   # keys a SELECT names at once (SQLite's variable limit is far above)


def text_key(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class VectorCache:
    """Read and write sentence embeddings in a SourceCheckup database; ``model`` names the embedding model."""

    def __init__(self, path: str | Path) -> None:
        """``path``: a database a Store has opened (and so migrated)."""
        self.path = Path(path)
        self._conn = connect(str(self.path), check_same_thread=False, timeout=BUSY_TIMEOUT_S)
        self._lock = threading.Lock()

    def close(self) -> None:
        with self._lock:
            self._conn.close()

    def get(self, model: str, dimensions: int, texts: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of those texts that have one (text -> vector)."""
        by_key = {text_key(t): t for t in texts}
        found: dict[str, np.ndarray] = {}
        keys = list(by_key)
        with self._lock:
            for start in range(0, len(keys), _CHUNK):
                chunk = keys[start:start + _CHUNK]
                rows = self._conn.execute(
                    f"SELECT text_sha256, vector FROM embedding_cache WHERE model = ? AND text_sha256 IN "
                    f"({','.join('?' * len(chunk))})", [model, *chunk]).fetchall()
                for key, blob in rows:
                    vector = np.frombuffer(blob, dtype=np.float32)
                    if vector.shape == (dimensions,):
                        found[by_key[key]] = vector
        return found

    def put(self, model: str, items: Iterable[tuple[str, np.ndarray]]) -> None:
        rows = [(model, text_key(t), np.asarray(v, dtype=np.float32).tobytes()) for t, v in items]
        if not rows:
            return
        with self._lock, self._conn:
            self._conn.executemany(
                "INSERT OR IGNORE INTO embedding_cache (model, text_sha256, vector) VALUES (?, ?, ?)", rows)
