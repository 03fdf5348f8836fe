"""The engine in one process: watches, the work queue, workers, scheduler, events, leadership.

It wires the parts together and owns their lifetimes: caches fill before any
worker starts; with leader election, workers run only while the lease is held
and stop before any further write once it is lost (field notes, story 9). Which
job kinds it runs is not fixed: the machine controller says so from the
StateMachine objects and CRDs, and the engine starts and stops job watches
to match, with nothing restarted.
"""

from __future__ import annotations

import math
import threading
import time
from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

from loguru import logger

from engine.controller.coordination.leader import LeaderElector
from engine.controller.coordination.shard_leases import ShardCoordinator
from engine.controller.coordination.shards import ShardGate
from engine.controller.machines.controller import MachineController
from engine.controller.machines.registry import Assignment, MachineRegistry
from engine.controller.machines.served import STAND_IN_ONLY, served_resources
from engine.controller.reconcile.children import (
    JOB_NAME_LABEL,
    REPLICA_TYPE_LABEL,
    TRACKING_FINALIZER,
    JobKey,
    controller_uid,
)
from engine.controller.reconcile.observe import node_is_ready
from engine.controller.reconcile.reconcile import Caches, Reconciler, TransitionListener
from engine.controller.reconcile.record import RECORD_FIELD
from engine.controller.reconcile.selectors import job_selects
from engine.controller.reporting.events import EventRecorder
from engine.controller.reporting.metrics import Metrics
from engine.controller.runtime.cache_sync import wait_for_caches
from engine.controller.runtime.expectations import ExpectationKey, Expectations
from engine.controller.runtime.freshness import WrittenVersions
from engine.controller.runtime.projections import (
    project_child_object,
    project_job,
    project_node,
    project_pod,
    project_service,
)
from engine.controller.runtime.queue import WorkQueue
from engine.controller.runtime.references import ReferenceWatches
from engine.controller.runtime.scheduler import WakeScheduler
from engine.controller.runtime.workers import (
    Done,
    Outcome,
    RequeueAfter,
    Retry,
    Terminal,
    run_workers,
)
from engine.kube.cache import Cache
from engine.kube.client import KubeClient
from engine.kube.errors import AlreadyExists, ApiError
from engine.kube.informer import Informer
from engine.kube.resources import BUILTIN_CHILDREN, NAMESPACES, NODES, PODS, SERVICES, Resource
from engine.settings import EngineSettings

Obj = Mapping[str, Any]


_KIND_SYNC_TIMEOUT_S = 60.0
"""How long starting to lead waits for the jobs of the watched kinds to be listed."""


class Engine:
    """Runs every job kind a StateMachine governs, against one API server, in one namespace
    or all."""

    def __init__(
        self,
        client: KubeClient,
        settings: EngineSettings,
        *,
        namespace: str | None = None,
        shards: ShardGate | None = None,
        identity: str | None = None,
        in_own_namespace: bool = False,
    ) -> None:
        """`shards`, when given, limits the engine to the jobs of the shards it holds (see
        `shards.py`); `identity` names this replica in its events (`reportingInstance`);
        `in_own_namespace` says the engine runs in a pod of its system namespace, which
        therefore exists (so it neither reads nor creates namespaces)."""
        self._client = client
        self.settings = settings
        self._in_own_namespace = in_own_namespace
        self._namespace = namespace
        self.shards = shards
        self.machines = MachineRegistry()
        self.queue: WorkQueue[JobKey] = WorkQueue(
            backoff_base_s=settings.queue_backoff_base_s, backoff_cap_s=settings.queue_backoff_cap_s
        )
        self.expectations = Expectations(ttl_s=settings.expectations_ttl_s)
        self.scheduler: WakeScheduler[JobKey] = WakeScheduler(self.queue)
        self.recorder = EventRecorder(
            client.with_budget(settings.event_qps, settings.event_burst),
            aggregation_window_s=settings.event_aggregation_window_s, host=identity,
        )
        self.caches = Caches(
            jobs={},
            pods=Cache(project_pod, indexed_label=JOB_NAME_LABEL),
            services=Cache(project_service, indexed_label=JOB_NAME_LABEL),
            nodes=Cache(project_node),
        )
        self._job_informers: dict[str, tuple[Resource, Informer]] = {}
        self._object_informers: dict[tuple[str, str], tuple[bool, Informer]] = {}
        """Per child kind: whether its objects are replicas (spec.child), and its watch."""
        self._kinds_lock = threading.Lock()
        self.written = WrittenVersions()
        self.machine_controller = MachineController(
            client, self.machines, self.recorder,
            system_namespace=settings.system_namespace,
            revision_grace_s=settings.revision_grace_s,
            watch_kinds=self.watch_kinds, watch_objects=self.watch_objects,
            enqueue_kind=self.enqueue_kind,
            jobs=self._all_jobs, kind_synced=self._kind_synced,
            may_write=(lambda: shards.holds(0)) if shards is not None else (lambda: True),
        )
        self._leading = threading.Event()
        self.metrics = Metrics(
            queue=self.queue.metrics, api_requests=lambda: client.request_count,
            events=self.recorder.stats, jobs_by_phase=self._jobs_by_phase,
            is_leader=self._leading.is_set,
            shards_held=(lambda: len(shards.held)) if shards is not None else None,
        )
        self.references = ReferenceWatches(
            client, namespace=namespace, resources=self._served_kinds, enqueue=self.queue.add)
        self.reconciler = Reconciler(
            client=client, caches=self.caches, machines=self.machines,
            expectations=self.expectations, recorder=self.recorder, scheduler=self.scheduler,
            settings=settings, written=self.written, metrics=self.metrics,
            references=self.references,
        )
        self._informers = self._build_informers()
        self._workers_stop = threading.Event()
        self._workers: threading.Thread | None = None
        self.api_health = client.api_health
        """Whether the API server answers (for /readyz); it logs each outage once."""
        self.api_health.announce = True
        self.api_health.add_listener(self._api_back)

    def _api_back(self, _gone_for_s: float) -> None:
        """The API server answers again: look at every job and machine now, not when the
        back-off of each key that failed meanwhile runs out (it grew with the outage)."""
        self.enqueue_all()
        self.machine_controller.resync()

    def _build_informers(self) -> list[Informer]:
        informers = self.machine_controller.informers()
        informers.append(Informer(self._client, PODS, namespace=self._namespace,
                                  cache=self.caches.pods, handler=self._on_replica_object))
        informers.append(Informer(self._client, SERVICES, namespace=self._namespace,
                                  cache=self.caches.services, handler=self._on_child))
        informers.append(Informer(self._client, NODES, cache=self.caches.nodes,
                                  handler=self._on_node))
        return informers

    # Job kinds come and go with the machines that govern them.

    def watch_kinds(self, resources: Mapping[str, Resource]) -> None:
        """Watch exactly these job kinds: start the watches of new ones, stop the rest. A kind
        kube-controller-manager always runs is not watched unless the engine stands in for it
        (it would need permissions for nothing)."""
        if not self.settings.stand_in_for_built_ins:
            resources = {kind: resource for kind, resource in resources.items()
                         if (resource.api_version, resource.kind) not in STAND_IN_ONLY}
        with self._kinds_lock:
            for kind in [k for k in self._job_informers if k not in resources]:
                _, informer = self._job_informers.pop(kind)
                informer.stop()
                self.caches.jobs.pop(kind, None)
                logger.info(f"stopped watching {kind}: no CRD serves it any more")
            for kind, resource in resources.items():
                current = self._job_informers.get(kind)
                if current is not None and current[0] == resource:
                    continue
                if current is not None:
                    current[1].stop()
                cache = Cache(project_job)
                informer = Informer(self._client, resource, namespace=self._namespace,
                                    cache=cache, handler=self._job_handler(kind))
                self.caches.jobs[kind] = cache
                self._job_informers[kind] = (resource, informer)
                informer.start()
                logger.info(f"watching {kind} ({resource.plural}.{resource.group})")

    def watch_objects(
        self, resources: Mapping[tuple[str, str], Resource],
        replica_kinds: frozenset[tuple[str, str]] = frozenset(),
    ) -> None:
        """Watch exactly these kinds of child objects (those of the engine's jobs only).

        Objects of `replica_kinds` (a machine's spec.child kind) are replicas: their coming
        and going meet the engine's expectations. Any other kind (a declared Service,
        ConfigMap...) only queues its job, though it may carry replica labels (the Service
        createService makes for a pod does): it must not stand for an expected pod.
        """
        with self._kinds_lock:
            for key in [k for k in self.caches.objects if k not in resources]:
                if key in self._object_informers:
                    self._object_informers.pop(key)[1].stop()
                self.caches.objects.pop(key, None)
            for key, resource in resources.items():
                replicas = key in replica_kinds
                if (resource.group, resource.plural) == ("", "services") and not replicas:
                    # Declared Services are read from the services' own watch and cache: a
                    # second watch would list and hold every Service of the cluster again.
                    if key in self._object_informers:
                        self._object_informers.pop(key)[1].stop()
                    self.caches.objects[key] = (resource, self.caches.services)
                    continue
                current = self.caches.objects.get(key)
                if (current is not None and current[0] == resource
                        and key in self._object_informers
                        and self._object_informers[key][0] == replicas):
                    continue
                if key in self._object_informers:
                    self._object_informers.pop(key)[1].stop()
                cache = Cache(project_child_object, indexed_label=JOB_NAME_LABEL)
                handler = self._on_replica_object if replicas else self._on_declared_object
                informer = Informer(self._client, resource, namespace=self._namespace,
                                    cache=cache, handler=handler,
                                    label_selector=JOB_NAME_LABEL)
                self.caches.objects[key] = (resource, cache)
                self._object_informers[key] = (replicas, informer)
                informer.start()
                logger.info(f"watching {resource.kind} child objects of jobs")

    def _served_kinds(self) -> dict[tuple[str, str], Resource]:
        """(apiVersion, kind) -> resource of what the API server serves now: the built-in
        kinds a machine may name, and every established CRD's."""
        return {**BUILTIN_CHILDREN, **served_resources(self.machine_controller.crds.list())}

    def _kind_synced(self, kind: str) -> bool:
        found = self._job_informers.get(kind)
        return found is not None and found[1].has_synced

    def _all_jobs(self) -> list[tuple[str, Obj]]:
        return [(kind, job) for kind, cache in list(self.caches.jobs.items())
                for job in cache.list()]

    def enqueue_kind(self, kind: str) -> None:
        """Queue every cached job of one kind (its machine in force changed)."""
        cache = self.caches.jobs.get(kind)
        for job in cache.list() if cache is not None else ():
            metadata = job["metadata"]
            self.queue.add(JobKey(kind, metadata["namespace"], metadata["name"]))

    # Watch handlers: they only lower expectations and queue keys.

    def _job_handler(self, kind: str) -> Any:
        def handle(event: str, old: Obj | None, new: Obj | None) -> None:
            obj = new or old
            if obj is None:
                return
            metadata = obj["metadata"]
            key = JobKey(kind, metadata["namespace"], metadata["name"])
            for owner in self._owners(obj) or self._claiming(kind, obj):
                if owner.kind != kind:
                    self.queue.add(owner)  # a child of a job with a schedule (a CronJob's Job)
            own = self.written.seen(key.id, metadata["resourceVersion"])
            if own and _only_ours_changed(old, new):
                return  # the echo of our own write: the reconcile that wrote it acted on it
            self.queue.add(key, urgent=_started(obj))

        return handle

    def _on_replica_object(self, event: str, old: Obj | None, new: Obj | None) -> None:
        """A pod, or a child object: one with replica labels (a pod, a spec.child object)
        lowers its job's expectations; every one queues its job at once, but for a pod
        that only lost the engine's tracking finalizer (the echo of its release: nothing a
        reconcile reads changed)."""
        obj = new or old
        if obj is None or _only_tracking_released(old, new):
            return
        keys = self._owners(obj) or self._selecting(obj)
        replica_type = (obj["metadata"].get("labels") or {}).get(REPLICA_TYPE_LABEL)
        name = obj["metadata"]["name"]
        for key in keys:
            if replica_type:
                expectation = ExpectationKey(key.id, str(replica_type))
                if event == "ADDED":
                    self.expectations.creation_observed(expectation)
                elif event == "DELETED" or _started_deleting(old, new):
                    self.expectations.deletion_observed(expectation, name)
            self.queue.add(key, urgent=True)

    def _selecting(self, obj: Obj) -> list[JobKey]:
        """For an orphan (no controller), the jobs whose machine claims pods by a selector that
        matches it: upstream queues every such ReplicaSet, so the orphan is adopted at once."""
        metadata = obj["metadata"]
        if controller_uid(obj) is not None or metadata.get("deletionTimestamp"):
            return []
        found = []
        for kind, cache in list(self.caches.jobs.items()):
            assignment = self.machines.assign(kind, {})
            if not isinstance(assignment, Assignment) or (
                    assignment.definition.definition.governs.selector is None):
                continue  # the kind claims by its own labels: an orphan without them is not its
            found += [JobKey(kind, job["metadata"]["namespace"], job["metadata"]["name"])
                      for job in cache.list(metadata.get("namespace"))
                      if job_selects(assignment.definition, job, metadata.get("labels") or {})]
        return found

    def _claiming(self, kind: str, obj: Obj) -> list[JobKey]:
        """For an orphan of a kind some machine's rollout is made of (a ReplicaSet), every job
        of those machines in its namespace: the rollout's claim adopts it if its selector
        matches (upstream queues the Deployments whose selector matches it)."""
        metadata = obj["metadata"]
        if controller_uid(obj) is not None or metadata.get("deletionTimestamp"):
            return []
        found = []
        for owner_kind, cache in list(self.caches.jobs.items()):
            assignment = self.machines.assign(owner_kind, {})
            if not isinstance(assignment, Assignment):
                continue
            rollout = assignment.definition.rollout
            if rollout is not None and rollout.kind == kind:
                found += [JobKey(owner_kind, job["metadata"]["namespace"], job["metadata"]["name"])
                          for job in cache.list(metadata.get("namespace"))]
        return found

    def _on_declared_object(self, _event: str, old: Obj | None, new: Obj | None) -> None:
        """A declared object (spec.objects): its job looks at once."""
        obj = new or old
        if obj is not None:
            for key in self._owners(obj):
                self.queue.add(key, urgent=True)

    def _on_child(self, event: str, old: Obj | None, new: Obj | None) -> None:
        """A Service queues its job, but for a replica's Service that appeared with its
        job as controller: the engine's own create (no decision reads a Service; the pass
        it queued found the replica's pod not yet seen and put itself off). An orphan
        (adopted), a change and a deletion (made again) still queue it. Any other Service
        may be a declared object (spec.objects), whose job looks at once."""
        obj = new or old
        if obj is None:
            return
        replica = _replica_service(obj)
        if event == "ADDED" and replica and controller_uid(obj) is not None:
            return
        for key in self._owners(obj):
            self.queue.add(key, urgent=not replica)

    def _on_node(self, _event: str, old: Obj | None, new: Obj | None) -> None:
        if node_is_ready(old) != node_is_ready(new):
            self.enqueue_all()

    def _owners(self, obj: Obj) -> list[JobKey]:
        """The jobs a child may belong to: its controller reference, else its job-name label."""
        namespace = obj["metadata"]["namespace"]
        for reference in obj["metadata"].get("ownerReferences") or ():
            if reference.get("controller") and reference.get("kind") in self.caches.jobs:
                return [JobKey(reference["kind"], namespace, reference["name"])]
        job_name = (obj["metadata"].get("labels") or {}).get(JOB_NAME_LABEL)
        if not job_name:
            return []
        return [
            JobKey(kind, namespace, job_name)
            for kind, cache in list(self.caches.jobs.items())
            if cache.get(namespace, job_name) is not None
        ]

    def add_transition_listener(self, listener: TransitionListener) -> None:
        """Have `listener` told of every state change the engine records (tools, tests)."""
        self.reconciler.add_transition_listener(listener)

    def shard_granted(self, shard: int) -> None:
        """This replica now holds `shard`: look at every job in it (and write the machines'
        revisions and status if it is shard 0)."""
        assert self.shards is not None
        for key in self._job_keys():
            if self.shards.shard(key) == shard:
                self.queue.add(key)
        if shard == 0:
            self.machine_controller.resync()

    def enqueue_all(self) -> None:
        """Queue every cached job (the periodic resync, and node readiness changes)."""
        for key in self._job_keys():
            self.queue.add(key)

    def _job_keys(self) -> Iterator[JobKey]:
        for kind, job in self._all_jobs():
            metadata = job["metadata"]
            yield JobKey(kind, metadata["namespace"], metadata["name"])

    def _jobs_by_phase(self) -> dict[tuple[str, str], int]:
        counts: Counter[tuple[str, str]] = Counter()
        for kind, job in self._all_jobs():
            counts[(kind, str((job.get("status") or {}).get("phase") or "New"))] += 1
        return dict(counts)

    # Lifetimes.

    def start_watching(
        self, *, timeout_s: float = 60.0, stop: threading.Event | None = None
    ) -> bool:
        """Start every informer and the event recorder; wait until every cache has synced,
        for as long as their lists make progress (`cache_sync.py`): TimeoutError when one
        brought no page for `timeout_s`.

        False if `stop` was set meanwhile (the engine is stopping before it began).
        """
        self.recorder.start()
        for informer in self._informers:
            informer.start()
        return wait_for_caches(self._informers, timeout_s=timeout_s, stop=stop)

    def wait_until_governed(self, kind: str, *, timeout_s: float) -> None:
        """Wait until a machine governs `kind` and its jobs are listed (tools and benchmarks
        that submit jobs right after starting the engine); TimeoutError when it does not."""
        deadline = time.monotonic() + timeout_s
        while not (self.machines.governed(kind) is not None and self._kind_synced(kind)):
            if time.monotonic() > deadline:
                raise TimeoutError(f"no machine governs {kind} after {timeout_s:.0f}s")
            time.sleep(0.05)

    @property
    def synced(self) -> bool:
        """Whether every cache has finished its first list."""
        return all(informer.has_synced for informer in self._informers)

    def start_working(self) -> None:
        """Start the workers, the scheduler and the resync (once the caches are synced).

        The machines are judged first and the jobs of every kind they govern listed, so
        no job is reconciled before the engine knows which revision it runs with.
        """
        self._leading.set()
        if not self._in_own_namespace:
            self._ensure_system_namespace()
        self.machine_controller.start_working()
        deadline = time.monotonic() + _KIND_SYNC_TIMEOUT_S
        for kind, (_, informer) in list(self._job_informers.items()):
            if not informer.wait_synced(max(deadline - time.monotonic(), 0.0)):
                logger.warning(f"jobs of {kind} were not listed within "
                               f"{_KIND_SYNC_TIMEOUT_S:.0f}s; they are reconciled once they are")
        self.scheduler.start()
        self.scheduler.every(self.settings.resync_period_s, self.enqueue_all, "resync")
        self.enqueue_all()
        self._workers = threading.Thread(
            target=run_workers,
            args=(self.queue, self._handle),
            kwargs={"workers": self.settings.workers, "stop": self._workers_stop},
            name="jobmachine-workers", daemon=True,
        )
        self._workers.start()
        logger.info(f"engine working: {self.settings.workers} workers, kinds "
                    f"{sorted(self.machines.watched())}")

    def _ensure_system_namespace(self) -> None:
        """The namespace machine revisions live in exists (created if it does not).

        Read first, so a restart writes nothing when it exists; a read that is not allowed
        falls back to the create (a cluster may grant one and not the other).
        """
        name = self.settings.system_namespace
        try:
            self._client.get(NAMESPACES, name)
            return
        except ApiError:
            pass
        try:
            self._client.create(NAMESPACES, {"apiVersion": "v1", "kind": "Namespace",
                                             "metadata": {"name": name}})
        except AlreadyExists:
            return
        except ApiError as exc:
            logger.error(f"cannot create the engine's namespace {name} (it keeps machine "
                         f"revisions): {exc}")

    def stop_working(self) -> None:
        """Stop handing out keys and wait for the reconciles in flight to finish."""
        self._leading.clear()
        self.machine_controller.stop_working()
        self._workers_stop.set()
        self.queue.shut_down()
        if self._workers is not None:
            self._workers.join()
        self.scheduler.shutdown(wait=False)

    def stop(self) -> None:
        """Stop everything: workers first (no write after this), then watches, then the
        events still queued are posted, all within `settings.shutdown_grace_s`."""
        deadline = time.monotonic() + self.settings.shutdown_grace_s
        self.stop_working()
        with self._kinds_lock:
            job_informers = [informer for _, informer in self._job_informers.values()]
            job_informers += [informer for _, informer in self._object_informers.values()]
            self._job_informers.clear()
            self._object_informers.clear()
        for informer in [*self._informers, *job_informers]:
            informer.stop()
        self.references.stop()
        grace = max(deadline - time.monotonic(), 1.0)
        self.recorder.stop(flush_timeout_s=grace, flush_client=self._flush_client(grace))

    def _flush_client(self, grace_s: float) -> KubeClient:
        """Events left at shutdown go out at the rate that posts them all within the grace
        (never slower than `event_qps`), so none is abandoned for the rate limit's sake."""
        needed = 1.25 * self.recorder.pending / grace_s
        qps = max(self.settings.event_qps, needed)
        burst = self.settings.event_burst if math.isinf(qps) else max(
            self.settings.event_burst, int(qps))
        return self._client.with_budget(qps, burst)

    def run(
        self, stop: threading.Event, *, leader_election: LeaderElector | None = None,
        sharding: ShardCoordinator | None = None,
    ) -> None:
        """Run until `stop` is set (or, with leader election, until the lease is lost).

        With `sharding`, jobs are worked on only in the shards the coordinator holds, and
        every shard is given back before the engine stops.
        """
        try:
            if not self.start_watching(stop=stop):
                return
            if sharding is not None:
                self.start_working()
                sharding.run(stop)
            elif leader_election is None:
                self.start_working()
                stop.wait()
            else:
                leader_election.run(
                    on_started_leading=self.start_working,
                    on_stopped_leading=self.stop_working,
                    stop=stop,
                )
        finally:
            self.stop()

    def _handle(self, key: JobKey) -> Outcome:
        if self.shards is None:
            return self._reconcile(key)
        shard = self.shards.enter(key)
        if shard is None:
            return Done()
        try:
            return self._reconcile(key)
        finally:
            self.shards.leave(shard)

    def _reconcile(self, key: JobKey) -> Outcome:
        started = time.perf_counter()
        result = "error"
        try:
            outcome = self.reconciler(key)
            result = _result_name(outcome)
            return outcome
        finally:
            self.metrics.observe_reconcile(result, time.perf_counter() - started)


_RESULT_NAMES: dict[type, str] = {
    Done: "done", RequeueAfter: "requeue", Retry: "retry", Terminal: "terminal"
}
"""The `result` label of the reconcile metric, per outcome."""


def _result_name(outcome: Outcome) -> str:
    return _RESULT_NAMES.get(type(outcome), "unknown")


def _started(job: Obj) -> bool:
    """Whether the engine has written the job's status: from then on it is work in progress,
    not a new arrival (a two-phase end, a restart, a deletion go before jobs not begun)."""
    return bool((job.get("status") or {}).get(RECORD_FIELD))


def _only_ours_changed(old: Obj | None, new: Obj | None) -> bool:
    """Whether nothing the engine did not write changed between two versions of a job: the
    same generation (spec), labels, annotations and deletion. A version the engine wrote can
    still carry someone else's change when the watch skipped the one before it (a relist)."""
    if old is None or new is None:
        return False
    before, after = old["metadata"], new["metadata"]
    return all(before.get(field) == after.get(field) for field in _NOT_OURS)


_NOT_OURS = ("generation", "labels", "annotations", "deletionTimestamp")
"""Job metadata only others change (the engine writes status and its own finalizer)."""


def _only_tracking_released(old: Obj | None, new: Obj | None) -> bool:
    """Whether `new` is `old` without the tracking finalizer and nothing else changed (but
    its resourceVersion): a pod whose outcome the job's status holds, released by the
    engine (or by someone else: either way no reconcile reads the finalizer of a pod that
    has none). Its job's passes after a release found nothing to do, and, the job's own
    write not yet seen, put themselves off for another pass."""
    if old is None or new is None:
        return False
    before, after = old["metadata"], new["metadata"]
    had = tuple(before.get("finalizers") or ())
    if TRACKING_FINALIZER not in had or tuple(after.get("finalizers") or ()) != tuple(
            f for f in had if f != TRACKING_FINALIZER):
        return False
    if old.keys() != new.keys() or before.keys() - _RELEASE_CHANGES != (
            after.keys() - _RELEASE_CHANGES):
        return False
    return (all(old[part] == new[part] for part in old if part != "metadata")
            and all(before[field] == after[field] for field in before.keys() - _RELEASE_CHANGES))


_RELEASE_CHANGES = frozenset({"finalizers", "resourceVersion", "managedFields"})
"""What a pod's metadata changes by when a finalizer is removed."""


def _replica_service(obj: Obj) -> bool:
    """Whether `obj` is a Service createService made for a replica (it has the replica's
    labels)."""
    return obj.get("kind") == "Service" and REPLICA_TYPE_LABEL in (
        obj["metadata"].get("labels") or {})


def _started_deleting(old: Obj | None, new: Obj | None) -> bool:
    return (
        new is not None
        and new["metadata"].get("deletionTimestamp") is not None
        and (old is None or old["metadata"].get("deletionTimestamp") is None)
    )
