"""The engine in one process: watches, the work queue, workers, scheduler, events, leadership.

It wires the parts together and owns their lifetimes: caches fill before any
worker starts; with leader election, workers run only while the lease is held
and stop before any further write once it is lost (field notes, story 9).
"""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from loguru import logger

from engine.controller.cache import Cache, project_job, project_node, project_pod, project_service
from engine.controller.children import JOB_NAME_LABEL, REPLICA_TYPE_LABEL, JobKey
from engine.controller.client import KubeClient
from engine.controller.events import EventRecorder
from engine.controller.expectations import ExpectationKey, Expectations
from engine.controller.freshness import WrittenVersions
from engine.controller.leader import LeaderElector
from engine.controller.metrics import Metrics
from engine.controller.observe import node_is_ready
from engine.controller.queue import WorkQueue
from engine.controller.reconcile import Caches, Reconciler
from engine.controller.resources import JOB_RESOURCES, NODES, PODS, SERVICES
from engine.controller.scheduler import WakeScheduler
from engine.controller.watch import Informer
from engine.controller.workers import Done, Outcome, RequeueAfter, Retry, Terminal, run_workers
from engine.definition import CompiledDefinition
from engine.settings import EngineSettings

Obj = Mapping[str, Any]


class Engine:
    """Runs the definitions' job kinds against one API server, in one namespace or all."""

    def __init__(
        self,
        client: KubeClient,
        definitions: Sequence[CompiledDefinition],
        settings: EngineSettings,
        *,
        namespace: str | None = None,
    ) -> None:
        self._client = client
        self._settings = settings
        self._namespace = namespace
        self._definitions = {d.definition.spec.governs.kind: d for d in definitions}
        unknown = sorted(set(self._definitions) - set(JOB_RESOURCES))
        if unknown:
            raise ValueError(
                f"no CRD for the kinds {unknown}: the engine runs {sorted(JOB_RESOURCES)}"
            )
        self.queue: WorkQueue[JobKey] = WorkQueue(
            backoff_base_s=settings.queue_backoff_base_s, backoff_cap_s=settings.queue_backoff_cap_s
        )
        self.expectations = Expectations(ttl_s=settings.expectations_ttl_s)
        self.scheduler: WakeScheduler[JobKey] = WakeScheduler(self.queue)
        self.recorder = EventRecorder(
            client, aggregation_window_s=settings.event_aggregation_window_s
        )
        self.caches = Caches(
            jobs={kind: Cache(project_job) for kind in self._definitions},
            pods=Cache(project_pod),
            services=Cache(project_service),
            nodes=Cache(project_node),
        )
        self.written = WrittenVersions()
        self.reconciler = Reconciler(
            client=client, caches=self.caches, definitions=self._definitions,
            expectations=self.expectations, recorder=self.recorder, scheduler=self.scheduler,
            settings=settings, written=self.written,
        )
        self._leading = threading.Event()
        self.metrics = Metrics(
            queue=self.queue.metrics, api_requests=lambda: client.request_count,
            events=self.recorder.stats, jobs_by_phase=self._jobs_by_phase,
            is_leader=self._leading.is_set,
        )
        self._informers = self._build_informers()
        self._workers_stop = threading.Event()
        self._workers: threading.Thread | None = None

    def _build_informers(self) -> list[Informer]:
        informers = [
            Informer(self._client, JOB_RESOURCES[kind], namespace=self._namespace, cache=cache,
                     handler=self._job_handler(kind))
            for kind, cache in self.caches.jobs.items()
        ]
        informers.append(Informer(self._client, PODS, namespace=self._namespace,
                                  cache=self.caches.pods, handler=self._on_pod))
        informers.append(Informer(self._client, SERVICES, namespace=self._namespace,
                                  cache=self.caches.services, handler=self._on_child))
        informers.append(Informer(self._client, NODES, cache=self.caches.nodes,
                                  handler=self._on_node))
        return informers

    # Watch handlers: they only lower expectations and queue keys.

    def _job_handler(self, kind: str) -> Any:
        def handle(_event: str, old: Obj | None, new: Obj | None) -> None:
            obj = new or old
            if obj is not None:
                metadata = obj["metadata"]
                key = JobKey(kind, metadata["namespace"], metadata["name"])
                self.written.seen(key.id, metadata["resourceVersion"])
                self.queue.add(key)

        return handle

    def _on_pod(self, event: str, old: Obj | None, new: Obj | None) -> None:
        obj = new or old
        if obj is None:
            return
        keys = self._owners(obj)
        replica_type = (obj["metadata"].get("labels") or {}).get(REPLICA_TYPE_LABEL)
        name = obj["metadata"]["name"]
        for key in keys:
            if replica_type:
                expectation = ExpectationKey(key.id, str(replica_type))
                if event == "ADDED":
                    self.expectations.creation_observed(expectation)
                elif event == "DELETED" or _started_deleting(old, new):
                    self.expectations.deletion_observed(expectation, name)
            self.queue.add(key)

    def _on_child(self, _event: str, old: Obj | None, new: Obj | None) -> None:
        obj = new or old
        if obj is not None:
            for key in self._owners(obj):
                self.queue.add(key)

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
            for kind, cache in self.caches.jobs.items()
            if cache.get(namespace, job_name) is not None
        ]

    def enqueue_all(self) -> None:
        """Queue every cached job (the periodic resync, and node readiness changes)."""
        for kind, cache in self.caches.jobs.items():
            for job in cache.list():
                metadata = job["metadata"]
                self.queue.add(JobKey(kind, metadata["namespace"], metadata["name"]))

    def _jobs_by_phase(self) -> dict[tuple[str, str], int]:
        counts: Counter[tuple[str, str]] = Counter()
        for kind, cache in self.caches.jobs.items():
            for job in cache.list():
                counts[(kind, str((job.get("status") or {}).get("phase") or "New"))] += 1
        return dict(counts)

    # Lifetimes.

    def start_watching(self, *, timeout_s: float = 60.0) -> None:
        """Start every informer and the event recorder; wait until every cache has synced."""
        self.recorder.start()
        for informer in self._informers:
            informer.start()
        deadline = time.monotonic() + timeout_s
        for informer in self._informers:
            if not informer.wait_synced(max(deadline - time.monotonic(), 0.0)):
                raise TimeoutError(f"caches did not sync within {timeout_s:.0f}s")

    @property
    def synced(self) -> bool:
        """Whether every cache has finished its first list."""
        return all(informer.has_synced for informer in self._informers)

    def start_working(self) -> None:
        """Start the workers, the scheduler and the resync (once the caches are synced)."""
        self._leading.set()
        self.scheduler.start()
        self.scheduler.every(self._settings.resync_period_s, self.enqueue_all, "resync")
        self.enqueue_all()
        self._workers = threading.Thread(
            target=run_workers,
            args=(self.queue, self._handle),
            kwargs={"workers": self._settings.workers, "stop": self._workers_stop},
            name="jobmachine-workers", daemon=True,
        )
        self._workers.start()
        logger.info(f"engine working: {self._settings.workers} workers, kinds "
                    f"{sorted(self._definitions)}")

    def stop_working(self) -> None:
        """Stop handing out keys and wait for the reconciles in flight to finish."""
        self._leading.clear()
        self._workers_stop.set()
        self.queue.shut_down()
        if self._workers is not None:
            self._workers.join()
        self.scheduler.shutdown(wait=False)

    def stop(self) -> None:
        """Stop everything: workers first (no write after this), then watches and events."""
        self.stop_working()
        for informer in self._informers:
            informer.stop()
        self.recorder.stop()

    def run(self, stop: threading.Event, *, leader_election: LeaderElector | None = None) -> None:
        """Run until `stop` is set (or, with leader election, until the lease is lost)."""
        self.start_watching()
        try:
            if leader_election is None:
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


def _started_deleting(old: Obj | None, new: Obj | None) -> bool:
    return (
        new is not None
        and new["metadata"].get("deletionTimestamp") is not None
        and (old is None or old["metadata"].get("deletionTimestamp") is None)
    )
