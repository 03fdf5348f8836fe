"""Per-kind field validation of the built-in kinds, one function per kind.

Each takes the whole object and returns its causes; `builtin_validation.py`
adds the ObjectMeta checks and the update rules. Only fields clients can get
wrong and the real server rejects are checked. ConfigMaps and Secrets share
their data-map rules, which live in `config_kinds.py`; PriorityClass rules
live with the kind in `priority_classes.py`.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Mapping
from typing import Any

from engine.cluster.apiserver.errors import Cause
from engine.cluster.apiserver.registry.priority_classes import validate_priority_class
from engine.cluster.apiserver.schema.schema_validation import check_crd_schema
from engine.cluster.apiserver.validation.config_kinds import validate_configmap, validate_secret
from engine.cluster.apiserver.validation.field_errors import (
    duplicate,
    invalid,
    not_supported,
    required,
)
from engine.cluster.apiserver.validation.names import (
    dns1035_label_errors,
    dns1123_label_errors,
    dns1123_subdomain_errors,
)
from engine.cluster.apiserver.validation.pod_specs import (
    PROTOCOLS,
    pod_spec_causes,
    port_errors,
    port_name_errors,
)
from engine.cluster.apiserver.validation.rbac_validation import (
    path_segment_name_errors,
    validate_cluster_role,
    validate_cluster_role_binding,
    validate_role,
    validate_role_binding,
)

Spec = Mapping[str, Any]


def validate_pod(obj: Spec) -> list[Cause]:
    return pod_spec_causes(obj.get("spec") or {}, "spec")


def validate_service(obj: Spec) -> list[Cause]:
    spec = obj.get("spec") or {}
    service_type = spec.get("type", "ClusterIP")
    types = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
    causes: list[Cause] = []
    if service_type not in types:
        causes.append(not_supported("spec.type", service_type, types))
    cluster_ip = spec.get("clusterIP")
    if cluster_ip not in (None, "", "None") and not _is_ip(cluster_ip):
        causes.append(
            invalid("spec.clusterIP", cluster_ip, "must be empty, 'None', or a valid IP address")
        )
    ports = spec.get("ports") or []
    if not ports and cluster_ip != "None" and service_type != "ExternalName":
        causes.append(required("spec.ports"))
    names: set[str] = set()
    for index, port in enumerate(ports):
        path = f"spec.ports[{index}]"
        name = port.get("name") or ""
        if len(ports) > 1 and not name:
            causes.append(required(f"{path}.name"))
        elif name:
            causes += [invalid(f"{path}.name", name, e) for e in dns1123_label_errors(name)]
            if name in names:
                causes.append(duplicate(f"{path}.name", name))
            names.add(name)
        causes += port_errors(f"{path}.port", port.get("port"))
        if port.get("protocol", "TCP") not in PROTOCOLS:
            causes.append(not_supported(f"{path}.protocol", port["protocol"], PROTOCOLS))
        target = port.get("targetPort")
        if isinstance(target, str):
            causes += port_name_errors(f"{path}.targetPort", target)
        elif target is not None:
            causes += port_errors(f"{path}.targetPort", target)
    return causes


def validate_event(obj: Spec) -> list[Cause]:
    involved = obj.get("involvedObject")
    if not involved:
        return [required("involvedObject")]
    namespace = (obj.get("metadata") or {}).get("namespace")
    if involved.get("namespace") and namespace and involved["namespace"] != namespace:
        return [
            invalid(
                "involvedObject.namespace", involved["namespace"], "does not match event.namespace"
            )
        ]
    return []


def validate_lease(obj: Spec) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes = []
    duration = spec.get("leaseDurationSeconds")
    if duration is not None and duration <= 0:
        causes.append(invalid("spec.leaseDurationSeconds", duration, "must be greater than 0"))
    transitions = spec.get("leaseTransitions")
    if transitions is not None and transitions < 0:
        causes.append(
            invalid("spec.leaseTransitions", transitions, "must be greater than or equal to 0")
        )
    return causes


def validate_controller_revision(obj: Spec) -> list[Cause]:
    """`data` may hold any JSON but must be there; `revision` is never negative."""
    causes = [] if obj.get("data") is not None else [required("data", "data is mandatory")]
    revision = obj.get("revision") or 0
    if revision < 0:
        causes.append(invalid("revision", revision, "must be greater than or equal to 0"))
    return causes


def validate_node(obj: Spec) -> list[Cause]:
    spec = obj.get("spec") or {}
    causes = []
    for index, cidr in enumerate(spec.get("podCIDRs") or []):
        try:
            ipaddress.ip_network(cidr, strict=False)
        except ValueError:
            causes.append(invalid(f"spec.podCIDRs[{index}]", cidr, "must be a valid CIDR value"))
    effects = ("NoExecute", "NoSchedule", "PreferNoSchedule")
    for index, taint in enumerate(spec.get("taints") or []):
        if taint.get("effect") not in effects:
            causes.append(
                not_supported(f"spec.taints[{index}].effect", taint.get("effect"), effects)
            )
    return causes


def validate_crd(obj: Spec) -> list[Cause]:
    spec = obj.get("spec") or {}
    group, names = spec.get("group") or "", spec.get("names") or {}
    causes: list[Cause] = []
    if not group:
        causes.append(required("spec.group"))
    elif dns1123_subdomain_errors(group) or "." not in group:
        causes.append(invalid("spec.group", group, "should be a domain with at least one dot"))
    for field in ("plural", "kind"):
        if not names.get(field):
            causes.append(required(f"spec.names.{field}"))
    for field in ("plural", "singular"):
        if names.get(field):
            causes += [
                invalid(f"spec.names.{field}", names[field], e)
                for e in dns1123_label_errors(names[field])
            ]
    if names.get("listKind") and names.get("listKind") == names.get("kind"):
        causes.append(
            invalid(
                "spec.names.listKind", names["listKind"], "kind and listKind may not be the same"
            )
        )
    name = (obj.get("metadata") or {}).get("name")
    if names.get("plural") and group and name != f"{names['plural']}.{group}":
        causes.append(invalid("metadata.name", name, 'must be spec.names.plural+"."+spec.group'))
    scope = spec.get("scope")
    if scope not in ("Cluster", "Namespaced"):
        causes.append(
            required("spec.scope")
            if not scope
            else not_supported("spec.scope", scope, ("Cluster", "Namespaced"))
        )
    return causes + _crd_versions(spec.get("versions") or [])


def _crd_versions(versions: list[Any]) -> list[Cause]:
    if not versions:
        return [required("spec.versions", "must have at least one version")]
    causes: list[Cause] = []
    seen: set[str] = set()
    for index, version in enumerate(versions):
        path = f"spec.versions[{index}]"
        name = version.get("name") or ""
        if not name:
            causes.append(required(f"{path}.name"))
        else:
            causes += [invalid(f"{path}.name", name, e) for e in dns1123_label_errors(name)]
        if name in seen:
            causes.append(duplicate(f"{path}.name", name))
        seen.add(name)
        schema = (version.get("schema") or {}).get("openAPIV3Schema")
        if schema is None:
            causes.append(required(f"{path}.schema.openAPIV3Schema", "schemas are required"))
        else:
            causes += check_crd_schema(schema, f"{path}.schema.openAPIV3Schema")
        scale = (version.get("subresources") or {}).get("scale")
        if scale is not None:
            causes += _scale_path_causes(scale, f"{path}.subresources.scale")
    if sum(1 for v in versions if v.get("storage")) != 1:
        causes.append(
            invalid(
                "spec.versions",
                [v.get("name") for v in versions],
                "must have exactly one version marked as storage version",
            )
        )
    if not any(v.get("served") for v in versions):
        causes.append(
            invalid(
                "spec.versions",
                [v.get("name") for v in versions],
                "must have at least one version marked as served",
            )
        )
    return causes


_SCALE_PATHS = (
    ("specReplicasPath", (".spec.",), "should be a json path under .spec"),
    ("statusReplicasPath", (".status.",), "should be a json path under .status"),
    (
        "labelSelectorPath",
        (".spec.", ".status."),
        "should be a json path under either .spec or .status",
    ),
)


def _scale_path_causes(scale: Any, path: str) -> list[Cause]:
    """A scale subresource names its fields by simple dot paths: replicas under `.spec` and
    `.status`, the optional selector under either."""
    scale = scale if isinstance(scale, dict) else {}
    causes: list[Cause] = []
    for name, prefixes, under in _SCALE_PATHS:
        value = scale.get(name)
        where = f"{path}.{name}"
        if not value:
            if name != "labelSelectorPath":
                causes.append(required(where))
        elif not isinstance(value, str) or not value.startswith("."):
            causes.append(invalid(where, value, "must be a simple json path starting with ."))
        elif not value.startswith(prefixes):
            causes.append(invalid(where, value, under))
    return causes


def _is_ip(value: str) -> bool:
    try:
        ipaddress.ip_address(value)
    except ValueError:
        return False
    return True


KIND_VALIDATORS: dict[str, Callable[[Spec], list[Cause]]] = {
    "Pod": validate_pod,
    "Service": validate_service,
    "ConfigMap": validate_configmap,
    "Secret": validate_secret,
    "Event": validate_event,
    "ControllerRevision": validate_controller_revision,
    "Lease": validate_lease,
    "PriorityClass": validate_priority_class,
    "Node": validate_node,
    "CustomResourceDefinition": validate_crd,
    "Role": validate_role,
    "ClusterRole": validate_cluster_role,
    "RoleBinding": validate_role_binding,
    "ClusterRoleBinding": validate_cluster_role_binding,
}
NAME_RULES: dict[str, Callable[[str], list[str]]] = {
    **dict.fromkeys(("Role", "ClusterRole", "RoleBinding", "ClusterRoleBinding"),
                    path_segment_name_errors),
    "Namespace": dns1123_label_errors,
    "Service": dns1035_label_errors,
}
