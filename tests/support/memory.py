"""What a process and its children hold and use, for the benchmarks and tests: proportional set size, CPU
seconds and child processes, where Linux's /proc gives them."""
from __future__ import annotations

import os
from pathlib import Path


def descendants(pid: int) -> list[int]:
    """The ids of a process's children, their children and so on (empty where there is no /proc)."""
    out: list[int] = []
    todo = [pid]
    while todo:
        p = todo.pop()
        try:
            kids = [int(c) for c in Path(f"/proc/{p}/task/{p}/children").read_text().split()]
        except (OSError, ValueError):
            continue
        out += kids
        todo += kids
    return out


def cpu_seconds(pid: int) -> float:
    """User plus system CPU seconds a process has used (0.0 once it has gone)."""
    try:
        fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
    except (OSError, IndexError, ValueError):
        return 0.0


def pss_kb(pid: int) -> int | None:
    """Proportional set size of a process in kB (smaps_rollup: memory shared between processes, such as
    Chromium's, is counted once, split between them), else its resident set; None once it has gone."""
    for path, key in ((f"/proc/{pid}/smaps_rollup", "Pss:"), (f"/proc/{pid}/status", "VmRSS:")):
        try:
            with open(path, encoding="ascii") as fh:
                for line in fh:
                    if line.startswith(key):
                        return int(line.split()[1])
        except (OSError, ValueError):
            continue
    return None
