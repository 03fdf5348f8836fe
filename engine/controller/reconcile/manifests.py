"""The pods, headless services and spec.child objects the engine creates, built from a job and
its definition.

Pure: the same inputs give the same object, so a create can be retried after a
crash and `AlreadyExists` means "the one we wanted is there".
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from engine.api.replicated import write_path
from engine.controller.reconcile.children import (
    RESTART_ATTEMPT_LABEL,
    TRACKING_FINALIZER,
    ReplicaId,
    child_labels,
    child_name,
    owner_reference,
    replica_selector,
)
from engine.controller.reconcile.jobspec import ReplicaTypeSpec
from engine.controller.reconcile.objects import content_hash
from engine.definition import ChildDecorations, CompiledDefinition, PodDecorations
from engine.definition.rendering import EnvValue
from engine.definition.schema import ServiceSpec


def main_container_name(definition: CompiledDefinition, template: Mapping[str, Any]) -> str | None:
    """The definition's main container, else the template's first container."""
    named = definition.definition.spec.pod.container
    if named:
        return named
    containers = (template.get("spec") or {}).get("containers") or []
    return str(containers[0].get("name")) if containers else None


def build_pod(
    job: Mapping[str, Any],
    definition: CompiledDefinition,
    replica_type: ReplicaTypeSpec,
    replica: ReplicaId,
    decorations: PodDecorations,
    *,
    attempt: int = 0,
) -> dict[str, Any]:
    """The replica's pod: the template, the machine's decorations, our labels and finalizer.

    `attempt` is the job's restart attempt, kept in a label so that pods of an older
    attempt are told apart after a restart of the whole job.
    """
    template: dict[str, Any] = orjson.loads(orjson.dumps(replica_type.template))
    metadata = template.get("metadata") or {}
    spec = template.get("spec") or {}
    main = main_container_name(definition, template)
    if definition.definition.spec.pod.env_containers == "All":
        for container in [*(spec.get("initContainers") or []), *(spec.get("containers") or [])]:
            container["env"] = _with_env(container.get("env") or [], decorations.env)
    for container in spec.get("containers") or []:
        if container.get("name") == main:
            container["env"] = _with_env(container.get("env") or [], decorations.env)
            if decorations.command and not (container.get("command") or container.get("args")):
                container["command"] = list(decorations.command)
            if decorations.volume_mounts:
                container["volumeMounts"] = _with_named(container.get("volumeMounts") or [],
                                                        decorations.volume_mounts)
    if decorations.volumes:
        spec["volumes"] = _with_named(spec.get("volumes") or [], decorations.volumes)
    if decorations.init_containers:
        spec["initContainers"] = _with_named(spec.get("initContainers") or [],
                                             decorations.init_containers)
    spec["restartPolicy"] = decorations.restart_policy
    for name, value in decorations.spec_fields.items():
        if spec.get(name) in (None, ""):
            spec[name] = value
    # Interchangeable pods are named by the API server, as upstream's ReplicaSet pods are.
    naming = ({"generateName": f"{job['metadata']['name']}-"}
              if definition.definition.spec.pod.naming == "Generated"
              else {"name": child_name(job["metadata"]["name"], replica)})
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            **naming,
            "namespace": job["metadata"]["namespace"],
            "labels": {
                **(metadata.get("labels") or {}),
                **decorations.labels,
                **child_labels(job, replica),
                RESTART_ATTEMPT_LABEL: str(attempt),
            },
            "annotations": {**(metadata.get("annotations") or {}), **decorations.annotations},
            "ownerReferences": [owner_reference(job)],
            "finalizers": [TRACKING_FINALIZER],
        },
        "spec": spec,
    }


FIELDS_HASH_ANNOTATION = "jobmachine.dev/fields-hash"
"""On a spec.child object: a hash of the fields the machine forces, as last written, so a
change is seen without reading the object's spec."""


def with_fields(body: dict[str, Any], fields: Mapping[str, Any]) -> dict[str, Any]:
    """`body` with a child's forced fields set at their dotted paths and their hash in its
    annotations: the child as made, or (from `{}`) the merge patch that brings it in step."""
    for path, value in fields.items():
        write_path(body, path, value)
    annotations = body.setdefault("metadata", {}).setdefault("annotations", {})
    annotations[FIELDS_HASH_ANNOTATION] = content_hash(fields)
    return body


def build_child(
    job: Mapping[str, Any],
    definition: CompiledDefinition,
    replica_type: ReplicaTypeSpec,
    replica: ReplicaId,
    decorations: ChildDecorations,
    *,
    attempt: int = 0,
) -> dict[str, Any]:
    """The replica's child object (spec.child): the replica spec's template (`{metadata,
    spec}`) as spec.child's kind, with the machine's name, labels and annotations, our
    replica labels and the restart attempt, owned by the job, with the machine's forced
    fields set (and their hash kept). No tracking finalizer: the parent reads the child's
    outcome from its status, which stays while the child does."""
    child = definition.child
    if child is None:
        raise ValueError(f"machine {definition.name} has no spec.child")
    template: dict[str, Any] = orjson.loads(orjson.dumps(replica_type.template))
    metadata = template.get("metadata") or {}
    made: dict[str, Any] = {
        "apiVersion": child.api_version,
        "kind": child.kind,
        "metadata": {
            "name": decorations.name or child_name(job["metadata"]["name"], replica),
            "namespace": job["metadata"]["namespace"],
            "labels": {
                **(metadata.get("labels") or {}),
                **decorations.labels,
                **child_labels(job, replica),
                RESTART_ATTEMPT_LABEL: str(attempt),
            },
            "annotations": {**(metadata.get("annotations") or {}), **decorations.annotations},
            "ownerReferences": [owner_reference(job)],
        },
        "spec": template.get("spec") or {},
    }
    return with_fields(made, decorations.fields) if child.fields else made


def _with_env(env: list[dict[str, Any]], added: Mapping[str, EnvValue]) -> list[dict[str, Any]]:
    """The container's env with the machine's values; the machine's win over same-named ones.
    A value that is a source (`{valueFrom: ...}`) is written as one."""
    kept = [entry for entry in env if entry.get("name") not in added]
    return kept + [
        {"name": name, **value} if isinstance(value, Mapping) else {"name": name, "value": value}
        for name, value in added.items()
    ]


def _with_named(
    items: list[dict[str, Any]], added: Sequence[Mapping[str, Any]]
) -> list[dict[str, Any]]:
    """The template's volumes (mounts, init containers) with the machine's; the machine's win
    by name."""
    names = {item.get("name") for item in added}
    return [item for item in items if item.get("name") not in names] + [dict(a) for a in added]


def hosts(job: Mapping[str, Any], types: Sequence[ReplicaTypeSpec]) -> dict[str, list[str]]:
    """Replica type -> the host name of each replica (its pod's name, and its service's)."""
    name = job["metadata"]["name"]
    return {t.name: [child_name(name, ReplicaId(t.name, i)) for i in range(t.replicas)]
            for t in types}


def service_spec_for(definition: CompiledDefinition, replica_type: str) -> ServiceSpec | None:
    """The definition's service entry for this replica type, if the type gets services."""
    for service in definition.services:
        if "*" in service.replica_types or replica_type in service.replica_types:
            return service
    return None


def build_service(
    job: Mapping[str, Any],
    definition: CompiledDefinition,
    replica_type: ReplicaTypeSpec,
    replica: ReplicaId,
    *,
    labels: Mapping[str, str] | None = None,
) -> dict[str, Any] | None:
    """The replica's headless service, or None when the definition gives its type none.

    It carries the machine's pod `labels` beside ours (Kubeflow's services carry its labels).
    """
    service = service_spec_for(definition, replica.type)
    if service is None:
        return None
    named_ports = _container_ports(definition, replica_type.template)
    ports = [
        {
            "name": port.name,
            "port": named_ports.get(port.name, port.port),
            "targetPort": named_ports.get(port.name, port.port),
            "protocol": port.protocol,
        }
        for port in service.ports
    ]
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {
            "name": child_name(job["metadata"]["name"], replica),
            "namespace": job["metadata"]["namespace"],
            "labels": {**(labels or {}), **child_labels(job, replica)},
            "ownerReferences": [owner_reference(job)],
        },
        "spec": {
            "clusterIP": "None",
            "selector": replica_selector(job["metadata"]["name"], replica),
            "ports": ports,
        },
    }


def _container_ports(definition: CompiledDefinition, template: Mapping[str, Any]) -> dict[str, int]:
    main = main_container_name(definition, template)
    for container in (template.get("spec") or {}).get("containers") or []:
        if container.get("name") == main:
            return {
                str(p["name"]): int(p["containerPort"])
                for p in container.get("ports") or []
                if p.get("name") and p.get("containerPort")
            }
    return {}


def cluster_spec(
    job: Mapping[str, Any], definition: CompiledDefinition, types: tuple[ReplicaTypeSpec, ...]
) -> dict[str, list[str]]:
    """Lower-case type -> `host:port` of each replica's service (TF_CONFIG's `cluster`)."""
    namespace = job["metadata"]["namespace"]
    found: dict[str, list[str]] = {}
    for replica_type in types:
        service = build_service(job, definition, replica_type, ReplicaId(replica_type.name, 0))
        if service is None or not service["spec"]["ports"]:
            continue
        port = service["spec"]["ports"][0]["port"]
        found[replica_type.name.lower()] = [
            f"{child_name(job['metadata']['name'], ReplicaId(replica_type.name, i))}"
            f".{namespace}.svc:{port}"
            for i in range(replica_type.replicas)
        ]
    return found
