"""Process mode end to end: a Master and two Workers meet over the job's service name.

The workers resolve MASTER_ADDR (the master's headless service, `<job>-master-0`)
and connect to MASTER_PORT, which proves the env the machine renders, the
service the engine creates and the node's name resolution for its processes.
"""

from __future__ import annotations

import socket
import sys
import time
from collections.abc import Iterator
from typing import Any

import pytest

from engine.app.up import LocalCluster, UpOptions, running_local_cluster
from engine.settings import EngineSettings
from tests.kinds import PYTORCHJOBS

MASTER = """
import os, socket
server = socket.create_server(("0.0.0.0", int(os.environ["MASTER_PORT"])))
peers = int(os.environ["WORLD_SIZE"]) - 1
for _ in range(peers):
    connection, _ = server.accept()
    print("master got", connection.recv(64).decode(), flush=True)
    connection.close()
print("master done: world size", os.environ["WORLD_SIZE"], flush=True)
"""

WORKER = """
import os, socket, time
address = socket.gethostbyname(os.environ["MASTER_ADDR"])
for attempt in range(100):
    try:
        connection = socket.create_connection((address, int(os.environ["MASTER_PORT"])), 1)
        break
    except OSError:
        time.sleep(0.1)
else:
    raise SystemExit("could not reach the master")
connection.sendall(("rank " + os.environ["RANK"] + " via " + os.environ["MASTER_ADDR"]).encode())
connection.close()
"""


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _replica(script: str, replicas: int, port: int) -> dict[str, Any]:
    return {
        "replicas": replicas,
        "restartPolicy": "Never",
        "template": {"spec": {"containers": [{
            "name": "pytorch",
            "image": "docker.io/library/python:3.12-slim",
            "command": [sys.executable, "-c", script],
            "ports": [{"name": "pytorchjob-port", "containerPort": port}],
        }]}},
    }


@pytest.fixture
def cluster() -> Iterator[LocalCluster]:
    options = UpOptions(port=0, node_mode="process", settings=EngineSettings())
    with running_local_cluster(options) as running:
        yield running


def test_workers_reach_the_master_by_its_service_name(cluster: LocalCluster) -> None:
    port = _free_port()
    job = {
        "apiVersion": "kubeflow.org/v1",
        "kind": "PyTorchJob",
        "metadata": {"name": "rendezvous", "namespace": "default"},
        "spec": {"pytorchReplicaSpecs": {
            "Master": _replica(MASTER, 1, port),
            "Worker": _replica(WORKER, 2, port),
        }},
    }
    resource = PYTORCHJOBS
    cluster.client.create(resource, job, "default")

    deadline = time.monotonic() + 60
    phase = None
    while time.monotonic() < deadline and phase not in ("Succeeded", "Failed"):
        time.sleep(0.2)
        phase = (cluster.client.get(resource, "rendezvous", "default").get("status") or {}).get(
            "phase"
        )

    log = cluster.server.logs_dir / "default" / "rendezvous-master-0" / "pytorch.log"
    text = log.read_text() if log.exists() else "(no master log)"
    assert phase == "Succeeded", text
    assert "master got rank 1 via rendezvous-master-0" in text
    assert "master got rank 2 via rendezvous-master-0" in text
    assert "world size 3" in text
