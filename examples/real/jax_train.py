"""JAXJob replica: join the other processes through jax.distributed and train one model.

The engine gives every Worker COORDINATOR_ADDRESS (Worker 0's service name),
COORDINATOR_PORT, NUM_PROCESSES and PROCESS_ID (the Worker's index).
`jax.distributed.initialize` meets the others at the coordinator; after that
the CPU devices of every process form one mesh, and cross-process collectives
run over gloo. Each process first gathers every process id
(`process_allgather`) and checks their sum, then the processes fit a linear
model by gradient descent on a batch sharded over the mesh: each process holds
its rows only, and the gradient's mean over all rows is an all-reduce XLA
inserts across the processes. Each checks the weights it ends with (right, and
the same in every process) and prints one `result:` line.
"""

from __future__ import annotations

import os
import sys

import jax
import jax.numpy as jnp
import numpy as np
from jax.experimental import multihost_utils
from jax.sharding import NamedSharding, PartitionSpec

ROWS, FEATURES = 2048, 8
STEPS = 100
LEARNING_RATE = 0.3
TOLERANCE = 0.02
TIMEOUT_S = 120


def data(process: int, processes: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """This process's rows of a generated regression data set, and the true weights."""
    draw = np.random.default_rng(0)
    weights = draw.normal(size=FEATURES).astype(np.float32)
    x = draw.uniform(-1, 1, size=(ROWS, FEATURES)).astype(np.float32)
    y = x @ weights + draw.normal(scale=0.05, size=ROWS).astype(np.float32)
    mine = slice(process * ROWS // processes, (process + 1) * ROWS // processes)
    return x[mine], y[mine], weights


def loss(weights: jax.Array, x: jax.Array, y: jax.Array) -> jax.Array:
    return jnp.mean((x @ weights - y) ** 2)


@jax.jit
def step(weights: jax.Array, x: jax.Array, y: jax.Array) -> tuple[jax.Array, jax.Array]:
    value, grad = jax.value_and_grad(loss)(weights, x, y)
    return weights - LEARNING_RATE * grad, value


def main() -> None:
    process, processes = int(os.environ["PROCESS_ID"]), int(os.environ["NUM_PROCESSES"])
    coordinator = f"{os.environ['COORDINATOR_ADDRESS']}:{os.environ['COORDINATOR_PORT']}"
    print(f"jax {jax.__version__}: process {process} of {processes}, coordinator {coordinator}",
          flush=True)
    jax.config.update("jax_cpu_collectives_implementation", "gloo")
    jax.distributed.initialize(coordinator_address=coordinator, num_processes=processes,
                               process_id=process, initialization_timeout=TIMEOUT_S)
    ids = multihost_utils.process_allgather(jnp.array([process]))
    ids_sum = int(ids.sum())
    print(f"process {process}: process ids {ids.ravel().tolist()}, sum {ids_sum}; "
          f"{jax.device_count()} devices, {jax.local_device_count()} here", flush=True)

    mesh = jax.make_mesh((jax.device_count(),), ("rows",))
    rows = NamedSharding(mesh, PartitionSpec("rows"))
    everywhere = NamedSharding(mesh, PartitionSpec())
    x_here, y_here, true_weights = data(process, processes)
    x = jax.make_array_from_process_local_data(rows, x_here)
    y = jax.make_array_from_process_local_data(rows, y_here)
    weights = jax.make_array_from_process_local_data(everywhere, np.zeros(FEATURES, np.float32))
    for number in range(1, STEPS + 1):
        weights, value = step(weights, x, y)
        if number % 20 == 0:
            print(f"process {process}: step {number} loss {float(value):.5f}", flush=True)

    final = np.asarray(weights.addressable_data(0))
    same = float(np.max(np.ptp(multihost_utils.process_allgather(final), axis=0))) == 0.0
    error = float(np.max(np.abs(final - true_weights)))
    good = ids_sum == processes * (processes - 1) // 2 and error < TOLERANCE and same
    print(f"result: jax process {process} of {processes}: process id sum {ids_sum}, "
          f"{x.shape[0]} rows over {jax.device_count()} devices ({x_here.shape[0]} here), "
          f"{STEPS} steps, loss {float(value):.5f}, max weight error {error:.4f}, "
          f"{'the same' if same else 'NOT the same'} in every process "
          f"({'ok' if good else 'WRONG'})", flush=True)
    jax.distributed.shutdown()
    if not good:
        sys.exit(1)


if __name__ == "__main__":
    main()
