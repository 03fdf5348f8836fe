"""Where strategic merge patch merges lists instead of replacing them, per built-in kind.

The Go types carry this as `patchStrategy`/`patchMergeKey` struct tags; here it
is data: a dotted field path (list items add no segment) maps to the merge
key, or to `PRIMITIVE_SET` for lists of scalars merged as sets. A list whose
path is absent is atomic and replaced whole.
"""

from __future__ import annotations

from functools import cache

PRIMITIVE_SET = ""

_OBJECT_META: dict[str, str] = {
    "metadata.finalizers": PRIMITIVE_SET,
    "metadata.ownerReferences": "uid",
}


def _container_lists(prefix: str) -> dict[str, str]:
    keys: dict[str, str] = {}
    for containers in ("containers", "initContainers", "ephemeralContainers"):
        base = f"{prefix}.{containers}"
        keys[base] = "name"
        keys[f"{base}.env"] = "name"
        keys[f"{base}.ports"] = "containerPort"
        keys[f"{base}.volumeMounts"] = "mountPath"
        keys[f"{base}.volumeDevices"] = "devicePath"
    return keys


def _pod_spec(prefix: str) -> dict[str, str]:
    return {
        **_container_lists(prefix),
        f"{prefix}.volumes": "name",
        f"{prefix}.imagePullSecrets": "name",
        f"{prefix}.hostAliases": "ip",
        f"{prefix}.topologySpreadConstraints": "topologyKey",
        f"{prefix}.resourceClaims": "name",
        f"{prefix}.schedulingGates": "name",
    }


@cache
def _by_kind() -> dict[str, dict[str, str]]:
    """The table, built once when first asked (not at import, so that what builds it is
    what a test of it runs)."""
    return {
        "Pod": {
            **_pod_spec("spec"),
            "status.conditions": "type",
            "status.podIPs": "ip",
            "status.hostIPs": "ip",
            "status.resourceClaimStatuses": "name",
        },
        "Service": {"spec.ports": "port", "status.conditions": "type"},
        "Job": {**_pod_spec("spec.template.spec"), "status.conditions": "type"},
        "CronJob": _pod_spec("spec.jobTemplate.spec.template.spec"),
        "Deployment": {**_pod_spec("spec.template.spec"), "status.conditions": "type"},
        "ReplicaSet": {**_pod_spec("spec.template.spec"), "status.conditions": "type"},
        "ReplicationController": {**_pod_spec("spec.template.spec"), "status.conditions": "type"},
        "Namespace": {"status.conditions": "type"},
        "Node": {
            "spec.podCIDRs": PRIMITIVE_SET,
            "status.addresses": "type",
            "status.conditions": "type",
        },
    }


def merge_keys_for(kind: str) -> dict[str, str]:
    """Path -> merge key for `kind`; kinds not listed get the ObjectMeta rules only."""
    return {**_OBJECT_META, **_by_kind().get(kind, {})}
