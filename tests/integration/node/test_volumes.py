"""Volumes and env from ConfigMaps and Secrets on the local node: process pods read their
volumes at their mountPaths (without anything appearing on this machine), wait for a missing
ConfigMap or Secret and start once it exists; simulated pods wait the same way."""

from __future__ import annotations

import base64
import re
import sys
from pathlib import Path
from typing import Any

import pytest
from kubernetes import client

from tests.integration.node.conftest import NS, Cluster, pod
from tests.polling import eventually

PY = sys.executable
# Does not exist on this machine; the pods below see it only in their own mount namespace.
MOUNT = Path("/etc/jobmachine-test")


def container(script: str, **fields: Any) -> dict[str, Any]:
    return {"name": "main", "image": "python:3.11", "command": [PY, "-c", script], **fields}


def config_map(cluster: Cluster, name: str, data: dict[str, str]) -> None:
    cluster.core.create_namespaced_config_map(NS, {"metadata": {"name": name}, "data": data})


def secret(cluster: Cluster, name: str, data: dict[str, bytes]) -> None:
    encoded = {key: base64.b64encode(value).decode() for key, value in data.items()}
    cluster.core.create_namespaced_secret(NS, {"metadata": {"name": name}, "data": encoded})


def waiting(cluster: Cluster, name: str) -> dict[str, Any]:
    state: dict[str, Any] = cluster.container(name).get("state", {}).get("waiting") or {}
    return state


def waiting_with(cluster: Cluster, name: str, key: str, value: str) -> dict[str, Any]:
    """The container's waiting state once its `key` reads `value`."""
    def reached() -> dict[str, Any]:
        state = waiting(cluster, name)
        return state if state.get(key) == value else {}

    return eventually(reached)


def finished(cluster: Cluster, name: str) -> str:
    """The terminal phase the pod reaches."""
    phase: str = cluster.wait_phase(name, "Succeeded", "Failed")["status"]["phase"]
    return phase


def mounted(path: Path | str, name: str = "cfg") -> list[dict[str, str]]:
    return [{"name": name, "mountPath": str(path)}]


def warnings(cluster: Cluster, name: str) -> list[tuple[str, str]]:
    return [(e.reason, e.message) for e in cluster.events(name) if e.type == "Warning"]


@pytest.fixture
def secrets_served(processes: Cluster) -> None:
    """Skip while the API server does not serve Secrets yet (another change adds them)."""
    try:
        processes.core.list_namespaced_secret(NS)
    except client.ApiException as exc:
        if exc.status == 404:
            pytest.skip("the API server answers 404 for secrets: Secrets are not served yet")
        raise


def test_a_config_map_volume_at_a_path_that_does_not_exist_here(processes: Cluster) -> None:
    assert not MOUNT.exists()
    config_map(processes, "mpi", {"hostfile": "worker-0 slots=1\nworker-1 slots=1\n",
                                  "other": "x"})
    script = (f"import os\nprint(open('{MOUNT}/hostfile').read(), end='')\n"
              f"print(sorted(n for n in os.listdir('{MOUNT}') if not n.startswith('..')))\n"
              f"print(os.path.exists('/etc/passwd'))\n"
              "try:\n"
              f"    open('{MOUNT}/new', 'w')\n"
              "except OSError as exc:\n"
              "    print('read-only:', exc.errno == 30)")
    body = pod("reader", container(script, volumeMounts=mounted(MOUNT)),
               volumes=[{"name": "cfg", "configMap": {"name": "mpi"}}])
    processes.create(body)
    assert finished(processes, "reader") == "Succeeded"
    assert processes.log("reader") == ("worker-0 slots=1\nworker-1 slots=1\n"
                                       "['hostfile', 'other']\nTrue\nread-only: True\n")
    assert not MOUNT.exists()


def test_items_modes_and_sub_path(processes: Cluster) -> None:
    config_map(processes, "scripts", {"run.sh": "#!/bin/sh\necho ran from the volume\n",
                                      "skipped": "not listed"})
    script = ("import os, stat, subprocess\n"
              f"for name in ('{MOUNT}/bin/run', '/opt/jobmachine-one/run.sh'):\n"
              "    print(oct(stat.S_IMODE(os.stat(name).st_mode)))\n"
              f"print(os.listdir('{MOUNT}/bin'), os.path.exists('{MOUNT}/skipped'))\n"
              f"print(subprocess.run(['{MOUNT}/bin/run'], capture_output=True, text=True).stdout,"
              " end='')")
    mounts = [{"name": "cfg", "mountPath": str(MOUNT)},
              {"name": "cfg", "mountPath": "/opt/jobmachine-one/run.sh", "subPath": "bin/run"}]
    volume = {"name": "cfg", "configMap": {
        "name": "scripts", "defaultMode": 0o600,
        "items": [{"key": "run.sh", "path": "bin/run", "mode": 0o755}]}}
    processes.create(pod("modes", container(script, volumeMounts=mounts), volumes=[volume]))
    assert finished(processes, "modes") == "Succeeded"
    assert processes.log("modes") == "0o755\n0o755\n['run'] False\nran from the volume\n"
    assert not Path("/opt/jobmachine-one").exists()


def test_a_missing_config_map_keeps_the_pod_waiting_until_it_exists(processes: Cluster) -> None:
    volume = {"name": "cfg", "configMap": {"name": "late"}}
    script = f"print(open('{MOUNT}/greeting').read())"
    body = pod("patient", container(script, volumeMounts=mounted(MOUNT)),
               volumes=[volume])
    processes.create(body)
    failed = 'MountVolume.SetUp failed for volume "cfg" : configmap "late" not found'
    state = waiting_with(processes, "patient", "message", failed)
    assert state["reason"] == "ContainerCreating"
    assert processes.read("patient")["status"]["phase"] == "Pending"  # type: ignore[index]
    eventually(lambda: ("FailedMount", failed) in warnings(processes, "patient"))
    config_map(processes, "late", {"greeting": "hello"})
    assert finished(processes, "patient") == "Succeeded"
    assert processes.log("patient") == "hello\n"


def test_env_from_config_maps_waits_for_a_missing_one(processes: Cluster) -> None:
    config_map(processes, "settings", {"MODE": "fast", "1st": "first"})
    env = [{"name": "LEVEL", "valueFrom": {"configMapKeyRef": {"name": "levels", "key": "level"}}},
           {"name": "OPTIONAL", "valueFrom": {"configMapKeyRef": {
               "name": "absent", "key": "k", "optional": True}}},
           {"name": "SUMMARY", "value": "$(APP_MODE)-$(LEVEL)"}]
    env_from = [{"configMapRef": {"name": "settings"}, "prefix": "APP_"},
                {"configMapRef": {"name": "absent", "optional": True}}]
    script = ("import os\nprint(os.environ['APP_MODE'], os.environ['APP_1st'], "
              "os.environ['SUMMARY'], 'OPTIONAL' in os.environ)")
    processes.create(pod("configured", container(script, env=env, envFrom=env_from)))
    state = waiting_with(processes, "configured", "reason", "CreateContainerConfigError")
    assert state["message"] == 'configmap "levels" not found'
    eventually(lambda: ("Failed", 'Error: configmap "levels" not found')
               in warnings(processes, "configured"))
    config_map(processes, "levels", {"level": "3"})
    status = processes.wait_phase("configured", "Succeeded", "Failed")["status"]
    assert status["phase"] == "Succeeded"
    assert status["containerStatuses"][0]["restartCount"] == 0
    assert processes.log("configured") == "fast first fast-3 False\n"


def test_empty_dir_is_shared_and_the_downward_api_volume_has_the_labels(
        processes: Cluster) -> None:
    write = container(f"open('{MOUNT}/shared/note', 'w').write('from init')",
                      name="init", volumeMounts=[{"name": "scratch",
                                                  "mountPath": f"{MOUNT}/shared"}])
    script = (f"print(open('{MOUNT}/shared/note').read())\n"
              f"print(open('{MOUNT}/info/labels').read())\n"
              f"print(open('{MOUNT}/info/name').read())")
    mounts = [{"name": "scratch", "mountPath": f"{MOUNT}/shared"},
              {"name": "info", "mountPath": f"{MOUNT}/info"}]
    info = {"name": "info", "downwardAPI": {"items": [
        {"path": "labels", "fieldRef": {"fieldPath": "metadata.labels"}},
        {"path": "name", "fieldRef": {"fieldPath": "metadata.name"}}]}}
    body = pod("sharing", container(script, volumeMounts=mounts), initContainers=[write],
               volumes=[{"name": "scratch", "emptyDir": {}}, info])
    body["metadata"]["labels"] = {"role": "worker", "index": "0"}
    processes.create(body)
    assert finished(processes, "sharing") == "Succeeded"
    assert processes.log("sharing") == 'from init\nindex="0"\nrole="worker"\nsharing\n'


def test_secret_key_ref_and_secret_volume(processes: Cluster, secrets_served: None) -> None:
    env = [{"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "creds", "key": "token"}}}]
    script = (f"import os\nprint(os.environ['TOKEN'], open('{MOUNT}/token').read(), "
              f"oct(os.stat('{MOUNT}/token').st_mode & 0o777))")
    volume = {"name": "creds", "secret": {"secretName": "creds", "defaultMode": 0o400}}
    body = pod("secretive", container(script, env=env, volumeMounts=[
        {"name": "creds", "mountPath": str(MOUNT)}]), volumes=[volume])
    processes.create(body)
    waiting_with(processes, "secretive", "message",
                 'MountVolume.SetUp failed for volume "creds" : secret "creds" not found')
    secret(processes, "creds", {"token": b"s3cret"})
    assert finished(processes, "secretive") == "Succeeded"
    assert processes.log("secretive") == "s3cret s3cret 0o400\n"


def test_a_simulated_pod_waits_for_its_config_map_too(simulated: Cluster) -> None:
    env = [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "sim", "key": "x"}}}]
    simulated.create(pod("simulated", {"name": "main", "image": "busybox", "env": env}))
    state = waiting_with(simulated, "simulated", "reason", "CreateContainerConfigError")
    assert state["message"] == 'configmap "sim" not found'
    config_map(simulated, "sim", {"x": "1"})
    assert finished(simulated, "simulated") == "Succeeded"


def _node_config_map_reads(cluster: Cluster) -> int:
    """The GETs of ConfigMaps the node sent, by the server's request counts."""
    configuration = cluster.api.configuration
    response = cluster.api.call_api(
        "GET", configuration.host + "/metrics",
        header_params={"Authorization": configuration.get_api_key_with_prefix("BearerToken")})
    pattern = re.compile(r'client="jobmachine-node",verb="get",resource="configmaps",'
                         r'subresource="",code="\d+"\} (\d+)')
    response.read()
    return sum(int(count) for count in pattern.findall(response.data.decode()))


def test_a_container_reads_config_maps_from_the_nodes_watch(simulated: Cluster) -> None:
    """As a kubelet at its default (Watch): a ConfigMap the watch delivered is read from it,
    a change reaches it, and once deleted the node asks the server again (not found: the
    container waits, as before)."""
    config_map(simulated, "watched", {"x": "1"})
    held = simulated.node.config_maps.get
    eventually(lambda: (held(NS, "watched") or {}).get("data") == {"x": "1"})
    eventually(lambda: held(NS, "kube-root-ca.crt") is not None)  # every pod's token volume
    reads = _node_config_map_reads(simulated)
    env = [{"name": "X", "valueFrom": {"configMapKeyRef": {"name": "watched", "key": "x"}}}]
    simulated.create(pod("reader", {"name": "main", "image": "busybox", "env": env}))
    assert finished(simulated, "reader") == "Succeeded"
    assert _node_config_map_reads(simulated) == reads
    simulated.core.patch_namespaced_config_map("watched", NS, {"data": {"x": "2"}})
    eventually(lambda: (held(NS, "watched") or {}).get("data") == {"x": "2"})
    simulated.core.delete_namespaced_config_map("watched", NS)
    eventually(lambda: held(NS, "watched") is None)
    simulated.create(pod("late", {"name": "main", "image": "busybox", "env": env}))
    state = waiting_with(simulated, "late", "reason", "CreateContainerConfigError")
    assert state["message"] == 'configmap "watched" not found'
    assert _node_config_map_reads(simulated) > reads
