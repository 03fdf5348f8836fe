"""One pod's life on the node, in its own thread: init containers in order, then the containers,
restarts in place per restartPolicy with the kubelet's CrashLoopBackOff (backoff.py), each
exit's termination message (termination.py), containers that cannot be created yet (a
missing ConfigMap or Secret) kept waiting and tried again, readiness probes when due
(probes/), the kubelet's container events,
status after every change, and graceful deletion (SIGTERM, the grace period, SIGKILL, final
status, then the zero-grace DELETE that tells the API server the pod is gone from the node).

The thread sleeps until something happens (a process exits, a simulated attempt
or a back-off is due, the pod changes), so idle pods cost nothing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

from loguru import logger

from engine.cluster.node.events import EventPoster, field_path
from engine.cluster.node.layout import NodeFiles
from engine.cluster.node.probes import readiness
from engine.cluster.node.probes.checks import Target, prober_for
from engine.cluster.node.runtime.interface import (
    START_ERROR_EXIT_CODE,
    Attempt,
    ContainerStartError,
    ContainerWaitingError,
    Launch,
    Runtime,
)
from engine.cluster.node.status import backoff, phases, termination
from engine.cluster.node.status.backoff import RestartBackoff
from engine.cluster.node.status.pod_status import pod_status
from engine.cluster.node.status.slots import Slot, pod_slots
from engine.cluster.node.times import now
from engine.kube.client import KubeClient
from engine.kube.errors import AlreadyExists, ApiError, Conflict, NotFound
from engine.kube.resources import PODS

# How long processes get between SIGTERM and SIGKILL when the node itself stops.
STOP_GRACE_S = 5.0
DEFAULT_GRACE_S = 30
# How long to wait for processes to be gone after SIGKILL.
_KILL_WAIT_S = 5.0
_RETRY_START_S = 1.0
_RETRY_CAP_S = 30.0
# Tries to create a container whose ConfigMap or Secret is missing: 1 s doubling up to 8 s
# (the kubelet retries its pod sync about every 10 s).
_CONFIG_RETRY_START_S = 1.0
_CONFIG_RETRY_CAP_S = 8.0
_UNKNOWN = ("ContainerStatusUnknown", "The container could not be located when the pod was "
            "terminated")


class _PodGoneError(Exception):
    """The pod is gone from the API server (or replaced): stop without writing."""


def _images_message(pod: dict[str, Any], mode: str) -> str:
    spec = pod.get("spec") or {}
    images = sorted({str(c.get("image")) for key in ("initContainers", "containers")
                     for c in spec.get(key) or () if c.get("image")})
    what = f"image {images[0]} is" if len(images) == 1 else (
        f"images {', '.join(images)} are" if images else "the image is")
    how = ("runs each container's command as a local process" if mode == "process" else
           "simulates containers from the pod's sim.jobmachine.dev annotations")
    return f"The {what} ignored: the jobmachine local node {how}."


def confirm_deletion(api: KubeClient, pod: dict[str, Any]) -> None:
    """Tell the API server the pod's containers are gone: a zero-grace DELETE of this uid."""
    metadata = pod["metadata"]
    try:
        api.delete(PODS, metadata["name"], metadata["namespace"], uid=metadata["uid"],
                   grace_period_seconds=0)
    except ApiError as exc:
        if not isinstance(exc, NotFound | Conflict | AlreadyExists):
            logger.bind(pod=f"{metadata['namespace']}/{metadata['name']}").warning(
                f"confirming the pod's deletion failed: {exc}"
            )


class PodWorker:
    """Runs one pod bound to this node until it is terminal, deleted, or the node stops."""

    def __init__(self, pod: dict[str, Any], *, runtime: Runtime, api: KubeClient,
                 events: EventPoster, files: NodeFiles, restart_backoff: RestartBackoff,
                 on_end: Callable[[PodWorker], None]) -> None:
        """`on_end` is called from the worker's thread as it ends, when `done` is set."""
        metadata = pod["metadata"]
        self._pod = pod
        self.uid = str(metadata["uid"])
        self.key = (str(metadata["namespace"]), str(metadata["name"]))
        self._on_end = on_end
        self._runtime = runtime
        self._api = api
        self._events = events
        self._files = files
        self._backoff = restart_backoff
        self._prober = prober_for(runtime.mode)
        self._log = logger.bind(pod=f"{metadata['namespace']}/{metadata['name']}")
        self._wake = threading.Event()
        self._halted = threading.Event()
        self._slots: list[Slot] = []
        self._written: dict[str, Any] | None = None
        self._retry_at: float | None = None
        self._retry_delay = _RETRY_START_S
        self._start_time = str((pod.get("status") or {}).get("startTime") or now())
        self.done = False
        self._thread = threading.Thread(
            target=self._run, name=f"pod {metadata['namespace']}/{metadata['name']}", daemon=True
        )

    # -- called from other threads -------------------------------------------------------

    def start(self) -> None:
        self._thread.start()

    def update(self, pod: dict[str, Any]) -> None:
        """A newer version of the pod (deletion may have started)."""
        self._pod = pod
        self._wake.set()

    def halt(self) -> None:
        """Stop without writing anything: the node stops, or the pod is gone."""
        self._halted.set()
        self._wake.set()

    def join(self, timeout: float) -> None:
        if self._thread.is_alive():
            self._thread.join(timeout)

    # -- the worker thread ---------------------------------------------------------------

    @property
    def _policy(self) -> str:
        return str((self._pod.get("spec") or {}).get("restartPolicy") or "Always")

    @property
    def _ended_elsewhere(self) -> bool:
        """Whether the server has the pod in a terminal phase this node did not write: as the
        kubelet's status manager, the node never moves a pod back out of a terminal phase."""
        phase = (self._pod.get("status") or {}).get("phase")
        return phase in phases.TERMINAL_PHASES and (self._written or {}).get("phase") != phase

    @property
    def _deleting(self) -> bool:
        return bool(self._pod["metadata"].get("deletionTimestamp"))

    def _run(self) -> None:
        try:
            self._slots = pod_slots(self._pod)
            self._events.post(self._pod, "ImageIgnored", _images_message(self._pod,
                              self._runtime.mode), once=True)
            self._resume()
            self._lifecycle()
        except _PodGoneError:
            self._log.debug("pod is gone from the API server")
        except Exception:
            self._log.exception("the pod worker failed; the pod is left as it is")
        finally:
            self._end_attempts(STOP_GRACE_S)
            self.done = True
            self._on_end(self)

    def _resume(self) -> None:
        """Containers a previous node left running: resumed, or lost (then restart rules apply)."""
        for slot in self._slots:
            if "running" not in slot.state:
                continue
            attempt = self._runtime.resume(self._launch_of(slot))
            if attempt is None:
                self._finish(slot, 137, reason="NodeRestarted",
                             message="the local node restarted; the container's process was lost")
            else:
                slot.attempt = attempt
                self._begin_probing(slot, time.monotonic())

    def _lifecycle(self) -> None:
        while not self._halted.is_set():
            self._collect()
            if self._deleting:
                self._shut_down()
                return
            if self._ended_elsewhere:
                self._log.info("another writer set the pod's phase to "
                               f"{self._pod['status']['phase']}: its containers are stopped "
                               "and its status left as it is")
                return
            self._start_due()
            self._probe_due()
            written = self._publish(terminal=False)
            if written and self._written and self._written["phase"] in phases.TERMINAL_PHASES:
                return
            self._wake.wait(self._sleep_time())
            self._wake.clear()

    def _sleep_time(self) -> float | None:
        moments = [s.attempt.deadline() for s in self._slots if s.attempt is not None]
        moments += [s.due for s in self._startable()]
        moments += [s.readiness.due for s in self._slots
                    if s.attempt is not None and s.readiness is not None]
        moments.append(self._retry_at)
        known = [m for m in moments if m is not None]
        return max(0.0, min(known) - time.monotonic()) if known else None

    def _collect(self) -> None:
        for slot in self._slots:
            attempt = slot.attempt
            code = attempt.exit_code() if attempt is not None else None
            if attempt is not None and code is not None:
                self._finish(slot, code, message=self._message(slot, attempt, code))

    def _message(self, slot: Slot, attempt: Attempt, code: int) -> str | None:
        """The exited attempt's termination message (its log is read only when needed)."""
        metadata = self._pod["metadata"]
        log = self._files.log(metadata["namespace"], metadata["name"], slot.name)
        return termination.container_message(
            slot.spec, exit_code=code, written=attempt.written_message(),
            log_end=lambda: termination.read_tail(log, termination.MAX_LOG_BYTES + 1))

    def _finish(self, slot: Slot, code: int, *, reason: str | None = None,
                message: str | None = None) -> None:
        """The container's attempt ended: terminated for good, started again at once, or
        waiting in CrashLoopBackOff, as the kubelet decides."""
        finished = time.monotonic()
        slot.state = phases.terminated(code, started_at=slot.started_at or None,
                                       finished_at=now(), reason=reason, message=message,
                                       container_id=slot.container_id or None)
        slot.attempt, slot.finished_mono, slot.readiness = None, finished, None
        policy = "OnFailure" if slot.init and self._policy == "Always" else self._policy
        if self._deleting or not phases.should_restart(policy, code):
            return
        metadata = self._pod["metadata"]
        self._files.keep_as_previous(metadata["namespace"], metadata["name"], slot.name)
        slot.last_state, slot.restart_pending = slot.state, True
        wait = backoff.wait_s(self._backoff, slot.backoff, finished_at=finished, now=finished)
        slot.due = finished + wait
        if wait > 0 and slot.backoff is not None:
            slot.state = phases.waiting(
                "CrashLoopBackOff", backoff.waiting_message(slot.backoff, slot.name, metadata))
            self._container_event(slot, "BackOff", backoff.event_message(slot.name, metadata),
                                  kind="Warning")

    def _container_event(self, slot: Slot, reason: str, message: str, *,
                         kind: str = "Normal") -> None:
        self._events.post(self._pod, reason, message, kind=kind,
                          path=field_path(slot.name, init=slot.init))

    def _startable(self) -> list[Slot]:
        """Containers that start when due: the first unfinished init container, else every
        waiting or exited container to be started again."""
        for slot in self._slots:
            if slot.init and not slot.succeeded:
                return [slot] if slot.startable else []
        return [s for s in self._slots if not s.init and s.startable]

    def _start_due(self) -> None:
        while True:
            due = [s for s in self._startable() if s.due <= time.monotonic()]
            if not due:
                return
            for slot in due:
                self._launch(slot)
            self._collect()

    def _launch_of(self, slot: Slot) -> Launch:
        return Launch(pod=self._pod, container=slot.spec, first=slot.attempts == 0,
                      wake=self._wake.set, warn=self._warn)

    def _warn(self, reason: str, message: str) -> None:
        self._events.post(self._pod, reason, message, kind="Warning")

    def _keep_waiting(self, slot: Slot, waiting: ContainerWaitingError) -> None:
        """The container cannot be created yet: it waits, says why, and is tried again."""
        reason = waiting.reason or ("PodInitializing" if slot.init else "ContainerCreating")
        slot.state = phases.waiting(reason, waiting.message)
        slot.due = time.monotonic() + min(_CONFIG_RETRY_CAP_S,
                                          _CONFIG_RETRY_START_S * 2 ** min(slot.config_tries, 8))
        slot.config_tries += 1
        event = (waiting.event_reason, waiting.event_message)
        if slot.config_event != event:
            self._warn(*event)
            slot.config_event = event

    def _begin_attempt(self, slot: Slot, started_at: str, started_mono: float) -> None:
        """The runtime tried to create the container: an attempt counts from here, and a
        restart moves its back-off window on."""
        if slot.attempts:
            slot.backoff = backoff.restarted(self._backoff, slot.backoff,
                                             finished_at=slot.finished_mono or started_mono,
                                             now=started_mono)
        slot.attempts += 1
        slot.started_at, slot.restart_pending = started_at, False
        slot.container_id = ""
        slot.config_tries, slot.config_event = 0, None

    def _launch(self, slot: Slot) -> None:
        launch = self._launch_of(slot)
        started_at, started_mono = now(), time.monotonic()
        try:
            attempt = self._runtime.start(launch)
        except ContainerWaitingError as waiting:
            self._keep_waiting(slot, waiting)
            return
        except ContainerStartError as failure:
            self._begin_attempt(slot, started_at, started_mono)
            self._events.post(self._pod, failure.reason, f"container {slot.name}: "
                              f"{failure.message}", kind="Warning")
            self._finish(slot, failure.exit_code, reason=failure.reason, message=failure.message)
            return
        except Exception as exc:
            self._begin_attempt(slot, started_at, started_mono)
            self._log.exception(f"starting container {slot.name} failed")
            self._finish(slot, START_ERROR_EXIT_CODE, reason="StartError", message=str(exc))
            return
        self._begin_attempt(slot, started_at, started_mono)
        slot.attempt = attempt
        slot.container_id = attempt.container_id
        slot.state = phases.running(slot.started_at)
        self._begin_probing(slot, started_mono)
        self._container_event(slot, "Created", f"Created container {slot.name}")
        self._container_event(slot, "Started", f"Started container {slot.name}")

    def _begin_probing(self, slot: Slot, started: float) -> None:
        """A running attempt starts not ready when it has a readiness probe."""
        slot.readiness = None if slot.probe is None else readiness.begin(slot.probe, started)

    def _probe_due(self) -> None:
        """Run the readiness probes that are due, as the kubelet's prober workers do; a failed
        one posts the kubelet's Unhealthy event."""
        for slot in self._slots:
            state = slot.readiness
            if slot.attempt is None or state is None or state.due > time.monotonic():
                continue
            target = Target(self._pod, slot.spec, slot.container_id, state.started,
                            time.monotonic())
            result = self._prober(state.spec, target)
            slot.readiness = readiness.observed(state, result.ok, time.monotonic())
            if not result.ok and not self._deleting:
                self._container_event(slot, "Unhealthy",
                                      f"Readiness probe failed: {result.output}".strip(),
                                      kind="Warning")

    def _publish(self, *, terminal: bool) -> bool:
        """Write the status if it changed; False when the write failed (retried later)."""
        status = pod_status(self._pod, self._slots, start_time=self._start_time,
                            terminal=terminal, written=self._written, now=now())
        if status == self._written:
            return True
        try:
            self._api.patch(PODS, self.key[1], {"metadata": {"uid": self.uid}, "status": status},
                            namespace=self.key[0], subresource="status")
        except ApiError as exc:
            if isinstance(exc, NotFound) or (isinstance(exc, Conflict | AlreadyExists)
                                             and self._replaced()):
                raise _PodGoneError() from exc
            self._log.warning(f"writing the pod status failed, retrying in "
                              f"{self._retry_delay:g}s: {exc}")
            self._retry_at = time.monotonic() + self._retry_delay
            self._retry_delay = min(_RETRY_CAP_S, self._retry_delay * 2)
            return False
        self._written, self._retry_at, self._retry_delay = status, None, _RETRY_START_S
        return True

    def _replaced(self) -> bool:
        """Whether the pod is gone or another pod of its name stands in its place (a 409 on
        a status write says so only through the uid precondition; other conflicts pass)."""
        try:
            current = self._api.get(PODS, self.key[1], self.key[0])
        except ApiError as exc:
            return isinstance(exc, NotFound)
        return str((current.get("metadata") or {}).get("uid")) != self.uid

    # -- deletion and stopping -----------------------------------------------------------

    def _grace(self) -> float:
        grace = self._pod["metadata"].get("deletionGracePeriodSeconds")
        return float(DEFAULT_GRACE_S if grace is None else grace)

    def _running(self) -> list[Slot]:
        return [s for s in self._slots if s.attempt is not None]

    def _wait_for_exits(self, deadline: float, *, shortened: bool) -> None:
        """Wait until no attempt runs or the deadline (which a newer, shorter grace period
        given to the pod can move closer)."""
        noticed = time.monotonic()
        while self._running() and not self._halted.is_set():
            if shortened:
                deadline = min(deadline, noticed + self._grace())
            left = deadline - time.monotonic()
            if left <= 0:
                return
            ends = [d for d in (s.attempt.deadline() for s in self._running() if s.attempt) if d]
            self._wake.wait(min([left, *(max(0.0, e - time.monotonic()) for e in ends)]))
            self._wake.clear()
            self._collect()

    def _shut_down(self) -> None:
        """Graceful deletion: stop every container, record how they ended, confirm."""
        self._log.debug(f"pod is being deleted: stopping its containers "
                        f"(grace period {self._grace():g}s)")
        for slot in self._running():
            if slot.attempt is not None:
                self._container_event(slot, "Killing", f"Stopping container {slot.name}")
                slot.attempt.terminate()
        self._collect()
        self._wait_for_exits(time.monotonic() + self._grace(), shortened=True)
        for slot in self._running():
            if slot.attempt is not None:
                slot.attempt.kill()
        self._wait_for_exits(time.monotonic() + _KILL_WAIT_S, shortened=False)
        if self._halted.is_set():
            return
        for slot in self._slots:
            if slot.waiting:
                last = slot.last_state.get("terminated")
                slot.state = {"terminated": last} if last else phases.terminated(
                    137, reason=_UNKNOWN[0], message=_UNKNOWN[1])
        # Without the final status the pod stays until the server's own grace timer ends it.
        if self._publish(terminal=True):
            confirm_deletion(self._api, self._pod)

    def _end_attempts(self, grace: float) -> None:
        """SIGTERM whatever still runs, SIGKILL what outlives `grace`; no status is written."""
        for slot in self._running():
            if slot.attempt is not None:
                slot.attempt.terminate()
        deadline = time.monotonic() + grace
        while True:
            for slot in self._running():
                if slot.attempt is not None and slot.attempt.exit_code() is not None:
                    slot.attempt = None
            left = deadline - time.monotonic()
            if not self._running() or left <= 0:
                break
            self._wake.wait(left)
            self._wake.clear()
        for slot in self._running():
            if slot.attempt is not None:
                slot.attempt.kill()
