"""Interchangeable pods (pod.naming Generated): which pod holds which replica index, and
which are surplus.

A ReplicaSet's pods have no identity: its controller counts the active ones and, with too
many, deletes those kube-controller-manager's `controller.ActivePodsWithRanks` ranks first.
The engine keeps a replica machine per index, so each pass gives every index at most one
pod: pods keep the index their label names while it is in range and free; spares (adopted
orphans, a second pod of one index) and pods beyond a lowered `replicas` take free indexes;
the surplus, ranked as upstream ranks it, is deleted. A pod being deleted frees its index at
once (upstream counts only active pods, so its replacement is made at once too).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import datetime
from functools import cmp_to_key
from typing import Any

from engine.controller.reconcile.children import ReplicaId, replica_of
from engine.controller.reconcile.claims import Claimed, relabel_if_drifted
from engine.kube.client import KubeClient
from engine.kube.timestamps import parse_time

Obj = Mapping[str, Any]

DELETION_COST_ANNOTATION = "controller.kubernetes.io/pod-deletion-cost"
_PHASE_ORDINAL = {"Pending": 0, "Unknown": 1, "Running": 2}
_ENDED = frozenset({"Succeeded", "Failed"})


def place(
    client: KubeClient, claimed: Claimed, job: Obj, *, replica_type: str, replicas: int,
    now: datetime,
) -> Claimed:
    """`claimed` with the pods of `replica_type` placed on indexes `0..replicas-1`, the
    surplus ranked for deletion and pods being deleted let go (`unplaced`)."""
    pods = [*(p for r, p in claimed.by_replica.items() if r.type == replica_type),
            *claimed.spare]
    going = [p for p in pods if p["metadata"].get("deletionTimestamp")]
    staying = [p for p in pods if not p["metadata"].get("deletionTimestamp")]
    active = [p for p in staying if not _ended(p)]
    surplus = deletion_order(active, now=now)[:max(0, len(active) - replicas)]
    doomed = {p["metadata"]["uid"] for p in surplus}
    placed: dict[int, Obj] = {}
    homeless: list[Obj] = []
    for pod in (p for p in active if p["metadata"]["uid"] not in doomed):
        index = _index(pod, replica_type)
        if 0 <= index < replicas and index not in placed:
            placed[index] = pod
        else:
            homeless.append(pod)
    # An ended pod keeps its own free index (its machine replaces it), unless an active pod
    # needs the place: then it is deleted, as is one with no index to hold.
    ended: dict[int, Obj] = {}
    left_over: list[Obj] = []
    for pod in (p for p in staying if _ended(p)):
        index = _index(pod, replica_type)
        if 0 <= index < replicas and index not in placed and index not in ended:
            ended[index] = pod
        else:
            left_over.append(pod)
    free = [i for i in range(replicas) if i not in placed and i not in ended]
    free += sorted(ended)
    for pod in homeless:
        index = free.pop(0)
        if index in ended:
            left_over.append(ended.pop(index))
        placed[index] = relabel_if_drifted(client, claimed.resource, pod, job,
                                           ReplicaId(replica_type, index))
    placed.update(ended)
    by_replica = {r: p for r, p in claimed.by_replica.items() if r.type != replica_type}
    by_replica.update({ReplicaId(replica_type, i): p for i, p in sorted(placed.items())})
    return replace(claimed, by_replica=by_replica, spare=(),
                   surplus=(*claimed.surplus, *((replica_type, p) for p in surplus)),
                   unplaced=(*claimed.unplaced, *going, *left_over))


def _index(pod: Obj, replica_type: str) -> int:
    """The index the pod's labels give it in `replica_type`, else -1."""
    found = replica_of(pod)
    return found.index if found is not None and found.type == replica_type else -1


def deletion_order(pods: Sequence[Obj], *, now: datetime) -> list[Obj]:
    """`pods` (all active) in the order upstream deletes them (`ActivePodsWithRanks` with
    the PodDeletionCost and LogarithmicScaleDown features, on by default): each ranked by
    the number of these pods on its node."""
    on_node: dict[str, int] = {}
    for pod in pods:
        node = _node(pod)
        on_node[node] = on_node.get(node, 0) + 1
    ranked = [(pod, on_node[_node(pod)]) for pod in pods]

    def compare(a: tuple[Obj, int], b: tuple[Obj, int]) -> int:
        return -1 if _deleted_before(a, b, now) else (1 if _deleted_before(b, a, now) else 0)

    return [pod for pod, _ in sorted(ranked, key=cmp_to_key(compare))]


def _deleted_before(a: tuple[Obj, int], b: tuple[Obj, int], now: datetime) -> bool:
    """upstream's `ActivePodsWithRanks.Less`, criterion by criterion."""
    (i, rank_i), (j, rank_j) = a, b
    if _node(i) != _node(j) and (not _node(i) or not _node(j)):
        return not _node(i)  # 1. unassigned < assigned
    phase_i, phase_j = _PHASE_ORDINAL.get(_phase(i), 0), _PHASE_ORDINAL.get(_phase(j), 0)
    if phase_i != phase_j:
        return phase_i < phase_j  # 2. Pending < Unknown < Running
    if _ready(i) != _ready(j):
        return not _ready(i)  # 3. not ready < ready
    if deletion_cost(i) != deletion_cost(j):
        return deletion_cost(i) < deletion_cost(j)  # 4. lower deletion cost first
    if rank_i != rank_j:
        return rank_i > rank_j  # 5. doubled up < not doubled up
    ready_i, ready_j = _ready_time(i), _ready_time(j)
    if _ready(i) and _ready(j) and ready_i != ready_j:
        return _newer(i, j, ready_i, ready_j, now)  # 6. ready for less time first
    restarts = _restarts(i), _restarts(j)
    if restarts[0] != restarts[1]:
        return restarts[0] > restarts[1]  # 7. more container restarts first
    created_i, created_j = _created(i), _created(j)
    if created_i != created_j:
        return _newer(i, j, created_i, created_j, now)  # 8. newer first
    return False


def _newer(i: Obj, j: Obj, time_i: datetime | None, time_j: datetime | None,
           now: datetime) -> bool:
    """Whether `i`'s time counts as later: an unset time first, then in log2 buckets of age
    (upstream's logarithmicRankDiff), the uid breaking a tie within a bucket."""
    if time_i is None or time_j is None:
        return time_i is None
    difference = _log_age(time_i, now) - _log_age(time_j, now)
    if difference == 0:
        return str(i["metadata"].get("uid") or "") < str(j["metadata"].get("uid") or "")
    return difference < 0


def _log_age(time: datetime, now: datetime) -> int:
    nanoseconds = (now - time).total_seconds() * 1e9
    return int(math.log2(nanoseconds)) if nanoseconds > 0 else -1


def deletion_cost(pod: Obj) -> int:
    """The pod's `controller.kubernetes.io/pod-deletion-cost` (an int32; else 0, as
    upstream ignores a value it cannot parse)."""
    value = (pod["metadata"].get("annotations") or {}).get(DELETION_COST_ANNOTATION)
    try:
        cost = int(str(value).strip()) if value is not None else 0
    except ValueError:
        return 0
    return cost if -(2 ** 31) <= cost < 2 ** 31 else 0


def _node(pod: Obj) -> str:
    return str((pod.get("spec") or {}).get("nodeName") or "")


def _phase(pod: Obj) -> str:
    return str((pod.get("status") or {}).get("phase") or "")


def _ended(pod: Obj) -> bool:
    return _phase(pod) in _ENDED


def _ready_condition(pod: Obj) -> Mapping[str, Any] | None:
    for condition in (pod.get("status") or {}).get("conditions") or ():
        if condition.get("type") == "Ready" and condition.get("status") == "True":
            return condition  # type: ignore[no-any-return]
    return None


def _ready(pod: Obj) -> bool:
    return _ready_condition(pod) is not None


def _ready_time(pod: Obj) -> datetime | None:
    """When a Ready pod became ready; None when not ready or the time is unset."""
    condition = _ready_condition(pod)
    when = condition.get("lastTransitionTime") if condition is not None else None
    return parse_time(when) if when else None


def _restarts(pod: Obj) -> tuple[int, int]:
    """The most restarts of a container, then of an init container (upstream's sidecars)."""
    status = pod.get("status") or {}

    def most(field: str) -> int:
        return max((int(s.get("restartCount") or 0) for s in status.get(field) or ()),
                   default=0)

    return most("containerStatuses"), most("initContainerStatuses")


def _created(pod: Obj) -> datetime | None:
    created = pod["metadata"].get("creationTimestamp")
    return parse_time(created) if created else None
