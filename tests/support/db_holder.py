"""The app's side of a database shared with the command line, as a process of its own.

``python -m tests.support.db_holder DB RUN_ID`` opens the database with one long-lived Store (the app's
DbSession keeps one the same way) and answers one line per command on standard input:

- ``sniff``: what a file dialog in the app does to the database file: Qt reads its first bytes to name
  its type (``QMimeDatabase``; the Open/Export dialogs' type column), opening and closing the file;
- ``label N``: stores a review by reviewer ``app-N`` on the run's first pair and reads it back
  through a second connection of this process (the app's reads run in pool threads);
- ``count``: the number of reviews this process sees;
- ``quit``.
Each answer is one line: ``ok ...`` or ``error ...``.
"""
from __future__ import annotations

import sys

from PySide6.QtCore import QMimeDatabase

from sourcecheckup.store import Store


def main(db: str, run_id: str) -> None:
    store = Store(db)
    pair = store.db.execute("SELECT statement_pk, url FROM verdicts LIMIT 1").fetchone()
    print("ok ready", flush=True)
    for line in sys.stdin:
        cmd, _, arg = line.strip().partition(" ")
        try:
            if cmd == "sniff":
                print("ok", QMimeDatabase().mimeTypeForFile(db).name(), flush=True)
            elif cmd == "label":
                store.add_review(run_id, pair[0], pair[1], f"app-{arg}", "supported")
                with Store(db) as reader:
                    seen = reader.db.execute("SELECT COUNT(*) FROM reviews WHERE reviewer = ?",
                                             [f"app-{arg}"]).fetchone()[0]
                print("ok" if seen == 1 else f"error the app's own reader sees {seen} labels app-{arg}",
                      flush=True)
            elif cmd == "count":
                print("ok", store.db.execute("SELECT COUNT(*) FROM reviews").fetchone()[0], flush=True)
            elif cmd == "quit":
                break
        except Exception as exc:   # reported to the test, which names it
            print(f"error {type(exc).__name__}: {exc}", flush=True)
    store.close()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
