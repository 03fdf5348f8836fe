"""A TrainJob (machines/trainjob.yaml) copies its one JobSet's end, one decision per line:
"the JobSet runs -> Running"; "the JobSet says Completed -> Complete"; "the JobSet says
Failed -> Failed"; "no runtime and no JobSet -> Trainer's Warning, still Running".
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest

from engine.controller.reconcile.children import ReplicaId
from engine.controller.reconcile.decide import Decision, decide
from engine.controller.reconcile.jobspec import read_job_spec
from engine.controller.reconcile.observe import observe_child
from engine.controller.reconcile.record import MachineRecord
from engine.controller.reconcile.variables import Surroundings
from engine.definition.rendering import render_objects
from tests.kinds import shipped_definitions

AT = "2027-01-01T00:00:30Z"
TRAINER = ReplicaId("trainer", 0)
TRAINJOB = {"apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "TrainJob",
            "metadata": {"name": "t", "namespace": "n", "uid": "u"},
            "spec": {"runtimeRef": {"name": "torch"}, "trainer": {}}}
RUNTIME = {
    "apiVersion": "trainer.kubeflow.org/v1alpha1", "kind": "ClusterTrainingRuntime",
    "metadata": {"name": "torch", "labels": {"trainer.kubeflow.org/framework": "torch"}},
    "spec": {"mlPolicy": {"numNodes": 1, "torch": {}}, "template": {"spec": {
        "replicatedJobs": [{"name": "node", "template": {
            "metadata": {"labels": {"trainer.kubeflow.org/trainjob-ancestor-step": "trainer"}},
            "spec": {"template": {"spec": {"containers": [
                {"name": "node", "image": "pytorch/pytorch:2.3"}]}}}}}]}}},
}


def jobset(condition: str | None) -> dict[str, Any]:
    """The TrainJob's JobSet, running (no condition) or with `condition` True."""
    labels = {"jobmachine.dev/replica-type": "trainer", "jobmachine.dev/replica-index": "0"}
    status: dict[str, Any] = {}
    if condition is not None:
        status["conditions"] = [{"type": condition, "status": "True", "reason": "Why",
                                 "message": "said", "lastTransitionTime": AT}]
    return {"metadata": {"name": "t", "uid": "js", "labels": labels}, "status": status}


def decide_trainjob(runtime: dict[str, Any], child: dict[str, Any] | None) -> Decision:
    definition = shipped_definitions()["TrainJob"]
    children = {} if child is None else {TRAINER: child}
    facts = {r: observe_child(c, job=TRAINJOB, definition=definition)
             for r, c in children.items()}
    surroundings = Surroundings(objects={c.name: {} for c in definition.objects},
                                references={"runtime": runtime})
    return decide(definition, TRAINJOB, read_job_spec(TRAINJOB, definition),
                  MachineRecord(state="Running"), facts,
                  job_observations=frozenset({"resumed"}), now=AT, surroundings=surroundings)


@dataclass(frozen=True)
class Line:
    says: str
    runtime: dict[str, Any]
    child: dict[str, Any] | None
    state: str
    reasons: list[str]
    events: list[str]


LINES = [
    Line("the JobSet runs -> Running", RUNTIME, jobset(None), "Running", [], []),
    Line("the JobSet says Completed -> Complete", RUNTIME, jobset("Completed"), "Complete",
         ["AllJobsCompleted"], []),
    Line("the JobSet says Failed -> Failed", RUNTIME, jobset("Failed"), "Failed",
         ["JobSetFailed"], []),
    Line("no runtime and no JobSet -> Trainer's Warning, still Running", {}, None, "Running",
         [], ["TrainJobResourcesCreationFailed"]),
]


@pytest.mark.parametrize("line", LINES, ids=[line.says for line in LINES])
def test_a_trainjob_copies_its_jobsets_end(line: Line) -> None:
    decision = decide_trainjob(line.runtime, line.child)
    assert not decision.errors
    fired = [f.transition.reason for f in decision.fired if f.replica is None]
    events = [str(p.action.args["reason"]) for p in decision.actions
              if p.action.name == "event" and not p.replayed]
    assert (decision.record.state, fired, events) == (line.state, line.reasons, line.events)


MPI_RUNTIME = {**RUNTIME, "metadata": {"name": "torch", "labels": {
    "trainer.kubeflow.org/framework": "mpi"}},
    "spec": {**RUNTIME["spec"], "mlPolicy": {"numNodes": 1, "mpi": {}}}}


@pytest.mark.parametrize(("says", "runtime", "objects"), [
    ("no runtime found -> no object made from it", {}, set()),
    ("a torch runtime -> none of MPI's objects", RUNTIME, set()),
    ("an MPI runtime -> its SSH Secret and hostfile", MPI_RUNTIME,
     {"mpi-ssh-auth", "mpi-hostfile"}),
], ids=lambda value: value if isinstance(value, str) else "")
def test_a_trainjob_makes_the_objects_its_runtime_asks_for(
        says: str, runtime: dict[str, Any], objects: set[str]) -> None:
    """The objects' `when` guards read the runtime only once it is found: without it, no
    object is wanted and none of them fails to evaluate."""
    decision = decide_trainjob(runtime, None)
    wanted, _absent = render_objects(shipped_definitions()["TrainJob"], decision.variables)
    assert {rendered.name for rendered in wanted} == objects, says
