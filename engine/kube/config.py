"""How the client reaches the API server and proves who it is, without the `kubernetes` package.

`ClientSettings` is everything `KubeClient` needs: the server's address, how to trust its
certificate (a CA, a name to check, or no check), an optional client certificate and
HTTP proxy, and a credential provider the client asks for the `Authorization` header.
Built here from an address, a token and a CA file (the local node, which the embedded
server hands exactly those) or from a pod's service account (in-cluster, the token
re-read as the kubelet rotates it); `engine.kube.kubeconfig` builds them from a
kubeconfig. Importing `kubernetes` costs most of a second, which a short-lived process
in a pod (the node's kubectl-delivery stand-in) should not pay; nothing here imports it.
"""

from __future__ import annotations

import ssl
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path

from engine.kube.in_cluster import PodIdentity

Credentials = Callable[[], str]
"""The `Authorization` header's value ("" for none), asked again every few seconds and at
once after a 401 (a rotated token, an expired exec-plugin credential)."""


def no_credentials() -> str:
    """No `Authorization` header (a client certificate, or anonymous)."""
    return ""


def bearer(token: str) -> Credentials:
    """A fixed bearer token."""
    header = f"Bearer {token.strip()}"
    return lambda: header


class TokenFile:
    """A bearer token read from a file each time it is asked for (the service-account token,
    which the kubelet rotates); if a read fails, the last token read stands."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._lock = threading.Lock()
        self._last = ""

    def __call__(self) -> str:
        try:
            token = self._path.read_text().strip()
        except OSError:
            token = ""
        with self._lock:
            if token:
                self._last = f"Bearer {token}"
            return self._last


@dataclass(frozen=True)
class ClientSettings:
    """Where the API server is, how to trust it and who the client is."""

    server: str
    """The server's URL, e.g. https://127.0.0.1:6443 (a path, such as a proxy's
    /k8s/clusters/NAME, is kept on every request)."""
    credentials: Credentials = no_credentials
    ca_file: str | None = None
    """The CA that signed the server's certificate (None: the system's CAs)."""
    ca_data: str | bytes | None = None
    """The same as PEM text (a kubeconfig's certificate-authority-data)."""
    cert_file: str | None = None
    key_file: str | None = None
    """A client certificate and its key, when the client proves itself by certificate."""
    verify: bool = True
    """Whether the server's certificate is checked at all (insecure-skip-tls-verify)."""
    check_hostname: bool = True
    """Whether the certificate must name the server (or `server_name`)."""
    server_name: str | None = None
    """The name the server's certificate must carry, when not the host's (tls-server-name)."""
    proxy: str | None = None
    """An http:// proxy to go through, already decided for this server (no_proxy applied)."""
    proxy_headers: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def for_server(cls, server: str, *, token: str | None = None,
                   ca_file: Path | str | None = None) -> ClientSettings:
        """A server's address, a bearer token (or none) and the CA that signed the server's
        certificate (None: the system's CAs)."""
        return cls(server=server, credentials=bearer(token) if token else no_credentials,
                   ca_file=str(ca_file) if ca_file is not None else None)

    @classmethod
    def in_cluster(cls, pod: PodIdentity) -> ClientSettings:
        """The pod's service account: the `kubernetes` Service's address, the cluster CA and
        the token, re-read as it rotates (as client-go's in-cluster configuration does)."""
        host = f"[{pod.host}]" if ":" in pod.host else pod.host
        return cls(server=f"https://{host}:{pod.port}", credentials=TokenFile(pod.token_file),
                   ca_file=str(pod.ca_file))

    def with_token(self, token: str) -> ClientSettings:
        """The same server (address, CA, proxy) authenticated by `token` alone: no client
        certificate and no credential plugin of these settings'."""
        return replace(self, credentials=bearer(token), cert_file=None, key_file=None)

    def tls_context(self) -> ssl.SSLContext:
        """The TLS settings: whom to trust, what to check, which certificate to show."""
        tls = ssl.create_default_context(cafile=self.ca_file, cadata=self.ca_data)
        if self.cert_file:
            tls.load_cert_chain(self.cert_file, self.key_file)
        if not self.check_hostname or not self.verify:
            tls.check_hostname = False
        if not self.verify:
            tls.verify_mode = ssl.CERT_NONE
        return tls
