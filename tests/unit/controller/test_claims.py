"""Which children belong to a job, with a fake client and a real cache: ours by controller
reference (relabelled when their labels drifted), orphans adopted only after one fresh read
of the job, and the exact writes each case makes (field notes, stories 1 and 2)."""

from __future__ import annotations

import copy
from typing import Any

import pytest

from engine.controller.reconcile import claims
from engine.controller.reconcile.children import (
    JOB_NAME_LABEL,
    ReplicaId,
    child_labels,
    owner_reference,
)
from engine.controller.reconcile.claims import AdoptionGuard, Claimed, ClaimedBefore, claim
from engine.controller.reconcile.objects import OBJECT_LABEL
from engine.kube.cache import Cache
from engine.kube.errors import Conflict, NotFound
from engine.kube.resources import PODS, SERVICES, Resource
from tests.kinds import KINDS
from tests.unit.controller.uid_answers import refuse_another_uid

JOB: dict[str, Any] = {
    "apiVersion": "kubeflow.org/v1",
    "kind": "PyTorchJob",
    "metadata": {"name": "pt", "namespace": "ns", "uid": "job-uid"},
}
TYPES = ("Master", "Worker")
WORKER_1 = ReplicaId("Worker", 1)
JOBS = KINDS["PyTorchJob"]


class FakeClient:
    """The job as the server has it now, the children by name; every call, in order."""

    def __init__(self, fresh_job: dict[str, Any] | None, children: list[dict[str, Any]]) -> None:
        self.fresh_job = fresh_job
        self.children = {c["metadata"]["name"]: copy.deepcopy(c) for c in children}
        self.calls: list[tuple[Any, ...]] = []

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.calls.append(("get", res.kind, namespace, name))
        if self.fresh_job is None:
            raise NotFound(404, "NotFound", f"{name} not found", {})
        return self.fresh_job

    def patch(
        self, res: Resource, name: str, body: Any, *, namespace: str | None = None
    ) -> dict[str, Any]:
        self.calls.append(("patch", res.kind, namespace, name, body))
        if name not in self.children:
            raise NotFound(404, "NotFound", f"{name} not found", {})
        stored = self.children[name]
        refuse_another_uid("Pod", name, body, stored)
        for key, value in body["metadata"].items():
            stored["metadata"][key] = value
        return copy.deepcopy(stored)


def pod(
    name: str,
    *,
    labels: dict[str, str] | None = None,
    owner: dict[str, Any] | None = None,
    references: list[dict[str, Any]] | None = None,
    deleting: bool = False,
) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name,
        "namespace": "ns",
        "uid": f"uid-{name}",
        "labels": dict(labels or {}),
        "ownerReferences": [*(references or []), *([owner] if owner else [])],
    }
    if deleting:
        metadata["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return {"metadata": metadata}


def ours(name: str, replica: ReplicaId = WORKER_1, **labels: str) -> dict[str, Any]:
    return pod(name, labels={**child_labels(JOB, replica), **labels}, owner=owner_reference(JOB))


def orphan(name: str, replica: ReplicaId | None = WORKER_1, **kwargs: Any) -> dict[str, Any]:
    labels = child_labels(JOB, replica) if replica else {JOB_NAME_LABEL: "pt"}
    return pod(name, labels={**labels, **kwargs.pop("labels", {})}, **kwargs)


def fresh(*, uid: str = "job-uid", deleting: bool = False) -> dict[str, Any]:
    job = copy.deepcopy(JOB)
    job["metadata"]["uid"] = uid
    if deleting:
        job["metadata"]["deletionTimestamp"] = "2026-01-01T00:00:00Z"
    return job


def run(
    children: list[dict[str, Any]], fresh_job: dict[str, Any] | None = None
) -> tuple[Claimed, FakeClient]:
    cache = Cache(indexed_label=JOB_NAME_LABEL)
    cache.replace(copy.deepcopy(children))
    client = FakeClient(fresh_job if fresh_job is not None else None, children)
    guard = AdoptionGuard(client, JOBS, JOB)  # type: ignore[arg-type]
    claimed = claim(client, PODS, cache, JOB, replica_types=TYPES, guard=guard)  # type: ignore[arg-type]
    return claimed, client


def names(claimed: Claimed) -> dict[str, str]:
    return {str(r): o["metadata"]["name"] for r, o in claimed.by_replica.items()}


def test_a_child_our_controller_reference_names_is_ours_without_a_write() -> None:
    claimed, client = run([ours("pt-worker-1")])
    assert names(claimed) == {"Worker-1": "pt-worker-1"}
    assert claimed.unplaced == () and claimed.resource is PODS
    assert client.calls == []


def test_a_child_of_ours_whose_labels_drifted_is_relabelled_not_released() -> None:
    drifted = ours("pt-worker-1")
    drifted["metadata"]["labels"]["jobmachine.dev/job-uid"] = "someone-else"
    claimed, client = run([drifted])
    assert client.calls == [
        ("patch", "Pod", "ns", "pt-worker-1",
         {"metadata": {"uid": "uid-pt-worker-1", "labels": child_labels(JOB, WORKER_1)}}),
    ]
    assert claimed.by_replica[WORKER_1]["metadata"]["labels"] == child_labels(JOB, WORKER_1)


def test_another_controller_s_child_and_a_declared_object_are_not_claimed() -> None:
    theirs = pod("pt-worker-1", labels=child_labels(JOB, WORKER_1),
                 owner={**owner_reference(JOB), "uid": "other-uid"})
    declared = ours("pt-svc", WORKER_1, **{OBJECT_LABEL: "service"})
    claimed, client = run([theirs, declared], fresh())
    assert names(claimed) == {} and claimed.unplaced == ()
    assert client.calls == []


def test_an_orphan_is_adopted_after_one_fresh_read_in_one_patch() -> None:
    kept = {"apiVersion": "v1", "kind": "Node", "name": "n", "uid": "node-uid"}
    claimed, client = run([orphan("pt-worker-1", references=[kept])], fresh())
    assert client.calls == [
        ("get", "PyTorchJob", "ns", "pt"),
        ("patch", "Pod", "ns", "pt-worker-1", {"metadata": {
            "uid": "uid-pt-worker-1",
            "ownerReferences": [kept, owner_reference(JOB)],
            "labels": child_labels(JOB, WORKER_1),
        }}),
    ]
    assert names(claimed) == {"Worker-1": "pt-worker-1"}


def test_the_job_is_read_fresh_once_however_many_orphans() -> None:
    orphans = [orphan("pt-worker-0", ReplicaId("Worker", 0)), orphan("pt-worker-1")]
    claimed, client = run(orphans, fresh())
    assert [c[0] for c in client.calls] == ["get", "patch", "patch"]
    assert names(claimed) == {"Worker-0": "pt-worker-0", "Worker-1": "pt-worker-1"}


@pytest.mark.parametrize(
    "fresh_job",
    [fresh(deleting=True), fresh(uid="recreated-uid"), None],
    ids=["job-being-deleted", "job-recreated", "job-gone"],
)
def test_no_orphan_is_adopted_unless_the_job_read_fresh_is_the_same_and_stays(
    fresh_job: dict[str, Any] | None,
) -> None:
    cache = Cache(indexed_label=JOB_NAME_LABEL)
    cache.replace([orphan("pt-worker-1")])
    client = FakeClient(fresh_job, [orphan("pt-worker-1")])
    guard = AdoptionGuard(client, JOBS, JOB)  # type: ignore[arg-type]
    claimed = claim(client, PODS, cache, JOB, replica_types=TYPES, guard=guard)  # type: ignore[arg-type]
    assert names(claimed) == {}
    assert client.calls == [("get", "PyTorchJob", "ns", "pt")]
    assert guard.may_adopt() is False
    assert len(client.calls) == 1  # the verdict is kept


def test_an_orphan_being_deleted_or_labelled_for_another_uid_is_not_even_considered() -> None:
    other = orphan("pt-worker-0", ReplicaId("Worker", 0),
                   labels={"jobmachine.dev/job-uid": "other-uid"})
    claimed, client = run([orphan("pt-worker-1", deleting=True), other], fresh())
    assert names(claimed) == {} and client.calls == []


def test_an_orphan_without_replica_labels_is_placed_by_its_deterministic_name() -> None:
    claimed, client = run([orphan("pt-worker-3", None)], fresh())
    assert names(claimed) == {"Worker-3": "pt-worker-3"}
    patch = client.calls[-1][-1]
    assert patch["metadata"]["labels"] == child_labels(JOB, ReplicaId("Worker", 3))


@pytest.mark.parametrize("name", ["pt-worker-x", "other-worker-1", "pt-chief-0", "pt-worker"])
def test_an_orphan_whose_name_places_it_nowhere_is_adopted_as_unplaced(name: str) -> None:
    claimed, client = run([orphan(name, None)], fresh())
    assert names(claimed) == {}
    assert [o["metadata"]["name"] for o in claimed.unplaced] == [name]
    (_, _, _, _, patch) = client.calls[-1]
    assert "labels" not in patch["metadata"]
    assert patch["metadata"]["ownerReferences"] == [owner_reference(JOB)]


def test_a_child_of_a_removed_replica_type_is_unplaced() -> None:
    claimed, client = run([ours("pt-chief-0", ReplicaId("Chief", 0))])
    assert names(claimed) == {}
    assert [o["metadata"]["name"] for o in claimed.unplaced] == ["pt-chief-0"]
    assert client.calls == []


def test_labels_with_a_type_the_job_has_not_give_way_to_the_name() -> None:
    labelled = ours("pt-worker-2", ReplicaId("worker", 2))
    claimed, _ = run([labelled])
    assert names(claimed) == {"Worker-2": "pt-worker-2"}


@pytest.mark.parametrize("order", [0, 1])
def test_of_two_children_of_one_replica_the_one_with_its_name_wins(order: int) -> None:
    pair = [ours("pt-worker-1"), ours("pt-worker-1-extra")]
    claimed, _ = run(pair[order:] + pair[:order])
    assert names(claimed) == {"Worker-1": "pt-worker-1"}


def test_a_child_that_vanishes_while_it_is_claimed_is_a_conflict() -> None:
    cache = Cache(indexed_label=JOB_NAME_LABEL)
    cache.replace([orphan("pt-worker-1")])
    client = FakeClient(fresh(), [])
    guard = AdoptionGuard(client, JOBS, JOB)  # type: ignore[arg-type]
    with pytest.raises(Conflict, match="pt-worker-1 vanished while claiming") as caught:
        claim(client, PODS, cache, JOB, replica_types=TYPES, guard=guard)  # type: ignore[arg-type]
    assert (caught.value.status, caught.value.reason, caught.value.body) == (409, "Conflict", {})


def test_a_child_whose_name_holds_another_object_now_is_a_conflict() -> None:
    """Deleted and made again under its name since the cache saw it: the adoption patch's
    uid is refused as kube-apiserver refuses it (422 on metadata.uid), and the pass is
    retried, as for a child that vanished."""
    cache = Cache(indexed_label=JOB_NAME_LABEL)
    cache.replace([orphan("pt-worker-1")])
    again = orphan("pt-worker-1")
    again["metadata"]["uid"] = "uid-made-again"
    client = FakeClient(fresh(), [again])
    guard = AdoptionGuard(client, JOBS, JOB)  # type: ignore[arg-type]
    with pytest.raises(Conflict, match="pt-worker-1 vanished while claiming"):
        claim(client, PODS, cache, JOB, replica_types=TYPES, guard=guard)  # type: ignore[arg-type]
    assert client.children["pt-worker-1"]["metadata"]["ownerReferences"] == []


def test_a_rejected_candidate_does_not_stop_the_others_being_claimed() -> None:
    # Owned by us but controlled by another: found first (by owner), then passed over.
    theirs = pod("pt-worker-0", labels=child_labels(JOB, ReplicaId("Worker", 0)),
                 owner={**owner_reference(JOB), "uid": "other-uid"},
                 references=[{**owner_reference(JOB), "controller": False}])
    declared = ours("pt-svc", ReplicaId("Worker", 2), **{OBJECT_LABEL: "service"})
    claimed, _ = run([theirs, declared, orphan("pt-worker-1")], fresh())
    assert names(claimed) == {"Worker-1": "pt-worker-1"}


def test_a_lone_child_of_a_replica_is_claimed_whatever_its_name() -> None:
    claimed, _ = run([ours("pt-worker-1-old")])
    assert names(claimed) == {"Worker-1": "pt-worker-1-old"}


def test_a_replica_type_with_a_dash_is_read_from_the_name() -> None:
    cache = Cache(indexed_label=JOB_NAME_LABEL)
    cache.replace([orphan("pt-data-loader-2", None)])
    client = FakeClient(fresh(), [orphan("pt-data-loader-2", None)])
    guard = AdoptionGuard(client, JOBS, JOB)  # type: ignore[arg-type]
    claimed = claim(client, PODS, cache, JOB, replica_types=("Data-Loader",),  # type: ignore[arg-type]
                    guard=guard)
    assert names(claimed) == {"Data-Loader-2": "pt-data-loader-2"}


def test_a_child_of_ours_that_lost_its_job_label_is_found_by_its_owner_and_relabelled() -> None:
    lost = ours("pt-worker-1")
    del lost["metadata"]["labels"][JOB_NAME_LABEL]
    claimed, client = run([lost])
    assert names(claimed) == {"Worker-1": "pt-worker-1"}
    assert [c[0] for c in client.calls] == ["patch"]


def _placed_after(first: dict[str, Any], then: dict[str, Any]) -> Claimed:
    """`first` is found by its owner reference, `then` (an orphan) by its labels, after it."""
    claimed, _ = run([first, then], fresh())
    return claimed


def test_an_orphan_passed_over_does_not_stop_the_next_being_adopted() -> None:
    passed_over = pod("pt-worker-0", labels=child_labels(JOB, ReplicaId("Worker", 0)),
                      references=[{**owner_reference(JOB), "controller": False}], deleting=True)
    claimed = _placed_after(passed_over, orphan("pt-worker-1"))
    assert names(claimed) == {"Worker-1": "pt-worker-1"}


def test_an_unplaced_child_does_not_stop_the_next_being_placed() -> None:
    claimed = _placed_after(ours("pt-chief-0", ReplicaId("Chief", 0)), orphan("pt-worker-1"))
    assert names(claimed) == {"Worker-1": "pt-worker-1"}
    assert [o["metadata"]["name"] for o in claimed.unplaced] == ["pt-chief-0"]


def test_the_child_with_the_replica_s_name_wins_over_one_found_before_it() -> None:
    claimed = _placed_after(ours("pt-worker-1-extra"), orphan("pt-worker-1"))
    assert names(claimed) == {"Worker-1": "pt-worker-1"}
    claimed = _placed_after(ours("pt-worker-1"), orphan("pt-worker-1-extra"))
    assert names(claimed) == {"Worker-1": "pt-worker-1"}


def test_claimed_children_say_what_resource_they_are() -> None:
    cache = Cache(indexed_label=JOB_NAME_LABEL)
    cache.replace([ours("pt-worker-1")])
    client = FakeClient(fresh(), [])
    guard = AdoptionGuard(client, JOBS, JOB)  # type: ignore[arg-type]
    claimed = claim(client, SERVICES, cache, JOB, replica_types=TYPES, guard=guard)  # type: ignore[arg-type]
    assert claimed.resource is SERVICES


def test_what_claiming_does_is_logged_for_the_job(records: list[dict[str, Any]]) -> None:
    drifted = ours("pt-worker-0", ReplicaId("Worker", 0))
    drifted["metadata"]["labels"]["jobmachine.dev/job-uid"] = "stale"
    run([drifted, orphan("pt-worker-1")], fresh())
    logged = sorted((r["extra"].get("job"), r["message"]) for r in records)
    assert logged == [
        ("ns/pt", "adopted Pod pt-worker-1"),
        ("ns/pt", "relabelled Pod pt-worker-0 (its labels had drifted)"),
    ]


@pytest.mark.parametrize("fresh_job", [fresh(deleting=True), fresh(uid="recreated-uid")])
def test_only_a_job_being_deleted_is_logged_as_the_reason_not_to_adopt(
    records: list[dict[str, Any]], fresh_job: dict[str, Any]
) -> None:
    cache = Cache(indexed_label=JOB_NAME_LABEL)
    cache.replace([orphan("pt-worker-1")])
    client = FakeClient(fresh_job, [])
    claim(client, PODS, cache, JOB, replica_types=TYPES,  # type: ignore[arg-type]
          guard=AdoptionGuard(client, JOBS, JOB))  # type: ignore[arg-type]
    deleting = fresh_job["metadata"].get("deletionTimestamp") is not None
    assert [(r["extra"].get("job"), r["message"]) for r in records] == (
        [("ns/pt", "not adopting orphans: the job is being deleted")] if deleting else []
    )


def _claim_twice(children: list[dict[str, Any]], second_job: dict[str, Any] = JOB,
                 change: dict[str, Any] | None = None) -> tuple[Claimed, FakeClient]:
    """Claim `children` with a `ClaimedBefore`, put `change` in the cache (a watch event),
    and claim again for `second_job` with what the first claim kept."""
    cache = Cache(indexed_label=JOB_NAME_LABEL)
    cache.replace(copy.deepcopy(children))
    before = ClaimedBefore()
    client = FakeClient(None, children)
    guard = AdoptionGuard(client, JOBS, JOB)  # type: ignore[arg-type]
    claim(client, PODS, cache, JOB, replica_types=TYPES, guard=guard,  # type: ignore[arg-type]
          before=before)
    if change is not None:
        cache.apply("MODIFIED", change)
    client.calls.clear()
    second = AdoptionGuard(client, JOBS, second_job)  # type: ignore[arg-type]
    claimed = claim(client, PODS, cache, second_job, replica_types=TYPES,  # type: ignore[arg-type]
                    guard=second, before=before)
    return claimed, client


def test_a_claim_does_not_work_out_again_a_child_unchanged_since_the_last(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """The cache holds the very object the last claim placed: it is the same replica's."""
    children = [ours("pt-worker-1"), ours("pt-master-0", ReplicaId("Master", 0))]
    cache = Cache(indexed_label=JOB_NAME_LABEL)
    cache.replace(copy.deepcopy(children))
    before = ClaimedBefore()
    client = FakeClient(None, children)
    guard = AdoptionGuard(client, JOBS, JOB)  # type: ignore[arg-type]
    first = claim(client, PODS, cache, JOB, replica_types=TYPES, guard=guard,  # type: ignore[arg-type]
                  before=before)

    def worked_out(*_: Any) -> None:
        raise AssertionError("an unchanged child was placed again")

    monkeypatch.setattr(claims, "_replica", worked_out)
    again = claim(client, PODS, cache, JOB, replica_types=TYPES, guard=guard,  # type: ignore[arg-type]
                  before=before)
    assert again == first and names(again) == {"Worker-1": "pt-worker-1",
                                               "Master-0": "pt-master-0"}
    assert client.calls == []


def test_a_child_changed_since_the_last_claim_is_claimed_afresh() -> None:
    drifted = ours("pt-worker-1")
    drifted["metadata"]["labels"]["jobmachine.dev/job-uid"] = "someone-else"
    claimed, client = _claim_twice([ours("pt-worker-1")], change=drifted)
    assert [call[0] for call in client.calls] == ["patch"]
    assert claimed.by_replica[WORKER_1]["metadata"]["labels"] == child_labels(JOB, WORKER_1)


def test_a_job_made_again_under_its_name_claims_nothing_the_last_one_kept() -> None:
    claimed, _ = _claim_twice([ours("pt-worker-1")], second_job=fresh(uid="new-uid"))
    assert claimed.by_replica == {}


class OwnedInOrder(Cache):
    """A cache that hands out a job's own children in the order they were put in (the
    cache's index of them is a set, whose order varies from run to run)."""

    def by_owner(self, uid: str) -> list[dict[str, Any]]:
        owned = super().by_owner(uid)
        return [o for o in self.list() if any(o is mine for mine in owned)]


def test_the_child_with_the_replica_s_name_still_wins_when_both_were_claimed_before() -> None:
    """Two children of ours for one replica, the one named for it found second: the next
    claim, which takes both as the last one placed them, still places the named one."""
    cache = OwnedInOrder(indexed_label=JOB_NAME_LABEL)
    cache.replace([ours("pt-worker-1-extra"), ours("pt-worker-1")])
    before, client = ClaimedBefore(), FakeClient(None, [])
    guard = AdoptionGuard(client, JOBS, JOB)  # type: ignore[arg-type]
    for _ in range(2):
        claimed = claim(client, PODS, cache, JOB, replica_types=TYPES,  # type: ignore[arg-type]
                        guard=guard, before=before)
        assert names(claimed) == {"Worker-1": "pt-worker-1"}
    assert len(before.children) == 2 and client.calls == []


def test_a_child_relabelled_is_claimed_afresh_while_the_cache_shows_it_drifted() -> None:
    """A child whose labels the last claim had to write is not kept as placed: while the
    cache still holds it as it was (the relabelling not seen yet), it is relabelled again."""
    drifted = ours("pt-worker-1")
    drifted["metadata"]["labels"]["jobmachine.dev/job-uid"] = "someone-else"
    claimed, client = _claim_twice([drifted])
    assert [call[0] for call in client.calls] == ["patch"]
    assert claimed.by_replica[WORKER_1]["metadata"]["labels"] == child_labels(JOB, WORKER_1)

