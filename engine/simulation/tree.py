"""A simulated job and the jobs its machine made: one world per job, as one cluster holds them.

A machine with spec.child (a JobSet's Jobs, a TrainJob's JobSet) makes objects that
other machines govern. In a cluster the engine runs each of them as a job of its own,
and the parent reads what their machines write into their status. A simulation does the
same with one `World` per object: a `Player` is one world and where it sits in the tree;
`adopt` gives each child object the parent made a world of its child machine, `push_down`
carries what the parent changed in a child (the forced fields, its deletion) into that
world, and `pull_up` writes the status the child's machine wrote into the parent's copy
of the object, where the parent's next pass observes it. Each world keeps its own
record, pods and wake-ups, so every level runs the engine's own decisions.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.native_status import is_native
from engine.definition import CompiledDefinition
from engine.kube.timestamps import format_time
from engine.simulation.stored import Storage
from engine.simulation.world import ReferenceKey, World

Machines = Mapping[tuple[str, str], CompiledDefinition]
"""The machines of the child kinds, by the (apiVersion, kind) each governs."""


@dataclass(eq=False)
class Player:
    """One job of the simulation: its world, the replicas that lead to it from the job the
    scenario names (() for that one), and what the driver keeps of it between passes."""

    world: World
    path: tuple[ReplicaId, ...] = ()
    children: dict[ReplicaId, Player] = field(default_factory=dict)
    next_look: datetime | None = None
    """When the engine asked to look at this job again (None: only when something changes)."""
    ttl_set: bool = False
    deleting: bool = False
    """Its object is being deleted in the foreground: its own pods and children go first,
    and the engine no longer runs its machine (a job being deleted creates nothing)."""
    stopped: list[tuple[ReplicaId, str]] = field(default_factory=list)
    """Pods the kubelet stopped that stay until the engine has seen them end (by uid)."""

    @property
    def plays_pods(self) -> bool:
        """Whether the job's replicas are pods (else child objects of another machine)."""
        return self.world.definition.child is None

    def subject(self, replica: ReplicaId | str | None = None) -> str:
        """How the timeline names the job (`job`) or one of its replicas (`Worker-0`); below
        the scenario's job, after the replicas that lead to it (`workers-0/Job-1`)."""
        return "".join(f"{r}/" for r in self.path) + (str(replica) if replica else "job")

    def walk(self) -> Iterator[Player]:
        """This job, then the jobs below it, parents first."""
        yield self
        for _, child in sorted(self.children.items()):
            yield from child.walk()

    def find(self, path: tuple[ReplicaId, ...]) -> Player | None:
        """The job the replicas of `path` lead to from this one, if it exists now."""
        here: Player | None = self
        for replica in path:
            here = None if here is None else here.children.get(replica)
        return here


def written_status(world: World) -> dict[str, Any]:
    """The job's status as its machine writes it where the API shows it: the kind's own
    status for a Native layout (a Job's, a JobSet's), else the engine's."""
    status = world.native if is_native(world.definition) else world.job.get("status") or {}
    return copy.deepcopy(dict(status))


def adopt(parent: Player, machines: Machines,
          referenced: Mapping[ReferenceKey, Mapping[str, Any]], storage: Storage
          ) -> list[Player]:
    """Give each child object of `parent` that has no world yet one of its kind's machine
    (the object stored as the API server stores it: `storage`), and forget the worlds of
    children that are gone; the new players."""
    store = parent.world.pods
    for replica, player in list(parent.children.items()):
        if store.get(replica, {}).get("metadata", {}).get("uid") != player.world.job[
                "metadata"]["uid"]:
            del parent.children[replica]
    made: list[Player] = []
    if parent.plays_pods:
        return made
    for replica, obj in sorted(store.items()):
        if replica in parent.children:
            continue
        machine = machines[(obj["apiVersion"], obj["kind"])]
        stored, _ = storage.stored(obj)  # a refusal would be the create's: made as asked
        obj.clear()
        obj.update(stored)
        job = copy.deepcopy(obj)
        metadata = job["metadata"]
        metadata.setdefault("generation", 1)
        metadata.setdefault("creationTimestamp", format_time(parent.world.now))
        job.pop("status", None)
        world = World(machine, job, parent.world.now, keep_native=True, referenced=referenced)
        player = parent.children[replica] = Player(world, (*parent.path, replica))
        made.append(player)
    return made


def push_down(parent: Player, replica: ReplicaId) -> bool:
    """Carry what the parent changed in a child's object into the child's world: its spec
    (the machine's forced fields: suspend), labels and annotations, and the start of its
    deletion. Whether its deletion started now."""
    child = parent.children[replica]
    obj, job = parent.world.pods[replica], child.world.job
    if obj.get("spec") != job.get("spec"):
        child.world.edit_spec(lambda spec: _replace(spec, obj.get("spec") or {}))
    for key in ("labels", "annotations"):
        if obj["metadata"].get(key) != job["metadata"].get(key):
            job["metadata"][key] = copy.deepcopy(obj["metadata"].get(key))
    deleted = obj["metadata"].get("deletionTimestamp")
    if deleted and not child.deleting:
        job["metadata"]["deletionTimestamp"] = deleted
        child.deleting = True
        return True
    return False


def pull_up(parent: Player, replica: ReplicaId) -> bool:
    """Write the status the child's machine wrote into the parent's copy of the object;
    whether it changed (a watch event that wakes the parent)."""
    obj = parent.world.pods.get(replica)
    status = written_status(parent.children[replica].world)
    if obj is None or obj.get("status") == status:
        return False
    obj["status"] = status
    return True


def _replace(target: dict[str, Any], value: Mapping[str, Any]) -> None:
    target.clear()
    target.update(copy.deepcopy(dict(value)))
