"""The clock of a simulation: a scenario's facts and the cluster's own doings, in time order.

The engine's decisions are `World.reconcile()`, the engine's own code; this driver
plays what surrounds it. Timeline facts happen at their `at`; a created pod starts
`startAfter` later, a deleted one is gone `goneAfter` later, a container restarted
in place runs again after the kubelet's CrashLoopBackOff. The engine reconciles
whenever something changed (as its watches would wake it), again at the same
instant while its own writes keep changing things, and at the time each pass asks
to be looked at again (deadlines, timeouts, back-offs). Time jumps from one of
these moments to the next, so hours of a job's life take milliseconds.
"""

from __future__ import annotations

import copy
import heapq
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Literal

from engine.controller.reconcile.children import ReplicaId
from engine.kube.timestamps import format_time
from engine.simulation import kubelet
from engine.simulation.edits import apply_patch, set_suspend
from engine.simulation.loading import LoadedScenario, TimedFact
from engine.simulation.result import Entry, EntryKind, Simulation, Stop, format_offset
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
        self.world = World(scenario.definition, stored_job(scenario.job, START), START)
        self.until = START + timedelta(seconds=until_s)
        self.queue: list[tuple[datetime, int, _Due]] = []
        self.order = itertools.count()
        self.entries: list[Entry] = []
        self.next_look: datetime | None = None
        self.ttl_set = False
        self.pods_created = 0
        self.most_at_once = 0
        self.stopped: list[tuple[ReplicaId, str]] = []
        for fact in scenario.facts:
            self._at(START + timedelta(seconds=fact.fact.at), _Due("fact", fact=fact))
        self.facts: dict[str, Callable[[TimedFact], None]] = {
            "exits": self._exits, "deleted": self._deleted, "evicted": self._evicted,
            "lost": self._lost,
            "starts": self._starts, "nodeLost": self._node_lost, "suspend": self._suspend,
            "patch": self._patch,
        }

    def run(self) -> Simulation:
        self._settle()
        while True:
            when = self._next()
            if when is None:
                return self._end("quiet")
            if when > self.until:
                self.world.advance_to(self.until)
                self._note("", f"stopped at --until {format_offset(self._seconds())}: more "
                               f"would happen at {format_offset((when - START).total_seconds())}")
                return self._end("until")
            self.world.advance_to(when)
            if self._happen():
                return self._end("deleted")
            self._settle()
            if self._release_stopped():
                self._settle()

    # Time ---------------------------------------------------------------------------------

    def _seconds(self) -> float:
        return (self.world.now - START).total_seconds()

    def _at(self, when: datetime, due: _Due) -> None:
        heapq.heappush(self.queue, (when, next(self.order), due))

    def _after(self, seconds: float, due: _Due) -> None:
        self._at(self.world.now + timedelta(seconds=seconds), due)

    def _next(self) -> datetime | None:
        times = [self.queue[0][0]] if self.queue else []
        if self.next_look is not None:
            times.append(self.next_look)
        return min(times) if times else None

    def _happen(self) -> bool:
        """Everything due now, in the order it was planned; True when the job was deleted."""
        while self.queue and self.queue[0][0] <= self.world.now:
            _, _, due = heapq.heappop(self.queue)
            if due.what == "ttl":
                ttl = self.world.spec.run_policy.get("ttlSecondsAfterFinished")
                self._note("job", f"the engine deletes the job: ttlSecondsAfterFinished "
                                  f"({ttl}s) has passed")
                return True
            if due.fact is not None:
                self._fact(due.fact)
            else:
                self._kubelet(due)
        return False

    # The engine ---------------------------------------------------------------------------

    def _settle(self) -> None:
        """Reconcile until a pass changes nothing: each change is a write whose watch event
        would wake the engine again."""
        for _ in range(MAX_PASSES):
            before = self.world.job.get("status") or {}
            result = self.world.reconcile()
            self._note_pass(result, before)
            if not (result.changed or result.status != before):
                self._look_again(result.next_look)
                self._set_ttl()
                return
        raise NeverSettlesError(
            f"the engine never settles: at {format_offset(self._seconds())} it keeps changing "
            f"the job (state {self.world.state()}) pass after pass")

    def _look_again(self, when: datetime | None) -> None:
        """Keep the pass's wake-up; one already due would only repeat the pass that changed
        nothing (the engine would spin on it until something changes: worth a note)."""
        self.next_look = when
        if when is not None and when <= self.world.now:
            self.next_look = None
            self._note("job", f"the engine asks to be woken at {format_offset(self._seconds())}"
                              ", which has already come: in a cluster it would reconcile "
                              "again at once, pass after pass, until something changes")

    def _set_ttl(self) -> None:
        ttl = self.world.spec.run_policy.get("ttlSecondsAfterFinished")
        finished = self.world.completed_at()
        if self.ttl_set or ttl is None or finished is None or not self.world.ended():
            return
        self.ttl_set = True
        self._at(finished + timedelta(seconds=int(ttl)), _Due("ttl"))

    def _note_pass(self, result: Pass, before: Mapping[str, Any]) -> None:
        for fired in result.decision.fired:
            move = fired.transition
            text = f"{move.source} -> {move.target}" if move.source else f"-> {move.target}"
            if move.reason and move.reason != move.target:
                text += f" ({move.reason})"
            self._entry(str(fired.replica) if fired.replica else "job", "state", text)
        for change in _condition_changes(before, result.status):
            self._entry("job", "condition", change)
        for error in result.decision.errors:
            self._note("job", f"machine evaluation error: {error}")
        for replica in result.created:
            self.pods_created += 1
            self._entry(str(replica), "pod", "created")
            if self.timing.start_after is not None:
                due = _Due("start", replica, _uid(self.world, replica))
                self._after(self.timing.start_after, due)
        self.most_at_once = max(self.most_at_once, _active_pods(self.world))
        for replica in result.deleted:
            self._entry(str(replica), "pod", "deleted")
            self._gone_later(replica)
        for event in result.events:
            self._entry(event.replica or "job", "event",
                        f"{event.type} {event.reason}: {event.message}")

    # The cluster on its own ---------------------------------------------------------------

    def _kubelet(self, due: _Due) -> None:
        assert due.replica is not None
        pod = self.world.pods.get(due.replica)
        if pod is None or pod["metadata"]["uid"] != due.uid:
            return
        subject, deleting = str(due.replica), bool(pod["metadata"].get("deletionTimestamp"))
        if due.what == "start" and kubelet.is_waiting(pod):
            kubelet.start(pod, self.world.now)
            self._entry(subject, "kubelet", "started")
            if self.timing.succeed_after is not None:
                self._after(self.timing.succeed_after, _Due("succeed", due.replica, due.uid))
        elif due.what == "succeed" and kubelet.is_running(pod) and not deleting:
            kubelet.end(pod, 0, self.world.now)
            self._entry(subject, "kubelet", "exited 0")
        elif due.what == "restart" and kubelet.ended_in_place(pod) and not deleting:
            kubelet.restart_in_place(pod, self.world.now)
            count = pod["status"]["containerStatuses"][0]["restartCount"]
            self._entry(subject, "kubelet", f"restarted in place (restartCount {count})")
            if self.timing.succeed_after is not None:
                self._after(self.timing.succeed_after, _Due("succeed", due.replica, due.uid))
        elif due.what == "gone" and deleting:
            if self.world.finish_deletion(due.replica):
                self._entry(subject, "kubelet", "pod gone")
                return
            code = pod["status"]["containerStatuses"][0]["state"]["terminated"]["exitCode"]
            self._entry(subject, "kubelet", f"stopped (exit {code}); the pod stays until "
                                            "the engine has seen it end")
            self.stopped.append((due.replica, due.uid))

    def _release_stopped(self) -> bool:
        """The pods the kubelet stopped are gone once the engine has seen them end (its
        tracking finalizer released); whether any went."""
        went = False
        for replica, uid in self.stopped:
            pod = self.world.pods.get(replica)
            if pod is not None and pod["metadata"]["uid"] == uid:
                self.world.finish_deletion(replica)
                self._entry(str(replica), "kubelet", "pod gone")
                went = True
        self.stopped.clear()
        return went

    def _gone_later(self, replica: ReplicaId) -> None:
        self._after(self.timing.gone_after, _Due("gone", replica, _uid(self.world, replica)))

    # Timeline facts -----------------------------------------------------------------------

    def _fact(self, timed: TimedFact) -> None:
        kind = timed.fact.kind
        if kind is None:
            self._entry("", "fact", "time passes")
            return
        self.facts[kind](timed)

    def _pod(self, timed: TimedFact, text: str, usable: Callable[[kubelet.Pod], bool],
             needs: str) -> kubelet.Pod | None:
        """The fact's pod, when the fact can happen to it (else a note says why not)."""
        assert timed.replica is not None
        subject = str(timed.replica)
        self._entry(subject, "fact", text)
        pod = self.world.pods.get(timed.replica)
        if pod is not None and usable(pod):
            return pod
        why = "has no pod" if pod is None else f"has no pod that {needs}"
        self._note(subject, f"ignored ({timed.position}): {subject} {why}")
        return None

    def _exits(self, timed: TimedFact) -> None:
        fact = timed.fact
        assert fact.exits is not None
        text = f"exits {fact.exits}" + (f" ({fact.reason})" if fact.reason else "")
        pod = self._pod(timed, text, lambda p: kubelet.is_running(p) or kubelet.is_waiting(p),
                        "runs or waits to start")
        if pod is None:
            return
        if kubelet.is_waiting(pod):
            kubelet.start(pod, self.world.now)
        if kubelet.end(pod, fact.exits, self.world.now, fact.reason or ""):
            self._after(kubelet.restart_delay(pod),
                     _Due("restart", timed.replica, pod["metadata"]["uid"]))

    def _deleted(self, timed: TimedFact) -> None:
        self._delete(timed, "pod deleted by someone", kubelet.mark_deleted)

    def _evicted(self, timed: TimedFact) -> None:
        self._delete(timed, "pod evicted (condition DisruptionTarget)", kubelet.mark_evicted)

    def _delete(self, timed: TimedFact, text: str,
                how: Callable[[kubelet.Pod, datetime], None]) -> None:
        pod = self._pod(timed, text, lambda p: not p["metadata"].get("deletionTimestamp"),
                        "is not being deleted already")
        if pod is not None and timed.replica is not None:
            how(pod, self.world.now)
            self._gone_later(timed.replica)

    def _lost(self, timed: TimedFact) -> None:
        pod = self._pod(timed, "its node is lost", _on_ready_node, "runs on a Ready node")
        if pod is not None:
            kubelet.lose(pod)

    def _starts(self, timed: TimedFact) -> None:
        pod = self._pod(timed, "starts", kubelet.is_waiting, "waits to start")
        if pod is not None:
            kubelet.start(pod, self.world.now)

    def _node_lost(self, _timed: TimedFact) -> None:
        lost = [r for r, p in sorted(self.world.pods.items()) if _on_ready_node(p)]
        self._entry("node", "fact", "the node is lost with the pods of "
                                    f"{', '.join(map(str, lost)) or 'no replica'}")
        for replica in lost:
            kubelet.lose(self.world.pods[replica])

    def _suspend(self, timed: TimedFact) -> None:
        value = bool(timed.fact.suspend)
        self._entry("job", "fact", "suspended" if value else "resumed")
        set_suspend(self.world, value)

    def _patch(self, timed: TimedFact) -> None:
        assert timed.fact.patch is not None
        self._entry("job", "fact", f"patched: {_compact(timed.fact.patch)}")
        apply_patch(self.world, timed.fact.patch)

    # Output -------------------------------------------------------------------------------

    def _entry(self, subject: str, kind: EntryKind, text: str) -> None:
        self.entries.append(Entry(self._seconds(), subject, kind, text))

    def _note(self, subject: str, text: str) -> None:
        self._entry(subject, "note", text)

    def _end(self, stopped: Stop) -> Simulation:
        return Simulation(tuple(self.entries), self._seconds(), stopped, self.world,
                          self.pods_created, self.most_at_once)


def _active_pods(world: World) -> int:
    """Pods that have not ended and are not being deleted (the Job API's `active`)."""
    return sum(1 for pod in world.pods.values() if kubelet.is_live(pod))


def _uid(world: World, replica: ReplicaId) -> str:
    return str(world.pods[replica]["metadata"]["uid"])


def _on_ready_node(pod: kubelet.Pod) -> bool:
    finished = pod["status"].get("phase") in ("Succeeded", "Failed")
    return not finished and kubelet.node_ready(str(pod["spec"].get("nodeName") or ""))


def _condition_changes(before: Mapping[str, Any], after: Mapping[str, Any]) -> list[str]:
    """The conditions a pass set (`Running True (Reason)`), then those it removed (a state's
    `moveFrom` or `replaces`: `Running removed`)."""
    old = {c["type"]: (c["status"], c.get("reason")) for c in before.get("conditions") or []}
    now = after.get("conditions") or []
    changes = [f"{c['type']} {c['status']} ({c.get('reason', '')})" for c in now
               if old.get(c["type"]) != (c["status"], c.get("reason"))]
    kept = {c["type"] for c in now}
    return changes + [f"{gone} removed" for gone in old if gone not in kept]


def _compact(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_compact(v)}" for k, v in value.items()) + "}"
    return "null" if value is None else str(value)
