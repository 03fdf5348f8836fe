"""Fixtures for the API server's integration tests: a server per test, official clients.

Every test gets a fresh in-memory server on a free port (it starts in a few
milliseconds) and the official `kubernetes` client configured from the
kubeconfig the server wrote, exactly as a user would configure it.
"""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import pytest
from kubernetes import client, config

from engine.cluster import running_apiserver
from engine.cluster.apiserver.endpoints.serve import RunningApiServer

WIDGET_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "spec": {
            "type": "object",
            "required": ["size"],
            "properties": {
                "size": {"type": "integer", "minimum": 1, "maximum": 10},
                "color": {"type": "string", "enum": ["red", "blue"], "default": "red"},
                "tag": {"type": "string", "pattern": "^[a-z]+$"},
                "extra": {"type": "object", "x-kubernetes-preserve-unknown-fields": True},
            },
            "x-kubernetes-validations": [
                {
                    "rule": "self.size <= 5 || self.color == 'blue'",
                    "message": "big widgets must be blue",
                },
                {
                    "rule": "!has(oldSelf.tag) || self.tag == oldSelf.tag",
                    "message": "tag is immutable",
                },
            ],
        },
        "status": {"type": "object", "properties": {"ready": {"type": "boolean"}}},
    },
}


def widget_crd(*, scope: str = "Namespaced") -> dict[str, Any]:
    return {
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": {"name": "widgets.example.com"},
        "spec": {
            "group": "example.com",
            "scope": scope,
            "names": {
                "plural": "widgets",
                "singular": "widget",
                "kind": "Widget",
                "shortNames": ["wd"],
            },
            "versions": [
                {
                    "name": "v1",
                    "served": True,
                    "storage": True,
                    "subresources": {"status": {}},
                    "additionalPrinterColumns": [
                        {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
                        {"name": "Color", "type": "string", "jsonPath": ".spec.color"},
                    ],
                    "schema": {"openAPIV3Schema": WIDGET_SCHEMA},
                }
            ],
        },
    }


def widget(name: str, size: int = 3, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "example.com/v1",
        "kind": "Widget",
        "metadata": {"name": name},
        "spec": {"size": size, **spec},
    }


def pod(name: str, **spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": name},
        "spec": {"containers": [{"name": "main", "image": "busybox"}], **spec},
    }


@pytest.fixture
def server() -> Iterator[RunningApiServer]:
    with running_apiserver() as running:
        yield running


@pytest.fixture
def api(server: RunningApiServer) -> Iterator[client.ApiClient]:
    api_client = config.new_client_from_config(config_file=str(server.kubeconfig))
    try:
        yield api_client
    finally:
        api_client.close()


@pytest.fixture
def core(api: client.ApiClient) -> client.CoreV1Api:
    return client.CoreV1Api(api)


@pytest.fixture
def custom(api: client.ApiClient) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


@pytest.fixture
def widgets(api: client.ApiClient) -> client.CustomObjectsApi:
    """The Widget CRD installed (and established)."""
    extensions = client.ApiextensionsV1Api(api)
    extensions.create_custom_resource_definition(widget_crd())
    return client.CustomObjectsApi(api)


@dataclass
class RawResponse:
    status: int
    headers: Any
    body: bytes

    def json(self) -> Any:
        return json.loads(self.body)


def raw(
    server: RunningApiServer,
    method: str,
    path: str,
    body: Any = None,
    *,
    headers: dict[str, str] | None = None,
    token: str | None = None,
) -> RawResponse:
    """One HTTP request with the server's token (or `token`), whatever the answer."""
    data = body if isinstance(body, bytes) or body is None else json.dumps(body).encode()
    request = urllib.request.Request(server.url + path, data=data, method=method)
    request.add_header("Authorization", f"Bearer {token if token is not None else server.token}")
    if data is not None:  # urllib's default is a form, which the API refuses (415)
        request.add_header("Content-Type", "application/json")
    for name, value in (headers or {}).items():
        request.add_header(name, value)
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return RawResponse(response.status, response.headers, response.read())
    except urllib.error.HTTPError as error:
        return RawResponse(error.code, error.headers, error.read())


def status_of(exc: client.ApiException) -> dict[str, Any]:
    body: dict[str, Any] = json.loads(exc.body)
    return body
