"""A local stand-in for the program of Kubeflow's TF dist-mnist image (stdlib only).

On `jobmachine up --node-mode process` the image is ignored, so its program
(`dist_mnist.py`, the image's entrypoint) does not exist here. This script takes
its place and plays parameter-server training over TF_CONFIG, the JSON the
operator sets: a `ps` task serves until every worker has reached it, then exits
0; a `worker` (or `chief`, `master`) task connects to every PS listed in the
cluster, trains for a few steps and exits 0 (an `evaluator` only trains).

Every service name resolves to 127.0.0.1 on the local node, so PS replicas
would all claim the same port: PS i listens on the port TF_CONFIG gives it plus
i, and workers add the same offset when they connect.
"""

from __future__ import annotations

import json
import os
import socket
import sys
import time
from typing import Any

WAIT_S = 120.0
RETRY_S = 0.2
STEPS = 3
# The task types that read and update the PS's variables.
PS_CLIENTS = ("chief", "master", "worker")


def ps_endpoint(cluster: dict[str, list[str]], index: int) -> tuple[str, int]:
    """Host and (offset) port of PS `index`."""
    host, port = cluster["ps"][index].rsplit(":", 1)
    return host, int(port) + index


def serve(cluster: dict[str, list[str]], index: int) -> None:
    """PS `index`: answer each worker once, exit when all of them have come."""
    workers = [address for kind in PS_CLIENTS for address in cluster.get(kind, [])]
    host, port = ps_endpoint(cluster, index)
    server = socket.create_server(("0.0.0.0", port))
    server.settimeout(WAIT_S)
    print(f"ps {index}: serving at {host}:{port} for {len(workers)} workers", flush=True)
    with server:
        for seen in range(len(workers)):
            try:
                connection, _ = server.accept()
            except TimeoutError:
                sys.exit(f"ps {index}: only {seen} of {len(workers)} workers came in time")
            with connection:
                hello = connection.recv(64).decode()
                connection.sendall(f"ps {index} has your variables".encode())
            print(f"ps {index}: {hello} connected", flush=True)
    print(f"ps {index}: all {len(workers)} workers connected, shutting down", flush=True)


def reach(task: str, host: str, port: int) -> str:
    """Say hello to the PS at host:port (retrying until it listens); its answer."""
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            connection = socket.create_connection((host, port), timeout=WAIT_S)
            break
        except OSError as exc:
            if time.monotonic() > deadline:
                sys.exit(f"{task}: cannot reach the PS at {host}:{port}: {exc}")
            time.sleep(RETRY_S)
    with connection:
        connection.sendall(task.encode())
        return connection.recv(64).decode()


def work(cluster: dict[str, list[str]], kind: str, task: str) -> None:
    """Reach every PS (unless an evaluator), then train a few steps."""
    servers = len(cluster.get("ps", [])) if kind in PS_CLIENTS else 0
    for index in range(servers):
        host, port = ps_endpoint(cluster, index)
        answer = reach(task, host, port)
        print(f"{task}: reached ps {index} at {host}:{port} ({answer})", flush=True)
    loss = 2.3
    for step in range(1, STEPS + 1):
        loss *= 0.6
        print(f"{task}: epoch 1 step {step} loss {loss:.4f}", flush=True)


def main() -> None:
    config: dict[str, Any] = json.loads(os.environ["TF_CONFIG"])
    cluster, kind, index = config["cluster"], config["task"]["type"], config["task"]["index"]
    print(f"TF_CONFIG task {kind} {index}, cluster {json.dumps(cluster)}", flush=True)
    if kind == "ps":
        serve(cluster, index)
    else:
        work(cluster, kind, f"{kind} {index}")
    print(f"{kind} {index}: done", flush=True)


if __name__ == "__main__":
    main()
