"""The PriorityClass kind (scheduling.k8s.io/v1): its values, defaults, validation, system classes.

A PriorityClass names an int32 pod priority. The two system classes exist from
the server's start, as kube-apiserver's post-start hook creates them, and only
they may use the `system-` prefix or a value above one billion; a named DELETE
of either is refused. The Priority admission plugin, which reads these objects
when pods are created, is in `priority_admission.py`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from engine.cluster.apiserver.admission.zero_values import with_pointers
from engine.cluster.apiserver.errors import ApiError, Cause, forbidden_resource
from engine.cluster.apiserver.storage.objects import Obj
from engine.cluster.apiserver.validation.field_errors import (
    forbidden,
    invalid,
    not_supported,
    required,
)

HIGHEST_USER_DEFINABLE_PRIORITY = 1_000_000_000
SYSTEM_CRITICAL_PRIORITY = 2 * HIGHEST_USER_DEFINABLE_PRIORITY
SYSTEM_PREFIX = "system-"
PREEMPT_LOWER_PRIORITY = "PreemptLowerPriority"
PREEMPT_NEVER = "Never"
# In the order upstream's validation lists them in its "supported values".
PREEMPTION_POLICIES = (PREEMPT_LOWER_PRIORITY, PREEMPT_NEVER)
# The priority of a pod when no class is named and none is the global default.
NO_DEFAULT_PRIORITY = 0

_GROUP, _PLURAL = "scheduling.k8s.io", "priorityclasses"


@dataclass(frozen=True)
class SystemClass:
    """A class the server creates at start and keeps from being deleted."""

    name: str
    value: int
    description: str

    def as_object(self) -> Obj:
        return {
            "apiVersion": f"{_GROUP}/v1",
            "kind": "PriorityClass",
            "metadata": {"name": self.name},
            "value": self.value,
            "description": self.description,
        }


SYSTEM_CLASSES: tuple[SystemClass, ...] = (
    SystemClass(
        "system-node-critical",
        SYSTEM_CRITICAL_PRIORITY + 1000,
        "Used for system critical pods that must not be moved from their current node.",
    ),
    SystemClass(
        "system-cluster-critical",
        SYSTEM_CRITICAL_PRIORITY,
        "Used for system critical pods that must run in the cluster, but can be moved to "
        "another node if necessary.",
    ),
)
_SYSTEM_BY_NAME = {system.name: system for system in SYSTEM_CLASSES}


def with_defaults(obj: Obj) -> Obj:
    """SetDefaults_PriorityClass: an unset (or null) preemptionPolicy preempts lower priorities.

    An explicit "" stays, and validation answers it with Required.
    """
    return with_pointers(obj, {"preemptionPolicy": PREEMPT_LOWER_PRIORITY})


def validate_priority_class(obj: Mapping[str, Any]) -> list[Cause]:
    """The value range, the reserved prefix and the preemption policy of one class."""
    name = str((obj.get("metadata") or {}).get("name") or "")
    value = obj.get("value") or 0
    causes: list[Cause] = []
    if name.startswith(SYSTEM_PREFIX):
        problem = _system_class_problem(name, value, bool(obj.get("globalDefault")))
        if problem:
            causes.append(
                forbidden(
                    "metadata.name",
                    f"priority class names with '{SYSTEM_PREFIX}' prefix are reserved for "
                    f"system use only. error: {problem}",
                )
            )
    elif value > HIGHEST_USER_DEFINABLE_PRIORITY:
        causes.append(
            forbidden(
                "value",
                "maximum allowed value of a user defined priority is "
                f"{HIGHEST_USER_DEFINABLE_PRIORITY}",
            )
        )
    policy = obj.get("preemptionPolicy")
    if policy is not None:
        causes += preemption_policy_causes("preemptionPolicy", policy)
    return causes


def preemption_policy_causes(path: str, policy: Any) -> list[Cause]:
    """ValidatePreemptionPolicy, shared with the pod's spec.preemptionPolicy."""
    if policy in PREEMPTION_POLICIES:
        return []
    if policy == "":
        return [required(path)]
    return [not_supported(path, policy, PREEMPTION_POLICIES)]


def priority_class_immutable(obj: Mapping[str, Any], old: Mapping[str, Any]) -> list[Cause]:
    """`value` and `preemptionPolicy` never change; description and globalDefault may."""
    causes: list[Cause] = []
    if (obj.get("value") or 0) != (old.get("value") or 0):
        causes.append(forbidden("value", "may not be changed in an update."))
    if obj.get("preemptionPolicy") != old.get("preemptionPolicy"):
        causes.append(
            invalid("preemptionPolicy", obj.get("preemptionPolicy"), "field is immutable")
        )
    return causes


def check_deletable(name: str) -> None:
    """403 for a named DELETE of a system class (upstream's REST.Delete guard)."""
    if name in _SYSTEM_BY_NAME:
        raise forbidden_resource(
            _GROUP, _PLURAL, name, "this is a system priority class and cannot be deleted"
        )


def forbidden_class(name: str, why: str) -> ApiError:
    return forbidden_resource(_GROUP, _PLURAL, name, why)


def _system_class_problem(name: str, value: Any, global_default: bool) -> str:
    """Why a `system-` class is not one of the known ones ("" when it is)."""
    system = _SYSTEM_BY_NAME.get(name)
    if system is None:
        return f"{name} is not a known system priority class"
    if value != system.value:
        return f"value of {name} PriorityClass must be {system.value}"
    if global_default:
        return f"globalDefault of {name} PriorityClass must be false"
    return ""
