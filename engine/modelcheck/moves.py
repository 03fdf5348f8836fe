"""What the world outside the engine can do next, and which worlds count as the same situation.

A move is one outside fact: a pod starts, ends with a code, is lost with its
node, is deleted by someone, finishes being deleted (stopped first, where the engine
judges deleted pods once they ended); the kubelet restarts an
ended container in place; the job is suspended or resumed, or edited into an
invalid spec; time passes until the engine's next wake-up. After each move
the engine reconciles until it settles, so the situations explored are the
settled ones. Two worlds are the same situation when the machines and the pods
are in the same states, whatever the timestamps say.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from engine.controller.reconcile.children import ReplicaId, attempt_of
from engine.controller.reconcile.observe import deadline_of
from engine.modelcheck.child_status import child_situation
from engine.modelcheck.referenced import created_words
from engine.simulation import kubelet
from engine.simulation.world import ReferenceKey, World


@dataclass(frozen=True)
class Move:
    """One outside fact. `rescue` marks those that end a job whatever its machine says
    (a deadline running out, a spec made invalid): a dead end is judged without them.
    `fault` marks disruptions (a lost node, a deleted pod, a suspension, an invalid
    spec), of which a trace has at most `Bounds.faults`."""

    label: str
    apply: Callable[[World], None]
    rescue: bool = False
    fault: bool = False


ReplicaMoves = Callable[[World], Iterator[Move]]
"""What the replicas' objects can do next, when they are not pods (`children.ChildMoves`)."""


def moves(world: World, codes: tuple[int, ...], next_look: datetime | None, *,
          rescues: bool = True, replica_moves: ReplicaMoves | None = None,
          edits: bool = True, later: Mapping[ReferenceKey, Mapping[str, Any]] | None = None
          ) -> Iterator[Move]:
    """Every outside fact that can happen in `world` now.

    Pods that wait start together, deletions complete together and the kubelet restarts
    ended containers together: the machines count pods, so the order of such like events
    tells nothing new, and leaving it out keeps the search small. Each pod ends, is lost
    and is deleted on its own. With `replica_moves` the replicas are child objects, which
    move as it says; without `edits` the job's spec is left alone. Each object of `later`
    the world does not hold yet (one the job names, missing at first) is created.
    """
    for key, obj in sorted((later or {}).items()):
        if key not in world.referenced:
            yield Move(created_words(obj), _created(key, obj))
    if replica_moves is not None:
        yield from replica_moves(world)
        yield from _job_moves(world, next_look, rescues=rescues, edits=edits)
        return
    pods = sorted(world.pods.items())
    together = [
        ("every waiting pod starts", [r for r, p in pods if kubelet.is_waiting(p)], kubelet.start),
        ("the kubelet restarts every ended container in place",
         [r for r, p in pods if kubelet.ended_in_place(p)], kubelet.restart_in_place),
        ("the kubelet finishes every deletion (stops a pod not ended yet, else it is gone)"
         if world.spec.judge_deleted_when_ended else "every pod being deleted is gone",
         [r for r, p in pods if p["metadata"].get("deletionTimestamp")], None),
    ]
    for label, replicas, change in together:
        if replicas:
            yield Move(f"{label} ({', '.join(map(str, replicas))})", _all(replicas, change))
    for replica, pod in pods:
        if not kubelet.is_running(pod):
            continue
        name = str(replica)
        for code in codes:
            yield Move(f"{name} exits {code}", _exits(replica, code))
        if pod["spec"].get("nodeName") != kubelet.LOST_NODE:
            yield Move(f"{name}'s node is lost", _pod_move(replica, _lose), fault=True)
            yield Move(f"{name}'s pod is deleted", _pod_move(replica, kubelet.mark_deleted),
                       fault=True)
    yield from _job_moves(world, next_look, rescues=rescues, edits=edits)


def _all(replicas: list[ReplicaId], change: Callable[[kubelet.Pod, datetime], object] | None
         ) -> Callable[[World], None]:
    def apply(world: World) -> None:
        for replica in replicas:
            if change is None:
                world.finish_deletion(replica)
            else:
                change(world.pods[replica], world.now)
    return apply


def _job_moves(world: World, next_look: datetime | None, *, rescues: bool,
               edits: bool) -> Iterator[Move]:
    run_policy = world.spec.run_policy
    if edits and not world.ended():
        suspended = bool(run_policy.get("suspend"))
        yield Move("the job is resumed" if suspended else "the job is suspended",
                   _suspend(not suspended), fault=not suspended)
    if edits and rescues and not world.spec.error and not world.ended():
        yield Move("the job's spec is edited into an invalid one", _invalidate, rescue=True,
                   fault=True)
    if next_look is not None and next_look > world.now:
        deadline = deadline_of(world.spec, (world.job.get("status") or {}).get("startTime"))
        crosses = deadline is not None and world.now < deadline <= next_look
        seconds = (next_look - world.now).total_seconds()
        if rescues or not crosses:
            yield Move(f"{seconds:g}s pass", _time_to(next_look), rescue=crosses)


def _created(key: ReferenceKey, obj: Mapping[str, Any]) -> Callable[[World], None]:
    def apply(world: World) -> None:
        world.referenced = {**world.referenced, key: obj}  # copies share the old one
    return apply


def _lose(pod: kubelet.Pod, _now: datetime) -> None:
    kubelet.lose(pod)


def _pod_move(replica: ReplicaId, change: Callable[[kubelet.Pod, datetime], object]
              ) -> Callable[[World], None]:
    def apply(world: World) -> None:
        change(world.pods[replica], world.now)
    return apply


def _exits(replica: ReplicaId, code: int) -> Callable[[World], None]:
    def apply(world: World) -> None:
        kubelet.end(world.pods[replica], code, world.now)
    return apply


def _suspend(value: bool) -> Callable[[World], None]:
    def apply(world: World) -> None:
        world.edit_spec(lambda spec: _at(spec, world.definition.governs.run_policy).update(
            suspend=value))
    return apply


def _invalidate(world: World) -> None:
    governs = world.definition.governs
    def change(spec: dict[str, object]) -> None:
        if governs.replica_spec is not None:  # the one replica spec: its template goes
            _at(spec, governs.replica_spec)["template"] = "not a pod template"
            return
        *parents, last = governs.replica_specs.split(".")
        _at(spec, ".".join(parents))[last] = "not a map of replica specs"
    world.edit_spec(change)


def _at(spec: dict[str, Any], dotted: str) -> dict[str, Any]:
    """The map at a `spec.`-rooted dotted path of the job, made where missing."""
    here = spec
    for part in dotted.split(".")[1:]:
        here = here.setdefault(part, {})
    return here


def _time_to(when: datetime) -> Callable[[World], None]:
    def apply(world: World) -> None:
        world.advance_to(when)
    return apply


RESTARTS_TOLD_APART = 3
"""In-place restarts of one pod beyond this many are one situation: once a job ends, the
kubelet may restart an OnFailure container for ever, and nothing counts them any more."""


def situation(world: World) -> Hashable:
    """What two worlds must share to be the same situation for the machines. Every world
    whose job has ended is one situation per terminal state: whether it stays ended is
    checked one move deep from there, and nothing after the end matters more."""
    status = world.job.get("status") or {}
    record = world.record
    if world.ended():
        return record.state
    objects = _pod_situation if world.definition.child is None else child_situation
    pods = tuple(sorted(
        (str(replica), attempt_of(pod) == record.restart_attempt, objects(pod))
        for replica, pod in world.pods.items()))
    deadline = deadline_of(world.spec, status.get("startTime"))
    return (
        record.state,
        tuple(sorted((str(r), s) for r, s in record.replica_states.items())),
        record.restarts,
        tuple(sorted((str(r), c.count) for r, c in record.replica_restarts.items())),
        # As a pod's restarts: an Always pod (a ReplicaSet's) restarts for ever.
        tuple(sorted((str(r), min(e.seen, RESTARTS_TOLD_APART))
                     for r, e in record.in_place_ends.items())),
        tuple(sorted(str(r) for r in record.replica_timers)),
        record.restart_attempt,
        pods,
        bool(world.spec.run_policy.get("suspend")),
        world.spec.error != "",
        deadline is not None and world.now >= deadline,
    ) + ((tuple(sorted(world.referenced)),) if world.definition.references else ())


def _pod_situation(pod: kubelet.Pod) -> Hashable:
    container = (pod["status"].get("containerStatuses") or [{}])[0]
    state = container.get("state") or {}
    terminated = state.get("terminated") or {}
    return (
        pod["status"].get("phase"),
        next(iter(state), ""),
        terminated.get("exitCode"),
        min(int(container.get("restartCount", 0)), RESTARTS_TOLD_APART),
        pod["spec"].get("nodeName") == kubelet.LOST_NODE,
        bool(pod["metadata"].get("deletionTimestamp")),
    )
