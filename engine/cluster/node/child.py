"""The local node in a process of its own, as a kubelet is: `up` starts it, waits until it has
registered, and stops it (SIGTERM, the node's own grace for its containers, then SIGKILL).

In `up`'s process the node's requests cost that process twice, the client's side in the
node's threads and the server's side on its event loop, and the node's threads (one per
running pod) took the GIL from the server's loop. Here the node has its own interpreter and
core: the server sees the same requests, with the same token and TLS, from another process.
The token reaches the child on its standard input (never its command line or environment);
the child says it is registered by writing a line to a pipe, and stops when `up` is gone
(even killed outright).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from loguru import logger

from engine.cluster.node.node import LocalNode, Mode
from engine.cluster.node.scheduling.capacity import Capacity
from engine.cluster.node.status.backoff import INITIAL_ENV, MAX_ENV, RestartBackoff
from engine.cluster.node.worker import STOP_GRACE_S
from engine.collector import freeze_start_up, tune_collector
from engine.subprocesses import stop_gracefully

READY = b"ready\n"
"""What the child writes to its readiness pipe once the Node is registered and watching."""
_READY_WITHIN_S = 120.0
"""How long `up` waits for that line: the node itself retries registering for 60 s."""
_STOP_WITHIN_S = STOP_GRACE_S + 20.0
"""How long a stopping node gets (its containers' grace, then their SIGKILL) before SIGKILL."""
_ORPHAN_CHECK_S = 1.0


class NodeProcessError(RuntimeError):
    """The node process exited, or said nothing, before it registered."""


@dataclass(frozen=True)
class NodeSpec:
    """What the node process runs: where the server is and what the node offers."""

    url: str
    ca_file: Path | None
    logs_dir: Path
    state_dir: Path
    mode: Mode
    restart_backoff: RestartBackoff | None = None
    capacity: Capacity | None = None

    def command(self, *, ready_fd: int, parent_pid: int) -> list[str]:
        """`jobmachine node` with these settings (the token goes to its standard input)."""
        return [sys.executable, "-m", "engine.cli", "node", "--url", self.url,
                *(["--ca-file", str(self.ca_file)] if self.ca_file is not None else []),
                "--logs-dir", str(self.logs_dir), "--state-dir", str(self.state_dir),
                "--mode", self.mode,
                *(["--capacity", ",".join(f"{name}={value}" for name, value
                                          in self.capacity.written.items())]
                  if self.capacity is not None else []),
                "--ready-fd", str(ready_fd), "--parent-pid", str(parent_pid)]

    def environment(self) -> dict[str, str]:
        """This process's environment, with the restart back-off the node reads from it."""
        env = dict(os.environ)
        if self.restart_backoff is not None:
            env[INITIAL_ENV] = repr(self.restart_backoff.initial_s)
            env[MAX_ENV] = repr(self.restart_backoff.max_s)
        return env


@contextmanager
def node_process(spec: NodeSpec, token: str) -> Iterator[subprocess.Popen[bytes]]:
    """Run the node as a child process for the length of the block: returns once it has
    registered (NodeProcessError if it exits or stays silent first); on exit SIGTERM, and
    SIGKILL if it has not stopped within its containers' grace."""
    read_end, write_end = os.pipe()
    try:
        # A session of its own: Ctrl-C in up's terminal reaches up, which stops the engine
        # before the node, as it always has.
        child = subprocess.Popen(spec.command(ready_fd=write_end, parent_pid=os.getpid()),
                                 stdin=subprocess.PIPE, pass_fds=(write_end,),
                                 env=spec.environment(), start_new_session=True)
    except BaseException:
        os.close(read_end)
        os.close(write_end)
        raise
    os.close(write_end)
    try:
        assert child.stdin is not None
        child.stdin.write(token.encode() + b"\n")
        child.stdin.close()
        _wait_ready(child, read_end)
        yield child
    finally:
        os.close(read_end)
        stop_gracefully(child, _STOP_WITHIN_S, "the node process")


def _wait_ready(child: subprocess.Popen[bytes], read_end: int) -> None:
    deadline = time.monotonic() + _READY_WITHIN_S
    said = b""
    while READY not in said:
        left = deadline - time.monotonic()
        if left <= 0:
            raise NodeProcessError(f"the node process said nothing in {_READY_WITHIN_S:g}s")
        readable, _, _ = select.select([read_end], [], [], left)
        if readable:
            chunk = os.read(read_end, 64)
            if not chunk:
                raise NodeProcessError(
                    f"the node process exited with code {child.wait()} before it registered")
            said += chunk


def serve_node(spec: NodeSpec, *, token: str, ready_fd: int | None,
               parent_pid: int | None) -> None:
    """The child's side: run the node until SIGTERM or SIGINT, or until `parent_pid` is no
    longer this process's parent; say so on `ready_fd` once it is registered."""
    tune_collector()
    stop = threading.Event()
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, lambda *_: stop.set())
    node = LocalNode(url=spec.url, token=token, ca_file=spec.ca_file, logs_dir=spec.logs_dir,
                     state_dir=spec.state_dir, mode=spec.mode,
                     restart_backoff=spec.restart_backoff, capacity=spec.capacity)
    node.start()
    try:
        freeze_start_up()
        if ready_fd is not None:
            os.write(ready_fd, READY)
            os.close(ready_fd)
        while not stop.wait(_ORPHAN_CHECK_S):
            if parent_pid is not None and os.getppid() != parent_pid:
                logger.warning(f"process {parent_pid} that started the node is gone: stopping")
                break
    finally:
        node.stop()
