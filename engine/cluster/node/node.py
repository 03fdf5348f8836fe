"""The local node: registers a Node, heartbeats, binds unscheduled pods to itself as they fit
its capacity and runs the pods bound to it, as local processes or as simulations.

It is the embedded cluster's kubelet and scheduler in one: it talks to the API
server over HTTP like any client, through the client layer (`engine.kube`: one
`KubeClient`, named `jobmachine-node` to the server, and an `Informer` keeping the
pods in a `Cache`), so the engine cannot tell it from a real node. Its own failures
are logged and retried (binding and dispatch again at every heartbeat); they never
stop the node.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Literal

from loguru import logger

from engine.cluster.node.config.sources import SourceRef, Sources, fetch_sources
from engine.cluster.node.config.tokens import Tokens, request_tokens
from engine.cluster.node.config.watched_config_maps import WatchedConfigMaps
from engine.cluster.node.events import EventPoster
from engine.cluster.node.layout import NodeFiles
from engine.cluster.node.lease import renew_lease
from engine.cluster.node.pod_views import finished_view, without_managed_fields
from engine.cluster.node.registration import conditions, node_object
from engine.cluster.node.runtime import leftovers
from engine.cluster.node.runtime.attempts import AttemptCounter, pod_group
from engine.cluster.node.runtime.hosts import headless_names
from engine.cluster.node.runtime.interface import Runtime
from engine.cluster.node.runtime.isolation import MountIsolation
from engine.cluster.node.runtime.process import ProcessRuntime
from engine.cluster.node.runtime.process_env import api_address
from engine.cluster.node.runtime.simulate import SimulatedRuntime
from engine.cluster.node.scheduling.capacity import Capacity
from engine.cluster.node.scheduling.scheduler import LocalScheduler
from engine.cluster.node.server_client import node_client
from engine.cluster.node.status import phases
from engine.cluster.node.status.backoff import RestartBackoff
from engine.cluster.node.times import now
from engine.cluster.node.worker import STOP_GRACE_S, PodWorker, confirm_deletion
from engine.kube.cache import Cache
from engine.kube.errors import AlreadyExists, ApiError, Conflict, NotFound, Unavailable
from engine.kube.informer import Informer
from engine.kube.resources import NODES, PODS, SERVICES

Mode = Literal["process", "simulate"]

_REGISTER_WITHIN_S = 60.0
_REGISTER_RETRY_S = 0.2
_REGISTER_RETRY_CAP_S = 5.0
_BINDERS = 16
"""Bindings in flight at once: a wide job's pods are bound about as fast as they are
created, not one round trip to the server after another (kube-scheduler binds each pod in a
goroutine of its own)."""


def _meta(pod: dict[str, Any]) -> dict[str, Any]:
    metadata: dict[str, Any] = pod.get("metadata") or {}
    return metadata


class LocalNode:
    """One node of the embedded cluster, on this machine."""

    def __init__(
        self,
        *,
        url: str,
        token: str,
        ca_file: Path | None,
        logs_dir: Path,
        state_dir: Path,
        mode: Mode = "process",
        name: str = "jobmachine-local",
        heartbeat_s: float = 10.0,
        restart_backoff: RestartBackoff | None = None,
        capacity: Capacity | None = None,
    ) -> None:
        """`restart_backoff`: how containers restarted in place back off; by default the
        kubelet's (10 s doubling up to 5 min), or what the node's environment variables
        JOBMACHINE_NODE_RESTART_BACKOFF_S and ..._MAX_S say. `capacity`: what pods may
        request of the node all together; by default this machine's CPUs and memory."""
        if mode not in ("process", "simulate"):
            raise ValueError(f"node mode must be 'process' or 'simulate', not {mode!r}")
        self.name = name
        self.mode = mode
        self._heartbeat_s = heartbeat_s
        self._restart_backoff = restart_backoff or RestartBackoff.from_env()
        self._api = node_client(url, token=token, ca_file=ca_file)
        # The node retries everything, as the engine does: an outage is logged once (WARNING,
        # then INFO when the server is back), and the watch's failures meanwhile at DEBUG.
        self._api.api_health.announce = True
        self.capacity = capacity or Capacity.of_this_machine()
        self._scheduler = LocalScheduler(self._api, name, self.capacity, binders=_BINDERS)
        self._files = NodeFiles(logs_dir=logs_dir, state_dir=state_dir)
        self._events = EventPoster(self._api, name)
        self._attempts = AttemptCounter(self._files.attempts_file,
                                        legacy_path=self._files.legacy_attempts_file)
        self._runtime: Runtime = (
            SimulatedRuntime(self._files, self._attempts, sources=self._read_sources)
            if mode == "simulate" else
            ProcessRuntime(self._files, isolation=MountIsolation(), services=self._service_names,
                           sources=self._read_sources, tokens=self._request_tokens,
                           api=api_address(url), peers=self._pod_uids)
        )
        self._pods = Cache(self._view)
        self._pod_informer = Informer(self._api, PODS, cache=self._pods,
                                      handler=self._on_pod_event, name=f"{name} pods")
        # The ConfigMaps containers read, from a watch (public: tests see what it holds).
        self.config_maps = WatchedConfigMaps(self._api, name)
        # Pods whose worker runs, by uid; then, until the pod is deleted, only its uid in
        # `_ended`: a pod is never run twice, and a finished one costs the node no worker.
        self._workers: dict[str, PodWorker] = {}
        self._ended: set[str] = set()
        # Workers of deleted pods, halted but perhaps still stopping their containers.
        self._retired: list[PodWorker] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()
        self._registered_at = now()
        self._node: dict[str, Any] = {}
        self._log = logger.bind(node=name)
        self._heartbeat = threading.Thread(target=self._beat, name=f"{name} heartbeat",
                                           daemon=True)

    def start(self) -> None:
        """Register the Node, then watch pods; returns at once."""
        self._files.state_dir.mkdir(parents=True, exist_ok=True)
        if self.mode == "process":
            leftovers.kill_leftovers(self._files.processes_dir)
        self._register_while_refused()
        self._scheduler.start()
        self.config_maps.start()
        self._pod_informer.start()
        self._heartbeat.start()
        self._log.info(f"local node {self.name} is ready ({self.mode} mode)")

    def stop(self) -> None:
        """Stop watching, end every container (SIGTERM, then SIGKILL), join the threads."""
        self._stopping.set()
        self._pod_informer.stop()
        self.config_maps.stop()
        self._scheduler.stop()
        if self._heartbeat.is_alive():
            self._heartbeat.join(10)
        with self._lock:
            workers = [*self._workers.values(), *self._retired]
        for worker in workers:
            worker.halt()
        for worker in workers:
            worker.join(STOP_GRACE_S + 10)
        self._api.close()

    # -- the Node object -----------------------------------------------------------------

    def _register_while_refused(self) -> None:
        """Register, trying again with back-off while the server is busy, failing or out of
        reach (429, 409, 5xx, no answer), for up to `_REGISTER_WITHIN_S`, as a kubelet
        keeps trying to register; any other refusal, or the last one, is raised."""
        delay, deadline = _REGISTER_RETRY_S, time.monotonic() + _REGISTER_WITHIN_S
        while True:
            try:
                self._register()
                return
            except ApiError as exc:
                transient = isinstance(exc, Unavailable | Conflict | AlreadyExists)
                if not transient or time.monotonic() + delay > deadline:
                    raise
                self._log.warning(f"registering the node failed, retrying in {delay:g}s: {exc}")
            time.sleep(delay)
            delay = min(delay * 2, _REGISTER_RETRY_CAP_S)

    def _register(self) -> None:
        version = str(self._api.server_version().get("gitVersion") or "v0.0.0")
        node = node_object(self.name, mode=self.mode, version=version, now=self._registered_at,
                           capacity=self.capacity)
        try:
            registered = self._api.create(NODES, node)
        except (AlreadyExists, Conflict):
            self._api.patch(NODES, self.name, {"metadata": {"labels": node["metadata"]["labels"]}})
            registered = self._api.patch(NODES, self.name, {"status": node["status"]},
                                         subresource="status")
        self._node = registered
        renew_lease(self._api, registered)

    def _beat(self) -> None:
        while not self._stopping.wait(self._heartbeat_s):
            try:
                self._heartbeat_once()
            except ApiError as exc:
                self._log.warning(f"heartbeat failed: {exc}")
            except Exception:
                self._log.exception("heartbeat failed")
            self._resync()
            if self._pod_informer.has_synced:
                self._attempts.prune(pod_group(pod) for pod in self._pods.list())

    def _heartbeat_once(self) -> None:
        status = {"conditions": conditions(heartbeat=now(), since=self._registered_at)}
        try:
            self._api.patch(NODES, self.name, {"status": status}, subresource="status")
            renew_lease(self._api, self._node)
        except NotFound:
            self._log.warning("the Node object was deleted: registering again")
            self._register()
        self._scheduler.watch_served_groups()

    def _resync(self) -> None:
        """Bind and run what a failed call or a missed event left behind."""
        self._scheduler.wake()
        for pod in self._pods.list():
            try:
                self._on_pod("MODIFIED", pod)
            except Exception:
                self._log.bind(pod=f"{_meta(pod).get('namespace')}/{_meta(pod).get('name')}"
                               ).exception("resync failed")

    # -- pods ----------------------------------------------------------------------------

    def _on_pod_event(self, kind: str, old: dict[str, Any] | None,
                      new: dict[str, Any] | None) -> None:
        """The informer's news of a pod: its cached view (the last one seen, once deleted)."""
        pod = new if new is not None else old
        if pod is not None:
            self._on_pod(kind, pod)

    def _on_pod(self, kind: str, pod: dict[str, Any]) -> None:
        if self._stopping.is_set():
            return
        self._scheduler.observe(kind, pod)
        if kind == "DELETED":
            self._forget(pod)
        elif (pod.get("spec") or {}).get("nodeName") == self.name:
            self._run(pod)

    def _run(self, pod: dict[str, Any]) -> None:
        metadata = _meta(pod)
        terminal = (pod.get("status") or {}).get("phase") in phases.TERMINAL_PHASES
        uid = str(metadata["uid"])
        with self._lock:
            worker = self._workers.get(uid)
            if (worker is None and uid not in self._ended and not terminal
                    and not self._stopping.is_set()):
                worker = PodWorker(pod, runtime=self._runtime, api=self._api,
                                   events=self._events, files=self._files,
                                   restart_backoff=self._restart_backoff,
                                   on_end=self._worker_ended)
                self._workers[uid] = worker
                worker.start()
                return
        if worker is not None and not worker.done:
            worker.update(pod)
        elif metadata.get("deletionTimestamp") and metadata.get("deletionGracePeriodSeconds"):
            # Finished before its deletion began: nothing to stop, only to confirm.
            confirm_deletion(self._api, pod)

    def _view(self, pod: dict[str, Any]) -> dict[str, Any]:
        """What the watch cache keeps of a pod (pod_views.py): all but its managedFields while
        it may still run, a small view once it is bound and never will (an unbound pod stays
        whole: the scheduler reads its requests)."""
        uid = str(_meta(pod).get("uid"))
        bound = bool((pod.get("spec") or {}).get("nodeName"))
        terminal = (pod.get("status") or {}).get("phase") in phases.TERMINAL_PHASES
        with self._lock:
            finished = bound and uid not in self._workers and (terminal or uid in self._ended)
        return finished_view(pod) if finished else without_managed_fields(pod)

    def _worker_ended(self, worker: PodWorker) -> None:
        """A worker's thread ended (its pod finished, ended elsewhere, is gone, or the node
        stops): keep only the pod's uid, so no new worker runs it again, and only the
        finished view of the pod."""
        with self._lock:
            if self._workers.get(worker.uid) is worker:
                del self._workers[worker.uid]
                self._ended.add(worker.uid)
            self._retired = [w for w in self._retired if w is not worker]
        self._events.forget(worker.uid)
        self._pods.reproject(*worker.key)

    def _forget(self, pod: dict[str, Any]) -> None:
        metadata = _meta(pod)
        uid, namespace, name = str(metadata["uid"]), metadata["namespace"], metadata["name"]
        with self._lock:
            self._ended.discard(uid)
            worker = self._workers.pop(uid, None)
            if worker is not None:
                worker.halt()
                self._retired.append(worker)
        replaced = self._pods.get(namespace, name) is not None
        self._files.remove_pod(namespace, name, uid, logs=not replaced)
        self._attempts.forget_pod(namespace, name, uid)

    def _read_sources(self, namespace: str, refs: Iterable[SourceRef]) -> Sources:
        """The ConfigMaps and Secrets a container refers to: Secrets read fresh, ConfigMaps
        from the node's watch when it holds them (as a kubelet reads them)."""
        return fetch_sources(self._api, namespace, refs, self.config_maps.get)

    def _request_tokens(self, pod: Mapping[str, Any]) -> Tokens:
        """Tokens for the pod's serviceAccountToken sources, bound to the pod."""
        return request_tokens(self._api, pod)

    def _pod_uids(self, namespace: str) -> list[str]:
        """The uids of the namespace's pods the node knows."""
        return [str(_meta(pod).get("uid")) for pod in self._pods.list(namespace)]

    def _service_names(self, namespace: str) -> list[str]:
        """The names a namespace resolves: its Services, read fresh (a Service created just
        before the pod must resolve for its processes), and the `HOSTNAME.SUBDOMAIN` of its
        pods under a headless Service, from the node's pods."""
        try:
            listed, _ = self._api.list(SERVICES, namespace)
        except ApiError as exc:
            self._log.warning(f"listing the Services of {namespace} failed; their names will not "
                              f"resolve for this process: {exc}")
            return []
        return [str(_meta(item).get("name")) for item in listed] + headless_names(
            listed, self._pods.list(namespace))
