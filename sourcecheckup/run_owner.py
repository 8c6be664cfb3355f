"""Which process is running a run, so that a run whose process was killed (SIGKILL, a power cut) reads
"interrupted" with the command that resumes it, instead of "running" for ever.

When a run starts or resumes, the store records its owner in the run's columns (owner_pid, owner_host,
owner_started) and, for people reading the log, an owner line: the process id, the host and the process's
start time (so that a recycled process id is not taken for the owner). psutil answers on Linux, Windows
and macOS alike."""
from __future__ import annotations

import os
import re
import socket
from typing import NamedTuple

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


class Owner(NamedTuple):
    pid: int
    host: str
    started: float | None   # None: an owner line of an older release, which named no creation time


def this_process() -> Owner:
    pid = os.getpid()
    return Owner(pid, socket.gethostname(), _started(pid))


def owner_note(owner: Owner | None = None) -> str:
    """The run log's owner line (for people; the store reads the run's owner columns)."""
    owner = owner or this_process()
    return f"{OWNER_PREFIX}{owner.pid} on {owner.host} (started {owner.started})"


def parse_owner_line(note: str | None) -> Owner | None:
    m = _OWNER_RE.search(note or "")
    if m is None:
        return None
    return Owner(int(m.group(1)), m.group(2), float(m.group(3)) if m.group(3) else None)


def owner_alive(owner: Owner | None) -> bool | None:
    """Whether the owner process still runs; None when this machine cannot tell (no owner, another host)."""
    if owner is None or owner.host != socket.gethostname():
        return None
    if owner.started is None:
        return pid_alive(owner.pid)
    started = _started(owner.pid)
    if started is None:
        return False
    return started == -1.0 or abs(started - owner.started) < 0.05
