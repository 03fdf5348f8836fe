"""Column printers for the other built-in kinds, ported from kube-apiserver's printers.

Services, events, nodes, namespaces, configmaps, secrets, controllerrevisions,
leases and priorityclasses print the columns and cells a real server sends;
pods, the batch kinds (jobs, cronjobs) and the replicated workloads (deployments,
replicasets, replicationcontrollers) have their own modules. Kinds without
a printer here fall back to the server's NAME/CREATED AT table.
"""

from __future__ import annotations

import datetime
from typing import Any

from engine.cluster.apiserver.printing.apps_printers import (
    DEPLOYMENT_PRINTER,
    REPLICA_SET_PRINTER,
    REPLICATION_CONTROLLER_PRINTER,
)
from engine.cluster.apiserver.printing.batch_printers import CRONJOB_PRINTER, JOB_PRINTER
from engine.cluster.apiserver.printing.pod_printer import POD_PRINTER
from engine.cluster.apiserver.printing.printing import (
    AGE_COLUMN,
    NAME_COLUMN,
    NAME_DESCRIPTION,
    Column,
    Object,
    Printer,
    age,
    created,
    format_labels,
    meta,
    parse_time,
    section,
)
from engine.cluster.apiserver.schema.openapi_schemas import (
    GLOBAL_DEFAULT_DESCRIPTION,
    PREEMPTION_POLICY_DESCRIPTION,
    PRIORITY_VALUE_DESCRIPTION,
    REVISION_DESCRIPTION,
)

# --- services ---------------------------------------------------------------------------------


def _external_ip(spec: dict[str, Any], status: dict[str, Any]) -> str:
    kind = spec.get("type") or "ClusterIP"
    external = spec.get("externalIPs") or []
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else "<none>"
    if kind == "ExternalName":
        return str(spec.get("externalName", ""))
    if kind == "LoadBalancer":
        ingress = section(status, "loadBalancer").get("ingress") or []
        balancers = sorted({i.get("ip") or i.get("hostname") for i in ingress} - {None, ""})
        if external:
            return ",".join([*balancers, *external])
        if not balancers:
            return "<pending>"
        text = ",".join(balancers)
        return text if len(text) <= 16 else text[:13] + "..."
    return "<unknown>"


def _ports(spec: dict[str, Any]) -> str:
    pieces = []
    for port in spec.get("ports") or []:
        protocol = port.get("protocol") or "TCP"
        if port.get("nodePort"):
            pieces.append(f"{port.get('port')}:{port['nodePort']}/{protocol}")
        else:
            pieces.append(f"{port.get('port')}/{protocol}")
    return ",".join(pieces) or "<none>"


def _service_cells(service: Object, now: datetime.datetime) -> list[Any]:
    spec, status = section(service, "spec"), section(service, "status")
    cluster_ips = spec.get("clusterIPs") or ([spec["clusterIP"]] if spec.get("clusterIP") else [])
    return [
        meta(service).get("name", ""),
        spec.get("type") or "ClusterIP",
        cluster_ips[0] if cluster_ips else "<none>",
        _external_ip(spec, status),
        _ports(spec),
        created(service, now),
        format_labels(spec.get("selector")),
    ]


_SERVICE = Printer(
    (
        NAME_COLUMN,
        Column("Type", "string", "type determines how the Service is exposed."),
        Column("Cluster-IP", "string", "clusterIP is the IP address of the service."),
        Column("External-IP", "string", "externalIPs is a list of IP addresses for the service."),
        Column("Port(s)", "string", "The list of ports that are exposed by this service."),
        AGE_COLUMN,
        Column(
            "Selector", "string", "Route service traffic to pods with these labels.", priority=1
        ),
    ),
    _service_cells,
)


# --- events -----------------------------------------------------------------------------------


def _event_cells(event: Object, now: datetime.datetime) -> list[Any]:
    first = parse_time(event.get("firstTimestamp")) or parse_time(event.get("eventTime"))
    last = parse_time(event.get("lastTimestamp")) or first
    count = int(event.get("count") or 0)
    series = event.get("series")
    if isinstance(series, dict):
        last = parse_time(series.get("lastObservedTime"))
        count = int(series.get("count") or 0)
    elif count == 0:
        count = 1
    involved = section(event, "involvedObject")
    target = str(involved.get("kind", "")).lower()
    if involved.get("name"):
        target = f"{target}/{involved['name']}"
    source = section(event, "source")
    component = source.get("component") or event.get("reportingComponent") or ""
    instance = source.get("host") or event.get("reportingInstance") or ""
    return [
        age(last, now),
        event.get("type", ""),
        event.get("reason", ""),
        target,
        involved.get("fieldPath", ""),
        f"{component}, {instance}" if instance else component,
        str(event.get("message", "")).strip(),
        age(first, now),
        count,
        meta(event).get("name", ""),
    ]


_EVENT = Printer(
    (
        Column("Last Seen", "string", "The time at which the most recent occurrence was recorded."),
        Column("Type", "string", "Type of this event (Normal, Warning)."),
        Column("Reason", "string", "A short, machine understandable string for the transition."),
        Column("Object", "string", "The object that this event is about."),
        Column("Subobject", "string", "The field of the object the event is about.", priority=1),
        Column("Source", "string", "The component reporting this event.", priority=1),
        Column(
            "Message", "string", "A human-readable description of the status of this operation."
        ),
        Column(
            "First Seen", "string", "The time at which the event was first recorded.", priority=1
        ),
        Column("Count", "string", "The number of times this event has occurred.", priority=1),
        Column("Name", "string", NAME_DESCRIPTION, format="name", priority=1),
    ),
    _event_cells,
)


# --- nodes, namespaces, configmaps, secrets, controllerrevisions, leases, priorityclasses -----


def _node_cells(node: Object, now: datetime.datetime) -> list[Any]:
    spec, status = section(node, "spec"), section(node, "status")
    ready = [c for c in status.get("conditions") or [] if c.get("type") == "Ready"]
    states = (
        ["Ready" if ready[-1].get("status") == "True" else "NotReady"] if ready else ["Unknown"]
    )
    if spec.get("unschedulable"):
        states.append("SchedulingDisabled")
    roles = set()
    for key, value in (meta(node).get("labels") or {}).items():
        if key.startswith("node-role.kubernetes.io/") and key.split("/", 1)[1]:
            roles.add(key.split("/", 1)[1])
        elif key == "kubernetes.io/role" and value:
            roles.add(value)
    info = section(status, "nodeInfo")
    addresses = status.get("addresses") or []

    def address(kind: str) -> str:
        return next((a["address"] for a in addresses if a.get("type") == kind), "<none>")

    return [
        meta(node).get("name", ""),
        ",".join(states),
        ",".join(sorted(roles)) or "<none>",
        created(node, now),
        info.get("kubeletVersion", ""),
        address("InternalIP"),
        address("ExternalIP"),
        info.get("osImage") or "<unknown>",
        info.get("kernelVersion") or "<unknown>",
        info.get("containerRuntimeVersion") or "<unknown>",
    ]


_NODE = Printer(
    (
        NAME_COLUMN,
        Column("Status", "string", "The status of the node"),
        Column("Roles", "string", "The roles of the node"),
        AGE_COLUMN,
        Column("Version", "string", "Kubelet Version reported by the node."),
        Column("Internal-IP", "string", "List of addresses reachable to the node.", priority=1),
        Column("External-IP", "string", "List of addresses reachable to the node.", priority=1),
        Column("OS-Image", "string", "OS Image reported by the node.", priority=1),
        Column("Kernel-Version", "string", "Kernel Version reported by the node.", priority=1),
        Column(
            "Container-Runtime",
            "string",
            "ContainerRuntime Version reported by the node.",
            priority=1,
        ),
    ),
    _node_cells,
)

_NAMESPACE = Printer(
    (NAME_COLUMN, Column("Status", "string", "The status of the namespace"), AGE_COLUMN),
    lambda ns, now: [
        meta(ns).get("name", ""),
        section(ns, "status").get("phase", ""),
        created(ns, now),
    ],
)

_CONFIGMAP = Printer(
    (NAME_COLUMN, Column("Data", "string", "Data contains the configuration data."), AGE_COLUMN),
    lambda cm, now: [
        meta(cm).get("name", ""),
        len(cm.get("data") or {}) + len(cm.get("binaryData") or {}),
        created(cm, now),
    ],
)

_SECRET = Printer(
    (
        NAME_COLUMN,
        Column("Type", "string", "Used to facilitate programmatic handling of secret data."),
        Column("Data", "string", "Data contains the secret data."),
        AGE_COLUMN,
    ),
    lambda secret, now: [
        meta(secret).get("name", ""),
        secret.get("type", ""),
        len(secret.get("data") or {}),
        created(secret, now),
    ],
)


def _controller(obj: Object) -> str:
    """The controlling owner as `kind.group/name` in lower case (formatResourceName)."""
    owner = next(
        (ref for ref in meta(obj).get("ownerReferences") or () if ref.get("controller")), None
    )
    if owner is None:
        return "<none>"
    api_version = str(owner.get("apiVersion") or "")
    group = api_version.split("/", maxsplit=1)[0] if "/" in api_version else ""
    kind = f"{owner.get('kind', '')}.{group}" if group else str(owner.get("kind", ""))
    name = str(owner.get("name", ""))
    return f"{kind.lower()}/{name}" if kind else name


_CONTROLLER_REVISION = Printer(
    (
        NAME_COLUMN,
        Column("Controller", "string", "Controller of the object"),
        Column("Revision", "string", REVISION_DESCRIPTION),
        AGE_COLUMN,
    ),
    lambda revision, now: [
        meta(revision).get("name", ""),
        _controller(revision),
        revision.get("revision", 0),
        created(revision, now),
    ],
)

_LEASE = Printer(
    (
        NAME_COLUMN,
        Column("Holder", "string", "holderIdentity contains the identity of the holder."),
        AGE_COLUMN,
    ),
    lambda lease, now: [
        meta(lease).get("name", ""),
        section(lease, "spec").get("holderIdentity") or "",
        created(lease, now),
    ],
)

# AGE comes before PREEMPTIONPOLICY, as upstream added the column at the end.
_PRIORITY_CLASS = Printer(
    (
        NAME_COLUMN,
        Column("Value", "integer", PRIORITY_VALUE_DESCRIPTION),
        Column("Global-Default", "boolean", GLOBAL_DEFAULT_DESCRIPTION),
        AGE_COLUMN,
        Column("PreemptionPolicy", "string", PREEMPTION_POLICY_DESCRIPTION),
    ),
    lambda pc, now: [
        meta(pc).get("name", ""),
        int(pc.get("value") or 0),
        bool(pc.get("globalDefault")),
        created(pc, now),
        pc.get("preemptionPolicy") or "",
    ],
)

# --- serviceaccounts, rolebindings, clusterrolebindings ---------------------------------------

_SERVICE_ACCOUNT = Printer(
    (
        NAME_COLUMN,
        Column("Secrets", "string", "Secrets is a list of the secrets in the same namespace "
               "that pods running using this ServiceAccount are allowed to use."),
        AGE_COLUMN,
    ),
    lambda account, now: [
        meta(account).get("name", ""),
        len(account.get("secrets") or ()),
        created(account, now),
    ],
)


def _binding_printer(role_ref: str) -> Printer:
    def cells(binding: Object, now: datetime.datetime) -> list[Any]:
        ref = section(binding, "roleRef")
        subjects = binding.get("subjects") or []

        def names(kind: str) -> str:
            return ", ".join(
                (f"{s.get('namespace', '')}/{s.get('name', '')}" if kind == "ServiceAccount"
                 else s.get("name", ""))
                for s in subjects if isinstance(s, dict) and s.get("kind") == kind
            )

        return [
            meta(binding).get("name", ""),
            f"{ref.get('kind', '')}/{ref.get('name', '')}",
            created(binding, now),
            names("User"),
            names("Group"),
            names("ServiceAccount"),
        ]

    return Printer(
        (
            NAME_COLUMN,
            Column("Role", "string", role_ref),
            AGE_COLUMN,
            Column("Users", "string", "Users in the roleBinding", priority=1),
            Column("Groups", "string", "Groups in the roleBinding", priority=1),
            Column("ServiceAccounts", "string", "ServiceAccounts in the roleBinding", priority=1),
        ),
        cells,
    )


_ROLE_BINDING = _binding_printer(
    "RoleRef can reference a Role in the current namespace or a ClusterRole in the global "
    "namespace. If the RoleRef cannot be resolved, the Authorizer must return an error. This "
    "field is immutable."
)
_CLUSTER_ROLE_BINDING = _binding_printer(
    "RoleRef can only reference a ClusterRole in the global namespace. If the RoleRef cannot "
    "be resolved, the Authorizer must return an error. This field is immutable."
)

_BUILTIN: dict[tuple[str, str], Printer] = {
    ("", "pods"): POD_PRINTER,
    ("", "services"): _SERVICE,
    ("", "events"): _EVENT,
    ("", "nodes"): _NODE,
    ("", "namespaces"): _NAMESPACE,
    ("", "configmaps"): _CONFIGMAP,
    ("", "secrets"): _SECRET,
    ("apps", "controllerrevisions"): _CONTROLLER_REVISION,
    ("coordination.k8s.io", "leases"): _LEASE,
    ("scheduling.k8s.io", "priorityclasses"): _PRIORITY_CLASS,
    ("batch", "jobs"): JOB_PRINTER,
    ("batch", "cronjobs"): CRONJOB_PRINTER,
    ("apps", "deployments"): DEPLOYMENT_PRINTER,
    ("apps", "replicasets"): REPLICA_SET_PRINTER,
    ("", "replicationcontrollers"): REPLICATION_CONTROLLER_PRINTER,
    ("", "serviceaccounts"): _SERVICE_ACCOUNT,
    ("rbac.authorization.k8s.io", "rolebindings"): _ROLE_BINDING,
    ("rbac.authorization.k8s.io", "clusterrolebindings"): _CLUSTER_ROLE_BINDING,
}


def builtin_printer(group: str, plural: str) -> Printer | None:
    """The upstream printer for a built-in kind, or None when upstream has none."""
    return _BUILTIN.get((group, plural))
