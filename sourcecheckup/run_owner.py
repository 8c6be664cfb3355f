"""Which process is running a run, so that a run whose process was killed (SIGKILL, a power cut) reads
"interrupted" with the command that resumes it, instead of "running" for ever.

When a run starts or resumes, the store writes an owner line to its run log: the process id, the host
and the process's start time (so that a recycled process id is not taken for the owner)."""
from __future__ import annotations

import os
import re
import socket

OWNER_PREFIX = "running in process "
# the process's creation time (psutil, seconds since the epoch) tells a recycled process id from the owner;
# "process start N" (Linux clock ticks) is the form written before, read as a plain process id
_OWNER_RE = re.compile(r"running in process (\d+) on (\S+) \((?:started ([\d.]+)|process start \d+)\)")


def _started(pid: int) -> float | None:
    """When process ``pid`` was created (seconds since the epoch), or None when it does not exist."""
    import psutil

    try:
        return round(psutil.Process(pid).create_time(), 2)
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return None
    except psutil.Error:   # exists, but this user may not look at it
        return -1.0


def pid_alive(pid: int) -> bool | None:
    """Whether process ``pid`` runs on this machine (psutil asks the system without touching the process;
    ``os.kill(pid, 0)`` would terminate it on Windows)."""
    import psutil

    try:
        return psutil.pid_exists(pid)
    except (OSError, psutil.Error):
        return None


def owner_note() -> str:
    pid = os.getpid()
    return f"{OWNER_PREFIX}{pid} on {socket.gethostname()} (started {_started(pid)})"


def owner_alive(note: str | None) -> bool | None:
    """Whether the process an owner line names is still alive; None when this machine cannot tell
    (no owner line, or another host)."""
    m = _OWNER_RE.search(note or "")
    if m is None or m.group(2) != socket.gethostname():
        return None
    pid = int(m.group(1))
    if not m.group(3):
        return pid_alive(pid)
    started = _started(pid)
    if started is None:
        return False
    return started == -1.0 or abs(started - float(m.group(3))) < 0.05
