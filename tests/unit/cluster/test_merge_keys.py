"""Which lists a strategic merge patch merges, per built-in kind, and by which key: the
`patchStrategy:"merge"` and `patchMergeKey` tags of the Go types in k8s.io/api (core/v1
PodSpec, Container, PodStatus, ServiceSpec, NodeSpec and NodeStatus, ObjectMeta, and each
kind's status conditions), written out here path by path. For every tagged list, a patch of
one entry merges into the entry of the same key and keeps the others; an untagged list is
replaced whole."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cluster.apiserver.patch.patch import strategic_merge_patch

# Where each kind holds its pod spec, and the containers lists in a pod spec.
POD_SPEC_AT = {
    "Pod": "spec",
    "Job": "spec.template.spec",
    "CronJob": "spec.jobTemplate.spec.template.spec",
    "Deployment": "spec.template.spec",
    "ReplicaSet": "spec.template.spec",
    "ReplicationController": "spec.template.spec",
}
CONTAINER_LISTS = ("containers", "initContainers", "ephemeralContainers")
POD_SPEC_KEYS = {"volumes": "name", "imagePullSecrets": "name", "hostAliases": "ip",
                 "topologySpreadConstraints": "topologyKey", "resourceClaims": "name",
                 "schedulingGates": "name"}
CONTAINER_KEYS = {"env": "name", "ports": "containerPort", "volumeMounts": "mountPath",
                  "volumeDevices": "devicePath"}
OTHER_KEYS = [
    ("Pod", "status.conditions", "type"), ("Pod", "status.podIPs", "ip"),
    ("Pod", "status.hostIPs", "ip"), ("Pod", "status.resourceClaimStatuses", "name"),
    ("Service", "spec.ports", "port"), ("Service", "status.conditions", "type"),
    ("Job", "status.conditions", "type"), ("Deployment", "status.conditions", "type"),
    ("ReplicaSet", "status.conditions", "type"),
    ("ReplicationController", "status.conditions", "type"),
    ("Namespace", "status.conditions", "type"), ("Node", "status.addresses", "type"),
    ("Node", "status.conditions", "type"),
    ("Pod", "metadata.ownerReferences", "uid"), ("ConfigMap", "metadata.ownerReferences", "uid"),
    ("Widget", "metadata.ownerReferences", "uid"),
]


def keyed_lists() -> list[tuple[str, str, str]]:
    cases = list(OTHER_KEYS)
    for kind, at in POD_SPEC_AT.items():
        cases += [(kind, f"{at}.{field}", key) for field, key in POD_SPEC_KEYS.items()]
        for containers in CONTAINER_LISTS:
            cases.append((kind, f"{at}.{containers}", "name"))
            cases += [(kind, f"{at}.{containers}.{field}", key)
                      for field, key in CONTAINER_KEYS.items()]
    return cases


def at_path(path: str, leaf: Any) -> dict[str, Any]:
    """An object holding `leaf` at `path`; a containers list on the way holds one
    container, `main`, as list entries add no segment to the path."""
    segments = path.split(".")
    value: Any = leaf
    for depth in range(len(segments) - 1, -1, -1):
        value = {segments[depth]: value}
        walked = ".".join(segments[:depth])
        if walked.rsplit(".", 1)[-1] in CONTAINER_LISTS:
            value = [{"name": "main", **value}]
    return value


def read(obj: Any, path: str) -> Any:
    for segment in path.split("."):
        obj = obj[0] if isinstance(obj, list) else obj
        obj = obj[segment]
    return obj


@pytest.mark.parametrize(("kind", "path", "key"), keyed_lists())
def test_a_tagged_list_merges_a_patch_entry_into_the_entry_of_its_key(
    kind: str, path: str, key: str,
) -> None:
    original = [{key: 1, "note": "kept"}, {key: 2, "note": "old"}]
    merged = strategic_merge_patch(at_path(path, original),
                                   at_path(path, [{key: 2, "note": "new"}]), kind)
    assert read(merged, path) == [{key: 1, "note": "kept"}, {key: 2, "note": "new"}]


@pytest.mark.parametrize(("kind", "path"), [("Pod", "metadata.finalizers"),
                                            ("Secret", "metadata.finalizers"),
                                            ("Node", "spec.podCIDRs")])
def test_a_list_of_scalars_tagged_merge_is_merged_as_a_set(kind: str, path: str) -> None:
    merged = strategic_merge_patch(at_path(path, ["a", "b"]),
                                   at_path(path, ["b", "c"]), kind)
    assert sorted(read(merged, path)) == ["a", "b", "c"]


@pytest.mark.parametrize(("kind", "path"), [
    ("Pod", "spec.containers.envFrom"), ("Pod", "spec.containers.args"),
    ("Pod", "spec.tolerations"), ("Service", "spec.externalIPs"),
    ("Job", "spec.podFailurePolicy.rules"), ("ConfigMap", "data.list"),
])
def test_an_untagged_list_is_replaced_whole(kind: str, path: str) -> None:
    merged = strategic_merge_patch(at_path(path, [{"name": 1}, {"name": 2}]),
                                   at_path(path, [{"name": 2, "note": "new"}]), kind)
    assert read(merged, path) == [{"name": 2, "note": "new"}]
