"""The clock of a simulation: a scenario's facts and the cluster's own doings, in time order.

The engine's decisions are `World.reconcile()`, the engine's own code; this driver
plays what surrounds it. Timeline facts happen at their `at`; a created pod starts
`startAfter` later, a deleted one is gone `goneAfter` later, a container restarted
in place runs again after the kubelet's CrashLoopBackOff. The engine reconciles
whenever something changed (as its watches would wake it), again at the same
instant while its own writes keep changing things, and at the time each pass asks
to be looked at again (deadlines, timeouts, back-offs). Time jumps from one of
these moments to the next, so hours of a job's life take milliseconds.

A job whose machine makes objects other machines govern (a JobSet's Jobs) is played
with those objects' own machines (`tree.py`): each pass goes over every job of the tree,
parents first, and the instant is settled once no job's pass changed anything.
"""

from __future__ import annotations

import copy
import heapq
import itertools
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from engine.controller.reconcile.children import ReplicaId
from engine.kube.timestamps import format_time
from engine.simulation import kubelet
from engine.simulation.facts import Facts
from engine.simulation.loading import LoadedScenario, TimedFact
from engine.simulation.result import Entry, EntryKind, Simulation, Stop, format_offset
from engine.simulation.tree import Player, adopt, pull_up, push_down
from engine.simulation.world import Pass, World

START = datetime(2030, 1, 1, tzinfo=UTC)
"""The simulated time the job is created at (offsets are counted from it)."""
MAX_PASSES = 50
"""Engine passes at one instant before the machine is judged never to settle."""
DEFAULT_UNTIL_S = 24 * 3600.0

class NeverSettlesError(Exception):
    """The engine kept changing the job at one instant: a machine that loops."""


@dataclass(frozen=True)
class _Due:
    """Something that happens at a time: a timeline fact, or the cluster's own doing to the
    pod with `uid` (a pod replaced since is left alone)."""

    what: Literal["fact", "start", "restart", "gone", "ttl", "succeed"]
    replica: ReplicaId | None = None
    uid: str = ""
    fact: TimedFact | None = None
    path: tuple[ReplicaId, ...] = ()
    """Whose pod (or whose TTL) it is: the replicas leading to its job (`Player.path`)."""


def simulate(scenario: LoadedScenario, *, until_s: float = DEFAULT_UNTIL_S) -> Simulation:
    """Play the scenario to its end, or to `until_s` seconds of simulated time.

    Raises `NeverSettlesError` when the engine keeps changing the job at one instant.
    """
    return _Driver(scenario, until_s).run()


def stored_job(job: Mapping[str, Any], now: datetime) -> dict[str, Any]:
    """The job as the API server stores it when it is created: a copy with the metadata
    the server fills in, and no status."""
    stored = copy.deepcopy(dict(job))
    stored.pop("status", None)
    metadata = stored["metadata"]
    metadata.setdefault("namespace", "default")
    metadata.setdefault("uid", f"simulated-{metadata['name']}")
    metadata.setdefault("generation", 1)
    metadata.setdefault("creationTimestamp", format_time(now))
    return stored


class _Driver:
    """One run: the world, the queue of what is due, and the timeline kept so far."""

    def __init__(self, scenario: LoadedScenario, until_s: float) -> None:
        self.timing = scenario.scenario.pods
        self.machines, self.referenced = scenario.children, scenario.referenced
        self.storage = scenario.storage
        self.root = Player(World(scenario.definition, stored_job(scenario.job, START), START,
                                 keep_native=True, referenced=scenario.referenced))
        self.world = self.root.world
        self.until = START + timedelta(seconds=until_s)
        self.queue: list[tuple[datetime, int, _Due]] = []
        self.order = itertools.count()
        self.entries: list[Entry] = []
        self.pods_created = 0
        self.most_at_once = 0
        for fact in scenario.facts:
            self._at(START + timedelta(seconds=fact.fact.at), _Due("fact", fact=fact))
        self.facts = Facts(self)

    def run(self) -> Simulation:
        self._settle()
        while True:
            when = self._next()
            if when is None:
                return self._end("quiet")
            if when > self.until:
                self._advance_to(self.until)
                self.note("", f"stopped at --until {format_offset(self._seconds())}: more "
                               f"would happen at {format_offset((when - START).total_seconds())}")
                return self._end("until")
            self._advance_to(when)
            if self._happen():
                return self._end("deleted")
            self._settle()
            if self._release_stopped():
                self._settle()

    def _advance_to(self, when: datetime) -> None:
        for player in self.root.walk():
            player.world.advance_to(when)

    # Time ---------------------------------------------------------------------------------

    def _seconds(self) -> float:
        return (self.world.now - START).total_seconds()

    def _at(self, when: datetime, due: _Due) -> None:
        heapq.heappush(self.queue, (when, next(self.order), due))

    def _after(self, seconds: float, due: _Due) -> None:
        self._at(self.world.now + timedelta(seconds=seconds), due)

    def _next(self) -> datetime | None:
        times = [self.queue[0][0]] if self.queue else []
        times += [p.next_look for p in self.root.walk() if p.next_look is not None]
        return min(times) if times else None

    def _happen(self) -> bool:
        """Everything due now, in the order it was planned; True when the job was deleted."""
        while self.queue and self.queue[0][0] <= self.world.now:
            _, _, due = heapq.heappop(self.queue)
            if due.what == "ttl":
                if self._ttl(due):
                    return True
            elif due.fact is not None:
                self.facts.happen(due.fact)
            else:
                self._kubelet(due)
        return False

    def _ttl(self, due: _Due) -> bool:
        """The TTL of a finished job has passed: the engine deletes it (the scenario's job:
        the run ends; a child: in the foreground, as the TTL controller deletes Jobs).
        Whether it was the scenario's job."""
        player = self.root.find(due.path)
        if player is None or player.deleting:
            return False
        ttl = player.world.spec.run_policy.get("ttlSecondsAfterFinished")
        self.note(player.subject(), f"the engine deletes the job: ttlSecondsAfterFinished "
                                     f"({ttl}s) has passed")
        if player is self.root:
            return True
        parent = self.root.find(due.path[:-1])
        assert parent is not None
        parent.world.pods[due.path[-1]]["metadata"]["deletionTimestamp"] = format_time(
            self.world.now)
        return False

    # The engine ---------------------------------------------------------------------------

    def _settle(self) -> None:
        """Reconcile until a pass changes nothing: each change is a write whose watch event
        would wake the engine again. With child objects a pass goes over every job of the
        tree, parents first, each child's status carried up to its parent."""
        for _ in range(MAX_PASSES):
            changed = False
            for player in list(self.root.walk()):
                changed |= self._pass(player)
            if not changed:
                for player in self.root.walk():
                    self._look_again(player)
                    self._set_ttl(player)
                return
        raise NeverSettlesError(
            f"the engine never settles: at {format_offset(self._seconds())} it keeps changing "
            f"the job (state {self.world.state()}) pass after pass")

    def _pass(self, player: Player) -> bool:
        """One reconcile of the player's job, with what its parent changed in its object
        before and its status carried up after; whether it changed anything."""
        parent = self.root.find(player.path[:-1]) if player.path else None
        if parent is not None and push_down(parent, player.path[-1]):
            self._delete_dependents(player)
        if player.deleting:
            return self._collect(player, parent)
        before = player.world.job.get("status") or {}
        result = player.world.reconcile()
        self._note_pass(player, result, before)
        player.next_look = result.next_look
        # What a watch would see: a state, a pod or a status written (an Event wakes no one).
        changed = result.wakes_a_watch(before)
        if parent is not None:
            changed |= pull_up(parent, player.path[-1])
        for made in adopt(player, self.machines, self.referenced, self.storage):
            kind = made.world.job["kind"]
            self.entry(made.subject(), "note", f"{kind} {made.world.job['metadata']['name']} "
                                                f"is run by machine {made.world.definition.name}")
        return changed

    def _delete_dependents(self, player: Player) -> None:
        """A child object's foreground deletion started: the garbage collector deletes what
        it owns first (its pods, gone `goneAfter` later; its own child objects, in turn)."""
        self.entry(player.subject(), "note", "being deleted in the foreground: its pods and "
                                              "children go first")
        world = player.world
        for replica, obj in sorted(world.pods.items()):
            if obj["metadata"].get("deletionTimestamp"):
                continue
            if player.plays_pods:
                kubelet.mark_deleted(obj, world.now)
                self.gone_later(player, replica)
            else:
                obj["metadata"]["deletionTimestamp"] = format_time(world.now)

    def _collect(self, player: Player, parent: Player | None) -> bool:
        """A child being deleted is gone once nothing it owns is left; whether it went."""
        if parent is None or player.world.pods:
            return False
        replica = player.path[-1]
        obj = parent.world.pods.pop(replica)
        del parent.children[replica]
        self.entry(player.subject(), "kubelet", f"{obj['kind']} {obj['metadata']['name']} "
                                                 "gone")
        return True

    def _look_again(self, player: Player) -> None:
        """Keep the last pass's wake-up; one already due would only repeat the pass that
        changed nothing (the engine would spin on it until something changes: worth a
        note)."""
        when = player.next_look
        if when is not None and when <= self.world.now:
            player.next_look = None
            self.note(player.subject(), f"the engine asks to be woken at "
                       f"{format_offset(self._seconds())}, which has already come: in a "
                       "cluster it would reconcile again at once, pass after pass, until "
                       "something changes")

    def _set_ttl(self, player: Player) -> None:
        world = player.world
        ttl = world.spec.run_policy.get("ttlSecondsAfterFinished")
        finished = world.completed_at()
        if player.ttl_set or ttl is None or finished is None or not world.ended():
            return
        player.ttl_set = True
        self._at(finished + timedelta(seconds=int(ttl)), _Due("ttl", path=player.path))

    def _note_pass(self, player: Player, result: Pass, before: Mapping[str, Any]) -> None:
        for fired in result.decision.fired:
            move = fired.transition
            text = f"{move.source} -> {move.target}" if move.source else f"-> {move.target}"
            if move.reason and move.reason != move.target:
                text += f" ({move.reason})"
            self.entry(player.subject(fired.replica), "state", text)
        for change in _condition_changes(before, result.status):
            self.entry(player.subject(), "condition", change)
        for error in result.decision.errors:
            self.note(player.subject(), f"machine evaluation error: {error}")
        self._note_objects(player, result)
        for event in result.events:
            self.entry(player.subject(event.replica), "event",
                        f"{event.type} {event.reason}: {event.message}")

    def _note_objects(self, player: Player, result: Pass) -> None:
        """The pods (or child objects) the pass created and deleted."""
        world = player.world
        if not player.plays_pods:
            for replica, verb in [*((r, "created") for r in result.created),
                                  *((r, "deleted") for r in result.deleted)]:
                obj = world.pods[replica]
                self.entry(player.subject(replica), "object",
                            f"{obj['kind']} {obj['metadata']['name']} {verb}")
            return
        for replica in result.created:
            self.pods_created += 1
            self.entry(player.subject(replica), "pod", "created")
            if self.timing.start_after is not None:
                due = _Due("start", replica, _uid(world, replica), path=player.path)
                self._after(self.timing.start_after, due)
        self.most_at_once = max(self.most_at_once, sum(
            _active_pods(p.world) for p in self.root.walk() if p.plays_pods))
        for replica in result.deleted:
            self.entry(player.subject(replica), "pod", "deleted")
            self.gone_later(player, replica)

    # The cluster on its own ---------------------------------------------------------------

    def _kubelet(self, due: _Due) -> None:
        assert due.replica is not None
        player = self.root.find(due.path)
        pod = None if player is None else player.world.pods.get(due.replica)
        if player is None or pod is None or pod["metadata"]["uid"] != due.uid:
            return
        world = player.world
        subject = player.subject(due.replica)
        deleting = bool(pod["metadata"].get("deletionTimestamp"))
        if due.what == "start" and kubelet.is_waiting(pod):
            kubelet.start(pod, world.now)
            self.entry(subject, "kubelet", "started")
            self._succeed_later(player, due)
        elif due.what == "succeed" and kubelet.is_running(pod) and not deleting:
            kubelet.end(pod, 0, world.now)
            self.entry(subject, "kubelet", "exited 0")
        elif due.what == "restart" and kubelet.ended_in_place(pod) and not deleting:
            kubelet.restart_in_place(pod, world.now)
            count = pod["status"]["containerStatuses"][0]["restartCount"]
            self.entry(subject, "kubelet", f"restarted in place (restartCount {count})")
            self._succeed_later(player, due)
        elif due.what == "gone" and deleting:
            if player.deleting or world.finish_deletion(due.replica):
                world.pods.pop(due.replica, None)
                self.entry(subject, "kubelet", "pod gone")
                return
            code = pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"]
            self.entry(subject, "kubelet", f"stopped (exit {code}); the pod stays until "
                                            "the engine has seen it end")
            player.stopped.append((due.replica, due.uid))

    def _succeed_later(self, player: Player, due: _Due) -> None:
        if self.timing.succeed_after is not None:
            self._after(self.timing.succeed_after,
                        _Due("succeed", due.replica, due.uid, path=player.path))

    def _release_stopped(self) -> bool:
        """The pods the kubelet stopped are gone once the engine has seen them end (its
        tracking finalizer released); whether any went."""
        went = False
        for player in self.root.walk():
            for replica, uid in player.stopped:
                pod = player.world.pods.get(replica)
                if pod is not None and pod["metadata"]["uid"] == uid:
                    player.world.finish_deletion(replica)
                    self.entry(player.subject(replica), "kubelet", "pod gone")
                    went = True
            player.stopped.clear()
        return went

    def restart_later(self, player: Player, replica: ReplicaId, delay: float) -> None:
        """The kubelet restarts the pod's ended container in place after `delay` seconds."""
        self._after(delay, _Due("restart", replica, _uid(player.world, replica), path=player.path))

    def gone_later(self, player: Player, replica: ReplicaId) -> None:
        """The pod being deleted is gone `goneAfter` from now."""
        self._after(self.timing.gone_after,
                    _Due("gone", replica, _uid(player.world, replica), path=player.path))

    # Output -------------------------------------------------------------------------------

    def entry(self, subject: str, kind: EntryKind, text: str) -> None:
        self.entries.append(Entry(self._seconds(), subject, kind, text))

    def note(self, subject: str, text: str) -> None:
        self.entry(subject, "note", text)

    def _end(self, stopped: Stop) -> Simulation:
        return Simulation(tuple(self.entries), self._seconds(), stopped, self.world,
                          self.pods_created, self.most_at_once,
                          {p.path: p.world for p in self.root.walk()})


def _active_pods(world: World) -> int:
    """Pods that have not ended and are not being deleted (the Job API's `active`)."""
    return sum(1 for pod in world.pods.values() if kubelet.is_live(pod))


def _uid(world: World, replica: ReplicaId) -> str:
    return str(world.pods[replica]["metadata"]["uid"])


def _condition_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The conditions a pass set (`Running True (Reason)`), then those it removed (a state's
    `moveFrom` or `replaces`: `Running removed`)."""
    old = {c["type"]: (c["status"], c.get("reason")) for c in before.get("conditions") or []}
    now = after.get("conditions") or []
    changes = [f"{c['type']} {c['status']} ({c.get('reason', '')})" for c in now
               if old.get(c["type"]) != (c["status"], c.get("reason"))]
    kept = {c["type"] for c in now}
    return changes + [f"{gone} removed" for gone in old if gone not in kept]
