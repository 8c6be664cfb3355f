"""Reads in the app's pool pause the cyclic garbage collector (a full collection mid-read froze the window
for 50-80 ms) and always hand it back: enabled again once the last read ends, even when a read fails."""
from __future__ import annotations

import gc
import threading

from ui import db_session


def test_the_collector_waits_while_reads_run_and_is_back_when_the_last_ends():
    assert gc.isenabled()
    first_in, release = threading.Event(), threading.Event()
    seen: list[bool] = []

    def long_read() -> None:
        with db_session._collector_paused():
            first_in.set()
            release.wait(5)

    t = threading.Thread(target=long_read)
    t.start()
    assert first_in.wait(5)
    with db_session._collector_paused():          # a second read overlaps the first
        seen.append(gc.isenabled())
    seen.append(gc.isenabled())                   # the first is still running
    release.set()
    t.join(5)
    assert seen == [False, False]
    assert gc.isenabled()
    gc.unfreeze()


def test_a_failing_read_gives_the_collector_back():
    try:
        with db_session._collector_paused():
            raise RuntimeError("the read failed")
    except RuntimeError:
        pass
    assert gc.isenabled()
    gc.unfreeze()
