"""The built-in resource types the embedded server serves, and their write strategies.

These are the records discovery, routing, storage and printing read for the
kinds a job engine needs (namespaces, pods, services, events, configmaps,
secrets, nodes, controllerrevisions, leases, priorityclasses, batch/v1 jobs and
cronjobs, the replicated workloads: apps/v1 deployments and replicasets and v1
replicationcontrollers, CRDs), and the identity and access kinds (serviceaccounts, RBAC,
access reviews). The strategy says what the real API server's registry does
differently per kind (create on update, unconditional update, status on
create, generation, the propagation a DELETE without one gets); custom
resources use the apiextensions server's.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import Enum

from engine.cluster.apiserver.registry.resources import ResourceType, ScalePaths
from engine.cluster.apiserver.storage.objects import TypeKey

NAMESPACES = ResourceType(
    group="",
    version="v1",
    kind="Namespace",
    plural="namespaces",
    singular="namespace",
    namespaced=False,
    short_names=("ns",),
    subresources=frozenset({"status", "finalize"}),
    verbs=("create", "delete", "get", "list", "patch", "update", "watch"),  # as upstream
)
PODS = ResourceType(
    group="",
    version="v1",
    kind="Pod",
    plural="pods",
    singular="pod",
    namespaced=True,
    short_names=("po",),
    categories=("all",),
    subresources=frozenset({"status", "log", "binding", "exec"}),
)
SERVICES = ResourceType(
    group="",
    version="v1",
    kind="Service",
    plural="services",
    singular="service",
    namespaced=True,
    short_names=("svc",),
    categories=("all",),
    subresources=frozenset({"status"}),
)
EVENTS = ResourceType(
    group="",
    version="v1",
    kind="Event",
    plural="events",
    singular="event",
    namespaced=True,
    short_names=("ev",),
)
CONFIGMAPS = ResourceType(
    group="",
    version="v1",
    kind="ConfigMap",
    plural="configmaps",
    singular="configmap",
    namespaced=True,
    short_names=("cm",),
)
SECRETS = ResourceType(
    group="",
    version="v1",
    kind="Secret",
    plural="secrets",
    singular="secret",
    namespaced=True,
)
NODES = ResourceType(
    group="",
    version="v1",
    kind="Node",
    plural="nodes",
    singular="node",
    namespaced=False,
    short_names=("no",),
    subresources=frozenset({"status"}),
)
CONTROLLER_REVISIONS = ResourceType(
    group="apps",
    version="v1",
    kind="ControllerRevision",
    plural="controllerrevisions",
    singular="controllerrevision",
    namespaced=True,
)
LEASES = ResourceType(
    group="coordination.k8s.io",
    version="v1",
    kind="Lease",
    plural="leases",
    singular="lease",
    namespaced=True,
)
PRIORITY_CLASSES = ResourceType(
    group="scheduling.k8s.io",
    version="v1",
    kind="PriorityClass",
    plural="priorityclasses",
    singular="priorityclass",
    namespaced=False,
    short_names=("pc",),
)
JOBS = ResourceType(
    group="batch",
    version="v1",
    kind="Job",
    plural="jobs",
    singular="job",
    namespaced=True,
    categories=("all",),
    subresources=frozenset({"status"}),
)
CRONJOBS = ResourceType(
    group="batch",
    version="v1",
    kind="CronJob",
    plural="cronjobs",
    singular="cronjob",
    namespaced=True,
    short_names=("cj",),
    categories=("all",),
    subresources=frozenset({"status"}),
)
# The replicated workloads: /scale reads spec.replicas and status.replicas, and shows the
# spec's selector (a LabelSelector, or a ReplicationController's plain map) as text.
_WORKLOAD_SCALE = ScalePaths(".spec.replicas", ".status.replicas", spec_selector=".spec.selector")
DEPLOYMENTS = ResourceType(
    group="apps",
    version="v1",
    kind="Deployment",
    plural="deployments",
    singular="deployment",
    namespaced=True,
    short_names=("deploy",),
    categories=("all",),
    subresources=frozenset({"status", "scale"}),
    scale=_WORKLOAD_SCALE,
)
REPLICA_SETS = ResourceType(
    group="apps",
    version="v1",
    kind="ReplicaSet",
    plural="replicasets",
    singular="replicaset",
    namespaced=True,
    short_names=("rs",),
    categories=("all",),
    subresources=frozenset({"status", "scale"}),
    scale=_WORKLOAD_SCALE,
)
REPLICATION_CONTROLLERS = ResourceType(
    group="",
    version="v1",
    kind="ReplicationController",
    plural="replicationcontrollers",
    singular="replicationcontroller",
    namespaced=True,
    short_names=("rc",),
    categories=("all",),
    subresources=frozenset({"status", "scale"}),
    scale=_WORKLOAD_SCALE,
)
WORKLOAD_TYPES: tuple[ResourceType, ...] = (DEPLOYMENTS, REPLICA_SETS, REPLICATION_CONTROLLERS)
SERVICE_ACCOUNTS = ResourceType(
    group="",
    version="v1",
    kind="ServiceAccount",
    plural="serviceaccounts",
    singular="serviceaccount",
    namespaced=True,
    short_names=("sa",),
    subresources=frozenset({"token"}),
)
_RBAC = "rbac.authorization.k8s.io"
ROLES = ResourceType(
    group=_RBAC, version="v1", kind="Role", plural="roles", singular="role", namespaced=True,
)
CLUSTER_ROLES = ResourceType(
    group=_RBAC,
    version="v1",
    kind="ClusterRole",
    plural="clusterroles",
    singular="clusterrole",
    namespaced=False,
)
ROLE_BINDINGS = ResourceType(
    group=_RBAC,
    version="v1",
    kind="RoleBinding",
    plural="rolebindings",
    singular="rolebinding",
    namespaced=True,
)
CLUSTER_ROLE_BINDINGS = ResourceType(
    group=_RBAC,
    version="v1",
    kind="ClusterRoleBinding",
    plural="clusterrolebindings",
    singular="clusterrolebinding",
    namespaced=False,
)
# Reviews are asked, never stored: create is their only verb, as upstream.
SELF_SUBJECT_ACCESS_REVIEWS = ResourceType(
    group="authorization.k8s.io",
    version="v1",
    kind="SelfSubjectAccessReview",
    plural="selfsubjectaccessreviews",
    singular="selfsubjectaccessreview",
    namespaced=False,
    verbs=("create",),
)
SELF_SUBJECT_RULES_REVIEWS = ResourceType(
    group="authorization.k8s.io",
    version="v1",
    kind="SelfSubjectRulesReview",
    plural="selfsubjectrulesreviews",
    singular="selfsubjectrulesreview",
    namespaced=False,
    verbs=("create",),
)
SELF_SUBJECT_REVIEWS = ResourceType(
    group="authentication.k8s.io",
    version="v1",
    kind="SelfSubjectReview",
    plural="selfsubjectreviews",
    singular="selfsubjectreview",
    namespaced=False,
    verbs=("create",),
)
REVIEW_TYPES: tuple[ResourceType, ...] = (
    SELF_SUBJECT_ACCESS_REVIEWS, SELF_SUBJECT_RULES_REVIEWS, SELF_SUBJECT_REVIEWS,
)
RBAC_TYPES: tuple[ResourceType, ...] = (ROLES, CLUSTER_ROLES, ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS)
CRDS = ResourceType(
    group="apiextensions.k8s.io",
    version="v1",
    kind="CustomResourceDefinition",
    plural="customresourcedefinitions",
    singular="customresourcedefinition",
    namespaced=False,
    short_names=("crd", "crds"),
    categories=("api-extensions",),
    subresources=frozenset({"status"}),
)

BUILTIN_TYPES: tuple[ResourceType, ...] = (
    NAMESPACES,
    PODS,
    SERVICES,
    EVENTS,
    CONFIGMAPS,
    SECRETS,
    NODES,
    CONTROLLER_REVISIONS,
    LEASES,
    PRIORITY_CLASSES,
    JOBS,
    CRONJOBS,
    *WORKLOAD_TYPES,
    SERVICE_ACCOUNTS,
    *RBAC_TYPES,
    *REVIEW_TYPES,
    CRDS,
)

# Namespaces that exist from the start and can never be deleted.
INITIAL_NAMESPACES: tuple[str, ...] = ("default", "kube-system", "kube-public", "kube-node-lease")


class Generation(Enum):
    """How a kind's registry keeps `metadata.generation` (each kind's PrepareForCreate and
    PrepareForUpdate upstream; rest.BeforeUpdate carries the stored value into every update,
    so a client never sets it)."""

    # Never set: ConfigMaps, Secrets, Events, Namespaces, Services, Nodes, Leases...
    NONE = "none"
    # 1 on create, never moved (PriorityClass).
    FIXED = "fixed"
    # 1 on create, one more whenever `spec` changes (Jobs, CronJobs, ReplicaSets, CRDs).
    SPEC = "spec"
    # As SPEC, and when the annotations change: a Deployment copies its annotations to its
    # ReplicaSets, so its controller must see them move.
    SPEC_OR_ANNOTATIONS = "spec-or-annotations"
    # 1 on create, one more whenever anything but metadata (and status, when /status is a
    # subresource) changes (custom resources).
    CONTENT = "content"


@dataclass(frozen=True)
class Strategy:
    """Per-kind differences of the real registry's create/update rules."""

    # PUT of a missing object creates it (events and leases do; most kinds answer 404).
    create_on_update: bool = False
    # PUT without metadata.resourceVersion is accepted as an unconditional update.
    unconditional_update: bool = True
    # Status given on create is kept (the kubelet registers nodes with their status).
    keep_status_on_create: bool = False
    # Where metadata.generation comes from and when it moves.
    generation: Generation = Generation.NONE
    # A DELETE that names no propagation policy orphans the dependents (DefaultGarbageCollection-
    # Policy: batch/v1 Jobs and v1 ReplicationControllers keep their pods, for backward
    # compatibility); otherwise background.
    orphan_by_default: bool = False


# Built-in kinds not named below: what kube-apiserver's generic registry does.
BUILTIN_STRATEGY = Strategy()
# The apiextensions server's strategy for every custom resource (customresource/strategy.go).
CUSTOM_RESOURCE_STRATEGY = Strategy(generation=Generation.CONTENT)

# Pods have no generation here: the server reports v1.32, and kube-apiserver's pod strategy
# sets one (and moves it with the spec) from v1.33 on (KEP-5067).
_STRATEGIES: dict[TypeKey, Strategy] = {
    EVENTS.key: Strategy(create_on_update=True),
    LEASES.key: Strategy(create_on_update=True),
    NODES.key: Strategy(keep_status_on_create=True),
    PRIORITY_CLASSES.key: Strategy(generation=Generation.FIXED),
    JOBS.key: Strategy(generation=Generation.SPEC, orphan_by_default=True),
    CRONJOBS.key: Strategy(generation=Generation.SPEC),
    DEPLOYMENTS.key: Strategy(generation=Generation.SPEC_OR_ANNOTATIONS),
    REPLICA_SETS.key: Strategy(generation=Generation.SPEC),
    REPLICATION_CONTROLLERS.key: Strategy(generation=Generation.SPEC, orphan_by_default=True),
    CRDS.key: Strategy(unconditional_update=False, generation=Generation.SPEC),
}
_BUILTIN_KEYS = frozenset(rt.key for rt in BUILTIN_TYPES)


def strategy_for(key: TypeKey) -> Strategy:
    if key in _STRATEGIES:
        return _STRATEGIES[key]
    return BUILTIN_STRATEGY if key in _BUILTIN_KEYS else CUSTOM_RESOURCE_STRATEGY
