"""What `jobmachine up` prints while it runs: one line per job state change and per replica
failure or restart, from the Events the engine records.

A user who applied a job in another window sees it progress or fail where `up`
runs, without `kubectl describe`. Lines are written by a thread of their own, so
a slow terminal never holds a reconcile up; colour only on a terminal (and not
under NO_COLOR), plain text when piped.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from datetime import datetime
from typing import TextIO

import typer

from engine.controller.reporting.events import RecordedEvent

_WHO_WIDTH = 10
_REASON_WIDTH = 24
_JOBS_REMEMBERED = 10_000
"""Jobs whose last line is remembered, oldest forgotten first."""



_MACHINE_KIND = "StateMachine"


def wanted(event: RecordedEvent) -> bool:
    """A job's own events (its state changes) and a replica's warnings (failures, restarts);
    a replica that starts or succeeds is routine and not shown, and of a machine only a
    warning (it was refused) is news."""
    if event.kind == _MACHINE_KIND:
        return event.type == "Warning"
    return event.replica is None or event.type == "Warning"


def live_line(event: RecordedEvent, at: datetime, *, colour: bool) -> str:
    """`11:02:03  team/train  Worker-1    PodRestarted              <message>`."""
    machine = event.kind == _MACHINE_KIND
    who = event.replica or ("machine" if machine else "job")
    reason = f"{event.reason:<{_REASON_WIDTH}}"
    if colour:
        reason = _coloured(event, reason)
    subject = f"statemachine/{event.name}" if machine else f"{event.namespace}/{event.name}"
    return f"{at:%H:%M:%S}  {subject}  {who:<{_WHO_WIDTH}}  {reason}  {event.message}"


def _coloured(event: RecordedEvent, text: str) -> str:
    """Red: the job fails; yellow: a replica fails or restarts; green: the job moves on."""
    if event.type == "Warning":
        return typer.style(text, fg="red" if event.replica is None else "yellow")
    if event.replica is None:
        return typer.style(text, fg="green")
    return typer.style(text, dim=True)


def use_colour(out: TextIO) -> bool:
    """Colour when writing to a terminal, unless NO_COLOR is set (no-color.org)."""
    return out.isatty() and not os.environ.get("NO_COLOR")


class LiveReport:
    """Prints the wanted events as they are recorded; a listener of the EventRecorder."""

    def __init__(
        self, out: TextIO, *, colour: bool, clock: Callable[[], datetime] = datetime.now
    ) -> None:
        self._out = out
        self._colour = colour
        self._clock = clock
        self._lines: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._write, name="live-report", daemon=True)
        self._last_said: dict[tuple[str, str, str], tuple[str, str]] = {}
        """What each job's last line said; reconciles of several workers tell at once."""
        self._said_lock = threading.Lock()

    def __call__(self, event: RecordedEvent) -> None:
        if not wanted(event):
            return
        if event.replica is None and not self._new_for_its_job(event):
            return  # an ending's second phase (its clean-up done) repeats its first
        self._lines.put(live_line(event, self._clock(), colour=self._colour))

    def _new_for_its_job(self, event: RecordedEvent) -> bool:
        job, said = (event.namespace, event.name, event.kind), (event.reason, event.message)
        with self._said_lock:
            if self._last_said.get(job) == said:
                return False
            self._last_said[job] = said
            if len(self._last_said) > _JOBS_REMEMBERED:
                del self._last_said[next(iter(self._last_said))]
        return True

    def start(self) -> None:
        self._thread.start()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Write what is left, then stop."""
        self._lines.put(None)
        self._thread.join(timeout_s)

    def _write(self) -> None:
        while (line := self._lines.get()) is not None:
            self._out.write(line + "\n")
            self._out.flush()
