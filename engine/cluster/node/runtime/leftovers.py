"""Records of the process groups the node started, so a node restarted after a crash can end
the ones its predecessor left running (a container dies with its node; a stray process
would also hold the ports its replacement needs).

A record is the group leader's pid and its start time from /proc, so a pid
reused by an unrelated process is never signalled.
"""

from __future__ import annotations

import os
import signal
from pathlib import Path

from loguru import logger


def _start_time(pid: int) -> str | None:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    # Field 22 (starttime), counted after the parenthesised command name.
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else None


def record(directory: Path, name: str, pid: int) -> Path:
    """Remember that process group `pid` runs for `name`; returns the record to remove."""
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / name
    path.write_text(f"{pid} {_start_time(pid) or ''}\n")
    return path


def kill_leftovers(directory: Path) -> int:
    """SIGKILL every recorded process group still alive; returns how many there were."""
    killed = 0
    for path in sorted(directory.glob("*")) if directory.is_dir() else ():
        parts = path.read_text().split()
        path.unlink(missing_ok=True)
        if len(parts) != 2 or not parts[0].isdigit():
            continue
        pid = int(parts[0])
        if _start_time(pid) != parts[1]:
            continue
        try:
            os.killpg(pid, signal.SIGKILL)
        except OSError:
            continue
        killed += 1
        logger.bind(component="node.leftovers", pid=pid).warning(
            f"killed process group {pid} ({path.name}) left running by a previous node"
        )
    return killed
