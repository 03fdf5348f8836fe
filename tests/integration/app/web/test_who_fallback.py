"""The web view where SelfSubjectReview cannot say who is looking: absent (404, Kubernetes
before 1.28) or not granted (403). An ordinary user still gets in (the token checked with
a SelfSubjectAccessReview instead, with no name to show), a token the server does not
accept still gets the login form, and nobody gets a 503."""

from __future__ import annotations

import html
from pathlib import Path

import pytest

from engine.app.web import WebOptions, serving_web_view
from engine.app.web.auth import UNKNOWN_USER
from engine.cluster.apiserver.endpoints.request_info import RequestInfo
from engine.cluster.apiserver.endpoints.serve import ServerOptions, running_apiserver
from engine.kube.client import KubeClient
from tests.integration.app.web.browsing import request
from tests.integration.refusing import Answer, Obj, Refusals, forbidden


def _absent(info: RequestInfo, body: Obj) -> tuple[int, Obj]:
    """kube-apiserver 1.27 (authentication.k8s.io/v1 has no selfsubjectreviews)."""
    return 404, {"kind": "Status", "apiVersion": "v1", "metadata": {}, "status": "Failure",
                 "message": "the server could not find the requested resource",
                 "reason": "NotFound", "details": {}, "code": 404}


def _not_granted(info: RequestInfo, body: Obj) -> tuple[int, Obj]:
    """A cluster whose `system:basic-user` no longer grants selfsubjectreviews."""
    return forbidden("selfsubjectreviews.authentication.k8s.io", "", (
        'User "nobody" cannot create resource "selfsubjectreviews" in API group '
        '"authentication.k8s.io" at the cluster scope'))


@pytest.mark.parametrize("answer", [_absent, _not_granted], ids=["404", "403"])
def test_an_ordinary_user_gets_in_without_selfsubjectreview(answer: Answer,
                                                            tmp_path: Path) -> None:
    users = tmp_path / "users.csv"
    users.write_text("nobody-secret,nobody,u-1\n")
    refusals = Refusals()
    refusals.refuse("create", "selfsubjectreviews", "", answer)
    options = ServerOptions(faults=refusals, token_auth_file=users)
    with running_apiserver(tls=True, options=options) as server:
        client = KubeClient.from_kubeconfig(server.kubeconfig)
        try:
            with serving_web_view(client, WebOptions()) as view:
                page = request(view.url + "/", token="nobody-secret")
                assert page.status == 200, page.body
                assert html.escape(UNKNOWN_USER) in page.body
                assert refusals.count("create", "selfsubjectreviews", "") >= 1
                assert request(view.url + "/", token="wrong-secret").status == 401
        finally:
            client.close()
