"""Gangs: the pods of one PodGroup, which are bound all together or not at all.

Two PodGroup APIs are honoured, as their schedulers read them: Volcano's
(`scheduling.volcano.sh/v1beta1`, a pod joins with the annotation
`scheduling.k8s.io/group-name`) and scheduler-plugins' coscheduling
(`scheduling.x-k8s.io/v1alpha1`, the label `scheduling.x-k8s.io/pod-group`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any, NamedTuple

from engine.cluster.node.scheduling.fit import node_message, short_of
from engine.cluster.node.scheduling.requests import Resources, pod_requests, summed
from engine.kube.resources import Resource

RequestsOf = Callable[[Mapping[str, Any]], Resources]
"""A pod's requests (the scheduler keeps them per pod, computed once)."""

VOLCANO_ANNOTATION = "scheduling.k8s.io/group-name"
PLUGINS_LABEL = "scheduling.x-k8s.io/pod-group"


@dataclass(frozen=True)
class Flavour:
    """One PodGroup API."""

    name: str
    group: str
    version: str

    @property
    def resource(self) -> Resource:
        """The PodGroups of this API."""
        return Resource(self.group, self.version, "podgroups", "PodGroup")


VOLCANO = Flavour("volcano", "scheduling.volcano.sh", "v1beta1")
PLUGINS = Flavour("scheduler-plugins", "scheduling.x-k8s.io", "v1alpha1")
FLAVOURS = (VOLCANO, PLUGINS)


class GangRef(NamedTuple):
    """Which PodGroup a pod belongs to."""

    flavour: Flavour
    namespace: str
    name: str

    def __str__(self) -> str:
        return f"{self.namespace}/{self.name}"


def gang_of(pod: Mapping[str, Any]) -> GangRef | None:
    """The PodGroup the pod names, if any (Volcano's annotation first)."""
    metadata = pod.get("metadata") or {}
    namespace = str(metadata.get("namespace") or "")
    volcano = (metadata.get("annotations") or {}).get(VOLCANO_ANNOTATION)
    if volcano:
        return GangRef(VOLCANO, namespace, str(volcano))
    plugins = (metadata.get("labels") or {}).get(PLUGINS_LABEL)
    if plugins:
        return GangRef(PLUGINS, namespace, str(plugins))
    return None


def ref_of(flavour: Flavour, group: Mapping[str, Any]) -> GangRef:
    metadata = group.get("metadata") or {}
    return GangRef(flavour, str(metadata.get("namespace") or ""), str(metadata.get("name")))


def min_member(group: Mapping[str, Any]) -> int:
    """How many of its pods must be bound together (at least 1)."""
    try:
        return max(1, int((group.get("spec") or {}).get("minMember") or 1))
    except (TypeError, ValueError):
        return 1


def age_key(pod: Mapping[str, Any]) -> tuple[str, str, str]:
    """Oldest first: creation time, then namespace and name for a stable order."""
    metadata = pod.get("metadata") or {}
    return (str(metadata.get("creationTimestamp") or ""), str(metadata.get("namespace") or ""),
            str(metadata.get("name") or ""))


@dataclass(frozen=True)
class Verdict:
    """Why a gang waits: a PodGroup condition's reason and message."""

    reason: str
    message: str


@dataclass
class GangPlan:
    """What one scheduling pass does with a gang's pending pods."""

    chosen: list[dict[str, Any]] = field(default_factory=list)
    """Bound now, together."""
    alone: list[dict[str, Any]] = field(default_factory=list)
    """Beyond minMember, with the gang already placed: each as a pod on its own."""
    refused: list[dict[str, Any]] = field(default_factory=list)
    message: str = ""


@dataclass
class _Counts:
    members: int = 0
    scheduled: int = 0
    running: int = 0
    succeeded: int = 0
    failed: int = 0


class GangBook:
    """The PodGroups and their pods as the watches last showed them, each gang's verdict,
    and the statuses written. Not thread-safe: the scheduler holds its lock."""

    def __init__(self) -> None:
        self._groups: dict[GangRef, dict[str, Any]] = {}
        self._members: dict[GangRef, dict[str, dict[str, Any]]] = {}
        self._verdicts: dict[GangRef, Verdict] = {}
        self._written: dict[GangRef, dict[str, Any]] = {}
        # Groups whose status may have changed since it was last computed.
        self._dirty: set[GangRef] = set()

    def observe(self, kind: str, pod: dict[str, Any]) -> bool:
        """Record a pod of a gang; True when its gang's counts may have changed."""
        ref = gang_of(pod)
        if ref is None:
            return False
        uid = str((pod.get("metadata") or {}).get("uid"))
        members = self._members.setdefault(ref, {})
        before = members.get(uid)
        if kind == "DELETED":
            members.pop(uid, None)
            if not members:
                del self._members[ref]
        else:
            members[uid] = pod
        changed = kind == "DELETED" or before is None or _state(before) != _state(pod)
        if changed:
            self._dirty.add(ref)
        return changed

    def observe_group(self, flavour: Flavour, kind: str, group: dict[str, Any]) -> None:
        ref = ref_of(flavour, group)
        self._dirty.add(ref)
        if kind == "DELETED":
            for book in (self._groups, self._verdicts, self._written):
                book.pop(ref, None)
        else:
            self._groups[ref] = group

    def plan(self, ref: GangRef, pending: list[dict[str, Any]], capacity: Mapping[str, Decimal],
             used: Mapping[str, Decimal], requests_of: RequestsOf = pod_requests) -> GangPlan:
        """Bind enough of the gang's pending pods to reach minMember all at once, or none."""
        ordered = sorted(pending, key=age_key)
        self._dirty.add(ref)
        group = self._groups.get(ref)
        if group is None:
            return GangPlan(refused=ordered, message=(
                f'pod group "{ref.name}" does not exist: its pods wait until it is created'))
        minimum = min_member(group)
        placed = [p for p in self._members.get(ref, {}).values() if _holds_place(p)]
        need = minimum - len(placed)
        if need <= 0:
            self._verdicts.pop(ref, None)
            return GangPlan(alone=ordered)
        if len(ordered) < need:
            message = (f"pod group {ref.name} is not ready: {len(placed) + len(ordered)} of its "
                       f"{minimum} pods (minMember) exist; waiting for the rest")
            self._verdicts[ref] = Verdict("NotEnoughTasks", message)
            return GangPlan(refused=ordered, message=message)
        first = summed(requests_of(p) for p in ordered[:need])
        short = short_of(capacity, used, first)
        if short:
            whole = summed([first, *(requests_of(p) for p in placed)])
            never = bool(short_of(capacity, {}, whole))
            message = (f"pod group {ref.name}: {need} pods must be bound together to reach "
                       f"minMember {minimum}"
                       + (", more than the node can ever hold" if never else "")
                       + f"; {node_message(short)}")
            self._verdicts[ref] = Verdict(NEVER_FITS if never else "NotEnoughResources", message)
            return GangPlan(refused=ordered, message=message)
        self._verdicts.pop(ref, None)
        chosen, taken = ordered[:need], summed([used, first])
        alone = []
        for pod in ordered[need:]:
            wanted = requests_of(pod)
            if short_of(capacity, taken, wanted):
                alone.append(pod)
            else:
                chosen.append(pod)
                taken = summed([taken, wanted])
        return GangPlan(chosen=chosen, alone=alone)

    def statuses_to_write(self, at: str) -> Iterator[tuple[GangRef, dict[str, Any]]]:
        """Each PodGroup whose status differs from what was last written, with the new one
        (a condition that did not change keeps its transition time)."""
        dirty, self._dirty = self._dirty, set()
        for ref in dirty:
            group = self._groups.get(ref)
            if group is None:
                continue
            previous = self._written.get(ref) or group.get("status") or {}
            status = _status(ref, group, self._counts(ref), self._verdicts.get(ref), at)
            if _comparable(status) == _comparable(previous):
                continue
            before = {c.get("type"): c for c in previous.get("conditions") or ()}
            for condition in status.get("conditions") or ():
                old = before.get(condition["type"])
                if old is not None and _bare(old) == _bare(condition):
                    condition["lastTransitionTime"] = old.get("lastTransitionTime", at)
            yield ref, status

    def touch(self, ref: GangRef) -> None:
        """Compute the group's status again at the next pass (its last write failed)."""
        self._dirty.add(ref)

    def written(self, ref: GangRef, status: dict[str, Any]) -> None:
        self._written[ref] = status

    def _counts(self, ref: GangRef) -> _Counts:
        counts = _Counts()
        for pod in self._members.get(ref, {}).values():
            phase = (pod.get("status") or {}).get("phase")
            counts.members += 1
            counts.scheduled += bool((pod.get("spec") or {}).get("nodeName"))
            counts.running += phase == "Running"
            counts.succeeded += phase == "Succeeded"
            counts.failed += phase == "Failed"
        return counts


NEVER_FITS = "NeverFits"
"""A PodGroup condition reason of the local node's own: the group's minMember pods need more
than the node's whole capacity, so waiting cannot help (a job engine may fail the job)."""


def _state(pod: Mapping[str, Any]) -> tuple[Any, Any]:
    return (pod.get("spec") or {}).get("nodeName"), (pod.get("status") or {}).get("phase")


def _holds_place(pod: Mapping[str, Any]) -> bool:
    """Bound and not failed: it counts towards the gang's minMember."""
    bound = bool((pod.get("spec") or {}).get("nodeName"))
    return bound and (pod.get("status") or {}).get("phase") != "Failed"


def _status(ref: GangRef, group: Mapping[str, Any], counts: _Counts, verdict: Verdict | None,
            at: str) -> dict[str, Any]:
    minimum = min_member(group)
    if ref.flavour == VOLCANO:
        return _volcano_status(minimum, counts, verdict, at)
    return _plugins_status(minimum, counts)


def _volcano_status(minimum: int, counts: _Counts, verdict: Verdict | None, since: str
                    ) -> dict[str, Any]:
    """Volcano's: Running once minMember pods are bound (or ended well), Completed once they
    all succeeded, else Pending; an Unschedulable condition saying why it waits, or
    Scheduled."""
    placed = counts.scheduled - counts.failed
    if placed >= minimum:
        phase = "Completed" if counts.succeeded == counts.scheduled else "Running"
    else:
        phase = "Pending"
    if verdict is not None:
        condition = {"type": "Unschedulable", "status": "True", "reason": verdict.reason,
                     "message": verdict.message}
    elif placed >= minimum:
        condition = {"type": "Scheduled", "status": "True",
                     "reason": "tasks in gang are ready to be scheduled", "message": ""}
    else:
        condition = None
    status: dict[str, Any] = {"phase": phase, "running": counts.running,
                              "succeeded": counts.succeeded, "failed": counts.failed}
    status["conditions"] = [{**condition, "lastTransitionTime": since}] if condition else []
    return status


def _plugins_status(minimum: int, counts: _Counts) -> dict[str, Any]:
    """scheduler-plugins' (its PodGroup controller's rules): Pending while fewer than
    minMember pods exist, Scheduling until minMember run, Running, then Finished once
    minMember succeeded, or Failed once one failed with the rest ended or running."""
    running, succeeded, failed = counts.running, counts.succeeded, counts.failed
    if counts.members < minimum:
        phase = "Pending"
    elif failed and failed + running + succeeded >= minimum:
        phase = "Failed"
    elif succeeded >= minimum:
        phase = "Finished"
    elif running + succeeded >= minimum:
        phase = "Running"
    else:
        phase = "Scheduling"
    return {"phase": phase, "running": running, "succeeded": succeeded, "failed": failed}


def _bare(condition: Mapping[str, Any]) -> dict[str, Any]:
    """A condition without its times and session id."""
    return {k: v for k, v in condition.items() if k not in ("lastTransitionTime", "transitionID")}


def _comparable(status: Mapping[str, Any]) -> Any:
    """A status without its times, to tell whether anything but the clock changed."""
    return {**status, "conditions": [_bare(c) for c in status.get("conditions") or ()]}
