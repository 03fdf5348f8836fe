"""Label selectors as a kind's `governs.selector` says them: a LabelSelector or a plain map.

A ReplicaSet keeps a LabelSelector (`matchLabels`, `matchExpressions`), a v1
ReplicationController a plain map of labels; both select the pods the job claims, as
kube-controller-manager's `metav1.LabelSelectorAsSelector` and `labels.SelectorFromSet` do.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.api.replicated import read_path
from engine.definition import CompiledDefinition

_SELECTOR_KEYS = frozenset({"matchLabels", "matchExpressions"})


def selector_matches(selector: Mapping[str, Any] | None, labels: Mapping[str, str]) -> bool:
    """Whether `labels` are selected. No selector selects nothing; an empty one everything
    (as upstream: the API server refuses an empty selector on the kinds that have one)."""
    if selector is None:
        return False
    if _is_label_selector(selector):
        return _label_selector_matches(selector, labels)
    return all(labels.get(key) == value for key, value in selector.items())


def _is_label_selector(selector: Mapping[str, Any]) -> bool:
    """Whether it has only LabelSelector fields (an empty map reads alike either way)."""
    return all(key in _SELECTOR_KEYS for key in selector)


def _label_selector_matches(selector: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    match_labels = selector.get("matchLabels") or {}
    if any(labels.get(key) != value for key, value in match_labels.items()):
        return False
    return all(_requirement_holds(r, labels) for r in selector.get("matchExpressions") or ())


def _requirement_holds(requirement: Mapping[str, Any], labels: Mapping[str, str]) -> bool:
    key = str(requirement.get("key"))
    operator = requirement.get("operator")
    values = set(requirement.get("values") or ())
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False  # an unknown operator selects nothing (the API server refuses it)


def job_selects(definition: CompiledDefinition, job: Mapping[str, Any],
                labels: Mapping[str, str]) -> bool:
    """Whether the job claims pods by its selector (governs.selector) and it selects `labels`:
    an orphan with them is the job's to adopt."""
    path = definition.definition.governs.selector
    return path is not None and selector_matches(read_path(job, path) or {}, labels)
