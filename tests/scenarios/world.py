"""Step tables over the engine's simulated world: each step sets pods, one reconcile decides.

Each `World.reconcile()` is one pass of `engine.simulation.world.World`, the engine's
own observe, decide, status and action code: it reads the record back from the job's
status, observes the pods (failure rules, pods of an older restart attempt, lost
nodes), decides, and stores the status it built on the job: status is the write-ahead
log, so every scenario also proves the record survives the round trip. Unlike a
simulation, a step table says itself which pods exist next, so the pass acts on copies
of the pods. Pure: no server, and time moves only when a test says so.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from engine.api.conditions import get_condition
from engine.controller.reconcile.children import (
    RESTART_ATTEMPT_LABEL,
    ReplicaId,
    attempt_of,
    child_name,
)
from engine.controller.reconcile.decide import Decision
from engine.controller.reconcile.jobspec import JobSpecView, read_job_spec
from engine.controller.reconcile.notices import Notice
from engine.controller.reconcile.observe import MISSING, PodFacts
from engine.controller.reconcile.record import read_record
from engine.controller.reconcile.variables import (
    common_variables,
    replica_summary,
    replica_variables,
)
from engine.definition import CompiledDefinition
from engine.definition.rendering import render_restart_policy
from engine.kube.timestamps import format_time
from engine.simulation import kubelet
from engine.simulation.world import World as SimulatedWorld
from tests.kinds import shipped_definitions

DEFINITIONS: dict[str, CompiledDefinition] = shipped_definitions()
T0 = datetime(2027, 1, 15, 8, 0, 0, tzinfo=UTC)

Pod = dict[str, Any]
"""A pod as the API server would return it (only the fields the engine reads)."""

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


def machine_job(
    name: str = "train",
    *,
    workers: int = 1,
    policy: str | None = "ExitCode",
    run_policy: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """A MachineJob (the engine's own kind) with `workers` Workers."""
    job = _job("MachineJob", name,
               {"replicaSpecs": {"Worker": replica_spec("main", workers, policy)}}, run_policy)
    job["apiVersion"] = "jobmachine.dev/v1alpha1"
    return job


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


# Pods, as the API server shows them (World.reconcile observes them as the reconcile does) --


def _pod(phase: str, *, state: Mapping[str, Any] | None = None,
         deleting: bool = False, node: str = kubelet.NODE,
         last: Mapping[str, Any] | None = None,
         restart_count: int = 0) -> Pod:
    metadata: dict[str, Any] = {"name": "pod"}
    if deleting:
        metadata["deletionTimestamp"] = format_time(T0)
    statuses = []
    if state is not None:
        statuses = [{"name": "main", "state": dict(state), "lastState": dict(last or {}),
                     "restartCount": restart_count}]
    return {
        "metadata": metadata,
        "spec": {"nodeName": node, "containers": [{"name": "main"}]},
        "status": {"phase": phase, "containerStatuses": statuses},
    }


def pending() -> Pod:
    """A pod created but not started."""
    return _pod("Pending", state={"waiting": {"reason": "ContainerCreating"}})


def running() -> Pod:
    """A pod whose main container runs."""
    return _pod("Running", state={"running": {"startedAt": format_time(T0)}})


def exited(code: int, reason: str = "") -> Pod:
    """A pod whose main container ended with `code` (phase as the kubelet reports it)."""
    phase = "Succeeded" if code == 0 else "Failed"
    return _pod(phase, state={"terminated": {"exitCode": code, "reason": reason}})


def ended_in_place(code: int, restarts: int = 0, *, reason: str = "Error",
                   message: str = "") -> Pod:
    """An OnFailure or Always pod whose main container just ended, before the kubelet
    restarts it in place: still Running, `restarts` restarts so far."""
    ended = {"exitCode": code, "reason": reason, "message": message}
    return _pod("Running", state={"terminated": ended}, restart_count=restarts)


def backing_off(code: int, restarts: int, *, reason: str = "Error", message: str = "") -> Pod:
    """An OnFailure or Always pod whose container ended again and waits in CrashLoopBackOff:
    `restarts` restarts so far, the last end in lastState."""
    ended = {"exitCode": code, "reason": reason, "message": message}
    return _pod("Running", state={"waiting": {"reason": "CrashLoopBackOff"}},
                last={"terminated": ended}, restart_count=restarts)


def running_again(restarts: int, last_code: int = 1) -> Pod:
    """A pod whose container the kubelet restarted in place `restarts` times and that runs."""
    return _pod("Running", state={"running": {"startedAt": format_time(T0)}},
                last={"terminated": {"exitCode": last_code, "reason": "Error"}},
                restart_count=restarts)


def evicted() -> Pod:
    """A pod the kubelet evicted: phase Failed as a whole, its container never ended (no
    exit code)."""
    pod = _pod("Failed", state={"running": {"startedAt": format_time(T0)}})
    pod["status"]["reason"] = "Evicted"
    return pod


def exited_while_phase_running(code: int) -> Pod:
    """The main container ended but the pod still says Running (field notes, story 3)."""
    return _pod("Running", state={"terminated": {"exitCode": code, "reason": "Error"}})


def deleted() -> Pod:
    """A running pod someone started to delete."""
    return _pod("Running", state={"running": {}}, deleting=True)


def lost() -> Pod:
    """A running pod on a node that is no longer Ready."""
    return _pod("Running", state={"running": {}}, node=kubelet.LOST_NODE)


def observe(pods: Mapping[ReplicaId, Pod], spec: JobSpecView,
            attempt: int) -> tuple[dict[ReplicaId, PodFacts], int]:
    """The facts of the pods of restart attempt `attempt`, and how many pods are terminating,
    as the engine's simulated world observes them (`World.observe`).

    A failed pod carries the action of the first failure rule it matches; a pod being
    deleted counts as terminating, and a pod of another attempt is not observed and counts
    as terminating too. The machine only names the main container, and these pods name
    theirs in their spec, so any shipped machine observes them alike.
    """
    world = SimulatedWorld(DEFINITIONS["PyTorchJob"], {}, T0, pods=dict(pods))
    return world.observe(spec, attempt)


# Reconciles -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Reconciled:
    """What one reconcile decided, and the status it would write."""

    decision: Decision
    status: dict[str, Any]
    notices: list[Notice]
    made: list[str] = field(default_factory=list)
    """The replicas (`Worker-1`) whose pods the executor did create in the pass, in order: a
    planned pod waits while its replica's re-creation back-off runs."""
    next_look: datetime | None = None
    """When the engine would look at the job again by itself (a back-off, a deadline)."""

    @property
    def phase(self) -> str | None:
        return self.status.get("phase")

    @property
    def replica_states(self) -> dict[str, str]:
        """`{"Worker-1": "Running", ...}`."""
        return {str(r): s for r, s in sorted(self.decision.record.replica_states.items())}

    @property
    def events(self) -> list[str]:
        """The reasons of the Events the reconcile posts, in order: those of `event`
        actions (posted as the actions run), then one per state change."""
        posted = [str(p.action.args["reason"]) for p in self.decision.actions
                  if p.action.name == "event"]
        return posted + [notice.reason for notice in self.notices]

    @property
    def posted(self) -> list[tuple[str, str, str]]:
        """(type, reason, message) of the Events the reconcile's `event` actions post, in
        order (the messages as posted; transition events are in `notices`)."""
        return [
            ("Warning" if p.action.args.get("type") == "Warning" else "Normal",
             str(p.action.args["reason"]), str(p.action.args.get("message") or ""))
            for p in self.decision.actions
            if p.action.name == "event"
        ]

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
    """One job and its pods; `reconcile()` decides one pass."""

    job: dict[str, Any]
    pods: dict[ReplicaId, Pod] = field(default_factory=dict)
    now: datetime = T0
    transitions_kept: int = 100
    """As `EngineSettings.status_last_transitions`; many, so tests read whole paths."""
    created: int = 0
    """Pods created so far (each new pod gets a uid of its own)."""

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

    @property
    def restart_attempt(self) -> int:
        """The job's restart attempt, as its status records it."""
        return read_record(self.job.get("status") or {}).restart_attempt

    def put(self, replica: ReplicaId, pod: Pod | None) -> None:
        """Set the replica's pod (None: it is gone).

        A replica that had no pod gets a new one (a new uid), of the job's current restart
        attempt, with the restartPolicy the machine gives its pods; one that had a pod keeps
        its uid, attempt and policy (the same pod, in a new state).
        """
        if pod is None:
            self.pods.pop(replica, None)
            return
        before = self.pods.get(replica)
        if before is None:
            self.created += 1
            attempt, uid = self.restart_attempt, f"{self.created:08d}-{replica}"
            policy = self.pod_restart_policy(replica)
        else:
            attempt, uid = attempt_of(before), before["metadata"]["uid"]
            policy = before["spec"]["restartPolicy"]
        labels = {**(pod["metadata"].get("labels") or {}), RESTART_ATTEMPT_LABEL: str(attempt)}
        self.pods[replica] = {
            **pod,
            "metadata": {**pod["metadata"], "labels": labels, "uid": uid},
            "spec": {"restartPolicy": policy, **pod["spec"]},
        }

    def pod_restart_policy(self, replica: ReplicaId) -> str:
        """The restartPolicy the machine gives the replica's pod, as createPod renders it."""
        spec = read_job_spec(self.job, self.definition)
        replica_type = spec.replica_type(replica.type)
        assert replica_type is not None, replica
        record = read_record(self.job.get("status") or {})
        summary = replica_summary(spec, record, {}, self.definition.replica)
        variables = replica_variables(
            common_variables(self.job, spec, record, summary), replica,
            desired=replica_type.replicas, policy=replica_type.restart_policy, record=record,
            facts=MISSING,
        )
        return render_restart_policy(self.definition, variables)

    def reconcile(self) -> Reconciled:
        """One pass of the engine's simulated world on this job and copies of its pods: the
        status is written back to the job; the pass's pod actions land on the copies only."""
        world = SimulatedWorld(self.definition, self.job, self.now,
                               transitions_kept=self.transitions_kept, pods=self._stored())
        passed = world.reconcile()
        return Reconciled(passed.decision, self.job["status"], list(passed.notices),
                          [str(r) for r in passed.created], passed.next_look)

    def _stored(self) -> dict[ReplicaId, Pod]:
        """Copies of the pods with the metadata the API server gives every pod (a name, the
        job's namespace, a uid), which the engine's actions address them by."""
        stored: dict[ReplicaId, Pod] = {}
        for replica, pod in self.pods.items():
            copied = copy.deepcopy(pod)
            metadata = copied["metadata"]
            metadata["name"] = child_name(self.job["metadata"]["name"], replica)
            metadata.setdefault("namespace", self.job["metadata"]["namespace"])
            metadata.setdefault("uid", f"uid-{replica}")
            stored[replica] = copied
        return stored


# Step tables ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Step:
    """One line of a scenario: what happens in the world, then what the engine must decide.

    `wait` seconds pass first; `pods` replaces the named replicas' pods (None: the pod
    is gone); `run_policy` is merged into the job's runPolicy. Actions are always
    checked (default: none); `restarts`, `events` and `states` only when given;
    `conditions` by type (None: the job has no condition of that type).
    """

    says: str
    pods: Mapping[ReplicaId, Pod | None] = field(default_factory=dict)
    run_policy: Mapping[str, Any] = field(default_factory=dict)
    wait: float = 0
    phase: str = ""
    created: Sequence[str] = ()
    deleted: Sequence[str] = ()
    job_actions: Sequence[str] = ()
    restarts: int | None = None
    conditions: Mapping[str, str | None] = field(default_factory=dict)
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
        found["restarts"] = result.status.get("restarts", 0)
    if step.events is not None:
        found["events"] = result.events
    return found


def play(world: World, steps: Sequence[Step]) -> list[Reconciled]:
    """Run the steps in order, one reconcile each; fail at the first step that differs."""
    results: list[Reconciled] = []
    for number, step in enumerate(steps, start=1):
        world.advance(step.wait)
        for replica, pod in step.pods.items():
            world.put(replica, pod)
        if step.run_policy:
            world.run_policy.update(step.run_policy)
        result = world.reconcile()
        actual, expected = _actual(step, result), _expected(step)
        assert actual == expected, (
            f"step {number} ({step.says}):\n  expected {expected}\n  actual   {actual}"
        )
        results.append(result)
    return results
