"""`--in-cluster` reads a pod's service-account files and service address, and says in one line
which one is missing."""

from __future__ import annotations

from pathlib import Path

import pytest
from typer.testing import CliRunner

from engine.cli import app
from engine.cluster.apiserver.endpoints.tls import create_ca_and_server_cert
from engine.kube.client import KubeClient
from engine.kube.in_cluster import InClusterError, pod_identity

POD_ENV = {"KUBERNETES_SERVICE_HOST": "10.96.0.1", "KUBERNETES_SERVICE_PORT": "443"}


def _account(root: Path, *, skip: str = "") -> Path:
    root.mkdir(parents=True, exist_ok=True)
    ca = create_ca_and_server_cert(root.parent / f"{root.name}-tls", ["127.0.0.1"]).ca_cert
    for name, text in (("token", "a.b.c\n"), ("ca.crt", ca.read_text()),
                       ("namespace", "team-a\n")):
        if name != skip:
            (root / name).write_text(text)
    return root


def test_the_pods_identity_is_read_from_the_service_account_folder(tmp_path: Path) -> None:
    pod = pod_identity(_account(tmp_path / "sa"), POD_ENV)
    assert (pod.host, pod.port, pod.namespace) == ("10.96.0.1", "443", "team-a")
    assert pod.token_file == tmp_path / "sa" / "token"
    assert pod.ca_file == tmp_path / "sa" / "ca.crt"


@pytest.mark.parametrize("missing", ["token", "ca.crt", "namespace"])
def test_a_missing_file_is_named(tmp_path: Path, missing: str) -> None:
    with pytest.raises(InClusterError, match=f"{tmp_path / 'sa' / missing} does not exist"):
        pod_identity(_account(tmp_path / "sa", skip=missing), POD_ENV)


def test_an_empty_file_is_named(tmp_path: Path) -> None:
    (_account(tmp_path / "sa") / "token").write_text("\n")
    with pytest.raises(InClusterError, match=f"{tmp_path / 'sa' / 'token'} is empty"):
        pod_identity(tmp_path / "sa", POD_ENV)


def test_a_ca_file_without_a_certificate_is_named(tmp_path: Path) -> None:
    (_account(tmp_path / "sa") / "ca.crt").write_text("not a certificate\n")
    with pytest.raises(InClusterError, match=r"ca\.crt holds no usable CA certificate"):
        pod_identity(tmp_path / "sa", POD_ENV)


@pytest.mark.parametrize("unset", ["KUBERNETES_SERVICE_HOST", "KUBERNETES_SERVICE_PORT"])
def test_outside_a_pod_the_service_address_is_missing(tmp_path: Path, unset: str) -> None:
    environ = {k: v for k, v in POD_ENV.items() if k != unset}
    with pytest.raises(InClusterError, match="KUBERNETES_SERVICE_HOST and "
                                             "KUBERNETES_SERVICE_PORT"):
        pod_identity(_account(tmp_path / "sa"), environ)


def test_the_client_talks_tls_to_the_service_with_the_pods_token(tmp_path: Path) -> None:
    pod = pod_identity(_account(tmp_path / "sa"), POD_ENV)
    client = KubeClient.in_cluster(pod)
    try:
        settings = client.settings
        assert settings.server == "https://10.96.0.1:443"
        assert settings.ca_file == str(tmp_path / "sa" / "ca.crt")
        assert client._credentials(refresh=True) == {"authorization": "Bearer a.b.c"}
    finally:
        client.close()


def test_run_in_cluster_fails_in_one_line_naming_the_missing_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in POD_ENV.items():
        monkeypatch.setenv(name, value)
    folder = _account(tmp_path / "sa", skip="ca.crt")
    result = CliRunner().invoke(app, ["run", "--in-cluster", "--service-account-dir",
                                      str(folder)])
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert lines == [f"error: --in-cluster: {folder / 'ca.crt'} does not exist (the pod's "
                     f"service-account files; see --service-account-dir)"]
