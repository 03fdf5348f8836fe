"""Client settings from a kubeconfig, read by the `kubernetes` package, the only module of the
engine that imports it.

`kubernetes` reads kubeconfigs as kubectl does (contexts, inline and file certificates,
exec and auth-provider plugins with their token refresh, proxy-url and no_proxy); its
`Configuration` is turned into `ClientSettings` here, and requests never go through its
ApiClient (see `engine.kube.client`). Loading it costs most of a second, so only the
clients built from a kubeconfig (or handed a `Configuration`) import this module, lazily;
one built from an address and a token, or from a pod's service account, never does.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from kubernetes import config as kube_config
from kubernetes.client import Configuration
from kubernetes.client.rest import should_bypass_proxies

from engine.kube.config import ClientSettings

__all__ = ["Configuration", "from_configuration", "load_kubeconfig"]


def load_kubeconfig(path: Path | None = None, *, context: str | None = None) -> ClientSettings:
    """The settings of a kubeconfig file (default: $KUBECONFIG or ~/.kube/config)."""
    configuration = Configuration()
    kube_config.load_kube_config(  # type: ignore[no-untyped-call]
        config_file=str(path) if path is not None else None, context=context,
        client_configuration=configuration, persist_config=False,
    )
    return from_configuration(configuration)


def from_configuration(configuration: Configuration) -> ClientSettings:
    """The settings a `kubernetes` Configuration holds: the server, TLS, proxy (unless
    no_proxy exempts the server) and the bearer token, asked of the configuration each time
    the client refreshes its credentials (so its refresh hook re-reads the kubeconfig or runs
    the credential plugin again)."""
    proxy = configuration.proxy
    if proxy and should_bypass_proxies(configuration.host, configuration.no_proxy or ""):
        proxy = None
    return ClientSettings(
        server=configuration.host,
        credentials=lambda: _bearer_token(configuration),
        ca_file=configuration.ssl_ca_cert,
        ca_data=configuration.ca_cert_data,
        cert_file=configuration.cert_file,
        key_file=configuration.key_file,
        verify=bool(configuration.verify_ssl),
        check_hostname=configuration.assert_hostname is not False,
        server_name=configuration.tls_server_name or _asserted_name(configuration),
        proxy=proxy or None,
        proxy_headers=dict(configuration.proxy_headers or {}),
    )


def _bearer_token(configuration: Configuration) -> str:
    settings: Mapping[str, Any] = configuration.auth_settings().get("BearerToken") or {}
    return str(settings.get("value") or "")


def _asserted_name(configuration: Configuration) -> str | None:
    """The name `assert_hostname` asks the certificate to carry, when it gives one."""
    asserted = configuration.assert_hostname
    return asserted if isinstance(asserted, str) and asserted else None
