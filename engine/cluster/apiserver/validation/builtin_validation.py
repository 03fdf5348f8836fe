"""Validation of the built-in kinds the embedded server stores, worded as kube-apiserver.

Covers what a client can get wrong and the real server rejects with a 422:
object metadata, the Pod, Service, Namespace, ConfigMap, Secret, Event, Lease,
PriorityClass, Node, ControllerRevision and CustomResourceDefinition fields
that matter, and the fields an update may not change. Jobs, CronJobs and the
replicated workloads have rules that read the stored object (`batch_jobs.py`,
`batch_cronjobs.py`, `apps_workloads.py`), and their `/status` writes are judged
by their status rules alone (`job_status.py`, `apps_workloads.py`).
Kinds not listed get the ObjectMeta checks only.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

import orjson

from engine.cluster.apiserver.admission.pod_defaults import pod_spec_defaults
from engine.cluster.apiserver.errors import Cause
from engine.cluster.apiserver.registry.priority_classes import priority_class_immutable
from engine.cluster.apiserver.validation.apps_workloads import STATUS_RULES as WORKLOAD_STATUS
from engine.cluster.apiserver.validation.apps_workloads import WRITE_RULES as WORKLOAD_WRITES
from engine.cluster.apiserver.validation.batch_cronjobs import validate_cronjob
from engine.cluster.apiserver.validation.batch_jobs import validate_job
from engine.cluster.apiserver.validation.builtin_kinds import KIND_VALIDATORS, NAME_RULES
from engine.cluster.apiserver.validation.config_kinds import configmap_immutable, secret_immutable
from engine.cluster.apiserver.validation.field_errors import forbidden, invalid, required, too_long
from engine.cluster.apiserver.validation.job_status import validate_job_status
from engine.cluster.apiserver.validation.names import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
    label_key_errors,
    label_value_errors,
)
from engine.cluster.apiserver.validation.rbac_validation import binding_immutable

_ANNOTATIONS_LIMIT = 256 * 1024
_POD_MUTABLE = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` (only "
    "additions to existing tolerations),`spec.terminationGracePeriodSeconds` (allow it to be "
    "set to 1 if it was previously negative)"
)


def validate_builtin(
    kind: str,
    obj: Mapping[str, Any],
    old: Mapping[str, Any] | None = None,
    *,
    subresource: str | None = None,
) -> list[Cause]:
    """Everything wrong with a built-in object (on update, plus what may not change)."""
    causes = validate_metadata(
        obj.get("metadata") or {}, NAME_RULES.get(kind, dns1123_subdomain_errors)
    )
    if subresource == "status" and old is not None and kind in _STATUS_RULES:
        return causes + _STATUS_RULES[kind](obj, old)
    write_rules = _WRITE_RULES.get(kind)
    if write_rules is not None:
        return causes + write_rules(obj, old)
    validator = KIND_VALIDATORS.get(kind)
    if validator is not None:
        causes += validator(obj)
    if old is not None:
        causes += validate_immutable(kind, obj, old)
    return causes


def validate_metadata(
    meta: Mapping[str, Any], name_rule: Callable[[str], list[str]]
) -> list[Cause]:
    """ObjectMeta: name or generateName, namespace, labels, annotations, finalizers."""
    causes: list[Cause] = []
    name, generate = meta.get("name"), meta.get("generateName")
    if not name and not generate:
        causes.append(required("metadata.name", "name or generateName is required"))
    if name:
        causes += [invalid("metadata.name", name, e) for e in name_rule(name)]
    if generate:
        masked = generate[:-1] + "a" if len(generate) > 1 and generate.endswith("-") else generate
        causes += [invalid("metadata.generateName", generate, e) for e in name_rule(masked)]
    if meta.get("namespace"):
        causes += [
            invalid("metadata.namespace", meta["namespace"], e)
            for e in dns1123_label_errors(meta["namespace"])
        ]
    for key, value in (meta.get("labels") or {}).items():
        causes += [invalid("metadata.labels", key, e) for e in label_key_errors(key)]
        if not isinstance(value, str):
            causes.append(invalid("metadata.labels", value, "must be a string"))
        else:
            causes += [invalid("metadata.labels", value, e) for e in label_value_errors(value)]
    annotations = meta.get("annotations") or {}
    for key in annotations:
        causes += [invalid("metadata.annotations", key, e) for e in label_key_errors(key.lower())]
    size = sum(len(k) + len(str(v)) for k, v in annotations.items())
    if size > _ANNOTATIONS_LIMIT:
        causes.append(too_long("metadata.annotations", _ANNOTATIONS_LIMIT))
    for index, finalizer in enumerate(meta.get("finalizers") or []):
        causes += [
            invalid(f"metadata.finalizers[{index}]", finalizer, e)
            for e in label_key_errors(finalizer)
        ]
    for index, ref in enumerate(meta.get("ownerReferences") or []):
        for field in ("apiVersion", "kind", "name", "uid"):
            if not ref.get(field):
                causes.append(required(f"metadata.ownerReferences[{index}].{field}", ""))
    return causes


def validate_immutable(kind: str, obj: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """Fields the real server forbids changing on update."""
    check = _IMMUTABLE.get(kind)
    return check(obj, old) if check is not None else []


def _pod_immutable(obj: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    # Both as defaulted today (kube-apiserver defaults what it reads from storage too), with
    # images masked first: they may change, and a pull policy defaulted from them with them.
    # A spec that encodes to the same JSON as the stored one (a status or metadata write)
    # defaults to the same spec too, so it changed nothing.
    if _same_json(obj.get("spec"), old.get("spec")):
        return []
    new_spec, old_spec = _masked_spec(obj), _masked_spec(old)
    new_spec.pop("activeDeadlineSeconds", None)
    old_spec.pop("activeDeadlineSeconds", None)
    old_tolerations = old_spec.pop("tolerations", None) or []
    new_tolerations = new_spec.pop("tolerations", None) or []
    dropped = [t for t in old_tolerations if t not in new_tolerations]
    if new_spec != old_spec or dropped:
        return [forbidden("spec", _POD_MUTABLE)]
    return []


def _same_json(new: Any, old: Any) -> bool:
    """Whether two values encode to the same JSON (False when one cannot be encoded)."""
    try:
        return orjson.dumps(new) == orjson.dumps(old)
    except TypeError:
        return False


def _masked_spec(pod: Mapping[str, Any]) -> dict[str, Any]:
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return {}
    masked = dict(spec)
    for key in ("containers", "initContainers"):
        masked[key] = [{**c, "image": None} for c in spec.get(key) or []]
    return pod_spec_defaults(masked)


def _service_immutable(obj: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    new_ip = (obj.get("spec") or {}).get("clusterIP")
    old_ip = (old.get("spec") or {}).get("clusterIP")
    if old_ip and new_ip and new_ip != old_ip:
        return [invalid("spec.clusterIP", new_ip, "field is immutable")]
    return []


def _controller_revision_immutable(obj: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """Only `data` is frozen: upstream lets `revision` change (controllers renumber history)."""
    if obj.get("data") != old.get("data"):
        return [invalid("data", obj.get("data"), "field is immutable")]
    return []


def _crd_immutable(obj: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    new_spec, old_spec = obj.get("spec") or {}, old.get("spec") or {}
    causes = []
    for field in ("group", "scope"):
        if new_spec.get(field) != old_spec.get(field):
            causes.append(invalid(f"spec.{field}", new_spec.get(field), "field is immutable"))
    new_plural = (new_spec.get("names") or {}).get("plural")
    if new_plural != (old_spec.get("names") or {}).get("plural"):
        causes.append(invalid("spec.names.plural", new_plural, "field is immutable"))
    return causes


_IMMUTABLE: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], list[Cause]]] = {
    "Pod": _pod_immutable,
    "Service": _service_immutable,
    "ConfigMap": configmap_immutable,
    "Secret": secret_immutable,
    "ControllerRevision": _controller_revision_immutable,
    "PriorityClass": priority_class_immutable,
    "CustomResourceDefinition": _crd_immutable,
    "RoleBinding": binding_immutable,
    "ClusterRoleBinding": binding_immutable,
}
# Kinds whose rules read the stored object on update (immutability and more, in upstream's
# order), and what a /status write of them is judged by instead of the whole object.
_WRITE_RULES: dict[
    str, Callable[[Mapping[str, Any], Mapping[str, Any] | None], list[Cause]]
] = {
    "Job": validate_job,
    "CronJob": validate_cronjob,
    **WORKLOAD_WRITES,
}
_STATUS_RULES: dict[str, Callable[[Mapping[str, Any], Mapping[str, Any]], list[Cause]]] = {
    "Job": validate_job_status,
    "CronJob": lambda obj, old: [],  # its status strategy validates nothing
    **WORKLOAD_STATUS,
}
