"""A replica's remembered step is taken again only on the inputs it was taken on
(`replica_inputs` in `_step_replicas`): its type's replica count and restart policy, its
own restarts and its ends restarted in place not seen yet among them, which a replica
machine's guards may read (`replica.desired`, `policy`, `replica.restarts`, `newRestarts`)
though the machine reads nothing of the job-level variables that would change with them.

The machine is one of our own whose Running replicas move on when their type grows past two
replicas, runs under restart policy OnFailure, or has restarted; `RememberingDecide` checks
that each decision with remembered steps is the one made without.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from engine.definition import compile_definition, load_text
from tests.scenarios.reconcile_memo import RememberingDecide, remembering
from tests.scenarios.world import DEFINITIONS, World, lost, running, running_again, worker
from tests.unit.definition.texts import document

JOB = """\
  job:
    initial: Running
    states:
      Running: {}
      Done: {terminal: success}
    transitions:
      - {from: Running, to: Done, "on": invalid}
"""

def moving_when(guard: str) -> str:
    """A replica machine whose Running replicas move on (to Moved) when `guard` holds."""
    return f"""\
  replica:
    initial: Pending
    states:
      Pending: {{}}
      Running: {{}}
      Moved: {{}}
    transitions:
      - {{from: Pending, to: Pending, "on": podMissing, actions: [createPod]}}
      - {{from: Pending, to: Running, "on": podRunning}}
      - {{from: Running, to: Moved, "on": podRunning, when: "{guard}"}}
"""


REPLICA = moving_when("replica.desired > 2 || policy == 'OnFailure' || replica.restarts > 0")


def install_demo(monkeypatch: pytest.MonkeyPatch, replica: str, extra: str = "") -> None:
    """Make the machine of JOB and `replica` (and `extra` sections) govern kind Demo."""
    (loaded,) = load_text(document(job=JOB, replica=replica, extra=extra), "demo.yaml")
    monkeypatch.setitem(DEFINITIONS, "Demo", compile_definition(loaded))


def demo_world(*, workers: int, policy: str) -> World:
    """A Demo job of `workers` Workers under restart policy `policy`, not reconciled yet."""
    template = {"spec": {"containers": [{"name": "main", "image": "example/train:1"}]}}
    return World({"apiVersion": "example.dev/v1", "kind": "Demo",
                  "metadata": {"name": "d", "namespace": "n", "uid": "u", "generation": 1},
                  "spec": {"replicaSpecs": {"Worker": {
                      "replicas": workers, "restartPolicy": policy, "template": template}}}})


@pytest.fixture
def checked(monkeypatch: pytest.MonkeyPatch) -> Iterator[RememberingDecide]:
    install_demo(monkeypatch, REPLICA)
    with remembering(monkeypatch) as checking:
        yield checking


def _running_workers() -> World:
    """Two Workers running, each stepped (and remembered) in Running at least twice."""
    world = demo_world(workers=2, policy="Never")
    world.reconcile()
    world.put(worker(0), running())
    world.put(worker(1), running())
    world.reconcile()
    assert world.reconcile().replica_states == {"Worker-0": "Running", "Worker-1": "Running"}
    return world


@pytest.mark.usefixtures("checked")
@pytest.mark.parametrize("change", [{"replicas": 3}, {"restartPolicy": "OnFailure"}],
                         ids=["replicas", "restartPolicy"])
def test_a_step_remembered_is_not_taken_again_once_its_type_changed(
        change: dict[str, Any]) -> None:
    world = _running_workers()
    world.job["spec"]["replicaSpecs"]["Worker"].update(change)
    states = world.reconcile().replica_states
    assert (states["Worker-0"], states["Worker-1"]) == ("Moved", "Moved")


@pytest.mark.usefixtures("checked")
def test_a_step_remembered_is_not_taken_again_once_the_replicas_restarts_read_differ() -> None:
    """The record read gives Worker-0 a restart its remembered steps were not taken on (an
    edited record, or a status write of a restart that the pass before did not see)."""
    world = _running_workers()
    record = json.loads(world.job["status"]["record"])
    record["restarts"] = {"Worker": {"0": [1, "2027-01-15T08:00:00Z"]}}
    world.job["status"]["record"] = json.dumps(record)
    states = world.reconcile().replica_states
    assert (states["Worker-0"], states["Worker-1"]) == ("Moved", "Running")


RESTARTS_SEEN = """\
  replica:
    initial: Pending
    states:
      Pending: {}
      Running: {}
    transitions:
      - {from: Pending, to: Pending, "on": podMissing, actions: [createPod]}
      - {from: Pending, to: Running, "on": podRunning}
      - {from: Running, to: Running, "on": podLost, when: "newRestarts > 0",
         actions: [{event: {reason: RestartedInPlace, message: "restarted in place"}}]}
"""


def test_a_step_remembered_is_not_taken_again_once_its_restarts_in_place_were_seen(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A pod restarted in place on a node that then went: the pass that sees its end says
    so; the next, on the very same pod, sees no new end (the record now has it) and says
    nothing, though its state, its pod and its restarts counted are those of the step that
    did (an observation that is not `podRestarting` first, which would tell them apart)."""
    install_demo(monkeypatch, RESTARTS_SEEN, "  pod: {restartPolicy: OnFailure}\n")
    world = demo_world(workers=1, policy="OnFailure")
    with remembering(monkeypatch):
        world.reconcile()
        world.put(worker(0), running())
        world.reconcile()
        world.put(worker(0), running_again(1))
        world.pods[worker(0)]["spec"]["nodeName"] = lost()["spec"]["nodeName"]
        assert world.reconcile().events == ["RestartedInPlace"]
        assert world.reconcile().events == []
