"""A replica's service and its pod, created in one pass, are made of one rendering of the
machine's values for it (env, labels, ...): the service takes the pod's labels, and the
machine's expressions are evaluated once, not once per object. A rendering that fails is
not kept: each create says its PodTemplateError, as before."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from engine.controller.reconcile import actions
from engine.controller.reconcile.actions import execute
from engine.definition import CompiledDefinition
from engine.definition.cel import CelEvaluationError
from tests.scenarios.world import MASTER, pytorch_job
from tests.unit.controller.action_runs import Api, Recorder, action_run, judged, planned, world_of


def counted(monkeypatch: pytest.MonkeyPatch, *, fail: bool = False) -> list[str]:
    """The renderings of pod values made from now on (by machine name); each raises when
    `fail`."""
    made: list[str] = []
    render = actions.render_pod_decorations

    def counting(definition: CompiledDefinition, variables: Mapping[str, Any]) -> Any:
        made.append(definition.name)
        if fail:
            raise CelEvaluationError("'env': no such key")
        return render(definition, variables)

    monkeypatch.setattr(actions, "render_pod_decorations", counting)
    return made


def created(monkeypatch: pytest.MonkeyPatch, *, fail: bool = False
            ) -> tuple[Api, Recorder, list[str]]:
    world = world_of(pytorch_job())
    decision, facts = judged(world, actions=(planned("createService", MASTER),
                                             planned("createPod", MASTER)))
    made = counted(monkeypatch, fail=fail)
    api, recorder = Api(), Recorder()
    execute(action_run(world, decision, api, recorder, facts=facts))
    return api, recorder, made


def test_a_service_and_its_pod_are_made_of_one_rendering(
        monkeypatch: pytest.MonkeyPatch) -> None:
    api, _, made = created(monkeypatch)
    assert [(verb, plural) for verb, plural, _, _ in api.sent] == [
        ("create", "services"), ("create", "pods")]
    assert made == ["pytorchjob"]


def test_the_service_carries_the_pods_machine_labels(monkeypatch: pytest.MonkeyPatch) -> None:
    world = world_of(pytorch_job())
    decision, facts = judged(world, actions=(planned("createService", MASTER),
                                             planned("createPod", MASTER)))
    bodies: list[dict[str, Any]] = []
    api = Api()
    original = api.create

    def create(resource: Any, body: dict[str, Any], namespace: str) -> dict[str, Any]:
        bodies.append(body)
        return original(resource, body, namespace)

    monkeypatch.setattr(api, "create", create)
    execute(action_run(world, decision, api, Recorder(), facts=facts))
    service, pod = bodies
    assert service["metadata"]["labels"].items() <= pod["metadata"]["labels"].items()
    assert service["metadata"]["labels"]["training.kubeflow.org/replica-type"] == "master"


def test_a_rendering_that_fails_is_tried_again_and_said_by_each_create(
        monkeypatch: pytest.MonkeyPatch) -> None:
    api, recorder, made = created(monkeypatch, fail=True)
    assert api.sent == []
    assert made == ["pytorchjob", "pytorchjob"]
    assert [said.reason for said in recorder.said] == ["PodTemplateError", "PodTemplateError"]
