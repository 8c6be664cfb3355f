"""Engine work runs below the GUI thread's CPU priority (issue 41, item 4: the window froze during a batch)."""
from __future__ import annotations

import os
import sys
import threading

import pytest

from ui.worker import WORKER_NICE, lower_this_thread

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="per-thread nice values are Linux's")


def _nice() -> int:
    return os.getpriority(os.PRIO_PROCESS, threading.get_native_id())


def test_the_worker_thread_and_what_it_starts_run_lower_and_the_gui_thread_does_not():
    gui_before = _nice()
    seen: dict[str, int] = {}

    def child() -> None:
        seen["child"] = _nice()

    def worker() -> None:
        seen["before"] = _nice()
        lower_this_thread()
        seen["after"] = _nice()
        t = threading.Thread(target=child)   # as the judge's executor threads are started
        t.start()
        t.join()

    t = threading.Thread(target=worker)
    t.start()
    t.join()
    assert seen["after"] == min(19, seen["before"] + WORKER_NICE)
    assert seen["child"] == seen["after"]
    assert _nice() == gui_before
