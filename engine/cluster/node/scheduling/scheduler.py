"""The local node's kube-scheduler: binds pending pods that fit what the node has left.

Pods are taken highest priority first, then oldest; one that does not fit stays Pending
with `PodScheduled=False`, reason `Unschedulable`, and a FailedScheduling event saying
what is short, as kube-scheduler reports it, and is tried again when room frees up. A
pod of a gang (a PodGroup) is bound only together with enough of its group to reach the
group's minMember; the group's status says where it stands. Every schedulerName is
served: this is the embedded cluster's only scheduler, standing in for Volcano and
scheduler-plugins too. There is no preemption.

Watch events only record what changed; a thread of its own decides, so a burst of new
pods is placed in one pass. As kube-scheduler's binding cycle runs apart from its scheduling
cycle, a pass's bindings (and their Scheduled events) are sent by `binders` threads while
the pass goes on deciding, each pod's room counted as soon as it is chosen; a pod that does
not fit is only refused once the pass's bindings so far have answered, so room a failed
binding leaves goes on to the next pod in order, as when they were sent one by one.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from loguru import logger

from engine.cluster.node.events import SCHEDULER, EventPoster
from engine.cluster.node.scheduling import gangs
from engine.cluster.node.scheduling.capacity import Capacity
from engine.cluster.node.scheduling.fit import node_message, short_of
from engine.cluster.node.scheduling.gangs import GangRef
from engine.cluster.node.scheduling.requests import Resources, pod_requests
from engine.cluster.node.status import phases
from engine.cluster.node.times import now
from engine.kube.cache import Cache
from engine.kube.client import KubeClient
from engine.kube.errors import AlreadyExists, ApiError, Conflict, NotFound
from engine.kube.informer import Informer
from engine.kube.resources import PODS

_RETRY_S = 5.0
"""How often pending pods are looked at again even when nothing was seen to change."""

Pod = dict[str, Any]


def _meta(pod: Mapping[str, Any]) -> Mapping[str, Any]:
    metadata: Mapping[str, Any] = pod.get("metadata") or {}
    return metadata


def _uid(pod: Mapping[str, Any]) -> str:
    return str(_meta(pod).get("uid"))


def _name(pod: Mapping[str, Any]) -> str:
    return f"{_meta(pod).get('namespace')}/{_meta(pod).get('name')}"


def _priority(pod: Mapping[str, Any]) -> int:
    try:
        return int((pod.get("spec") or {}).get("priority") or 0)
    except (TypeError, ValueError):
        return 0


@dataclass
class _Unit:
    """What is bound together: one pod, or the pending pods of one gang."""

    gang: GangRef | None
    pods: list[Pod] = field(default_factory=list)

    @property
    def order(self) -> tuple[int, tuple[str, str, str]]:
        return (-max(_priority(p) for p in self.pods), min(gangs.age_key(p) for p in self.pods))


@dataclass(frozen=True)
class _Sent:
    """A binding of this pass that may not have answered yet: the room it took."""

    answer: Future[ApiError | None]
    wanted: Resources


class LocalScheduler:
    """Binds the pods no node has yet to `node`, within `capacity`."""

    def __init__(self, api: KubeClient, node: str, capacity: Capacity, *,
                 binders: int = 1) -> None:
        """`binders`: how many bindings may be in flight at once (1: each answered before the
        pass goes on, in the pass's own thread)."""
        self._api = api
        self._node = node
        self._capacity = capacity.amounts
        self._events = EventPoster(api, node, SCHEDULER)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stopping = threading.Event()
        self._pending: dict[str, Pod] = {}
        # Pods on this node that have not ended, with their requests, and those summed.
        self._placed: dict[str, Resources] = {}
        self._used: Resources = {}
        # The last unschedulable message written on each pending pod.
        self._told: dict[str, str] = {}
        # Each pending pod's requests, computed once (a pod's requests do not change).
        self._wanted: dict[str, Resources] = {}
        self._gangs = gangs.GangBook()
        self._group_informers: dict[str, Informer] = {}
        self._binders = (ThreadPoolExecutor(binders, thread_name_prefix=f"{node} binding")
                         if binders > 1 else None)
        self._sent: list[_Sent] = []
        self._log = logger.bind(node=node, component="scheduler")
        self._thread = threading.Thread(target=self._loop, name=f"{node} scheduler", daemon=True)

    def start(self) -> None:
        self.watch_served_groups()
        self._thread.start()

    def stop(self) -> None:
        self._stopping.set()
        self._wake.set()
        for informer in self._group_informers.values():
            informer.stop()
        if self._thread.is_alive():
            self._thread.join(10)
        if self._binders is not None:
            self._binders.shutdown(wait=False, cancel_futures=True)

    def wake(self) -> None:
        """Look at every pending pod again soon (the node's resync)."""
        self._wake.set()

    def watch_served_groups(self) -> None:
        """Watch the PodGroup APIs the server serves (a CRD installed later is picked up at
        the node's next heartbeat)."""
        for flavour in gangs.FLAVOURS:
            if flavour.name in self._group_informers or not self._served(flavour):
                continue

            def on_group(kind: str, old: dict[str, Any] | None, new: dict[str, Any] | None,
                         flavour: gangs.Flavour = flavour) -> None:
                group = new if new is not None else old
                if group is not None:
                    self._on_group(flavour, kind, group)

            informer = Informer(self._api, flavour.resource, cache=Cache(), handler=on_group,
                                name=f"{self._node} {flavour.name} podgroups")
            self._group_informers[flavour.name] = informer
            informer.start()

    def _served(self, flavour: gangs.Flavour) -> bool:
        try:
            self._api.resources_of(flavour.group, flavour.version)
        except ApiError as exc:
            if not isinstance(exc, NotFound):
                self._log.warning(f"could not tell whether {flavour.group} is served: {exc}")
            return False
        return True

    # -- what the watches say ----------------------------------------------------------

    def observe(self, kind: str, pod: Pod) -> None:
        """Record a pod event: a new pending pod, or room freed, wakes the scheduling pass."""
        uid = _uid(pod)
        spec, status = pod.get("spec") or {}, pod.get("status") or {}
        bound_to = spec.get("nodeName")
        wake = False
        with self._lock:
            if kind == "DELETED" or (not bound_to and _meta(pod).get("deletionTimestamp")):
                self._pending.pop(uid, None)
                self._told.pop(uid, None)
                self._wanted.pop(uid, None)
                self._events.forget(uid)
                wake = self._release(uid)
            elif not bound_to:
                wake = uid not in self._pending
                self._pending[uid] = pod
            else:
                self._pending.pop(uid, None)
                self._told.pop(uid, None)
                self._wanted.pop(uid, None)
                if bound_to != self._node or status.get("phase") in phases.TERMINAL_PHASES:
                    wake = self._release(uid)
                elif uid not in self._placed:
                    self._place(uid, pod_requests(pod))
            wake = self._gangs.observe(kind, pod) or (wake and bool(self._pending))
        if wake:
            self._wake.set()

    def _on_group(self, flavour: gangs.Flavour, kind: str, group: dict[str, Any]) -> None:
        with self._lock:
            self._gangs.observe_group(flavour, kind, group)
        self._wake.set()

    def _place(self, uid: str, wanted: Resources) -> None:
        self._placed[uid] = wanted
        for name, amount in wanted.items():
            self._used[name] = self._used.get(name, Decimal(0)) + amount

    def _release(self, uid: str) -> bool:
        wanted = self._placed.pop(uid, None)
        if wanted is None:
            return False
        for name, amount in wanted.items():
            self._used[name] = self._used.get(name, Decimal(0)) - amount
        return True

    # -- the scheduling pass -----------------------------------------------------------

    def _loop(self) -> None:
        while not self._stopping.is_set():
            self._wake.wait(_RETRY_S)
            self._wake.clear()
            if self._stopping.is_set():
                return
            try:
                self._schedule()
            except Exception:
                self._log.exception("scheduling pass failed (tried again at the next change)")

    def _schedule(self) -> None:
        """One pass over the pending pods, in order, against what was in use when it began
        plus what it binds itself: room freed meanwhile waits for the next pass (which that
        release asks for), so it goes to the first in order, not to whoever is looked at
        when it appears."""
        with self._lock:
            pending = list(self._pending.values())
            used = dict(self._used)
        units: dict[GangRef | str, _Unit] = {}
        for pod in pending:
            gang = gangs.gang_of(pod)
            units.setdefault(gang or _uid(pod), _Unit(gang)).pods.append(pod)
        try:
            for unit in sorted(units.values(), key=lambda u: u.order):
                if unit.gang is None:
                    self._place_alone(unit.pods[0], used)
                else:
                    self._place_gang(unit.gang, unit.pods, used)
        finally:
            self._answered(used)
        with self._lock:
            statuses = list(self._gangs.statuses_to_write(now()))
        for ref, status in statuses:
            self._write_group_status(ref, status)

    def _requests_of(self, pod: Mapping[str, Any]) -> Resources:
        uid = _uid(pod)
        with self._lock:
            known = self._wanted.get(uid)
        if known is None:
            known = pod_requests(pod)
            with self._lock:
                if uid in self._pending:
                    self._wanted[uid] = known
        return known

    def _place_alone(self, pod: Pod, used: Resources) -> None:
        wanted = self._requests_of(pod)
        short = short_of(self._capacity, used, wanted)
        if short and self._answered(used):
            short = short_of(self._capacity, used, wanted)
        if short:
            self._refuse(pod, node_message(short))
        else:
            self._bind(pod, wanted, used)

    def _place_gang(self, ref: GangRef, pending: list[Pod], used: Resources) -> None:
        # A gang is planned against the room the pass's bindings really took.
        self._answered(used)
        requests = {_uid(p): self._requests_of(p) for p in pending}
        with self._lock:
            plan = self._gangs.plan(ref, pending, self._capacity, used,
                                    lambda pod: requests.get(_uid(pod)) or pod_requests(pod))
        for pod in plan.refused:
            self._refuse(pod, plan.message)
        for pod in plan.chosen:
            self._bind(pod, requests[_uid(pod)], used)
        for pod in plan.alone:
            self._place_alone(pod, used)

    def _bind(self, pod: Pod, wanted: Resources, used: Resources) -> None:
        """Send the pod's binding; `used`, the pass's own count, takes its requests now and
        gives them back if the binding fails (`_answered`)."""
        for resource, amount in wanted.items():
            used[resource] = used.get(resource, Decimal(0)) + amount
        answer: Future[ApiError | None]
        if self._binders is None:
            answer = Future()
            answer.set_result(self._send_binding(pod, wanted))
        else:
            answer = self._binders.submit(self._send_binding, pod, wanted)
        self._sent.append(_Sent(answer, wanted))

    def _answered(self, used: Resources) -> bool:
        """Wait for the pass's bindings in flight; the room of each that failed is given back
        to `used`. Whether any was in flight."""
        sent, self._sent = self._sent, []
        for binding in sent:
            if binding.answer.result() is None:
                continue
            for resource, amount in binding.wanted.items():
                used[resource] = used.get(resource, Decimal(0)) - amount
        return bool(sent)

    def _send_binding(self, pod: Pod, wanted: Resources) -> ApiError | None:
        """Bind the pod to this node and say so (Scheduled); the error if it failed."""
        metadata = _meta(pod)
        namespace, name, uid = str(metadata["namespace"]), str(metadata["name"]), _uid(pod)
        body = {"apiVersion": "v1", "kind": "Binding",
                "metadata": {"name": name, "namespace": namespace, "uid": uid},
                "target": {"apiVersion": "v1", "kind": "Node", "name": self._node}}
        try:
            self._api.create_subresource(PODS, name, "binding", body, namespace)
        except ApiError as exc:
            if isinstance(exc, NotFound | Conflict | AlreadyExists):
                # gone, or bound meanwhile: the watch will say
                with self._lock:
                    self._pending.pop(uid, None)
            else:
                self._log.bind(pod=f"{namespace}/{name}").warning(
                    f"binding failed (tried again soon): {exc}")
            return exc
        with self._lock:
            self._pending.pop(uid, None)
            self._told.pop(uid, None)
            self._wanted.pop(uid, None)
            if uid not in self._placed:
                self._place(uid, wanted)
        self._events.post(pod, "Scheduled",
                          f"Successfully assigned {namespace}/{name} to {self._node}")
        # Bound: the scheduler says nothing more about this pod.
        self._events.forget(uid)
        return None

    def _refuse(self, pod: Pod, message: str) -> None:
        """Say why the pod waits, once per distinct reason: its PodScheduled condition and a
        FailedScheduling event."""
        uid = _uid(pod)
        with self._lock:
            if self._told.get(uid) == message:
                return
            self._told[uid] = message
        conditions = (pod.get("status") or {}).get("conditions") or []
        current = next((c for c in conditions if c.get("type") == "PodScheduled"), None)
        if current is not None and current.get("message") == message \
                and current.get("status") == "False":
            return
        condition = {"type": "PodScheduled", "status": "False", "reason": "Unschedulable",
                     "message": message, "lastProbeTime": None, "lastTransitionTime": now()}
        kept = [c for c in conditions if c.get("type") != "PodScheduled"]
        metadata = _meta(pod)
        try:
            self._api.patch(PODS, str(metadata["name"]),
                            {"status": {"conditions": [*kept, condition]}},
                            namespace=str(metadata["namespace"]), subresource="status")
        except ApiError as exc:
            if not isinstance(exc, NotFound | Conflict | AlreadyExists):
                self._log.bind(pod=_name(pod)).warning(f"could not say why it waits: {exc}")
            return
        self._events.post(pod, "FailedScheduling", message, kind="Warning")

    def _write_group_status(self, ref: GangRef, status: dict[str, Any]) -> None:
        try:
            self._api.patch(ref.flavour.resource, ref.name, {"status": status},
                            namespace=ref.namespace, subresource="status")
        except ApiError as exc:
            if not isinstance(exc, NotFound):
                self._log.bind(podgroup=str(ref)).warning(
                    f"could not write the PodGroup's status (tried again soon): {exc}")
                with self._lock:
                    self._gangs.touch(ref)
            return
        with self._lock:
            self._gangs.written(ref, status)
