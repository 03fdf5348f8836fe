"""The deletions a held replica replays (`_replay_held_deletions`): rendered with the replica's
own variables and the job's surroundings, every held replica's errors said.

A job that holds its replicas does not step them, yet a replica in a state that deletes its
pod replays that deletion while the pod is there; its `onEnter` actions are rendered again
for it, and what fails to render is an error of the decision, for each replica.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.controller.reconcile.decide import Decision, decide
from engine.controller.reconcile.jobspec import read_job_spec
from engine.controller.reconcile.observe import job_observations
from engine.controller.reconcile.record import read_record
from engine.controller.reconcile.variables import Surroundings
from engine.definition import CompiledDefinition, load_definitions
from engine.kube.timestamps import format_time
from tests.kinds import MACHINES
from tests.scenarios.world import DEFINITIONS, World, machine_job, observe, pending, worker

TIMED_OUT_ON_ENTER = "        onEnter: [deletePod]\n      RestartRequested:\n"
TIMED_OUT_SAYS = """\
        onEnter:
          - deletePod
          - event:
              reason: TimedOut
              message: >-
                ${job.metadata.name} ${policy.lowerAscii()} ${string(replica.desired + 1)}
                ${ {'volcano': 'gang'}[gangScheduler] }
      RestartRequested:
"""
"""PendingTimedOut's `onEnter` with an Event whose message fails to render unless the
replica's variables (the job, its policy and desired count) and the job's surroundings
(gang scheduled with volcano) are all there."""


@pytest.fixture(scope="module")
def definition(tmp_path_factory: pytest.TempPathFactory) -> CompiledDefinition:
    """The shipped MachineJob machine whose PendingTimedOut also says `TIMED_OUT_SAYS`."""
    folder = tmp_path_factory.mktemp("machines")
    text = (MACHINES / "job.yaml").read_text()
    assert text.count(TIMED_OUT_ON_ENTER) == 1
    (folder / "job.yaml").write_text(text.replace(TIMED_OUT_ON_ENTER, TIMED_OUT_SAYS))
    [loaded] = load_definitions([Path(folder)])
    return loaded


@pytest.fixture
def held(definition: CompiledDefinition, monkeypatch: pytest.MonkeyPatch) -> World:
    """Two Workers that timed out Pending: the job is Failing (it holds its replicas, its
    clean-up deletes nothing) and both pods are still there."""
    monkeypatch.setitem(DEFINITIONS, "MachineJob", definition)
    world = World(machine_job(workers=2, policy="OnFailure", run_policy={
        "pendingTimeoutSeconds": 60, "cleanPodPolicy": "None"}))
    world.reconcile()
    world.pods = {worker(0): pending(), worker(1): pending()}
    world.advance(61)
    timed_out = world.reconcile()
    assert timed_out.phase == "Failing"
    assert timed_out.decision.record.replica_states == {
        worker(0): "PendingTimedOut", worker(1): "PendingTimedOut"}
    return world


def decide_held(world: World, surroundings: Surroundings) -> Decision:
    """One decision for the world's job, as the reconcile makes it, in `surroundings`."""
    spec = read_job_spec(world.job, world.definition)
    facts, terminating = observe(world.pods, spec, world.restart_attempt)
    return decide(
        world.definition, world.job, spec, read_record(world.job["status"]), facts,
        job_observations=job_observations(
            world.job, spec, start_time=world.job["status"].get("startTime"), now=world.now,
            terminating_pods=terminating),
        now=format_time(world.now), surroundings=surroundings)


def replayed(decision: Decision) -> list[tuple[str, str]]:
    return [(p.action.name, str(p.replica)) for p in decision.actions
            if p.replica is not None and p.replayed]


def test_a_held_replica_renders_its_replay_with_its_own_variables_and_the_surroundings(
    held: World,
) -> None:
    decision = decide_held(held, Surroundings(gang_scheduler="volcano"))
    assert decision.record.state == "Failing"
    assert replayed(decision) == [("deletePod", "Worker-0"), ("deletePod", "Worker-1")]
    assert decision.errors == ()


def test_every_held_replica_whose_replay_fails_to_render_is_said(held: World) -> None:
    # Not gang scheduled: the Event's message cannot be rendered, for either Worker; their
    # deletions are replayed all the same.
    decision = decide_held(held, Surroundings())
    assert replayed(decision) == [("deletePod", "Worker-0"), ("deletePod", "Worker-1")]
    assert [error.split(":")[0] for error in decision.errors] == ["Worker-0", "Worker-1"]
    assert all("gangScheduler" in error or "no such key" in error
               for error in decision.errors), decision.errors
