"""MachineJobs and jobs of any kind for the engine's integration tests: a builder, reads, waits
and an ordered watch log.

`helpers` builds PyTorchJobs; MachineJobs add replica types of any name, `dependsOn`, a success
policy and failure rules. The reads and waits take the job's resource, so they serve every kind.
The watch log keeps every event of one resource in the server's order, so a test can ask what
one pod looked like when another was first seen.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from engine.kube.client import KubeClient
from engine.kube.errors import ApiError, NotFound
from engine.kube.resources import Resource
from tests.integration.engine.helpers import (
    WAIT_S,
    Obj,
    Replica,
    history,
    replica_key,
    replica_spec,
    status,
    summary,
    wait_for,
)
from tests.kinds import MACHINEJOBS


def after(replica_type: str, condition: str | None = None) -> Obj:
    """A `dependsOn` entry: wait for `replica_type` (condition Running unless given)."""
    dependency: Obj = {"replicaType": replica_type}
    if condition is not None:
        dependency["condition"] = condition
    return dependency


def machinejob(
    name: str,
    namespace: str,
    replicas: Mapping[str, Replica],
    *,
    depends_on: Mapping[str, Sequence[Obj]] | None = None,
    success_policy: Obj | None = None,
    run_policy: Obj | None = None,
    failure_rules: Sequence[Obj] | None = None,
) -> Obj:
    """A MachineJob with one replica type per entry of `replicas` (in that order), whose
    pods simulate `codes` after `run_s`; `depends_on` maps a type to its dependsOn list."""
    specs = {kind: replica_spec(replica, "main") for kind, replica in replicas.items()}
    for kind, dependencies in (depends_on or {}).items():
        specs[kind]["dependsOn"] = list(dependencies)
    spec: Obj = {"replicaSpecs": specs}
    if success_policy is not None:
        spec["successPolicy"] = success_policy
    if run_policy is not None:
        spec["runPolicy"] = run_policy
    if failure_rules is not None:
        spec["failureRules"] = list(failure_rules)
    return {
        "apiVersion": MACHINEJOBS.api_version,
        "kind": "MachineJob",
        "metadata": {"name": name, "namespace": namespace},
        "spec": spec,
    }


def get_obj(client: KubeClient, res: Resource, namespace: str, name: str) -> Obj | None:
    """The object as the server has it now, or None once it is gone."""
    try:
        return client.get(res, name, namespace)
    except NotFound:
        return None


def wait_for_phase_of(client: KubeClient, res: Resource, namespace: str, name: str, phase: str,
                      *, timeout: float = WAIT_S) -> Obj:
    """Wait until the job (of any kind) is in `phase`; the job then."""
    try:
        job = wait_for(lambda: get_obj(client, res, namespace, name),
                       lambda job: status(job).get("phase") == phase,
                       what=f"{namespace}/{name} phase {phase}", timeout=timeout)
    except AssertionError as exc:
        raise AssertionError(
            f"{exc}; the job is at {summary(get_obj(client, res, namespace, name))}") from None
    assert job is not None
    return job


def conditions_of(obj: Obj | None) -> dict[str, Obj]:
    """An object's status conditions by type (none for an absent object)."""
    return {c["type"]: c for c in ((obj or {}).get("status") or {}).get("conditions") or ()}


def wait_for_condition_of(client: KubeClient, res: Resource, namespace: str, name: str,
                          type_: str, *, status_: str = "True", timeout: float = 60.0) -> Obj:
    """Wait until the object's condition `type_` has `status_`; the object then. A timeout
    says the status and the engine's annotations (its record, for Native status layouts)."""
    def seen(obj: Obj | None) -> bool:
        return (conditions_of(obj).get(type_) or {}).get("status") == status_
    try:
        found = wait_for(lambda: get_obj(client, res, namespace, name), seen,
                         what=f"{namespace}/{name} {type_}={status_}", timeout=timeout)
    except AssertionError as exc:
        obj = get_obj(client, res, namespace, name) or {}
        raise AssertionError(f"{exc}; status {obj.get('status')}; engine "
                             f"{(obj.get('metadata') or {}).get('annotations')}") from None
    assert found is not None
    return found


def history_index(job: Obj, *, to: str, replica: str | None = None) -> int:
    """Where in the job's history the job (or `replica`, e.g. `Worker-0`) first entered `to`."""
    for index, entry in enumerate(history(job)):
        if entry["to"] == to and entry.get("replica") == replica and (
                entry["level"] == ("job" if replica is None else "replica")):
            return index
    raise AssertionError(f"{replica or 'the job'} never entered {to}: {summary(job)}")


@dataclass
class WatchLog:
    """Every event of one resource in one namespace, in the order the server sent them.

    A single watch stream is ordered by resourceVersion, so "the pod as it was when
    another was first seen" is the last event for it before that one.
    """

    client: KubeClient
    resource: Resource
    namespace: str
    events: list[tuple[str, Obj]] = field(default_factory=list)
    errors: list[str] = field(default_factory=list)
    _version: int = 0
    _stop: threading.Event = field(default_factory=threading.Event)
    _thread: threading.Thread | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def start(self) -> WatchLog:
        _, version = self.client.list(self.resource, self.namespace)
        self._thread = threading.Thread(
            target=self._run, args=(version,), daemon=True,
            name=f"{self.resource.plural}-log-{self.namespace}")
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(10)

    def snapshot(self) -> list[tuple[str, Obj]]:
        """The events so far (ADDED, MODIFIED, DELETED), oldest first."""
        with self._lock:
            return list(self.events)

    def through(self, version: str) -> list[tuple[str, Obj]]:
        """The events once the log holds everything up to `version` (a resourceVersion of
        any kind: the local server counts one sequence; its bookmarks tell how far we are)."""
        wanted = int(version)
        wait_for(lambda: self._version, lambda seen: seen >= wanted,
                 what=f"the {self.resource.plural} watch reached resourceVersion {wanted}")
        return self.snapshot()

    def _run(self, version: str) -> None:
        while not self._stop.is_set():
            try:
                for event in self.client.watch(self.resource, self.namespace,
                                               resource_version=version, timeout_seconds=1):
                    version = event["object"]["metadata"].get("resourceVersion") or version
                    with self._lock:
                        if event["type"] in ("ADDED", "MODIFIED", "DELETED"):
                            self.events.append((event["type"], event["object"]))
                        self._version = max(self._version, int(version))
            except ApiError as exc:
                self.errors.append(f"{self.resource.plural} watch failed: {exc}")
                return


@contextlib.contextmanager
def recording(client: KubeClient, resource: Resource, namespace: str) -> Iterator[WatchLog]:
    """A `WatchLog` for the length of the block."""
    log = WatchLog(client, resource, namespace).start()
    try:
        yield log
    finally:
        log.stop()
    assert not log.errors, f"the watch missed events: {log.errors}"


def first_seen(events: Sequence[tuple[str, Obj]], replica: str) -> int:
    """The position of the first event of `replica`'s pod (e.g. `Worker-0`)."""
    for position, (_, pod) in enumerate(events):
        if replica_key(pod) == replica:
            return position
    raise AssertionError(f"no pod of {replica} was seen")


def pod_before(events: Sequence[tuple[str, Obj]], position: int, replica: str) -> Obj | None:
    """`replica`'s pod as the server had it just before the event at `position` (None: none)."""
    latest: Obj | None = None
    for kind, pod in events[:position]:
        if replica_key(pod) == replica:
            latest = None if kind == "DELETED" else pod
    return latest


def main_state(pod: Obj) -> Obj:
    """The state of the pod's first (main) container: {running: ...}, {terminated: ...} or {}."""
    main = pod["spec"]["containers"][0]["name"]
    for container in (pod.get("status") or {}).get("containerStatuses") or ():
        if container["name"] == main:
            return dict(container.get("state") or {})
    return {}


def is_up(pod: Obj) -> bool:
    """Whether the main container runs or has exited 0 (what dependsOn Running waits for)."""
    state = main_state(pod)
    return "running" in state or (state.get("terminated") or {}).get("exitCode") == 0


def is_ready(pod: Obj) -> bool:
    """Whether the pod's Ready condition is True."""
    return any(c["type"] == "Ready" and c["status"] == "True"
               for c in (pod.get("status") or {}).get("conditions") or ())


def most_live_at_once(events: Sequence[tuple[str, Obj]]) -> int:
    """The most pods that had not ended and were not being deleted, at any point of the log."""
    live: set[str] = set()
    most = 0
    for kind, pod in events:
        uid = str(pod["metadata"]["uid"])
        ended = (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        if kind == "DELETED" or ended or pod["metadata"].get("deletionTimestamp"):
            live.discard(uid)
        else:
            live.add(uid)
        most = max(most, len(live))
    return most
