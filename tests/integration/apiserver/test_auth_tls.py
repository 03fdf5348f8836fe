"""Authentication and TLS: the token is required, the CA in the kubeconfig is trusted."""

from __future__ import annotations

import ssl
import urllib.error
import urllib.request

from kubernetes import client, config

from engine.cluster import running_apiserver
from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from tests.integration.apiserver.conftest import raw


def test_wrong_token_is_401_status(server: RunningApiServer) -> None:
    response = raw(server, "GET", "/api/v1/namespaces", token="wrong")
    assert response.status == 401
    assert response.json()["kind"] == "Status" and response.json()["reason"] == "Unauthorized"


def test_no_token_is_401_over_plain_http_too(server: RunningApiServer) -> None:
    request = urllib.request.Request(server.url + "/api/v1/namespaces")
    assert server.url.startswith("http://")
    try:
        urllib.request.urlopen(request, timeout=10)
        raise AssertionError("a request without a token was served")
    except urllib.error.HTTPError as error:
        assert error.code == 401


def test_tls_with_the_official_client_and_token_required() -> None:
    with running_apiserver(tls=True) as server:
        assert server.url.startswith("https://") and server.ca_file is not None
        api = config.new_client_from_config(config_file=str(server.kubeconfig))
        try:
            names = {ns.metadata.name for ns in client.CoreV1Api(api).list_namespace().items}
        finally:
            api.close()
        assert "default" in names
        context = ssl.create_default_context(cafile=str(server.ca_file))
        request = urllib.request.Request(server.url + "/api/v1/namespaces")
        try:
            urllib.request.urlopen(request, context=context, timeout=10)
            raise AssertionError("a request without a token was served")
        except urllib.error.HTTPError as error:
            assert error.code == 401


def test_kubeconfig_is_private(server: RunningApiServer) -> None:
    assert server.kubeconfig.stat().st_mode & 0o777 == 0o600
    assert server.token in server.kubeconfig.read_text()
