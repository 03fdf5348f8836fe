"""What a pod worker needs from a way of running containers (processes, or a simulation).

A runtime starts one attempt of a container and hands back an `Attempt` the
worker polls and signals; a container that cannot start at all is a
`ContainerStartError` (it then reads as terminated with that reason and message, as
a container runtime reports a failed start), one that cannot start *yet* (a ConfigMap
or Secret it needs is missing) a `ContainerWaitingError` (it stays waiting and is
tried again, as the kubelet retries).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol

# Exit code a container runtime reports for a container whose process never started.
START_ERROR_EXIT_CODE = 128
# Exit code of a container the local node refuses to start (its spec asks the impossible):
# a permanent failure, as restart policies on exit codes read 1-127.
CONFIG_ERROR_EXIT_CODE = 1


class ContainerStartError(Exception):
    """The container could not be started; it terminates at once with these details."""

    def __init__(self, reason: str, message: str, *, exit_code: int) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.exit_code = exit_code


class ContainerWaitingError(Exception):
    """The container cannot be created yet: it stays waiting with `reason` (None: the reason
    it has, ContainerCreating or PodInitializing, as for the kubelet's volume failures) and
    `message`, an `event_reason` Warning event says why, and it is tried again later."""

    def __init__(self, reason: str | None, message: str, *, event_reason: str,
                 event_message: str) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.event_reason = event_reason
        self.event_message = event_message


def _no_warning(reason: str, message: str) -> None:
    """A Launch made without a way to post Warning events."""


@dataclass(frozen=True)
class Launch:
    """One attempt to start: the pod as last seen, the container spec, and how to tell the
    worker that something happened (the attempt ended)."""

    pod: dict[str, Any]
    container: dict[str, Any]
    # The container's first attempt in this pod (its logs start clean).
    first: bool
    wake: Callable[[], None]
    # Posts a Warning event on the pod (reason, message).
    warn: Callable[[str, str], None] = _no_warning


class Attempt(Protocol):
    """One running attempt of a container."""

    @property
    def container_id(self) -> str: ...

    def exit_code(self) -> int | None:
        """The exit code once it ended, None while it runs."""

    def deadline(self) -> float | None:
        """The monotonic instant it ends by itself, when known in advance."""

    def written_message(self) -> bytes | None:
        """Once it ended: what it wrote at its terminationMessagePath (the file's last
        termination.MAX_MESSAGE_BYTES), None when it had no such file."""

    def terminate(self) -> None:
        """SIGTERM: ask it to end."""

    def kill(self) -> None:
        """SIGKILL: end it now."""


class Runtime(Protocol):
    mode: str

    def start(self, launch: Launch) -> Attempt:
        """Start an attempt, or raise ContainerStartError."""

    def resume(self, launch: Launch) -> Attempt | None:
        """Take over an attempt a previous node left running; None when it is lost."""
