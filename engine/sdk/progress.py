"""The one-line progress display of `JobClient.wait_for_job_conditions`.

A person waiting in a terminal or a notebook wants to see that the job moves (its
state, its restarts, what each replica is doing) without a scroll of lines, so on a
terminal the line is rewritten in place; written elsewhere (a file, a CI log) a line
is added only when what it says changes. The line is drawn from the job's status
alone: state and restarts, and the replica states of the engine's record (in the words
the engine recorded for replicas that stopped short at the job's end).
"""

from __future__ import annotations

import shutil
from collections import defaultdict
from collections.abc import Mapping
from typing import Any, TextIO

from engine.controller.reconcile.native_status import engine_view
from engine.controller.reconcile.record import format_ranges
from engine.sdk.errors import describe
from engine.sdk.replicas import replica_states

_CLEAR_TO_END = "\x1b[K"


def progress_line(job: Mapping[str, Any]) -> str:
    """`PyTorchJob team/mnist  Running  restarts 1  Master 0 Running  Worker 0-1 Running`.

    Indexes in one state are written as ranges, so a job of 1,000 workers stays one line.
    """
    status = engine_view(job).get("status") or {}
    state = status.get("state") or status.get("phase") or "Pending"
    parts = [describe(job), str(state), f"restarts {int(status.get('restarts') or 0)}"]
    by_type: dict[str, dict[str, list[int]]] = defaultdict(lambda: defaultdict(list))
    for replica, replica_state in replica_states(job).items():
        by_type[replica.type][replica_state].append(replica.index)
    for replica_type, states in by_type.items():
        shown = ", ".join(f"{format_ranges(indexes)} {name}" for name, indexes in states.items())
        parts.append(f"{replica_type} {shown}")
    return "  ".join(parts)


class ProgressDisplay:
    """Shows `progress_line` of each version of a job on `out`; `close()` ends the line.

    `live`: rewrite one line in place (a terminal); else one line per change.
    """

    def __init__(self, out: TextIO, *, live: bool) -> None:
        self._out = out
        self._live = live
        self._last = ""

    def show(self, job: Mapping[str, Any]) -> None:
        """Show the job's progress, if it changed since the last call."""
        line = progress_line(job)
        if line == self._last:
            return
        self._last = line
        if self._live:
            width = shutil.get_terminal_size().columns - 1
            self._out.write(f"\r{line[:width]}{_CLEAR_TO_END}")
        else:
            self._out.write(line + "\n")
        self._out.flush()

    def close(self) -> None:
        """End the rewritten line, so what is printed next starts on a line of its own."""
        if self._live and self._last:
            self._out.write("\n")
            self._out.flush()


def progress_display(progress: bool | None, out: TextIO) -> ProgressDisplay | None:
    """The display `progress` asks for: True always, False never, None on a terminal only."""
    terminal = out.isatty()
    if progress is False or (progress is None and not terminal):
        return None
    return ProgressDisplay(out, live=terminal)
