"""What a test reads of processes it started, from Linux's /proc: whether one still runs,
and the children of one (the servers and engines a command started)."""

from __future__ import annotations

from pathlib import Path


def alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie has ended)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def children(pid: int) -> set[int]:
    """The processes `pid`'s threads started and that still run or wait to be reaped."""
    found: set[int] = set()
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found |= {int(child) for child in (task / "children").read_text().split()}
        except FileNotFoundError:  # a thread that ended meanwhile
            continue
    return found
