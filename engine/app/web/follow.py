"""The watches that feed the web view's live model, on the engine's own informers.

Which kinds are jobs is data, as for the engine: the StateMachine objects say which
kinds they govern and the CRDs which kinds are served, so a kind added with `kubectl
apply` appears in the view without a restart, and one no longer governed leaves it.
"""

from __future__ import annotations

import threading
from typing import Any

from loguru import logger

from engine.app.web.state import Feed, LiveJobs
from engine.controller.machines.served import CRDS, project_crd, served_resources
from engine.controller.reconcile.children import JOB_NAME_LABEL
from engine.kube.cache import Cache
from engine.kube.client import KubeClient
from engine.kube.informer import Informer
from engine.kube.resources import EVENTS, PODS, STATE_MACHINES, Resource

Obj = dict[str, Any]


def _governs(machine: Obj) -> tuple[str, str] | None:
    governs = (machine.get("spec") or {}).get("governs") or {}
    if not governs.get("apiVersion") or not governs.get("kind"):
        return None
    return str(governs["apiVersion"]), str(governs["kind"])


def _project_machine(obj: Obj) -> Obj:
    """Of a StateMachine, only its name and the kind it governs."""
    metadata = obj.get("metadata") or {}
    return {"metadata": {key: metadata[key] for key in ("name", "resourceVersion")
                         if key in metadata},
            "spec": {"governs": (obj.get("spec") or {}).get("governs") or {}}}


class Follower:
    """Keeps `model` current: one informer per governed kind, one for pods, one for events.

    `namespace` limits jobs, pods and events to one namespace (as `run --namespace`).
    Nothing is watched until `follow` is first called, and `pause` stops watching when
    nobody looks any more: `up` serves the view by default, and watches nobody looks at
    would decode every pod, event and job write again in the process that serves them
    (issue 33).
    """

    def __init__(self, client: KubeClient, model: LiveJobs, *, namespace: str | None) -> None:
        self._client = client
        self._model = model
        self._namespace = namespace
        self._lock = threading.Lock()
        self._stopped = False
        self._started = False
        self._machines = Cache(_project_machine)
        self._crds = Cache(project_crd)
        self._kinds: dict[Resource, Informer] = {}
        self._fixed: list[Informer] = []
        self._switch = threading.Lock()
        """Held while watches start or stop (never by an informer's thread, which `pause`
        waits for), so a start and a pause never interleave."""

    def start(self) -> None:
        """Start every watch (each on its own thread); while watching, this does nothing.
        After `pause`, the watches start afresh (new informers list everything again)."""
        with self._switch:
            with self._lock:
                if self._started or self._stopped:
                    return
                self._started = True
                self._fixed = [
                    Informer(self._client, STATE_MACHINES, cache=self._machines,
                             handler=self._kinds_changed),
                    Informer(self._client, CRDS, cache=self._crds, handler=self._kinds_changed),
                    self._informer(PODS, self._model.pod_feed(), label_selector=JOB_NAME_LABEL),
                    self._informer(EVENTS, self._model.event_feed()),
                ]
                fixed = list(self._fixed)
            for informer in fixed:
                informer.start()

    def follow(self, timeout: float) -> bool:
        """Start watching if nothing is yet, and wait up to `timeout` seconds for the first
        lists, so the first page a viewer opens shows the cluster, not an empty list.
        Whether everything had listed in time (the view fills in from the watches if not)."""
        self.start()
        return self.wait_synced(timeout)

    def wait_synced(self, timeout: float) -> bool:
        """Whether every watch, those of job kinds known by then included, listed in time."""
        with self._lock:
            fixed = list(self._fixed)
        listed = all(informer.wait_synced(timeout) for informer in fixed)
        with self._lock:
            kinds = list(self._kinds.values())
        return listed and all(informer.wait_synced(timeout) for informer in kinds)

    def pause(self) -> None:
        """Stop every watch, wait for their threads and forget what they cached (nobody is
        looking; `start` or `follow` lists everything again)."""
        with self._switch:
            self._stop_watches()
            self._model.forget()
            self._machines.replace([])
            self._crds.replace([])

    def stop(self) -> None:
        """Stop every watch for good and wait for their threads."""
        with self._switch:
            with self._lock:
                self._stopped = True
            self._stop_watches()

    def _stop_watches(self) -> None:
        with self._lock:
            self._started = False
            informers = [*self._fixed, *self._kinds.values()]
            self._fixed = []
            self._kinds.clear()
        for informer in informers:
            informer.stop()

    def _informer(self, resource: Resource, feed: Feed, *,
                  label_selector: str | None = None) -> Informer:
        return Informer(self._client, resource, namespace=self._namespace, cache=feed.cache,
                        handler=feed.handler, label_selector=label_selector)

    def _kinds_changed(self, _type: str, _old: Obj | None, _new: Obj | None) -> None:
        """Start watching kinds that became governed and served; drop those that stopped."""
        served = served_resources(self._crds.list())
        governed = {kind for machine in self._machines.list()
                    if (kind := _governs(machine)) is not None}
        wanted = {served[kind] for kind in governed if kind in served}
        with self._lock:
            if self._stopped or not self._started:  # a handler of a watch being stopped
                return
            gone = [(r, self._kinds.pop(r)) for r in list(self._kinds) if r not in wanted]
            new = [r for r in wanted if r not in self._kinds]
            for resource in new:
                informer = self._informer(resource, self._model.job_feed(resource))
                self._kinds[resource] = informer
                informer.start()
        for resource, informer in gone:
            informer.stop()
            self._model.drop_kind(resource)
        for resource in new:
            logger.debug(f"web view: following {resource.kind} ({resource.api_version})")
