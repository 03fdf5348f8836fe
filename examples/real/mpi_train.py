"""MPIJob rank: one of the processes `mpirun` starts on the Workers through `kubectl exec`.

Every rank fits the same linear model on its own rows of a generated data set by
synchronous data-parallel gradient descent: the gradient's mean over all rows is an
`Allreduce` over MPI (Open MPI's TCP transport between the Worker pods). The ranks also
integrate 4/(1+x^2) over [0, 1] in interleaved strips and reduce the sum to rank 0 (the
classic MPI example, pi). Rank 0 gathers every rank's report (the pod it runs in, i.e.
the HOSTNAME the kubelet gives the Worker's container, which `kubectl exec` passes on,
and what it trained) and prints one `rank:` line per rank: a single writer, since
`mpirun` may interleave the output of several ranks mid-line. The Launcher
(mpi_launch.py) reads them and checks that they agree.
"""

from __future__ import annotations

import hashlib
import os

import numpy as np
from mpi4py import MPI

ROWS, FEATURES = 4096, 8
STEPS = 60
LEARNING_RATE = 0.3
STRIPS = 1_000_000


def shard(rank: int, size: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """This rank's rows of a generated regression problem, and the true weights."""
    draw = np.random.default_rng(0)
    weights = draw.normal(size=FEATURES)
    x = draw.uniform(-1, 1, size=(ROWS, FEATURES))
    y = x @ weights + draw.normal(scale=0.05, size=ROWS)
    mine = slice(rank * ROWS // size, (rank + 1) * ROWS // size)
    return x[mine], y[mine], weights


def train(world: MPI.Comm, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """Gradient descent with the gradient summed over every rank's rows."""
    weights = np.zeros(FEATURES)
    total_rows = world.allreduce(len(y), op=MPI.SUM)
    loss = 0.0
    for _ in range(STEPS):
        error = x @ weights - y
        local = np.concatenate([2 * x.T @ error, [error @ error]])
        summed = np.empty_like(local)
        world.Allreduce(local, summed, op=MPI.SUM)
        weights -= LEARNING_RATE * summed[:-1] / total_rows
        loss = float(summed[-1] / total_rows)
    return weights, loss


def pi(world: MPI.Comm) -> float | None:
    """pi as the integral of 4/(1+x^2), strips shared round-robin; rank 0 gets the sum."""
    width = 1.0 / STRIPS
    middles = (np.arange(world.rank, STRIPS, world.size) + 0.5) * width
    return world.reduce(float(np.sum(4.0 / (1.0 + middles**2)) * width), op=MPI.SUM, root=0)


def main() -> None:
    world = MPI.COMM_WORLD
    x, y, truth = shard(world.rank, world.size)
    weights, loss = train(world, x, y)
    estimate = pi(world)
    digest = hashlib.sha256(np.round(weights, 6).tobytes()).hexdigest()[:12]
    error = float(np.max(np.abs(weights - truth)))
    report = (f"in pod {os.environ.get('HOSTNAME', '?')}, {len(y)} rows, {STEPS} steps, "
              f"loss {loss:.5f}, max weight error {error:.4f}, model {digest}")
    reports = world.gather(report, root=0)
    if reports is None:
        return
    for rank, line in enumerate(reports):
        print(f"rank: {rank} of {world.size} {line}" + (f", pi {estimate:.10f}" if rank == 0
                                                       else ""), flush=True)


if __name__ == "__main__":
    main()
