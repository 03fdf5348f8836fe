"""Deployment, ReplicaSet and ReplicationController validation, in upstream's order and words.

The spec rules of pkg/apis/apps/validation (ValidateDeploymentSpec, ValidateReplicaSetSpec)
and of the core group's ValidateReplicationControllerSpec: non-negative counts, a selector
that is there, valid, not empty and matches the template's labels, a template whose pods
restart Always and have no deadline, and a Deployment's strategy (Recreate takes no rolling
update; maxSurge and maxUnavailable are counts or percents, not both 0, maxUnavailable at most
100%) and its progress deadline beyond minReadySeconds. On update, as the registries run
them: a ReplicaSet's and a ReplicationController's spec rules twice (create's and update's
validation both), a Deployment's once; the apps/v1 selector may not change. Status writes
are judged by the status rules alone.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from engine.cluster.apiserver.encoding.go_numbers import decimal
from engine.cluster.apiserver.errors import Cause
from engine.cluster.apiserver.validation.field_errors import (
    forbidden,
    invalid,
    invalid_shown,
    non_negative,
    not_supported,
    required,
)
from engine.cluster.apiserver.validation.go_values import go_label_selector, go_string_map
from engine.cluster.apiserver.validation.label_selectors import (
    label_selector_causes,
    parsed_selector,
    semantic,
)
from engine.cluster.apiserver.validation.pod_specs import pod_template_causes

Spec = Mapping[str, Any]
_STRATEGIES = ("Recreate", "RollingUpdate")
_PERCENT = re.compile(r"[0-9]+%")
_PERCENT_MESSAGE = (
    "a valid percent string must be a numeric string followed by an ending '%' (e.g. '1%',  "
    "or '93%', regex used for validation is '[0-9]+%')"
)
_NOT_MATCHING = "`selector` does not match template `labels`"
_IMMUTABLE = "field is immutable"
_REPLICA_COUNTS = ("replicas", "fullyLabeledReplicas", "readyReplicas", "availableReplicas")
_GREATER = "cannot be greater than status.replicas"


def validate_deployment(obj: Spec, old: Spec | None) -> list[Cause]:
    """ValidateDeployment, or on update ValidateDeploymentUpdate and the selector's
    immutability (the strategy's rule for apps/v1)."""
    causes = deployment_spec_causes(_spec(obj), "spec")
    return causes if old is None else causes + _selector_immutable(obj, old)


def validate_replica_set(obj: Spec, old: Spec | None) -> list[Cause]:
    """ValidateReplicaSet; on update again with ValidateReplicaSetUpdate, and the selector's
    immutability."""
    causes = _replica_set_spec_causes(_spec(obj), "spec")
    if old is None:
        return causes
    return causes + causes + _selector_immutable(obj, old)


def validate_replication_controller(obj: Spec, old: Spec | None) -> list[Cause]:
    """ValidateReplicationController; on update again with its update rules. Its selector
    may change (the legacy kind never froze it)."""
    causes = _replication_controller_spec_causes(_spec(obj), "spec")
    return causes if old is None else causes + causes


def validate_deployment_status(obj: Spec, old: Spec) -> list[Cause]:
    """ValidateDeploymentStatusUpdate."""
    status = _status(obj)
    causes: list[Cause] = []
    for name in ("observedGeneration", "replicas", "updatedReplicas", "readyReplicas",
                 "availableReplicas", "unavailableReplicas", "collisionCount"):
        causes += non_negative(f"status.{name}", _count_or_none(status, name))
    replicas = _count(status, "replicas")
    for name in ("updatedReplicas", "readyReplicas", "availableReplicas"):
        if _count(status, name) > replicas:
            causes.append(invalid(f"status.{name}", _count(status, name), _GREATER))
    if _count(status, "availableReplicas") > _count(status, "readyReplicas"):
        causes.append(invalid("status.availableReplicas", _count(status, "availableReplicas"),
                              "cannot be greater than readyReplicas"))
    return causes + _collision_count_causes(status, _status(old))


def validate_replica_status(obj: Spec, old: Spec) -> list[Cause]:
    """ValidateReplicaSetStatusUpdate, and the ReplicationController's, which reads alike."""
    status = _status(obj)
    causes: list[Cause] = []
    for name in (*_REPLICA_COUNTS, "observedGeneration"):
        causes += non_negative(f"status.{name}", _count_or_none(status, name))
    replicas = _count(status, "replicas")
    for name in _REPLICA_COUNTS[1:]:
        if _count(status, name) > replicas:
            causes.append(invalid(f"status.{name}", _count(status, name), _GREATER))
    if _count(status, "availableReplicas") > _count(status, "readyReplicas"):
        causes.append(invalid("status.availableReplicas", _count(status, "availableReplicas"),
                              "cannot be greater than readyReplicas"))
    return causes


def deployment_spec_causes(spec: Spec, path: str) -> list[Cause]:
    """ValidateDeploymentSpec."""
    causes = non_negative(f"{path}.replicas", _count_or_none(spec, "replicas"))
    causes += _selector_and_template_causes(spec, path, "ReplicaSet")
    causes += strategy_causes(spec.get("strategy"), f"{path}.strategy")
    min_ready = _count(spec, "minReadySeconds")
    causes += non_negative(f"{path}.minReadySeconds", min_ready)
    causes += non_negative(f"{path}.revisionHistoryLimit",
                           _count_or_none(spec, "revisionHistoryLimit"))
    deadline = _count_or_none(spec, "progressDeadlineSeconds")
    if deadline is not None:
        causes += non_negative(f"{path}.progressDeadlineSeconds", deadline)
        if deadline <= min_ready:
            causes.append(invalid(f"{path}.progressDeadlineSeconds", deadline,
                                  "must be greater than minReadySeconds"))
    return causes


def strategy_causes(strategy: Any, path: str) -> list[Cause]:
    """ValidateDeploymentStrategy."""
    strategy = strategy if isinstance(strategy, Mapping) else {}
    kind, rolling = strategy.get("type") or "", strategy.get("rollingUpdate")
    if kind == "Recreate":
        if rolling is not None:
            return [forbidden(f"{path}.rollingUpdate",
                              "may not be specified when strategy `type` is 'Recreate'")]
        return []
    if kind == "RollingUpdate":
        if not isinstance(rolling, Mapping):
            return [required(f"{path}.rollingUpdate", "this should be defaulted and never be nil")]
        return _rolling_update_causes(rolling, f"{path}.rollingUpdate")
    listed = ", ".join(f'"{s}"' for s in _STRATEGIES)
    pointer = "nil" if rolling is None else "..."
    shown = (f'apps.DeploymentStrategy{{Type:"{kind}", '
             f"RollingUpdate:(*apps.RollingUpdateDeployment)({pointer})}}")
    return [Cause(path, f"Unsupported value: {shown}: supported values: {listed}",
                  "FieldValueNotSupported")]


def _rolling_update_causes(rolling: Spec, path: str) -> list[Cause]:
    """ValidateRollingUpdateDeployment: counts or percents, not both 0, maxUnavailable at
    most 100%."""
    unavailable, surge = rolling.get("maxUnavailable"), rolling.get("maxSurge")
    causes = _int_or_percent_causes(unavailable, f"{path}.maxUnavailable")
    causes += _int_or_percent_causes(surge, f"{path}.maxSurge")
    if int_or_percent_value(unavailable) == 0 and int_or_percent_value(surge) == 0:
        causes.append(invalid_shown(f"{path}.maxUnavailable", go_int_or_string(unavailable),
                                    "may not be 0 when `maxSurge` is 0"))
    percent = _percent(unavailable)
    if percent is not None and percent > 100:
        causes.append(invalid_shown(f"{path}.maxUnavailable", go_int_or_string(unavailable),
                                    "must not be greater than 100%"))
    return causes


def _int_or_percent_causes(value: Any, path: str) -> list[Cause]:
    """ValidatePositiveIntOrPercent."""
    if isinstance(value, str):
        if _percent(value) is None:
            return [invalid_shown(path, go_int_or_string(value), _PERCENT_MESSAGE)]
        return []
    if isinstance(value, int) and not isinstance(value, bool):
        return non_negative(path, value)
    return []


def _percent(value: Any) -> int | None:
    if isinstance(value, str) and _PERCENT.fullmatch(value):
        return decimal(value[:-1])
    return None


def int_or_percent_value(value: Any) -> int:
    """getIntOrPercentValue: a percent's number, an integer, or a string's number (0 when it
    is not one), as IntValue reads it. Shared with the scaling arithmetic of rollouts."""
    percent = _percent(value)
    if percent is not None:
        return percent
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    if isinstance(value, str):
        try:
            return int(value)
        except ValueError:
            return 0
    return 0


def go_int_or_string(value: Any) -> str:
    """`%#v` of an intstr.IntOrString, as field errors print one."""
    if isinstance(value, str):
        return f'intstr.IntOrString{{Type:1, IntVal:0, StrVal:"{value}"}}'
    number = value if isinstance(value, int) else 0
    return f'intstr.IntOrString{{Type:0, IntVal:{number}, StrVal:""}}'


def _replica_set_spec_causes(spec: Spec, path: str) -> list[Cause]:
    """ValidateReplicaSetSpec."""
    causes = non_negative(f"{path}.replicas", _count_or_none(spec, "replicas"))
    causes += non_negative(f"{path}.minReadySeconds", _count(spec, "minReadySeconds"))
    return causes + _selector_and_template_causes(spec, path, "ReplicaSet")


def _selector_and_template_causes(spec: Spec, path: str, kind: str) -> list[Cause]:
    """The selector (required, valid, not empty: upstream says "for deployment" for both
    kinds) and ValidatePodTemplateSpecForReplicaSet."""
    selector = spec.get("selector")
    causes: list[Cause] = []
    if selector is None:
        causes.append(required(f"{path}.selector"))
    elif isinstance(selector, Mapping):
        causes += label_selector_causes(selector, f"{path}.selector")
        if not selector.get("matchLabels") and not selector.get("matchExpressions"):
            causes.append(invalid_shown(f"{path}.selector", go_label_selector(selector),
                                        "empty selector is invalid for deployment"))
    parsed = parsed_selector(selector) if isinstance(selector, Mapping) else None
    if isinstance(selector, Mapping) and parsed is None:
        causes.append(invalid_shown(f"{path}.selector", go_label_selector(selector),
                                    "invalid label selector"))
        return causes
    template = _section(spec, "template")
    labels = _template_labels(template)
    # A missing selector selects nothing, and so matches no labels; an empty one is skipped.
    if selector is None or (parsed is not None and not parsed.empty
                            and not parsed.matches(labels or {})):
        causes.append(invalid_shown(f"{path}.template.metadata.labels", go_string_map(labels),
                                    _NOT_MATCHING))
    return causes + _template_causes(template, f"{path}.template", kind)


def _replication_controller_spec_causes(spec: Spec, path: str) -> list[Cause]:
    """ValidateReplicationControllerSpec: its selector is a plain label map."""
    causes = non_negative(f"{path}.minReadySeconds", _count(spec, "minReadySeconds"))
    selector = spec.get("selector") if isinstance(spec.get("selector"), Mapping) else {}
    if not selector:
        causes.append(required(f"{path}.selector"))
    causes += non_negative(f"{path}.replicas", _count_or_none(spec, "replicas"))
    template = spec.get("template")
    if not isinstance(template, Mapping):
        return [*causes, required(f"{path}.template")]
    labels = _template_labels(template)
    if selector and any((labels or {}).get(key) != value for key, value in selector.items()):
        causes.append(invalid_shown(f"{path}.template.metadata.labels", go_string_map(labels),
                                    _NOT_MATCHING))
    return causes + _template_causes(template, f"{path}.template", "ReplicationController")


def _template_causes(template: Spec, path: str, kind: str) -> list[Cause]:
    """ValidatePodTemplateSpec, then what a kept-running pod may not have: a restart policy
    other than Always, a deadline."""
    causes = pod_template_causes(template, path)
    spec = _section(template, "spec")
    policy = spec.get("restartPolicy") or ""
    if policy != "Always":
        causes.append(not_supported(f"{path}.spec.restartPolicy", policy, ("Always",)))
    if spec.get("activeDeadlineSeconds") is not None:
        causes.append(forbidden(f"{path}.spec.activeDeadlineSeconds",
                                f"activeDeadlineSeconds in {kind} is not Supported"))
    return causes


def _selector_immutable(obj: Spec, old: Spec) -> list[Cause]:
    selector, before = _spec(obj).get("selector"), _spec(old).get("selector")
    if semantic(selector) == semantic(before):
        return []
    shown = go_label_selector(selector) if isinstance(selector, Mapping) else '"null"'
    return [invalid_shown("spec.selector", shown, _IMMUTABLE)]


def _collision_count_causes(status: Spec, old_status: Spec) -> list[Cause]:
    """A collision count only grows (IsDecremented: set before, and now unset or lower)."""
    before, now = old_status.get("collisionCount"), status.get("collisionCount")
    if before is None or (now is not None and now >= before):
        return []
    return [invalid("status.collisionCount", now or 0, "cannot be decremented")]


def _template_labels(template: Spec) -> Mapping[str, Any] | None:
    metadata = template.get("metadata")
    return metadata.get("labels") if isinstance(metadata, Mapping) else None


def _section(obj: Spec, name: str) -> Spec:
    value = obj.get(name)
    return value if isinstance(value, Mapping) else {}


def _spec(obj: Spec) -> Spec:
    return _section(obj, "spec")


def _status(obj: Spec) -> Spec:
    return _section(obj, "status")


def _count(section: Spec, name: str) -> int:
    value = section.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else 0


def _count_or_none(section: Spec, name: str) -> int | None:
    value = section.get(name)
    return value if isinstance(value, int) and not isinstance(value, bool) else None


WRITE_RULES: dict[str, Callable[[Spec, Spec | None], list[Cause]]] = {
    "Deployment": validate_deployment,
    "ReplicaSet": validate_replica_set,
    "ReplicationController": validate_replication_controller,
}
STATUS_RULES: dict[str, Callable[[Spec, Spec], list[Cause]]] = {
    "Deployment": validate_deployment_status,
    "ReplicaSet": validate_replica_status,
    "ReplicationController": validate_replica_status,
}
