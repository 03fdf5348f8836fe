"""Which ReplicaSets a Deployment claims, with a fake client and a real cache: its own while
the selector matches them, orphans the selector matches adopted after one fresh read of the
Deployment, its own released when they stop matching (kept while it is being deleted),
another controller's and other namespaces' left alone; and the exact patches each case
makes, the revision's uid as precondition."""

from __future__ import annotations

import copy
from typing import Any

from engine.controller.reconcile.children import owner_reference
from engine.controller.reconcile.claims import AdoptionGuard
from engine.controller.rollouts.claims import claim_revisions
from engine.kube.cache import Cache
from engine.kube.errors import NotFound
from engine.kube.resources import Resource
from tests.unit.controller.uid_answers import refuse_another_uid

DEPLOYMENTS = Resource("apps", "v1", "deployments", "Deployment")
REPLICA_SETS = Resource("apps", "v1", "replicasets", "ReplicaSet")
DEPLOYMENT: dict[str, Any] = {
    "apiVersion": "apps/v1", "kind": "Deployment",
    "metadata": {"name": "web", "namespace": "ns", "uid": "dep-uid"},
}
SELECTOR = {"matchLabels": {"app": "web"}}
OURS = owner_reference(DEPLOYMENT)
THEIRS = {**OURS, "name": "other", "uid": "other-uid"}
GARBAGE_COLLECTED = {"apiVersion": "v1", "kind": "ConfigMap", "name": "cm", "uid": "cm-uid"}
DELETED_AT = "2026-11-30T12:00:00Z"


class FakeClient:
    """The Deployment as the server has it now, the ReplicaSets by name; every call."""

    def __init__(self, fresh: dict[str, Any] | None, revisions: list[dict[str, Any]]) -> None:
        self.fresh = fresh
        self.revisions = {r["metadata"]["name"]: copy.deepcopy(r) for r in revisions}
        self.calls: list[tuple[Any, ...]] = []

    def get(self, res: Resource, name: str, namespace: str | None = None) -> dict[str, Any]:
        self.calls.append(("get", res.kind, namespace, name))
        if self.fresh is None:
            raise NotFound(404, "NotFound", f"{name} not found", {})
        return self.fresh

    def patch(self, res: Resource, name: str, body: Any, *,
              namespace: str | None = None) -> dict[str, Any]:
        self.calls.append(("patch", res.kind, namespace, name, body))
        if name not in self.revisions:
            raise NotFound(404, "NotFound", f"{name} not found", {})
        stored = self.revisions[name]
        refuse_another_uid("ReplicaSet", name, body, stored)
        stored["metadata"].update(body["metadata"])
        return copy.deepcopy(stored)


def revision(name: str, *, labels: dict[str, str] | None = None,
             references: list[dict[str, Any]] | None = None, namespace: str = "ns",
             deleting: bool = False) -> dict[str, Any]:
    metadata: dict[str, Any] = {
        "name": name, "namespace": namespace, "uid": f"uid-{name}",
        "labels": {"app": "web"} if labels is None else labels,
        "ownerReferences": list(references or []),
    }
    if deleting:
        metadata["deletionTimestamp"] = DELETED_AT
    return {"metadata": metadata}


def claim(revisions: list[dict[str, Any]], *, fresh: dict[str, Any] | None = DEPLOYMENT,
          deleting: bool = False, selector: dict[str, Any] = SELECTOR,
          gone: tuple[str, ...] = (), made_again: tuple[str, ...] = ()
          ) -> tuple[list[str], FakeClient]:
    """The names claimed and the client; `gone` are in the cache but no longer served,
    `made_again` are served under another uid."""
    deployment = copy.deepcopy(DEPLOYMENT)
    if deleting:
        deployment["metadata"]["deletionTimestamp"] = DELETED_AT
    cache = Cache()
    cache.replace(copy.deepcopy(revisions))
    client = FakeClient(fresh, [r for r in revisions if r["metadata"]["name"] not in gone])
    for name in made_again:
        client.revisions[name]["metadata"]["uid"] = f"uid-{name}-again"
    guard = AdoptionGuard(client, DEPLOYMENTS, deployment)  # type: ignore[arg-type]
    found = claim_revisions(client, REPLICA_SETS, cache, deployment,  # type: ignore[arg-type]
                            selector=selector, guard=guard)
    return sorted(obj["metadata"]["name"] for obj in found), client


def patch(name: str, references: list[dict[str, Any]]) -> tuple[Any, ...]:
    return ("patch", "ReplicaSet", "ns", name,
            {"metadata": {"uid": f"uid-{name}", "ownerReferences": references}})


def test_its_own_matching_revisions_are_claimed_without_a_write() -> None:
    names, client = claim([revision("web-1", references=[OURS]),
                           revision("web-2", references=[OURS])])
    assert names == ["web-1", "web-2"]
    assert client.calls == []


def test_a_matching_orphan_is_adopted_after_one_fresh_read_keeping_its_other_owners() -> None:
    names, client = claim([revision("web-1", references=[GARBAGE_COLLECTED]),
                           revision("web-2")])
    assert names == ["web-1", "web-2"]
    assert client.calls == [
        ("get", "Deployment", "ns", "web"),
        patch("web-1", [GARBAGE_COLLECTED, OURS]),
        patch("web-2", [OURS]),
    ]


def test_no_orphan_is_adopted_when_the_fresh_read_finds_another_or_a_deleted_deployment(
) -> None:
    replaced = copy.deepcopy(DEPLOYMENT)
    replaced["metadata"]["uid"] = "new-uid"
    deleting = copy.deepcopy(DEPLOYMENT)
    deleting["metadata"]["deletionTimestamp"] = DELETED_AT
    for fresh in (replaced, deleting, None):
        names, client = claim([revision("web-1")], fresh=fresh)
        assert names == []
        assert client.calls == [("get", "Deployment", "ns", "web")]


def test_no_orphan_is_adopted_by_a_deployment_being_deleted_nor_while_it_is_deleted() -> None:
    names, client = claim([revision("web-1")], deleting=True)
    assert (names, client.calls) == ([], [])
    names, client = claim([revision("web-1", deleting=True)])
    assert (names, client.calls) == ([], [])


def test_orphans_the_selector_does_not_match_are_not_read_for() -> None:
    names, client = claim([revision("db-1", labels={"app": "db"})])
    assert (names, client.calls) == ([], [])
    names, client = claim([revision("web-1")], selector={})
    assert (names, client.calls) == ([], [])


def test_its_own_revision_that_stopped_matching_is_released_keeping_other_owners() -> None:
    stray = revision("web-1", labels={"app": "old"}, references=[GARBAGE_COLLECTED, OURS])
    names, client = claim([stray, revision("web-2", references=[OURS])])
    assert names == ["web-2"]
    assert client.calls == [patch("web-1", [GARBAGE_COLLECTED])]


def test_a_deployment_being_deleted_keeps_its_revisions_whatever_their_labels() -> None:
    stray = revision("web-1", labels={"app": "old"}, references=[OURS])
    names, client = claim([stray], deleting=True)
    assert (names, client.calls) == (["web-1"], [])


def test_another_controllers_revisions_and_other_namespaces_are_left_alone() -> None:
    names, client = claim([revision("web-1", references=[THEIRS]),
                           revision("web-2", namespace="elsewhere"),
                           revision("web-3", namespace="elsewhere", references=[OURS])])
    assert (names, client.calls) == ([], [])


def test_a_revision_gone_before_its_patch_is_neither_adopted_nor_an_error() -> None:
    names, client = claim([revision("web-1"),
                           revision("web-2", labels={"app": "old"}, references=[OURS])],
                          gone=("web-1", "web-2"))
    assert names == []
    assert [call[0] for call in client.calls] == ["get", "patch", "patch"]


def test_a_revision_made_again_under_its_name_is_neither_adopted_nor_released() -> None:
    """The patch's uid is refused as kube-apiserver refuses it (422 on metadata.uid): the
    revision it meant is gone, as if it had vanished."""
    names, client = claim([revision("web-1"),
                           revision("web-2", labels={"app": "old"}, references=[OURS])],
                          made_again=("web-1", "web-2"))
    assert names == []
    assert [call[0] for call in client.calls] == ["get", "patch", "patch"]
    assert [client.revisions[name]["metadata"]["ownerReferences"] for name in (
        "web-1", "web-2")] == [[], [OURS]]
