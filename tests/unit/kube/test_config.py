"""Client settings without a kubeconfig: an address, a token and a CA (the local node), or a
pod's service account (token re-read as it rotates); neither loads the `kubernetes` package."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from engine.kube.client import KubeClient
from engine.kube.config import ClientSettings
from engine.kube.in_cluster import PodIdentity


def test_an_address_a_token_and_a_ca() -> None:
    settings = ClientSettings.for_server("https://127.0.0.1:6443", token="t-1\n",
                                         ca_file=None)
    assert (settings.server, settings.ca_file) == ("https://127.0.0.1:6443", None)
    assert settings.credentials() == "Bearer t-1"
    assert ClientSettings.for_server("http://127.0.0.1:8080").credentials() == ""
    client = KubeClient.for_server("https://127.0.0.1:6443", token="t-1",
                                   user_agent="jobmachine-node")
    try:
        assert client._credentials(refresh=True) == {"authorization": "Bearer t-1"}
        assert client._user_agent == "jobmachine-node"
    finally:
        client.close()


def test_as_another_user_the_certificate_stays_behind() -> None:
    settings = ClientSettings(server="https://k:6443", cert_file="c.pem", key_file="k.pem",
                              ca_file="ca.pem", proxy="http://proxy:3128")
    user = settings.with_token("u")
    assert (user.cert_file, user.key_file, user.credentials()) == (None, None, "Bearer u")
    assert (user.ca_file, user.proxy, user.server) == ("ca.pem", "http://proxy:3128",
                                                       "https://k:6443")


def test_in_cluster_the_token_is_read_again_as_it_rotates(tmp_path: Path) -> None:
    token = tmp_path / "token"
    token.write_text("first\n")
    pod = PodIdentity("fd00::1", "443", token, tmp_path / "ca.crt", "default")
    settings = ClientSettings.in_cluster(pod)
    assert settings.server == "https://[fd00::1]:443"
    assert settings.ca_file == str(tmp_path / "ca.crt")
    assert settings.credentials() == "Bearer first"
    token.write_text("second")
    assert settings.credentials() == "Bearer second"
    token.unlink()
    assert settings.credentials() == "Bearer second", "a failed read keeps the last token"


def test_neither_way_imports_kubernetes(tmp_path: Path) -> None:
    """Checked in a fresh interpreter: importing `kubernetes` costs most of a second, which
    the node's kubectl-delivery stand-in (a process of its own in a pod) must not pay."""
    (tmp_path / "token").write_text("t")
    pod = f"PodIdentity('127.0.0.1', '443', Path({str(tmp_path / 'token')!r}), Path('ca'), 'ns')"
    script = textwrap.dedent(f"""
        import sys
        from pathlib import Path
        from engine.kube.client import KubeClient
        from engine.kube.config import ClientSettings
        from engine.kube.in_cluster import PodIdentity
        KubeClient.for_server("https://127.0.0.1:6443", token="t").close()
        assert ClientSettings.in_cluster({pod}).credentials() == "Bearer t"
        import engine.cluster.node.runtime.kubectl_delivery
        assert "kubernetes" not in sys.modules
    """)
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                            cwd=Path(__file__).resolve().parents[3], check=False)
    assert result.returncode == 0, result.stderr
