"""How much memory a process holds, for the benchmarks: its proportional set size where Linux gives it."""
from __future__ import annotations


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
