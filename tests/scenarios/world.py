"""A fake pod world that drives `decide` over several reconciles, the way a reconcile does.

Each `World.reconcile()` reads the record back from the job's status, observes
the world's pods, decides, and stores the status it built on the job: status is
the write-ahead log, so every scenario also proves the record survives the
round trip. Pure: no server, and time moves only when a test says so.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from engine.api.conditions import get_condition
from engine.controller.children import ReplicaId
from engine.controller.decide import Decision, decide
from engine.controller.jobspec import read_job_spec
from engine.controller.notices import Notice, notices_for
from engine.controller.observe import PodFacts, job_observations, observe_pod
from engine.controller.record import read_record
from engine.controller.status import build_status
from engine.controller.timestamps import format_time
from engine.definition import CompiledDefinition, load_definitions

MACHINES = Path(__file__).resolve().parents[2] / "machines"
DEFINITIONS: dict[str, CompiledDefinition] = {
    compiled.definition.spec.governs.kind: compiled
    for compiled in load_definitions([MACHINES])
}
T0 = datetime(2027, 1, 15, 8, 0, 0, tzinfo=UTC)

MASTER = ReplicaId("Master", 0)
CHIEF = ReplicaId("Chief", 0)


def worker(index: int) -> ReplicaId:
    """Worker `index` of a job."""
    return ReplicaId("Worker", index)


def ps(index: int) -> ReplicaId:
    """Parameter server `index` of a TFJob."""
    return ReplicaId("PS", index)


# Jobs -------------------------------------------------------------------------------------


def replica_spec(container: str, replicas: int, policy: str | None) -> dict[str, Any]:
    """A replica type with `replicas` pods whose main container is `container`."""
    spec: dict[str, Any] = {
        "replicas": replicas,
        "template": {"spec": {"containers": [{"name": container, "image": "example/train:1"}]}},
    }
    if policy is not None:
        spec["restartPolicy"] = policy
    return spec


def pytorch_job(
    name: str = "mnist",
    *,
    masters: int = 1,
    workers: int = 2,
    policy: str | None = "ExitCode",
    run_policy: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A PyTorchJob with a Master (unless `masters` is 0) and `workers` Workers."""
    replicas: dict[str, Any] = {}
    if masters:
        replicas["Master"] = replica_spec("pytorch", masters, policy)
    if workers:
        replicas["Worker"] = replica_spec("pytorch", workers, policy)
    return _job("PyTorchJob", name, {"pytorchReplicaSpecs": replicas}, run_policy)


def tf_job(
    name: str = "dist-mnist",
    *,
    replicas: Mapping[str, int],
    policy: str | None = None,
    run_policy: Mapping[str, Any] | None = None,
    **spec: Any,
) -> dict[str, Any]:
    """A TFJob with the given replica types and counts (and extra spec fields)."""
    specs = {t: replica_spec("tensorflow", n, policy) for t, n in replicas.items()}
    return _job("TFJob", name, {"tfReplicaSpecs": specs, **spec}, run_policy)


def _job(
    kind: str, name: str, spec: dict[str, Any], run_policy: Mapping[str, Any] | None
) -> dict[str, Any]:
    if run_policy is not None:
        spec["runPolicy"] = dict(run_policy)
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": kind,
        "metadata": {"name": name, "namespace": "team", "uid": f"uid-{name}", "generation": 1},
        "spec": spec,
    }


# Pods, as the engine observes them (through observe_pod, the reconcile's own path) --------


def _observed(phase: str, *, state: Mapping[str, Any] | None = None,
              deleting: bool = False, node: str = "node-a") -> PodFacts:
    metadata: dict[str, Any] = {"name": "pod"}
    if deleting:
        metadata["deletionTimestamp"] = format_time(T0)
    statuses = [{"name": "main", "state": dict(state)}] if state is not None else []
    pod = {
        "metadata": metadata,
        "spec": {"nodeName": node, "containers": [{"name": "main"}]},
        "status": {"phase": phase, "containerStatuses": statuses},
    }
    return observe_pod(pod, main_container="main", node_ready=lambda name: name == "node-a")


def pending() -> PodFacts:
    """A pod created but not started."""
    return _observed("Pending", state={"waiting": {"reason": "ContainerCreating"}})


def running() -> PodFacts:
    """A pod whose main container runs."""
    return _observed("Running", state={"running": {"startedAt": format_time(T0)}})


def exited(code: int, reason: str = "") -> PodFacts:
    """A pod whose main container ended with `code` (phase as the kubelet reports it)."""
    phase = "Succeeded" if code == 0 else "Failed"
    return _observed(phase, state={"terminated": {"exitCode": code, "reason": reason}})


def exited_while_phase_running(code: int) -> PodFacts:
    """The main container ended but the pod still says Running (field notes, story 3)."""
    return _observed("Running", state={"terminated": {"exitCode": code, "reason": "Error"}})


def deleted() -> PodFacts:
    """A running pod someone started to delete."""
    return _observed("Running", state={"running": {}}, deleting=True)


def lost() -> PodFacts:
    """A running pod on a node that is no longer Ready."""
    return _observed("Running", state={"running": {}}, node="node-gone")


# Reconciles -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reconciled:
    """What one reconcile decided, and the status it would write."""

    decision: Decision
    status: dict[str, Any]
    notices: list[Notice]

    @property
    def phase(self) -> str | None:
        return self.status.get("phase")

    @property
    def replica_states(self) -> dict[str, str]:
        """`{"Worker-1": "Running", ...}`."""
        return {str(r): s for r, s in sorted(self.decision.record.replica_states.items())}

    def planned(self, action: str) -> list[str]:
        """The replicas (`Worker-1`) an action was planned for, in order."""
        return [str(p.replica) for p in self.decision.actions
                if p.action.name == action and not p.replayed]

    @property
    def job_actions(self) -> list[tuple[str, dict[str, Any]]]:
        """Actions planned for the job itself, with their arguments."""
        return [
            (p.action.name, dict(p.action.args))
            for p in self.decision.actions
            if not p.replayed and p.replica is None
        ]

    @property
    def pod_actions(self) -> list[tuple[str, str]]:
        """(action, replica) for every replica action, in order."""
        return [
            (p.action.name, str(p.replica))
            for p in self.decision.actions
            if not p.replayed and p.replica is not None
        ]

    def condition(self, type: str) -> dict[str, Any] | None:
        return get_condition(self.status.get("conditions") or [], type)

    def condition_status(self, type: str) -> str | None:
        found = self.condition(type)
        return None if found is None else str(found["status"])

    def condition_reason(self, type: str) -> str | None:
        found = self.condition(type)
        return None if found is None else str(found["reason"])

    @property
    def job_path(self) -> list[tuple[str | None, str, str]]:
        """The job-level transitions that fired: (from, to, reason)."""
        return [
            (f.transition.source, f.transition.target, f.transition.reason)
            for f in self.decision.fired
            if f.replica is None
        ]

    @property
    def replica_path(self) -> list[tuple[str, str | None, str]]:
        """The replica transitions that fired: (replica, from, to)."""
        return [
            (str(f.replica), f.transition.source, f.transition.target)
            for f in self.decision.fired
            if f.replica is not None
        ]


@dataclass
class World:
    """One job and the pods the engine would see; `reconcile()` decides one pass."""

    job: dict[str, Any]
    pods: dict[ReplicaId, PodFacts] = field(default_factory=dict)
    now: datetime = T0
    history_limit: int = 100

    @property
    def definition(self) -> CompiledDefinition:
        return DEFINITIONS[self.job["kind"]]

    @property
    def run_policy(self) -> dict[str, Any]:
        """The job's runPolicy, created on first use (tests change it between reconciles)."""
        policy: dict[str, Any] = self.job["spec"].setdefault("runPolicy", {})
        return policy

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)

    def reconcile(self) -> Reconciled:
        """One pass: record from status, observations, decide, and the status written back."""
        status = self.job.get("status") or {}
        spec = read_job_spec(self.job, self.definition)
        observations = job_observations(
            self.job, spec, start_time=status.get("startTime"), now=self.now,
            terminating_pods=sum(1 for f in self.pods.values() if f.observation == "podGone"),
        )
        decision = decide(
            self.definition, self.job, spec, read_record(status), dict(self.pods),
            job_observations=observations, now=format_time(self.now),
            history_limit=self.history_limit,
        )
        written = build_status(self.job, self.definition, spec, decision,
                               now=format_time(self.now))
        self.job["status"] = written
        return Reconciled(decision, written, notices_for(decision.fired, self.pods))


# Step tables ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One line of a scenario: what happens in the world, then what the engine must decide.

    `pods` replaces the named replicas' pods (None: the pod is gone); `run_policy`
    is merged into the job's runPolicy. Actions are always checked (default: none);
    `restarts`, `events` and `states` only when given; `conditions` by type.
    """

    says: str
    pods: Mapping[ReplicaId, PodFacts | None] = field(default_factory=dict)
    run_policy: Mapping[str, Any] = field(default_factory=dict)
    phase: str = ""
    created: Sequence[str] = ()
    deleted: Sequence[str] = ()
    job_actions: Sequence[str] = ()
    restarts: int | None = None
    conditions: Mapping[str, str] = field(default_factory=dict)
    events: Sequence[str] | None = None
    states: Mapping[str, str] = field(default_factory=dict)


def _expected(step: Step) -> dict[str, Any]:
    found: dict[str, Any] = {
        "phase": step.phase,
        "created": list(step.created),
        "deleted": list(step.deleted),
        "job actions": list(step.job_actions),
        "conditions": dict(step.conditions),
        "states": dict(step.states),
    }
    if step.restarts is not None:
        found["restarts"] = step.restarts
    if step.events is not None:
        found["events"] = list(step.events)
    return found


def _actual(step: Step, result: Reconciled) -> dict[str, Any]:
    found: dict[str, Any] = {
        "phase": result.phase,
        "created": result.planned("createPod"),
        "deleted": result.planned("deletePod"),
        "job actions": [name for name, _ in result.job_actions],
        "conditions": {t: result.condition_status(t) for t in step.conditions},
        "states": {r: result.replica_states.get(r) for r in step.states},
    }
    if step.restarts is not None:
        found["restarts"] = result.status["restarts"]
    if step.events is not None:
        found["events"] = [notice.reason for notice in result.notices]
    return found


def play(world: World, steps: Sequence[Step]) -> list[Reconciled]:
    """Run the steps in order, one reconcile each; fail at the first step that differs."""
    results: list[Reconciled] = []
    for number, step in enumerate(steps, start=1):
        for replica, facts in step.pods.items():
            if facts is None:
                world.pods.pop(replica, None)
            else:
                world.pods[replica] = facts
        if step.run_policy:
            world.run_policy.update(step.run_policy)
        result = world.reconcile()
        actual, expected = _actual(step, result), _expected(step)
        assert actual == expected, (
            f"step {number} ({step.says}):\n  expected {expected}\n  actual   {actual}"
        )
        results.append(result)
    return results
