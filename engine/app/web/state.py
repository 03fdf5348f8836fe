"""The web view's live model: jobs of every governed kind, their pods and their events.

Informers (follow.py) keep one cache per job kind, one of pods and one of events; this
module owns those caches, turns what they hold into the small views pages draw, and
tells listeners which job changed, so an open page is redrawn from the watch alone.
"""

from __future__ import annotations

import threading
from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, Literal

from engine.controller.machines.registry import recorded_revision
from engine.controller.reconcile.children import (
    JOB_NAME_LABEL,
    REPLICA_INDEX_LABEL,
    REPLICA_TYPE_LABEL,
)
from engine.controller.reconcile.native_status import engine_view
from engine.controller.reconcile.record import RecordError, read_record, state_of
from engine.controller.runtime.projections import project_pod
from engine.kube.cache import Cache
from engine.kube.resources import Resource
from engine.kube.timestamps import parse_time

Obj = dict[str, Any]
JobKey = tuple[str, str]
"""(namespace, name): what a listener is told changed."""
Change = Literal["job", "pod", "event", "picture"]
Listener = Callable[[JobKey, Change], None]
Handler = Callable[[str, Obj | None, Obj | None], None]

EVENTS_KEPT = 50
"""A job page lists this many of the job's newest events."""


@dataclass(frozen=True)
class Feed:
    """What one informer needs: the cache it keeps and whom it tells of each change."""

    cache: Cache
    handler: Handler


@dataclass(frozen=True)
class Condition:
    """One of a job's status conditions."""

    type: str
    status: str
    reason: str
    message: str
    last_transition: str


@dataclass(frozen=True)
class Replica:
    """One replica index of a job as the engine records it: its state and restarts."""

    type: str
    index: int
    state: str
    restarts: int

    @property
    def name(self) -> str:
        """`Worker-0`, as the engine's events and history name it."""
        return f"{self.type}-{self.index}"


@dataclass(frozen=True)
class Job:
    """A job as its pages show it, read from the object the watch last delivered."""

    resource: Resource
    namespace: str
    name: str
    uid: str
    created: datetime | None
    state: str
    restarts: int
    replicas: tuple[Replica, ...]
    conditions: tuple[Condition, ...]
    counts: tuple[tuple[str, str, str, str, int], ...]
    """(level, from, to, reason, count) of every transition taken: the path to draw."""
    revision: str
    """The machine revision the job runs with (empty until the engine has started it)."""
    last_failure: str
    record_error: str
    """Why the engine's record in the status cannot be read (empty when it can)."""

    @property
    def kind(self) -> str:
        return self.resource.kind

    @property
    def key(self) -> JobKey:
        return self.namespace, self.name

    @property
    def resource_name(self) -> str:
        return resource_name(self.resource)


def resource_name(resource: Resource) -> str:
    """`pytorchjobs.kubeflow.org`: a kind's resource as kubectl spells it, unique."""
    return f"{resource.plural}.{resource.group}".rstrip(".")


@dataclass(frozen=True)
class Pod:
    """One of a job's pods: which replica it runs, and how its main container is."""

    name: str
    replica_type: str
    replica_index: str
    phase: str
    container: str
    """The first container's name (its log is the one shown)."""
    container_state: str
    """`running`, `waiting (ContainerCreating)`, `terminated (exit code 137)`."""
    resource_version: str
    uid: str = ""
    """Another uid under the same name is another attempt (the pod was made again)."""
    container_restarts: int = 0
    """How often the kubelet restarted the container in place (`kubectl logs --previous`
    shows the attempt before)."""


@dataclass(frozen=True)
class Event:
    """One Kubernetes Event about a job."""

    type: str
    reason: str
    message: str
    count: int
    last_seen: str


def project_job_view(obj: Obj) -> Obj:
    """Of a job, what its pages read: identity and status (specs can be large)."""
    metadata = obj.get("metadata") or {}
    return {
        "metadata": {key: metadata[key] for key in (
            "name", "namespace", "uid", "resourceVersion", "creationTimestamp",
        ) if key in metadata},
        # A built-in kind's job keeps the engine's status in an annotation.
        "status": engine_view(obj).get("status") or {},
    }


def project_event(obj: Obj) -> Obj:
    """Of an Event, what a job page lists and whom it is about."""
    keep = ("involvedObject", "type", "reason", "message", "count", "lastTimestamp",
            "eventTime", "firstTimestamp", "series")
    metadata = obj.get("metadata") or {}
    view: Obj = {key: obj[key] for key in keep if key in obj}
    view["metadata"] = {key: metadata[key] for key in (
        "name", "namespace", "resourceVersion", "creationTimestamp") if key in metadata}
    return view


def job_from(obj: Obj, resource: Resource) -> Job:
    """The view of a (projected) job object of `resource`."""
    metadata = obj.get("metadata") or {}
    status = obj.get("status") or {}
    record_error = ""
    try:
        record = read_record(status)
        replicas = tuple(
            Replica(replica.type, replica.index, state,
                    getattr(record.replica_restarts.get(replica), "count", 0))
            for replica, state in sorted(record.replica_states.items())
        )
        counts = tuple(sorted(
            (level, source, target, reason, count)
            for (level, source, target, reason), count in record.transition_counts.items()
        ))
        restarts, last_failure = record.restarts, record.last_failure
    except RecordError as exc:
        record_error, replicas, counts = str(exc), (), ()
        restarts, last_failure = int(status.get("restarts") or 0), ""
    recorded = recorded_revision(obj)
    return Job(
        resource=resource,
        namespace=str(metadata.get("namespace") or ""),
        name=str(metadata.get("name") or ""),
        uid=str(metadata.get("uid") or ""),
        created=_time(metadata.get("creationTimestamp")),
        state=state_of(status) or "",
        restarts=restarts,
        replicas=replicas,
        conditions=tuple(_condition(c) for c in status.get("conditions") or ()
                         if isinstance(c, Mapping)),
        counts=counts,
        revision=recorded[1] if recorded else "",
        last_failure=last_failure,
        record_error=record_error,
    )


def pod_from(obj: Obj) -> Pod:
    """The view of a (projected) pod."""
    metadata = obj.get("metadata") or {}
    labels = metadata.get("labels") or {}
    status = obj.get("status") or {}
    containers = (obj.get("spec") or {}).get("containers") or ()
    first = str(containers[0].get("name") or "") if containers else ""
    statuses = {s.get("name"): s for s in status.get("containerStatuses") or ()}
    main = statuses.get(first) or {}
    return Pod(
        name=str(metadata.get("name") or ""),
        replica_type=str(labels.get(REPLICA_TYPE_LABEL) or ""),
        replica_index=str(labels.get(REPLICA_INDEX_LABEL) or ""),
        phase=str(status.get("phase") or "Pending"),
        container=first,
        container_state=_container_state(main.get("state") or {}),
        resource_version=str(metadata.get("resourceVersion") or ""),
        uid=str(metadata.get("uid") or ""),
        container_restarts=int(main.get("restartCount") or 0),
    )


def event_from(obj: Obj) -> Event:
    """The view of a (projected) Event; its time is the last it was seen."""
    series = obj.get("series") or {}
    last = (series.get("lastObservedTime") or obj.get("lastTimestamp") or obj.get("eventTime")
            or obj.get("firstTimestamp") or (obj.get("metadata") or {}).get("creationTimestamp"))
    return Event(
        type=str(obj.get("type") or "Normal"),
        reason=str(obj.get("reason") or ""),
        message=str(obj.get("message") or ""),
        count=int(series.get("count") or obj.get("count") or 1),
        last_seen=str(last or ""),
    )


def _condition(raw: Mapping[str, Any]) -> Condition:
    return Condition(*(str(raw.get(key) or "") for key in (
        "type", "status", "reason", "message", "lastTransitionTime")))


def _container_state(state: Mapping[str, Any]) -> str:
    if "running" in state:
        return "running"
    if "terminated" in state:
        ended = state["terminated"] or {}
        return f"terminated (exit code {ended.get('exitCode')})"
    if "waiting" in state:
        return f"waiting ({(state['waiting'] or {}).get('reason') or 'Waiting'})"
    return "not started"


def _time(value: Any) -> datetime | None:
    try:
        return parse_time(str(value)) if value else None
    except ValueError:
        return None


class LiveJobs:
    """Caches of jobs (one per governed kind), pods and events, and who listens to them.

    Informer threads write, page handlers read; every read returns immutable views.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._kinds: dict[Resource, Cache] = {}
        self._pods = Cache(project_pod, indexed_label=JOB_NAME_LABEL)
        self._events = Cache(project_event)
        self._events_by_uid: defaultdict[str, set[tuple[str, str]]] = defaultdict(set)
        self._listeners: list[Listener] = []

    def job_feed(self, resource: Resource) -> Feed:
        """A fresh cache for the jobs of `resource` (a kind that became governed)."""
        cache = Cache(project_job_view)
        with self._lock:
            self._kinds[resource] = cache

        def changed(_type: str, old: Obj | None, new: Obj | None) -> None:
            self._tell(_key_of(new or old), "job")

        return Feed(cache, changed)

    def drop_kind(self, resource: Resource) -> None:
        """Forget the jobs of a kind no longer governed, telling listeners of each."""
        with self._lock:
            cache = self._kinds.pop(resource, None)
        for obj in cache.list() if cache is not None else ():
            self._tell(_key_of(obj), "job")

    def pod_feed(self) -> Feed:
        """The pods' cache (pods labelled with their job's name)."""

        def changed(_type: str, old: Obj | None, new: Obj | None) -> None:
            labels = ((new or old or {}).get("metadata") or {}).get("labels") or {}
            job = labels.get(JOB_NAME_LABEL)
            if job:
                self._tell((_key_of(new or old)[0], job), "pod")

        return Feed(self._pods, changed)

    def event_feed(self) -> Feed:
        """The events' cache, indexed here by the uid of the object each is about."""

        def changed(_type: str, old: Obj | None, new: Obj | None) -> None:
            with self._lock:
                for view, index in ((old, self._unindex_event), (new, self._index_event)):
                    if view is not None:
                        index(view)
            involved = (new or old or {}).get("involvedObject") or {}
            if involved.get("name"):
                self._tell((str(involved.get("namespace") or ""), involved["name"]), "event")

        return Feed(self._events, changed)

    def forget(self) -> None:
        """Empty every cache (the watches that fed them stopped: nobody was looking)."""
        for resource in self.kinds():
            self.drop_kind(resource)
        self._pods.replace([])
        self._events.replace([])
        with self._lock:
            self._events_by_uid.clear()

    def picture_drawn(self, key: JobKey) -> None:
        """Tell listeners that the job's picture of its latest path is ready."""
        self._tell(key, "picture")

    def listen(self, listener: Listener) -> Callable[[], None]:
        """Call `listener(job key, what changed)` on every change; returns how to stop."""
        with self._lock:
            self._listeners.append(listener)

        def stop() -> None:
            with self._lock:
                if listener in self._listeners:
                    self._listeners.remove(listener)

        return stop

    def kinds(self) -> list[Resource]:
        """The resources of every governed kind being followed."""
        with self._lock:
            return list(self._kinds)

    def jobs(self) -> list[Job]:
        """Every job of every governed kind, by namespace, name and kind."""
        with self._lock:
            kinds = list(self._kinds.items())
        found = [job_from(obj, resource) for resource, cache in kinds for obj in cache.list()]
        return sorted(found, key=lambda job: (job.namespace, job.name, job.kind))

    def kind(self, name: str) -> Resource | None:
        """The followed kind whose resource is called `name` (`plural.group`), or None."""
        return next((kind for kind in self.kinds() if resource_name(kind) == name), None)

    def job(self, resource: Resource, namespace: str, name: str) -> Job | None:
        """The job of that kind, namespace and name, or None."""
        with self._lock:
            cache = self._kinds.get(resource)
        obj = cache.get(namespace, name) if cache is not None else None
        return job_from(obj, resource) if obj is not None else None

    def pod_of(self, job: Job, name: str) -> Pod | None:
        """The job's pod of that name, or None (not the job's, or gone)."""
        return next((pod for pod in self.pods_of(job) if pod.name == name), None)

    def pods_of(self, job: Job) -> list[Pod]:
        """The job's pods (by its name label and, where they have one, their owner's uid)."""
        pods = [
            pod_from(obj) for obj in self._pods.by_label(job.namespace, JOB_NAME_LABEL, job.name)
            if _owned_by(obj, job.uid)
        ]
        return sorted(pods, key=lambda pod: (pod.replica_type, _number(pod.replica_index),
                                             pod.name))

    def events_of(self, job: Job) -> list[Event]:
        """The job's newest events, newest first."""
        with self._lock:
            keys = list(self._events_by_uid.get(job.uid, ()))
        views = [view for key in keys if (view := self._events.get(*key)) is not None]
        newest = sorted(views, key=_seen_order, reverse=True)[:EVENTS_KEPT]
        return [event_from(view) for view in newest]

    def _index_event(self, view: Obj) -> None:
        uid = (view.get("involvedObject") or {}).get("uid")
        if uid:
            self._events_by_uid[uid].add(_key_of(view))

    def _unindex_event(self, view: Obj) -> None:
        uid = str((view.get("involvedObject") or {}).get("uid") or "")
        keys = self._events_by_uid.get(uid)
        if keys is not None:
            keys.discard(_key_of(view))
            if not keys:
                del self._events_by_uid[uid]

    def _tell(self, key: JobKey, change: Change) -> None:
        with self._lock:
            listeners = list(self._listeners)
        for listener in listeners:
            listener(key, change)


def _seen_order(view: Obj) -> tuple[str, int]:
    """Events by when they were last seen, and within a second by when they were written
    (resourceVersions are opaque, but every server this runs against counts them up)."""
    written = str((view.get("metadata") or {}).get("resourceVersion") or "")
    return event_from(view).last_seen, int(written) if written.isdigit() else 0


def _key_of(obj: Obj | None) -> tuple[str, str]:
    metadata = (obj or {}).get("metadata") or {}
    return str(metadata.get("namespace") or ""), str(metadata.get("name") or "")


def _owned_by(pod: Obj, uid: str) -> bool:
    owners = (pod.get("metadata") or {}).get("ownerReferences") or ()
    controllers = [ref.get("uid") for ref in owners if ref.get("controller")]
    return not controllers or uid in controllers


def _number(text: str) -> int:
    return int(text) if text.isdigit() else -1
