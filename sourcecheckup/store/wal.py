"""Connections that never delete the -wal and -shm files another process still uses.

SQLite's rule (https://www.sqlite.org/wal.html): the last connection to close a WAL database
checkpoints it and deletes the -wal and -shm files. It knows it is the last when it gets an
exclusive lock on the database file; other processes' shared locks are POSIX advisory locks, and
POSIX drops every lock a process holds on a file as soon as that process closes *any* descriptor of
the file. A file dialog in the app does exactly that (Qt and GTK sniff a file's type by reading its
first bytes: ``QFileIconProvider.type``, ``QMimeDatabase``), and from then on a command-line run
that closes its connection believes it is the last one and deletes the files under the app, which
goes on writing to the deleted ones ("disk I/O error", labels no other process sees).

``SQLITE_FCNTL_PERSIST_WAL`` keeps both files on close (the checkpoint still runs, so the database
file is complete, and the -wal file is emptied): a closing connection then never removes them,
whatever locks were lost. Python's
``sqlite3`` does not expose ``sqlite3_file_control``, so it is called through ctypes on the very
library ``_sqlite3`` is linked with (never another copy of SQLite: that would be unsafe in itself).
"""
from __future__ import annotations

import ctypes
import functools
import os
import sqlite3
import sys
from typing import Any

SQLITE_FCNTL_PERSIST_WAL = 10


@functools.lru_cache(maxsize=1)
def _library() -> Any:
    """The SQLite library Python's sqlite3 module uses, or None where it cannot be reached."""
    try:
        import _sqlite3

        module = _sqlite3.__file__
        if sys.platform == "win32":   # _sqlite3.pyd imports sqlite3.dll from its own folder
            lib = ctypes.CDLL(os.path.join(os.path.dirname(module), "sqlite3.dll"))
        else:   # dlsym on the module's handle searches the libsqlite3 it links (or its own static copy)
            lib = ctypes.CDLL(module)
        control, filename = lib.sqlite3_file_control, lib.sqlite3_db_filename
    except (ImportError, OSError, AttributeError):
        return None
    control.argtypes = [ctypes.c_void_p, ctypes.c_char_p, ctypes.c_int, ctypes.c_void_p]
    control.restype = ctypes.c_int
    filename.argtypes = [ctypes.c_void_p, ctypes.c_char_p]
    filename.restype = ctypes.c_char_p
    return lib


def _handle(conn: sqlite3.Connection) -> int | None:
    """The connection's ``sqlite3 *``: CPython's connection object keeps it first after its header."""
    handle = ctypes.c_void_p.from_address(id(conn) + object.__basicsize__).value
    return handle or None


def keep_wal_files(conn: sqlite3.Connection, path: str) -> bool:
    """Ask SQLite to keep the -wal and -shm files when ``conn`` closes; False where it cannot be asked
    (then SQLite's default holds). ``path``: the database file ``conn`` opened, to check the handle."""
    lib = _library()
    if lib is None or path == ":memory:":
        return False
    handle = _handle(conn)
    if handle is None:
        return False
    opened = lib.sqlite3_db_filename(handle, b"main")
    # the handle is trusted only once SQLite itself names the file this connection opened
    if not opened or os.path.realpath(os.fsdecode(opened)) != os.path.realpath(path):
        return False
    flag = ctypes.c_int(1)
    return lib.sqlite3_file_control(handle, b"main", SQLITE_FCNTL_PERSIST_WAL, ctypes.byref(flag)) == 0


def connect(path: str, *, uri: str | None = None, **kwargs: Any) -> sqlite3.Connection:
    """``sqlite3.connect`` to the database file ``path`` (or to ``uri``, a file: URI naming it) with
    its -wal and -shm files kept on close (see the module's note)."""
    conn = sqlite3.connect(uri or path, uri=uri is not None, **kwargs)
    if path != ":memory:" and keep_wal_files(conn, path):
        # the kept -wal file is emptied when the last connection's checkpoint has copied it into the
        # database file, so that file alone holds everything (a copy of audits.db is complete)
        conn.execute("PRAGMA journal_size_limit=0")
    return conn


def fold_into_file(path: str) -> None:
    """Checkpoint ``path``'s write-ahead log into the database file and empty it, so the file alone holds
    every row (a cluster shard's part, sent back as bytes)."""
    conn = sqlite3.connect(path)
    try:
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    finally:
        conn.close()
