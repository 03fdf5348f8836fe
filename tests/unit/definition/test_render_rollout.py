"""A rollout rendered for one job (rendering.render_rollout), through the shipped Deployment
machine: the values a Deployment's spec gives, their defaults, nulls left out of the
selector and template, and the words of each value of the wrong kind."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest

from engine.definition import CompiledDefinition, load_definitions
from engine.definition.cel import CelEvaluationError
from engine.definition.rendering import RenderedRollout, render_rollout
from engine.definition.vocabulary import job_value
from engine.shipped import shipped_dir

TEMPLATE: dict[str, Any] = {"metadata": {"labels": {"app": "web"}},
                            "spec": {"containers": [{"name": "web", "image": "nginx"}]}}
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "team"},
    "spec": {"selector": {"matchLabels": {"app": "web"}}, "template": TEMPLATE},
}
SHIPPED = shipped_dir("machines") / "deployment.yaml"


def machine(path: Path = SHIPPED) -> CompiledDefinition:
    [compiled] = load_definitions([path])
    return compiled


def rendered(compiled: CompiledDefinition | None = None, **spec: Any) -> RenderedRollout:
    job = copy.deepcopy(DEPLOYMENT)
    job["spec"].update(spec)
    rollout = (compiled or machine()).rollout
    assert rollout is not None
    return render_rollout(rollout, {"job": job_value(job)})


def test_a_deployment_with_only_a_selector_and_template_gets_the_defaults() -> None:
    assert rendered() == RenderedRollout(
        replicas=1, selector={"matchLabels": {"app": "web"}}, template=TEMPLATE,
        strategy="RollingUpdate", max_surge="25%", max_unavailable="25%", paused=False,
        min_ready_seconds=0, revision_history_limit=10, progress_deadline_seconds=600,
        child_api_version="apps/v1", child_kind="ReplicaSet")


def test_the_values_a_deployment_gives_are_kept_zero_included() -> None:
    made = rendered(replicas=0, paused=True, minReadySeconds=0, revisionHistoryLimit=0,
                    progressDeadlineSeconds=0, strategy={
                        "type": "Recreate", "rollingUpdate": {"maxSurge": 0,
                                                              "maxUnavailable": "50%"}})
    assert (made.replicas, made.paused, made.min_ready_seconds, made.revision_history_limit,
            made.progress_deadline_seconds, made.strategy, made.max_surge,
            made.max_unavailable) == (0, True, 0, 0, 0, "Recreate", 0, "50%")
    made = rendered(replicas=3, minReadySeconds=5, revisionHistoryLimit=2,
                    progressDeadlineSeconds=30)
    assert (made.replicas, made.min_ready_seconds, made.revision_history_limit,
            made.progress_deadline_seconds) == (3, 5, 2, 30)


def test_a_null_history_limit_or_deadline_is_none_and_a_null_leaves_a_field_out() -> None:
    made = rendered(revisionHistoryLimit=None, progressDeadlineSeconds=None,
                    selector={"matchLabels": {"app": "web"}, "matchExpressions": None},
                    template={**TEMPLATE, "spec": {**TEMPLATE["spec"], "nodeName": None}})
    assert (made.revision_history_limit, made.progress_deadline_seconds) == (None, None)
    assert made.selector == {"matchLabels": {"app": "web"}}
    assert made.template == TEMPLATE


@pytest.mark.parametrize(("spec", "words"), [
    ({"replicas": None}, "rollout.replicas gave None, not a count (0 or more)"),
    ({"replicas": -1}, "rollout.replicas gave -1, not a count (0 or more)"),
    ({"replicas": True}, "rollout.replicas gave True, not a count (0 or more)"),
    ({"replicas": "3"}, "rollout.replicas gave '3', not a count (0 or more)"),
    ({"minReadySeconds": -1}, "rollout.minReadySeconds gave -1, not a count (0 or more)"),
    ({"minReadySeconds": None}, "rollout.minReadySeconds gave None, not a count (0 or more)"),
    ({"revisionHistoryLimit": -1},
     "rollout.revisionHistoryLimit gave -1, not a count (0 or more)"),
    ({"progressDeadlineSeconds": False},
     "rollout.progressDeadlineSeconds gave False, not a count (0 or more)"),
    ({"strategy": {"type": "BlueGreen"}},
     "rollout.strategy gave 'BlueGreen', not one of RollingUpdate, Recreate"),
    ({"selector": "app=web"}, "rollout.selector gave 'app=web', not a map"),
    ({"template": ["web"]}, "rollout.template gave ['web'], not a map"),
    ({"strategy": {"rollingUpdate": {"maxSurge": True}}},
     "rollout.maxSurge gave True, not an int or a percentage"),
    ({"strategy": {"rollingUpdate": {"maxSurge": 1.5}}},
     "rollout.maxSurge gave 1.5, not an int or a percentage"),
    ({"strategy": {"rollingUpdate": {"maxUnavailable": None}}},
     "rollout.maxUnavailable gave None, not an int or a percentage"),
], ids=lambda value: str(value)[:40])
def test_a_value_of_the_wrong_kind_is_named_with_what_it_gave(
    spec: dict[str, Any], words: str,
) -> None:
    with pytest.raises(CelEvaluationError) as raised:
        rendered(**spec)
    assert str(raised.value) == words


def test_a_paused_value_that_is_no_bool_is_named(tmp_path: Path) -> None:
    # The shipped machine's expression fails on a non-bool itself; one reading the field
    # as it is leaves the check to the rendering.
    text = SHIPPED.read_text()
    shipped = 'paused: "has(job.spec.paused) && job.spec.paused"'
    assert text.count(shipped) == 1
    (tmp_path / "deployment.yaml").write_text(text.replace(
        shipped, "paused: \"has(job.spec.paused) ? job.spec.paused : false\""))
    compiled = machine(tmp_path / "deployment.yaml")
    assert rendered(compiled, paused=True).paused is True
    with pytest.raises(CelEvaluationError) as raised:
        rendered(compiled, paused="yes")
    assert str(raised.value) == "rollout.paused gave 'yes', not a bool"
