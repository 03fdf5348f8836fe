"""request_info(): the verb and resource attributes authorization decides on, from method and
path alone, as kube-apiserver's RequestInfoFactory derives them
(staging/src/k8s.io/apiserver/pkg/endpoints/request/requestinfo.go)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st
from multidict import MultiDict

from engine.cluster.apiserver.endpoints.params import flag
from engine.cluster.apiserver.endpoints.request_info import RequestInfo, request_info


def info(method: str, path: str, **query: str) -> RequestInfo:
    return request_info(method, path, MultiDict(query))


def attributes(found: RequestInfo) -> tuple[str, str, str, str, str, str, str]:
    """(verb, group, version, namespace, resource, subresource, name)."""
    return (found.verb, found.api_group, found.api_version, found.namespace, found.resource,
            found.subresource, found.name)


# --- resource requests ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("GET", "/api/v1/namespaces/ns/pods/web", ("get", "", "v1", "ns", "pods", "", "web")),
        ("GET", "/api/v1/namespaces/ns/pods", ("list", "", "v1", "ns", "pods", "", "")),
        ("GET", "/api/v1/pods", ("list", "", "v1", "", "pods", "", "")),
        ("GET", "/api/v1/nodes/n1", ("get", "", "v1", "", "nodes", "", "n1")),
        ("POST", "/api/v1/namespaces/ns/configmaps", ("create", "", "v1", "ns", "configmaps", "",
                                                       "")),
        ("PUT", "/api/v1/namespaces/ns/configmaps/c", ("update", "", "v1", "ns", "configmaps", "",
                                                        "c")),
        ("PATCH", "/api/v1/namespaces/ns/configmaps/c", ("patch", "", "v1", "ns", "configmaps",
                                                          "", "c")),
        ("DELETE", "/api/v1/namespaces/ns/configmaps/c", ("delete", "", "v1", "ns", "configmaps",
                                                           "", "c")),
        ("GET", "/apis/apps/v1/namespaces/ns/deployments/d",
         ("get", "apps", "v1", "ns", "deployments", "", "d")),
        ("GET", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases",
         ("list", "coordination.k8s.io", "v1", "kube-node-lease", "leases", "", "")),
        ("GET", "/apis/rbac.authorization.k8s.io/v1/clusterroles/view",
         ("get", "rbac.authorization.k8s.io", "v1", "", "clusterroles", "", "view")),
        ("POST", "/apis/authorization.k8s.io/v1/selfsubjectaccessreviews",
         ("create", "authorization.k8s.io", "v1", "", "selfsubjectaccessreviews", "", "")),
    ],
)
def test_core_and_group_resources_namespaced_and_cluster_scoped(
    method: str, path: str, expected: tuple[str, ...]
) -> None:
    found = info(method, path)
    assert found.resource_request
    assert found.path == path
    assert attributes(found) == expected


def test_a_namespace_itself_is_the_namespaces_resource_named_and_in_itself() -> None:
    assert attributes(info("GET", "/api/v1/namespaces/team")) == (
        "get", "", "v1", "team", "namespaces", "", "team")
    assert attributes(info("DELETE", "/api/v1/namespaces/team")) == (
        "delete", "", "v1", "team", "namespaces", "", "team")
    assert attributes(info("GET", "/api/v1/namespaces")) == (
        "list", "", "v1", "", "namespaces", "", "")
    assert attributes(info("POST", "/api/v1/namespaces")) == (
        "create", "", "v1", "", "namespaces", "", "")


@pytest.mark.parametrize("subresource", ["status", "finalize"])
def test_status_and_finalize_are_subresources_of_the_namespace(subresource: str) -> None:
    assert attributes(info("PUT", f"/api/v1/namespaces/team/{subresource}")) == (
        "update", "", "v1", "team", "namespaces", subresource, "team")


@pytest.mark.parametrize(
    ("method", "path", "expected"),
    [
        ("GET", "/api/v1/namespaces/ns/pods/web/log", ("get", "ns", "pods", "log", "web")),
        ("POST", "/api/v1/namespaces/ns/serviceaccounts/robot/token",
         ("create", "ns", "serviceaccounts", "token", "robot")),
        ("PUT", "/api/v1/namespaces/ns/pods/web/status", ("update", "ns", "pods", "status",
                                                          "web")),
        ("POST", "/api/v1/namespaces/ns/pods/web/binding", ("create", "ns", "pods", "binding",
                                                            "web")),
        ("PATCH", "/apis/apps/v1/namespaces/ns/deployments/d/scale",
         ("patch", "ns", "deployments", "scale", "d")),
    ],
)
def test_subresources(method: str, path: str, expected: tuple[str, ...]) -> None:
    found = info(method, path)
    assert (found.verb, found.namespace, found.resource, found.subresource, found.name) == expected
    assert found.resource_and_subresource == f"{expected[2]}/{expected[3]}"


def test_watch_by_query_or_by_the_watch_path_prefix() -> None:
    assert info("GET", "/api/v1/namespaces/ns/pods", watch="true").verb == "watch"
    assert info("GET", "/api/v1/namespaces/ns/pods", watch="1").verb == "watch"
    assert info("GET", "/api/v1/namespaces/ns/pods", watch="false").verb == "list"
    assert info("GET", "/api/v1/namespaces/ns/pods", watch="0").verb == "list"
    prefixed = info("GET", "/api/v1/watch/namespaces/ns/pods")
    assert attributes(prefixed) == ("watch", "", "v1", "ns", "pods", "", "")
    assert attributes(info("GET", "/apis/apps/v1/watch/deployments")) == (
        "watch", "apps", "v1", "", "deployments", "", "")


def test_a_named_get_stays_get_whatever_the_watch_query_says() -> None:
    assert info("GET", "/api/v1/namespaces/ns/pods/web", watch="true").verb == "get"


@pytest.mark.parametrize(
    "value",
    ["1", "TRUE", "true", "True", "t", "T"],
)
def test_every_watch_value_the_handler_serves_as_a_watch_is_authorized_as_one(value: str) -> None:
    assert flag(MultiDict(watch=value), "watch")
    assert info("GET", "/api/v1/namespaces/ns/pods", watch=value).verb == "watch"


@pytest.mark.parametrize("value", ["yes", "on", "", "f"])
def test_any_watch_value_but_false_or_zero_is_a_watch_as_upstream(value: str) -> None:
    """Convert_Slice_string_To_bool, which both the request info and the handler read."""
    assert info("GET", "/api/v1/namespaces/ns/pods", watch=value).verb == "watch"
    assert info("GET", "/api/v1/namespaces/ns/pods", watch="FALSE").verb == "list"


def test_delete_without_a_name_is_deletecollection() -> None:
    assert attributes(info("DELETE", "/api/v1/namespaces/ns/pods")) == (
        "deletecollection", "", "v1", "ns", "pods", "", "")
    assert info("DELETE", "/apis/apps/v1/namespaces/ns/deployments").verb == "deletecollection"
    assert info("DELETE", "/api/v1/namespaces/ns/pods/web").verb == "delete"


def test_head_is_get_and_list() -> None:
    assert info("HEAD", "/api/v1/namespaces/ns/pods/web").verb == "get"
    assert info("HEAD", "/api/v1/namespaces/ns/pods").verb == "list"


def test_a_list_or_watch_of_one_name_by_field_selector_is_authorized_as_that_name() -> None:
    listed = info("GET", "/api/v1/namespaces/ns/secrets", fieldSelector="metadata.name=token")
    assert (listed.verb, listed.name) == ("list", "token")
    watched = info("GET", "/api/v1/namespaces/ns/secrets", watch="true",
                   fieldSelector="metadata.name==token")
    assert (watched.verb, watched.name) == ("watch", "token")
    both = info("GET", "/api/v1/namespaces/ns/secrets",
                fieldSelector="metadata.namespace=ns,metadata.name=token")
    assert both.name == "token"


def test_a_field_selector_that_does_not_pin_one_name_names_nothing() -> None:
    for selector in ("metadata.name!=token", "status.phase=Running", "metadata.name", ""):
        assert info("GET", "/api/v1/namespaces/ns/pods", fieldSelector=selector).name == ""
    # Only a list or watch is narrowed; a collection delete is not.
    assert info("DELETE", "/api/v1/namespaces/ns/pods",
                fieldSelector="metadata.name=web").name == ""


def test_a_single_object_watch_path_keeps_its_name() -> None:
    single = info("GET", "/api/v1/watch/namespaces/ns/pods/web")
    assert (single.verb, single.name) == ("watch", "web")


def test_the_watch_path_prefix_ignores_field_selectors() -> None:
    selected = info("GET", "/api/v1/watch/namespaces/ns/pods", fieldSelector="metadata.name=web")
    assert (selected.verb, selected.name) == ("watch", "")


def test_a_field_selected_name_must_be_a_path_segment() -> None:
    assert info("GET", "/api/v1/namespaces/ns/pods", fieldSelector="metadata.name=a/b").name == ""


def test_an_unknown_method_on_a_resource_path_is_a_resource_request_without_verb() -> None:
    found = info("OPTIONS", "/api/v1/namespaces/ns/pods")
    assert (found.resource_request, found.verb, found.resource) == (True, "", "pods")


# --- non-resource requests -----------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/metrics", "/api", "/api/v1", "/apis", "/apis/apps", "/apis/apps/v1", "/version",
     "/openapi/v2", "/openapi/v3/apis/apps/v1", "/healthz", "/livez", "/readyz", "/"],
)
def test_non_resource_paths_keep_the_path_and_the_lowercase_method(path: str) -> None:
    found = info("GET", path)
    assert found == RequestInfo(verb="get", path=path)
    assert not found.resource_request
    assert info("POST", path).verb == "post"
    assert info("HEAD", path).verb == "head"
    assert info("DELETE", path).verb == "delete"


# --- property: a plain namespaced object path round-trips ----------------------------------

_LABEL = st.from_regex(r"\A[a-z0-9]([a-z0-9-]{0,30}[a-z0-9])?\Z", fullmatch=True)
# "status" and "finalize" right after a namespace name are the namespace's own subresources.
_RESOURCE = _LABEL.filter(
    lambda r: r not in ("namespaces", "watch", "proxy", "status", "finalize"))


@given(namespace=_LABEL, resource=_RESOURCE, name=_LABEL,
       method=st.sampled_from(["GET", "HEAD", "PUT", "PATCH", "DELETE", "POST"]))
def test_a_namespaced_object_path_round_trips(
    namespace: str, resource: str, name: str, method: str
) -> None:
    verbs = {"GET": "get", "HEAD": "get", "PUT": "update", "PATCH": "patch",
             "DELETE": "delete", "POST": "create"}
    path = f"/api/v1/namespaces/{namespace}/{resource}/{name}"
    assert request_info(method, path, MultiDict()) == RequestInfo(
        verb=verbs[method], path=path, resource_request=True, api_group="", api_version="v1",
        namespace=namespace, resource=resource, subresource="", name=name,
    )


@given(group=_LABEL.map(lambda label: f"{label}.example.com"), namespace=_LABEL,
       resource=_RESOURCE, name=_LABEL, subresource=_LABEL)
def test_a_group_subresource_path_round_trips(
    group: str, namespace: str, resource: str, name: str, subresource: str
) -> None:
    path = f"/apis/{group}/v1beta1/namespaces/{namespace}/{resource}/{name}/{subresource}"
    found = request_info("GET", path, MultiDict())
    assert attributes(found) == ("get", group, "v1beta1", namespace, resource, subresource, name)
