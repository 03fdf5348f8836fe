"""The facts of a scenario's timeline, happening to the simulated world: a pod's container
exits, a pod is deleted or evicted, a node is lost, a pod starts, the job is suspended,
resumed or patched.

A pod fact names its pod by the replicas down to it (`Worker-0`; `workers-0/Job-1`, a pod
of a child object's own job): it happens to that job's world, or, where there is no such
pod (or one it cannot happen to), a note says so. The driver (`run.py`) keeps the clock:
what a fact sets going (a restart in place, a pod going) is scheduled through its `Stage`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol

from engine.controller.reconcile.children import ReplicaId
from engine.simulation import kubelet
from engine.simulation.edits import apply_patch, set_suspend
from engine.simulation.loading import TimedFact
from engine.simulation.result import EntryKind
from engine.simulation.tree import Player
from engine.simulation.world import World


class Stage(Protocol):
    """What the facts need of the driver: the jobs, the timeline, and the clock."""

    root: Player
    world: World

    def entry(self, subject: str, kind: EntryKind, text: str) -> None: ...
    def note(self, subject: str, text: str) -> None: ...
    def gone_later(self, player: Player, replica: ReplicaId) -> None: ...
    def restart_later(self, player: Player, replica: ReplicaId, delay: float) -> None: ...


class Facts:
    """Makes the timeline's facts happen on the stage."""

    def __init__(self, stage: Stage) -> None:
        self.stage = stage
        self.facts: dict[str, Callable[[TimedFact], None]] = {
            "exits": self._exits, "deleted": self._deleted, "evicted": self._evicted,
            "lost": self._lost,
            "starts": self._starts, "nodeLost": self._node_lost, "suspend": self._suspend,
            "patch": self._patch,
        }

    def happen(self, timed: TimedFact) -> None:
        """The fact happens now (or a note says why it cannot)."""
        kind = timed.fact.kind
        if kind is None:
            self.stage.entry("", "fact", "time passes")
            return
        self.facts[kind](timed)

    def _pod(self, timed: TimedFact, text: str, usable: Callable[[kubelet.Pod], bool],
             needs: str) -> tuple[Player, kubelet.Pod] | None:
        """The fact's pod and the job it belongs to, when the fact can happen to it (else a
        note says why not)."""
        assert timed.replica is not None
        subject = "".join(f"{r}/" for r in timed.above) + str(timed.replica)
        self.stage.entry(subject, "fact", text)
        player = self.stage.root.find(timed.above)
        pod = None if player is None else player.world.pods.get(timed.replica)
        if player is not None and pod is not None and usable(pod):
            return player, pod
        why = "has no pod" if pod is None else f"has no pod that {needs}"
        self.stage.note(subject, f"ignored ({timed.position}): {subject} {why}")
        return None

    def _exits(self, timed: TimedFact) -> None:
        fact = timed.fact
        assert fact.exits is not None and timed.replica is not None
        text = f"exits {fact.exits}" + (f" ({fact.reason})" if fact.reason else "")
        found = self._pod(timed, text,
                          lambda p: kubelet.is_running(p) or kubelet.is_waiting(p),
                          "runs or waits to start")
        if found is None:
            return
        player, pod = found
        if kubelet.is_waiting(pod):
            kubelet.start(pod, self.stage.world.now)
        if kubelet.end(pod, fact.exits, self.stage.world.now, fact.reason or ""):
            self.stage.restart_later(player, timed.replica, kubelet.restart_delay(pod))

    def _deleted(self, timed: TimedFact) -> None:
        self._delete(timed, "pod deleted by someone", kubelet.mark_deleted)

    def _evicted(self, timed: TimedFact) -> None:
        self._delete(timed, "pod evicted (condition DisruptionTarget)", kubelet.mark_evicted)

    def _delete(self, timed: TimedFact, text: str,
                how: Callable[[kubelet.Pod, datetime], None]) -> None:
        found = self._pod(timed, text, lambda p: not p["metadata"].get("deletionTimestamp"),
                          "is not being deleted already")
        if found is not None and timed.replica is not None:
            how(found[1], self.stage.world.now)
            self.stage.gone_later(found[0], timed.replica)

    def _lost(self, timed: TimedFact) -> None:
        found = self._pod(timed, "its node is lost", _on_ready_node, "runs on a Ready node")
        if found is not None:
            kubelet.lose(found[1])

    def _starts(self, timed: TimedFact) -> None:
        found = self._pod(timed, "starts", kubelet.is_waiting, "waits to start")
        if found is not None:
            kubelet.start(found[1], self.stage.world.now)

    def _node_lost(self, _timed: TimedFact) -> None:
        lost = [(player, replica) for player in self.stage.root.walk() if player.plays_pods
                for replica, pod in sorted(player.world.pods.items()) if _on_ready_node(pod)]
        named = ", ".join(player.subject(replica) for player, replica in lost)
        self.stage.entry("node", "fact",
                         f"the node is lost with the pods of {named or 'no replica'}")
        for player, replica in lost:
            kubelet.lose(player.world.pods[replica])

    def _suspend(self, timed: TimedFact) -> None:
        value = bool(timed.fact.suspend)
        self.stage.entry("job", "fact", "suspended" if value else "resumed")
        set_suspend(self.stage.world, value)

    def _patch(self, timed: TimedFact) -> None:
        assert timed.fact.patch is not None
        self.stage.entry("job", "fact", f"patched: {_compact(timed.fact.patch)}")
        apply_patch(self.stage.world, timed.fact.patch)


def _on_ready_node(pod: kubelet.Pod) -> bool:
    finished = pod["status"].get("phase") in ("Succeeded", "Failed")
    return not finished and kubelet.node_ready(str(pod["spec"].get("nodeName") or ""))


def _compact(value: Any) -> str:
    if isinstance(value, Mapping):
        return "{" + ", ".join(f"{k}: {_compact(v)}" for k, v in value.items()) + "}"
    return "null" if value is None else str(value)
