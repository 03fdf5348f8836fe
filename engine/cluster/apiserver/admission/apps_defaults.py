"""Defaulting of the replicated workloads: apps/v1 Deployments and ReplicaSets, v1
ReplicationControllers.

The defaults are pkg/apis/apps/v1's (`SetDefaults_Deployment`, `SetDefaults_ReplicaSet`) and
pkg/apis/core/v1's `SetDefaults_ReplicationController`, plus the pod template defaults every
embedded template gets. `replicas`, `revisionHistoryLimit`, `progressDeadlineSeconds` and the
rolling update's `maxSurge`/`maxUnavailable` are Go pointers, so an explicit `0` is a value
and stays (validation answers for it); the strategy's `type` is a value field, so `""` is
unset and becomes RollingUpdate. Go drops the zero `minReadySeconds` and `paused` when it
writes the object back (omitempty), and so does this. An unset status reads as Go encodes
the zero one: `{}` for a Deployment, `{"replicas": 0}` for the other two, whose status
replicas have no omitempty.
"""

from __future__ import annotations

from typing import Any

from engine.cluster.apiserver.admission.pod_defaults import template_spec_defaults
from engine.cluster.apiserver.admission.zero_values import in_field, with_pointers, with_values
from engine.cluster.apiserver.storage.objects import Obj

DEFAULT_SURGE = "25%"
DEFAULT_UNAVAILABLE = "25%"
DEFAULT_REVISION_HISTORY_LIMIT = 10
DEFAULT_PROGRESS_DEADLINE_SECONDS = 600
# What Go writes for the ObjectMeta of an embedded template: the zero Time is null.
_TEMPLATE_META = {"creationTimestamp": None}
# Value fields Go leaves out of the JSON when they hold their zero value.
_OMITTED_ZEROS = {"minReadySeconds": 0, "paused": False}


def deployment_defaults(obj: Obj) -> Obj:
    """A Deployment with SetDefaults_Deployment and its template's defaults."""
    def spec_defaults(spec: dict[str, Any]) -> dict[str, Any]:
        spec = with_pointers(spec, {
            "replicas": 1,
            "revisionHistoryLimit": DEFAULT_REVISION_HISTORY_LIMIT,
            "progressDeadlineSeconds": DEFAULT_PROGRESS_DEADLINE_SECONDS,
        })
        strategy = spec.get("strategy")
        strategy = _strategy({} if strategy is None else strategy)
        spec = {**spec, "strategy": strategy} if strategy is not spec.get("strategy") else spec
        return _template(spec, required=True)
    return _with_status(_in_spec(obj, spec_defaults), {})


def replica_set_defaults(obj: Obj) -> Obj:
    """A ReplicaSet with SetDefaults_ReplicaSet (one replica) and its template's defaults."""
    def spec_defaults(spec: dict[str, Any]) -> dict[str, Any]:
        return _template(with_pointers(spec, {"replicas": 1}), required=True)
    return _with_status(_in_spec(obj, spec_defaults), {"replicas": 0})


def replication_controller_defaults(obj: Obj) -> Obj:
    """A ReplicationController with SetDefaults_ReplicationController: one replica, and the
    template's labels as its selector and as its own labels where those are empty."""
    def spec_defaults(spec: dict[str, Any]) -> dict[str, Any]:
        return _template(with_pointers(spec, {"replicas": 1}), required=False)
    obj = _in_spec(obj, spec_defaults)
    spec = obj.get("spec")
    template = spec.get("template") if isinstance(spec, dict) else None
    labels = (template.get("metadata") or {}).get("labels") if isinstance(template, dict) else None
    if isinstance(spec, dict) and isinstance(labels, dict):
        if not spec.get("selector"):
            obj = {**obj, "spec": {**spec, "selector": dict(labels)}}
        metadata = obj.get("metadata")
        if isinstance(metadata, dict) and not metadata.get("labels"):
            obj = {**obj, "metadata": {**metadata, "labels": dict(labels)}}
    return _with_status(obj, {"replicas": 0})


def _in_spec(obj: Obj, change: Any) -> Obj:
    """The spec changed; an absent spec is Go's zero struct, which defaulting fills too."""
    spec = obj.get("spec")
    if spec is None:
        spec = {}
    if not isinstance(spec, dict):
        return obj
    changed = _without_zeros(change(spec))
    return obj if changed is obj.get("spec") else {**obj, "spec": changed}


def _strategy(strategy: Any) -> Any:
    """RollingUpdate unless a type is given; a rolling update surges and loses 25% each way
    unless told otherwise."""
    if not isinstance(strategy, dict):
        return strategy
    strategy = with_values(strategy, {"type": "RollingUpdate"})
    if strategy["type"] != "RollingUpdate":
        return strategy
    rolling = strategy.get("rollingUpdate")
    rolling = {} if rolling is None else rolling
    if not isinstance(rolling, dict):
        return strategy
    rolling = with_pointers(rolling, {
        "maxUnavailable": DEFAULT_UNAVAILABLE, "maxSurge": DEFAULT_SURGE,
    })
    return {**strategy, "rollingUpdate": rolling}


def _template(spec: dict[str, Any], *, required: bool) -> dict[str, Any]:
    """The pod template's meta as Go writes it and its spec defaulted; apps/v1 templates are
    structs (always there), a ReplicationController's a pointer (absent stays absent)."""
    template = spec.get("template")
    if template is None:
        if not required:
            return spec
        template = {}
    if not isinstance(template, dict):
        return spec
    metadata = template.get("metadata")
    if metadata is None:
        template = {**template, "metadata": dict(_TEMPLATE_META)}
    elif isinstance(metadata, dict) and "creationTimestamp" not in metadata:
        template = {**template, "metadata": {**_TEMPLATE_META, **metadata}}
    if template.get("spec") is None:
        template = {**template, "spec": {"containers": None}}
    template = in_field(template, "spec", template_spec_defaults)
    if template is spec.get("template"):
        return spec
    return {**spec, "template": template}


def _without_zeros(spec: dict[str, Any]) -> dict[str, Any]:
    dropped = [key for key, zero in _OMITTED_ZEROS.items()
               if key in spec and spec[key] == zero and type(spec[key]) is type(zero)]
    if not dropped:
        return spec
    return {key: value for key, value in spec.items() if key not in dropped}


def _with_status(obj: Obj, zero: dict[str, Any]) -> Obj:
    status = obj.get("status")
    if status is None:
        return {**obj, "status": dict(zero)}
    if isinstance(status, dict) and zero:
        return {**obj, "status": with_values(status, zero)}
    return obj
