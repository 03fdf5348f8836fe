"""`settled` within one decision: what the job replays for the state it is in counts.

The job machine's replays are planned before it steps (they decide whether `settled`
holds), and a pass that finds the job not settled keeps it so to its end, even once the
job has left the state whose replays withheld it.
"""

from __future__ import annotations

import pytest

from engine.controller.reconcile.decide import Decision, decide
from engine.controller.reconcile.jobspec import read_job_spec
from engine.controller.reconcile.record import read_record
from engine.definition import CompiledDefinition, load_definitions
from engine.kube.timestamps import format_time
from tests.kinds import MACHINES
from tests.scenarios.world import MASTER, T0, World, observe, pytorch_job, running, worker

NOW = format_time(T0)

SETTLED_RUN = """\
      - name: settled-run
        from: Created
        to: Running
        "on": settled
        reason: RunWhenSettled
"""
"""A transition that shows whether `settled` holds for a job in Created (before `run`)."""


@pytest.fixture(scope="module")
def definition(tmp_path_factory: pytest.TempPathFactory) -> CompiledDefinition:
    """The shipped PyTorchJob machine, with `SETTLED_RUN` first among Created's transitions."""
    folder = tmp_path_factory.mktemp("machines")
    for machine in MACHINES.glob("*.yaml"):
        text = machine.read_text()
        if machine.name == "kubeflow.yaml":
            text = text.replace("      - name: run\n", SETTLED_RUN + "      - name: run\n", 1)
        (folder / machine.name).write_text(text)
    return {d.governs.kind: d for d in load_definitions([folder])}["PyTorchJob"]


def resumed_with_pods_left(definition: CompiledDefinition) -> Decision:
    """Decide for a suspended PyTorchJob that is resumed while the pods its suspension's
    clean-up should have deleted still run (the API server refused the deletes)."""
    world = World(pytorch_job(workers=1))
    world.reconcile()
    world.pods.update({MASTER: running(), worker(0): running()})
    world.reconcile()
    world.run_policy["suspend"] = True
    assert world.reconcile().decision.record.state == "Suspended"
    world.run_policy["suspend"] = False
    return decide_for(world, definition)


def decide_for(world: World, definition: CompiledDefinition) -> Decision:
    """One decision for the world's job with `definition`; no pod is terminating."""
    spec = read_job_spec(world.job, definition)
    facts, _ = observe(world.pods, spec, world.restart_attempt)
    return decide(definition, world.job, spec, read_record(world.job["status"]), facts,
                  job_observations=frozenset({"resumed", "settled"}), now=NOW)


def job_path(decision: Decision) -> list[tuple[str | None, str, str]]:
    """The job's state changes: (from, to, reason)."""
    return [(f.transition.source, f.transition.target, f.transition.reason)
            for f in decision.fired if f.replica is None]


def test_the_settled_transition_fires_when_nothing_is_left_to_delete(
    definition: CompiledDefinition,
) -> None:
    world = World(pytorch_job(workers=1))
    world.reconcile()
    decision = decide_for(world, definition)
    assert job_path(decision) == [("Created", "Running", "RunWhenSettled")]


def test_a_job_that_left_a_state_whose_replays_delete_pods_stays_unsettled(
    definition: CompiledDefinition,
) -> None:
    # Suspended replays its clean-up (policy All) while the pods run: not settled. The job
    # leaves Suspended and does not replay it, yet Created's settled-run must not fire.
    decision = resumed_with_pods_left(definition)
    assert job_path(decision) == [("Suspended", "Created", "PyTorchJobResumed")]
    assert decision.record.state == "Created"
    assert not any(p.action.name == "cleanupPods" for p in decision.actions)
