"""A create answered AlreadyExists (actions._explain_existing): the object of that name is
read back; the job's own or an orphan is left to the next pass to claim, another
controller's is a NameConflict Warning (and a log line) and is not taken; either way the
pass looks again half a second later. One gone again meanwhile is looked at again too."""

from __future__ import annotations

from typing import Any

from engine.controller.reconcile.actions import execute
from engine.kube.errors import AlreadyExists
from tests.scenarios.world import machine_job, worker
from tests.unit.controller.action_runs import (
    Api,
    Recorder,
    Said,
    action_run,
    judged,
    logged,
    obj,
    planned,
    world_of,
)

EXISTS = AlreadyExists(409, "AlreadyExists", "exists", {})


def create_over(existing: dict[str, dict[str, Any]] | None
                ) -> tuple[Api, Recorder, list[float], list[tuple[str, str, Any]]]:
    """One pass whose createPod of Worker-1 is answered AlreadyExists, the pod of that name
    being `existing` (None: gone again)."""
    world = world_of(machine_job(workers=2))
    decision, facts = judged(world, actions=(planned("createPod", worker(1)),))
    api = Api(existing=existing or {}, refuse={("create", "train-worker-1"): EXISTS})
    recorder = Recorder()
    run = action_run(world, decision, api, recorder, facts=facts)
    with logged() as lines:
        execute(run)
    return api, recorder, run.wait_s, lines


def test_another_controllers_pod_is_a_name_conflict() -> None:
    pod = obj("train-worker-1", owner="uid-someone-else")
    api, recorder, wait_s, lines = create_over({"train-worker-1": pod})
    assert api.sent == [("create", "pods", "train-worker-1", "team"),
                        ("get", "pods", "train-worker-1", "team")]
    assert recorder.said == [Said(
        "train", "Warning", "NameConflict",
        "Worker-1: Pod train-worker-1 exists and belongs to another controller", None)]
    assert wait_s == [0.5]
    warnings = [(message, extra) for level, message, extra in lines if level == "WARNING"]
    assert warnings == [("Pod train-worker-1 belongs to another controller",
                         {"job": "team/train", "kind": "MachineJob",
                          "replica": "Worker-1"})]


def test_the_jobs_own_pod_or_an_orphan_is_left_to_the_next_pass() -> None:
    for owner in ("uid-train", None):
        api, recorder, wait_s, lines = create_over(
            {"train-worker-1": obj("train-worker-1", owner=owner)})
        assert api.verbs("get") == ["train-worker-1"]
        assert recorder.said == []
        assert wait_s == [0.5]
        assert not [line for line in lines if line[0] == "WARNING"]


def test_a_pod_gone_again_is_looked_at_again_soon() -> None:
    api, recorder, wait_s, _ = create_over(None)
    assert [(verb, plural) for verb, plural, *_ in api.sent] == [("create", "pods"),
                                                                 ("get", "pods")]
    assert recorder.said == []
    assert wait_s == [0.5]
