"""The scalar types a Job or CronJob body must have, refused as Go's JSON decoder refuses them.

kube-apiserver decodes a Job into typed structs, so `completions: "3"` or
`suspend: "yes"` never reaches validation: it is a 400 naming the innermost
struct, the field's path from the root and its Go type ("json: cannot unmarshal
string into Go struct field JobSpec.spec.completions of type int32"). The
shapes (object, list, scalar) are checked for every built-in kind from its
apply schema (`typed_decoding.py`); these tables add the scalar types of the
batch specs and the Job status, so the validation after them meets only numbers
where numbers belong.
"""

from __future__ import annotations

from typing import Any

from engine.cluster.apiserver.admission.go_json import go_json_kind
from engine.cluster.apiserver.errors import ApiError, cannot_decode
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.storage.objects import Obj

_RANGES = {"int32": range(-(1 << 31), 1 << 31), "int64": range(-(1 << 63), 1 << 63)}
Fields = tuple[tuple[str, str], ...]

_JOB_SPEC: Fields = (
    ("parallelism", "int32"),
    ("completions", "int32"),
    ("activeDeadlineSeconds", "int64"),
    ("backoffLimit", "int32"),
    ("backoffLimitPerIndex", "int32"),
    ("maxFailedIndexes", "int32"),
    ("manualSelector", "bool"),
    ("ttlSecondsAfterFinished", "int32"),
    ("completionMode", "v1.CompletionMode"),
    ("suspend", "bool"),
    ("podReplacementPolicy", "v1.PodReplacementPolicy"),
    ("managedBy", "string"),
)
# Nested scalars of a JobSpec: (path below the spec, innermost Go struct, Go type). A path
# step through a list or a map names the list or map only, as Go's error does.
_JOB_SPEC_NESTED: tuple[tuple[tuple[str, ...], str, str], ...] = (
    (("selector", "matchLabels", "*"), "LabelSelector", "string"),
    (("selector", "matchExpressions", "[]", "key"), "LabelSelectorRequirement", "string"),
    (("selector", "matchExpressions", "[]", "operator"), "LabelSelectorRequirement",
     "v1.LabelSelectorOperator"),
    (("selector", "matchExpressions", "[]", "values", "[]"), "LabelSelectorRequirement",
     "string"),
    (("template", "metadata", "labels", "*"), "ObjectMeta", "string"),
    (("template", "metadata", "annotations", "*"), "ObjectMeta", "string"),
    (("podFailurePolicy", "rules", "[]", "action"), "PodFailurePolicyRule",
     "v1.PodFailurePolicyAction"),
    (("podFailurePolicy", "rules", "[]", "onExitCodes", "containerName"),
     "PodFailurePolicyOnExitCodesRequirement", "string"),
    (("podFailurePolicy", "rules", "[]", "onExitCodes", "operator"),
     "PodFailurePolicyOnExitCodesRequirement", "v1.PodFailurePolicyOnExitCodesOperator"),
    (("podFailurePolicy", "rules", "[]", "onExitCodes", "values", "[]"),
     "PodFailurePolicyOnExitCodesRequirement", "int32"),
    (("podFailurePolicy", "rules", "[]", "onPodConditions", "[]", "type"),
     "PodFailurePolicyOnPodConditionsPattern", "v1.PodConditionType"),
    (("podFailurePolicy", "rules", "[]", "onPodConditions", "[]", "status"),
     "PodFailurePolicyOnPodConditionsPattern", "v1.ConditionStatus"),
    (("successPolicy", "rules", "[]", "succeededIndexes"), "SuccessPolicyRule", "string"),
    (("successPolicy", "rules", "[]", "succeededCount"), "SuccessPolicyRule", "int32"),
)
_JOB_STATUS: Fields = (
    ("active", "int32"),
    ("succeeded", "int32"),
    ("failed", "int32"),
    ("terminating", "int32"),
    ("ready", "int32"),
    ("completedIndexes", "string"),
    ("failedIndexes", "string"),
)
_CRONJOB_SPEC: Fields = (
    ("schedule", "string"),
    ("timeZone", "string"),
    ("startingDeadlineSeconds", "int64"),
    ("concurrencyPolicy", "v1.ConcurrencyPolicy"),
    ("suspend", "bool"),
    ("successfulJobsHistoryLimit", "int32"),
    ("failedJobsHistoryLimit", "int32"),
)


def decode_job(rt: ResourceType, obj: Obj) -> Obj:
    """`obj` unchanged when its spec and status scalars have their Go types; else the 400."""
    _check_job_spec(rt, obj.get("spec"), "spec")
    _check(rt, obj.get("status"), "JobStatus", "status", _JOB_STATUS)
    return obj


def decode_cronjob(rt: ResourceType, obj: Obj) -> Obj:
    """`obj` unchanged when its spec and its job template's spec have their Go types."""
    spec = obj.get("spec")
    _check(rt, spec, "CronJobSpec", "spec", _CRONJOB_SPEC)
    template = spec.get("jobTemplate") if isinstance(spec, dict) else None
    if isinstance(template, dict):
        _check_job_spec(rt, template.get("spec"), "spec.jobTemplate.spec")
    return obj


def _check_job_spec(rt: ResourceType, spec: Any, path: str) -> None:
    _check(rt, spec, "JobSpec", path, _JOB_SPEC)
    if not isinstance(spec, dict):
        return
    for steps, struct, go_type in _JOB_SPEC_NESTED:
        named = ".".join(step for step in steps if step not in ("*", "[]"))
        for value in _values_at(spec, steps):
            if value is not None and not _fits(value, go_type):
                raise _refused(rt, value, f"{struct}.{path}.{named}", go_type)


def _values_at(node: Any, steps: tuple[str, ...]) -> list[Any]:
    """The values at `steps` below `node`: "*" is every value of a map, "[]" every item of a
    list; a step that finds nothing of its shape yields nothing."""
    if not steps:
        return [node]
    step, rest = steps[0], steps[1:]
    if step == "*":
        items = list(node.values()) if isinstance(node, dict) else []
    elif step == "[]":
        items = list(node) if isinstance(node, list) else []
    else:
        items = [node[step]] if isinstance(node, dict) and step in node else []
    return [value for item in items for value in _values_at(item, rest)]


def _check(rt: ResourceType, section: Any, struct: str, path: str, fields: Fields) -> None:
    if not isinstance(section, dict):
        return
    for name, go_type in fields:
        value = section.get(name)
        if value is not None and not _fits(value, go_type):
            raise _refused(rt, value, f"{struct}.{path}.{name}", go_type)


def _fits(value: Any, go_type: str) -> bool:
    if go_type == "bool":
        return isinstance(value, bool)
    if go_type in _RANGES:
        return type(value) is int and value in _RANGES[go_type]
    return isinstance(value, str)


def _refused(rt: ResourceType, value: Any, field: str, go_type: str) -> ApiError:
    if isinstance(value, int | float) and not isinstance(value, bool) and go_type in _RANGES:
        shown = f"number {value}"
    else:
        shown = go_json_kind(value)
    detail = f"json: cannot unmarshal {shown} into Go struct field {field} of type {go_type}"
    return cannot_decode(rt.kind, rt.version, detail)

