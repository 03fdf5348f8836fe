"""The pods/binding subresource: what a scheduler's POST of a Binding does to the pod.

Checked and applied in kube-apiserver's order (1.32's createHandler, then BindingREST.Create
and setPodNodeAndMetadata): the body's namespace and name must be the URL's; the target must
name a Node; the binding's uid and resourceVersion, when given, are preconditions on the pod;
a pod being deleted, already assigned or still held by scheduling gates is not bound. The
bound pod gets the node's name, the binding's annotations merged into its own, and a True
`PodScheduled` condition that takes the place of one already there (keeping its transition
time when it was True already), as podutil.UpdatePodCondition writes it.

Deliberate difference: a target without a name (or of another kind) is a 422 Invalid with its
causes, where kube-apiserver turns ValidatePodBinding's aggregate error into a 500.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from engine.cluster.apiserver.admission.go_json import go_json_kind
from engine.cluster.apiserver.errors import (
    ApiError,
    Cause,
    bad_request,
    cannot_decode,
    conflict,
    invalid,
)
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.registry.storage_keys import precondition_failed
from engine.cluster.apiserver.registry.writes import body_metadata, check_identity
from engine.cluster.apiserver.storage.objects import Obj
from engine.cluster.apiserver.validation.field_errors import not_supported

NAME_MISMATCH = "name in URL does not match name in Binding object"


@dataclass(frozen=True)
class Binding:
    """What a Binding asks: the node, annotations for the pod, and its preconditions."""

    node: str
    annotations: dict[str, str]
    uid: str | None
    resource_version: str | None


def checked_binding(rt: ResourceType, namespace: str, name: str, body: Obj) -> Binding:
    """The binding's node name, annotations, uid and resourceVersion, or the 400 or 422
    kube-apiserver answers before it reads the pod."""
    check_identity(rt, body, namespace, None)
    metadata = body_metadata(body)
    if metadata.get("name") != name:
        raise bad_request(NAME_MISMATCH)
    annotations = _annotations(metadata.get("annotations"))
    target = body.get("target")
    if target is not None and not isinstance(target, dict):
        raise cannot_decode("Binding", "v1", f"json: cannot unmarshal {go_json_kind(target)} "
                            "into Go struct field Binding.target of type v1.ObjectReference")
    target = target or {}
    causes = []
    if target.get("kind") not in (None, "", "Node"):
        causes.append(not_supported("target.kind", target["kind"], ("Node", "<empty>")))
    if not target.get("name"):
        causes.append(Cause("target.name", "Required value", "FieldValueRequired"))
    if causes:
        raise invalid("", "Binding", name, causes)
    return Binding(node=target["name"], annotations=annotations, uid=metadata.get("uid"),
                   resource_version=metadata.get("resourceVersion"))


def _annotations(value: object) -> dict[str, str]:
    """The binding's annotations, decoded as Go decodes ObjectMeta's map[string]string."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise _undecodable(value, "map[string]string")
    for item in value.values():
        if not isinstance(item, str):
            raise _undecodable(item, "string")
    return value


def _undecodable(value: Any, go_type: str) -> ApiError:
    """The 400 of an annotation value json cannot decode into its Go type."""
    return cannot_decode("Binding", "v1", f"json: cannot unmarshal {go_json_kind(value)} into "
                         f"Go struct field ObjectMeta.metadata.annotations of type {go_type}")


def bound_pod(rt: ResourceType, pod: Obj, binding: Binding, *, now: str) -> Obj:
    """The pod as the binding leaves it, or the 409 kube-apiserver answers; `pod` is not
    changed."""
    metadata = pod["metadata"]
    name, namespace = metadata["name"], metadata.get("namespace", "")
    if binding.uid and binding.uid != metadata.get("uid"):
        raise precondition_failed(rt, namespace, name, "UID", wanted=binding.uid,
                                  actual=metadata.get("uid"))
    wanted_rv = binding.resource_version
    if wanted_rv and wanted_rv != metadata.get("resourceVersion"):
        raise precondition_failed(rt, namespace, name, "ResourceVersion", wanted=wanted_rv,
                                  actual=metadata.get("resourceVersion"))
    spec = pod.get("spec") or {}
    if metadata.get("deletionTimestamp"):
        why = f"pod {name} is being deleted, cannot be assigned to a host"
        raise conflict("", "pods/binding", name, why)
    if spec.get("nodeName"):
        why = f'pod {name} is already assigned to node "{spec["nodeName"]}"'
        raise conflict("", "pods/binding", name, why)
    if spec.get("schedulingGates"):
        raise conflict("", "pods/binding", name, f"pod {name} has non-empty .spec.schedulingGates")
    new_metadata = dict(metadata)
    if binding.annotations:
        new_metadata["annotations"] = {**(metadata.get("annotations") or {}),
                                       **binding.annotations}
    status = dict(pod.get("status") or {})
    status["conditions"] = _scheduled(status.get("conditions") or [], now)
    return {**pod, "metadata": new_metadata, "spec": {**spec, "nodeName": binding.node},
            "status": status}


def _scheduled(conditions: list[Obj], now: str) -> list[Obj]:
    """The conditions with PodScheduled True in the place of the old one, or added last."""
    for index, old in enumerate(conditions):
        if old.get("type") == "PodScheduled":
            since = old.get("lastTransitionTime") if old.get("status") == "True" else now
            new = {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
                   "lastTransitionTime": since}
            return [*conditions[:index], new, *conditions[index + 1:]]
    new = {"type": "PodScheduled", "status": "True", "lastProbeTime": None,
           "lastTransitionTime": now}
    return [*conditions, new]
