"""Defaulting of batch/v1 Jobs and CronJobs, and the selector a Job's registry generates.

The defaults are pkg/apis/batch/v1's (`SetDefaults_Job`, `SetDefaults_CronJob`,
`SetDefaults_PodFailurePolicyOnPodConditionsPattern`) plus the pod template
defaults of every embedded template. Nearly all JobSpec fields are Go pointers,
so an explicit `0`, `false` or `""` is a value and stays (validation answers
for it); only CronJob's `concurrencyPolicy` and a condition pattern's `status`
are value fields, whose zero is unset.

On create, unless `manualSelector` is true, the Job registry (PrepareForCreate)
adds the job-name and controller-uid labels, legacy and prefixed, to the pod
template and selects the controller uid. That needs the uid the server has just
assigned, which is why it happens here, on the object the store defaults.
Upstream copies the template's label map into a Job that has no labels while
defaulting, before the generated labels are added to that same map, and defaults
again on every read: a Job created without labels shows the template's labels,
generated ones included. Copying after generation gives exactly that. An unset
status reads `{}`, as Go encodes the zero JobStatus or CronJobStatus.
"""

from __future__ import annotations

from typing import Any

from engine.cluster.apiserver.admission.pod_defaults import template_spec_defaults
from engine.cluster.apiserver.admission.zero_values import (
    in_field,
    in_items,
    with_pointers,
    with_values,
)
from engine.cluster.apiserver.storage.objects import Obj

JOB_NAME_LABEL = "batch.kubernetes.io/job-name"
LEGACY_JOB_NAME_LABEL = "job-name"
CONTROLLER_UID_LABEL = "batch.kubernetes.io/controller-uid"
LEGACY_CONTROLLER_UID_LABEL = "controller-uid"
_MAX_INT32 = 2**31 - 1
# What Go writes for the ObjectMeta of an embedded template: the zero Time is null.
_TEMPLATE_META = {"creationTimestamp": None}


def job_defaults(obj: Obj, *, creating: bool) -> Obj:
    """A Job with SetDefaults_Job and its nested defaults, on create its generated selector,
    and its labels taken from the template when it has none."""
    spec = obj.get("spec")
    if not isinstance(spec, dict):
        return obj
    obj = _with_status({**obj, "spec": _job_spec(spec)})
    if creating and obj["spec"].get("manualSelector") is not True:
        obj = _with_generated_selector(obj)
    return _labels_from_template(obj)


def cronjob_defaults(obj: Obj) -> Obj:
    """A CronJob with SetDefaults_CronJob; its job template gets the nested defaults only
    (SetDefaults_Job takes a Job, not a JobSpec)."""
    def spec_defaults(spec: dict[str, Any]) -> dict[str, Any]:
        spec = with_values(spec, {"concurrencyPolicy": "Allow"})
        spec = with_pointers(
            spec, {"suspend": False, "successfulJobsHistoryLimit": 3, "failedJobsHistoryLimit": 1}
        )
        return in_field(spec, "jobTemplate", _job_template)
    return _with_status(in_field(obj, "spec", spec_defaults))


def _with_status(obj: Obj) -> Obj:
    """The status as Go writes an unset one: its zero struct, `{}` (omitempty keeps structs)."""
    return obj if obj.get("status") is not None else {**obj, "status": {}}


def _job_template(template: dict[str, Any]) -> dict[str, Any]:
    return in_field(_with_template_meta(template), "spec", _nested)


def _job_spec(spec: dict[str, Any]) -> dict[str, Any]:
    """SetDefaults_Job's part that reads the spec, then the nested defaults."""
    if spec.get("completions") is None and spec.get("parallelism") is None:
        spec = {**spec, "completions": 1, "parallelism": 1}
    per_index = spec.get("backoffLimitPerIndex") is not None
    replacement = "Failed" if spec.get("podFailurePolicy") is not None else "TerminatingOrFailed"
    spec = with_pointers(spec, {
        "parallelism": 1,
        "backoffLimit": _MAX_INT32 if per_index else 6,
        "completionMode": "NonIndexed",
        "suspend": False,
        "podReplacementPolicy": replacement,
        "manualSelector": False,
    })
    return _nested(spec)


def _nested(spec: dict[str, Any]) -> dict[str, Any]:
    """What the generated defaulter calls inside a JobSpec: the pod template's defaults and
    each pod-condition pattern's status (True)."""
    spec = in_field(spec, "template", _pod_template)
    return in_field(spec, "podFailurePolicy", lambda policy: in_items(policy, "rules", _rule))


def _rule(rule: dict[str, Any]) -> dict[str, Any]:
    def pattern(condition: dict[str, Any]) -> dict[str, Any]:
        return with_values(condition, {"status": "True"})
    return in_items(rule, "onPodConditions", pattern)


def _pod_template(template: dict[str, Any]) -> dict[str, Any]:
    return in_field(_with_template_meta(template), "spec", template_spec_defaults)


def _with_template_meta(template: dict[str, Any]) -> dict[str, Any]:
    metadata = template.get("metadata")
    if metadata is None:
        return {**template, "metadata": dict(_TEMPLATE_META)}
    if isinstance(metadata, dict) and "creationTimestamp" not in metadata:
        return {**template, "metadata": {**_TEMPLATE_META, **metadata}}
    return template


def _with_generated_selector(obj: Obj) -> Obj:
    """generateSelector: the four labels (a label the user set is kept, and validation then
    judges it) and the controller uid in the selector's matchLabels."""
    metadata = obj.get("metadata") or {}
    name, uid = str(metadata.get("name") or ""), str(metadata.get("uid") or "")
    spec = obj["spec"]
    template = spec.get("template")
    if not isinstance(template, dict):
        return obj
    template_meta = template.get("metadata")
    template_meta = template_meta if isinstance(template_meta, dict) else dict(_TEMPLATE_META)
    generated = {
        LEGACY_JOB_NAME_LABEL: name,
        JOB_NAME_LABEL: name,
        LEGACY_CONTROLLER_UID_LABEL: uid,
        CONTROLLER_UID_LABEL: uid,
    }
    labels = {**generated, **(template_meta.get("labels") or {})}
    selector = spec.get("selector")
    selector = dict(selector) if isinstance(selector, dict) else {}
    match_labels = {CONTROLLER_UID_LABEL: uid, **(selector.get("matchLabels") or {})}
    selector["matchLabels"] = dict(sorted(match_labels.items()))
    template = {**template, "metadata": {**template_meta, "labels": dict(sorted(labels.items()))}}
    return {**obj, "spec": {**spec, "selector": selector, "template": template}}


def _labels_from_template(obj: Obj) -> Obj:
    """A Job without labels takes its template's (SetDefaults_Job)."""
    metadata = obj.get("metadata")
    if not isinstance(metadata, dict) or metadata.get("labels"):
        return obj
    template = obj["spec"].get("template")
    template_meta = template.get("metadata") if isinstance(template, dict) else None
    labels = template_meta.get("labels") if isinstance(template_meta, dict) else None
    if not isinstance(labels, dict) or not labels:
        return obj
    return {**obj, "metadata": {**metadata, "labels": dict(labels)}}
