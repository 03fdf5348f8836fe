"""batch/v1 Job validation on create and update, in upstream's order and words.

ValidateJob: the generated selector and labels (unless `manualSelector`), the
JobSpec (counts, completion mode, per-index limits, policies, the pod template
and its restart policy), the selector and its match with the template's labels,
and the pod hostname an Indexed Job's last index gets. An update runs the spec
rules again, as ValidateJobUpdate does (so a spec error is listed twice among
the causes, once in the message), then the immutable fields, with upstream's
exceptions: an Indexed Job's completions in tandem with parallelism, and a
suspended Job that never started may change its template's scheduling
directives. `job_spec_causes` is shared with the CronJob's job template.
"""

from __future__ import annotations

import copy
import re
from collections.abc import Mapping
from typing import Any

from engine.cluster.apiserver.admission.batch_defaults import (
    CONTROLLER_UID_LABEL,
    JOB_NAME_LABEL,
    LEGACY_CONTROLLER_UID_LABEL,
    LEGACY_JOB_NAME_LABEL,
)
from engine.cluster.apiserver.errors import Cause
from engine.cluster.apiserver.schema.schema_values import render
from engine.cluster.apiserver.validation.field_errors import (
    invalid,
    invalid_shown,
    non_negative,
    not_supported,
    required,
)
from engine.cluster.apiserver.validation.go_values import go_label_selector, go_string_map
from engine.cluster.apiserver.validation.job_policies import (
    pod_failure_policy_causes,
    success_policy_causes,
)
from engine.cluster.apiserver.validation.label_selectors import (
    label_selector_causes,
    parsed_selector,
    semantic,
)
from engine.cluster.apiserver.validation.names import (
    dns1123_label_errors,
    dns1123_subdomain_errors,
)
from engine.cluster.apiserver.validation.pod_specs import pod_template_causes

_MAX_INDEXED_PARALLELISM = 100_000
_MAX_FAILED_INDEXES = 100_000
_COMPLETIONS_SOFT_LIMIT = 100_000
_HIGH_COMPLETIONS_LIMIT = 10_000
_MAX_MANAGED_BY = 63
_MODES = ("NonIndexed", "Indexed")
_REPLACEMENT_POLICIES = ("Failed", "TerminatingOrFailed")
_HTTP_PATH = r"[A-Za-z0-9/\-._~%!$&'()*+,;=:]+"
_IMMUTABLE = "field is immutable"
_HIGH_COMPLETIONS = (
    f"when completions are above {_COMPLETIONS_SOFT_LIMIT} and used with backoff limit per index"
)
# What a suspended Job that never started may change in its template (validatePodTemplateUpdate).
_SCHEDULING_SPEC_FIELDS = ("nodeSelector", "tolerations", "schedulingGates")
Spec = Mapping[str, Any]


def validate_job(obj: Spec, old: Spec | None) -> list[Cause]:
    """ValidateJob, and on update (`old` given) ValidateJobUpdate after it."""
    spec = obj.get("spec") or {}
    causes = _generated_selector_causes(obj, require_prefixed=_requires_prefixed_labels(old))
    causes += _spec_with_selector(spec, "spec")
    causes += _indexed_name_causes(obj)
    if old is None:
        return causes
    old_spec = old.get("spec") or {}
    causes += _spec_with_selector(spec, "spec")
    causes += _completions_update(spec, old_spec)
    if semantic(spec.get("selector")) != semantic(old_spec.get("selector")):
        causes.append(invalid_shown("spec.selector", _selector_shown(spec.get("selector")),
                                    _IMMUTABLE))
    causes += _template_update(spec, old, old_spec)
    for name in ("completionMode", "podFailurePolicy", "backoffLimitPerIndex", "managedBy",
                 "successPolicy"):
        if semantic(spec.get(name)) != semantic(old_spec.get(name)):
            causes.append(invalid(f"spec.{name}", spec.get(name), _IMMUTABLE))
    return causes


def job_spec_causes(spec: Spec, path: str) -> list[Cause]:
    """validateJobSpec: everything about a JobSpec but its selector (a CronJob's job template
    has none)."""
    causes: list[Cause] = []
    for name in ("parallelism", "completions", "activeDeadlineSeconds", "backoffLimit",
                 "ttlSecondsAfterFinished", "backoffLimitPerIndex"):
        causes += non_negative(f"{path}.{name}", spec.get(name))
    per_index, max_failed = spec.get("backoffLimitPerIndex"), spec.get("maxFailedIndexes")
    if max_failed is not None:
        causes += non_negative(f"{path}.maxFailedIndexes", max_failed)
        if per_index is None:
            causes.append(required(f"{path}.backoffLimitPerIndex",
                                   "when maxFailedIndexes is specified"))
    if spec.get("managedBy") is not None:
        causes += _managed_by_causes(str(spec["managedBy"]), f"{path}.managedBy")
    mode = spec.get("completionMode")
    if mode is not None:
        causes += _completion_mode_causes(spec, path)
    if mode in (None, "NonIndexed"):
        if per_index is not None:
            causes.append(invalid(f"{path}.backoffLimitPerIndex", per_index,
                                  "requires indexed completion mode"))
        if max_failed is not None:
            causes.append(invalid(f"{path}.maxFailedIndexes", max_failed,
                                  "requires indexed completion mode"))
    if spec.get("podFailurePolicy") is not None:
        causes += pod_failure_policy_causes(spec, f"{path}.podFailurePolicy")
    if spec.get("successPolicy") is not None:
        if mode != "Indexed":
            causes.append(invalid(f"{path}.successPolicy", spec["successPolicy"],
                                  "requires indexed completion mode"))
        else:
            causes += success_policy_causes(spec, f"{path}.successPolicy")
    causes += _replacement_policy_causes(spec, f"{path}.podReplacementPolicy")
    template = spec.get("template") or {}
    causes += pod_template_causes(template, f"{path}.template")
    return causes + _restart_policy_causes(spec, f"{path}.template.spec.restartPolicy")


def _completion_mode_causes(spec: Spec, path: str) -> list[Cause]:
    mode = spec.get("completionMode")
    if mode not in _MODES:
        return [not_supported(f"{path}.completionMode", mode, _MODES)]
    if mode != "Indexed":
        return []
    completions, parallelism = spec.get("completions"), spec.get("parallelism")
    per_index, max_failed = spec.get("backoffLimitPerIndex"), spec.get("maxFailedIndexes")
    causes: list[Cause] = []
    if completions is None:
        causes.append(required(f"{path}.completions", "when completion mode is Indexed"))
    if parallelism is not None and parallelism > _MAX_INDEXED_PARALLELISM:
        causes.append(invalid(f"{path}.parallelism", parallelism, "must be less than or equal to "
                              f"{_MAX_INDEXED_PARALLELISM} when completion mode is Indexed"))
    if completions is not None and max_failed is not None and max_failed > completions:
        causes.append(invalid(f"{path}.maxFailedIndexes", max_failed,
                              "must be less than or equal to completions"))
    if max_failed is not None and max_failed > _MAX_FAILED_INDEXES:
        causes.append(invalid(f"{path}.maxFailedIndexes", max_failed,
                              f"must be less than or equal to {_MAX_FAILED_INDEXES}"))
    if completions is not None and completions > _COMPLETIONS_SOFT_LIMIT and per_index is not None:
        if max_failed is None:
            causes.append(required(f"{path}.maxFailedIndexes", "must be specified when "
                                   f"completions is above {_COMPLETIONS_SOFT_LIMIT}"))
        if parallelism is not None and parallelism > _HIGH_COMPLETIONS_LIMIT:
            causes.append(invalid(f"{path}.parallelism", parallelism, "must be less than or "
                                  f"equal to {_HIGH_COMPLETIONS_LIMIT} {_HIGH_COMPLETIONS}"))
        if max_failed is not None and max_failed > _HIGH_COMPLETIONS_LIMIT:
            causes.append(invalid(f"{path}.maxFailedIndexes", max_failed, "must be less than or "
                                  f"equal to {_HIGH_COMPLETIONS_LIMIT} {_HIGH_COMPLETIONS}"))
    return causes


def _managed_by_causes(value: str, path: str) -> list[Cause]:
    """IsDomainPrefixedPath, then at most 63 characters."""
    causes = _domain_prefixed_path_causes(value, path)
    if len(value) > _MAX_MANAGED_BY:
        causes.append(Cause(path, f"Too long: may not be more than {_MAX_MANAGED_BY} bytes",
                            "FieldValueTooLong"))
    return causes


def _domain_prefixed_path_causes(value: str, path: str) -> list[Cause]:
    if not value:
        return [required(path)]
    host, slash, rest = value.partition("/")
    if not slash or not host or not rest:
        return [invalid(path, value, 'must be a domain-prefixed path (such as "acme.io/foo")')]
    causes = [invalid(path, host, e) for e in dns1123_subdomain_errors(host)]
    if not re.fullmatch(_HTTP_PATH, rest):
        causes.append(invalid(path, rest, f"Invalid path (regex used for validation is "
                                          f"'{_HTTP_PATH}')"))
    return causes


def _replacement_policy_causes(spec: Spec, path: str) -> list[Cause]:
    policy = spec.get("podReplacementPolicy")
    if policy is None:
        return []
    if spec.get("podFailurePolicy") is not None:
        return [] if policy == "Failed" else [not_supported(path, policy, ("Failed",))]
    if policy not in _REPLACEMENT_POLICIES:
        return [not_supported(path, policy, _REPLACEMENT_POLICIES)]
    return []


def _restart_policy_causes(spec: Spec, path: str) -> list[Cause]:
    """A Job's pods end: Never or OnFailure (Never alone with a pod failure policy)."""
    policy = ((spec.get("template") or {}).get("spec") or {}).get("restartPolicy") or ""
    if policy in ("Always", ""):
        return [required(path, 'valid values: "OnFailure", "Never"')]
    if policy not in ("OnFailure", "Never"):
        return [not_supported(path, policy, ("OnFailure", "Never"))]
    if spec.get("podFailurePolicy") is not None and policy != "Never":
        return [invalid(path, policy, 'only "Never" is supported when podFailurePolicy is '
                                      "specified")]
    return []


def _spec_with_selector(spec: Spec, path: str) -> list[Cause]:
    """ValidateJobSpec: the JobSpec rules, the selector's own, and its match with the
    template's labels (a missing selector matches nothing)."""
    causes = job_spec_causes(spec, path)
    selector = spec.get("selector")
    if selector is None:
        causes.append(required(f"{path}.selector"))
    else:
        causes += label_selector_causes(selector, f"{path}.selector")
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels")
    parsed = None if selector is None else parsed_selector(selector)
    if selector is None or (parsed is not None and not parsed.matches(labels or {})):
        causes.append(invalid_shown(f"{path}.template.metadata.labels", go_string_map(labels),
                                    "`selector` does not match template `labels`"))
    return causes


def _requires_prefixed_labels(old: Spec | None) -> bool:
    """On create always; on update only if the stored template carries both prefixed labels
    (Jobs created before they existed keep validating)."""
    if old is None:
        return True
    labels = (((old.get("spec") or {}).get("template") or {}).get("metadata") or {}).get(
        "labels") or {}
    return JOB_NAME_LABEL in labels and CONTROLLER_UID_LABEL in labels


def _generated_selector_causes(obj: Spec, *, require_prefixed: bool) -> list[Cause]:
    """validateGeneratedSelector: a generated selector needs the uid, the template's labels
    as generated, and a selector that matches them."""
    spec = obj.get("spec") or {}
    selector = spec.get("selector")
    if spec.get("manualSelector") is True or selector is None:
        return []
    metadata = obj.get("metadata") or {}
    uid, name = str(metadata.get("uid") or ""), str(metadata.get("name") or "")
    causes = [] if uid else [required("metadata.uid")]
    expected = {LEGACY_CONTROLLER_UID_LABEL: uid, LEGACY_JOB_NAME_LABEL: name}
    if require_prefixed:
        expected |= {CONTROLLER_UID_LABEL: uid, JOB_NAME_LABEL: name}
    labels = ((spec.get("template") or {}).get("metadata") or {}).get("labels") or {}
    for key, value in expected.items():
        where = f"spec.template.metadata.labels[{key}]"
        if key not in labels:
            causes.append(required(where, f"must be '{value}'"))
        elif labels[key] != value:
            causes.append(invalid_shown(where, go_string_map(labels), f"must be '{value}'"))
    parsed = parsed_selector(selector)
    if parsed is not None and not parsed.matches(expected):
        causes.append(invalid_shown("spec.selector", go_label_selector(selector),
                                    "`selector` not auto-generated"))
    return causes


def _indexed_name_causes(obj: Spec) -> list[Cause]:
    """An Indexed Job's pods are named and hostnamed `<job>-<index>`: the last must be a
    DNS label."""
    spec = obj.get("spec") or {}
    completions = spec.get("completions")
    if spec.get("completionMode") != "Indexed" or completions is None or completions <= 0:
        return []
    name = str((obj.get("metadata") or {}).get("name") or "")
    hostname = f"{name}-{completions - 1}"
    if dns1123_label_errors(hostname):
        return [invalid("metadata.name", name,
                        f"will not able to create pod with invalid DNS label: {hostname}")]
    return []


def _completions_update(spec: Spec, old_spec: Spec) -> list[Cause]:
    """Immutable, except that an Indexed Job may change it together with parallelism."""
    completions = spec.get("completions")
    if completions == old_spec.get("completions"):
        return []
    if spec.get("completionMode") != "Indexed":
        return [invalid("spec.completions", completions, _IMMUTABLE)]
    if completions is None or completions == spec.get("parallelism"):
        return []
    return [invalid("spec.completions", completions,
                    "can only be modified in tandem with spec.parallelism")]


def _template_update(spec: Spec, old: Spec, old_spec: Spec) -> list[Cause]:
    """The template never changes, but for the scheduling directives of a suspended Job that
    has not started (validatePodTemplateUpdate)."""
    template = spec.get("template") or {}
    before: dict[str, Any] = copy.deepcopy(dict(old_spec.get("template") or {}))
    started = (old.get("status") or {}).get("startTime") is not None
    if old_spec.get("suspend") is True and not started:
        before = _with_scheduling_of(before, template)
    if semantic(template) != semantic(before):
        return [invalid_shown("spec.template", render(template), _IMMUTABLE)]
    return []


def _with_scheduling_of(before: dict[str, Any], template: Spec) -> dict[str, Any]:
    """The old template with the new one's labels, annotations, node selector, tolerations,
    scheduling gates and node affinity, so only other changes count."""
    metadata = dict(before.get("metadata") or {})
    new_metadata = template.get("metadata") or {}
    for key in ("labels", "annotations"):
        metadata[key] = new_metadata.get(key)
    spec = dict(before.get("spec") or {})
    new_spec = template.get("spec") or {}
    for key in _SCHEDULING_SPEC_FIELDS:
        spec[key] = new_spec.get(key)
    old_affinity, new_affinity = spec.get("affinity"), new_spec.get("affinity")
    if new_affinity is None and old_affinity is not None:
        kept = {k: v for k, v in old_affinity.items() if k != "nodeAffinity"}
        spec["affinity"] = kept if semantic(kept) else None
    elif new_affinity is not None:
        node_affinity = new_affinity.get("nodeAffinity")
        spec["affinity"] = {**(old_affinity or {}), "nodeAffinity": node_affinity}
    return {**before, "metadata": metadata, "spec": spec}


def _selector_shown(selector: Spec | None) -> str:
    return '"null"' if selector is None else go_label_selector(selector)
