"""A revision the API server would not make (engine/controller/rollouts/run.py): upstream's
Warning ReplicaSetCreateError and Progressing False in its words, no ScalingReplicaSet
Event for it, and a hash collision counted instead when its name is taken."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any, cast

from engine.controller.reconcile.children import JobKey
from engine.controller.reconcile.notices import Notice
from engine.controller.reporting.events import EventRecorder
from engine.controller.rollouts.plan import RolloutPlan
from engine.controller.rollouts.run import COLLISION, RolloutRun, not_made
from engine.kube.cache import Cache
from engine.kube.client import KubeClient
from engine.kube.resources import Resource

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
JOB = {"apiVersion": "apps/v1", "kind": "Deployment",
       "metadata": {"name": "web", "namespace": "ns", "uid": "d"}}


class Recorder:
    def __init__(self) -> None:
        self.said: list[tuple[str, str, str]] = []

    def record(self, _involved: Any, *, type: str, reason: str, message: str,
               replica: str | None = None) -> None:
        self.said.append((type, reason, message))


def run(recorder: Recorder) -> RolloutRun:
    return RolloutRun(
        client=cast(KubeClient, None), recorder=cast(EventRecorder, recorder),
        key=JobKey("Deployment", "ns", "web"), job=JOB,
        resource=Resource("apps", "v1", "deployments", "Deployment", namespaced=True),
        rollout=cast(Any, None), variables={}, children=None, now=NOW,
        pods=cast(Cache, None))


def planned() -> RolloutPlan:
    return RolloutPlan(
        notices=[Notice("Normal", "ScalingReplicaSet",
                        "Scaled up replica set web-abc from 0 to 1"),
                 Notice("Normal", "ScalingReplicaSet",
                        "Scaled down replica set web-old from 3 to 2")],
        status={"conditions": [{"type": "Progressing", "status": "True",
                                "reason": "NewReplicaSetCreated"}]})


def test_a_refusal_is_upstreams_replica_set_create_error() -> None:
    recorder, plan, stored = Recorder(), planned(), {}
    not_made(run(recorder), plan, stored, "web-abc", 'ReplicaSet.apps "web-abc" is invalid')
    message = 'Failed to create new replica set "web-abc": ReplicaSet.apps "web-abc" is invalid'
    assert recorder.said == [("Warning", "ReplicaSetCreateError", message)]
    assert [n.message for n in plan.notices] == ["Scaled down replica set web-old from 3 to 2"]
    (progressing,) = plan.status["conditions"]
    assert (progressing["status"], progressing["reason"], progressing["message"]) == (
        "False", "ReplicaSetCreateError", message)
    assert plan.wake_at == NOW + timedelta(seconds=30)


def test_a_taken_name_counts_a_collision_and_says_nothing() -> None:
    recorder, plan = Recorder(), planned()
    stored: dict[str, Any] = {"collisionCount": 2}
    not_made(run(recorder), plan, stored, "web-abc", COLLISION)
    assert recorder.said == [] and plan.status["collisionCount"] == 3
    assert [n.message for n in plan.notices] == ["Scaled down replica set web-old from 3 to 2"]
