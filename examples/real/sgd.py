"""Data-parallel training with the standard library: the PyTorchJob and TFJob examples' core.

Rank 0 is the hub (as torch.distributed's store sits at MASTER_ADDR:MASTER_PORT):
it listens on its port, the other ranks connect to its address, and every rank
says its rank; the hub answers with all of them and their sum, which each rank
checks. Then they fit a linear model by synchronous gradient descent on a
generated data set, each rank on its own shard: every step the hub sends the
weights, each rank answers with its shard's gradient, and the hub sums them
(an all-reduce through rank 0) and steps. At the end every rank checks the
weights it was sent against the true ones and prints one `result:` line.

A rank that dies mid-training (its pod killed) is waited for: the hub keeps the
weights, the restarted rank joins again and is sent the step it missed, so the
run ends with the same weights as one without the failure.
"""

from __future__ import annotations

import errno
import json
import random
import socket
import sys
import time
from typing import Any, TextIO

SAMPLES = 1024
TRUE_WEIGHTS = (1.5, -2.0, 0.5, 3.0)
TRUE_BIAS = 0.7
NOISE = 0.05
STEPS = 60
LEARNING_RATE = 0.5
# Paced so a person, and tests/real, can watch a rank train and kill it mid-way.
STEP_PAUSE_S = 0.05
REPORT_EVERY = 10
TOLERANCE = 0.02
WAIT_S = 120.0
RETRY_S = 0.2

Model = list[float]  # the weights, then the bias


class Link:
    """One rank's connection to another: JSON messages, one per line."""

    def __init__(self, connection: socket.socket) -> None:
        connection.settimeout(WAIT_S)
        self._connection = connection
        self._stream: TextIO = connection.makefile("rw", encoding="utf-8")

    def send(self, message: dict[str, Any]) -> None:
        self._stream.write(json.dumps(message) + "\n")
        self._stream.flush()

    def receive(self) -> dict[str, Any]:
        line = self._stream.readline()
        if not line:
            raise ConnectionError("the other side closed the connection")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        self._stream.close()
        self._connection.close()


def shard(rank: int, world: int) -> list[tuple[list[float], float]]:
    """This rank's rows of the data set every rank generates alike."""
    draw = random.Random(0)
    rows = []
    for _ in range(SAMPLES):
        x = [draw.uniform(-1, 1) for _ in TRUE_WEIGHTS]
        y = sum(w * v for w, v in zip(TRUE_WEIGHTS, x, strict=True)) + TRUE_BIAS
        rows.append((x, y + draw.gauss(0, NOISE)))
    return rows[rank::world]


def gradient(model: Model, rows: list[tuple[list[float], float]]) -> list[float]:
    """The summed squared-error gradient of `rows` (weights, bias), then their summed loss."""
    sums = [0.0] * (len(model) + 1)
    for x, y in rows:
        error = sum(w * v for w, v in zip(model, x, strict=False)) + model[-1] - y
        for i, v in enumerate(x):
            sums[i] += 2 * error * v
        sums[-2] += 2 * error
        sums[-1] += error * error
    return sums


def descend(model: Model, sums: list[float]) -> tuple[Model, float]:
    """One step down the gradient summed over every rank's rows; the loss before it."""
    stepped = [m - LEARNING_RATE * g / SAMPLES for m, g in zip(model, sums, strict=False)]
    return stepped, sums[-1] / SAMPLES


def weight_error(model: Model) -> float:
    return max(abs(m - t) for m, t in zip(model, [*TRUE_WEIGHTS, TRUE_BIAS], strict=True))


def run(label: str, *, rank: int, world: int, hub: tuple[str, int]) -> None:
    """Train as `rank` of `world`, meeting at `hub`; exit 1 if the result is wrong."""
    rows = shard(rank, world)
    print(f"{label} rank {rank} of {world}: {len(rows)} rows; hub {hub[0]}:{hub[1]}", flush=True)
    if rank == 0:
        Hub(label, world, hub[1], rows).train()
    else:
        _follow(label, rank, hub, rows)


class Hub:
    """Rank 0: keeps the model, all-reduces the gradients, waits for ranks that drop out."""

    def __init__(self, label: str, world: int, port: int,
                 rows: list[tuple[list[float], float]]) -> None:
        self.label, self.world, self.rows = label, world, rows
        self.server = _listen(label, port)
        self.links: dict[int, Link] = {}

    @property
    def ranks(self) -> list[int]:
        return [0, *sorted(self.links)]

    def train(self) -> None:
        self._wait_for(set(range(1, self.world)))
        model: Model = [0.0] * (len(TRUE_WEIGHTS) + 1)
        loss = 0.0
        for step in range(1, STEPS + 1):
            sums = gradient(model, self.rows)
            for rank in range(1, self.world):
                sums = [a + b for a, b in zip(sums, self._gradient_of(rank, step, model),
                                              strict=True)]
            model, loss = descend(model, sums)
            if step % REPORT_EVERY == 0:
                print(f"{self.label} rank 0: step {step} loss {loss:.5f}", flush=True)
            time.sleep(STEP_PAUSE_S)
        agreed = [self._final(rank, model, loss) for rank in range(1, self.world)]
        error = _check(self.label, 0, self.ranks, model, loss)
        if not all(agreed) or error:
            sys.exit(f"{self.label} rank 0: a rank found the result wrong")

    def _wait_for(self, ranks: set[int]) -> None:
        """Accept connections until every rank in `ranks` has said hello, then welcome them
        with every rank and their sum."""
        joined: list[Link] = []
        while ranks:
            try:
                connection, _ = self.server.accept()
            except TimeoutError:
                sys.exit(f"{self.label} rank 0: ranks {sorted(ranks)} did not come in time")
            link = Link(connection)
            rank = int(link.receive()["rank"])
            self.links[rank] = link
            joined.append(link)
            ranks.discard(rank)
            print(f"{self.label} rank 0: rank {rank} joined", flush=True)
        for link in joined:
            link.send({"ranks": self.ranks, "sum": sum(self.ranks)})

    def _gradient_of(self, rank: int, step: int, model: Model) -> list[float]:
        """Rank `rank`'s gradient of this step; if it dropped out, wait for it to rejoin."""
        while True:
            try:
                self.links[rank].send({"step": step, "model": model})
                sums: list[float] = self.links[rank].receive()["gradient"]
                return sums
            except (OSError, ValueError) as exc:
                print(f"{self.label} rank 0: rank {rank} dropped out at step {step} ({exc}); "
                      f"waiting for it to rejoin", flush=True)
                self.links.pop(rank).close()
                self._wait_for({rank})

    def _final(self, rank: int, model: Model, loss: float) -> bool:
        link = self.links[rank]
        link.send({"done": True, "model": model, "loss": loss})
        return bool(link.receive()["ok"])


def _listen(label: str, port: int) -> socket.socket:
    """A server socket on `port`, waited for while another process holds it (every pod of
    the local node shares the machine's ports)."""
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            server = socket.create_server(("", port))
            server.settimeout(WAIT_S)
            return server
        except OSError as exc:
            if exc.errno != errno.EADDRINUSE or time.monotonic() > deadline:
                raise
            print(f"{label} rank 0: port {port} is in use; waiting for it", flush=True)
            time.sleep(1.0)


def _follow(label: str, rank: int, hub: tuple[str, int],
            rows: list[tuple[list[float], float]]) -> None:
    """A rank other than 0: join the hub, answer each step with this shard's gradient."""
    link = Link(_connect(label, rank, hub))
    link.send({"rank": rank})
    welcome = link.receive()
    world = len(welcome["ranks"])
    print(f"{label} rank {rank}: joined; ranks {welcome['ranks']}, rank sum {welcome['sum']}",
          flush=True)
    if welcome["sum"] != world * (world - 1) // 2 or rank not in welcome["ranks"]:
        sys.exit(f"{label} rank {rank}: the ranks do not add up: {welcome}")
    while True:
        message = link.receive()
        if message.get("done"):
            error = _check(label, rank, welcome["ranks"], message["model"], message["loss"])
            link.send({"ok": not error})
            sys.exit(1 if error else 0)
        step = message["step"]
        sums = gradient(message["model"], rows)
        if step % REPORT_EVERY == 0:
            print(f"{label} rank {rank}: step {step} shard loss {sums[-1] / len(rows):.5f}",
                  flush=True)
        link.send({"gradient": sums})


def _connect(label: str, rank: int, hub: tuple[str, int]) -> socket.socket:
    deadline = time.monotonic() + WAIT_S
    while True:
        try:
            return socket.create_connection(hub, timeout=WAIT_S)
        except OSError as exc:
            if time.monotonic() > deadline:
                sys.exit(f"{label} rank {rank}: cannot reach the hub at {hub}: {exc}")
            time.sleep(RETRY_S)


def _check(label: str, rank: int, ranks: list[int], model: Model, loss: float) -> bool:
    """Print the result line; True if the weights are off (a failed run)."""
    error = weight_error(model)
    verdict = "ok" if error < TOLERANCE else f"WRONG: more than {TOLERANCE}"
    print(f"result: {label} rank {rank} of {len(ranks)}: rank sum {sum(ranks)}, "
          f"{STEPS} steps, loss {loss:.5f}, max weight error {error:.4f} ({verdict})",
          flush=True)
    return error >= TOLERANCE
