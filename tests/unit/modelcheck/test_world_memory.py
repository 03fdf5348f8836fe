"""What a world keeps instead of reading it again (the model checker's copies share it):
the record its last pass decided on, which its status holds, and the view of each spec
its branches edit the job into. Each is what reading the job afresh gives, in every
situation a check explores."""

from __future__ import annotations

import copy

import pytest

from engine.controller.reconcile.jobspec import read_job_spec
from engine.controller.reconcile.record import read_record
from engine.definition import load_definitions
from engine.kube.resources import PODS, SERVICES
from engine.modelcheck.explore import _Explorer
from engine.modelcheck.shapes import Bounds, Shape
from engine.simulation import kubelet
from engine.simulation.world import _WorldApi
from tests.kinds import MACHINES


@pytest.mark.parametrize(("machine", "shape"), [
    ("tfjob.yaml", Shape((("Chief", 1),), "ExitCode")),
    ("batch-job.yaml", Shape((("Job", 1),), "Never", pool=(2, 1))),
])
def test_every_explored_world_keeps_the_record_and_spec_its_job_reads_as(
    machine: str, shape: Shape,
) -> None:
    (definition,) = load_definitions([MACHINES / machine])
    explorer = _Explorer(definition, shape, Bounds(), (0, 1, 128))
    explorer.run()
    worlds = [node.world for node in explorer.nodes]
    assert len(worlds) > 20
    assert {w.job["metadata"]["generation"] for w in worlds} >= {1, 2, 3}  # edited specs
    for world in worlds:
        assert world.record == read_record(world.job["status"])
        assert world.spec == read_job_spec(world.job, definition)


def test_a_copy_shares_the_status_a_pass_replaces_and_nothing_it_changes() -> None:
    (definition,) = load_definitions([MACHINES / "batch-job.yaml"])
    explorer = _Explorer(definition, Shape((("Job", 1),), "Never"), Bounds(), (0, 1))
    explorer.run()
    world = explorer.nodes[1].world
    copied = world.copy()
    assert copied.job["status"] is world.job["status"]
    assert copied.job["spec"] is world.job["spec"]
    assert copied.job["metadata"] is not world.job["metadata"]
    assert all(copied.pods[r] is not p for r, p in world.pods.items())
    copied.reconcile()
    copied.edit_spec(lambda spec: spec.update(suspend=True))
    assert copied.job["spec"] is not world.job["spec"]
    copied.reconcile()
    assert world.record == read_record(world.job["status"])
    assert "suspend" not in world.job["spec"]


def test_a_copys_pods_share_their_specs_values_and_nothing_a_move_or_patch_changes() -> None:
    """A copy's pods are its own but for the values of their specs (containers...), which
    nothing changes in place: losing a node sets the copy's `nodeName` only, and a patch of
    the spec copies it first. Its services are the original's until a patch copies one."""
    (definition,) = load_definitions([MACHINES / "tfjob.yaml"])
    explorer = _Explorer(definition, Shape((("Chief", 1),), "ExitCode"), Bounds(), (0, 1, 128))
    explorer.run()
    world = next(n.world for n in explorer.nodes if n.world.pods)
    replica, pod = next(iter(world.pods.items()))
    pod["spec"]["securityContext"] = {"runAsUser": 1000}
    before = copy.deepcopy(pod)
    copied = world.copy()
    mine = copied.pods[replica]
    assert mine == pod and mine is not pod and mine["spec"] is not pod["spec"]
    assert mine["spec"]["containers"] is pod["spec"]["containers"]
    assert mine["metadata"] is not pod["metadata"] and mine["status"] is not pod["status"]
    kubelet.lose(mine)
    kubelet.end(mine, 1, copied.now)
    kubelet.mark_deleted(mine, copied.now)
    _WorldApi(copied).patch(PODS, mine["metadata"]["name"],
                            {"spec": {"securityContext": {"runAsUser": 0}}})
    assert mine["spec"]["securityContext"] == {"runAsUser": 0}
    assert pod == before
    service = world.services[replica]
    served = copy.deepcopy(service)
    assert copied.services[replica] is service
    _WorldApi(copied).patch(SERVICES, service["metadata"]["name"],
                            {"metadata": {"labels": {"patched": "yes"}}})
    assert copied.services[replica]["metadata"]["labels"]["patched"] == "yes"
    assert service == served
