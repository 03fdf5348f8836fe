"""The private mount namespace as an unprivileged user (`unshare -rm`), and pods on a machine
where it cannot be had: those that need volumes wait with a clear message, never run
without them."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from engine.cluster.apiserver.endpoints.serve import RunningApiServer
from engine.cluster.node import running_node
from engine.cluster.node.runtime.isolation import MountIsolation
from tests.integration.node.conftest import NS, Cluster, pod
from tests.polling import eventually

REPO = Path(__file__).resolve().parents[3]
NOBODY = 65534
# Run as an unprivileged user: probe, then mount a volume at a path that does not exist.
_AS_NOBODY = """
import shutil, subprocess, tempfile
from pathlib import Path, PurePosixPath
from engine.cluster.node.runtime.isolation import MountIsolation, inspect, namespace_command
from engine.cluster.node.runtime.mounts import Bind, plan_mounts
isolation = MountIsolation()
entry = isolation.entry()
print(entry is not None and entry.remap, isolation.covers())
base = Path(tempfile.mkdtemp())
try:
    (base / "volume").mkdir()
    (base / "volume" / "hostfile").write_text("from the volume\\n")
    (base / "scratch").mkdir()
    plan = plan_mounts([Bind(base / "volume", PurePosixPath("/etc/jobmachine-test"), True)],
                       inspect)
    argv = ["sh", "-c", "id -u; cat /etc/jobmachine-test/hostfile"]
    command = namespace_command(entry, plan, argv, scratch=base / "scratch",
                                workdir=PurePosixPath("/tmp"))
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    print(done.stdout + done.stderr, end="")
finally:
    shutil.rmtree(base)
"""


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None,
                    reason="needs root to switch to an unprivileged user with setpriv")
def test_an_unprivileged_user_gets_volumes_through_a_user_namespace() -> None:
    done = subprocess.run(
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
         sys.executable, "-c", _AS_NOBODY],
        capture_output=True, text=True, cwd=REPO, timeout=120, check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"True True\n{NOBODY}\nfrom the volume\n"
    assert not Path("/etc/jobmachine-test").exists()


@pytest.fixture
def limited(server: RunningApiServer, api: client.ApiClient, tmp_path: Path,
            monkeypatch: pytest.MonkeyPatch, request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """A process node on a machine without private mount namespaces ("none") or where
    only bind mounts work ("binds")."""
    if request.param == "none":
        monkeypatch.setattr(MountIsolation, "_probe_entry", staticmethod(lambda: None))
    else:
        monkeypatch.setattr(MountIsolation, "covers", lambda self: False)
    state_dir = tmp_path / "node"
    with running_node(server, mode="process", state_dir=state_dir) as node:
        yield Cluster(server, client.CoreV1Api(api), api, node, state_dir)


def mounting(name: str, path: Path, script: str) -> dict[str, Any]:
    main = {"name": "main", "image": "python", "command": [sys.executable, "-c", script],
            "volumeMounts": [{"name": "scratch", "mountPath": str(path)}]}
    return pod(name, main, volumes=[{"name": "scratch", "emptyDir": {}}])


def waiting_message(cluster: Cluster, name: str) -> str:
    state = cluster.container(name).get("state", {})
    return str((state.get("waiting") or {}).get("message") or "")


@pytest.mark.parametrize(
    ("limited", "words"),
    [("none", "volume mount /etc/jobmachine-test needs a private mount namespace, which is "
               "not available here"),
     ("binds", "volume mount /etc/jobmachine-test does not exist on this machine, and "
               "covering /etc in a private mount namespace is not available here")],
    indirect=["limited"],
)
def test_a_pod_that_needs_what_the_machine_cannot_give_waits_with_a_clear_message(
        limited: Cluster, words: str, tmp_path: Path) -> None:
    limited.create(mounting("needs-mounts", Path("/etc/jobmachine-test"), "print('ran')"))
    eventually(lambda: waiting_message(limited, "needs-mounts") == words)
    state = limited.container("needs-mounts")["state"]["waiting"]
    assert state["reason"] == "CreateContainerConfigError"
    assert limited.read("needs-mounts")["status"]["phase"] == "Pending"  # type: ignore[index]
    limited.create(pod("plain", {"name": "main", "image": "python",
                                 "command": [sys.executable, "-c", "print('ran')"]}))
    assert limited.wait_phase("plain", "Succeeded", "Failed")["status"]["phase"] == "Succeeded"
    assert limited.log("plain") == "ran\n"
    assert not Path("/etc/jobmachine-test").exists()
    limited.core.delete_namespaced_pod("needs-mounts", NS, grace_period_seconds=0)
    eventually(lambda: limited.read("needs-mounts") is None)


@pytest.mark.parametrize("limited", ["binds"], indirect=True)
def test_with_bind_mounts_only_a_volume_over_an_existing_path_still_works(
        limited: Cluster, tmp_path: Path) -> None:
    existing = tmp_path / "existing"
    existing.mkdir()
    script = f"open('{existing}/note', 'w').write('in the volume'); print('wrote')"
    limited.create(mounting("over-existing", existing, script))
    assert limited.wait_phase("over-existing", "Succeeded", "Failed")["status"]["phase"] == (
        "Succeeded")
    assert limited.log("over-existing") == "wrote\n"
    assert list(existing.iterdir()) == []
