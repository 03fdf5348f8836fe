"""The Priority admission plugin: a pod's priority comes from its PriorityClass, never the client.

On pod create the plugin looks up `spec.priorityClassName` (403 when no such
class exists), or else takes the global default class (its name is written
into the pod) or priority 0, and sets `spec.priority` and
`spec.preemptionPolicy`; a client value that differs is a 403. On update it
carries the stored values over when the body leaves them out. For
PriorityClasses it refuses a second `globalDefault`. The store runs the pod
part where kube-apiserver runs mutating admission (after defaulting, before
validation) and the class part where validating admission runs (after it).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from engine.cluster.apiserver.errors import ApiError, forbidden_resource
from engine.cluster.apiserver.registry.builtins import PRIORITY_CLASSES
from engine.cluster.apiserver.registry.priority_classes import (
    NO_DEFAULT_PRIORITY,
    PREEMPT_LOWER_PRIORITY,
    forbidden_class,
)
from engine.cluster.apiserver.storage.objects import Obj, ObjectTable

# The stored PriorityClasses by name.
Classes = Mapping[str, Obj]
_CARRIED_OVER = ("priority", "preemptionPolicy")


class StoredClasses(Mapping[str, Obj]):
    """The PriorityClasses of an object table, read where they are (the informer's role)."""

    def __init__(self, table: ObjectTable) -> None:
        self._table = table

    def __getitem__(self, name: str) -> Obj:
        entry = self._table.get(PRIORITY_CLASSES.key, "", name)
        if entry is None:
            raise KeyError(name)
        return entry.obj

    def __iter__(self) -> Iterator[str]:
        return iter([name for _, name in self._table.bucket(PRIORITY_CLASSES.key).entries])

    def __len__(self) -> int:
        return len(self._table.bucket(PRIORITY_CLASSES.key).entries)


def admit_pod(pod: Obj, old: Obj | None, classes: Classes, *, name: str) -> Obj:
    """`pod` with the priority admission's fields set (create) or kept (update).

    `name` is how refusals name the pod: its name, else its generateName, since
    upstream admits before a name is generated.
    """
    spec = pod.get("spec")
    if not isinstance(spec, dict):
        return pod
    if old is not None:
        return _carry_over(pod, spec, old.get("spec") or {})
    class_name = str(spec.get("priorityClassName") or "")
    if class_name:
        chosen = classes.get(class_name)
        if chosen is None:
            raise _refused(name, f"no PriorityClass with name {class_name} was found")
        priority, policy = _value(chosen), chosen.get("preemptionPolicy")
    else:
        default = default_class(classes)
        if default is None:
            priority, policy = NO_DEFAULT_PRIORITY, PREEMPT_LOWER_PRIORITY
        else:
            class_name = default["metadata"]["name"]
            priority, policy = _value(default), default.get("preemptionPolicy")
    given = spec.get("priority")
    if given is not None and given != priority:
        raise _refused(
            name,
            f"the integer value of priority ({given}) must not be provided in pod spec; "
            f"priority admission controller computed {priority} from the given PriorityClass "
            "name",
        )
    new_spec = {**spec, "priority": priority}
    if class_name:
        new_spec["priorityClassName"] = class_name
    else:
        new_spec.pop("priorityClassName", None)  # "" is Go's omitted zero value
    if policy is not None:
        given_policy = spec.get("preemptionPolicy")
        if given_policy is not None and given_policy != policy:
            raise _refused(
                name,
                f"the string value of PreemptionPolicy ({given_policy}) must not be provided "
                f"in pod spec; priority admission controller computed {policy} from the given "
                "PriorityClass name",
            )
        new_spec["preemptionPolicy"] = policy
    return {**pod, "spec": new_spec}


def check_priority_class(obj: Obj, old: Obj | None, classes: Classes) -> None:
    """403 when `obj` would be a second global default (creating one, or marking another)."""
    if not obj.get("globalDefault"):
        return
    default = default_class(classes)
    if default is None:
        return
    name = obj["metadata"].get("name", "")
    default_name = default["metadata"]["name"]
    if old is None or default_name != name:
        raise forbidden_class(
            name,
            f"PriorityClass {default_name} is already marked as default. Only one default can "
            "exist",
        )


def default_class(classes: Classes) -> Obj | None:
    """The global default class; the lowest value wins should several claim it."""
    defaults = [pc for pc in classes.values() if pc.get("globalDefault")]
    if not defaults:
        return None
    return min(defaults, key=lambda pc: (_value(pc), pc["metadata"]["name"]))


def _carry_over(pod: Obj, spec: dict[str, Any], old_spec: Mapping[str, Any]) -> Obj:
    """An update that leaves the admission's fields out keeps the stored ones (validation
    then refuses any other change of them)."""
    missing = [f for f in _CARRIED_OVER if spec.get(f) is None and old_spec.get(f) is not None]
    if not missing:
        return pod
    return {**pod, "spec": {**spec, **{f: old_spec[f] for f in missing}}}


def _value(priority_class: Obj) -> int:
    return int(priority_class.get("value") or 0)


def _refused(name: str, why: str) -> ApiError:
    return forbidden_resource("", "pods", name, why)
