"""Interchangeable pods (pod.naming Generated, the ReplicaSet machine's): the deletion order
of kube-controller-manager's ActivePodsWithRanks as a table, the placement of pods on
indexes, claims by a selector (adoption and release, PodControllerRefManager's rules), and
slow-start batches."""

from __future__ import annotations

import copy
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest

from engine.controller.reconcile.batches import BURST_REPLICAS, SlowStart
from engine.controller.reconcile.children import (
    JOB_NAME_LABEL,
    JOB_UID_LABEL,
    REPLICA_INDEX_LABEL,
    REPLICA_TYPE_LABEL,
    TRACKING_FINALIZER,
    ReplicaId,
    owner_reference,
)
from engine.controller.reconcile.claims import AdoptionGuard, Claimed, claim
from engine.controller.reconcile.observe import availability, carries_labels
from engine.controller.reconcile.placement import deletion_order, place
from engine.controller.reconcile.selectors import selector_matches
from engine.kube.cache import Cache
from engine.kube.errors import ApiError, NotFound
from engine.kube.resources import PODS, Resource
from tests.unit.controller.uid_answers import refuse_another_uid

NOW = datetime(2026, 11, 30, 12, 0, 0, tzinfo=UTC)
RS: dict[str, Any] = {"apiVersion": "apps/v1", "kind": "ReplicaSet",
                      "metadata": {"name": "web", "namespace": "ns", "uid": "rs-uid"}}
SELECTOR = {"matchLabels": {"app": "web"}}
OURS = owner_reference(RS)
REPLICASETS = Resource("apps", "v1", "replicasets", "ReplicaSet", namespaced=True)


def ago(seconds: float) -> str:
    return (NOW - timedelta(seconds=seconds)).strftime("%Y-%m-%dT%H:%M:%SZ")


def pod(name: str, *, node: str = "n1", phase: str = "Running", ready_s: float | None = 60,
        created_s: float = 600, restarts: int = 0, cost: str | None = None,
        index: int | None = None, owner: dict[str, Any] | None = OURS,
        labels: dict[str, str] | None = None, deleting: bool = False) -> dict[str, Any]:
    """A pod of `web`: Ready `ready_s` seconds ago (None: not Ready), created `created_s`
    seconds ago, on `node` ('' unscheduled)."""
    metadata: dict[str, Any] = {
        "name": name, "namespace": "ns", "uid": f"uid-{name}",
        "creationTimestamp": ago(created_s),
        "labels": {"app": "web", **(labels or {})},
        "ownerReferences": [owner] if owner else [],
    }
    if index is not None:
        metadata["labels"].update({JOB_NAME_LABEL: "web", REPLICA_TYPE_LABEL: "Pod",
                                   REPLICA_INDEX_LABEL: str(index), JOB_UID_LABEL: "rs-uid"})
    if cost is not None:
        metadata["annotations"] = {"controller.kubernetes.io/pod-deletion-cost": cost}
    if deleting:
        metadata["deletionTimestamp"] = ago(1)
    conditions = ([{"type": "Ready", "status": "True", "lastTransitionTime": ago(ready_s)}]
                  if ready_s is not None else [{"type": "Ready", "status": "False"}])
    return {"metadata": metadata, "spec": {"nodeName": node},
            "status": {"phase": phase, "conditions": conditions,
                       "containerStatuses": [{"name": "web", "restartCount": restarts}]}}


# Each row: two pods that differ in one of upstream's criteria; the first is deleted first.
DELETION_ORDER = [
    ("unscheduled before scheduled", pod("a", node="", phase="Pending", ready_s=None),
     pod("b", phase="Pending", ready_s=None)),
    ("Pending before Unknown", pod("a", phase="Pending", ready_s=None),
     pod("b", phase="Unknown", ready_s=None)),
    ("Unknown before Running", pod("a", phase="Unknown", ready_s=None),
     pod("b", ready_s=None)),
    ("not Ready before Ready", pod("a", ready_s=None, created_s=9000), pod("b")),
    ("lower deletion cost first", pod("a", cost="-1", created_s=9000), pod("b", cost="3")),
    ("an unparsable cost is 0", pod("a", cost="cheap", created_s=9000), pod("b", cost="1")),
    ("Ready for less time first (other log2 bucket)", pod("a", ready_s=10, created_s=9000),
     pod("b", ready_s=100)),
    ("more container restarts first", pod("a", restarts=3, created_s=9000), pod("b")),
    ("newer first", pod("a", created_s=10), pod("b", created_s=100)),
    ("same log2 bucket of age: the lower uid first", pod("a", created_s=600),
     pod("b", created_s=601)),
]


@pytest.mark.parametrize(("first", "second"), [(a, b) for _, a, b in DELETION_ORDER],
                         ids=[row[0] for row in DELETION_ORDER])
def test_the_deletion_order_is_upstreams(first: dict[str, Any], second: dict[str, Any]) -> None:
    assert deletion_order([second, first], now=NOW) == [first, second]
    assert deletion_order([first, second], now=NOW) == [first, second]


def test_pods_doubled_up_on_a_node_go_first() -> None:
    lonely = pod("lonely", node="n2", created_s=10)
    crowded = [pod("c1", created_s=9000), pod("c2", created_s=9000)]
    order = deletion_order([lonely, *crowded], now=NOW)
    assert order[-1] is lonely  # the newest, but alone on its node


def test_the_criteria_come_in_upstreams_order() -> None:
    """Readiness outranks the deletion cost, which outranks age."""
    ready_cheap_new = pod("a", cost="-5", created_s=10)
    not_ready_costly_old = pod("b", ready_s=None, cost="100", created_s=9000)
    assert deletion_order([ready_cheap_new, not_ready_costly_old], now=NOW)[0] is (
        not_ready_costly_old)
    cheap_old = pod("c", cost="-5", created_s=9000)
    assert deletion_order([ready_cheap_new, cheap_old, pod("d", created_s=10)], now=NOW)[
        :2] == [ready_cheap_new, cheap_old]


class FakeClient:
    """Pods by name; patches merged into them; every call kept, in order."""

    def __init__(self, pods: list[dict[str, Any]], fresh_job: dict[str, Any] | None = None
                 ) -> None:
        self.pods = {p["metadata"]["name"]: copy.deepcopy(p) for p in pods}
        self.fresh_job = fresh_job if fresh_job is not None else RS
        self.calls: list[tuple[Any, ...]] = []

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.calls.append(("get", res.kind, name))
        return self.fresh_job

    def patch(self, res: Resource, name: str, body: Any, *, namespace: str | None = None
              ) -> dict[str, Any]:
        self.calls.append(("patch", name, body))
        if name not in self.pods:
            raise NotFound(404, "NotFound", f"{name} not found", {})
        refuse_another_uid("Pod", name, body, self.pods[name])
        stored = self.pods[name]["metadata"]
        for key, value in body["metadata"].items():
            if key == "labels":
                labels = {**stored.get("labels", {}), **value}
                stored["labels"] = {k: v for k, v in labels.items() if v is not None}
            else:
                stored[key] = value
        return copy.deepcopy(self.pods[name])


def claimed_pods(pods: list[dict[str, Any]], replicas: int) -> tuple[Claimed, FakeClient]:
    client = FakeClient(pods)
    cache = Cache()
    cache.replace(copy.deepcopy(pods))
    found = claim(client, PODS, cache, RS, replica_types=["Pod"],  # type: ignore[arg-type]
                  guard=AdoptionGuard(client, REPLICASETS, RS), selector=SELECTOR)  # type: ignore[arg-type]
    return place(client, found, RS, replica_type="Pod", replicas=replicas,  # type: ignore[arg-type]
                 now=NOW), client


def names(objs: Any) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


def test_a_scale_down_deletes_the_surplus_in_order_and_fills_the_freed_indexes() -> None:
    pods = [pod("old", index=0, created_s=9000), pod("unready", index=1, ready_s=None),
            pod("newer", index=2, created_s=100), pod("oldest", index=3, created_s=90000)]
    placed, client = claimed_pods(pods, replicas=2)
    assert [(t, p["metadata"]["name"]) for t, p in placed.surplus] == [
        ("Pod", "unready"), ("Pod", "newer")]
    assert {str(r): p["metadata"]["name"] for r, p in placed.by_replica.items()} == {
        "Pod-0": "old", "Pod-1": "oldest"}
    # The kept pod above the new replicas is relabelled into the freed index 1.
    assert client.calls == [("patch", "oldest", {"metadata": {
        "uid": "uid-oldest", "labels": {JOB_NAME_LABEL: "web", REPLICA_TYPE_LABEL: "Pod",
                                        REPLICA_INDEX_LABEL: "1",
                                        "jobmachine.dev/job-uid": "rs-uid"}}})]


def test_a_pod_being_deleted_frees_its_index_and_two_pods_of_one_index_are_sorted_out() -> None:
    pods = [pod("going", index=0, deleting=True), pod("a", index=1, created_s=9000),
            pod("b", index=1, created_s=100)]
    placed, _ = claimed_pods(pods, replicas=3)
    assert names(placed.unplaced) == ["going"]
    assert placed.surplus == ()
    assert sorted(placed.by_replica) == [ReplicaId("Pod", 0), ReplicaId("Pod", 1)]
    assert sorted(names(placed.by_replica.values())) == ["a", "b"]


def test_an_ended_pod_keeps_its_index_unless_an_active_pod_needs_it() -> None:
    pods = [pod("failed", index=0, phase="Failed"), pod("a", index=1), pod("b", index=2)]
    placed, _ = claimed_pods(pods, replicas=2)
    assert placed.surplus == ()  # two active pods for two replicas
    assert {str(r): p["metadata"]["name"] for r, p in placed.by_replica.items()} == {
        "Pod-1": "a", "Pod-0": "b"}
    assert names(placed.unplaced) == ["failed"]
    kept, _ = claimed_pods(pods[:2], replicas=2)
    assert {str(r): p["metadata"]["name"] for r, p in kept.by_replica.items()} == {
        "Pod-1": "a", "Pod-0": "failed"}


def test_an_orphan_that_matches_is_adopted_after_a_fresh_read_and_placed() -> None:
    orphan = pod("stray", owner=None)
    placed, client = claimed_pods([pod("a", index=0), orphan], replicas=2)
    assert client.calls[0] == ("get", "ReplicaSet", "web")
    assert client.calls[1] == ("patch", "stray", {"metadata": {
        "uid": "uid-stray", "ownerReferences": [OURS]}})
    assert placed.by_replica[ReplicaId("Pod", 1)]["metadata"]["name"] == "stray"


@pytest.mark.parametrize("orphan", [
    pod("other-app", owner=None, labels={"app": "db"}),
    pod("deleting", owner=None, deleting=True),
    pod("someone-elses", owner={**OURS, "uid": "other-uid", "name": "other"}),
    # Our job-name label does not make a pod ours when the kind has a selector.
    pod("labelled", owner=None, labels={"app": "db", JOB_NAME_LABEL: "web"}),
], ids=["not-selected", "being-deleted", "another-controllers", "job-label-only"])
def test_pods_not_to_adopt(orphan: dict[str, Any]) -> None:
    placed, client = claimed_pods([orphan], replicas=1)
    assert placed.by_replica == {} and placed.unplaced == () and placed.surplus == ()
    assert not [c for c in client.calls if c[0] == "patch"]


def test_a_job_being_deleted_adopts_nothing() -> None:
    client = FakeClient([], fresh_job={**RS, "metadata": {**RS["metadata"],
                                                          "deletionTimestamp": ago(1)}})
    cache = Cache()
    cache.replace([pod("stray", owner=None)])
    found = claim(client, PODS, cache, RS, replica_types=["Pod"],  # type: ignore[arg-type]
                  guard=AdoptionGuard(client, REPLICASETS, RS), selector=SELECTOR)  # type: ignore[arg-type]
    assert found.spare == () and found.by_replica == {}


def test_a_pod_that_stops_matching_is_released_with_our_labels_and_finalizer() -> None:
    relabelled = pod("moved", index=0, labels={"app": "elsewhere"})
    relabelled["metadata"]["finalizers"] = [TRACKING_FINALIZER, "other/keep"]
    relabelled["metadata"]["ownerReferences"].append({"uid": "x", "kind": "Thing"})
    placed, client = claimed_pods([relabelled], replicas=1)
    assert placed.by_replica == {}
    assert client.calls == [("patch", "moved", {"metadata": {
        "uid": "uid-moved", "ownerReferences": [{"uid": "x", "kind": "Thing"}],
        "labels": {JOB_NAME_LABEL: None, REPLICA_TYPE_LABEL: None, REPLICA_INDEX_LABEL: None,
                   JOB_UID_LABEL: None},
        "finalizers": ["other/keep"]}})]


def test_a_pod_that_stopped_matching_and_was_made_again_under_its_name_is_let_be() -> None:
    """The release's uid is refused as kube-apiserver refuses it (422 on metadata.uid): the
    pod it meant is gone, so there is nothing to release and the pass goes on."""
    relabelled = pod("moved", index=0, labels={"app": "elsewhere"})
    client = FakeClient([{**relabelled, "metadata": {**relabelled["metadata"],
                                                     "uid": "uid-made-again"}}])
    cache = Cache()
    cache.replace([relabelled])
    found = claim(client, PODS, cache, RS, replica_types=["Pod"],  # type: ignore[arg-type]
                  guard=AdoptionGuard(client, REPLICASETS, RS), selector=SELECTOR)  # type: ignore[arg-type]
    assert found.by_replica == {}
    assert [call[:2] for call in client.calls] == [("patch", "moved")]
    assert client.pods["moved"]["metadata"]["labels"] == relabelled["metadata"]["labels"]


SELECTORS = [
    ({"matchLabels": {"app": "web"}}, {"app": "web", "x": "y"}, True),
    ({"matchLabels": {"app": "web"}}, {"app": "db"}, False),
    ({"matchExpressions": [{"key": "tier", "operator": "In", "values": ["a", "b"]}]},
     {"tier": "b"}, True),
    ({"matchExpressions": [{"key": "tier", "operator": "NotIn", "values": ["a"]}]}, {}, True),
    ({"matchExpressions": [{"key": "tier", "operator": "Exists"}]}, {"tier": ""}, True),
    ({"matchExpressions": [{"key": "tier", "operator": "DoesNotExist"}]}, {"tier": "a"},
     False),
    ({"app": "legacy"}, {"app": "legacy"}, True),  # a ReplicationController's plain map
    ({"app": "legacy"}, {}, False),
    ({}, {"any": "thing"}, True),
    (None, {"any": "thing"}, False),
]


@pytest.mark.parametrize(("selector", "labels", "selected"), SELECTORS)
def test_selectors(selector: Any, labels: dict[str, str], selected: bool) -> None:
    assert selector_matches(selector, labels) is selected


def tries_until_stopped(refused_at: int, wanted: int) -> int:
    """How many creates a pass of slow-start batches tries when the create number
    `refused_at` (from 1) is refused, and `wanted` pods are missing."""
    batch, tried = SlowStart(), 0
    while tried < wanted and batch.may_try():
        tried += 1
        if tried == refused_at:
            batch.failed(ApiError(403, "Forbidden", "no", {}))
        batch.tried()
    return tried


@pytest.mark.parametrize(("refused_at", "tried"), [
    (1, 1),   # the first batch (1) fails: nothing more
    (2, 3),   # in the second batch (2, 3): it is finished, no third
    (3, 3),
    (4, 7),   # in the third batch (4..7)
    (8, 15),
    (99, 20),  # none refused: every missing pod
])
def test_slow_start_batches_stop_after_the_batch_with_a_refusal(refused_at: int, tried: int
                                                                 ) -> None:
    assert tries_until_stopped(refused_at, 20) == tried


def test_a_pass_creates_at_most_burst_replicas() -> None:
    assert tries_until_stopped(10 ** 6, 10 ** 4) == BURST_REPLICAS


@pytest.mark.parametrize(("ready_s", "min_ready", "available_in"), [
    (None, 0, None),  # not Ready: never available
    (5, 0, 0.0),      # minReadySeconds 0: every Ready pod
    (5, 10, 5.0),     # Ready 5 s of 10: available in 5 s
    (10, 10, 0.001),  # exactly 10 s: upstream's Before(now) is strict, not yet
    (11, 10, 0.0),
])
def test_availability_is_upstreams_is_pod_available(ready_s: float | None, min_ready: int,
                                                    available_in: float | None) -> None:
    assert availability(pod("p", ready_s=ready_s), min_ready, NOW) == available_in


def test_a_pod_is_fully_labelled_when_it_carries_every_template_label() -> None:
    template = {"metadata": {"labels": {"app": "web", "tier": "front"}}}
    assert carries_labels(pod("p", labels={"tier": "front"}), template)
    assert not carries_labels(pod("p"), template)
    assert carries_labels(pod("p"), {})


def claimed_by_selector(pods: list[dict[str, Any]], client: FakeClient | None = None
                        ) -> tuple[Claimed, FakeClient]:
    """What one claim of `web`'s pods by its selector finds, before placement."""
    client = client or FakeClient(pods)
    cache = Cache()
    cache.replace(copy.deepcopy(pods))
    return claim(client, PODS, cache, RS, replica_types=["Pod"],  # type: ignore[arg-type]
                 guard=AdoptionGuard(client, REPLICASETS, RS), selector=SELECTOR), client  # type: ignore[arg-type]


def test_a_pod_of_ours_with_an_index_is_placed_on_it_not_spare() -> None:
    found, _ = claimed_by_selector([pod("a", index=0)])
    assert {str(r): o["metadata"]["name"] for r, o in found.by_replica.items()} == {"Pod-0": "a"}
    assert found.spare == ()


def test_a_spare_pod_does_not_stop_the_orphans_after_it_being_adopted() -> None:
    """Ours come first (by their controller reference), then the namespace's orphans."""
    found, client = claimed_by_selector(
        [pod("spare"), pod("stray-1", owner=None), pod("stray-2", owner=None)])
    assert sorted(names(found.spare)) == ["spare", "stray-1", "stray-2"]
    assert [call[1] for call in client.calls if call[0] == "patch"] == ["stray-1", "stray-2"]


def test_a_matching_orphan_of_another_namespace_is_not_adopted() -> None:
    elsewhere = pod("stray", owner=None)
    elsewhere["metadata"]["namespace"] = "other"
    found, client = claimed_by_selector([elsewhere])
    assert found.spare == () and client.calls == []


class RecordingClient(FakeClient):
    """A FakeClient that also keeps the resource and namespace each patch was sent to."""

    def __init__(self, pods: list[dict[str, Any]]) -> None:
        super().__init__(pods)
        self.patched: list[tuple[str, str | None]] = []

    def patch(self, res: Resource, name: str, body: Any, *, namespace: str | None = None
              ) -> dict[str, Any]:
        self.patched.append((res.plural, namespace))
        return super().patch(res, name, body, namespace=namespace)


def test_a_release_is_sent_to_the_pod_in_its_namespace_and_logged_for_the_job(
        records: list[dict[str, Any]]) -> None:
    moved = pod("moved", index=0, labels={"app": "elsewhere"})
    client = RecordingClient([moved])
    claimed_by_selector([moved], client)
    assert client.patched == [("pods", "ns")]
    assert [(r["extra"].get("job"), r["message"]) for r in records] == [
        ("ns/web", "released Pod moved: the selector no longer matches it")]


def test_a_release_does_not_stop_the_orphans_after_it_being_adopted() -> None:
    found, client = claimed_by_selector(
        [pod("moved", index=0, labels={"app": "elsewhere"}), pod("stray", owner=None)])
    assert names(found.spare) == ["stray"]
    assert [call[1] for call in client.calls if call[0] == "patch"] == ["moved", "stray"]
