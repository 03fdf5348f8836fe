"""The rollout's decisions (engine/controller/rollouts), against upstream's deployment
controller: intstr resolution, the rolling steps within maxSurge and maxUnavailable,
Recreate, revision numbers on a rollback, the history limit, and the conditions."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engine.controller.rollouts.numbers import (
    BoundError,
    fenceposts,
    max_unavailable,
    scaled_value,
    template_hash,
)
from engine.controller.rollouts.plan import RolloutInput, RolloutPlan, plan_rollout
from engine.controller.rollouts.revisions import Create, Delete, Revision, Update
from engine.definition import RenderedRollout

NOW = datetime(2026, 11, 30, 12, 0, tzinfo=UTC)
V1 = {"metadata": {"labels": {"app": "web"}},
      "spec": {"containers": [{"name": "c", "image": "a:1"}]}}
V2 = {"metadata": {"labels": {"app": "web"}},
      "spec": {"containers": [{"name": "c", "image": "a:2"}]}}


@pytest.mark.parametrize(("value", "total", "up", "wanted"), [
    ("25%", 3, True, 1), ("25%", 3, False, 0), ("25%", 4, False, 1), ("50%", 5, True, 3),
    ("50%", 5, False, 2), (2, 10, True, 2), ("0%", 7, True, 0), ("100%", 3, False, 3),
])
def test_percentages_round_as_upstreams_intstr(value: Any, total: int, up: bool,
                                               wanted: int) -> None:
    assert scaled_value(value, total, round_up=up) == wanted


def test_both_bounds_zero_make_one_unavailable_and_a_bad_value_is_refused() -> None:
    assert fenceposts("25%", "25%", 3) == (1, 0)
    assert fenceposts(0, 0, 3) == (0, 1)
    assert max_unavailable(True, 0, 5, 3) == 3  # never more than the replicas
    assert max_unavailable(False, 1, 1, 3) == 0  # Recreate
    with pytest.raises(BoundError):
        scaled_value("25", 3, round_up=True)


def test_the_hash_is_upstreams_form_and_changes_with_the_template_and_collisions() -> None:
    one = template_hash(V1)
    assert one == template_hash({"spec": V1["spec"], "metadata": V1["metadata"]})
    assert set(one) <= set("bcdfghjklmnpqrstvwxz2456789") and 1 <= len(one) <= 10
    assert one != template_hash(V2) and one != template_hash(V1, 1)


def rollout(**overrides: Any) -> RenderedRollout:
    values: dict[str, Any] = dict(
        replicas=3, selector={"matchLabels": {"app": "web"}}, template=V2,
        strategy="RollingUpdate", max_surge="25%", max_unavailable="25%", paused=False,
        min_ready_seconds=0, revision_history_limit=10, progress_deadline_seconds=600,
        child_api_version="apps/v1", child_kind="ReplicaSet")
    values.update(overrides)
    return RenderedRollout(**values)


def revision(name: str, template: dict[str, Any], *, replicas: int, available: int,
             number: int, created: str, desired: int = 3) -> Revision:
    labels = {**template["metadata"]["labels"], "pod-template-hash": name}
    return Revision.of({
        "metadata": {"name": f"web-{name}", "uid": name, "resourceVersion": "7",
                     "creationTimestamp": created, "generation": 1,
                     "annotations": {"deployment.kubernetes.io/revision": str(number),
                                     "deployment.kubernetes.io/desired-replicas": str(desired),
                                     "deployment.kubernetes.io/max-replicas": str(desired + 1)}},
        "spec": {"replicas": replicas, "template": {**template, "metadata": {"labels": labels}}},
        "status": {"replicas": replicas, "readyReplicas": available,
                   "availableReplicas": available, "observedGeneration": 1},
    })


def plan(children: list[Revision], stored: dict[str, Any] | None = None,
         **overrides: Any) -> RolloutPlan:
    job = {"metadata": {"name": "web", "namespace": "ns", "uid": "d", "generation": 2,
                        "annotations": {"deployment.kubernetes.io/revision": "1"}},
           "apiVersion": "apps/v1", "kind": "Deployment"}
    return plan_rollout(RolloutInput(job=job, stored=stored or {}, children=children,
                                     rollout=rollout(**overrides), now=NOW))


def sizes(result: RolloutPlan) -> list[tuple[str, int]]:
    return [(op.name, op.replicas) for op in result.operations if isinstance(op, Update)]


def test_a_template_change_makes_a_hash_named_revision_of_one_pod_first() -> None:
    old = revision("aaa", V1, replicas=3, available=3, number=1, created="t1")
    result = plan([old], {"replicas": 3, "updatedReplicas": 3, "readyReplicas": 3,
                          "availableReplicas": 3})
    (create,) = [op for op in result.operations if isinstance(op, Create)]
    body = create.body
    digest = template_hash(V2)
    assert body["metadata"]["name"] == f"web-{digest}" and create.replicas == 1
    assert body["spec"]["selector"]["matchLabels"] == {"app": "web", "pod-template-hash": digest}
    assert body["spec"]["template"]["metadata"]["labels"]["pod-template-hash"] == digest
    assert body["metadata"]["annotations"]["deployment.kubernetes.io/revision"] == "2"
    assert body["metadata"]["annotations"]["deployment.kubernetes.io/max-replicas"] == "4"
    assert body["metadata"]["ownerReferences"][0]["controller"] is True
    assert result.job_revision == "2"
    assert [n.message for n in result.notices] == [
        f"Scaled up replica set web-{digest} from 0 to 1"]
    progressing = next(c for c in result.status["conditions"] if c["type"] == "Progressing")
    assert (progressing["reason"], progressing["message"]) == (
        "NewReplicaSetCreated", f'Created new replica set "web-{digest}"')


def test_old_pods_go_only_while_three_stay_available() -> None:
    old = revision("aaa", V1, replicas=3, available=3, number=1, created="t1")
    new = revision("bbb", V2, replicas=1, available=0, number=2, created="t2")
    assert sizes(plan([old, new])) == []  # 4 wanted, the new pod not available yet
    new = revision("bbb", V2, replicas=1, available=1, number=2, created="t2")
    assert sizes(plan([old, new])) == [("web-aaa", 2)]  # 4 available: one old may go
    old = revision("aaa", V1, replicas=2, available=2, number=1, created="t1")
    assert sizes(plan([old, new])) == [("web-bbb", 2)]  # 3 wanted: the new one grows


def test_unhealthy_old_pods_go_first_and_recreate_waits_for_old_pods() -> None:
    old = revision("aaa", V1, replicas=3, available=1, number=1, created="t1")
    new = revision("bbb", V2, replicas=1, available=1, number=2, created="t2")
    assert sizes(plan([old, new], max_unavailable=1)) == [("web-aaa", 1)]
    old = revision("aaa", V1, replicas=3, available=3, number=1, created="t1")
    result = plan([old], strategy="Recreate")
    assert sizes(result) == [("web-aaa", 0)]
    assert not [op for op in result.operations if isinstance(op, Create)]
    emptied = revision("aaa", V1, replicas=0, available=0, number=1, created="t1")
    emptied.running_pods = 1  # a pod being deleted still runs
    result = plan([emptied], strategy="Recreate")
    assert not result.operations and result.wake_at == NOW + timedelta(seconds=1)
    emptied.running_pods = 0
    (create,) = plan([emptied], strategy="Recreate").operations
    assert isinstance(create, Create) and create.replicas == 3


def test_a_rollback_raises_the_old_revisions_number_and_keeps_its_history() -> None:
    first = revision("aaa", V2, replicas=0, available=0, number=1, created="t1")
    second = revision("bbb", V1, replicas=3, available=3, number=2, created="t2")
    result = plan([first, second])
    update = next(op for op in result.operations if isinstance(op, Update))
    assert update.name == "web-aaa"
    assert update.annotations["deployment.kubernetes.io/revision"] == "3"
    assert update.annotations["deployment.kubernetes.io/revision-history"] == "1"


def test_history_beyond_the_limit_is_deleted_lowest_revision_first_once_complete() -> None:
    children = [revision(f"r{n}", V1 if n < 3 else V2, replicas=0 if n < 3 else 3,
                         available=0 if n < 3 else 3, number=n, created=f"t{n}")
                for n in (1, 2, 3)]
    children[2].obj["metadata"]["annotations"]["deployment.kubernetes.io/revision"] = "3"
    result = plan(children, revision_history_limit=1)
    assert [op.name for op in result.operations if isinstance(op, Delete)] == ["web-r1"]


def test_conditions_say_complete_progressing_and_a_passed_deadline() -> None:
    new = revision("bbb", V2, replicas=3, available=3, number=1, created="t1")
    result = plan([new])
    reasons = {c["type"]: c["reason"] for c in result.status["conditions"]}
    assert reasons == {"Available": "MinimumReplicasAvailable",
                       "Progressing": "NewReplicaSetAvailable"}
    stuck = revision("bbb", V2, replicas=3, available=0, number=1, created="t1")
    since = NOW - timedelta(seconds=601)
    stored = {"replicas": 3, "updatedReplicas": 3, "conditions": [
        {"type": "Progressing", "status": "True", "reason": "ReplicaSetUpdated",
         "lastUpdateTime": since.strftime("%Y-%m-%dT%H:%M:%SZ"),
         "lastTransitionTime": since.strftime("%Y-%m-%dT%H:%M:%SZ")}]}
    result = plan([stuck], stored)
    conditions = {c["type"]: c for c in result.status["conditions"]}
    assert conditions["Progressing"]["reason"] == "ProgressDeadlineExceeded"
    assert conditions["Progressing"]["status"] == "False"
    assert conditions["Available"]["reason"] == "MinimumReplicasUnavailable"
    stored["conditions"][0]["lastUpdateTime"] = NOW.strftime("%Y-%m-%dT%H:%M:%SZ")
    result = plan([stuck], stored)
    assert result.wake_at == NOW + timedelta(seconds=600, milliseconds=100)


def test_paused_resizes_only_and_says_so() -> None:
    old = revision("aaa", V1, replicas=3, available=3, number=1, created="t1")
    result = plan([old], replicas=5, paused=True)
    assert sizes(result) == [("web-aaa", 5)]
    assert not [op for op in result.operations if isinstance(op, Create)]
    progressing = next(c for c in result.status["conditions"] if c["type"] == "Progressing")
    assert (progressing["status"], progressing["reason"]) == ("Unknown", "DeploymentPaused")


def test_a_scale_mid_rollout_is_shared_in_proportion_to_each_revisions_size() -> None:
    """10 -> 20 replicas while a rollout is half way (new 6, old 7, both sized for 13 =
    10 + maxSurge 3): 25 allowed now (20 + 5), 12 to add, shared 6 and 6 by each
    revision's share of 13 (upstream's GetProportion), the larger first."""
    old = revision("aaa", V1, replicas=7, available=7, number=1, created="t1", desired=10)
    new = revision("bbb", V2, replicas=6, available=0, number=2, created="t2", desired=10)
    for found in (old, new):
        found.annotations["deployment.kubernetes.io/max-replicas"] = "13"
    result = plan([old, new], replicas=20)
    assert sizes(result) == [("web-aaa", 13), ("web-bbb", 12)]
    assert [n.message for n in result.notices] == [
        "Scaled up replica set web-aaa from 7 to 13", "Scaled up replica set web-bbb from 6 to 12"]


def test_a_scale_down_takes_from_the_larger_and_the_leftover_from_the_first() -> None:
    """20 -> 10 with new 12 and old 13 sized for 25: 13 allowed (10 + maxSurge 3), 12 to
    remove: old round(13 * 13 / 25) = 7 (-6), new round(12 * 13 / 25) = 6 (-6)."""
    old = revision("aaa", V1, replicas=13, available=13, number=1, created="t1", desired=20)
    new = revision("bbb", V2, replicas=12, available=0, number=2, created="t2", desired=20)
    for found in (old, new):
        found.annotations["deployment.kubernetes.io/max-replicas"] = "25"
    assert sizes(plan([old, new], replicas=10)) == [("web-aaa", 7), ("web-bbb", 6)]


def test_unavailable_counts_what_the_revisions_want_not_the_replicas() -> None:
    """calculateStatus: 4 wanted during a surge (3 + 1) with 3 available is 1 unavailable;
    upstream leaves it 0 (omitempty) once everything wanted is available."""
    old = revision("aaa", V1, replicas=3, available=3, number=1, created="t1")
    new = revision("bbb", V2, replicas=1, available=0, number=2, created="t2")
    assert plan([old, new]).status["unavailableReplicas"] == 1
    done = revision("bbb", V2, replicas=3, available=3, number=2, created="t2")
    assert "unavailableReplicas" not in plan([done]).status
