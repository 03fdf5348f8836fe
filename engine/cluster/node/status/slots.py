"""The node's record of each container of a pod: its state as the API shows it, its attempts,
its restart back-off and its readiness; rebuilt from the pod's status when a node takes a pod
over.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from engine.cluster.node.probes.readiness import ProbeSpec, Readiness, probe_spec
from engine.cluster.node.runtime.interface import Attempt
from engine.cluster.node.status import phases
from engine.cluster.node.status.backoff import Window


@dataclass
class Slot:
    """One container of the pod."""

    spec: dict[str, Any]
    init: bool
    state: dict[str, Any]
    last_state: dict[str, Any] = field(default_factory=dict)
    # Attempts started for this container in this pod (restartCount is one less).
    attempts: int = 0
    attempt: Attempt | None = None
    container_id: str = ""
    started_at: str = ""
    # Monotonic instant the last attempt ended.
    finished_mono: float = 0.0
    # It exited and starts again (at `due`) in place.
    restart_pending: bool = False
    # Monotonic instant from which a waiting container may start.
    due: float = 0.0
    # Its CrashLoopBackOff window, once it was restarted.
    backoff: Window | None = None
    # Failed tries to create the container since it last started (a missing ConfigMap...):
    # the level of the next retry delay, and the last Warning event posted about it.
    config_tries: int = 0
    config_event: tuple[str, str] | None = None
    # Its readiness probe (app containers only), and the running attempt's probe results.
    probe: ProbeSpec | None = None
    readiness: Readiness | None = None

    def __post_init__(self) -> None:
        if not self.init:
            self.probe = probe_spec(self.spec)

    @property
    def name(self) -> str:
        return str(self.spec.get("name"))

    @property
    def waiting(self) -> bool:
        return "waiting" in self.state

    @property
    def startable(self) -> bool:
        """Not running, and waiting to be created or to restart."""
        return self.attempt is None and (self.waiting or self.restart_pending)

    @property
    def succeeded(self) -> bool:
        return (self.state.get("terminated") or {}).get("exitCode") == 0

    @property
    def ready(self) -> bool:
        """Running, and past its readiness probe when it has one."""
        if "running" not in self.state:
            return False
        return self.probe is None or (self.readiness is not None and self.readiness.ready)

    def status(self) -> dict[str, Any]:
        """The containerStatuses entry."""
        is_running = "running" in self.state
        body: dict[str, Any] = {
            "name": self.name,
            "state": self.state,
            "lastState": self.last_state,
            "ready": self.ready,
            "started": is_running,
            "restartCount": max(0, self.attempts - 1),
            "image": str(self.spec.get("image") or ""),
            "imageID": "",
        }
        # Kept while it waits to restart, as the kubelet keeps the exited container's ID.
        if self.container_id:
            body["containerID"] = self.container_id
        return body


def _resumed(spec: dict[str, Any], init: bool, seen: dict[str, Any] | None, fresh: str) -> Slot:
    if not seen:
        return Slot(spec, init, phases.waiting(fresh))
    state = dict(seen.get("state") or {}) or phases.waiting(fresh)
    last_state = dict(seen.get("lastState") or {})
    started_before = not ("waiting" in state and not last_state)
    attempts = int(seen.get("restartCount") or 0) + 1 if started_before else 0
    started_at = str((state.get("running") or state.get("terminated") or {}).get("startedAt") or "")
    return Slot(spec, init, state, last_state, attempts=attempts,
                container_id=str(seen.get("containerID") or ""), started_at=started_at)


def pod_slots(pod: dict[str, Any]) -> list[Slot]:
    """Init containers (in order) then containers, taken over from the pod's status as a
    previous node left it (a new pod has none: everything waits)."""
    spec, status = pod.get("spec") or {}, pod.get("status") or {}
    inits = spec.get("initContainers") or []
    fresh = "PodInitializing" if inits else "ContainerCreating"
    seen_init = {s.get("name"): s for s in status.get("initContainerStatuses") or ()}
    seen = {s.get("name"): s for s in status.get("containerStatuses") or ()}
    return [
        *(_resumed(c, True, seen_init.get(c.get("name")), "PodInitializing") for c in inits),
        *(_resumed(c, False, seen.get(c.get("name")), fresh) for c in spec.get("containers") or ()),
    ]
