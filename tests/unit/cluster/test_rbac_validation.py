"""Validation and defaulting of Roles, ClusterRoles and their bindings through the store, each
cause worded as kube-apiserver's pkg/apis/rbac/validation/validation.go words it, with the
defaults of pkg/apis/rbac/v1/defaults.go."""

from __future__ import annotations

from typing import Any

import pytest

from engine.cluster.apiserver.core import Core
from engine.cluster.apiserver.errors import ApiError
from engine.cluster.apiserver.registry.builtins import (
    CLUSTER_ROLE_BINDINGS,
    CLUSTER_ROLES,
    ROLE_BINDINGS,
    ROLES,
)
from engine.cluster.apiserver.registry.resources import ResourceType
from engine.cluster.apiserver.registry.store import Store
from tests.unit.cluster.store_support import ManualReactor, make_core

RBAC = "rbac.authorization.k8s.io"
CLUSTER_ROLE_REF = {"apiGroup": RBAC, "kind": "ClusterRole", "name": "view"}
JANE = {"kind": "User", "name": "jane", "apiGroup": RBAC}


@pytest.fixture
def store() -> Store:
    core: Core = make_core(ManualReactor())
    return core.store


def scope(rt: ResourceType) -> str:
    return "default" if rt.namespaced else ""


def refused(store: Store, rt: ResourceType, body: dict[str, Any]) -> list[str]:
    """The causes of the 422 creating `body` gets, as `field: message`."""
    with pytest.raises(ApiError) as caught:
        store.create(rt, scope(rt), body)
    error = caught.value
    assert (error.code, error.reason) == (422, "Invalid")
    assert error.details["kind"] == rt.kind and error.details["group"] == RBAC
    return [f"{cause.field}: {cause.message}" for cause in error.causes]


def role(rules: list[Any], name: str = "r") -> dict[str, Any]:
    return {"metadata": {"name": name}, "rules": rules}


def binding(role_ref: dict[str, Any], subjects: list[Any], name: str = "b") -> dict[str, Any]:
    return {"metadata": {"name": name}, "roleRef": role_ref, "subjects": subjects}


# --- rules ---------------------------------------------------------------------------------


@pytest.mark.parametrize("rt", [ROLES, CLUSTER_ROLES])
def test_a_rule_needs_verbs(store: Store, rt: ResourceType) -> None:
    assert refused(store, rt, role([{"apiGroups": [""], "resources": ["pods"]}])) == [
        "rules[0].verbs: Required value: verbs must contain at least one value"]
    assert refused(store, rt, role([{"verbs": [], "apiGroups": [""], "resources": ["pods"]}])) == [
        "rules[0].verbs: Required value: verbs must contain at least one value"]


@pytest.mark.parametrize("rt", [ROLES, CLUSTER_ROLES])
def test_a_resource_rule_needs_groups_and_resources(store: Store, rt: ResourceType) -> None:
    assert refused(store, rt, role([{"verbs": ["get"], "resources": ["pods"]},
                                    {"verbs": ["get"], "apiGroups": [""]}])) == [
        "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
        "rules[1].resources: Required value: resource rules must supply at least one resource",
    ]
    assert refused(store, rt, role([{}])) == [
        "rules[0].verbs: Required value: verbs must contain at least one value",
        "rules[0].apiGroups: Required value: resource rules must supply at least one api group",
        "rules[0].resources: Required value: resource rules must supply at least one resource",
    ]


def test_causes_carry_upstreams_reason_types(store: Store) -> None:
    with pytest.raises(ApiError) as caught:
        store.create(ROLES, "default", role([{"apiGroups": [""], "resources": ["pods"]}]))
    assert [c.reason for c in caught.value.causes] == ["FieldValueRequired"]
    with pytest.raises(ApiError) as caught:
        store.create(ROLE_BINDINGS, "default", binding({**CLUSTER_ROLE_REF, "kind": "Foo"}, []))
    assert [c.reason for c in caught.value.causes] == ["FieldValueNotSupported"]


def test_a_namespaced_role_cannot_grant_paths(store: Store) -> None:
    assert refused(store, ROLES, role([{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}])) == [
        'rules[0].nonResourceURLs: Invalid value: []string{"/metrics"}: namespaced rules cannot '
        "apply to non-resource URLs"]
    store.create(CLUSTER_ROLES, "", role([{"verbs": ["get"], "nonResourceURLs": ["/metrics"]}]))


@pytest.mark.parametrize("extra", [{"apiGroups": [""]}, {"resources": ["pods"]},
                                   {"resourceNames": ["x"]}])
def test_a_rule_cannot_be_both_for_resources_and_for_paths(
    store: Store, extra: dict[str, Any]
) -> None:
    rule = {"verbs": ["get"], "nonResourceURLs": ["/metrics"], **extra}
    assert refused(store, CLUSTER_ROLES, role([rule])) == [
        'rules[0].nonResourceURLs: Invalid value: []string{"/metrics"}: rules cannot apply to '
        "both regular resources and non-resource URLs"]


def test_a_role_gets_both_url_causes(store: Store) -> None:
    rule = {"verbs": ["get"], "nonResourceURLs": ["/metrics"], "resources": ["pods"]}
    assert [cause.split(": ")[-1] for cause in refused(store, ROLES, role([rule]))] == [
        "namespaced rules cannot apply to non-resource URLs",
        "rules cannot apply to both regular resources and non-resource URLs",
    ]


def test_resource_names_may_name_several_resources(store: Store) -> None:
    """An old upstream rule (resource names cannot apply to multiple resources) is long gone."""
    store.create(ROLES, "default", role([{"verbs": ["get"], "apiGroups": [""],
                                          "resources": ["configmaps", "secrets"],
                                          "resourceNames": ["x"]}]))


def test_an_aggregation_rule_needs_selectors(store: Store) -> None:
    causes = refused(store, CLUSTER_ROLES, {"metadata": {"name": "agg"},
                                            "aggregationRule": {"clusterRoleSelectors": []}})
    assert [cause.split(":")[0] for cause in causes] == ["aggregationRule.clusterRoleSelectors"]


def test_an_aggregation_rule_without_selectors_is_worded_as_upstream(store: Store) -> None:
    assert refused(store, CLUSTER_ROLES, {"metadata": {"name": "agg"}, "aggregationRule": {}}) == [
        "aggregationRule.clusterRoleSelectors: Required value: at least one clusterRoleSelector "
        "required if aggregationRule is non-nil"]


def test_an_aggregation_selector_must_be_valid(store: Store) -> None:
    selectors = [{"matchExpressions": [{"key": "tier", "operator": "Bogus"}]}]
    causes = refused(store, CLUSTER_ROLES, {"metadata": {"name": "agg"},
                                            "aggregationRule": {"clusterRoleSelectors": selectors}})
    assert ('aggregationRule.clusterRoleSelectors[0].matchExpressions[0].operator: Invalid value: '
            '"Bogus": not a valid selector operator') in causes


def test_several_causes_are_bracketed_in_the_message(store: Store) -> None:
    with pytest.raises(ApiError) as caught:
        store.create(ROLES, "default", role([{"resources": ["pods"]}]))
    assert caught.value.message == (
        'Role.rbac.authorization.k8s.io "r" is invalid: [rules[0].verbs: Required value: verbs '
        "must contain at least one value, rules[0].apiGroups: Required value: resource rules "
        "must supply at least one api group]")


# --- names ---------------------------------------------------------------------------------


@pytest.mark.parametrize("rt", [ROLES, CLUSTER_ROLES, ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS])
def test_names_are_path_segments(store: Store, rt: ResourceType) -> None:
    body: dict[str, Any] = (role([]) if rt in (ROLES, CLUSTER_ROLES)
                            else binding(CLUSTER_ROLE_REF, [JANE]))
    for name in ("system:controller:mine", "Upper_Case.and spaces", "a..b"):
        stored = store.create(rt, scope(rt), {**body, "metadata": {"name": name}}).entry.obj
        assert stored["metadata"]["name"] == name
    for name, problem in (("a/b", "may not contain '/'"), ("50%", "may not contain '%'"),
                          ("..", "may not be '..'"), (".", "may not be '.'")):
        assert refused(store, rt, {**body, "metadata": {"name": name}}) == [
            f'metadata.name: Invalid value: "{name}": {problem}']


# --- bindings ------------------------------------------------------------------------------


def test_the_role_ref_must_be_rbacs(store: Store) -> None:
    assert refused(store, ROLE_BINDINGS, binding({**CLUSTER_ROLE_REF, "apiGroup": "rbac"},
                                                 [JANE])) == [
        'roleRef.apiGroup: Unsupported value: "rbac": supported values: '
        '"rbac.authorization.k8s.io"']


@pytest.mark.parametrize("rt", [ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS])
def test_the_role_ref_group_defaults_to_rbacs(store: Store, rt: ResourceType) -> None:
    stored = store.create(rt, scope(rt), binding({"kind": "ClusterRole", "name": "view"},
                                                 [JANE])).entry.obj
    assert stored["roleRef"] == CLUSTER_ROLE_REF


def test_a_role_binding_refers_to_a_role_or_a_cluster_role(store: Store) -> None:
    store.create(ROLE_BINDINGS, "default", binding({**CLUSTER_ROLE_REF, "kind": "Role"}, [JANE],
                                                   name="to-role"))
    store.create(ROLE_BINDINGS, "default", binding(CLUSTER_ROLE_REF, [JANE], name="to-cr"))
    assert refused(store, ROLE_BINDINGS, binding({**CLUSTER_ROLE_REF, "kind": "Foo"}, [JANE])) == [
        'roleRef.kind: Unsupported value: "Foo": supported values: "Role", "ClusterRole"']


def test_a_cluster_role_binding_refers_only_to_a_cluster_role(store: Store) -> None:
    assert refused(store, CLUSTER_ROLE_BINDINGS, binding({**CLUSTER_ROLE_REF, "kind": "Role"},
                                                         [JANE])) == [
        'roleRef.kind: Unsupported value: "Role": supported values: "ClusterRole"']


@pytest.mark.parametrize("rt", [ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS])
def test_the_role_ref_name_is_required_and_a_path_segment(store: Store, rt: ResourceType) -> None:
    assert refused(store, rt, binding({**CLUSTER_ROLE_REF, "name": ""}, [JANE])) == [
        "roleRef.name: Required value"]
    assert refused(store, rt, binding({**CLUSTER_ROLE_REF, "name": "a/b"}, [JANE])) == [
        "roleRef.name: Invalid value: \"a/b\": may not contain '/'"]
    store.create(rt, scope(rt), binding({**CLUSTER_ROLE_REF, "name": "system:discovery"}, [JANE]))


@pytest.mark.parametrize("rt", [ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS])
def test_subject_kinds_and_names(store: Store, rt: ResourceType) -> None:
    assert refused(store, rt, binding(CLUSTER_ROLE_REF, [{"kind": "Robot", "name": "r2"}])) == [
        'subjects[0].kind: Unsupported value: "Robot": supported values: "ServiceAccount", '
        '"User", "Group"']
    assert refused(store, rt, binding(CLUSTER_ROLE_REF, [JANE, {"kind": "User", "name": ""}])) == [
        "subjects[1].name: Required value"]


def test_a_service_account_subject_names_a_valid_account_in_the_core_group(store: Store) -> None:
    account = {"kind": "ServiceAccount", "name": "Robot_1", "namespace": "team", "apiGroup": RBAC}
    assert refused(store, ROLE_BINDINGS, binding(CLUSTER_ROLE_REF, [account])) == [
        'subjects[0].name: Invalid value: "Robot_1": a lowercase RFC 1123 subdomain must consist '
        "of lower case alphanumeric characters, '-' or '.', and must start and end with an "
        "alphanumeric character (e.g. 'example.com', regex used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')",
        'subjects[0].apiGroup: Unsupported value: "rbac.authorization.k8s.io": supported '
        'values: ""',
    ]


def test_a_service_account_subject_needs_a_namespace_only_cluster_wide(store: Store) -> None:
    account = {"kind": "ServiceAccount", "name": "robot"}
    stored = store.create(ROLE_BINDINGS, "default", binding(CLUSTER_ROLE_REF, [account]))
    assert stored.entry.obj["subjects"] == [{"kind": "ServiceAccount", "name": "robot"}]
    assert refused(store, CLUSTER_ROLE_BINDINGS, binding(CLUSTER_ROLE_REF, [account])) == [
        "subjects[0].namespace: Required value"]
    store.create(CLUSTER_ROLE_BINDINGS, "", binding(CLUSTER_ROLE_REF,
                                                    [{**account, "namespace": "team"}]))


@pytest.mark.parametrize("kind", ["User", "Group"])
def test_user_and_group_subjects_default_to_rbacs_group_and_take_no_other(
    store: Store, kind: str
) -> None:
    stored = store.create(ROLE_BINDINGS, "default",
                          binding(CLUSTER_ROLE_REF, [{"kind": kind, "name": "x"}])).entry.obj
    assert stored["subjects"] == [{"kind": kind, "name": "x", "apiGroup": RBAC}]
    assert refused(store, CLUSTER_ROLE_BINDINGS,
                   binding(CLUSTER_ROLE_REF, [{"kind": kind, "name": "x", "apiGroup": "v1"}])) == [
        'subjects[0].apiGroup: Unsupported value: "v1": supported values: '
        '"rbac.authorization.k8s.io"']


@pytest.mark.parametrize("rt", [ROLE_BINDINGS, CLUSTER_ROLE_BINDINGS])
def test_the_role_ref_cannot_change_but_subjects_can(store: Store, rt: ResourceType) -> None:
    ns = scope(rt)
    created = store.create(rt, ns, binding(CLUSTER_ROLE_REF, [JANE])).entry.obj
    changed = store.update(rt, ns, "b", {**created, "subjects": [JANE, {**JANE, "name": "john"}]})
    assert [s["name"] for s in changed.entry.obj["subjects"]] == ["jane", "john"]
    with pytest.raises(ApiError) as caught:
        store.update(rt, ns, "b", {**changed.entry.obj,
                                   "roleRef": {**CLUSTER_ROLE_REF, "name": "edit"}})
    assert caught.value.code == 422
    assert [cause.field for cause in caught.value.causes] == ["roleRef"]
    assert caught.value.causes[0].message.endswith(": cannot change roleRef")
    assert store.get(rt, ns, "b").obj["roleRef"] == CLUSTER_ROLE_REF


def test_a_changed_role_ref_is_printed_as_go_prints_it(store: Store) -> None:
    """The internal RoleRef has no String(): %#v, as kubectl shows it."""
    created = store.create(ROLE_BINDINGS, "default", binding(CLUSTER_ROLE_REF, [JANE])).entry.obj
    with pytest.raises(ApiError) as caught:
        store.update(ROLE_BINDINGS, "default", "b",
                     {**created, "roleRef": {**CLUSTER_ROLE_REF, "name": "edit"}})
    assert caught.value.message == (
        'RoleBinding.rbac.authorization.k8s.io "b" is invalid: roleRef: Invalid value: '
        'rbac.RoleRef{APIGroup:"rbac.authorization.k8s.io", Kind:"ClusterRole", Name:"edit"}: '
        "cannot change roleRef")
