"""A local stand-in for the training program of Kubeflow's PyTorch MNIST image (stdlib only).

On `jobmachine up --node-mode process` the image is ignored, so the program it
holds (`/opt/pytorch-mnist/mnist.py`) does not exist here. This script takes
its place and behaves like a small torch.distributed trainer: it meets the other
ranks the way `init_process_group` does over the env the operator sets
(MASTER_ADDR, MASTER_PORT, WORLD_SIZE, RANK): rank 0 listens on MASTER_PORT
and waits until every other rank has joined, the others connect to
MASTER_ADDR:MASTER_PORT; then each rank fits a line to its shard of a
synthetic data set, prints one `epoch N loss ...` line per epoch and exits 0.
"""

from __future__ import annotations

import argparse
import os
import random
import socket
import sys
import time

JOIN_TIMEOUT_S = 120.0
RETRY_S = 0.2
SAMPLES = 256


def rendezvous(rank: int, world_size: int, address: str, port: int) -> None:
    """Block until all `world_size` ranks have met at rank 0, as init_process_group does."""
    if world_size == 1:
        return
    if rank == 0:
        _host(world_size, address, port)
    else:
        _join(rank, address, port)


def _host(world_size: int, address: str, port: int) -> None:
    server = socket.create_server(("0.0.0.0", port))
    server.settimeout(JOIN_TIMEOUT_S)
    print(f"rank 0: waiting at {address}:{port} for {world_size - 1} other ranks", flush=True)
    peers: list[socket.socket] = []
    with server:
        for _ in range(world_size - 1):
            try:
                connection, _ = server.accept()
            except TimeoutError:
                sys.exit(f"rank 0: only {len(peers)} of {world_size - 1} ranks joined in time")
            hello = connection.recv(64).decode()
            print(f"rank 0: {hello} joined", flush=True)
            peers.append(connection)
    for connection in peers:
        with connection:
            connection.sendall(f"world {world_size}".encode())
    print(f"rank 0: rendezvous complete, world size {world_size}", flush=True)


def _join(rank: int, address: str, port: int) -> None:
    deadline = time.monotonic() + JOIN_TIMEOUT_S
    while True:
        try:
            connection = socket.create_connection((address, port), timeout=JOIN_TIMEOUT_S)
            break
        except OSError as exc:
            if time.monotonic() > deadline:
                sys.exit(f"rank {rank}: cannot reach the master at {address}:{port}: {exc}")
            time.sleep(RETRY_S)
    with connection:
        connection.sendall(f"rank {rank}".encode())
        answer = connection.recv(64).decode()
    print(f"rank {rank}: joined {address}:{port} ({answer})", flush=True)


def train(rank: int, world_size: int, epochs: int) -> None:
    """Fit y = 2x + 1 by gradient descent on this rank's shard; one loss line per epoch."""
    data = random.Random(0)
    points = [(x, 2 * x + 1 + data.gauss(0, 0.1)) for x in (data.random() for _ in range(SAMPLES))]
    shard = points[rank::world_size]
    weight = bias = 0.0
    for epoch in range(1, epochs + 1):
        for x, y in shard:
            error = weight * x + bias - y
            weight -= 0.1 * error * x
            bias -= 0.1 * error
        loss = sum((weight * x + bias - y) ** 2 for x, y in shard) / len(shard)
        print(f"rank {rank}: epoch {epoch} loss {loss:.4f}", flush=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=1)
    epochs = parser.parse_args().epochs
    rank, world_size = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    address, port = os.environ["MASTER_ADDR"], int(os.environ["MASTER_PORT"])
    rendezvous(rank, world_size, address, port)
    train(rank, world_size, epochs)
    print(f"rank {rank}: done", flush=True)


if __name__ == "__main__":
    main()
