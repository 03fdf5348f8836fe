"""Field tables of the Kubernetes protobuf messages the embedded server decodes.

Each table maps a field number of k8s.io/api or k8s.io/apimachinery's
generated.proto to its JSON name and type, so `protobuf.py` can turn a body
kubectl sends as `application/vnd.kubernetes.protobuf` into the JSON object
Go's encoder would have written for the same struct.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Literal

Kind = Literal[
    "string",
    "int",
    "bool",
    "message",
    "time",
    "micro_time",
    "int_or_string",
    "quantity",
    "string_map",
    "bytes_map",
    "quantity_map",
    "raw_json",
]


@dataclass(frozen=True)
class Field:
    """One field of a message: its JSON name, how to decode it, and when JSON keeps it."""

    name: str
    kind: Kind
    repeated: bool = False
    # Go writes the zero value too: a pointer field (nil is simply absent on the
    # wire) or a field without `omitempty`. Other zero scalars are left out.
    keep_zero: bool = False
    table: Mapping[int, Field] | None = None
    # An embedded Go struct tagged `json:",inline"` (a Volume's VolumeSource, a Probe's
    # ProbeHandler): a message on the wire whose fields JSON writes into the parent's.
    inline: bool = False


Table = Mapping[int, "Field"]


def string(name: str, *, keep_zero: bool = False) -> Field:
    return Field(name, "string", keep_zero=keep_zero)


def strings(name: str) -> Field:
    return Field(name, "string", repeated=True)


def integer(name: str, *, keep_zero: bool = False) -> Field:
    return Field(name, "int", keep_zero=keep_zero)


def boolean(name: str, *, keep_zero: bool = False) -> Field:
    return Field(name, "bool", keep_zero=keep_zero)


def message(name: str, table: Table, *, repeated: bool = False, inline: bool = False) -> Field:
    return Field(name, "message", repeated=repeated, table=table, inline=inline)


def of_kind(name: str, kind: Kind, *, keep_zero: bool = False) -> Field:
    return Field(name, kind, keep_zero=keep_zero)


# k8s.io/apimachinery/pkg/apis/meta/v1
OWNER_REFERENCE: Table = {
    5: string("apiVersion", keep_zero=True),
    1: string("kind", keep_zero=True),
    3: string("name", keep_zero=True),
    4: string("uid", keep_zero=True),
    6: boolean("controller", keep_zero=True),
    7: boolean("blockOwnerDeletion", keep_zero=True),
}
MANAGED_FIELDS_ENTRY: Table = {
    1: string("manager"),
    2: string("operation"),
    3: string("apiVersion"),
    4: of_kind("time", "time"),
    6: string("fieldsType"),
    7: of_kind("fieldsV1", "raw_json"),
    8: string("subresource"),
}
OBJECT_META: Table = {
    1: string("name"),
    2: string("generateName"),
    3: string("namespace"),
    4: string("selfLink"),
    5: string("uid"),
    6: string("resourceVersion"),
    7: integer("generation"),
    8: of_kind("creationTimestamp", "time"),
    9: of_kind("deletionTimestamp", "time"),
    10: integer("deletionGracePeriodSeconds", keep_zero=True),
    11: of_kind("labels", "string_map"),
    12: of_kind("annotations", "string_map"),
    13: message("ownerReferences", OWNER_REFERENCE, repeated=True),
    14: strings("finalizers"),
    17: message("managedFields", MANAGED_FIELDS_ENTRY, repeated=True),
}
CONDITION: Table = {
    1: string("type", keep_zero=True),
    2: string("status", keep_zero=True),
    3: integer("observedGeneration"),
    4: of_kind("lastTransitionTime", "time"),
    5: string("reason", keep_zero=True),
    6: string("message", keep_zero=True),
}
PRECONDITIONS: Table = {
    1: string("uid", keep_zero=True),
    2: string("resourceVersion", keep_zero=True),
}
DELETE_OPTIONS: Table = {
    1: integer("gracePeriodSeconds", keep_zero=True),
    2: message("preconditions", PRECONDITIONS),
    3: boolean("orphanDependents", keep_zero=True),
    4: string("propagationPolicy", keep_zero=True),
    5: strings("dryRun"),
    6: boolean("ignoreStoreReadErrorWithClusterBreakingPotential", keep_zero=True),
}

# k8s.io/api/core/v1: Namespace
NAMESPACE_CONDITION: Table = {
    1: string("type", keep_zero=True),
    2: string("status", keep_zero=True),
    4: of_kind("lastTransitionTime", "time"),
    5: string("reason"),
    6: string("message"),
}
NAMESPACE: Table = {
    1: message("metadata", OBJECT_META),
    2: message("spec", {1: strings("finalizers")}),
    3: message(
        "status", {1: string("phase"), 2: message("conditions", NAMESPACE_CONDITION, repeated=True)}
    ),
}

# k8s.io/api/core/v1: ConfigMap
CONFIG_MAP: Table = {
    1: message("metadata", OBJECT_META),
    2: of_kind("data", "string_map"),
    3: of_kind("binaryData", "bytes_map"),
    4: boolean("immutable", keep_zero=True),
}

# k8s.io/api/core/v1: Secret (type "" is left out here and defaulted to Opaque later)
SECRET: Table = {
    1: message("metadata", OBJECT_META),
    2: of_kind("data", "bytes_map"),
    4: of_kind("stringData", "string_map"),
    3: string("type"),
    5: boolean("immutable", keep_zero=True),
}

# k8s.io/api/core/v1: Service
SERVICE_PORT: Table = {
    1: string("name"),
    2: string("protocol"),
    6: string("appProtocol", keep_zero=True),
    3: integer("port", keep_zero=True),
    4: of_kind("targetPort", "int_or_string"),
    5: integer("nodePort"),
}
SESSION_AFFINITY_CONFIG: Table = {
    1: message("clientIP", {1: integer("timeoutSeconds", keep_zero=True)}),
}
SERVICE_SPEC: Table = {
    1: message("ports", SERVICE_PORT, repeated=True),
    2: of_kind("selector", "string_map"),
    3: string("clusterIP"),
    18: strings("clusterIPs"),
    4: string("type"),
    5: strings("externalIPs"),
    7: string("sessionAffinity"),
    8: string("loadBalancerIP"),
    9: strings("loadBalancerSourceRanges"),
    10: string("externalName"),
    11: string("externalTrafficPolicy"),
    12: integer("healthCheckNodePort"),
    13: boolean("publishNotReadyAddresses"),
    14: message("sessionAffinityConfig", SESSION_AFFINITY_CONFIG),
    19: strings("ipFamilies"),
    17: string("ipFamilyPolicy", keep_zero=True),
    20: boolean("allocateLoadBalancerNodePorts", keep_zero=True),
    21: string("loadBalancerClass", keep_zero=True),
    22: string("internalTrafficPolicy", keep_zero=True),
    23: string("trafficDistribution", keep_zero=True),
}
PORT_STATUS: Table = {
    1: integer("port", keep_zero=True),
    2: string("protocol", keep_zero=True),
    3: string("error", keep_zero=True),
}
LOAD_BALANCER_INGRESS: Table = {
    1: string("ip"),
    2: string("hostname"),
    3: string("ipMode", keep_zero=True),
    4: message("ports", PORT_STATUS, repeated=True),
}
SERVICE_STATUS: Table = {
    1: message("loadBalancer", {1: message("ingress", LOAD_BALANCER_INGRESS, repeated=True)}),
    2: message("conditions", CONDITION, repeated=True),
}
SERVICE: Table = {
    1: message("metadata", OBJECT_META),
    2: message("spec", SERVICE_SPEC),
    3: message("status", SERVICE_STATUS),
}

# k8s.io/api/core/v1: Event
OBJECT_REFERENCE: Table = {
    1: string("kind"),
    2: string("namespace"),
    3: string("name"),
    4: string("uid"),
    5: string("apiVersion"),
    6: string("resourceVersion"),
    7: string("fieldPath"),
}
EVENT: Table = {
    1: message("metadata", OBJECT_META),
    2: message("involvedObject", OBJECT_REFERENCE),
    3: string("reason"),
    4: string("message"),
    5: message("source", {1: string("component"), 2: string("host")}),
    6: of_kind("firstTimestamp", "time"),
    7: of_kind("lastTimestamp", "time"),
    8: integer("count"),
    9: string("type"),
    10: of_kind("eventTime", "micro_time"),
    11: message("series", {1: integer("count"), 2: of_kind("lastObservedTime", "micro_time")}),
    12: string("action"),
    13: message("related", OBJECT_REFERENCE),
    14: string("reportingComponent", keep_zero=True),
    15: string("reportingInstance", keep_zero=True),
}

# k8s.io/api/coordination/v1: Lease
LEASE_SPEC: Table = {
    1: string("holderIdentity", keep_zero=True),
    2: integer("leaseDurationSeconds", keep_zero=True),
    3: of_kind("acquireTime", "micro_time"),
    4: of_kind("renewTime", "micro_time"),
    5: integer("leaseTransitions", keep_zero=True),
    6: string("strategy", keep_zero=True),
    7: string("preferredHolder", keep_zero=True),
}
LEASE: Table = {1: message("metadata", OBJECT_META), 2: message("spec", LEASE_SPEC)}

# k8s.io/api/apps/v1: ControllerRevision. Its RawExtension `data` carries the
# JSON document as bytes in field 1, as FieldsV1 does; `revision` has no omitempty.
CONTROLLER_REVISION: Table = {
    1: message("metadata", OBJECT_META),
    2: Field("data", "raw_json", keep_zero=True),
    3: integer("revision", keep_zero=True),
}

# k8s.io/api/scheduling/v1: PriorityClass. `value` has no omitempty; preemptionPolicy is a
# pointer, so an empty one on the wire was set.
PRIORITY_CLASS: Table = {
    1: message("metadata", OBJECT_META),
    2: integer("value", keep_zero=True),
    3: boolean("globalDefault"),
    4: string("description"),
    5: string("preemptionPolicy", keep_zero=True),
}

# DeleteOptions is registered in every group version, so its envelope names
# the version of the resource it deletes.
KINDS: Mapping[tuple[str, str], Table] = {
    ("v1", "Namespace"): NAMESPACE,
    ("v1", "ConfigMap"): CONFIG_MAP,
    ("v1", "Secret"): SECRET,
    ("v1", "Service"): SERVICE,
    ("v1", "Event"): EVENT,
    ("coordination.k8s.io/v1", "Lease"): LEASE,
    ("apps/v1", "ControllerRevision"): CONTROLLER_REVISION,
    ("scheduling.k8s.io/v1", "PriorityClass"): PRIORITY_CLASS,
    **{
        (version, "DeleteOptions"): DELETE_OPTIONS
        for version in (
            "v1",
            "meta.k8s.io/v1",
            "apps/v1",
            "batch/v1",
            "coordination.k8s.io/v1",
            "scheduling.k8s.io/v1",
            "apiextensions.k8s.io/v1",
            "rbac.authorization.k8s.io/v1",
        )
    },
}
