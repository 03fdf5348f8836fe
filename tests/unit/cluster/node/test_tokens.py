"""The TokenRequests the node sends for a pod's serviceAccountToken sources (bound to the
pod, per audience and expiry, once each) and what a refusal becomes."""

from __future__ import annotations

from typing import Any

from engine.cluster.node.config.tokens import TokenFailure, TokenRef, request_tokens, token_refs
from engine.kube.errors import ApiError, NotFound
from engine.kube.resources import Resource


def pod(*sources: dict[str, Any], account: str | None = "runner") -> dict[str, Any]:
    spec: dict[str, Any] = {"volumes": [
        {"name": "a", "projected": {"sources": list(sources)}},
        {"name": "b", "projected": {"sources": list(sources)}},
        {"name": "c", "emptyDir": {}}]}
    if account:
        spec["serviceAccountName"] = account
    return {"metadata": {"name": "w-0", "namespace": "team", "uid": "u1"}, "spec": spec}


class FakeApi:
    def __init__(self, refuse: ApiError | None = None) -> None:
        self.posts: list[tuple[str, Any]] = []
        self.refuse = refuse

    def create_subresource(self, res: Resource, name: str, subresource: str, body: Any,
                           namespace: str) -> dict[str, Any]:
        self.posts.append((res.path(namespace, name, subresource), body))
        if self.refuse:
            raise self.refuse
        return {"status": {"token": f"token-{len(self.posts)}"}}


KUBE = {"serviceAccountToken": {"expirationSeconds": 3607, "path": "token"}}
VAULT = {"serviceAccountToken": {"audience": "vault", "path": "vault"}}


def test_each_distinct_source_is_asked_once() -> None:
    assert token_refs(pod(KUBE, VAULT, {"configMap": {"name": "x"}})) == [
        TokenRef("runner", "", 3607), TokenRef("runner", "vault", 3600)]
    assert token_refs(pod(KUBE, account=None)) == [TokenRef("default", "", 3607)]


def test_the_request_is_bound_to_the_pod_with_the_sources_audience() -> None:
    api = FakeApi()
    tokens = request_tokens(api, pod(KUBE, VAULT))  # type: ignore[arg-type]
    path = "/api/v1/namespaces/team/serviceaccounts/runner/token"
    bound = {"apiVersion": "v1", "kind": "Pod", "name": "w-0", "uid": "u1"}
    assert api.posts == [
        (path, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": 3607, "boundObjectRef": bound}}),
        (path, {"apiVersion": "authentication.k8s.io/v1", "kind": "TokenRequest",
                "spec": {"expirationSeconds": 3600, "boundObjectRef": bound,
                         "audiences": ["vault"]}}),
    ]
    assert tokens == {TokenRef("runner", "", 3607): "token-1",
                      TokenRef("runner", "vault", 3600): "token-2"}


def test_a_refusal_becomes_the_kubelets_message() -> None:
    api = FakeApi(NotFound(404, "NotFound", 'serviceaccounts "runner" not found', {}))
    assert request_tokens(api, pod(KUBE)) == {  # type: ignore[arg-type]
        TokenRef("runner", "", 3607): TokenFailure(
            'failed to fetch token: serviceaccounts "runner" not found')}


def test_a_pod_without_token_sources_asks_nothing() -> None:
    api = FakeApi()
    assert request_tokens(api, pod({"configMap": {"name": "x"}})) == {}  # type: ignore[arg-type]
    assert api.posts == []
