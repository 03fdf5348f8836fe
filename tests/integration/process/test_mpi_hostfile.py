"""Process mode: an MPIJob's Launcher reads the hostfile the engine wrote and reaches every Worker.

The hostfile is a ConfigMap the MPI machine declares (owned by the job, made before
any pod), mounted at /etc/mpi in the Launcher by the local node as a kubelet
would; each line names a Worker by host name, which resolves through the
Worker's headless service. Every process shares 127.0.0.1 here, so each Worker
listens on its own port: the base port plus its index.
"""

from __future__ import annotations

import socket
import sys
from collections.abc import Iterator
from typing import Any

import pytest

from engine.app.up import LocalCluster, UpOptions, running_local_cluster
from engine.kube.resources import CONFIGMAPS
from engine.settings import EngineSettings
from tests.integration.app.support import wait_until
from tests.kinds import KINDS

MPIJOBS = KINDS["MPIJob"]
# Real processes that must reach each other in time: failed twice beside other tests in the
# two-process suite (the launcher's log not there yet), never alone.
pytestmark = pytest.mark.exclusive

WORKER = """
import os, socket
index = int(os.environ["POD_NAME"].rsplit("-", 1)[1])
server = socket.create_server(("0.0.0.0", int(os.environ["BASE_PORT"]) + index))
connection, _ = server.accept()
print("worker", index, "reached by:", connection.recv(64).decode(), flush=True)
connection.sendall(b"ok")
connection.close()
"""

LAUNCHER = """
import os, socket, time
hostfile = os.environ["OMPI_MCA_orte_default_hostfile"]
lines = open(hostfile).read().splitlines()
print("hostfile:", lines, flush=True)
for line in lines:
    host, slots = line.split()
    address = socket.gethostbyname(host)
    port = int(os.environ["BASE_PORT"]) + int(host.rsplit("-", 1)[1])
    for attempt in range(200):
        try:
            connection = socket.create_connection((address, port), 1)
            break
        except OSError:
            time.sleep(0.1)
    else:
        raise SystemExit("could not reach " + host)
    connection.sendall(("launcher, " + slots).encode())
    assert connection.recv(2) == b"ok"
    print("reached", host, "at", address, "with", slots, flush=True)
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _container(script: str, base_port: int) -> dict[str, Any]:
    return {
        "name": "mpi",
        "image": "mpioperator/openmpi:latest",
        "command": [sys.executable, "-c", script],
        "env": [
            {"name": "BASE_PORT", "value": str(base_port)},
            {"name": "POD_NAME", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        ],
    }


def _mpijob(name: str, workers: int, base_port: int) -> dict[str, Any]:
    return {
        "apiVersion": "kubeflow.org/v1",
        "kind": "MPIJob",
        "metadata": {"name": name},
        "spec": {
            "slotsPerWorker": 2,
            "runPolicy": {"cleanPodPolicy": "None"},  # keep the Workers' logs to read
            "mpiReplicaSpecs": {
                "Launcher": {"replicas": 1, "template": {"spec": {
                    "containers": [_container(LAUNCHER, base_port)]}}},
                "Worker": {"replicas": workers, "template": {"spec": {
                    "containers": [_container(WORKER, base_port)]}}},
            },
        },
    }


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    options = UpOptions(port=0, node_mode="process",
                        settings=EngineSettings(replica_backoff_base_s=0.2))
    with running_local_cluster(options) as running:
        yield running


def test_the_launcher_reads_the_hostfile_and_reaches_every_worker(cluster: LocalCluster) -> None:
    cluster.client.create(MPIJOBS, _mpijob("ring", 3, _free_port()), "default")

    status = wait_until(
        lambda: cluster.client.get(MPIJOBS, "ring", "default").get("status") or {},
        lambda seen: seen.get("phase") in ("Succeeded", "Failed"),
        what="the MPIJob to finish", timeout_s=90,
    )

    logs = cluster.server.logs_dir / "default"
    launcher = (logs / "ring-launcher-0" / "mpi.log").read_text()
    assert status["phase"] == "Succeeded", launcher
    config = cluster.client.get(CONFIGMAPS, "ring-config", "default")
    assert config["data"]["hostfile"] == (
        "ring-worker-0 slots=2\nring-worker-1 slots=2\nring-worker-2 slots=2\n"
    )
    for index in range(3):
        assert f"reached ring-worker-{index} at 127.0.0.1 with slots=2" in launcher
        worker = (logs / f"ring-worker-{index}" / "mpi.log").read_text()
        assert f"worker {index} reached by: launcher, slots=2" in worker
