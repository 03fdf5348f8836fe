"""The chaos run's jobs: every shipped kind, every outcome, each with what must come of it.

Every replica says what each attempt does twice over: as `sim.jobmachine.dev/*`
annotations for the simulate-mode node, and as a command for the process-mode
node (`REPLICA_SCRIPT`). The command holds an exclusive lock named after its job,
replica type and index for as long as it runs, so two live processes serving one
replica index are caught the instant the second one starts, and it counts its
attempts in a file, so a recreated pod continues the script where the last one
stopped (as the simulate-mode node counts attempts per job and pod name).

A job's expected end is exact when nothing outside the script touched it: its
terminal phase and `status.restarts`. Node losses make the outcome depend on
which of the lost pods' two writes the engine saw first (see `invariants.py`).
"""

from __future__ import annotations

import random
import sys
from dataclasses import dataclass, field
from typing import Any, Literal

from engine.kube.resources import Resource

Obj = dict[str, Any]
End = Literal["Succeeded", "Failed", "Deleted"]

JOB_UID_LABEL = "jobmachine.dev/job-uid"
REPLICA_TYPE_LABEL = "jobmachine.dev/replica-type"
REPLICA_INDEX_LABEL = "jobmachine.dev/replica-index"
EXIT_CODES = "sim.jobmachine.dev/exit-codes"
RUN_SECONDS = "sim.jobmachine.dev/run-seconds"
SCENARIO_LABEL = "chaos.jobmachine.dev/scenario"

REPLICA_SCRIPT = """\
import fcntl, os, signal, sys, time
home = os.environ["CHAOS_DIR"]
key = "%s-%s-%s" % (os.environ["CHAOS_JOB_UID"], os.environ["CHAOS_REPLICA_TYPE"],
                    os.environ["CHAOS_REPLICA_INDEX"])
lock = os.open(os.path.join(home, "locks", key), os.O_CREAT | os.O_RDWR, 0o644)
try:
    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
except BlockingIOError:
    with open(os.path.join(home, "violations", "%s.%d" % (key, os.getpid())), "w") as out:
        out.write("%s: a second live process started at %.3f\\n" % (key, time.time()))
    fcntl.flock(lock, fcntl.LOCK_EX)
counter = os.path.join(home, "attempts", key)
try:
    with open(counter) as seen:
        attempt = int(seen.read() or 0)
except FileNotFoundError:
    attempt = 0
with open(counter + ".tmp", "w") as out:
    out.write(str(attempt + 1))
os.replace(counter + ".tmp", counter)
codes = [int(c) for c in os.environ["CHAOS_EXIT_CODES"].split(",")]
code = codes[min(attempt, len(codes) - 1)]
print("attempt %d of %s: exits %d" % (attempt, key, code), flush=True)
time.sleep(float(os.environ["CHAOS_RUN_SECONDS"]))
if code >= 128:
    os.kill(os.getpid(), code - 128)
sys.exit(code)
"""
"""The process-mode replica: hold the index's lock, count the attempt, sleep, exit as told."""


@dataclass(frozen=True)
class KindShape:
    """A shipped kind as the chaos run builds it: its replica types, and who ends it.

    `decider` is the replica type whose success ends the job (Kubeflow's Master,
    Chief or Launcher); None when every replica must succeed. Only the decider's
    script fails or restarts, so restart counts do not depend on timing.
    """

    resource: Resource
    specs_field: str
    types: tuple[tuple[str, int], ...]
    decider: str | None
    container: str

    @property
    def kind(self) -> str:
        return self.resource.kind


def _kubeflow(plural: str, kind: str) -> Resource:
    return Resource("kubeflow.org", "v1", plural, kind)


KINDS: tuple[KindShape, ...] = (
    KindShape(_kubeflow("pytorchjobs", "PyTorchJob"), "pytorchReplicaSpecs",
              (("Master", 1), ("Worker", 1)), "Master", "pytorch"),
    KindShape(_kubeflow("tfjobs", "TFJob"), "tfReplicaSpecs",
              (("Chief", 1), ("Worker", 1)), "Chief", "tensorflow"),
    KindShape(_kubeflow("xgboostjobs", "XGBoostJob"), "xgbReplicaSpecs",
              (("Master", 1), ("Worker", 1)), "Master", "xgboost"),
    KindShape(_kubeflow("paddlejobs", "PaddleJob"), "paddleReplicaSpecs",
              (("Master", 1), ("Worker", 1)), "Master", "paddle"),
    KindShape(_kubeflow("jaxjobs", "JAXJob"), "jaxReplicaSpecs",
              (("Worker", 2),), None, "jax"),
    KindShape(_kubeflow("mpijobs", "MPIJob"), "mpiReplicaSpecs",
              (("Launcher", 1), ("Worker", 1)), "Launcher", "mpi"),
    KindShape(Resource("jobmachine.dev", "v1alpha1", "machinejobs", "MachineJob"),
              "replicaSpecs", (("Worker", 2),), None, "main"),
)


@dataclass(frozen=True)
class Scenario:
    """One outcome the mix asks for: what the failing replicas do, and what must follow."""

    name: str
    weight: int
    end: End
    codes: str = "0"
    policy: str = "ExitCode"
    failures: int = 0
    """Restarts each failing replica counts before the end (exact when undisturbed)."""
    backoff_limit: int | None = None
    deciders_only: bool = False
    """Only for kinds with one decider (its restarts alone must exceed the limit)."""
    suspend_at: float | None = None
    resume_after: float | None = None
    delete_at: float | None = None
    ttl_seconds: int | None = None
    run_s: float | None = None


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("succeeds", 24, "Succeeded"),
    Scenario("exit-code-restart", 10, "Succeeded", codes="137,0", failures=1, backoff_limit=6),
    Scenario("two-exit-code-restarts", 6, "Succeeded", codes="143,137,0", failures=2,
             backoff_limit=6),
    Scenario("in-place-restart", 10, "Succeeded", codes="1,0", policy="OnFailure", failures=1,
             backoff_limit=6),
    Scenario("permanent-failure", 10, "Failed", codes="1"),
    Scenario("never-restarted", 5, "Failed", codes="137", policy="Never"),
    Scenario("backoff-limit", 5, "Failed", codes="137", failures=2, backoff_limit=1,
             deciders_only=True),
    Scenario("suspend-resume", 10, "Succeeded", suspend_at=0.6, resume_after=1.2, run_s=2.0),
    Scenario("deleted-mid-run", 10, "Deleted", delete_at=0.8, run_s=4.0),
    Scenario("ttl-after-finished", 10, "Deleted", ttl_seconds=1),
)


@dataclass
class JobPlan:
    """One job of the run: its body and what must come of it."""

    namespace: str
    name: str
    shape: KindShape
    scenario: Scenario
    body: Obj
    expected_restarts: int
    expected_end: End
    finished_phase: str | None
    """The phase a Deleted job must have reached first (a TTL job's), if any."""
    uid: str = ""
    created_at: float = 0.0
    settled_at: float = 0.0
    disrupted: bool = False
    """Pods of it were lost with the node."""
    engine_killed: bool = False
    """The engine was killed with SIGKILL while it ran."""
    actions_done: list[str] = field(default_factory=list)

    @property
    def key(self) -> str:
        return f"{self.shape.kind} {self.namespace}/{self.name}"


def _replica_spec(shape: KindShape, scenario: Scenario, replica_type: str, *, count: int,
                  run_s: float, chaos_dir: str) -> Obj:
    failing = shape.decider is None or replica_type == shape.decider
    codes = scenario.codes if failing else "0"
    policy = scenario.policy if failing else "ExitCode"
    env = [
        {"name": "CHAOS_DIR", "value": chaos_dir},
        {"name": "CHAOS_EXIT_CODES", "value": codes},
        {"name": "CHAOS_RUN_SECONDS", "value": f"{run_s:.2f}"},
        *({"name": name, "valueFrom": {"fieldRef": {"fieldPath": f"metadata.labels['{label}']"}}}
          for name, label in (("CHAOS_JOB_UID", JOB_UID_LABEL),
                              ("CHAOS_REPLICA_TYPE", REPLICA_TYPE_LABEL),
                              ("CHAOS_REPLICA_INDEX", REPLICA_INDEX_LABEL))),
    ]
    container = {"name": shape.container, "image": "docker.io/library/python:3.12-slim",
                 "command": [sys.executable, "-I", "-S", "-c", REPLICA_SCRIPT], "env": env}
    return {
        "replicas": count,
        "restartPolicy": policy,
        "template": {
            "metadata": {"annotations": {EXIT_CODES: codes, RUN_SECONDS: f"{run_s:.2f}"}},
            "spec": {"containers": [container]},
        },
    }


def plan_job(namespace: str, name: str, shape: KindShape, scenario: Scenario, *,
             rng: random.Random, chaos_dir: str) -> JobPlan:
    """A job of `shape` that plays `scenario`; run times are drawn from `rng`."""
    run_s = scenario.run_s if scenario.run_s is not None else rng.uniform(0.2, 1.0)
    specs = {replica_type: _replica_spec(shape, scenario, replica_type, count=count,
                                           run_s=run_s, chaos_dir=chaos_dir)
             for replica_type, count in shape.types}
    run_policy: Obj = {}
    if scenario.backoff_limit is not None:
        run_policy["backoffLimit"] = scenario.backoff_limit
    if scenario.ttl_seconds is not None:
        run_policy["ttlSecondsAfterFinished"] = scenario.ttl_seconds
    body: Obj = {
        "apiVersion": shape.resource.api_version,
        "kind": shape.kind,
        "metadata": {"name": name, "namespace": namespace,
                     "labels": {SCENARIO_LABEL: scenario.name}},
        "spec": {shape.specs_field: specs, "runPolicy": run_policy},
    }
    failing_replicas = sum(count for replica_type, count in shape.types
                           if shape.decider is None or replica_type == shape.decider)
    return JobPlan(
        namespace=namespace, name=name, shape=shape, scenario=scenario, body=body,
        expected_restarts=scenario.failures * failing_replicas,
        expected_end=scenario.end,
        finished_phase="Succeeded" if scenario.ttl_seconds is not None else None,
    )


def choose(rng: random.Random) -> tuple[KindShape, Scenario]:
    """A kind and a scenario it can play, drawn by the scenarios' weights."""
    while True:
        scenario = rng.choices(SCENARIOS, weights=[s.weight for s in SCENARIOS])[0]
        shape = rng.choice(KINDS)
        if not scenario.deciders_only or shape.decider is not None:
            return shape, scenario
