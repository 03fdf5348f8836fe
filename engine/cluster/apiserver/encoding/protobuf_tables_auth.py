"""Field tables of the service account, token, access review and RBAC messages.

`kubectl create serviceaccount|token|role|clusterrole|rolebinding|clusterrolebinding`
and `kubectl auth can-i` (with or without `--list`) send their bodies as
`application/vnd.kubernetes.protobuf` and never retry as JSON, so without these
tables the embedded server could only refuse those commands with 415. They follow
the conventions of `protobuf_tables` and reuse its meta/v1 tables; `KINDS` here
joins `protobuf_tables.KINDS` in the decoder's lookup.

Numbers and names come from k8s.io/api and k8s.io/apimachinery's generated.proto
(v0.32 to v0.33 and master agree), `keep_zero` from the json tags of their
types.go. Go writes `null` for a nil slice or pointer that lacks `omitempty`
(`rules`, `verbs`, `audiences`, `expirationSeconds` ...); the decoder leaves
those out, as it does the zero time.
"""

from __future__ import annotations

from collections.abc import Mapping

from engine.cluster.apiserver.encoding.protobuf_tables import (
    OBJECT_META,
    OBJECT_REFERENCE,
    Table,
    boolean,
    integer,
    message,
    of_kind,
    string,
    strings,
)

# k8s.io/apimachinery/pkg/apis/meta/v1: LabelSelector. FieldSelectorRequirement has
# the same numbers, names and json tags as LabelSelectorRequirement.
SELECTOR_REQUIREMENT: Table = {
    1: string("key", keep_zero=True),
    2: string("operator", keep_zero=True),
    3: strings("values"),
}
LABEL_SELECTOR: Table = {
    1: of_kind("matchLabels", "string_map"),
    2: message("matchExpressions", SELECTOR_REQUIREMENT, repeated=True),
}

# k8s.io/api/core/v1: ServiceAccount. automountServiceAccountToken is a pointer.
SERVICE_ACCOUNT: Table = {
    1: message("metadata", OBJECT_META),
    2: message("secrets", OBJECT_REFERENCE, repeated=True),
    3: message("imagePullSecrets", {1: string("name")}, repeated=True),
    4: boolean("automountServiceAccountToken", keep_zero=True),
}

# k8s.io/api/authentication/v1: TokenRequest. expirationSeconds is a pointer, the
# status token has no omitempty; the bound object's `uid` is `uID` in the proto.
BOUND_OBJECT_REFERENCE: Table = {
    1: string("kind"),
    2: string("apiVersion"),
    3: string("name"),
    4: string("uid"),
}
TOKEN_REQUEST_SPEC: Table = {
    1: strings("audiences"),
    4: integer("expirationSeconds", keep_zero=True),
    3: message("boundObjectRef", BOUND_OBJECT_REFERENCE),
}
TOKEN_REQUEST_STATUS: Table = {
    1: string("token", keep_zero=True),
    2: of_kind("expirationTimestamp", "time"),
}
TOKEN_REQUEST: Table = {
    1: message("metadata", OBJECT_META),
    2: message("spec", TOKEN_REQUEST_SPEC),
    3: message("status", TOKEN_REQUEST_STATUS),
}

# k8s.io/api/authorization/v1: SelfSubjectAccessReview and SelfSubjectRulesReview.
# `allowed` and `incomplete` have no omitempty.
SELECTOR_ATTRIBUTES: Table = {
    1: string("rawSelector"),
    2: message("requirements", SELECTOR_REQUIREMENT, repeated=True),
}
RESOURCE_ATTRIBUTES: Table = {
    1: string("namespace"),
    2: string("verb"),
    3: string("group"),
    4: string("version"),
    5: string("resource"),
    6: string("subresource"),
    7: string("name"),
    8: message("fieldSelector", SELECTOR_ATTRIBUTES),
    9: message("labelSelector", SELECTOR_ATTRIBUTES),
}
SELF_SUBJECT_ACCESS_REVIEW_SPEC: Table = {
    1: message("resourceAttributes", RESOURCE_ATTRIBUTES),
    2: message("nonResourceAttributes", {1: string("path"), 2: string("verb")}),
}
SUBJECT_ACCESS_REVIEW_STATUS: Table = {
    1: boolean("allowed", keep_zero=True),
    4: boolean("denied"),
    2: string("reason"),
    3: string("evaluationError"),
}
SELF_SUBJECT_ACCESS_REVIEW: Table = {
    1: message("metadata", OBJECT_META),
    2: message("spec", SELF_SUBJECT_ACCESS_REVIEW_SPEC),
    3: message("status", SUBJECT_ACCESS_REVIEW_STATUS),
}
RESOURCE_RULE: Table = {
    1: strings("verbs"),
    2: strings("apiGroups"),
    3: strings("resources"),
    4: strings("resourceNames"),
}
NON_RESOURCE_RULE: Table = {1: strings("verbs"), 2: strings("nonResourceURLs")}
SUBJECT_RULES_REVIEW_STATUS: Table = {
    1: message("resourceRules", RESOURCE_RULE, repeated=True),
    2: message("nonResourceRules", NON_RESOURCE_RULE, repeated=True),
    3: boolean("incomplete", keep_zero=True),
    4: string("evaluationError"),
}
SELF_SUBJECT_RULES_REVIEW: Table = {
    1: message("metadata", OBJECT_META),
    2: message("spec", {1: string("namespace")}),
    3: message("status", SUBJECT_RULES_REVIEW_STATUS),
}

# k8s.io/api/rbac/v1. A subject's kind and name and every roleRef field have no
# omitempty; aggregationRule is a pointer.
POLICY_RULE: Table = {
    1: strings("verbs"),
    2: strings("apiGroups"),
    3: strings("resources"),
    4: strings("resourceNames"),
    5: strings("nonResourceURLs"),
}
SUBJECT: Table = {
    1: string("kind", keep_zero=True),
    2: string("apiGroup"),
    3: string("name", keep_zero=True),
    4: string("namespace"),
}
ROLE_REF: Table = {
    1: string("apiGroup", keep_zero=True),
    2: string("kind", keep_zero=True),
    3: string("name", keep_zero=True),
}
ROLE: Table = {
    1: message("metadata", OBJECT_META),
    2: message("rules", POLICY_RULE, repeated=True),
}
CLUSTER_ROLE: Table = {
    **ROLE,
    3: message(
        "aggregationRule", {1: message("clusterRoleSelectors", LABEL_SELECTOR, repeated=True)}
    ),
}
ROLE_BINDING: Table = {
    1: message("metadata", OBJECT_META),
    2: message("subjects", SUBJECT, repeated=True),
    3: message("roleRef", ROLE_REF),
}

# k8s.io/api/authentication/v1: SelfSubjectReview (`kubectl auth whoami`). Only its metadata
# is ever sent; the status (a UserInfo) is the answer.
SELF_SUBJECT_REVIEW: Table = {1: message("metadata", OBJECT_META)}

KINDS: Mapping[tuple[str, str], Table] = {
    ("v1", "ServiceAccount"): SERVICE_ACCOUNT,
    ("authentication.k8s.io/v1", "TokenRequest"): TOKEN_REQUEST,
    ("authentication.k8s.io/v1", "SelfSubjectReview"): SELF_SUBJECT_REVIEW,
    ("authorization.k8s.io/v1", "SelfSubjectAccessReview"): SELF_SUBJECT_ACCESS_REVIEW,
    ("authorization.k8s.io/v1", "SelfSubjectRulesReview"): SELF_SUBJECT_RULES_REVIEW,
    ("rbac.authorization.k8s.io/v1", "Role"): ROLE,
    ("rbac.authorization.k8s.io/v1", "ClusterRole"): CLUSTER_ROLE,
    ("rbac.authorization.k8s.io/v1", "RoleBinding"): ROLE_BINDING,
    ("rbac.authorization.k8s.io/v1", "ClusterRoleBinding"): ROLE_BINDING,
}
