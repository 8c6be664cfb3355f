"""Which process is running a run, so that a run whose process was killed (SIGKILL, a power cut) reads
"interrupted" with the command that resumes it, instead of "running" for ever.

When a run starts or resumes, the store writes an owner line to its run log: the process id, the host
and the process's start time (so that a recycled process id is not taken for the owner)."""
from __future__ import annotations

import os
import re
import socket

OWNER_PREFIX = "running in process "
_OWNER_RE = re.compile(r"running in process (\d+) on (\S+) \(process start (\d+)\)")


def _start_ticks(pid: int) -> int:
    """The process's start time in clock ticks since boot (Linux /proc), else 0."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii", errors="replace") as fh:
            stat = fh.read()
        return int(stat.rsplit(")", 1)[1].split()[19])
    except (OSError, ValueError, IndexError):
        return 0


def pid_alive(pid: int) -> bool | None:
    """Whether process ``pid`` runs on this machine; None where that cannot be asked without side effects
    (on Windows ``os.kill(pid, 0)`` would terminate the process)."""
    if os.name != "posix":
        return None
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True   # alive, another user's
    return True


def owner_note() -> str:
    pid = os.getpid()
    return f"{OWNER_PREFIX}{pid} on {socket.gethostname()} (process start {_start_ticks(pid)})"


def owner_alive(note: str | None) -> bool | None:
    """Whether the process an owner line names is still alive; None when this machine cannot tell
    (no owner line, or another host)."""
    m = _OWNER_RE.search(note or "")
    if m is None or m.group(2) != socket.gethostname():
        return None
    pid, ticks = int(m.group(1)), int(m.group(3))
    alive = pid_alive(pid)
    if not alive:
        return alive
    return not (ticks and _start_ticks(pid) and _start_ticks(pid) != ticks)
