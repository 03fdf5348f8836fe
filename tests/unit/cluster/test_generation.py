"""metadata.generation kind by kind, as kube-apiserver's registry strategies keep it: absent
where the strategy never sets it (ConfigMaps, Secrets, Services, Pods of v1.32...), 1 and never
moved for PriorityClasses, 1 and moved by spec changes for Jobs, CronJobs and CRDs, 1 and moved
by anything but metadata (and status under /status) for custom resources. Deletion that waits
moves it only where it is set (rest.BeforeDelete: "if generation > 0")."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import pytest

from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.endpoints.discovery import KUBERNETES_VERSION
from engine.cluster.apiserver.registry import builtins as kinds
from engine.cluster.apiserver.registry.deletion import DeleteOptions, delete
from engine.cluster.apiserver.registry.resources import ResourceType
from tests.unit.cluster.store_support import ManualReactor, make_core

MERGE = "application/merge-patch+json"
HOLD = "example.com/hold"
# KEP-5067: kube-apiserver's pod strategy keeps a generation from v1.33 on.
PODS_KEEP_GENERATION = int(KUBERNETES_VERSION.split(".")[1]) >= 33


@dataclass(frozen=True)
class Kind:
    """One served built-in kind: a valid object, a change beyond metadata, and what upstream's
    strategy does with generation ("absent", "fixed" at 1, or moved by "spec")."""

    rt: ResourceType
    body: dict[str, Any]
    change: dict[str, Any] | None  # None: no change beyond metadata is possible
    upstream: str


def _meta(name: str) -> dict[str, Any]:
    return {"name": name, "finalizers": [HOLD]}


POD_SPEC = {"containers": [{"name": "c", "image": "busybox"}], "restartPolicy": "Never"}
RULES = [{"apiGroups": [""], "resources": ["pods"], "verbs": ["get"]}]
SUBJECTS = [{"kind": "User", "name": "ann", "apiGroup": "rbac.authorization.k8s.io"}]
OTHER_SUBJECTS = [{"kind": "User", "name": "bob", "apiGroup": "rbac.authorization.k8s.io"}]
CRD_SPEC: dict[str, Any] = {
    "group": "example.com", "scope": "Namespaced",
    "names": {"plural": "gadgets", "kind": "Gadget"},
    "versions": [{"name": "v1", "served": True, "storage": True, "schema": {
        "openAPIV3Schema": {"type": "object", "x-kubernetes-preserve-unknown-fields": True}}}],
}

WORKLOAD_SPEC: dict[str, Any] = {
    "selector": {"matchLabels": {"app": "w"}},
    "template": {"metadata": {"labels": {"app": "w"}},
                 "spec": {"containers": [{"name": "c", "image": "busybox"}]}},
}

KINDS = [
    Kind(kinds.NAMESPACES, {"metadata": _meta("gen")}, None, "absent"),
    Kind(kinds.PODS, {"metadata": _meta("p"), "spec": POD_SPEC},
         {"spec": {"activeDeadlineSeconds": 30}}, "spec" if PODS_KEEP_GENERATION else "absent"),
    Kind(kinds.SERVICES, {"metadata": _meta("s"), "spec": {"ports": [{"port": 80}]}},
         {"spec": {"ports": [{"port": 81}]}}, "absent"),
    Kind(kinds.EVENTS, {"metadata": _meta("e"), "reason": "Made", "message": "one",
                        "involvedObject": {"kind": "Pod", "name": "p", "namespace": "default"}},
         {"message": "two"}, "absent"),
    Kind(kinds.CONFIGMAPS, {"metadata": _meta("c"), "data": {"k": "1"}},
         {"data": {"k": "2"}}, "absent"),
    Kind(kinds.SECRETS, {"metadata": _meta("s"), "data": {"k": "MQ=="}},
         {"data": {"k": "Mg=="}}, "absent"),
    Kind(kinds.NODES, {"metadata": _meta("n")}, {"spec": {"unschedulable": True}}, "absent"),
    Kind(kinds.CONTROLLER_REVISIONS, {"metadata": _meta("r"), "revision": 1, "data": {}},
         {"revision": 2}, "absent"),
    Kind(kinds.LEASES, {"metadata": _meta("l"), "spec": {"holderIdentity": "a"}},
         {"spec": {"holderIdentity": "b"}}, "absent"),
    Kind(kinds.PRIORITY_CLASSES, {"metadata": _meta("high"), "value": 1000},
         {"description": "now described"}, "fixed"),
    Kind(kinds.JOBS, {"metadata": _meta("j"), "spec": {"template": {"spec": POD_SPEC}}},
         {"spec": {"suspend": True}}, "spec"),
    Kind(kinds.CRONJOBS, {"metadata": _meta("cj"), "spec": {
        "schedule": "*/5 * * * *", "jobTemplate": {"spec": {"template": {"spec": POD_SPEC}}}}},
         {"spec": {"schedule": "@hourly"}}, "spec"),
    Kind(kinds.SERVICE_ACCOUNTS, {"metadata": _meta("sa")},
         {"automountServiceAccountToken": False}, "absent"),
    Kind(kinds.ROLES, {"metadata": _meta("r"), "rules": RULES},
         {"rules": [{**RULES[0], "verbs": ["list"]}]}, "absent"),
    Kind(kinds.CLUSTER_ROLES, {"metadata": _meta("cr"), "rules": RULES},
         {"rules": [{**RULES[0], "verbs": ["list"]}]}, "absent"),
    Kind(kinds.ROLE_BINDINGS, {"metadata": _meta("rb"), "subjects": SUBJECTS, "roleRef": {
        "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "r"}},
         {"subjects": OTHER_SUBJECTS}, "absent"),
    Kind(kinds.CLUSTER_ROLE_BINDINGS, {"metadata": _meta("crb"), "subjects": SUBJECTS,
                                       "roleRef": {"apiGroup": "rbac.authorization.k8s.io",
                                                   "kind": "ClusterRole", "name": "cr"}},
         {"subjects": OTHER_SUBJECTS}, "absent"),
    Kind(kinds.CRDS, {"metadata": _meta("gadgets.example.com"), "spec": CRD_SPEC},
         {"spec": {"names": {"shortNames": ["gd"]}}}, "spec"),
    Kind(kinds.DEPLOYMENTS, {"metadata": _meta("d"), "spec": WORKLOAD_SPEC},
         {"spec": {"replicas": 3}}, "spec"),
    Kind(kinds.REPLICA_SETS, {"metadata": _meta("rs"), "spec": WORKLOAD_SPEC},
         {"spec": {"replicas": 3}}, "spec"),
    Kind(kinds.REPLICATION_CONTROLLERS, {"metadata": _meta("rc"), "spec": {
        "template": {"metadata": {"labels": {"app": "w"}}, "spec": {
            "containers": [{"name": "c", "image": "busybox"}]}}}},
         {"spec": {"replicas": 3}}, "spec"),
]


@pytest.fixture
def core() -> Core:
    return make_core(ManualReactor())


def _ns(rt: ResourceType) -> str:
    return "default" if rt.namespaced else ""


def _generation(obj: dict[str, Any]) -> int | None:
    value: int | None = obj["metadata"].get("generation")
    return value


def _patch(core: Core, rt: ResourceType, name: str, change: dict[str, Any],
           subresource: str | None = None) -> dict[str, Any]:
    written = core.store.patch(rt, _ns(rt), name, MERGE, json.dumps(change).encode(),
                               subresource=subresource)
    obj: dict[str, Any] = written.entry.obj
    return obj


def test_the_table_names_every_stored_built_in_kind() -> None:
    stored = {rt.key for rt in kinds.BUILTIN_TYPES if "get" in rt.verbs}
    assert {kind.rt.key for kind in KINDS} == stored


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.rt.plural)
def test_create_and_update_keep_generation_as_upstream(core: Core, kind: Kind) -> None:
    rt, name = kind.rt, kind.body["metadata"]["name"]
    first = 1 if kind.upstream != "absent" else None
    created = core.store.create(rt, _ns(rt), kind.body).entry.obj
    assert _generation(created) == first
    labelled = _patch(core, rt, name, {"metadata": {"labels": {"seen": "yes"}}})
    assert _generation(labelled) == first
    if kind.change is not None:
        changed = _patch(core, rt, name, kind.change)
        moved = first + 1 if first is not None and kind.upstream == "spec" else first
        assert _generation(changed) == moved


@pytest.mark.parametrize("kind", KINDS, ids=lambda kind: kind.rt.plural)
def test_a_deletion_that_waits_moves_generation_only_where_it_is_set(
        core: Core, kind: Kind) -> None:
    rt, name = kind.rt, kind.body["metadata"]["name"]
    created = core.store.create(rt, _ns(rt), kind.body).entry.obj
    deleting = delete(core.store, rt, _ns(rt), name, DeleteOptions()).obj
    assert deleting["metadata"]["deletionTimestamp"]
    before = _generation(created)
    assert _generation(deleting) == (None if before is None else before + 1)


def test_a_client_cannot_set_generation(core: Core) -> None:
    job = {"metadata": {"name": "j", "generation": 7}, "spec": {"template": {"spec": POD_SPEC}}}
    assert _generation(core.store.create(kinds.JOBS, "default", job).entry.obj) == 1
    core.store.create(kinds.CONFIGMAPS, "default", {"metadata": {"name": "c"}})
    updated = _patch(core, kinds.CONFIGMAPS, "c", {"metadata": {"generation": 9}})
    assert _generation(updated) is None
    job_update = _patch(core, kinds.JOBS, "j", {"metadata": {"generation": 9}})
    assert _generation(job_update) == 1


def test_status_writes_leave_generation_alone(core: Core) -> None:
    job = {"metadata": {"name": "j"}, "spec": {"template": {"spec": POD_SPEC}}}
    core.store.create(kinds.JOBS, "default", job)
    written = _patch(core, kinds.JOBS, "j", {"status": {"active": 1}}, subresource="status")
    assert written["status"]["active"] == 1 and _generation(written) == 1


def _custom_resource_type(core: Core, *, status: bool) -> ResourceType:
    version = dict(CRD_SPEC["versions"][0])
    if status:
        version["subresources"] = {"status": {}}
    spec = {**CRD_SPEC, "versions": [version]}
    core.store.create(kinds.CRDS, "", {"metadata": {"name": "gadgets.example.com"},
                                       "spec": spec})
    rt = core.registry.lookup("example.com", "v1", "gadgets")
    assert rt is not None
    return rt


def test_a_custom_resource_moves_with_anything_but_metadata_and_its_status(
        core: Core) -> None:
    rt = _custom_resource_type(core, status=True)
    gadget = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
              "spec": {"size": 1}}
    assert _generation(core.store.create(rt, "default", gadget).entry.obj) == 1
    assert _generation(_patch(core, rt, "g", {"metadata": {"labels": {"a": "b"}}})) == 1
    assert _generation(_patch(core, rt, "g", {"spec": {"size": 2}})) == 2
    assert _generation(_patch(core, rt, "g", {"extra": "top-level"})) == 3
    assert _generation(_patch(core, rt, "g", {"status": {"ready": True}},
                              subresource="status")) == 3


def test_without_a_status_subresource_a_status_change_moves_it_too(core: Core) -> None:
    rt = _custom_resource_type(core, status=False)
    gadget = {"apiVersion": "example.com/v1", "kind": "Gadget", "metadata": {"name": "g"},
              "spec": {"size": 1}}
    core.store.create(rt, "default", gadget)
    assert _generation(_patch(core, rt, "g", {"status": {"ready": True}})) == 2
