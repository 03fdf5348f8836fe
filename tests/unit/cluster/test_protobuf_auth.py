"""Decoding the protobuf bodies of kubectl's service account, token, can-i and RBAC commands.

Each body is built field by field as kubectl 1.32 sends it: Go's generated
marshallers write every non-pointer string, integer and bool, zero or not, in
field-number order, and leave nil pointers and empty lists out. The builders
were checked byte for byte against bodies kubectl 1.32.4 sent for the commands
in the test names. `--save-config` makes kubectl store Go's own JSON of the
object in an annotation; those strings are copied verbatim from the captures.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

import pytest

from engine.cluster.apiserver.encoding import protobuf, protobuf_tables, protobuf_tables_auth
from engine.cluster.apiserver.encoding.protobuf import UnsupportedKindError, decode_request
from tests.unit.cluster.test_protobuf import entry, envelope, ld, num

LAST_APPLIED = "kubectl.kubernetes.io/last-applied-configuration"
AUTHN = "authentication.k8s.io/v1"
AUTHZ = "authorization.k8s.io/v1"
RBAC = "rbac.authorization.k8s.io/v1"
RBAC_GROUP = "rbac.authorization.k8s.io"


@pytest.fixture(autouse=True)
def _auth_kinds(monkeypatch: pytest.MonkeyPatch) -> None:
    # What protobuf.KINDS holds once protobuf_tables_auth.KINDS is merged in.
    monkeypatch.setattr(protobuf, "KINDS", {**protobuf_tables.KINDS, **protobuf_tables_auth.KINDS})


def meta(name: str = "", namespace: str = "", last_applied: str = "") -> bytes:
    """ObjectMeta as Go writes it: every plain string, generation 0, the zero creationTimestamp."""
    out = ld(1, name) + ld(2, "") + ld(3, namespace) + ld(4, "") + ld(5, "") + ld(6, "")
    out += num(7, 0) + ld(8, b"")
    return out + (entry(12, LAST_APPLIED, last_applied) if last_applied else b"")


def rule(
    verbs: Sequence[str],
    groups: Sequence[str] = (),
    resources: Sequence[str] = (),
    names: Sequence[str] = (),
    urls: Sequence[str] = (),
) -> bytes:
    lists = (verbs, groups, resources, names, urls)
    return b"".join(ld(number, item) for number, items in enumerate(lists, 1) for item in items)


def subject(kind: str, name: str, *, api_group: str = "", namespace: str = "") -> bytes:
    return ld(1, kind) + ld(2, api_group) + ld(3, name) + ld(4, namespace)


def role_ref(kind: str, name: str) -> bytes:
    return ld(1, RBAC_GROUP) + ld(2, kind) + ld(3, name)


def resource_attributes(
    namespace: str,
    verb: str,
    resource: str,
    *,
    group: str = "",
    subresource: str = "",
    name: str = "",
    selectors: bytes = b"",
) -> bytes:
    fields = (namespace, verb, group, "", resource, subresource, name)
    return b"".join(ld(number, value) for number, value in enumerate(fields, 1)) + selectors


# kubectl sends an empty SubjectAccessReviewStatus: allowed, reason, evaluationError, denied.
ACCESS_STATUS = num(1, 0) + ld(2, "") + ld(3, "") + num(4, 0)


def access_review(spec: bytes, status: bytes = ACCESS_STATUS) -> bytes:
    return envelope(AUTHZ, "SelfSubjectAccessReview", ld(1, meta()) + ld(2, spec) + ld(3, status))


def token_request(spec: bytes) -> bytes:
    status = ld(1, "") + ld(2, b"")
    return envelope(AUTHN, "TokenRequest", ld(1, meta()) + ld(2, spec) + ld(3, status))


def without_last_applied(obj: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    """The decoded object without its annotation, and Go's JSON from it minus the null time."""
    go_json = json.loads(obj["metadata"].pop("annotations").pop(LAST_APPLIED))
    assert go_json["metadata"].pop("creationTimestamp") is None
    return obj, go_json


# core/v1 ServiceAccount


def test_kubectl_create_serviceaccount() -> None:
    body = envelope("v1", "ServiceAccount", ld(1, meta("builder", "team")))
    assert decode_request(body) == {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "builder", "namespace": "team"},
    }


def test_serviceaccount_references_and_a_false_automount_pointer() -> None:
    secret = ld(1, "Secret") + ld(2, "team") + ld(3, "builder-token") + ld(4, "")
    secret += ld(5, "v1") + ld(6, "") + ld(7, "")
    raw = (
        ld(1, meta("builder", "team"))
        + ld(2, secret)
        + ld(3, ld(1, "registry"))
        + ld(3, ld(1, ""))
        + num(4, 0)
    )
    assert decode_request(envelope("v1", "ServiceAccount", raw)) == {
        "apiVersion": "v1",
        "kind": "ServiceAccount",
        "metadata": {"name": "builder", "namespace": "team"},
        "secrets": [
            {"kind": "Secret", "namespace": "team", "name": "builder-token", "apiVersion": "v1"}
        ],
        "imagePullSecrets": [{"name": "registry"}, {}],
        "automountServiceAccountToken": False,
    }


# authentication.k8s.io/v1 TokenRequest


def test_kubectl_create_token_without_flags() -> None:
    # Go's JSON holds null audiences, expirationSeconds, boundObjectRef and
    # expirationTimestamp; nulls are left out as the zero time is elsewhere.
    assert decode_request(token_request(b"")) == {
        "apiVersion": AUTHN,
        "kind": "TokenRequest",
        "metadata": {},
        "spec": {},
        "status": {"token": ""},
    }


def test_kubectl_create_token_with_audiences_duration_and_bound_pod() -> None:
    bound = ld(1, "Pod") + ld(2, "v1") + ld(3, "runner-0")
    bound += ld(4, "4a7e0b1c-0000-4000-8000-000000000001")
    spec = ld(1, "https://vault.example.com") + ld(1, "api") + ld(3, bound) + num(4, 600)
    assert decode_request(token_request(spec))["spec"] == {
        "audiences": ["https://vault.example.com", "api"],
        "expirationSeconds": 600,
        "boundObjectRef": {
            "kind": "Pod",
            "apiVersion": "v1",
            "name": "runner-0",
            "uid": "4a7e0b1c-0000-4000-8000-000000000001",
        },
    }


def test_kubectl_create_token_bound_to_a_secret_leaves_the_empty_uid_out() -> None:
    spec = ld(3, ld(1, "Secret") + ld(2, "v1") + ld(3, "s1") + ld(4, ""))
    assert decode_request(token_request(spec))["spec"] == {
        "boundObjectRef": {"kind": "Secret", "apiVersion": "v1", "name": "s1"}
    }


def test_token_request_status_and_a_zero_expiration_pointer() -> None:
    status = ld(1, "eyJhbGciOi") + ld(2, num(1, 1_700_000_600))
    raw = ld(1, meta()) + ld(2, num(4, 0)) + ld(3, status)
    obj = decode_request(envelope(AUTHN, "TokenRequest", raw))
    assert obj["spec"] == {"expirationSeconds": 0}
    assert obj["status"] == {"token": "eyJhbGciOi", "expirationTimestamp": "2023-11-14T22:23:20Z"}


# authorization.k8s.io/v1 SelfSubjectAccessReview and SelfSubjectRulesReview


def test_kubectl_auth_can_i_create_pods_in_a_namespace() -> None:
    body = access_review(ld(1, resource_attributes("team", "create", "pods")))
    assert decode_request(body) == {
        "apiVersion": AUTHZ,
        "kind": "SelfSubjectAccessReview",
        "metadata": {},
        "spec": {"resourceAttributes": {"namespace": "team", "verb": "create", "resource": "pods"}},
        "status": {"allowed": False},
    }


def test_kubectl_auth_can_i_a_named_subresource_of_a_grouped_resource() -> None:
    # kubectl auth can-i update deployments.apps/web --subresource=scale -n team
    attributes = resource_attributes(
        "team", "update", "deployments", group="apps", subresource="scale", name="web"
    )
    assert decode_request(access_review(ld(1, attributes)))["spec"] == {
        "resourceAttributes": {
            "namespace": "team",
            "verb": "update",
            "group": "apps",
            "resource": "deployments",
            "subresource": "scale",
            "name": "web",
        }
    }


def test_kubectl_auth_can_i_in_all_namespaces_leaves_the_namespace_out() -> None:
    body = access_review(ld(1, resource_attributes("", "list", "secrets")))
    assert decode_request(body)["spec"] == {
        "resourceAttributes": {"verb": "list", "resource": "secrets"}
    }


def test_kubectl_auth_can_i_a_non_resource_url() -> None:
    body = access_review(ld(2, ld(1, "/logs/kubelet") + ld(2, "get")))
    assert decode_request(body)["spec"] == {
        "nonResourceAttributes": {"path": "/logs/kubelet", "verb": "get"}
    }


def test_access_review_selectors_and_an_answered_status() -> None:
    # client-go 1.31+ may send field and label selectors; the server answers denied.
    exists = ld(1, "tier") + ld(2, "Exists")
    label_in = ld(1, "app") + ld(2, "In") + ld(3, "web") + ld(3, "api")
    field_eq = ld(1, "spec.nodeName") + ld(2, "In") + ld(3, "node-1")
    selectors = ld(8, ld(1, "") + ld(2, field_eq))
    selectors += ld(9, ld(1, "app in (web,api)") + ld(2, label_in) + ld(2, exists))
    attributes = resource_attributes("team", "list", "pods", selectors=selectors)
    status = num(1, 0) + ld(2, "no RBAC policy matched") + ld(3, "") + num(4, 1)
    obj = decode_request(access_review(ld(1, attributes), status))
    assert obj["spec"]["resourceAttributes"] == {
        "namespace": "team",
        "verb": "list",
        "resource": "pods",
        "fieldSelector": {
            "requirements": [{"key": "spec.nodeName", "operator": "In", "values": ["node-1"]}]
        },
        "labelSelector": {
            "rawSelector": "app in (web,api)",
            "requirements": [
                {"key": "app", "operator": "In", "values": ["web", "api"]},
                {"key": "tier", "operator": "Exists"},
            ],
        },
    }
    assert obj["status"] == {"allowed": False, "denied": True, "reason": "no RBAC policy matched"}


def test_kubectl_auth_can_i_list() -> None:
    raw = ld(1, meta()) + ld(2, ld(1, "team")) + ld(3, num(3, 0) + ld(4, ""))
    assert decode_request(envelope(AUTHZ, "SelfSubjectRulesReview", raw)) == {
        "apiVersion": AUTHZ,
        "kind": "SelfSubjectRulesReview",
        "metadata": {},
        "spec": {"namespace": "team"},
        "status": {"incomplete": False},
    }


def test_rules_review_status_with_rules() -> None:
    resource_rule = ld(1, "get") + ld(2, "") + ld(3, "pods") + ld(4, "web")
    status = (
        ld(1, resource_rule)
        + ld(2, ld(1, "get") + ld(2, "/healthz"))
        + num(3, 1)
        + ld(4, "webhook authorizer unavailable")
    )
    raw = ld(1, meta()) + ld(2, ld(1, "")) + ld(3, status)
    obj = decode_request(envelope(AUTHZ, "SelfSubjectRulesReview", raw))
    assert obj["spec"] == {}
    assert obj["status"] == {
        "resourceRules": [
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"], "resourceNames": ["web"]}
        ],
        "nonResourceRules": [{"verbs": ["get"], "nonResourceURLs": ["/healthz"]}],
        "incomplete": True,
        "evaluationError": "webhook authorizer unavailable",
    }


# rbac.authorization.k8s.io/v1


def test_kubectl_create_role_with_resource_names() -> None:
    # kubectl create role reader --verb=get,list --verb=watch
    #   --resource=pods,deployments.apps --resource-name=web -n team
    verbs = ["get", "list", "watch"]
    raw = (
        ld(1, meta("reader", "team"))
        + ld(2, rule(verbs, [""], ["pods"], ["web"]))
        + ld(2, rule(verbs, ["apps"], ["deployments"], ["web"]))
    )
    assert decode_request(envelope(RBAC, "Role", raw)) == {
        "apiVersion": RBAC,
        "kind": "Role",
        "metadata": {"name": "reader", "namespace": "team"},
        "rules": [
            {"verbs": verbs, "apiGroups": [""], "resources": ["pods"], "resourceNames": ["web"]},
            {
                "verbs": verbs,
                "apiGroups": ["apps"],
                "resources": ["deployments"],
                "resourceNames": ["web"],
            },
        ],
    }


def test_kubectl_create_clusterrole_with_a_non_resource_url() -> None:
    raw = (
        ld(1, meta("nodes-reader"))
        + ld(2, rule(["get"], [""], ["pods"]))
        + ld(2, rule(["get"], urls=["/logs/*"]))
    )
    assert decode_request(envelope(RBAC, "ClusterRole", raw)) == {
        "apiVersion": RBAC,
        "kind": "ClusterRole",
        "metadata": {"name": "nodes-reader"},
        "rules": [
            {"verbs": ["get"], "apiGroups": [""], "resources": ["pods"]},
            {"verbs": ["get"], "nonResourceURLs": ["/logs/*"]},
        ],
    }


def test_clusterrole_aggregation_rule_with_match_expressions() -> None:
    expression = ld(1, "tier") + ld(2, "NotIn") + ld(3, "db") + ld(3, "cache")
    selectors = ld(1, entry(1, "rbac.example.com/aggregate-to-view", "true"))
    selectors += ld(1, ld(2, expression) + ld(2, ld(1, "team") + ld(2, "Exists")))
    raw = ld(1, meta("view-plus")) + ld(3, selectors)
    assert decode_request(envelope(RBAC, "ClusterRole", raw))["aggregationRule"] == {
        "clusterRoleSelectors": [
            {"matchLabels": {"rbac.example.com/aggregate-to-view": "true"}},
            {
                "matchExpressions": [
                    {"key": "tier", "operator": "NotIn", "values": ["db", "cache"]},
                    {"key": "team", "operator": "Exists"},
                ]
            },
        ]
    }


def test_kubectl_create_rolebinding_for_a_user_a_group_and_a_service_account() -> None:
    # kubectl create rolebinding readers --role=reader --user=alice --group=devs
    #   --serviceaccount=team:builder -n team
    raw = (
        ld(1, meta("readers", "team"))
        + ld(2, subject("User", "alice", api_group=RBAC_GROUP))
        + ld(2, subject("Group", "devs", api_group=RBAC_GROUP))
        + ld(2, subject("ServiceAccount", "builder", namespace="team"))
        + ld(3, role_ref("Role", "reader"))
    )
    assert decode_request(envelope(RBAC, "RoleBinding", raw)) == {
        "apiVersion": RBAC,
        "kind": "RoleBinding",
        "metadata": {"name": "readers", "namespace": "team"},
        "subjects": [
            {"kind": "User", "apiGroup": RBAC_GROUP, "name": "alice"},
            {"kind": "Group", "apiGroup": RBAC_GROUP, "name": "devs"},
            {"kind": "ServiceAccount", "name": "builder", "namespace": "team"},
        ],
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "Role", "name": "reader"},
    }


def test_kubectl_create_clusterrolebinding() -> None:
    raw = (
        ld(1, meta("viewers"))
        + ld(2, subject("User", "bob", api_group=RBAC_GROUP))
        + ld(2, subject("ServiceAccount", "default", namespace="kube-system"))
        + ld(3, role_ref("ClusterRole", "view"))
    )
    assert decode_request(envelope(RBAC, "ClusterRoleBinding", raw)) == {
        "apiVersion": RBAC,
        "kind": "ClusterRoleBinding",
        "metadata": {"name": "viewers"},
        "subjects": [
            {"kind": "User", "apiGroup": RBAC_GROUP, "name": "bob"},
            {"kind": "ServiceAccount", "name": "default", "namespace": "kube-system"},
        ],
        "roleRef": {"apiGroup": RBAC_GROUP, "kind": "ClusterRole", "name": "view"},
    }


def test_binding_keeps_the_empty_fields_go_writes_without_omitempty() -> None:
    raw = ld(1, meta("b")) + ld(2, subject("", "")) + ld(3, ld(1, "") + ld(2, "") + ld(3, ""))
    obj = decode_request(envelope(RBAC, "RoleBinding", raw))
    assert obj["subjects"] == [{"kind": "", "name": ""}]
    assert obj["roleRef"] == {"apiGroup": "", "kind": "", "name": ""}


# Go's own JSON of the same objects, stored by kubectl --save-config

SAVE_CONFIG = {
    "create serviceaccount deployer -n team": (
        "v1",
        "ServiceAccount",
        "deployer",
        "team",
        b"",
        '{"kind":"ServiceAccount","apiVersion":"v1","metadata":{"name":"deployer",'
        '"namespace":"team","creationTimestamp":null}}\n',
    ),
    "create role pod-reader --verb=get --resource=pods -n team": (
        RBAC,
        "Role",
        "pod-reader",
        "team",
        ld(2, rule(["get"], [""], ["pods"])),
        '{"kind":"Role","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":'
        '"pod-reader","namespace":"team","creationTimestamp":null},"rules":[{"verbs":["get"],'
        '"apiGroups":[""],"resources":["pods"]}]}\n',
    ),
    "create clusterrole nr --verb=get,post --non-resource-url=/healthz,/logs/*": (
        RBAC,
        "ClusterRole",
        "nr",
        "",
        ld(2, rule(["get", "post"], urls=["/healthz", "/logs/*"])),
        '{"kind":"ClusterRole","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":'
        '"nr","creationTimestamp":null},"rules":[{"verbs":["get","post"],"nonResourceURLs":'
        '["/healthz","/logs/*"]}]}\n',
    ),
    "create rolebinding readers --role=reader --user --group --serviceaccount -n team": (
        RBAC,
        "RoleBinding",
        "readers",
        "team",
        ld(2, subject("User", "alice", api_group=RBAC_GROUP))
        + ld(2, subject("Group", "devs", api_group=RBAC_GROUP))
        + ld(2, subject("ServiceAccount", "builder", namespace="team"))
        + ld(3, role_ref("Role", "reader")),
        '{"kind":"RoleBinding","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":'
        '"readers","namespace":"team","creationTimestamp":null},"subjects":[{"kind":"User",'
        '"apiGroup":"rbac.authorization.k8s.io","name":"alice"},{"kind":"Group","apiGroup":'
        '"rbac.authorization.k8s.io","name":"devs"},{"kind":"ServiceAccount","name":"builder",'
        '"namespace":"team"}],"roleRef":{"apiGroup":"rbac.authorization.k8s.io","kind":"Role",'
        '"name":"reader"}}\n',
    ),
    "create clusterrolebinding b2 --clusterrole=edit --group=ops": (
        RBAC,
        "ClusterRoleBinding",
        "b2",
        "",
        ld(2, subject("Group", "ops", api_group=RBAC_GROUP))
        + ld(3, role_ref("ClusterRole", "edit")),
        '{"kind":"ClusterRoleBinding","apiVersion":"rbac.authorization.k8s.io/v1","metadata":'
        '{"name":"b2","creationTimestamp":null},"subjects":[{"kind":"Group","apiGroup":'
        '"rbac.authorization.k8s.io","name":"ops"}],"roleRef":{"apiGroup":'
        '"rbac.authorization.k8s.io","kind":"ClusterRole","name":"edit"}}\n',
    ),
}


@pytest.mark.parametrize("command", list(SAVE_CONFIG))
def test_decoded_object_equals_the_json_go_wrote_for_it(command: str) -> None:
    api_version, kind, name, namespace, rest, go_json = SAVE_CONFIG[command]
    body = envelope(api_version, kind, ld(1, meta(name, namespace, go_json)) + rest)
    obj, expected = without_last_applied(decode_request(body))
    assert obj == expected


def test_aggregated_clusterrole_differs_from_go_only_by_its_null_rules() -> None:
    # kubectl create clusterrole monitoring
    #   --aggregation-rule=rbac.example.com/aggregate-to-monitoring=true,tier=web --save-config
    go_json = (
        '{"kind":"ClusterRole","apiVersion":"rbac.authorization.k8s.io/v1","metadata":{"name":'
        '"monitoring","creationTimestamp":null},"rules":null,"aggregationRule":'
        '{"clusterRoleSelectors":[{"matchLabels":{"rbac.example.com/aggregate-to-monitoring":'
        '"true","tier":"web"}}]}}\n'
    )
    labels = entry(1, "rbac.example.com/aggregate-to-monitoring", "true") + entry(1, "tier", "web")
    raw = ld(1, meta("monitoring", "", go_json)) + ld(3, ld(1, labels))
    obj, expected = without_last_applied(decode_request(envelope(RBAC, "ClusterRole", raw)))
    assert expected.pop("rules") is None
    assert obj == expected


# group versions


@pytest.mark.parametrize(
    ("api_version", "kind"),
    [
        ("v1", "Role"),
        ("rbac.authorization.k8s.io/v1beta1", "ClusterRoleBinding"),
        ("authentication.k8s.io/v1beta1", "TokenRequest"),
        ("authorization.k8s.io/v1", "SubjectAccessReview"),
        ("rbac.authorization.k8s.io/v1", "ServiceAccount"),
    ],
)
def test_a_kind_is_only_known_in_its_own_group_version(api_version: str, kind: str) -> None:
    with pytest.raises(UnsupportedKindError, match=f"kind {kind} "):
        decode_request(envelope(api_version, kind, ld(1, meta("x"))))
