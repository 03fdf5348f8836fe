"""Simulated containers: no process, an exit code and a run time taken from the pod's annotations.

Each attempt is numbered by the persisted attempt counter (so recreated pods
continue the sequence), writes one line to the container's log, and ends by
itself after the run time; SIGTERM and SIGKILL end it at once with 143 and 137.
What it writes at its terminationMessagePath comes from an annotation too.
A node restarted while an attempt ran restarts that attempt's timer. Nothing runs, so
volumes are not set up; but a container whose ConfigMap or Secret is missing waits for
it, as in process mode (container_config.py).
"""

from __future__ import annotations

import contextlib
import math
import os
import time
import uuid
from pathlib import Path

from engine.cluster.apiserver.exec.container_ids import simulated_container_id
from engine.cluster.node.config.container_config import SourceReader, check_sources, read_sources
from engine.cluster.node.layout import NodeFiles
from engine.cluster.node.runtime import sim_annotations
from engine.cluster.node.runtime.attempts import AttemptCounter, counter_key
from engine.cluster.node.runtime.interface import (
    CONFIG_ERROR_EXIT_CODE,
    ContainerStartError,
    Launch,
)
from engine.cluster.node.status.termination import MAX_MESSAGE_BYTES

SIGTERM_EXIT_CODE = 143
SIGKILL_EXIT_CODE = 137


class SimulatedAttempt:
    """An attempt that ends with `code` after `seconds`, unless signalled first."""

    def __init__(self, code: int, seconds: float, *, log: Path, number: int,
                 message: str | None) -> None:
        self.container_id = simulated_container_id(uuid.uuid4().hex)
        self._code = code
        self._deadline = time.monotonic() + seconds
        self._signalled: int | None = None
        self._log = log
        # The file this attempt wrote to; a pod recreated under the same name has another.
        self._log_inode = log.stat().st_ino
        self._number = number
        self._message = message

    def exit_code(self) -> int | None:
        if self._signalled is not None:
            return self._signalled
        return self._code if time.monotonic() >= self._deadline else None

    def deadline(self) -> float | None:
        if self._signalled is not None or math.isinf(self._deadline):
            return None
        return self._deadline

    def written_message(self) -> bytes | None:
        if self._message is None:
            return None
        return self._message.encode("utf-8")[-MAX_MESSAGE_BYTES:]

    def _signal(self, code: int, name: str) -> None:
        if self.exit_code() is not None:
            return
        self._signalled = code
        with contextlib.suppress(OSError), open(self._log, "a") as log:
            if os.fstat(log.fileno()).st_ino == self._log_inode:
                log.write(f"simulated attempt {self._number}: stopped by {name}, "
                          f"exit code {code}\n")

    def terminate(self) -> None:
        self._signal(SIGTERM_EXIT_CODE, "SIGTERM")

    def kill(self) -> None:
        self._signal(SIGKILL_EXIT_CODE, "SIGKILL")


class SimulatedRuntime:
    """Runs every container as a simulation."""

    mode = "simulate"

    def __init__(self, files: NodeFiles, counter: AttemptCounter, *,
                 sources: SourceReader) -> None:
        self._files = files
        self._counter = counter
        self._sources = sources

    def start(self, launch: Launch) -> SimulatedAttempt:
        pod, container = launch.pod, launch.container
        check_sources(pod, container, read_sources(self._sources, pod, container))
        return self._attempt(launch, resumed=False)

    def resume(self, launch: Launch) -> SimulatedAttempt:
        return self._attempt(launch, resumed=True)

    def _attempt(self, launch: Launch, *, resumed: bool) -> SimulatedAttempt:
        pod, name = launch.pod, str(launch.container.get("name"))
        metadata = pod["metadata"]
        if resumed:
            log = self._files.log(metadata["namespace"], metadata["name"], name)
            log.parent.mkdir(parents=True, exist_ok=True)
        else:
            log = self._files.begin_log(metadata["namespace"], metadata["name"], name,
                                        first=launch.first)
        key = counter_key(pod, name)
        try:
            seconds = sim_annotations.run_seconds(pod)
            sim_annotations.exit_code(pod, name, 1)
        except sim_annotations.SimulationError as exc:
            with open(log, "a") as stream:
                stream.write(f"cannot simulate: {exc}\n")
            raise ContainerStartError("InvalidSimulation", str(exc),
                               exit_code=CONFIG_ERROR_EXIT_CODE) from exc
        number = self._counter.current(key) if resumed else 0
        number = number or self._counter.next(key)
        code = sim_annotations.exit_code(pod, name, number)
        restarted = " (timer restarted by a node restart)" if resumed else ""
        ends = ("runs until stopped" if math.isinf(seconds)
                else f"exit code {code} after {seconds:g}s")
        with open(log, "a") as stream:
            stream.write(f"simulated attempt {number}: {ends}{restarted}\n")
        return SimulatedAttempt(code, seconds, log=log, number=number,
                                message=sim_annotations.termination_message(pod, name))
