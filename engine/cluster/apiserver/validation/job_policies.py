"""A Job's pod failure policy, success policy and index intervals, validated as upstream words it.

The rules of pkg/apis/batch/validation for `spec.podFailurePolicy` (at most 20
rules, one action each, exit codes or pod conditions but not both) and
`spec.successPolicy` (Indexed only, counts and index lists within the
completions), and the `1,3-5,7` interval syntax shared by `succeededIndexes`,
`status.completedIndexes` and `status.failedIndexes`, whose parse errors are
part of the messages.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from engine.cluster.apiserver.encoding.go_numbers import go_int64
from engine.cluster.apiserver.errors import Cause
from engine.cluster.apiserver.validation.field_errors import (
    duplicate,
    invalid,
    invalid_omitted,
    invalid_shown,
    non_negative,
    not_supported,
    required,
    too_long,
    too_many,
)
from engine.cluster.apiserver.validation.go_values import go_int32_slice
from engine.cluster.apiserver.validation.names import label_key_errors

_MAX_RULES = 20
_MAX_EXIT_CODES = 255
_MAX_CONDITION_PATTERNS = 20
_MAX_SUCCEEDED_INDEXES = 64 * 1024
# In the sorted order upstream's sets.List gives them.
_ACTIONS = ("Count", "FailIndex", "FailJob", "Ignore")
_OPERATORS = ("In", "NotIn")
_CONDITION_STATUSES = ("False", "True", "Unknown")
Spec = Mapping[str, Any]


def pod_failure_policy_causes(spec: Spec, path: str) -> list[Cause]:
    """validatePodFailurePolicy for the policy at `path` of the JobSpec `spec`."""
    rules = (spec.get("podFailurePolicy") or {}).get("rules") or []
    causes: list[Cause] = []
    if len(rules) > _MAX_RULES:
        causes.append(too_many(f"{path}.rules", len(rules), _MAX_RULES))
    template_spec = (spec.get("template") or {}).get("spec") or {}
    names = {
        container.get("name")
        for key in ("containers", "initContainers")
        for container in template_spec.get(key) or []
    }
    for index, rule in enumerate(rules):
        causes += _rule_causes(spec, rule, f"{path}.rules[{index}]", names)
    return causes


def _rule_causes(spec: Spec, rule: Spec, path: str, names: set[Any]) -> list[Cause]:
    causes: list[Cause] = []
    action = rule.get("action") or ""
    if action == "":
        listed = " ".join(f'"{a}"' for a in _ACTIONS)
        causes.append(required(f"{path}.action", f"valid values: [{listed}]"))
    elif action == "FailIndex":
        if spec.get("backoffLimitPerIndex") is None:
            causes.append(
                invalid(f"{path}.action", action, "requires the backoffLimitPerIndex to be set")
            )
    elif action not in _ACTIONS:
        causes.append(not_supported(f"{path}.action", action, _ACTIONS))
    exit_codes = rule.get("onExitCodes")
    conditions = rule.get("onPodConditions") or []
    if exit_codes is not None:
        causes += _exit_code_causes(exit_codes, f"{path}.onExitCodes", names)
    if conditions:
        causes += _condition_causes(conditions, f"{path}.onPodConditions")
    if exit_codes is not None and conditions:
        causes.append(invalid_omitted(
            path, "specifying both OnExitCodes and OnPodConditions is not supported"
        ))
    if exit_codes is None and not conditions:
        causes.append(
            invalid_omitted(path, "specifying one of OnExitCodes and OnPodConditions is required")
        )
    return causes


def _condition_causes(patterns: list[Any], path: str) -> list[Cause]:
    causes: list[Cause] = []
    if len(patterns) > _MAX_CONDITION_PATTERNS:
        causes.append(too_many(path, len(patterns), _MAX_CONDITION_PATTERNS))
    for index, pattern in enumerate(patterns):
        where = f"{path}[{index}]"
        kind = str(pattern.get("type") or "")
        causes += [invalid(f"{where}.type", kind, e) for e in label_key_errors(kind)]
        status = pattern.get("status")
        if status not in _CONDITION_STATUSES:  # defaulting turned an unset status into True
            causes.append(not_supported(f"{where}.status", status, _CONDITION_STATUSES))
    return causes


def _exit_code_causes(requirement: Spec, path: str, names: set[Any]) -> list[Cause]:
    causes: list[Cause] = []
    operator = requirement.get("operator") or ""
    if operator == "":
        listed = " ".join(f'"{o}"' for o in _OPERATORS)
        causes.append(required(f"{path}.operator", f"valid values: [{listed}]"))
    elif operator not in _OPERATORS:
        causes.append(not_supported(f"{path}.operator", operator, _OPERATORS))
    container = requirement.get("containerName")
    if container is not None and container not in names:
        causes.append(invalid(
            f"{path}.containerName", container,
            "must be one of the container or initContainer names in the pod template",
        ))
    values = requirement.get("values")
    if not values:
        causes.append(invalid_shown(
            f"{path}.values", go_int32_slice(values), "at least one value is required"
        ))
    elif len(values) > _MAX_EXIT_CODES:
        causes.append(too_many(f"{path}.values", len(values), _MAX_EXIT_CODES))
    seen: set[int] = set()
    codes = values or []
    for index, value in enumerate(codes):
        where = f"{path}.values[{index}]"
        if operator == "In" and value == 0:
            causes.append(invalid(where, value, "must not be 0 for the In operator"))
        if value in seen:
            causes.append(duplicate(where, value))
        seen.add(value)
    if any(codes[i - 1] > codes[i] for i in range(1, len(codes))):
        causes.append(invalid_shown(f"{path}.values", go_int32_slice(values), "must be ordered"))
    return causes


def success_policy_causes(spec: Spec, path: str) -> list[Cause]:
    """validateSuccessPolicy for an Indexed Job's policy at `path`.

    Upstream reads `completions` without a nil check (Indexed requires it, and that is
    reported too); without completions the rules that compare with it are skipped here.
    """
    rules = (spec.get("successPolicy") or {}).get("rules") or []
    causes: list[Cause] = []
    if not rules:
        causes.append(required(f"{path}.rules", "at least one rules must be specified when "
                                                "the successPolicy is specified"))
    if len(rules) > _MAX_RULES:
        causes.append(too_many(f"{path}.rules", len(rules), _MAX_RULES))
    completions = spec.get("completions")
    for index, rule in enumerate(rules):
        causes += _success_rule_causes(rule, f"{path}.rules[{index}]", completions)
    return causes


def _success_rule_causes(rule: Spec, path: str, completions: int | None) -> list[Cause]:
    count, indexes = rule.get("succeededCount"), rule.get("succeededIndexes")
    causes: list[Cause] = []
    if count is None and indexes is None:
        causes.append(required(
            path, "at least one of succeededCount or succeededIndexes must be specified"
        ))
    total = 0
    if indexes is not None:
        where = f"{path}.succeededIndexes"
        if len(indexes.encode()) > _MAX_SUCCEEDED_INDEXES:  # Go's len counts bytes
            causes.append(too_long(where, _MAX_SUCCEEDED_INDEXES))
        if completions is not None:
            total, error = indexes_format(indexes, completions)
            if error:
                causes.append(invalid(where, indexes, f"error parsing succeededIndexes: {error}"))
    if count is not None:
        where = f"{path}.succeededCount"
        causes += non_negative(where, count)
        if completions is not None and count > completions:
            causes.append(invalid(where, count, f"must be less than or equal to {completions} "
                                                "(the number of specified completions)"))
        if indexes is not None and count > total:
            causes.append(invalid(where, count, f"must be less than or equal to {total} (the "
                                                "number of indexes in the specified "
                                                "succeededIndexes field)"))
    return causes


def indexes_format(text: str, completions: int) -> tuple[int, str]:
    """How many indexes an interval list names, or 0 and why it does not parse."""
    if not text:
        return 0, ""
    last: int | None = None
    total = 0
    for interval in text.split(","):
        first, end, error = parse_interval(interval, completions)
        if error:
            return 0, error
        if last is not None and last >= first:
            return 0, f"non-increasing order, previous: {last}, current: {first}"
        total += end - first + 1
        last = end
    return total, ""


def parse_interval(text: str, completions: int) -> tuple[int, int, str]:
    """One `x` or `x-y` interval below `completions`: (x, y, "") or (0, 0, why not)."""
    limits = text.split("-")
    if len(limits) > 2:
        return 0, 0, (f"the fragment {_quote(text)} violates the requirement that an index "
                      "interval can have at most two parts separated by '-'")
    bounds: list[int] = []
    for limit in limits:
        number = go_int64(limit)  # strconv.Atoi: a number beyond int64 does not convert
        if number is None:
            return 0, 0, f"cannot convert string to integer for index: {_quote(limit)}"
        if number >= completions:
            return 0, 0, f"too large index: {_quote(limit)}"
        bounds.append(number)
    if len(bounds) == 2 and bounds[0] >= bounds[1]:
        return 0, 0, f"non-increasing order, previous: {bounds[0]}, current: {bounds[1]}"
    return bounds[0], bounds[-1], ""


def indexes_overlap(completed: str, failed: str, completions: int) -> str:
    """validateFailedIndexesNotOverlapCompleted: the first index in both lists, as its message
    ("" when none). Intervals that do not parse are stepped over (their format is judged
    apart)."""
    if not completed or not failed:
        return ""
    done, lost = completed.split(","), failed.split(",")
    d_pos = l_pos = 0
    d_first, d_end, d_error = parse_interval(done[0], completions)
    l_first, l_end, l_error = parse_interval(lost[0], completions)
    while d_pos < len(done) and l_pos < len(lost):
        step_done = bool(d_error)
        if not d_error and not l_error:
            if d_first <= l_end and l_first <= d_end:
                overlap = max(d_first, l_first)
                return f"failedIndexes and completedIndexes overlap at index: {overlap}"
            step_done = d_first <= l_first
        if step_done:
            d_pos += 1
            if d_pos < len(done):
                d_first, d_end, d_error = parse_interval(done[d_pos], completions)
        else:
            l_pos += 1
            if l_pos < len(lost):
                l_first, l_end, l_error = parse_interval(lost[l_pos], completions)
    return ""


def _quote(text: str) -> str:
    """Go's %q of a plain string."""
    return json.dumps(text, ensure_ascii=False)
