"""Validation and defaulting of the RBAC kinds, worded as kube-apiserver words them.

Rules need verbs, and either resources with API groups or non-resource URLs
(never both, and never URLs in a namespaced Role); a binding's roleRef names a
Role or ClusterRole of rbac.authorization.k8s.io and may never change; each
subject is a User, Group or ServiceAccount, with the API group that kind
takes (defaulted when left out) and, in a ClusterRoleBinding, a service
account's namespace. RBAC names are path segments, so `system:discovery` is
a valid name.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from engine.cluster.apiserver.errors import Cause
from engine.cluster.apiserver.storage.objects import Obj
from engine.cluster.apiserver.validation.field_errors import (
    forbidden,
    invalid,
    invalid_shown,
    not_supported,
    required,
)
from engine.cluster.apiserver.validation.go_values import go_string_slice, go_struct
from engine.cluster.apiserver.validation.names import dns1123_subdomain_errors

RBAC_GROUP = "rbac.authorization.k8s.io"
_SUBJECT_KINDS = ("ServiceAccount", "User", "Group")

Spec = Mapping[str, Any]


def path_segment_name_errors(name: str) -> list[str]:
    """ValidatePathSegmentName: anything but "." and "..", and no "/" or "%"."""
    if name in (".", ".."):
        return [f"may not be '{name}'"]
    return [f"may not contain '{c}'" for c in "/%" if c in name]


def _rules_causes(obj: Spec, *, namespaced: bool) -> list[Cause]:
    rules = obj.get("rules") or []
    if not isinstance(rules, list):
        return [invalid("rules", rules, "must be a list")]
    causes: list[Cause] = []
    for index, rule in enumerate(rules):
        path = f"rules[{index}]"
        if not isinstance(rule, Mapping):
            causes.append(invalid(path, rule, "must be an object"))
            continue
        if not rule.get("verbs"):
            causes.append(required(f"{path}.verbs", "verbs must contain at least one value"))
        urls = rule.get("nonResourceURLs")
        if urls:
            shown = go_string_slice(urls) if isinstance(urls, list) else str(urls)
            if namespaced:
                causes.append(invalid_shown(f"{path}.nonResourceURLs", shown,
                                            "namespaced rules cannot apply to non-resource URLs"))
            if rule.get("apiGroups") or rule.get("resources") or rule.get("resourceNames"):
                causes.append(invalid_shown(f"{path}.nonResourceURLs", shown,
                                            "rules cannot apply to both regular resources and "
                                            "non-resource URLs"))
            continue
        if not rule.get("apiGroups"):
            causes.append(required(f"{path}.apiGroups",
                                   "resource rules must supply at least one api group"))
        if not rule.get("resources"):
            causes.append(required(f"{path}.resources",
                                   "resource rules must supply at least one resource"))
    return causes


def validate_role(obj: Spec) -> list[Cause]:
    return _rules_causes(obj, namespaced=True)


def validate_cluster_role(obj: Spec) -> list[Cause]:
    causes = _rules_causes(obj, namespaced=False)
    aggregation = obj.get("aggregationRule")
    if aggregation is not None:
        selectors = aggregation.get("clusterRoleSelectors") if isinstance(aggregation,
                                                                          Mapping) else None
        if not selectors:
            causes.append(required("aggregationRule.clusterRoleSelectors", "at least one "
                                   "clusterRoleSelector required if aggregationRule is non-nil"))
        else:
            causes += _selector_causes(selectors)
    return causes


def _selector_causes(selectors: object) -> list[Cause]:
    if not isinstance(selectors, list):
        return [invalid("aggregationRule.clusterRoleSelectors", selectors, "must be a list")]
    causes: list[Cause] = []
    for index, selector in enumerate(selectors):
        path = f"aggregationRule.clusterRoleSelectors[{index}]"
        if not isinstance(selector, Mapping):
            causes.append(invalid(path, selector, "must be a label selector"))
            continue
        for number, expression in enumerate(selector.get("matchExpressions") or []):
            where = f"{path}.matchExpressions[{number}]"
            operator = expression.get("operator") if isinstance(expression, Mapping) else None
            values = expression.get("values") if isinstance(expression, Mapping) else None
            if operator not in _OPERATORS:
                causes.append(invalid(f"{where}.operator", operator,
                                      "not a valid selector operator"))
            elif operator in ("In", "NotIn") and not values:
                causes.append(required(f"{where}.values",
                                       "must be specified when `operator` is 'In' or 'NotIn'"))
            elif operator in ("Exists", "DoesNotExist") and values:
                causes.append(forbidden(f"{where}.values", "may not be specified when "
                                        "`operator` is 'Exists' or 'DoesNotExist'"))
    return causes


_OPERATORS = ("In", "NotIn", "Exists", "DoesNotExist")


def _binding_causes(obj: Spec, *, namespaced: bool) -> list[Cause]:
    causes: list[Cause] = []
    ref = obj.get("roleRef")
    if not isinstance(ref, Mapping):
        ref = {}
    if ref.get("apiGroup") != RBAC_GROUP:
        causes.append(not_supported("roleRef.apiGroup", ref.get("apiGroup", ""), [RBAC_GROUP]))
    kinds = ["Role", "ClusterRole"] if namespaced else ["ClusterRole"]
    if ref.get("kind") not in kinds:
        causes.append(not_supported("roleRef.kind", ref.get("kind", ""), kinds))
    name = ref.get("name")
    if not name:
        causes.append(required("roleRef.name"))
    else:
        causes += [invalid("roleRef.name", name, msg) for msg in path_segment_name_errors(name)]
    for index, subject in enumerate(obj.get("subjects") or []):
        causes += _subject_causes(subject, f"subjects[{index}]", namespaced=namespaced)
    return causes


def _subject_causes(subject: Any, path: str, *, namespaced: bool) -> list[Cause]:
    if not isinstance(subject, Mapping):
        return [invalid(path, subject, "must be an object")]
    causes: list[Cause] = []
    name, kind, group = subject.get("name"), subject.get("kind"), subject.get("apiGroup", "")
    if not name:
        causes.append(required(f"{path}.name"))
    if kind == "ServiceAccount":
        if name:
            causes += [invalid(f"{path}.name", name, msg)
                       for msg in dns1123_subdomain_errors(name)]
        if group:
            causes.append(not_supported(f"{path}.apiGroup", group, [""]))
        if not namespaced and not subject.get("namespace"):
            causes.append(required(f"{path}.namespace"))
    elif kind in ("User", "Group"):
        if group != RBAC_GROUP:
            causes.append(not_supported(f"{path}.apiGroup", group, [RBAC_GROUP]))
    else:
        causes.append(not_supported(f"{path}.kind", kind or "", _SUBJECT_KINDS))
    return causes


def validate_role_binding(obj: Spec) -> list[Cause]:
    return _binding_causes(obj, namespaced=True)


def validate_cluster_role_binding(obj: Spec) -> list[Cause]:
    return _binding_causes(obj, namespaced=False)


def binding_immutable(new: Spec, old: Spec) -> list[Cause]:
    """roleRef never changes; the new one is printed as Go prints the internal RoleRef
    (`%#v`: it has no String())."""
    if new.get("roleRef") != old.get("roleRef"):
        given = new.get("roleRef")
        ref: Mapping[str, Any] = given if isinstance(given, Mapping) else {}
        shown = go_struct("rbac.RoleRef", [(name, ref.get(key)) for name, key in (
            ("APIGroup", "apiGroup"), ("Kind", "kind"), ("Name", "name"))])
        return [invalid_shown("roleRef", shown, "cannot change roleRef")]
    return []


def binding_defaults(obj: Obj) -> Obj:
    """SetDefaults_RoleBinding and SetDefaults_Subject: a roleRef, and a User or Group
    subject, without an API group are RBAC's."""
    ref = obj.get("roleRef")
    if isinstance(ref, dict) and not ref.get("apiGroup"):
        obj = {**obj, "roleRef": {**ref, "apiGroup": RBAC_GROUP}}
    subjects = obj.get("subjects")
    if not isinstance(subjects, list):
        return obj
    defaulted = [
        {**subject, "apiGroup": RBAC_GROUP}
        if isinstance(subject, dict) and subject.get("kind") in ("User", "Group")
        and not subject.get("apiGroup") else subject
        for subject in subjects
    ]
    return {**obj, "subjects": defaulted}
