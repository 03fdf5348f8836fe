"""A pod whose machine values cannot be computed (actions._decorations): no pod is made; the
job is told in a PodTemplateError Warning naming the replica, the machine and its revision
(`?` when the status names none), the cause and what to do; the pass keeps the error for
the job's ReplicaFailure condition, logs it for the replica and tries again in 30 seconds."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from engine.controller.reconcile import actions
from engine.controller.reconcile.actions import TemplateError, execute
from engine.definition import CompiledDefinition
from engine.definition.cel import CelEvaluationError
from tests.scenarios.world import machine_job, worker
from tests.unit.controller.action_runs import (
    Api,
    Recorder,
    Said,
    action_run,
    judged,
    logged,
    planned,
    world_of,
)

CAUSE = "'env': no such key"


def failing(definition: CompiledDefinition, variables: Mapping[str, Any]) -> Any:
    raise CelEvaluationError(CAUSE)


@pytest.mark.parametrize(("status", "revision"), [
    ({"machine": "machinejob-7"}, "machinejob-7"), ({}, "?"), (None, "?")])
def test_a_pod_whose_values_fail_is_not_made_and_the_job_is_told(
        monkeypatch: pytest.MonkeyPatch, status: dict[str, str] | None, revision: str) -> None:
    world = world_of(machine_job(workers=2))
    decision, facts = judged(world, actions=(planned("createPod", worker(1)),))
    if status is None:
        world.job.pop("status", None)
    else:
        world.job["status"] = status
    monkeypatch.setattr(actions, "render_pod_decorations", failing)
    api, recorder = Api(), Recorder()
    run = action_run(world, decision, api, recorder, facts=facts)
    with logged() as lines:
        execute(run)
    message = (f"Worker-1: the pod values of machine {world.definition.name} (revision "
               f"{revision}) cannot be computed: {CAUSE}; once a fixed machine is accepted, a "
               "job that has created no pod runs with it")
    assert api.sent == []
    assert recorder.said == [Said("train", "Warning", "PodTemplateError", message, None)]
    assert run.template_errors == [TemplateError(CAUSE, message)]
    assert run.wait_s == [30.0]
    assert [(level, text, extra) for level, text, extra in lines] == [
        ("WARNING", f"pod values cannot be computed: {CAUSE}",
         {"job": "team/train", "kind": "MachineJob", "replica": "Worker-1"})]
