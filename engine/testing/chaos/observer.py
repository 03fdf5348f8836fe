"""What happened in the cluster during a chaos run, as the API server saw it.

The observer watches pods, services, events and every job kind from one
resourceVersion on, as a user the fault plan spares, and keeps each object's
life: when it was created and deleted (by resourceVersion, which the embedded
server counts across all types, so versions of different types compare), and
for jobs the first version that was ending or ended and the restart counts
status showed. The checks in `invariants.py` read these facts; nothing here
judges.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from loguru import logger

from engine.kube.client import KubeClient, WatchStream
from engine.kube.errors import ApiError, Gone
from engine.kube.resources import EVENTS, PODS, SERVICES, Resource
from engine.testing.chaos.workload import JOB_UID_LABEL, REPLICA_INDEX_LABEL, REPLICA_TYPE_LABEL

Obj = dict[str, Any]
_log = logger.bind(component="chaos.observer")

_ENDED_PHASES = frozenset({"Succeeded", "Failed"})
_ENDING_CONDITIONS = frozenset({"FailureTarget", "SuccessCriteriaMet", "Succeeded", "Failed"})


def version_of(obj: Mapping[str, Any]) -> int:
    return int((obj.get("metadata") or {}).get("resourceVersion") or 0)


def _meta(obj: Mapping[str, Any]) -> Mapping[str, Any]:
    return obj.get("metadata") or {}


def controller_uid(obj: Mapping[str, Any]) -> str | None:
    """The uid of the object's controller owner, if it has one."""
    for ref in _meta(obj).get("ownerReferences") or ():
        if ref.get("controller"):
            return str(ref.get("uid"))
    return None


def is_ending(job: Mapping[str, Any]) -> bool:
    """Whether the job's status says it is ending or has ended: the engine wrote that, so
    no pod may follow. (A deletion is not: the engine learns of it only from its watch, and
    a reconcile already under way may still create what it planned; those pods must then
    be cleaned up, which `cleaned-up` checks.)"""
    status = job.get("status") or {}
    if status.get("phase") in _ENDED_PHASES:
        return True
    return any(c.get("type") in _ENDING_CONDITIONS and c.get("status") == "True"
               for c in status.get("conditions") or ())


@dataclass
class ChildLife:
    """A pod or service: whose it is and when it existed."""

    uid: str
    namespace: str
    name: str
    owner_uid: str | None
    job_uid: str | None
    replica: str | None
    created: int
    deleted: int | None = None
    end_unseen: bool = False
    """Its deletion fell in a watch gap: `deleted` is the version of the list after it."""
    phase: str | None = None
    disrupted: bool = False


@dataclass
class JobLife:
    """A job: its versions' facts, first ending version and the last object seen."""

    uid: str
    kind: str
    namespace: str
    name: str
    created: int
    ending: int | None = None
    deleting: int | None = None
    deleted: int | None = None
    restarts_seen: list[int] = field(default_factory=list)
    phases_seen: list[str] = field(default_factory=list)
    last: Obj = field(default_factory=dict, repr=False)


class ChaosObserver:
    """Watches the run's namespaces' pods, services, events and jobs until stopped."""

    def __init__(self, client: KubeClient, job_resources: Iterable[Resource]) -> None:
        self._client = client
        self._resources = (PODS, SERVICES, EVENTS, *job_resources)
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self.pods: dict[str, ChildLife] = {}
        self.services: dict[str, ChildLife] = {}
        self._children: dict[str, list[ChildLife]] = defaultdict(list)
        """Pods and services by the job they belong to (owner, else label)."""
        self.jobs: dict[str, JobLife] = {}
        self.events: dict[str, dict[str, tuple[str, int]]] = defaultdict(dict)
        """Per involved object uid: event name -> (reason, count)."""
        self.gaps: list[str] = []
        """Watches that had to list again (their facts may have holes)."""
        self._seen: dict[str, int] = {}
        """Per watched type, the last resourceVersion its watch reached."""
        self._streams: dict[str, WatchStream] = {}

    def start(self) -> None:
        """List every watched type, then watch each from its list's version."""
        for resource in self._resources:
            items, version = self._client.list(resource)
            for item in items:
                self._apply(resource, "ADDED", item)
            with self._lock:
                self._seen[resource.plural] = int(version)
            thread = threading.Thread(target=self._watch, args=(resource, version),
                                      name=f"chaos-observe-{resource.plural}", daemon=True)
            self._threads.append(thread)
            thread.start()

    def stop(self) -> None:
        self._stop.set()
        with self._lock:
            streams = list(self._streams.values())
        for stream in streams:
            stream.close()
        for thread in self._threads:
            thread.join(15)

    def wait_caught_up(self, version: int, timeout: float = 30.0) -> bool:
        """Wait until every watch has seen `version` or later (a bookmark counts)."""
        deadline = threading.Event()
        timer = threading.Timer(timeout, deadline.set)
        timer.start()
        try:
            while not deadline.is_set():
                with self._lock:
                    if all(seen >= version for seen in self._seen.values()):
                        return True
                deadline.wait(0.05)
            return False
        finally:
            timer.cancel()

    # -- watching ------------------------------------------------------------------------

    def _watch(self, resource: Resource, version: str) -> None:
        """Watch `resource` from `version` until stopped. Streams are long (an hour), so they
        are rarely resumed; a resume the history no longer covers (410) lists again."""
        while not self._stop.is_set():
            try:
                stream = self._client.watch(resource, resource_version=version,
                                            timeout_seconds=3600)
                with self._lock:
                    self._streams[resource.plural] = stream
                try:
                    for event in stream:
                        if self._stop.is_set():
                            break
                        obj = event.get("object") or {}
                        version = str(_meta(obj).get("resourceVersion") or version)
                        with self._lock:
                            self._seen[resource.plural] = int(version)
                        if event.get("type") != "BOOKMARK":
                            self._apply(resource, str(event.get("type")), obj)
                finally:
                    stream.close()
            except Gone:
                self.gaps.append(f"{resource.plural}: watch expired at {version}; listed again")
                version = self._relist(resource)
            except ApiError as exc:
                if not self._stop.is_set():
                    _log.warning(f"observing {resource.plural}: {exc}; resuming")
                    self._stop.wait(0.2)

    def _relist(self, resource: Resource) -> str:
        """List `resource` again (until a list completes: a compaction can expire its
        continue token), apply what it holds, and end what it no longer holds at its version
        (marked `end_unseen`); the list's version."""
        while True:
            try:
                items, version = self._client.list(resource)
                break
            except Gone:
                self._stop.wait(0.1)
        present = {str(_meta(item).get("uid")) for item in items}
        for item in items:
            self._apply(resource, "MODIFIED", item)
        with self._lock:
            self._seen[resource.plural] = int(version)
            if resource is PODS or resource is SERVICES:
                table = self.pods if resource is PODS else self.services
                for life in table.values():
                    if life.deleted is None and life.uid not in present:
                        life.deleted, life.end_unseen = int(version), True
            elif resource is not EVENTS:
                for job in self.jobs.values():
                    if job.kind == resource.kind and job.deleted is None \
                            and job.uid not in present:
                        job.deleted = int(version)
        return version

    def _apply(self, resource: Resource, kind: str, obj: Obj) -> None:
        with self._lock:
            if resource is PODS or resource is SERVICES:
                self._child(self.pods if resource is PODS else self.services, kind, obj)
            elif resource is EVENTS:
                involved = str((obj.get("involvedObject") or {}).get("uid") or "")
                name = str(_meta(obj).get("name"))
                if kind == "DELETED":
                    return
                self.events[involved][name] = (str(obj.get("reason") or ""),
                                               int(obj.get("count") or 1))
            else:
                self._job(resource, kind, obj)

    def _child(self, table: dict[str, ChildLife], kind: str, obj: Obj) -> None:
        meta = _meta(obj)
        uid = str(meta.get("uid"))
        life = table.get(uid)
        if life is None:
            labels = meta.get("labels") or {}
            replica = None
            if REPLICA_TYPE_LABEL in labels:
                replica = f"{labels[REPLICA_TYPE_LABEL]}-{labels.get(REPLICA_INDEX_LABEL)}"
            life = ChildLife(uid=uid, namespace=str(meta.get("namespace")),
                             name=str(meta.get("name")), owner_uid=controller_uid(obj),
                             job_uid=labels.get(JOB_UID_LABEL), replica=replica,
                             created=version_of(obj))
            table[uid] = life
            for job_uid in {life.owner_uid, life.job_uid} - {None}:
                self._children[str(job_uid)].append(life)
        status = obj.get("status") or {}
        life.phase = status.get("phase") or life.phase
        if any(c.get("type") == "DisruptionTarget" and c.get("status") == "True"
               for c in status.get("conditions") or ()):
            life.disrupted = True
        if kind == "DELETED":
            life.deleted = version_of(obj)

    def _job(self, resource: Resource, kind: str, obj: Obj) -> None:
        meta = _meta(obj)
        uid = str(meta.get("uid"))
        life = self.jobs.get(uid)
        if life is None:
            life = JobLife(uid=uid, kind=resource.kind, namespace=str(meta.get("namespace")),
                           name=str(meta.get("name")), created=version_of(obj))
            self.jobs[uid] = life
        life.last = obj
        status = obj.get("status") or {}
        if "phase" in status:  # a count of 0 is left out of the status
            life.restarts_seen.append(int(status.get("restarts") or 0))
        phase = status.get("phase")
        if phase and (not life.phases_seen or life.phases_seen[-1] != phase):
            life.phases_seen.append(str(phase))
        if life.ending is None and is_ending(obj):
            life.ending = version_of(obj)
        if life.deleting is None and meta.get("deletionTimestamp"):
            life.deleting = version_of(obj)
        if kind == "DELETED":
            life.deleted = version_of(obj)

    # -- reading -------------------------------------------------------------------------

    def job(self, uid: str) -> JobLife | None:
        with self._lock:
            return self.jobs.get(uid)

    def children_of(self, job_uid: str) -> list[ChildLife]:
        """The pods and services the job owns or labels as its own."""
        with self._lock:
            return list(self._children.get(job_uid, ()))

    def events_of(self, uid: str) -> dict[str, int]:
        """Events posted on the object, counted by reason (aggregated counts included)."""
        counts: dict[str, int] = defaultdict(int)
        with self._lock:
            for reason, count in self.events.get(uid, {}).values():
                counts[reason] += count
        return dict(counts)
